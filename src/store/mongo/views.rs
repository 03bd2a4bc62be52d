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
    async fn insert_views(&self, views: &[ViewDoc]) -> StoreResult<Vec<ViewDoc>> {
        if views.is_empty() {
            return Ok(Vec::new());
        }
        // Unordered: each view that is new is stored, whatever its
        // neighbours; those refused as duplicates were counted before.
        let refused: Vec<usize> = match self.views().insert_many(views).ordered(false).await {
            Ok(_) => Vec::new(),
            Err(e) => {
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
                errors.iter().map(|w| w.index).collect()
            }
        };
        Ok(views
            .iter()
            .enumerate()
            .filter(|(i, _)| !refused.contains(i))
            .map(|(_, v)| v.clone())
            .collect())
    }

    async fn add_view_counts(&self, counts: &[(i64, u64)]) -> StoreResult<()> {
        let posts = self.posts();
        futures_util::future::try_join_all(counts.iter().map(|(post, n)| {
            let posts = posts.clone();
            async move {
                posts
                    .update_one(
                        doc! { "_id": *post },
                        doc! { "$inc": { "viewCount": *n as i64 } },
                    )
                    .await
                    .map_err(classify)
            }
        }))
        .await?;
        Ok(())
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
