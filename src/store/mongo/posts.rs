//! `PostDocs` on MongoDB: posts, their comments and likes.

use super::*;
use crate::store::PostDocs;

#[async_trait]
impl PostDocs for MongoDocs {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        match self.posts().insert_one(post).await {
            Ok(_) => Ok(()),
            Err(e) => Err(insert_error(e, "post")),
        }
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

    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        self.post_ids_by_authors(&[uid], before, limit).await
    }

    async fn insert_comment(&self, comment: &CommentDoc, cap: usize) -> StoreResult<()> {
        match self.comments().insert_one(comment).await {
            Ok(_) => {}
            Err(e) => return Err(insert_error(e, "comment")),
        }
        let pushed = self
            .posts()
            .update_one(
                doc! { "_id": comment.post_id },
                doc! { "$push": { "comments_postid": {
                "$each": [comment.id], "$position": 0, "$slice": cap as i64 } } },
            )
            .await;
        array_update_result(pushed, comment.post_id);
        Ok(())
    }

    async fn comments_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<CommentDoc>> {
        by_ids(self.comments(), ids).await
    }

    async fn delete_comment(&self, comment: &CommentDoc) -> StoreResult<bool> {
        let r = self
            .comments()
            .update_one(
                // With its post: the comments' shard key.
                doc! { "_id": comment.id, "postId": comment.post_id, "deleted": false },
                doc! { "$set": { "deleted": true } },
            )
            .await
            .map_err(classify)?;
        let pulled = self
            .posts()
            .update_one(
                doc! { "_id": comment.post_id },
                doc! { "$pull": { "comments_postid": comment.id } },
            )
            .await;
        array_update_result(pulled, comment.post_id);
        Ok(r.modified_count == 1)
    }

    async fn comments_page(
        &self,
        post_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        let filter = doc! { "postId": post_id, "deleted": false };
        newest_page(self.comments(), filter, before, limit).await
    }

    async fn comment_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if post_ids.is_empty() {
            return Ok(Vec::new());
        }
        let cursor = self
            .db
            .collection::<CommentPostPair>("comments")
            .find(doc! { "postId": { "$in": post_ids }, "deleted": false })
            .projection(doc! { "_id": 1, "postId": 1 })
            .await
            .map_err(classify)?;
        Ok(collect(cursor)
            .await?
            .into_iter()
            .map(|c| (c.post_id, c.id))
            .collect())
    }

    async fn reply_ids_of_comments(&self, comment_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if comment_ids.is_empty() {
            return Ok(Vec::new());
        }
        let cursor = self
            .db
            .collection::<ReplyPair>("comments")
            .find(doc! { "replyTo.commentId": { "$in": comment_ids }, "deleted": false })
            .projection(doc! { "_id": 1, "replyTo": 1 })
            .await
            .map_err(classify)?;
        Ok(collect(cursor)
            .await?
            .into_iter()
            .filter_map(|r| r.reply_to.map(|t| (t.comment_id, r.id)))
            .collect())
    }

    async fn insert_like(&self, like: &LikeDoc, cap: usize) -> StoreResult<bool> {
        if !insert_unless_duplicate(&self.likes(), like).await? {
            return Ok(false);
        }
        if like.kind == LikeKind::Post {
            let pushed = self
                .posts()
                .update_one(
                    doc! { "_id": like.target_id },
                    doc! { "$push": { "likes_postid": {
                    "$each": [like.id], "$position": 0, "$slice": cap as i64 } } },
                )
                .await;
            array_update_result(pushed, like.target_id);
        }
        Ok(true)
    }

    async fn delete_like(
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
            .delete_one(doc! { "_id": like.id })
            .await
            .map_err(classify)?;
        if r.deleted_count == 0 {
            // A concurrent unlike got there first; it also did the $pull.
            return Ok(None);
        }
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

    async fn comments_by_author(&self, uid: i64, limit: usize) -> StoreResult<Vec<CommentDoc>> {
        let filter = doc! { "author_uid": uid, "deleted": false };
        newest_page(self.comments(), filter, None, limit).await
    }

    async fn likes_by_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<LikeDoc>> {
        newest_page(self.likes(), doc! { "uid": uid }, None, limit).await
    }
}
