//! `FanOutDocs` on MongoDB: unfinished fan-outs by post id.

use super::*;
use crate::store::{FanOutDoc, FanOutDocs};

impl MongoDocs {
    fn fan_outs(&self) -> Collection<FanOutDoc> {
        self.db.collection("fan_outs")
    }
}

#[async_trait]
impl FanOutDocs for MongoDocs {
    async fn save_fan_out(&self, fan_out: &FanOutDoc) -> StoreResult<()> {
        self.fan_outs()
            .update_one(
                doc! { "_id": fan_out.post_id },
                doc! { "$set": {
                    "author": fan_out.author,
                    "visibility": mongodb::bson::to_bson(&fan_out.visibility)
                        .map_err(|e| StoreError::Other(e.into()))?,
                    "activeSince": fan_out.active_since,
                    "resumeBefore": fan_out.resume_before,
                    "savedAt": fan_out.saved_at,
                    "claimedUntil": 0_i64,
                } },
            )
            .upsert(true)
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn claim_fan_outs(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<FanOutDoc>> {
        let free = collect(
            self.fan_outs()
                .find(doc! { "claimedUntil": { "$lt": now } })
                .sort(doc! { "_id": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await?;
        let mut claimed = Vec::with_capacity(free.len());
        for f in free {
            // Of instances claiming at once, only the one whose claim on
            // this fan-out as it was saved and last claimed wins it.
            let name = format!("fan_out:{}:{}:{}", f.post_id, f.saved_at, f.claimed_until);
            if !self.claim(name.clone(), now).await? {
                continue;
            }
            // Still as it was seen (atomic on MongoDB: a save since wins).
            let taken = self
                .fan_outs()
                .update_one(
                    doc! { "_id": f.post_id, "savedAt": f.saved_at, "claimedUntil": f.claimed_until },
                    doc! { "$set": { "claimedUntil": until } },
                )
                .await;
            match taken {
                Ok(r) if r.matched_count == 1 => {}
                Ok(_) => {
                    self.unclaim(name).await;
                    continue;
                }
                Err(e) => {
                    self.unclaim(name).await;
                    return Err(classify(e));
                }
            }
            claimed.push(FanOutDoc {
                claimed_until: until,
                ..f
            });
        }
        Ok(claimed)
    }

    async fn delete_fan_out(&self, post_id: i64) -> StoreResult<()> {
        self.fan_outs()
            .delete_one(doc! { "_id": post_id })
            .await
            .map_err(classify)?;
        Ok(())
    }
}
