//! `LikeDocs` on MongoDB.

use super::*;
use crate::store::LikeDocs;

#[async_trait]
impl LikeDocs for MongoDocs {
    async fn insert_like(&self, like: &LikeDoc, cap: usize) -> StoreResult<bool> {
        if !self.insert_like_only(like).await? {
            return Ok(false);
        }
        if like.kind == LikeKind::Post {
            let mirrored = doc! { "kind": LikeKind::Post.as_str(), "targetId": like.target_id };
            let pushed = self
                .push_newest_id(
                    like.target_id,
                    "likes_postid",
                    like.id,
                    ("likes", mirrored),
                    cap,
                )
                .await;
            array_update_result(pushed, like.target_id);
        }
        Ok(true)
    }

    async fn insert_like_only(&self, like: &LikeDoc) -> StoreResult<bool> {
        insert_unless_duplicate(&self.likes(), like).await
    }

    async fn delete_like(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>> {
        let Some(like) = self.delete_like_only(kind, target_id, uid).await? else {
            return Ok(None);
        };
        if kind == LikeKind::Post {
            let pulled = self
                .posts()
                .update_one(
                    doc! { "_id": target_id },
                    doc! { "$pull": { "likes_postid": like.id } },
                )
                .await;
            array_update_result(pulled, target_id);
        }
        Ok(Some(like))
    }

    async fn delete_like_only(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>> {
        let Some(like) = self
            .likes()
            .find_one(doc! { "kind": kind.as_str(), "targetId": target_id, "uid": uid })
            .await
            .map_err(classify)?
        else {
            return Ok(None);
        };
        let r = self
            .likes()
            // With its target: the likes' shard key.
            .delete_one(doc! { "_id": like.id, "targetId": target_id })
            .await
            .map_err(classify)?;
        // A concurrent unlike got there first (and does what follows).
        Ok((r.deleted_count == 1).then_some(like))
    }

    async fn refresh_like_array(&self, post_id: i64, cap: usize, read_at: i64) -> StoreResult<()> {
        let newest = || async {
            let cursor = self
                .db
                .collection::<IdOnly>("likes")
                .find(doc! { "kind": LikeKind::Post.as_str(), "targetId": post_id })
                .sort(doc! { "_id": -1 })
                .limit(cap as i64)
                .projection(doc! { "_id": 1 })
                .await
                .map_err(classify)?;
            Ok::<Vec<i64>, StoreError>(collect(cursor).await?.into_iter().map(|d| d.id).collect())
        };
        // Two appliers refreshing one post at once may land the older read
        // last; read again after writing and write again until the array
        // holds what the likes say (a storm settles in a round or two).
        let mut ids = newest().await?;
        for _ in 0..5 {
            self.posts()
                .update_one(
                    doc! { "_id": post_id },
                    doc! { "$set": { "likes_postid": &ids }, "$max": { "likesArrayAt": read_at } },
                )
                .await
                .map_err(classify)?;
            let now = newest().await?;
            if now == ids {
                break;
            }
            ids = now;
        }
        Ok(())
    }

    async fn likes_of_targets(
        &self,
        kind: LikeKind,
        target_ids: &[i64],
    ) -> StoreResult<Vec<LikeDoc>> {
        if target_ids.is_empty() {
            return Ok(Vec::new());
        }
        collect(
            self.likes()
                .find(doc! { "kind": kind.as_str(), "targetId": { "$in": target_ids } })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn likes_page(
        &self,
        kind: LikeKind,
        target_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        let filter = doc! { "kind": kind.as_str(), "targetId": target_id };
        newest_page(self.likes(), filter, before, limit).await
    }

    async fn likes_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        newest_page(self.likes(), doc! { "uid": uid }, before, limit).await
    }
}
