//! `ViewDocs` on redb: views by id, with the indexes that keep one per
//! reader, post and day and list a reader's; posts' view counts.

use super::*;
use crate::store::{ViewDoc, ViewDocs};

/// Removes one view and its index entries.
fn remove_view(txn: &WriteTransaction, view: &ViewDoc) -> StoreResult<()> {
    txn.open_table(VIEWS)
        .map_err(other)?
        .remove(id(view.id))
        .map_err(other)?;
    txn.open_table(VIEW_OF)
        .map_err(other)?
        .remove((id(view.uid), id(view.post_id), id(view.day)))
        .map_err(other)?;
    txn.open_table(VIEWS_BY_USER)
        .map_err(other)?
        .remove((id(view.uid), id(view.id)))
        .map_err(other)?;
    Ok(())
}

#[async_trait]
impl ViewDocs for EmbeddedDocs {
    async fn record_views(&self, _batch: i64, views: &[ViewDoc]) -> StoreResult<usize> {
        // One transaction: the views and their counts land together or not
        // at all, so a retry finds either everything or nothing done.
        let views = views.to_vec();
        self.write(move |txn| {
            let mut of = txn.open_table(VIEW_OF).map_err(other)?;
            let mut all = txn.open_table(VIEWS).map_err(other)?;
            let mut by_user = txn.open_table(VIEWS_BY_USER).map_err(other)?;
            let mut counts = txn.open_table(VIEW_COUNTS).map_err(other)?;
            let mut stored = 0;
            for v in &views {
                if all.get(id(v.id)).map_err(other)?.is_some() {
                    stored += 1;
                    continue;
                }
                let key = (id(v.uid), id(v.post_id), id(v.day));
                if of.get(key).map_err(other)?.is_some() {
                    continue;
                }
                of.insert(key, id(v.id)).map_err(other)?;
                all.insert(id(v.id), encode(v)?.as_slice()).map_err(other)?;
                by_user.insert((id(v.uid), id(v.id)), ()).map_err(other)?;
                let was = counts
                    .get(id(v.post_id))
                    .map_err(other)?
                    .map_or(0, |c| c.value());
                counts.insert(id(v.post_id), was + 1).map_err(other)?;
                stored += 1;
            }
            Ok(stored)
        })
        .await
    }

    async fn view_counts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, u64)>> {
        let posts = post_ids.to_vec();
        self.read(move |txn| {
            let table = txn.open_table(VIEW_COUNTS).map_err(other)?;
            posts
                .into_iter()
                .map(|p| Ok((p, table.get(id(p)).map_err(other)?.map_or(0, |v| v.value()))))
                .collect()
        })
        .await
    }

    async fn views_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ViewDoc>> {
        self.read(move |txn| {
            let by_user = txn.open_table(VIEWS_BY_USER).map_err(other)?;
            let ids: Vec<i64> = newest_below(&by_user, id(uid), before, limit)?
                .into_iter()
                .map(|v| v as i64)
                .collect();
            let mut views: Vec<ViewDoc> = docs_by_ids(txn, VIEWS, &ids)?;
            views.retain(|v| v.created_at >= since);
            Ok(views)
        })
        .await
    }

    async fn purge_views_before(&self, before: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let doomed: Vec<ViewDoc> = {
                let all = txn.open_table(VIEWS).map_err(other)?;
                let mut out = Vec::new();
                for entry in all.range(..id(before)).map_err(other)?.take(limit) {
                    out.push(decode(entry.map_err(other)?.1.value())?);
                }
                out
            };
            for v in &doomed {
                remove_view(txn, v)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }

    async fn delete_views_of(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let doomed: Vec<ViewDoc> = {
                let by_user = txn.open_table(VIEWS_BY_USER).map_err(other)?;
                let all = txn.open_table(VIEWS).map_err(other)?;
                let mut out = Vec::new();
                for entry in by_user
                    .range((id(uid), 0)..=(id(uid), u64::MAX))
                    .map_err(other)?
                    .take(limit)
                {
                    let vid = entry.map_err(other)?.0.value().1;
                    if let Some(v) = get_doc::<ViewDoc>(&all, vid)? {
                        out.push(v);
                    }
                }
                out
            };
            for v in &doomed {
                remove_view(txn, v)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }
}
