//! `PostDocs` on MongoDB: posts, their comments and likes.

use super::*;
use crate::store::PostDocs;

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
    async fn push_newest_id(
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

/// The distinct posts of `(post_id, id)` pairs, and the ids.
fn posts_and_ids(pairs: &[(i64, i64)]) -> (Vec<i64>, Vec<i64>) {
    let mut posts: Vec<i64> = pairs.iter().map(|(p, _)| *p).collect();
    posts.sort_unstable();
    posts.dedup();
    (posts, pairs.iter().map(|(_, id)| *id).collect())
}

#[async_trait]
impl PostDocs for MongoDocs {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        insert_new(&self.posts(), post, "post").await
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

    async fn likes_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        newest_page(self.likes(), doc! { "uid": uid }, before, limit).await
    }
}
