//! Live keys a failed write left stale, shared so that any instance drops
//! them.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::{LiveKey, Owner, StoreResult};

/// Live keys of one owner whose update failed, as one save recorded them,
/// kept where every instance sees them: until they are dropped from the
/// live store, no instance serves them, and a restart does not forget them.
/// Each save inserts its own record rather than adding to the owner's:
/// only an insert is atomic on every MongoDB-wire server (docs/FERRETDB.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LiveRepairDoc {
    /// `Owner::code` and the save's mark: "p:ID@MARK".
    #[serde(rename = "_id")]
    pub id: String,
    /// `Owner::code`: "p:ID" or "u:UID". Empty in records of the version
    /// that kept one record per owner under the owner's code as its id.
    #[serde(default)]
    pub owner: String,
    /// `LiveKey::code` of each key.
    pub keys: Vec<String>,
    /// The save's generated id.
    pub mark: i64,
    /// Epoch ms of the failure.
    #[serde(rename = "savedAt")]
    pub saved_at: i64,
}

impl LiveRepairDoc {
    pub fn new(owner: Owner, keys: &[LiveKey], mark: i64, saved_at: i64) -> Self {
        let owner = owner.code();
        Self {
            id: format!("{owner}@{mark}"),
            owner,
            keys: keys.iter().map(|k| k.code()).collect(),
            mark,
            saved_at,
        }
    }

    /// The owner's code, in either version's records.
    pub fn owner_code(&self) -> &str {
        if self.owner.is_empty() {
            &self.id
        } else {
            &self.owner
        }
    }
}

/// The shared list of stale live keys. Part of `DocStore`.
#[async_trait]
pub trait LiveRepairDocs: Send + Sync {
    /// Records each owner's keys, one record per owner, under `mark` (a
    /// generated id, unique to this save).
    async fn save_live_repairs(
        &self,
        repairs: &[(Owner, Vec<LiveKey>)],
        mark: i64,
        now: i64,
    ) -> StoreResult<()>;

    /// Up to `limit` records, oldest first.
    async fn live_repairs(&self, limit: usize) -> StoreResult<Vec<LiveRepairDoc>>;

    /// Deletes the records of these ids: their keys were dropped.
    async fn finish_live_repairs(&self, ids: &[String]) -> StoreResult<()>;
}
