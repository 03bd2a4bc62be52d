//! `ExportDocs` on redb: exports by id with a per-account index, the
//! unfinished ones apart for the job's claims, and archives as chunks
//! keyed by (export, attempt, n) in a table of the same file.

use super::account_jobs::JobTables;
use super::*;
use crate::store::{ExportDoc, ExportDocs, ExportOutcome, ExportState};

/// The exports by id, by account, and the unfinished ones.
const TABLES: JobTables = JobTables {
    docs: TableDefinition::new("exports"),
    by_user: TableDefinition::new("exports_by_user"),
    unfinished: TableDefinition::new("exports_unfinished"),
};
/// (expires at, export id) → uid of the ready and failed ones, for the sweep.
const EXPORT_EXPIRY: TableDefinition<(i64, u64), u64> = TableDefinition::new("exports_by_expiry");
/// (export id, attempt, n) → chunk n of that attempt's archive.
const EXPORT_CHUNKS: TableDefinition<(u64, u64, u64), &[u8]> =
    TableDefinition::new("export_chunks");

pub(super) fn open_tables(txn: &WriteTransaction) -> StoreResult<()> {
    TABLES.open(txn)?;
    txn.open_table(EXPORT_EXPIRY).map_err(other)?;
    txn.open_table(EXPORT_CHUNKS).map_err(other)?;
    Ok(())
}

/// The export as stored, if it is `uid`'s.
fn stored(txn: &WriteTransaction, uid: i64, export: i64) -> StoreResult<Option<ExportDoc>> {
    TABLES.stored(txn, uid, export)
}

fn put(txn: &WriteTransaction, e: &ExportDoc) -> StoreResult<()> {
    TABLES.put(txn, e)
}

/// Removes the chunks of `export` for which `doomed(attempt)` holds.
fn remove_chunks(
    txn: &WriteTransaction,
    export: i64,
    doomed: impl Fn(u64) -> bool,
) -> StoreResult<()> {
    let mut chunks = txn.open_table(EXPORT_CHUNKS).map_err(other)?;
    let mut keys = Vec::new();
    for entry in chunks
        .range((id(export), 0, 0)..=(id(export), u64::MAX, u64::MAX))
        .map_err(other)?
    {
        let key = entry.map_err(other)?.0.value();
        if doomed(key.1) {
            keys.push(key);
        }
    }
    for key in keys {
        chunks.remove(key).map_err(other)?;
    }
    Ok(())
}

