//! `PostDocs` on redb: posts, their comments and likes.

use super::*;
use crate::store::PostDocs;

#[async_trait]
impl PostDocs for EmbeddedDocs {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        let post = post.clone();
        self.write(move |txn| {
            let mut posts = txn.open_table(POSTS).map_err(other)?;
            if posts.get(id(post.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            posts
                .insert(id(post.id), encode(&post)?.as_slice())
                .map_err(other)?;
            if !post.deleted {
                txn.open_table(POSTS_BY_AUTHOR)
                    .map_err(other)?
                    .insert((id(post.author_uid), id(post.id)), ())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>> {
        let ids = ids.to_vec();
        let cap = self.array_cap;
        self.read(move |txn| {
            docs_by_ids(txn, POSTS, &ids)?
                .into_iter()
                .map(|p| with_arrays(txn, p, cap))
                .collect()
        })
        .await
    }

    async fn delete_post(&self, post_id: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut posts = txn.open_table(POSTS).map_err(other)?;
            let Some(mut post) = get_doc::<PostDoc>(&posts, id(post_id))? else {
                return Ok(false);
            };
            if post.deleted {
                return Ok(false);
            }
            post.deleted = true;
            posts
                .insert(id(post_id), encode(&post)?.as_slice())
                .map_err(other)?;
            txn.open_table(POSTS_BY_AUTHOR)
                .map_err(other)?
                .remove((id(post.author_uid), id(post_id)))
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let table = txn.open_table(POSTS_BY_AUTHOR).map_err(other)?;
            Ok(newest_below(&table, id(uid), before, limit)?
                .into_iter()
                .map(|p| p as i64)
                .collect())
        })
        .await
    }

    // `_cap`: the arrays are read from the indexes, capped there (`with_arrays`).
    async fn insert_comment(&self, comment: &CommentDoc, _cap: usize) -> StoreResult<()> {
        let c = comment.clone();
        self.write(move |txn| {
            let mut comments = txn.open_table(COMMENTS).map_err(other)?;
            if comments.get(id(c.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            comments
                .insert(id(c.id), encode(&c)?.as_slice())
                .map_err(other)?;
            txn.open_table(COMMENTS_BY_POST)
                .map_err(other)?
                .insert((id(c.post_id), id(c.id)), ())
                .map_err(other)?;
            txn.open_table(COMMENTS_BY_AUTHOR)
                .map_err(other)?
                .insert((id(c.author_uid), id(c.id)), ())
                .map_err(other)?;
            txn.open_table(COMMENTS_BY_PEAK)
                .map_err(other)?
                .insert((id(c.post_id), id(c.likes_peak), id(c.id)), ())
                .map_err(other)?;
            if let Some(r) = c.reply_to {
                txn.open_table(REPLIES)
                    .map_err(other)?
                    .insert((id(r.comment_id), id(c.id)), ())
                    .map_err(other)?;
            }
            if let Some(t) = c.thread_id {
                txn.open_table(THREADS)
                    .map_err(other)?
                    .insert((id(t), id(c.id)), ())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn comments_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<CommentDoc>> {
        let ids: Vec<i64> = ids.iter().map(|(_, c)| *c).collect();
        self.comments_by_id_alone(&ids).await
    }

    async fn comments_by_id_alone(&self, ids: &[i64]) -> StoreResult<Vec<CommentDoc>> {
        let ids = ids.to_vec();
        self.read(move |txn| docs_by_ids(txn, COMMENTS, &ids)).await
    }

    async fn delete_comment(&self, comment: &CommentDoc) -> StoreResult<bool> {
        let cid = comment.id;
        self.write(move |txn| {
            let mut comments = txn.open_table(COMMENTS).map_err(other)?;
            let Some(mut c) = get_doc::<CommentDoc>(&comments, id(cid))? else {
                return Ok(false);
            };
            if c.deleted {
                return Ok(false);
            }
            c.deleted = true;
            comments
                .insert(id(cid), encode(&c)?.as_slice())
                .map_err(other)?;
            txn.open_table(COMMENTS_BY_POST)
                .map_err(other)?
                .remove((id(c.post_id), id(cid)))
                .map_err(other)?;
            txn.open_table(COMMENTS_BY_AUTHOR)
                .map_err(other)?
                .remove((id(c.author_uid), id(cid)))
                .map_err(other)?;
            txn.open_table(COMMENTS_BY_PEAK)
                .map_err(other)?
                .remove((id(c.post_id), id(c.likes_peak), id(cid)))
                .map_err(other)?;
            if let Some(r) = c.reply_to {
                txn.open_table(REPLIES)
                    .map_err(other)?
                    .remove((id(r.comment_id), id(cid)))
                    .map_err(other)?;
            }
            if let Some(t) = c.thread_id {
                txn.open_table(THREADS)
                    .map_err(other)?
                    .remove((id(t), id(cid)))
                    .map_err(other)?;
            }
            Ok(true)
        })
        .await
    }

    async fn comments_page(
        &self,
        post_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        self.read(move |txn| {
            let index = txn.open_table(COMMENTS_BY_POST).map_err(other)?;
            let ids: Vec<i64> = newest_below(&index, id(post_id), before, limit)?
                .into_iter()
                .map(|c| c as i64)
                .collect();
            docs_by_ids(txn, COMMENTS, &ids)
        })
        .await
    }

    async fn thread_page(
        &self,
        _post_id: i64,
        thread_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        self.read(move |txn| {
            let index = txn.open_table(THREADS).map_err(other)?;
            let from = after.map_or(0, |a| id(a).saturating_add(1));
            let mut ids = Vec::new();
            for entry in index
                .range((id(thread_id), from)..=(id(thread_id), u64::MAX))
                .map_err(other)?
                .take(limit)
            {
                ids.push(entry.map_err(other)?.0.value().1 as i64);
            }
            docs_by_ids(txn, COMMENTS, &ids)
        })
        .await
    }

    // A post's arrays here are read from the like index (`with_arrays`),
    // never written per like: there is nothing to defer or refresh.
    async fn insert_like_only(&self, like: &LikeDoc) -> StoreResult<bool> {
        self.insert_like(like, self.array_cap).await
    }

    async fn delete_like_only(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>> {
        self.delete_like(kind, target_id, uid).await
    }

    async fn refresh_like_array(
        &self,
        _post_id: i64,
        _cap: usize,
        _read_at: i64,
    ) -> StoreResult<()> {
        Ok(())
    }

    async fn raise_likes_peak(&self, _post_id: i64, comment_id: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let likes = txn
                .open_table(LIKE_COUNTS)
                .map_err(other)?
                .get((kind_code(LikeKind::Comment), id(comment_id)))
                .map_err(other)?
                .map_or(0, |v| v.value()) as i64;
            let mut comments = txn.open_table(COMMENTS).map_err(other)?;
            let Some(mut c) = get_doc::<CommentDoc>(&comments, id(comment_id))? else {
                return Ok(());
            };
            if c.deleted || likes <= c.likes_peak {
                return Ok(());
            }
            let mut by_peak = txn.open_table(COMMENTS_BY_PEAK).map_err(other)?;
            by_peak
                .remove((id(c.post_id), id(c.likes_peak), id(c.id)))
                .map_err(other)?;
            c.likes_peak = likes;
            by_peak
                .insert((id(c.post_id), id(c.likes_peak), id(c.id)), ())
                .map_err(other)?;
            comments
                .insert(id(c.id), encode(&c)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn hot_comments_page(
        &self,
        post_id: i64,
        after: Option<(i64, i64)>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        self.read(move |txn| {
            let index = txn.open_table(COMMENTS_BY_PEAK).map_err(other)?;
            let p = id(post_id);
            let upper = after.map_or((p, u64::MAX, u64::MAX), |(peak, c)| (p, id(peak), id(c)));
            let mut ids = Vec::new();
            // Exclusive of `after`; without one, up to the highest key.
            let range = if after.is_some() {
                index.range((p, 0, 0)..upper).map_err(other)?
            } else {
                index.range((p, 0, 0)..=upper).map_err(other)?
            };
            for entry in range.rev().take(limit) {
                ids.push(entry.map_err(other)?.0.value().2 as i64);
            }
            docs_by_ids(txn, COMMENTS, &ids)
        })
        .await
    }

    async fn comment_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        let post_ids = post_ids.to_vec();
        self.read(move |txn| {
            let index = txn.open_table(COMMENTS_BY_POST).map_err(other)?;
            let mut out = Vec::new();
            for p in post_ids {
                out.extend(all_under(&index, id(p))?.into_iter().map(|c| (p, c as i64)));
            }
            Ok(out)
        })
        .await
    }

    async fn reply_ids_of_comments(&self, comments: &[(i64, i64)]) -> StoreResult<Vec<(i64, i64)>> {
        let comment_ids: Vec<i64> = comments.iter().map(|(_, c)| *c).collect();
        self.read(move |txn| {
            let index = txn.open_table(REPLIES).map_err(other)?;
            let mut out = Vec::new();
            for c in comment_ids {
                out.extend(all_under(&index, id(c))?.into_iter().map(|r| (c, r as i64)));
            }
            Ok(out)
        })
        .await
    }

    async fn insert_like(&self, like: &LikeDoc, _cap: usize) -> StoreResult<bool> {
        let l = like.clone();
        self.write(move |txn| {
            let k = kind_code(l.kind);
            let mut mine = txn.open_table(LIKE_OF_USER).map_err(other)?;
            if mine
                .get((k, id(l.target_id), id(l.uid)))
                .map_err(other)?
                .is_some()
            {
                return Ok(false);
            }
            mine.insert((k, id(l.target_id), id(l.uid)), id(l.id))
                .map_err(other)?;
            txn.open_table(LIKES)
                .map_err(other)?
                .insert((k, id(l.target_id), id(l.id)), (id(l.uid), l.create_time))
                .map_err(other)?;
            txn.open_table(LIKES_BY_LIKER)
                .map_err(other)?
                .insert((id(l.uid), id(l.id)), (k, id(l.target_id)))
                .map_err(other)?;
            count_likes(txn, k, id(l.target_id), 1)?;
            Ok(true)
        })
        .await
    }

    async fn delete_like(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>> {
        self.write(move |txn| {
            let k = kind_code(kind);
            let mut mine = txn.open_table(LIKE_OF_USER).map_err(other)?;
            let Some(like_id) = mine
                .remove((k, id(target_id), id(uid)))
                .map_err(other)?
                .map(|v| v.value())
            else {
                return Ok(None);
            };
            drop(mine);
            txn.open_table(LIKES_BY_LIKER)
                .map_err(other)?
                .remove((id(uid), like_id))
                .map_err(other)?;
            let create_time = txn
                .open_table(LIKES)
                .map_err(other)?
                .remove((k, id(target_id), like_id))
                .map_err(other)?
                .map(|v| v.value().1)
                .unwrap_or_default();
            count_likes(txn, k, id(target_id), -1)?;
            Ok(Some(LikeDoc {
                id: like_id as i64,
                kind,
                target_id,
                uid,
                create_time,
            }))
        })
        .await
    }

    async fn likes_of_targets(
        &self,
        kind: LikeKind,
        target_ids: &[i64],
    ) -> StoreResult<Vec<LikeDoc>> {
        let target_ids = target_ids.to_vec();
        self.read(move |txn| {
            let k = kind_code(kind);
            let table = txn.open_table(LIKES).map_err(other)?;
            let mut out = Vec::new();
            for t in target_ids {
                for entry in table
                    .range((k, id(t), 0)..=(k, id(t), u64::MAX))
                    .map_err(other)?
                {
                    let (key, value) = entry.map_err(other)?;
                    let (uid, create_time) = value.value();
                    out.push(LikeDoc {
                        id: key.value().2 as i64,
                        kind,
                        target_id: t,
                        uid: uid as i64,
                        create_time,
                    });
                }
            }
            Ok(out)
        })
        .await
    }

    async fn likes_page(
        &self,
        kind: LikeKind,
        target_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        self.read(move |txn| {
            let k = kind_code(kind);
            let t = id(target_id);
            let upper = before.map(id).unwrap_or(u64::MAX);
            let table = txn.open_table(LIKES).map_err(other)?;
            let mut out = Vec::new();
            for entry in table.range((k, t, 0)..(k, t, upper)).map_err(other)?.rev() {
                if out.len() >= limit {
                    break;
                }
                let (key, value) = entry.map_err(other)?;
                let (uid, create_time) = value.value();
                out.push(LikeDoc {
                    id: key.value().2 as i64,
                    kind,
                    target_id,
                    uid: uid as i64,
                    create_time,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        let authors = authors.to_vec();
        self.read(move |txn| {
            let table = txn.open_table(POSTS_BY_AUTHOR).map_err(other)?;
            let mut all = Vec::new();
            for a in authors {
                all.extend(newest_below(&table, id(a), before, limit)?);
            }
            all.sort_unstable_by(|x, y| y.cmp(x));
            all.truncate(limit);
            Ok(all.into_iter().map(|p| p as i64).collect())
        })
        .await
    }

    async fn comments_by_author(&self, uid: i64, limit: usize) -> StoreResult<Vec<CommentDoc>> {
        self.read(move |txn| {
            let index = txn.open_table(COMMENTS_BY_AUTHOR).map_err(other)?;
            let ids: Vec<i64> = newest_below(&index, id(uid), None, limit)?
                .into_iter()
                .map(|c| c as i64)
                .collect();
            docs_by_ids(txn, COMMENTS, &ids)
        })
        .await
    }

    async fn likes_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        self.read(move |txn| {
            let index = txn.open_table(LIKES_BY_LIKER).map_err(other)?;
            let u = id(uid);
            let upper = before.map_or(u64::MAX, id);
            let mut out = Vec::new();
            for entry in index
                .range((u, 0)..(u, upper))
                .map_err(other)?
                .rev()
                .take(limit)
            {
                let (key, value) = entry.map_err(other)?;
                let (kind, target) = value.value();
                let like = key.value().1;
                out.push(LikeDoc {
                    id: like as i64,
                    kind: if kind == kind_code(LikeKind::Post) {
                        LikeKind::Post
                    } else {
                        LikeKind::Comment
                    },
                    target_id: target as i64,
                    uid,
                    create_time: crate::ids::timestamp_of(like as i64),
                });
            }
            Ok(out)
        })
        .await
    }
}

/// Moves a target's like count by `delta`, in the like's transaction.
fn count_likes(txn: &WriteTransaction, kind: u8, target: u64, delta: i64) -> StoreResult<()> {
    let mut counts = txn.open_table(LIKE_COUNTS).map_err(other)?;
    let n = counts
        .get((kind, target))
        .map_err(other)?
        .map_or(0, |v| v.value());
    let n = n.saturating_add_signed(delta);
    if n == 0 {
        counts.remove((kind, target)).map_err(other)?;
    } else {
        counts.insert((kind, target), n).map_err(other)?;
    }
    Ok(())
}
