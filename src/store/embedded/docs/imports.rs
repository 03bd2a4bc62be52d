//! `ImportDocs` on redb: imports by id with a per-account index, and the
//! unfinished ones apart for the job's claims.

use super::*;
use crate::store::{ImportDoc, ImportDocs, ImportState};

/// Import id → the import (`ImportDoc` JSON).
const IMPORTS: TableDefinition<u64, &[u8]> = TableDefinition::new("imports");
/// (uid, import id) of every import.
const IMPORTS_BY_USER: TableDefinition<(u64, u64), ()> = TableDefinition::new("imports_by_user");
/// Import id → uid of the queued and running ones.
const IMPORTS_UNFINISHED: TableDefinition<u64, u64> = TableDefinition::new("imports_unfinished");

pub(super) fn open_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(IMPORTS).map_err(other)?;
    txn.open_table(IMPORTS_BY_USER).map_err(other)?;
    txn.open_table(IMPORTS_UNFINISHED).map_err(other)?;
    Ok(())
}

fn stored(txn: &WriteTransaction, uid: i64, import: i64) -> StoreResult<Option<ImportDoc>> {
    let table = txn.open_table(IMPORTS).map_err(other)?;
    let found: Option<ImportDoc> = get_doc(&table, id(import))?;
    Ok(found.filter(|i| i.uid == uid))
}

fn put(txn: &WriteTransaction, i: &ImportDoc) -> StoreResult<()> {
    txn.open_table(IMPORTS)
        .map_err(other)?
        .insert(id(i.id), encode(i)?.as_slice())
        .map_err(other)?;
    Ok(())
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
        let i = import.clone();
        self.write(move |txn| {
            let mut by_user = txn.open_table(IMPORTS_BY_USER).map_err(other)?;
            let newest = by_user
                .range((id(i.uid), 0)..=(id(i.uid), u64::MAX))
                .map_err(other)?
                .next_back()
                .transpose()
                .map_err(other)?
                .map(|(k, _)| k.value().1 as i64);
            if newest != newest_seen {
                return Ok(false);
            }
            by_user.insert((id(i.uid), id(i.id)), ()).map_err(other)?;
            txn.open_table(IMPORTS_UNFINISHED)
                .map_err(other)?
                .insert(id(i.id), id(i.uid))
                .map_err(other)?;
            put(txn, &i)?;
            Ok(true)
        })
        .await
    }

    async fn imports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ImportDoc>> {
        self.read(move |txn| {
            let by_user = txn.open_table(IMPORTS_BY_USER).map_err(other)?;
            let ids: Vec<i64> = newest_below(&by_user, id(uid), None, limit)?
                .into_iter()
                .map(|i| i as i64)
                .collect();
            docs_by_ids(txn, IMPORTS, &ids)
        })
        .await
    }

    async fn import_by_id(&self, uid: i64, import: i64) -> StoreResult<Option<ImportDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(IMPORTS).map_err(other)?;
            let found: Option<ImportDoc> = get_doc(&table, id(import))?;
            Ok(found.filter(|i| i.uid == uid))
        })
        .await
    }

    async fn claim_imports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ImportDoc>> {
        // Read first: the job polls every second, and there is almost
        // never anything to claim, which is no reason for a commit's fsync.
        let free = self
            .read(move |txn| {
                let unfinished = txn.open_table(IMPORTS_UNFINISHED).map_err(other)?;
                let table = txn.open_table(IMPORTS).map_err(other)?;
                for entry in unfinished.iter().map_err(other)? {
                    let key = entry.map_err(other)?.0.value();
                    let i: Option<ImportDoc> = get_doc(&table, key)?;
                    if i.is_some_and(|i| i.claimed_until < now) {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .await?;
        if !free {
            return Ok(Vec::new());
        }
        self.write(move |txn| {
            let unfinished = txn.open_table(IMPORTS_UNFINISHED).map_err(other)?;
            let mut claimed = Vec::new();
            {
                let table = txn.open_table(IMPORTS).map_err(other)?;
                for entry in unfinished.iter().map_err(other)? {
                    if claimed.len() >= limit {
                        break;
                    }
                    let key = entry.map_err(other)?.0.value();
                    let i: Option<ImportDoc> = get_doc(&table, key)?;
                    if let Some(i) = i.filter(|i| i.claimed_until < now) {
                        claimed.push(ImportDoc {
                            state: ImportState::Running,
                            attempt: i.attempt + 1,
                            claimed_until: until,
                            ..i
                        });
                    }
                }
            }
            for i in &claimed {
                put(txn, i)?;
            }
            Ok(claimed)
        })
        .await
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
            txn.open_table(IMPORTS_UNFINISHED)
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
            let mut by_user = txn.open_table(IMPORTS_BY_USER).map_err(other)?;
            let mut doomed = Vec::new();
            for entry in by_user
                .range((id(uid), 0)..=(id(uid), u64::MAX))
                .map_err(other)?
                .rev()
                .skip(keep)
            {
                doomed.push(entry.map_err(other)?.0.value().1);
            }
            let mut imports = txn.open_table(IMPORTS).map_err(other)?;
            let mut unfinished = txn.open_table(IMPORTS_UNFINISHED).map_err(other)?;
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
