//! `CommentDocs` on redb.

use super::*;
use crate::store::CommentDocs;

#[async_trait]
impl CommentDocs for EmbeddedDocs {
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

    async fn comments_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        self.read(move |txn| {
            let index = txn.open_table(COMMENTS_BY_AUTHOR).map_err(other)?;
            let ids: Vec<i64> = newest_below(&index, id(uid), before, limit)?
                .into_iter()
                .map(|c| c as i64)
                .collect();
            docs_by_ids(txn, COMMENTS, &ids)
        })
        .await
    }
}
