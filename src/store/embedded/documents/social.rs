//! `SocialDocs` on redb: the social graph, follows, blocks, mutes and hides.

use super::*;
use crate::store::SocialDocs;

#[async_trait]
impl SocialDocs for EmbeddedDocs {
    async fn insert_follow(&self, follow: &FollowDoc) -> StoreResult<bool> {
        let f = follow.clone();
        self.write(move |txn| {
            let (a, b, e) = (id(f.follower), id(f.followee), id(f.id));
            let mut pairs = txn.open_table(FOLLOW_PAIRS).map_err(other)?;
            if pairs.get((a, b)).map_err(other)?.is_some() {
                return Ok(false);
            }
            pairs.insert((a, b), (e, f.created_at)).map_err(other)?;
            txn.open_table(FOLLOWERS)
                .map_err(other)?
                .insert((b, e), a)
                .map_err(other)?;
            txn.open_table(FOLLOWING)
                .map_err(other)?
                .insert((a, e), b)
                .map_err(other)?;
            drop(pairs);
            adjust_counts(txn, a, b, 1)?;
            Ok(true)
        })
        .await
    }

    async fn delete_follow(&self, follower: i64, followee: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let (a, b) = (id(follower), id(followee));
            let mut pairs = txn.open_table(FOLLOW_PAIRS).map_err(other)?;
            let Some((e, _)) = pairs.remove((a, b)).map_err(other)?.map(|v| v.value()) else {
                return Ok(false);
            };
            txn.open_table(FOLLOWERS)
                .map_err(other)?
                .remove((b, e))
                .map_err(other)?;
            txn.open_table(FOLLOWING)
                .map_err(other)?
                .remove((a, e))
                .map_err(other)?;
            drop(pairs);
            adjust_counts(txn, a, b, -1)?;
            Ok(true)
        })
        .await
    }

    async fn followers_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.read(move |txn| edge_page(txn, FOLLOWERS, uid, before, limit, true))
            .await
    }

    async fn following_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.read(move |txn| edge_page(txn, FOLLOWING, uid, before, limit, false))
            .await
    }

    /// Edges and counters are written in one transaction: they cannot
    /// disagree.
    async fn recount_follows(&self, _uid: i64) -> StoreResult<()> {
        Ok(())
    }

    async fn follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)> {
        self.read(move |txn| {
            let counts = txn.open_table(FOLLOW_COUNTS).map_err(other)?;
            Ok(counts
                .get(id(uid))
                .map_err(other)?
                .map(|v| v.value())
                .unwrap_or((0, 0)))
        })
        .await
    }

    async fn follow_edges(&self, uid: i64, others: &[i64]) -> StoreResult<(Vec<i64>, Vec<i64>)> {
        let others = others.to_vec();
        self.read(move |txn| {
            let pairs = txn.open_table(FOLLOW_PAIRS).map_err(other)?;
            let mut out = (Vec::new(), Vec::new());
            for o in others {
                if pairs.get((id(uid), id(o))).map_err(other)?.is_some() {
                    out.0.push(o);
                }
                if pairs.get((id(o), id(uid))).map_err(other)?.is_some() {
                    out.1.push(o);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn followers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        let others = others.to_vec();
        self.read(move |txn| {
            let pairs = txn.open_table(FOLLOW_PAIRS).map_err(other)?;
            let mut out = Vec::new();
            for o in others {
                if pairs.get((id(o), id(uid))).map_err(other)?.is_some() {
                    out.push(o);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn insert_block(&self, block: &BlockDoc) -> StoreResult<bool> {
        let b = block.clone();
        self.write(move |txn| {
            let mut blocks = txn.open_table(BLOCKS).map_err(other)?;
            if blocks
                .get((id(b.blocker), id(b.blocked)))
                .map_err(other)?
                .is_some()
            {
                return Ok(false);
            }
            blocks
                .insert((id(b.blocker), id(b.blocked)), id(b.id))
                .map_err(other)?;
            txn.open_table(BLOCKED_BY)
                .map_err(other)?
                .insert((id(b.blocked), id(b.blocker)), id(b.id))
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn delete_block(&self, blocker: i64, blocked: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut blocks = txn.open_table(BLOCKS).map_err(other)?;
            let removed = blocks
                .remove((id(blocker), id(blocked)))
                .map_err(other)?
                .is_some();
            txn.open_table(BLOCKED_BY)
                .map_err(other)?
                .remove((id(blocked), id(blocker)))
                .map_err(other)?;
            Ok(removed)
        })
        .await
    }

    async fn blocks_between(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        let others = others.to_vec();
        self.read(move |txn| {
            let blocks = txn.open_table(BLOCKS).map_err(other)?;
            let mut out = Vec::new();
            for o in others {
                if blocks.get((id(uid), id(o))).map_err(other)?.is_some()
                    || blocks.get((id(o), id(uid))).map_err(other)?.is_some()
                {
                    out.push(o);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn active_followers(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<(Vec<i64>, Option<i64>)> {
        self.read(move |txn| {
            let edges = edge_page(txn, FOLLOWERS, uid, before, limit, true)?;
            let next = edges.last().map(|e| e.id).filter(|_| edges.len() == limit);
            let active = txn.open_table(LAST_ACTIVE).map_err(other)?;
            let mut out = Vec::with_capacity(edges.len());
            for edge in edges {
                let last = active
                    .get(id(edge.follower))
                    .map_err(other)?
                    .map(|v| v.value());
                if last.is_some_and(|t| t >= since) {
                    out.push(edge.follower);
                }
            }
            Ok((out, next))
        })
        .await
    }

    async fn follower_counts(&self, uids: &[i64]) -> StoreResult<Vec<(i64, u64)>> {
        let uids = uids.to_vec();
        self.read(move |txn| {
            let counts = txn.open_table(FOLLOW_COUNTS).map_err(other)?;
            uids.into_iter()
                .map(|u| {
                    let n = counts
                        .get(id(u))
                        .map_err(other)?
                        .map(|v| v.value().0)
                        .unwrap_or(0);
                    Ok((u, n))
                })
                .collect()
        })
        .await
    }

    async fn follows_from(&self, uids: &[i64]) -> StoreResult<Vec<FollowDoc>> {
        let uids = uids.to_vec();
        self.read(move |txn| {
            let mut out = Vec::new();
            for u in uids {
                out.extend(edge_page(txn, FOLLOWING, u, None, usize::MAX, false)?);
            }
            Ok(out)
        })
        .await
    }

    async fn blocks_by(&self, blockers: &[i64]) -> StoreResult<Vec<BlockDoc>> {
        let blockers = blockers.to_vec();
        self.read(move |txn| {
            let made = txn.open_table(BLOCKS).map_err(other)?;
            let mut out = Vec::new();
            for u in blockers {
                for entry in made.range((id(u), 0)..=(id(u), u64::MAX)).map_err(other)? {
                    let (key, block_id) = entry.map_err(other)?;
                    out.push(block_doc(u, key.value().1 as i64, block_id.value()));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn blockers_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>> {
        self.read(move |txn| {
            let received = txn.open_table(BLOCKED_BY).map_err(other)?;
            let mut out = Vec::new();
            for entry in received
                .range((id(uid), 0)..=(id(uid), u64::MAX))
                .map_err(other)?
                .take(limit)
            {
                let (key, block_id) = entry.map_err(other)?;
                out.push(block_doc(key.value().1 as i64, uid, block_id.value()));
            }
            Ok(out)
        })
        .await
    }

    async fn blockers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        let others = others.to_vec();
        self.read(move |txn| {
            let received = txn.open_table(BLOCKED_BY).map_err(other)?;
            let mut out = Vec::new();
            for o in others {
                if received.get((id(uid), id(o))).map_err(other)?.is_some() {
                    out.push(o);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn blocks_involving(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>> {
        self.read(move |txn| {
            let made = txn.open_table(BLOCKS).map_err(other)?;
            let received = txn.open_table(BLOCKED_BY).map_err(other)?;
            let u = id(uid);
            let mut out = Vec::new();
            for (table, mine_first) in [(&made, true), (&received, false)] {
                for entry in table.range((u, 0)..=(u, u64::MAX)).map_err(other)? {
                    if out.len() == limit {
                        return Ok(out);
                    }
                    let (key, block_id) = entry.map_err(other)?;
                    let other_uid = key.value().1 as i64;
                    let (blocker, blocked) = if mine_first {
                        (uid, other_uid)
                    } else {
                        (other_uid, uid)
                    };
                    out.push(block_doc(blocker, blocked, block_id.value()));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn insert_filter(&self, filter: &FilterDoc) -> StoreResult<bool> {
        let f = filter.clone();
        self.write(move |txn| {
            let k = filter_code(f.kind);
            let (u, o, fid) = (id(f.uid), id(f.other), id(f.id));
            let mut pairs = txn.open_table(FILTERS).map_err(other)?;
            if pairs.get((k, u, o)).map_err(other)?.is_some() {
                return Ok(false);
            }
            pairs.insert((k, u, o), fid).map_err(other)?;
            txn.open_table(FILTERS_ON)
                .map_err(other)?
                .insert((k, o, u), fid)
                .map_err(other)?;
            txn.open_table(FILTERS_BY_ID)
                .map_err(other)?
                .insert((k, u, fid), o)
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn delete_filter(&self, kind: FilterKind, uid: i64, other_uid: i64) -> StoreResult<bool> {
        self.write(move |txn| remove_filter(txn, filter_code(kind), id(uid), id(other_uid)))
            .await
    }

    async fn filters_page(
        &self,
        kind: FilterKind,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FilterDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(FILTERS_BY_ID).map_err(other)?;
            let (k, u) = (filter_code(kind), id(uid));
            let upper = before.map_or(u64::MAX, id);
            let mut out = Vec::new();
            for entry in table
                .range((k, u, 0)..(k, u, upper))
                .map_err(other)?
                .rev()
                .take(limit)
            {
                let (key, other_uid) = entry.map_err(other)?;
                out.push(filter_doc(kind, uid, other_uid.value(), key.value().2));
            }
            Ok(out)
        })
        .await
    }

    async fn filters_set_by(&self, kind: FilterKind, uids: &[i64]) -> StoreResult<Vec<FilterDoc>> {
        let uids = uids.to_vec();
        self.read(move |txn| {
            let table = txn.open_table(FILTERS).map_err(other)?;
            let k = filter_code(kind);
            let mut out = Vec::new();
            for u in uids {
                for entry in table
                    .range((k, id(u), 0)..=(k, id(u), u64::MAX))
                    .map_err(other)?
                {
                    let (key, fid) = entry.map_err(other)?;
                    out.push(filter_doc(kind, u, key.value().2, fid.value()));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn filters_on_from(
        &self,
        kind: FilterKind,
        on: i64,
        setters: &[i64],
    ) -> StoreResult<Vec<FilterDoc>> {
        let setters = setters.to_vec();
        self.read(move |txn| {
            let table = txn.open_table(FILTERS).map_err(other)?;
            let k = filter_code(kind);
            let mut out = Vec::new();
            for s in setters {
                if let Some(fid) = table.get((k, id(s), id(on))).map_err(other)? {
                    out.push(filter_doc(kind, s, id(on), fid.value()));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn delete_filters_involving(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let u = id(uid);
            let mut doomed: Vec<(u8, u64, u64)> = Vec::new();
            {
                let set_by = txn.open_table(FILTERS).map_err(other)?;
                let set_on = txn.open_table(FILTERS_ON).map_err(other)?;
                for kind in [FilterKind::Mute, FilterKind::Hide] {
                    let k = filter_code(kind);
                    for entry in set_by.range((k, u, 0)..=(k, u, u64::MAX)).map_err(other)? {
                        let (key, _) = entry.map_err(other)?;
                        doomed.push((k, u, key.value().2));
                    }
                    for entry in set_on.range((k, u, 0)..=(k, u, u64::MAX)).map_err(other)? {
                        let (key, _) = entry.map_err(other)?;
                        doomed.push((k, key.value().2, u));
                    }
                }
            }
            doomed.truncate(limit);
            for (k, by, on) in &doomed {
                remove_filter(txn, *k, *by, *on)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }
}

fn filter_doc(kind: FilterKind, uid: i64, other_uid: u64, fid: u64) -> FilterDoc {
    FilterDoc {
        id: fid as i64,
        kind,
        uid,
        other: other_uid as i64,
        created_at: crate::ids::timestamp_of(fid as i64),
    }
}

/// Removes one filter with its index entries; true when there was one.
fn remove_filter(txn: &WriteTransaction, k: u8, uid: u64, on: u64) -> StoreResult<bool> {
    let Some(fid) = txn
        .open_table(FILTERS)
        .map_err(other)?
        .remove((k, uid, on))
        .map_err(other)?
        .map(|v| v.value())
    else {
        return Ok(false);
    };
    txn.open_table(FILTERS_ON)
        .map_err(other)?
        .remove((k, on, uid))
        .map_err(other)?;
    txn.open_table(FILTERS_BY_ID)
        .map_err(other)?
        .remove((k, uid, fid))
        .map_err(other)?;
    Ok(true)
}

/// A block as the tables keep it: (blocker, blocked) → id.
fn block_doc(blocker: i64, blocked: i64, block_id: u64) -> BlockDoc {
    let block_id = block_id as i64;
    BlockDoc {
        id: block_id,
        blocker,
        blocked,
        created_at: crate::ids::timestamp_of(block_id),
    }
}
