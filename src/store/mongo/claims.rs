//! Claims by unique insert: the one write that decides a race on every
//! MongoDB-wire server this runs on.
//!
//! MongoDB applies a conditional update atomically, but FerretDB 1.24 reads
//! the matching document, changes it and writes it back by `_id` without
//! checking the filter again, so two instances claiming one fan-out or one
//! expired lease would both win (docs/FERRETDB.md). An insert under a
//! unique `_id` is exact everywhere. So a claim is an insert whose name says
//! what is claimed and in which state it was seen free (its generation):
//! one claimer wins each state, and the next state has a new name.

use super::*;

/// How long a claim's record is kept: long past the moment a slow rival,
/// holding the same stale read, could still try the same name.
const KEPT_MS: i64 = 60 * 60 * 1000;

/// Expired claims purged per claim: enough to keep up with the claims
/// made, on servers without TTL indexes.
const PURGED_PER_CLAIM: usize = 8;

impl MongoDocs {
    /// True when this call is the one that claimed `name`.
    pub(super) async fn claim(&self, name: String, now: i64) -> StoreResult<bool> {
        self.claim_kept(name, now, KEPT_MS).await
    }

    /// `claim`, with its record kept `kept_ms`: for a race whose rivals
    /// hold their reads for moments, so that a claim a dropped request left
    /// behind refuses that state only briefly.
    pub(super) async fn claim_kept(
        &self,
        name: String,
        now: i64,
        kept_ms: i64,
    ) -> StoreResult<bool> {
        let claims = self.db.collection::<Document>("claims");
        let record = doc! {
            "_id": name,
            "expireAt": mongodb::bson::DateTime::from_millis(now + kept_ms),
        };
        let won = match claims.insert_one(record).await {
            Ok(_) => true,
            Err(e) if duplicate_of(&e).is_some() => false,
            Err(e) => return Err(classify(e)),
        };
        let expired = doc! { "expireAt": { "$lt": mongodb::bson::DateTime::from_millis(now) } };
        if let Err(e) = self
            .delete_some::<String>("claims", expired, PURGED_PER_CLAIM)
            .await
        {
            tracing::debug!(error = %e, "could not purge expired claims; the next claim tries again");
        }
        Ok(won)
    }

    /// Gives a claim back when the write it was won for did not happen (it
    /// failed, or its document changed since it was seen): without this its
    /// name would be refused for an hour. Best effort: a claim left behind
    /// only delays that retry until it expires.
    pub(super) async fn unclaim(&self, name: String) {
        let claims = self.db.collection::<Document>("claims");
        if let Err(e) = claims.delete_one(doc! { "_id": name }).await {
            tracing::debug!(error = %e, "could not give a claim back; it expires within the hour");
        }
    }
}
