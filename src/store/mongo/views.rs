//! `ViewDocs` on MongoDB: views by reader; posts' view counts on the posts.

use mongodb::error::ErrorKind;

use super::*;
use crate::store::{ViewDoc, ViewDocs};

impl MongoDocs {
    fn views(&self) -> Collection<ViewDoc> {
        self.db.collection("views")
    }
}

#[async_trait]
impl ViewDocs for MongoDocs {
    async fn record_views(&self, batch: i64, views: &[ViewDoc]) -> StoreResult<usize> {
        if views.is_empty() {
            return Ok(0);
        }
        // Three steps, each safe to repeat, as a retry of the batch does:
        // 1. insert, unordered: each new view is stored whatever its
        //    neighbours; those refused are stored already, by an earlier
        //    try of this batch (same id) or by another batch (same reader,
        //    post and day).
        if let Err(e) = self.views().insert_many(views).ordered(false).await {
            let ErrorKind::InsertMany(failure) = &*e.kind else {
                return Err(classify(e));
            };
            let errors = failure.write_errors.as_deref().unwrap_or_default();
            if failure.write_concern_error.is_some()
                || errors.is_empty()
                || errors.iter().any(|w| w.code != 11000)
            {
                return Err(classify(e));
            }
        }
        // 2. which are this batch's: found by their own ids (with their
        //    readers, the shard key), so the count follows what this batch
        //    stored, whichever try stored it.
        #[derive(Deserialize)]
        struct Stored {
            #[serde(rename = "postId")]
            post_id: i64,
        }
        let ids: Vec<i64> = views.iter().map(|v| v.id).collect();
        let mut readers: Vec<i64> = views.iter().map(|v| v.uid).collect();
        readers.sort_unstable();
        readers.dedup();
        let cursor = self
            .db
            .collection::<Stored>("views")
            .find(doc! { "_id": { "$in": &ids }, "uid": { "$in": &readers } })
            .projection(doc! { "_id": 0, "postId": 1 })
            .await
            .map_err(classify)?;
        let stored: Vec<Stored> = collect(cursor).await?;
        let mut counts: std::collections::HashMap<i64, i64> = Default::default();
        for v in &stored {
            *counts.entry(v.post_id).or_default() += 1;
        }
        // 3. each post's count raised once per batch: the post remembers
        //    the last batch of this instance it counted. Only this
        //    instance writes that mark, one batch at a time (retrying a
        //    batch before the next; its batch ids grow), so reading the
        //    marks and then writing by `_id` alone races with nothing, and
        //    stays inside what nx-27017 updates right (TESTING.md).
        #[derive(Deserialize)]
        struct Marks {
            #[serde(rename = "_id")]
            id: i64,
            #[serde(rename = "viewBatches", default)]
            batches: std::collections::HashMap<String, i64>,
        }
        let instance = format!("i{}", crate::ids::instance_of(batch));
        let mark = format!("viewBatches.{instance}");
        let post_ids: Vec<i64> = counts.keys().copied().collect();
        let cursor = self
            .db
            .collection::<Marks>("posts")
            .find(doc! { "_id": { "$in": &post_ids } })
            // The whole object: nx-27017 answers a dotted projection with a
            // dotted key.
            .projection(doc! { "_id": 1, "viewBatches": 1 })
            .await
            .map_err(classify)?;
        let marks: Vec<Marks> = collect(cursor).await?;
        let counted = |post: i64| {
            marks
                .iter()
                .any(|m| m.id == post && m.batches.get(&instance).is_some_and(|b| *b >= batch))
        };
        let posts = self.posts();
        futures_util::future::try_join_all(counts.into_iter().filter(|(p, _)| !counted(*p)).map(
            |(post, n)| {
                let (posts, mark) = (posts.clone(), mark.clone());
                async move {
                    posts
                        .update_one(
                            doc! { "_id": post },
                            doc! { "$inc": { "viewCount": n }, "$set": { mark.as_str(): batch } },
                        )
                        .await
                        .map_err(classify)
                }
            },
        ))
        .await?;
        Ok(stored.len())
    }

    async fn view_counts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, u64)>> {
        #[derive(Deserialize)]
        struct Counted {
            #[serde(rename = "_id")]
            id: i64,
            #[serde(rename = "viewCount", default)]
            views: i64,
        }
        if post_ids.is_empty() {
            return Ok(Vec::new());
        }
        let cursor = self
            .db
            .collection::<Counted>("posts")
            .find(doc! { "_id": { "$in": post_ids } })
            .projection(doc! { "_id": 1, "viewCount": 1 })
            .await
            .map_err(classify)?;
        let found: std::collections::HashMap<i64, u64> = collect(cursor)
            .await?
            .into_iter()
            .map(|c| (c.id, c.views.max(0) as u64))
            .collect();
        Ok(post_ids
            .iter()
            .map(|p| (*p, found.get(p).copied().unwrap_or(0)))
            .collect())
    }

    async fn views_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ViewDoc>> {
        newest_page(
            self.views(),
            doc! { "uid": uid, "createdAt": { "$gte": since } },
            before,
            limit,
        )
        .await
    }

    async fn purge_views_before(&self, before: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>("views", doc! { "_id": { "$lt": before } }, limit)
            .await
    }

    async fn delete_views_of(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>("views", doc! { "uid": uid }, limit)
            .await
    }
}
