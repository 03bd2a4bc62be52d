//! `ShareDocs` on MongoDB: shares by post.

use super::*;
use crate::store::{ShareDoc, ShareDocs};

impl MongoDocs {
    fn shares(&self) -> Collection<ShareDoc> {
        self.db.collection("shares")
    }
}

#[async_trait]
impl ShareDocs for MongoDocs {
    async fn insert_share(&self, share: &ShareDoc) -> StoreResult<bool> {
        insert_unless_duplicate(&self.shares(), share).await
    }

    async fn share_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if post_ids.is_empty() {
            return Ok(Vec::new());
        }
        ids_by_post(&self.db, "shares", doc! { "postId": { "$in": post_ids } }).await
    }

    async fn shares_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ShareDoc>> {
        newest_page(self.shares(), doc! { "uid": uid }, before, limit).await
    }

    async fn delete_share(&self, share: &ShareDoc) -> StoreResult<bool> {
        self.delete_matching("shares", doc! { "postId": share.post_id, "_id": share.id })
            .await
    }
}
