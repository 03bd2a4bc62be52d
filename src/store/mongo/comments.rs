//! `CommentDocs` on MongoDB.

use super::*;
use crate::store::CommentDocs;

#[async_trait]
impl CommentDocs for MongoDocs {
    async fn insert_comment(&self, comment: &CommentDoc, cap: usize) -> StoreResult<()> {
        insert_new(&self.comments(), comment, "comment").await?;
        let mirrored = doc! { "postId": comment.post_id, "deleted": false };
        let pushed = self
            .push_newest_id(
                comment.post_id,
                "comments_postid",
                comment.id,
                ("comments", mirrored),
                cap,
            )
            .await;
        array_update_result(pushed, comment.post_id);
        Ok(())
    }

    async fn comments_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<CommentDoc>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (posts, comments) = posts_and_ids(ids);
        collect(
            self.comments()
                .find(doc! { "postId": { "$in": posts }, "_id": { "$in": comments } })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn comments_by_id_alone(&self, ids: &[i64]) -> StoreResult<Vec<CommentDoc>> {
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

    async fn raise_likes_peak(&self, post_id: i64, comment_id: i64) -> StoreResult<()> {
        let likes = self
            .likes()
            .count_documents(doc! { "kind": LikeKind::Comment.as_str(), "targetId": comment_id })
            .await
            .map_err(classify)? as i64;
        // Only upward: a like counted late never lowers a peak another set.
        // (`$max`, not a filter on the peak: nx-27017 applies an update
        // whose filter has operators on other fields to the wrong document.)
        self.comments()
            .update_one(
                doc! { "_id": comment_id, "postId": post_id },
                doc! { "$max": { "likesPeak": likes } },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn hot_comments_page(
        &self,
        post_id: i64,
        after: Option<(i64, i64)>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        // Comments stored before the hot order (no peak) join it when liked.
        let mut filter =
            doc! { "postId": post_id, "deleted": false, "likesPeak": { "$exists": true } };
        if let Some((peak, id)) = after {
            filter.insert(
                "$or",
                vec![
                    doc! { "likesPeak": { "$lt": peak } },
                    doc! { "likesPeak": peak, "_id": { "$lt": id } },
                ],
            );
        }
        collect(
            self.comments()
                .find(filter)
                .sort(doc! { "likesPeak": -1, "_id": -1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn thread_page(
        &self,
        post_id: i64,
        thread_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        let mut filter = doc! { "postId": post_id, "threadId": thread_id, "deleted": false };
        if let Some(a) = after {
            filter.insert("_id", doc! { "$gt": a });
        }
        collect(
            self.comments()
                .find(filter)
                .sort(doc! { "_id": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn comment_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if post_ids.is_empty() {
            return Ok(Vec::new());
        }
        ids_by_post(
            &self.db,
            "comments",
            doc! { "postId": { "$in": post_ids }, "deleted": false },
        )
        .await
    }

    async fn reply_ids_of_comments(&self, comments: &[(i64, i64)]) -> StoreResult<Vec<(i64, i64)>> {
        if comments.is_empty() {
            return Ok(Vec::new());
        }
        let (posts, comment_ids) = posts_and_ids(comments);
        let cursor = self
            .db
            .collection::<ReplyPair>("comments")
            .find(doc! {
                "postId": { "$in": posts },
                "replyTo.commentId": { "$in": comment_ids },
                "deleted": false,
            })
            .projection(doc! { "_id": 1, "replyTo": 1 })
            .await
            .map_err(classify)?;
        Ok(collect(cursor)
            .await?
            .into_iter()
            .filter_map(|r| r.reply_to.map(|t| (t.comment_id, r.id)))
            .collect())
    }

    async fn comments_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        let filter = doc! { "author_uid": uid, "deleted": false };
        newest_page(self.comments(), filter, before, limit).await
    }
}

/// The distinct posts of `(post_id, id)` pairs, and the ids.
fn posts_and_ids(pairs: &[(i64, i64)]) -> (Vec<i64>, Vec<i64>) {
    let mut posts: Vec<i64> = pairs.iter().map(|(p, _)| *p).collect();
    posts.sort_unstable();
    posts.dedup();
    (posts, pairs.iter().map(|(_, id)| *id).collect())
}
