//! `FavoriteDocs` on MongoDB: favorites by the user who keeps them.

use super::*;
use crate::store::{FavoriteDoc, FavoriteDocs};

impl MongoDocs {
    fn favorites(&self) -> Collection<FavoriteDoc> {
        self.db.collection("favorites")
    }
}

#[async_trait]
impl FavoriteDocs for MongoDocs {
    async fn insert_favorite(&self, favorite: &FavoriteDoc) -> StoreResult<bool> {
        insert_unless_duplicate(&self.favorites(), favorite).await
    }

    async fn delete_favorite(&self, uid: i64, post_id: i64) -> StoreResult<bool> {
        self.delete_matching("favorites", doc! { "uid": uid, "postId": post_id })
            .await
    }

    async fn favorites_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FavoriteDoc>> {
        newest_page(self.favorites(), doc! { "uid": uid }, before, limit).await
    }

    async fn delete_favorites_of(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>("favorites", doc! { "uid": uid }, limit)
            .await
    }
}
