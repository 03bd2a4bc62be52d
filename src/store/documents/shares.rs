//! Shares: one record per reader, post and platform.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// A post passed on (分享): one per user, post and platform, so
/// sharing again to the same place counts once and no client can grow a
/// post's share count past its readers times the platforms.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShareDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    pub uid: i64,
    pub platform: crate::domain::share::SharePlatform,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// Shares of posts. Part of `DocStore`.
#[async_trait]
pub trait ShareDocs: Send + Sync {
    /// Records it; `Ok(false)` when the user shared the post to that
    /// platform already.
    async fn insert_share(&self, share: &ShareDoc) -> StoreResult<bool>;

    /// `(post_id, share_id)` of every share of these posts.
    async fn share_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>>;

    /// Up to `limit` of a user's shares below `before`, newest first
    /// (erasing an account, an export).
    async fn shares_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ShareDoc>>;

    /// True when this call deleted it.
    async fn delete_share(&self, share: &ShareDoc) -> StoreResult<bool>;
}