#[async_trait]
impl ExportDocs for EmbeddedDocs {
    async fn insert_export(
        &self,
        export: &ExportDoc,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool> {
        self.insert_account_job(TABLES, export, newest_seen).await
    }

    async fn exports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ExportDoc>> {
        self.account_jobs_of(TABLES, uid, limit).await
    }

    async fn export_by_id(&self, uid: i64, export: i64) -> StoreResult<Option<ExportDoc>> {
        self.account_job(TABLES, uid, export).await
    }

    async fn claim_exports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ExportDoc>> {
        self.claim_account_jobs(TABLES, now, until, limit).await
    }

    async fn renew_export(
        &self,
        uid: i64,
        export: i64,
        attempt: i64,
        until: i64,
        done: i64,
        known: i64,
    ) -> StoreResult<bool> {
        self.write(move |txn| {
            let Some(e) = stored(txn, uid, export)? else {
                return Ok(false);
            };
            if e.attempt != attempt || e.state != ExportState::Running {
                return Ok(false);
            }
            put(
                txn,
                &ExportDoc {
                    claimed_until: until,
                    done,
                    known,
                    ..e
                },
            )?;
            Ok(true)
        })
        .await
    }

    async fn put_export_chunk(
        &self,
        uid: i64,
        export: i64,
        attempt: i64,
        n: i64,
        data: &[u8],
    ) -> StoreResult<bool> {
        let data = data.to_vec();
        self.write(move |txn| {
            let running = stored(txn, uid, export)?
                .is_some_and(|e| e.attempt == attempt && e.state == ExportState::Running);
            if !running {
                return Ok(false);
            }
            txn.open_table(EXPORT_CHUNKS)
                .map_err(other)?
                .insert((id(export), id(attempt), id(n)), data.as_slice())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn export_chunk(
        &self,
        export: i64,
        attempt: i64,
        n: i64,
    ) -> StoreResult<Option<Vec<u8>>> {
        self.read(move |txn| {
            let chunks = txn.open_table(EXPORT_CHUNKS).map_err(other)?;
            Ok(chunks
                .get((id(export), id(attempt), id(n)))
                .map_err(other)?
                .map(|v| v.value().to_vec()))
        })
        .await
    }

    async fn finish_export(
        &self,
        uid: i64,
        export: i64,
        attempt: i64,
        outcome: &ExportOutcome,
    ) -> StoreResult<bool> {
        let outcome = outcome.clone();
        self.write(move |txn| {
            let Some(e) = stored(txn, uid, export)? else {
                return Ok(false);
            };
            if e.attempt != attempt || e.state != ExportState::Running {
                return Ok(false);
            }
            let now = crate::ids::now_ms();
            let (finished, kept) = match &outcome {
                ExportOutcome::Ready {
                    size,
                    sha256,
                    records,
                    expires_at,
                } => (
                    ExportDoc {
                        state: ExportState::Ready,
                        size: Some(*size),
                        sha256: Some(sha256.clone()),
                        expires_at: Some(*expires_at),
                        finished_at: Some(now),
                        claimed_until: 0,
                        done: *records,
                        known: *records,
                        ..e.clone()
                    },
                    Some(attempt),
                ),
                ExportOutcome::Failed { error, expires_at } => (
                    ExportDoc {
                        state: ExportState::Failed,
                        error: Some(error.clone()),
                        expires_at: Some(*expires_at),
                        finished_at: Some(now),
                        claimed_until: 0,
                        ..e.clone()
                    },
                    None,
                ),
            };
            remove_chunks(txn, export, |a| Some(a as i64) != kept)?;
            txn.open_table(TABLES.unfinished)
                .map_err(other)?
                .remove(id(export))
                .map_err(other)?;
            txn.open_table(EXPORT_EXPIRY)
                .map_err(other)?
                .insert((finished.expires_at.unwrap_or(now), id(export)), id(uid))
                .map_err(other)?;
            put(txn, &finished)?;
            Ok(true)
        })
        .await
    }

    async fn delete_export_attempt(&self, export: i64, attempt: i64) -> StoreResult<()> {
        self.write(move |txn| remove_chunks(txn, export, |a| a == id(attempt)))
            .await
    }

    async fn set_export_link(
        &self,
        uid: i64,
        export: i64,
        hash: &str,
        expires_at: i64,
        credential_gen: i64,
    ) -> StoreResult<bool> {
        let hash = hash.to_string();
        self.write(move |txn| {
            let Some(e) = stored(txn, uid, export)? else {
                return Ok(false);
            };
            put(
                txn,
                &ExportDoc {
                    link_hash: Some(hash.clone()),
                    link_expires_at: expires_at,
                    link_gen: credential_gen,
                    ..e
                },
            )?;
            Ok(true)
        })
        .await
    }

    async fn delete_export(&self, uid: i64, export: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let Some(e) = stored(txn, uid, export)? else {
                return Ok(());
            };
            remove_chunks(txn, export, |_| true)?;
            txn.open_table(TABLES.by_user)
                .map_err(other)?
                .remove((id(uid), id(export)))
                .map_err(other)?;
            txn.open_table(TABLES.unfinished)
                .map_err(other)?
                .remove(id(export))
                .map_err(other)?;
            if let Some(at) = e.expires_at {
                txn.open_table(EXPORT_EXPIRY)
                    .map_err(other)?
                    .remove((at, id(export)))
                    .map_err(other)?;
            }
            txn.open_table(TABLES.docs)
                .map_err(other)?
                .remove(id(export))
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn expired_exports(&self, now: i64, limit: usize) -> StoreResult<Vec<(i64, i64)>> {
        self.read(move |txn| {
            let expiry = txn.open_table(EXPORT_EXPIRY).map_err(other)?;
            let mut out = Vec::new();
            for entry in expiry
                .range((i64::MIN, 0)..(now, 0))
                .map_err(other)?
                .take(limit)
            {
                let (key, uid) = entry.map_err(other)?;
                out.push((uid.value() as i64, key.value().1 as i64));
            }
            Ok(out)
        })
        .await
    }
}
