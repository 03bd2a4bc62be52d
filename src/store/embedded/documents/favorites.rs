//! `FavoriteDocs` on redb: favorites by the user who keeps them.

use super::*;
use crate::store::{FavoriteDoc, FavoriteDocs};

#[async_trait]
impl FavoriteDocs for EmbeddedDocs {
    async fn insert_favorite(&self, favorite: &FavoriteDoc) -> StoreResult<bool> {
        let f = favorite.clone();
        self.write(move |txn| {
            let mut of = txn.open_table(FAVORITE_OF).map_err(other)?;
            if of.get((id(f.uid), id(f.post_id))).map_err(other)?.is_some() {
                return Ok(false);
            }
            of.insert((id(f.uid), id(f.post_id)), id(f.id))
                .map_err(other)?;
            txn.open_table(FAVORITES)
                .map_err(other)?
                .insert((id(f.uid), id(f.id)), id(f.post_id))
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn delete_favorite(&self, uid: i64, post_id: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let removed = txn
                .open_table(FAVORITE_OF)
                .map_err(other)?
                .remove((id(uid), id(post_id)))
                .map_err(other)?
                .map(|v| v.value());
            let Some(fav) = removed else {
                return Ok(false);
            };
            txn.open_table(FAVORITES)
                .map_err(other)?
                .remove((id(uid), fav))
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn favorites_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FavoriteDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(FAVORITES).map_err(other)?;
            let upper = before.map_or(u64::MAX, id);
            let mut out = Vec::new();
            for entry in table
                .range((id(uid), 0)..(id(uid), upper))
                .map_err(other)?
                .rev()
                .take(limit)
            {
                let (key, post) = entry.map_err(other)?;
                let fav = key.value().1 as i64;
                out.push(FavoriteDoc {
                    id: fav,
                    uid,
                    post_id: post.value() as i64,
                    created_at: crate::ids::timestamp_of(fav),
                });
            }
            Ok(out)
        })
        .await
    }

    async fn delete_favorites_of(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let mut favorites = txn.open_table(FAVORITES).map_err(other)?;
            let mut of = txn.open_table(FAVORITE_OF).map_err(other)?;
            let mut doomed = Vec::new();
            for entry in favorites
                .range((id(uid), 0)..=(id(uid), u64::MAX))
                .map_err(other)?
                .take(limit)
            {
                let (key, post) = entry.map_err(other)?;
                doomed.push((key.value().1, post.value()));
            }
            for (fav, post) in &doomed {
                favorites.remove((id(uid), *fav)).map_err(other)?;
                of.remove((id(uid), *post)).map_err(other)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }
}
