//! Imports of lists of people (follows, blocks, mutes, hides): the plan a
//! preview showed, applied in the background by whichever instance claims
//! it, with its progress.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// Which list an import writes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImportKind {
    Following,
    Blocks,
    Mutes,
    Hidden,
}

/// Whether an import adds to the list, or makes the list what it says.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImportMode {
    /// Adds who is not there yet; removes nobody.
    Merge,
    /// Adds who is not there, and removes who is there but not listed.
    Overwrite,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImportState {
    Queued,
    Running,
    Done,
    Failed,
}

/// One import: the plan, and how far it got.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ImportDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    pub kind: ImportKind,
    pub mode: ImportMode,
    /// What the preview called the plan: the same list, mode and plan
    /// give the same id, which is how a retry finds its import.
    #[serde(rename = "planId")]
    pub plan_id: String,
    /// Uids to add, and to remove; the removes are done first.
    pub add: Vec<i64>,
    pub remove: Vec<i64>,
    pub state: ImportState,
    /// Steps (removes, then adds) done: a run taken over goes on from
    /// here; a step done twice is done once.
    pub done: i64,
    /// Steps that could not be done when their turn came (someone blocked
    /// the account since the preview, or deleted theirs).
    pub skipped: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "finishedAt", default)]
    pub finished_at: Option<i64>,
    #[serde(default)]
    pub error: Option<String>,
    pub attempt: i64,
    #[serde(rename = "claimedUntil")]
    pub claimed_until: i64,
}

impl super::AccountJob for ImportDoc {
    const KIND: &'static str = "import";
    fn id(&self) -> i64 {
        self.id
    }
    fn uid(&self) -> i64 {
        self.uid
    }
    fn attempt(&self) -> i64 {
        self.attempt
    }
    fn claimed_until(&self) -> i64 {
        self.claimed_until
    }
    /// A run goes on from the steps done.
    fn claimed(self, _now: i64, until: i64) -> Self {
        ImportDoc {
            state: ImportState::Running,
            attempt: self.attempt + 1,
            claimed_until: until,
            ..self
        }
    }
}

/// Imports. Part of `DocStore`.
#[async_trait]
pub trait ImportDocs: Send + Sync {
    /// Stores a new import unless the account made another since its
    /// newest was `newest_seen`; `Ok(false)` for the loser of a race.
    async fn insert_import(
        &self,
        import: &ImportDoc,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool>;

    /// The account's imports, newest first.
    async fn imports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ImportDoc>>;

    async fn import_by_id(&self, uid: i64, id: i64) -> StoreResult<Option<ImportDoc>>;

    /// Claims until `until` up to `limit` imports nobody runs at `now`,
    /// each to one caller only, as a new attempt that goes on from `done`.
    async fn claim_imports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ImportDoc>>;

    /// Extends the run's claim and records its progress; false when the
    /// run is no longer the import's.
    async fn renew_import(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        until: i64,
        done: i64,
        skipped: i64,
    ) -> StoreResult<bool>;

    /// Ends the run (`Done` or `Failed` with `error`) if it is still the
    /// import's; false when it is not.
    async fn finish_import(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        state: ImportState,
        error: Option<&str>,
        at: i64,
    ) -> StoreResult<bool>;

    /// Deletes the account's imports beyond its newest `keep` (`keep` 0:
    /// all of them, erasing the account); how many went.
    async fn delete_imports_of(&self, uid: i64, keep: usize) -> StoreResult<u64>;
}
