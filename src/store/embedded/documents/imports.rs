//! `ImportDocs` on redb: imports by id with a per-account index, and the
//! unfinished ones apart for the job's claims.

use super::account_jobs::JobTables;
use super::*;
use crate::store::{ImportDoc, ImportDocs, ImportState};

/// The imports by id, by account, and the unfinished ones.
const TABLES: JobTables = JobTables {
    docs: TableDefinition::new("imports"),
    by_user: TableDefinition::new("imports_by_user"),
    unfinished: TableDefinition::new("imports_unfinished"),
};

pub(super) fn open_tables(txn: &WriteTransaction) -> StoreResult<()> {
    TABLES.open(txn)
}

fn stored(txn: &WriteTransaction, uid: i64, import: i64) -> StoreResult<Option<ImportDoc>> {
    TABLES.stored(txn, uid, import)
}

fn put(txn: &WriteTransaction, i: &ImportDoc) -> StoreResult<()> {
    TABLES.put(txn, i)
}

/// Whether the run `attempt` is still the import's.
fn runs(i: &ImportDoc, attempt: i64) -> bool {
    i.attempt == attempt && i.state == ImportState::Running
}

#[async_trait]
impl ImportDocs for EmbeddedDocs {
    async fn insert_import(
        &self,
        import: &ImportDoc,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool> {
        self.insert_account_job(TABLES, import, newest_seen).await
    }

    async fn imports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ImportDoc>> {
        self.account_jobs_of(TABLES, uid, limit).await
    }

    async fn import_by_id(&self, uid: i64, import: i64) -> StoreResult<Option<ImportDoc>> {
        self.account_job(TABLES, uid, import).await
    }

    async fn claim_imports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ImportDoc>> {
        self.claim_account_jobs(TABLES, now, until, limit).await
    }

    async fn renew_import(
        &self,
        uid: i64,
        import: i64,
        attempt: i64,
        until: i64,
        done: i64,
        skipped: i64,
    ) -> StoreResult<bool> {
        self.write(move |txn| {
            let Some(i) = stored(txn, uid, import)?.filter(|i| runs(i, attempt)) else {
                return Ok(false);
            };
            put(
                txn,
                &ImportDoc {
                    claimed_until: until,
                    done,
                    skipped,
                    ..i
                },
            )?;
            Ok(true)
        })
        .await
    }

    async fn finish_import(
        &self,
        uid: i64,
        import: i64,
        attempt: i64,
        state: ImportState,
        error: Option<&str>,
        at: i64,
    ) -> StoreResult<bool> {
        let error = error.map(str::to_string);
        self.write(move |txn| {
            let Some(i) = stored(txn, uid, import)?.filter(|i| runs(i, attempt)) else {
                return Ok(false);
            };
            txn.open_table(TABLES.unfinished)
                .map_err(other)?
                .remove(id(import))
                .map_err(other)?;
            put(
                txn,
                &ImportDoc {
                    state,
                    error: error.clone(),
                    finished_at: Some(at),
                    claimed_until: 0,
                    ..i
                },
            )?;
            Ok(true)
        })
        .await
    }

    async fn delete_imports_of(&self, uid: i64, keep: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let mut by_user = txn.open_table(TABLES.by_user).map_err(other)?;
            let mut doomed = Vec::new();
            for entry in by_user
                .range((id(uid), 0)..=(id(uid), u64::MAX))
                .map_err(other)?
                .rev()
                .skip(keep)
            {
                doomed.push(entry.map_err(other)?.0.value().1);
            }
            let mut imports = txn.open_table(TABLES.docs).map_err(other)?;
            let mut unfinished = txn.open_table(TABLES.unfinished).map_err(other)?;
            for i in &doomed {
                by_user.remove((id(uid), *i)).map_err(other)?;
                imports.remove(*i).map_err(other)?;
                unfinished.remove(*i).map_err(other)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }
}
