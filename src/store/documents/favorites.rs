//! Favorites: posts a user keeps for later.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// A post a user keeps for later (收藏): one per user and post.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FavoriteDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// Users' favorite posts. Part of `DocStore`.
#[async_trait]
pub trait FavoriteDocs: Send + Sync {
    /// Records it; `Ok(false)` when the user already has that post.
    async fn insert_favorite(&self, favorite: &FavoriteDoc) -> StoreResult<bool>;

    /// Forgets the user's favorite of the post; true when there was one.
    async fn delete_favorite(&self, uid: i64, post_id: i64) -> StoreResult<bool>;

    /// Up to `limit` of the user's favorites below `before`, newest first.
    async fn favorites_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FavoriteDoc>>;

    /// Deletes up to `limit` of the user's favorites (erasing an account);
    /// how many it deleted.
    async fn delete_favorites_of(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}
