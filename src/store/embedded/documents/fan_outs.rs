//! `FanOutDocs` on redb: unfinished fan-outs by post id.

use super::*;
use crate::store::{FanOutDoc, FanOutDocs};

#[async_trait]
impl FanOutDocs for EmbeddedDocs {
    async fn save_fan_out(&self, fan_out: &FanOutDoc) -> StoreResult<()> {
        let saved = FanOutDoc {
            claimed_until: 0,
            ..fan_out.clone()
        };
        self.write(move |txn| {
            let mut table = txn.open_table(FAN_OUTS).map_err(other)?;
            table
                .insert(id(saved.post_id), encode(&saved)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn claim_fan_outs(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<FanOutDoc>> {
        // Read first: the sweep asks every few minutes, and there is almost
        // never anything to claim, which is no reason for a commit's fsync.
        let any_free = self
            .read(move |txn| {
                let table = txn.open_table(FAN_OUTS).map_err(other)?;
                for entry in table.iter().map_err(other)? {
                    let f: FanOutDoc = decode(entry.map_err(other)?.1.value())?;
                    if f.claimed_until < now {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .await?;
        if !any_free {
            return Ok(Vec::new());
        }
        // One write transaction: no other claim runs in between.
        self.write(move |txn| {
            let mut table = txn.open_table(FAN_OUTS).map_err(other)?;
            let mut claimed = Vec::new();
            for entry in table.iter().map_err(other)? {
                if claimed.len() >= limit {
                    break;
                }
                let f: FanOutDoc = decode(entry.map_err(other)?.1.value())?;
                if f.claimed_until < now {
                    claimed.push(FanOutDoc {
                        claimed_until: until,
                        ..f
                    });
                }
            }
            for f in &claimed {
                table
                    .insert(id(f.post_id), encode(f)?.as_slice())
                    .map_err(other)?;
            }
            Ok(claimed)
        })
        .await
    }

    async fn delete_fan_out(&self, post_id: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut table = txn.open_table(FAN_OUTS).map_err(other)?;
            table.remove(id(post_id)).map_err(other)?;
            Ok(())
        })
        .await
    }
}
