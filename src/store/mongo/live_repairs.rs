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
        for (owner, keys) in repairs {
            let codes: Vec<String> = keys.iter().map(|k| k.code()).collect();
            self.live_repairs_coll()
                .update_one(
                    doc! { "_id": owner.code() },
                    doc! {
                        "$addToSet": { "keys": { "$each": codes } },
                        "$set": { "mark": mark },
                        "$setOnInsert": { "savedAt": now },
                    },
                )
                .upsert(true)
                .await
                .map_err(classify)?;
        }
        Ok(())
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

    async fn finish_live_repair(&self, owner: Owner, mark: i64) -> StoreResult<()> {
        self.live_repairs_coll()
            .delete_one(doc! { "_id": owner.code(), "mark": mark })
            .await
            .map_err(classify)?;
        Ok(())
    }
}
