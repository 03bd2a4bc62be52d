//! `ImportDocs` on MongoDB: `imports`, sharded by uid.

use super::*;
use crate::store::{ImportDoc, ImportDocs, ImportState};

/// How long the claim that decides a start race is kept (as exports').
const START_CLAIM_KEPT_MS: i64 = 60_000;

fn state_name(s: ImportState) -> &'static str {
    match s {
        ImportState::Queued => "queued",
        ImportState::Running => "running",
        ImportState::Done => "done",
        ImportState::Failed => "failed",
    }
}

impl MongoDocs {
    fn imports(&self) -> Collection<ImportDoc> {
        self.db.collection("imports")
    }
}

#[async_trait]
impl ImportDocs for MongoDocs {
    async fn insert_import(
        &self,
        import: &ImportDoc,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool> {
        let name = format!("import_start:{}:{}", import.uid, newest_seen.unwrap_or(0));
        if !self
            .claim_kept(name.clone(), crate::ids::now_ms(), START_CLAIM_KEPT_MS)
            .await?
        {
            return Ok(false);
        }
        match insert_new(&self.imports(), import, "import").await {
            Ok(()) => Ok(true),
            Err(e) => {
                self.unclaim(name).await;
                Err(e)
            }
        }
    }

    async fn imports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ImportDoc>> {
        newest_page(self.imports(), doc! { "uid": uid }, None, limit).await
    }

    async fn import_by_id(&self, uid: i64, id: i64) -> StoreResult<Option<ImportDoc>> {
        self.imports()
            .find_one(doc! { "_id": id, "uid": uid })
            .await
            .map_err(classify)
    }

    async fn claim_imports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ImportDoc>> {
        let free = collect(
            self.imports()
                .find(doc! {
                    "state": { "$in": ["queued", "running"] },
                    "claimedUntil": { "$lt": now },
                })
                .sort(doc! { "claimedUntil": 1, "_id": 1 })
                .limit((limit * 4) as i64)
                .await
                .map_err(classify)?,
        )
        .await?;
        let mut claimed = Vec::with_capacity(limit);
        for i in free {
            if claimed.len() >= limit {
                break;
            }
            let name = format!("import_run:{}:{}", i.id, i.attempt);
            if !self.claim(name.clone(), now).await? {
                continue;
            }
            let taken = self
                .imports()
                .update_one(
                    doc! { "_id": i.id, "uid": i.uid, "attempt": i.attempt, "claimedUntil": i.claimed_until },
                    doc! { "$set": {
                        "state": state_name(ImportState::Running),
                        "attempt": i.attempt + 1,
                        "claimedUntil": until,
                    } },
                )
                .await;
            match taken {
                Ok(r) if r.matched_count == 1 => claimed.push(ImportDoc {
                    state: ImportState::Running,
                    attempt: i.attempt + 1,
                    claimed_until: until,
                    ..i
                }),
                Ok(_) => self.unclaim(name).await,
                Err(e) => {
                    self.unclaim(name).await;
                    return Err(classify(e));
                }
            }
        }
        Ok(claimed)
    }

    async fn renew_import(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        until: i64,
        done: i64,
        skipped: i64,
    ) -> StoreResult<bool> {
        let r = self
            .imports()
            .update_one(
                doc! { "_id": id, "uid": uid, "attempt": attempt, "state": "running" },
                doc! { "$set": { "claimedUntil": until, "done": done, "skipped": skipped } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn finish_import(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        state: ImportState,
        error: Option<&str>,
        at: i64,
    ) -> StoreResult<bool> {
        let r = self
            .imports()
            .update_one(
                doc! { "_id": id, "uid": uid, "attempt": attempt, "state": "running" },
                doc! { "$set": {
                    "state": state_name(state),
                    "error": error,
                    "finishedAt": at,
                    "claimedUntil": 0_i64,
                } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn delete_imports_of(&self, uid: i64, keep: usize) -> StoreResult<u64> {
        #[derive(Deserialize)]
        struct Id {
            #[serde(rename = "_id")]
            id: i64,
        }
        let doomed: Vec<Id> = collect(
            self.imports()
                .clone_with_type::<Id>()
                .find(doc! { "uid": uid })
                .projection(doc! { "_id": 1 })
                .sort(doc! { "_id": -1 })
                .skip(keep as u64)
                .limit(1000)
                .await
                .map_err(classify)?,
        )
        .await?;
        if doomed.is_empty() {
            return Ok(0);
        }
        let ids: Vec<i64> = doomed.iter().map(|d| d.id).collect();
        let r = self
            .imports()
            .delete_many(doc! { "uid": uid, "_id": { "$in": ids } })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count)
    }
}
