//! `ImportDocs` on MongoDB: `imports`, sharded by uid.

use super::*;
use crate::store::{ImportDoc, ImportDocs, ImportState};

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
        self.insert_account_job(&self.imports(), import, newest_seen)
            .await
    }

    async fn imports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ImportDoc>> {
        account_jobs::account_jobs_of(self.imports(), uid, limit).await
    }

    async fn import_by_id(&self, uid: i64, id: i64) -> StoreResult<Option<ImportDoc>> {
        account_jobs::account_job(&self.imports(), uid, id).await
    }

    async fn claim_imports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ImportDoc>> {
        self.claim_account_jobs(&self.imports(), now, until, limit)
            .await
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
