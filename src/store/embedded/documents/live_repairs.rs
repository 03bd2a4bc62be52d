//! `LiveRepairDocs` on redb: stale live keys by owner. Used when the
//! documents are embedded but the live state is in a Redis that outlives
//! this process.

use super::*;
use crate::store::{LiveKey, LiveRepairDoc, LiveRepairDocs, Owner};

#[async_trait]
impl LiveRepairDocs for EmbeddedDocs {
    async fn save_live_repairs(
        &self,
        repairs: &[(Owner, Vec<LiveKey>)],
        mark: i64,
        now: i64,
    ) -> StoreResult<()> {
        let records: Vec<LiveRepairDoc> = repairs
            .iter()
            .map(|(owner, keys)| LiveRepairDoc::new(*owner, keys, mark, now))
            .collect();
        self.write(move |txn| {
            let mut table = txn.open_table(LIVE_REPAIRS).map_err(other)?;
            for r in &records {
                table
                    .insert(r.id.as_str(), encode(r)?.as_slice())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn live_repairs(&self, limit: usize) -> StoreResult<Vec<LiveRepairDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(LIVE_REPAIRS).map_err(other)?;
            let mut all = Vec::new();
            for entry in table.iter().map_err(other)? {
                all.push(decode::<LiveRepairDoc>(entry.map_err(other)?.1.value())?);
            }
            all.sort_by_key(|d| d.saved_at);
            all.truncate(limit);
            Ok(all)
        })
        .await
    }

    async fn finish_live_repairs(&self, ids: &[String]) -> StoreResult<()> {
        let ids = ids.to_vec();
        self.write(move |txn| {
            let mut table = txn.open_table(LIVE_REPAIRS).map_err(other)?;
            for id in &ids {
                table.remove(id.as_str()).map_err(other)?;
            }
            Ok(())
        })
        .await
    }
}
