//! `PostDocs` on MongoDB.

use super::*;
use crate::store::{PostDocs, PostModeration, PostPresence};

impl MongoDocs {
    /// Puts `id` at the head of one of a post's id arrays, keeping the
    /// newest `cap`.
    ///
    /// Where the server honours `$push` with `$position: 0` and `$slice`
    /// (MongoDB, nx-27017) that is one atomic update. FerretDB 1.24 ignores
    /// both modifiers, so the array would grow without bound, oldest
    /// first; there the array is rewritten from the newest `cap` ids of the
    /// collection it mirrors, read by index. That costs a read of up to
    /// `cap` index entries per write, and of two concurrent writes the
    /// later rewrite may miss the other's id until the post's next write,
    /// which is why it is not the formulation everywhere.
    pub(super) async fn push_newest_id(
        &self,
        post_id: i64,
        field: &str,
        id: i64,
        mirrored: (&str, Document),
        cap: usize,
    ) -> Result<(), MongoError> {
        if self.capped_push().await? {
            self.posts()
                .update_one(
                    doc! { "_id": post_id },
                    doc! { "$push": { field: {
                    "$each": [id], "$position": 0, "$slice": cap as i64 } } },
                )
                .await?;
            return Ok(());
        }
        let (collection, filter) = mirrored;
        let cursor = self
            .db
            .collection::<IdOnly>(collection)
            .find(filter)
            .sort(doc! { "_id": -1 })
            .limit(cap as i64)
            .projection(doc! { "_id": 1 })
            .await?;
        let ids: Vec<i64> = cursor
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .map(|d| d.id)
            .collect();
        self.posts()
            .update_one(doc! { "_id": post_id }, doc! { "$set": { field: ids } })
            .await?;
        Ok(())
    }

    /// Asks the server once, on a scratch record in `claims`, whether it
    /// honours `$position` and `$slice`.
    async fn capped_push(&self) -> Result<bool, MongoError> {
        self.capped_push
            .get_or_try_init(|| async {
                let scratch = self.db.collection::<Document>("claims");
                let name = format!("probe:capped_push:{}", crate::ids::now_ms());
                let expire = mongodb::bson::DateTime::from_millis(crate::ids::now_ms() + 60_000);
                scratch
                    .insert_one(doc! { "_id": &name, "expireAt": expire, "a": [1_i64, 2_i64] })
                    .await?;
                scratch
                    .update_one(
                        doc! { "_id": &name },
                        doc! { "$push": { "a": { "$each": [3_i64], "$position": 0, "$slice": 2 } } },
                    )
                    .await?;
                let after = scratch.find_one(doc! { "_id": &name }).await?;
                scratch.delete_one(doc! { "_id": &name }).await?;
                let honoured = after
                    .as_ref()
                    .and_then(|d| d.get_array("a").ok())
                    .is_some_and(|a| {
                        let a: Vec<i64> = a.iter().filter_map(|v| v.as_i64().or(v.as_i32().map(i64::from))).collect();
                        a == [3, 1]
                    });
                if !honoured {
                    tracing::warn!("this MongoDB-wire server ignores $push's $position and $slice: a post's id arrays are rewritten from their collections instead");
                }
                Ok(honoured)
            })
            .await
            .copied()
    }
}

#[async_trait]
impl PostDocs for MongoDocs {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        insert_new(&self.posts(), post, "post").await
    }

    async fn posts_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<PostDoc>> {
        let fields = doc! { "comments_postid": 0, "likes_postid": 0 };
        posts_after_as(self.posts(), after, limit, fields).await
    }

    async fn post_presence_after(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<PostPresence>> {
        let fields = doc! { "_id": 1, "deleted": 1 };
        posts_after_as(self.posts().clone_with_type(), after, limit, fields).await
    }

    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>> {
        by_ids(self.posts(), ids).await
    }

    async fn delete_post(&self, id: i64) -> StoreResult<bool> {
        let r = self
            .posts()
            .update_one(
                doc! { "_id": id, "deleted": false },
                doc! { "$set": { "deleted": true } },
            )
            .await
            .map_err(classify)?;
        Ok(r.modified_count == 1)
    }

    async fn set_post_moderation(
        &self,
        id: i64,
        moderation: Option<PostModeration>,
    ) -> StoreResult<Option<PostDoc>> {
        let change = match moderation {
            Some(m) => {
                let m = mongodb::bson::to_bson(&m).map_err(|e| StoreError::Other(e.into()))?;
                doc! { "$set": { "moderation": m } }
            }
            None => doc! { "$unset": { "moderation": "" } },
        };
        self.posts()
            .find_one_and_update(doc! { "_id": id, "deleted": false }, change)
            .return_document(mongodb::options::ReturnDocument::After)
            .await
            .map_err(classify)
    }

    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        self.post_ids_by_authors(&[uid], before, limit).await
    }

    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        if authors.is_empty() {
            return Ok(Vec::new());
        }
        let mut filter = doc! { "author_uid": { "$in": authors }, "deleted": false };
        below(&mut filter, before);
        let cursor = self
            .db
            .collection::<IdOnly>("posts")
            .find(filter)
            .projection(doc! { "_id": 1 })
            .sort(doc! { "_id": -1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(cursor).await?.into_iter().map(|d| d.id).collect())
    }
}

/// Posts above `after` in id order, at most `limit`, with `fields`.
async fn posts_after_as<T: DeserializeOwned + Send + Sync>(
    posts: Collection<T>,
    after: Option<i64>,
    limit: usize,
    fields: Document,
) -> StoreResult<Vec<T>> {
    let filter = match after {
        Some(a) => doc! { "_id": { "$gt": a } },
        None => doc! {},
    };
    let cursor = posts
        .find(filter)
        .projection(fields)
        .sort(doc! { "_id": 1 })
        .limit(limit as i64)
        .await
        .map_err(classify)?;
    collect(cursor).await
}
