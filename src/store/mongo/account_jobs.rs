//! Exports and imports on MongoDB, as one: storing a new job against a
//! racing start, listing an account's, and claiming the free ones.

use super::*;
use crate::store::AccountJob;

/// How long the claim that decides a start race is kept: starts that read
/// the same newest job race within moments of their read, and a job
/// deleted since must not refuse the next start for long.
const START_CLAIM_KEPT_MS: i64 = 60_000;

impl MongoDocs {
    /// Stores `job` unless the account started another since its newest
    /// was `newest_seen`. Of starts that read the same newest job, one wins
    /// a claim of this name; the next start reads a newer one, so another
    /// name.
    pub(super) async fn insert_account_job<T: AccountJob>(
        &self,
        coll: &Collection<T>,
        job: &T,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool> {
        let name = format!(
            "{}_start:{}:{}",
            T::KIND,
            job.uid(),
            newest_seen.unwrap_or(0)
        );
        if !self
            .claim_kept(name.clone(), crate::ids::now_ms(), START_CLAIM_KEPT_MS)
            .await?
        {
            return Ok(false);
        }
        match insert_new(coll, job, T::KIND).await {
            Ok(()) => Ok(true),
            Err(e) => {
                self.unclaim(name).await;
                Err(e)
            }
        }
    }

    /// Up to `limit` of the jobs nobody holds (queued, or running under a
    /// lapsed claim), each claimed as its next attempt until `until`.
    pub(super) async fn claim_account_jobs<T: AccountJob>(
        &self,
        coll: &Collection<T>,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<T>> {
        // More than there is room for, longest unclaimed first: one whose
        // claim a dead instance left half made is skipped, not retried
        // ahead of every other job for the hour its name is kept.
        let free = collect(
            coll.find(doc! {
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
        for job in free {
            if claimed.len() >= limit {
                break;
            }
            // One claimer per attempt: the next run is attempt + 1.
            let name = format!("{}_run:{}:{}", T::KIND, job.id(), job.attempt());
            if !self.claim(name.clone(), now).await? {
                continue;
            }
            // As read, or nothing: a renewal, a finish or another claim
            // since the read moved `claimedUntil` or `attempt`.
            let filter = doc! {
                "_id": job.id(),
                "uid": job.uid(),
                "attempt": job.attempt(),
                "claimedUntil": job.claimed_until(),
            };
            let run = job.claimed(now, until);
            let mut fields =
                mongodb::bson::to_document(&run).map_err(|e| StoreError::Other(e.into()))?;
            fields.remove("_id");
            match coll.update_one(filter, doc! { "$set": fields }).await {
                Ok(r) if r.matched_count == 1 => claimed.push(run),
                Ok(_) => self.unclaim(name).await,
                Err(e) => {
                    self.unclaim(name).await;
                    return Err(classify(e));
                }
            }
        }
        Ok(claimed)
    }
}

/// The account's newest `limit` jobs of this kind.
pub(super) async fn account_jobs_of<T: AccountJob>(
    coll: Collection<T>,
    uid: i64,
    limit: usize,
) -> StoreResult<Vec<T>> {
    newest_page(coll, doc! { "uid": uid }, None, limit).await
}

/// The job `id` if it is `uid`'s.
pub(super) async fn account_job<T: AccountJob>(
    coll: &Collection<T>,
    uid: i64,
    id: i64,
) -> StoreResult<Option<T>> {
    coll.find_one(doc! { "_id": id, "uid": uid })
        .await
        .map_err(classify)
}
