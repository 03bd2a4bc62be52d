//! `LiveRepairDocs` on MongoDB: stale live keys by owner, shared by every
//! instance.

use super::*;
use crate::store::{LiveKey, LiveRepairDoc, LiveRepairDocs, Owner};

impl MongoDocs {
    fn live_repairs_coll(&self) -> Collection<LiveRepairDoc> {
        self.db.collection("live_repairs")
    }
}

#[async_trait]
impl LiveRepairDocs for MongoDocs {
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
        if records.is_empty() {
            return Ok(());
        }
        // Unordered: a record already in (a retried save) does not stop
        // the rest.
        match self
            .live_repairs_coll()
            .insert_many(records)
            .ordered(false)
            .await
        {
            Ok(_) => Ok(()),
            // A retry of a save that reached the server: its records are in.
            Err(e) if duplicate_of(&e).is_some() => Ok(()),
            Err(e) => Err(classify(e)),
        }
    }

    async fn live_repairs(&self, limit: usize) -> StoreResult<Vec<LiveRepairDoc>> {
        collect(
            self.live_repairs_coll()
                .find(doc! {})
                .sort(doc! { "savedAt": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn finish_live_repairs(&self, ids: &[String]) -> StoreResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.live_repairs_coll()
            .delete_many(doc! { "_id": { "$in": ids } })
            .await
            .map_err(classify)?;
        Ok(())
    }
}
