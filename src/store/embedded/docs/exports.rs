//! `ExportDocs` on redb: exports by id with a per-account index, the
//! unfinished ones apart for the job's claims, and archives as chunks
//! keyed by (export, attempt, n) in a table of the same file.

use super::*;
use crate::store::{ExportDoc, ExportDocs, ExportOutcome, ExportState};

/// Export id → the export (`ExportDoc` JSON).
const EXPORTS: TableDefinition<u64, &[u8]> = TableDefinition::new("exports");
/// (uid, export id) of every export.
const EXPORTS_BY_USER: TableDefinition<(u64, u64), ()> = TableDefinition::new("exports_by_user");
/// Export id → uid of the queued and running ones: what the job claims from.
const EXPORTS_UNFINISHED: TableDefinition<u64, u64> = TableDefinition::new("exports_unfinished");
/// (expires at, export id) → uid of the ready and failed ones, for the sweep.
const EXPORT_EXPIRY: TableDefinition<(i64, u64), u64> = TableDefinition::new("exports_by_expiry");
/// (export id, attempt, n) → chunk n of that attempt's archive.
const EXPORT_CHUNKS: TableDefinition<(u64, u64, u64), &[u8]> =
    TableDefinition::new("export_chunks");

pub(super) fn open_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(EXPORTS).map_err(other)?;
    txn.open_table(EXPORTS_BY_USER).map_err(other)?;
    txn.open_table(EXPORTS_UNFINISHED).map_err(other)?;
    txn.open_table(EXPORT_EXPIRY).map_err(other)?;
    txn.open_table(EXPORT_CHUNKS).map_err(other)?;
    Ok(())
}

/// The export as stored, if it is `uid`'s.
fn stored(txn: &WriteTransaction, uid: i64, export: i64) -> StoreResult<Option<ExportDoc>> {
    let table = txn.open_table(EXPORTS).map_err(other)?;
    let found: Option<ExportDoc> = get_doc(&table, id(export))?;
    Ok(found.filter(|e| e.uid == uid))
}

fn put(txn: &WriteTransaction, e: &ExportDoc) -> StoreResult<()> {
    txn.open_table(EXPORTS)
        .map_err(other)?
        .insert(id(e.id), encode(e)?.as_slice())
        .map_err(other)?;
    Ok(())
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
        let e = export.clone();
        self.write(move |txn| {
            let mut by_user = txn.open_table(EXPORTS_BY_USER).map_err(other)?;
            let newest = by_user
                .range((id(e.uid), 0)..=(id(e.uid), u64::MAX))
                .map_err(other)?
                .next_back()
                .transpose()
                .map_err(other)?
                .map(|(k, _)| k.value().1 as i64);
            if newest != newest_seen {
                return Ok(false);
            }
            by_user.insert((id(e.uid), id(e.id)), ()).map_err(other)?;
            txn.open_table(EXPORTS_UNFINISHED)
                .map_err(other)?
                .insert(id(e.id), id(e.uid))
                .map_err(other)?;
            put(txn, &e)?;
            Ok(true)
        })
        .await
    }

    async fn exports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ExportDoc>> {
        self.read(move |txn| {
            let by_user = txn.open_table(EXPORTS_BY_USER).map_err(other)?;
            let ids: Vec<i64> = newest_below(&by_user, id(uid), None, limit)?
                .into_iter()
                .map(|i| i as i64)
                .collect();
            docs_by_ids(txn, EXPORTS, &ids)
        })
        .await
    }

    async fn export_by_id(&self, uid: i64, export: i64) -> StoreResult<Option<ExportDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(EXPORTS).map_err(other)?;
            let found: Option<ExportDoc> = get_doc(&table, id(export))?;
            Ok(found.filter(|e| e.uid == uid))
        })
        .await
    }

    async fn claim_exports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ExportDoc>> {
        // Read first: the job polls every second, and there is almost
        // never anything to claim, which is no reason for a commit's fsync.
        let any_free = self
            .read(move |txn| {
                let unfinished = txn.open_table(EXPORTS_UNFINISHED).map_err(other)?;
                let table = txn.open_table(EXPORTS).map_err(other)?;
                for entry in unfinished.iter().map_err(other)? {
                    let key = entry.map_err(other)?.0.value();
                    let e: Option<ExportDoc> = get_doc(&table, key)?;
                    if e.is_some_and(|e| e.claimed_until < now) {
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
            let unfinished = txn.open_table(EXPORTS_UNFINISHED).map_err(other)?;
            let mut free = Vec::new();
            {
                let table = txn.open_table(EXPORTS).map_err(other)?;
                for entry in unfinished.iter().map_err(other)? {
                    if free.len() >= limit {
                        break;
                    }
                    let key = entry.map_err(other)?.0.value();
                    let e: Option<ExportDoc> = get_doc(&table, key)?;
                    if let Some(e) = e.filter(|e| e.claimed_until < now) {
                        free.push(e);
                    }
                }
            }
            let claimed: Vec<ExportDoc> = free
                .into_iter()
                .map(|e| ExportDoc {
                    state: ExportState::Running,
                    started_at: Some(now),
                    attempt: e.attempt + 1,
                    claimed_until: until,
                    done: 0,
                    known: 0,
                    ..e
                })
                .collect();
            for e in &claimed {
                put(txn, e)?;
            }
            Ok(claimed)
        })
        .await
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
            txn.open_table(EXPORTS_UNFINISHED)
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
            txn.open_table(EXPORTS_BY_USER)
                .map_err(other)?
                .remove((id(uid), id(export)))
                .map_err(other)?;
            txn.open_table(EXPORTS_UNFINISHED)
                .map_err(other)?
                .remove(id(export))
                .map_err(other)?;
            if let Some(at) = e.expires_at {
                txn.open_table(EXPORT_EXPIRY)
                    .map_err(other)?
                    .remove((at, id(export)))
                    .map_err(other)?;
            }
            txn.open_table(EXPORTS)
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
