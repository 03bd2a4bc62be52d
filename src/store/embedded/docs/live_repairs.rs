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
        let repairs = repairs.to_vec();
        self.write(move |txn| {
            let mut table = txn.open_table(LIVE_REPAIRS).map_err(other)?;
            for (owner, keys) in &repairs {
                let code = owner.code();
                let mut doc = match table.get(code.as_str()).map_err(other)? {
                    Some(v) => decode::<LiveRepairDoc>(v.value())?,
                    None => LiveRepairDoc {
                        owner: code.clone(),
                        keys: Vec::new(),
                        mark,
                        saved_at: now,
                    },
                };
                for k in keys.iter() {
                    let c = k.code();
                    if !doc.keys.contains(&c) {
                        doc.keys.push(c);
                    }
                }
                doc.mark = mark;
                table
                    .insert(code.as_str(), encode(&doc)?.as_slice())
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

    async fn finish_live_repair(&self, owner: Owner, mark: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut table = txn.open_table(LIVE_REPAIRS).map_err(other)?;
            let code = owner.code();
            let same = match table.get(code.as_str()).map_err(other)? {
                Some(v) => decode::<LiveRepairDoc>(v.value())?.mark == mark,
                None => false,
            };
            if same {
                table.remove(code.as_str()).map_err(other)?;
            }
            Ok(())
        })
        .await
    }
}
