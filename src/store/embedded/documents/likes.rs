//! `LikeDocs` on redb.

use super::*;
use crate::store::LikeDocs;

#[async_trait]
impl LikeDocs for EmbeddedDocs {
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
