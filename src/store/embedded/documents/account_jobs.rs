//! Exports and imports on redb, as one: each kind is three tables (the
//! jobs by id, `(uid, id)` of every job, and the unfinished ones apart for
//! the claims), stored, listed and claimed by the same code.

use super::*;
use crate::store::AccountJob;

/// The tables of one kind of account job.
#[derive(Clone, Copy)]
pub(super) struct JobTables {
    /// Job id → the job (JSON).
    pub docs: TableDefinition<'static, u64, &'static [u8]>,
    /// (uid, job id) of every job.
    pub by_user: TableDefinition<'static, (u64, u64), ()>,
    /// Job id → uid of the queued and running ones: what claims look in.
    pub unfinished: TableDefinition<'static, u64, u64>,
}

impl JobTables {
    pub fn open(self, txn: &WriteTransaction) -> StoreResult<()> {
        txn.open_table(self.docs).map_err(other)?;
        txn.open_table(self.by_user).map_err(other)?;
        txn.open_table(self.unfinished).map_err(other)?;
        Ok(())
    }

    /// The job as stored, if it is `uid`'s.
    pub fn stored<T: AccountJob>(
        self,
        txn: &WriteTransaction,
        uid: i64,
        job: i64,
    ) -> StoreResult<Option<T>> {
        let table = txn.open_table(self.docs).map_err(other)?;
        let found: Option<T> = get_doc(&table, id(job))?;
        Ok(found.filter(|j| j.uid() == uid))
    }

    pub fn put<T: AccountJob>(self, txn: &WriteTransaction, job: &T) -> StoreResult<()> {
        txn.open_table(self.docs)
            .map_err(other)?
            .insert(id(job.id()), encode(job)?.as_slice())
            .map_err(other)?;
        Ok(())
    }
}

impl EmbeddedDocs {
    /// Stores `job` unless the account started another since its newest
    /// was `newest_seen`: one write transaction decides the race.
    pub(super) async fn insert_account_job<T: AccountJob>(
        &self,
        tables: JobTables,
        job: &T,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool> {
        let job = job.clone();
        self.write(move |txn| {
            let mut by_user = txn.open_table(tables.by_user).map_err(other)?;
            let uid = id(job.uid());
            let newest = by_user
                .range((uid, 0)..=(uid, u64::MAX))
                .map_err(other)?
                .next_back()
                .transpose()
                .map_err(other)?
                .map(|(k, _)| k.value().1 as i64);
            if newest != newest_seen {
                return Ok(false);
            }
            by_user.insert((uid, id(job.id())), ()).map_err(other)?;
            txn.open_table(tables.unfinished)
                .map_err(other)?
                .insert(id(job.id()), uid)
                .map_err(other)?;
            tables.put(txn, &job)?;
            Ok(true)
        })
        .await
    }

    /// The account's newest `limit` jobs of this kind.
    pub(super) async fn account_jobs_of<T: AccountJob>(
        &self,
        tables: JobTables,
        uid: i64,
        limit: usize,
    ) -> StoreResult<Vec<T>> {
        self.read(move |txn| {
            let by_user = txn.open_table(tables.by_user).map_err(other)?;
            let ids: Vec<i64> = newest_below(&by_user, id(uid), None, limit)?
                .into_iter()
                .map(|i| i as i64)
                .collect();
            docs_by_ids(txn, tables.docs, &ids)
        })
        .await
    }

    /// The job `job` if it is `uid`'s.
    pub(super) async fn account_job<T: AccountJob>(
        &self,
        tables: JobTables,
        uid: i64,
        job: i64,
    ) -> StoreResult<Option<T>> {
        self.read(move |txn| {
            let table = txn.open_table(tables.docs).map_err(other)?;
            let found: Option<T> = get_doc(&table, id(job))?;
            Ok(found.filter(|j| j.uid() == uid))
        })
        .await
    }

    /// Up to `limit` of the jobs nobody holds (queued, or running under a
    /// lapsed claim), each claimed as its next attempt until `until`.
    pub(super) async fn claim_account_jobs<T: AccountJob>(
        &self,
        tables: JobTables,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<T>> {
        // Read first: the jobs poll every second, and there is almost
        // never anything to claim, which is no reason for a commit's fsync.
        let any_free = self
            .read(move |txn| {
                let unfinished = txn.open_table(tables.unfinished).map_err(other)?;
                let table = txn.open_table(tables.docs).map_err(other)?;
                for entry in unfinished.iter().map_err(other)? {
                    let key = entry.map_err(other)?.0.value();
                    let job: Option<T> = get_doc(&table, key)?;
                    if job.is_some_and(|j| j.claimed_until() < now) {
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
            let unfinished = txn.open_table(tables.unfinished).map_err(other)?;
            let mut claimed = Vec::new();
            {
                let table = txn.open_table(tables.docs).map_err(other)?;
                for entry in unfinished.iter().map_err(other)? {
                    if claimed.len() >= limit {
                        break;
                    }
                    let key = entry.map_err(other)?.0.value();
                    let job: Option<T> = get_doc(&table, key)?;
                    if let Some(job) = job.filter(|j| j.claimed_until() < now) {
                        claimed.push(job.claimed(now, until));
                    }
                }
            }
            for job in &claimed {
                tables.put(txn, job)?;
            }
            Ok(claimed)
        })
        .await
    }
}
