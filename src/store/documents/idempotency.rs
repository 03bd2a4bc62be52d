//! Answers kept under an `Idempotency-Key`, for the retries of a create.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::{lenient_bool, StoreResult};

/// A create request remembered under its `Idempotency-Key`, so that a retry
/// gets the first answer instead of making the thing twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyDoc {
    /// `{scope}:{hex SHA-256 of the key}`: the scope is the account (or the
    /// client address, for sign-ups), so one client's keys never meet
    /// another's.
    #[serde(rename = "_id")]
    pub id: String,
    /// Hex SHA-256 of the method, path, query and body of the first request.
    pub fingerprint: String,
    #[serde(rename = "startedAt")]
    pub started_at: i64,
    /// The answer, once the first request finished: status and JSON text.
    /// Absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Epoch ms after which the key is forgotten.
    #[serde(rename = "expiresAt")]
    pub expires_at: i64,
    /// The id the request holding this key makes its thing under, minted
    /// when it claimed the key (so a thing made is dated by its own try).
    #[serde(rename = "reservedId", default)]
    pub reserved_id: i64,
    /// The ids of earlier tries of the same request that failed (at most
    /// `MAX_TRIES` - 1): one of them may have made its thing before
    /// failing, so a retry looks there first, answers what it finds, and
    /// never makes a second one.
    #[serde(rename = "earlierIds", default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_ids: Vec<i64>,
    /// Its request failed: a retry may run it again (under the same
    /// reserved id).
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "lenient_bool"
    )]
    pub released: bool,
}

impl IdempotencyDoc {
    /// A key's first request, started at `started_at` and not finished.
    pub fn new(
        id: String,
        fingerprint: String,
        started_at: i64,
        expires_at: i64,
        reserved_id: i64,
    ) -> Self {
        Self {
            id,
            fingerprint,
            started_at,
            status: None,
            body: None,
            expires_at,
            reserved_id,
            earlier_ids: Vec::new(),
            released: false,
        }
    }

    /// Whether `claim` may take this record's place: it expired before
    /// `now`, or it is the same request again and this one never finished,
    /// having failed or started before `stale_before` (its instance died).
    /// Until it expires, a key is its first request's: another request
    /// must not take over the id that one reserved.
    pub fn replaceable(&self, claim: &IdempotencyDoc, now: i64, stale_before: i64) -> bool {
        self.expires_at < now
            || (self.fingerprint == claim.fingerprint
                && self.status.is_none()
                && (self.released || self.started_at < stale_before)
                && self.earlier_ids.len() + 1 < Self::MAX_TRIES)
    }

    /// `claim` taking this record's place: an expired one is forgotten
    /// whole, while the ids of one whose tries may have made their thing
    /// are passed on, to look at before making anything.
    pub fn succeeded_by(&self, claim: &IdempotencyDoc, now: i64) -> IdempotencyDoc {
        if self.expires_at < now {
            return claim.clone();
        }
        let mut earlier_ids = self.earlier_ids.clone();
        earlier_ids.extend(Some(self.reserved_id).filter(|id| *id != 0));
        IdempotencyDoc {
            earlier_ids,
            ..claim.clone()
        }
    }

    /// Tries of one request under one key, at most: a key every one of
    /// whose tries failed is not taken over again until it expires, so
    /// what a retry looks at stays bounded.
    pub const MAX_TRIES: usize = 16;
}

/// What claiming an `Idempotency-Key` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// The claim is this request's: run it, making its thing under
    /// `reserved_id`, unless one of the earlier tries made it.
    Won { reserved_id: i64, earlier: Vec<i64> },
    /// Another request holds the key, or finished under it: its record.
    Held(IdempotencyDoc),
}

/// Remembered `Idempotency-Key`s. Part of `DocStore`.
#[async_trait]
pub trait IdempotencyDocs: Send + Sync {
    /// Stores `key` unless a record with its id is there; then answers that
    /// one instead. A record that is `replaceable` is replaced (as
    /// `succeeded_by` says), and the claim won.
    async fn claim_idempotency_key(
        &self,
        key: &IdempotencyDoc,
        now: i64,
        stale_before: i64,
    ) -> StoreResult<KeyClaim>;

    /// Records the answer of the request that claimed `id` at `started_at`.
    async fn complete_idempotency_key(
        &self,
        id: &str,
        started_at: i64,
        status: u16,
        body: &str,
    ) -> StoreResult<()>;

    /// Marks the unfinished claim of `id` made at `started_at` released
    /// (its request failed), so that a retry runs again.
    async fn release_idempotency_key(&self, id: &str, started_at: i64) -> StoreResult<()>;

    /// Deletes up to `limit` keys that expired before `now`; how many went.
    async fn purge_expired_idempotency_keys(&self, now: i64, limit: usize) -> StoreResult<u64>;
}
