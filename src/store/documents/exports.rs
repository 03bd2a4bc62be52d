//! Data exports: a user's archive of everything they made, its job's
//! state, and the archive itself, kept as numbered chunks so that any
//! instance can serve any byte range of it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// Where an export is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportState {
    /// Asked for; no instance has started it yet.
    Queued,
    /// An instance is writing the archive (or died doing so, and another
    /// takes it over once its claim lapses).
    Running,
    /// The archive is complete and can be downloaded until `expiresAt`.
    Ready,
    /// It could not be made; `error` says why. It holds no archive and
    /// does not keep the account from asking again.
    Failed,
}

/// One export of one account's data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExportDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    pub state: ExportState,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    /// When the run that made (or is making) it started.
    #[serde(rename = "startedAt", default)]
    pub started_at: Option<i64>,
    #[serde(rename = "finishedAt", default)]
    pub finished_at: Option<i64>,
    /// When a ready or failed export is deleted, archive and all.
    #[serde(rename = "expiresAt", default)]
    pub expires_at: Option<i64>,
    /// Records written so far by the current run.
    pub done: i64,
    /// Records the current run knows of so far: never less than `done`,
    /// and only ever growing while it runs.
    pub known: i64,
    /// The archive's bytes, once ready.
    #[serde(default)]
    pub size: Option<i64>,
    /// Hex SHA-256 of the archive, once ready: its strong validator.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Runs started so far: the chunks written under the latest are the
    /// archive. A run taken over from a dead instance is a new attempt,
    /// so nothing the old one still writes can mix into the new archive.
    pub attempt: i64,
    /// Until when (epoch ms) the instance running it holds it; 0 when
    /// nobody does. A claim that lapses (its instance died) is taken again.
    #[serde(rename = "claimedUntil")]
    pub claimed_until: i64,
    /// Bytes in every chunk but the last: where a range starts.
    #[serde(rename = "chunkBytes")]
    pub chunk_bytes: i64,
    /// Hex SHA-256 of the download link's key, and until when it opens
    /// the archive: one link at a time, replaced by the next.
    #[serde(rename = "linkHash", default)]
    pub link_hash: Option<String>,
    #[serde(rename = "linkExpiresAt", default)]
    pub link_expires_at: i64,
    /// The account's `credentialGen` when the link was made: a new
    /// password or signing out everywhere raises it, and ends the link.
    #[serde(rename = "linkGen", default)]
    pub link_gen: i64,
}

impl super::AccountJob for ExportDoc {
    const KIND: &'static str = "export";
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
    /// A run writes the archive from the start: its progress starts again.
    fn claimed(self, now: i64, until: i64) -> Self {
        ExportDoc {
            state: ExportState::Running,
            started_at: Some(now),
            attempt: self.attempt + 1,
            claimed_until: until,
            done: 0,
            known: 0,
            ..self
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportOutcome {
    Ready {
        size: i64,
        sha256: String,
        /// Records written, which are all there were.
        records: i64,
        expires_at: i64,
    },
    Failed {
        error: String,
        expires_at: i64,
    },
}

/// Exports and their archives. Part of `DocStore`.
#[async_trait]
pub trait ExportDocs: Send + Sync {
    /// Stores a new export unless the account made another since its
    /// newest was `newest_seen` (`None`: it had none): of two starts racing
    /// on what they both read, one wins. `Ok(false)` for the loser.
    async fn insert_export(
        &self,
        export: &ExportDoc,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool>;

    /// The account's exports, newest first.
    async fn exports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ExportDoc>>;

    async fn export_by_id(&self, uid: i64, id: i64) -> StoreResult<Option<ExportDoc>>;

    /// Claims until `until` up to `limit` exports nobody runs at `now`
    /// (queued, or running with a lapsed claim), each to one caller only:
    /// each comes back running, as a new attempt, its progress reset.
    async fn claim_exports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ExportDoc>>;

    /// Extends the run's claim and records its progress; false when the
    /// run is no longer the export's (taken over, or the export deleted).
    async fn renew_export(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        until: i64,
        done: i64,
        known: i64,
    ) -> StoreResult<bool>;

    /// Stores chunk `n` of the run's archive (again, if a retry), if the
    /// run is still the export's: false when it is not (taken over, or the
    /// export deleted with its account), and nothing is stored.
    async fn put_export_chunk(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        n: i64,
        data: &[u8],
    ) -> StoreResult<bool>;

    /// Chunk `n` of the archive written by `attempt`.
    async fn export_chunk(&self, id: i64, attempt: i64, n: i64) -> StoreResult<Option<Vec<u8>>>;

    /// Ends the run as `outcome` says, if it is still the export's, and
    /// deletes every chunk that is not the archive (other attempts', and a
    /// failed run's own). False when the run was no longer the export's.
    async fn finish_export(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        outcome: &ExportOutcome,
    ) -> StoreResult<bool>;

    /// Deletes what `attempt` wrote of the archive: a run that lost its
    /// export (taken over, or deleted) cleans up after itself.
    async fn delete_export_attempt(&self, id: i64, attempt: i64) -> StoreResult<()>;

    /// Records the download link's key hash; false when there is no such
    /// export.
    async fn set_export_link(
        &self,
        uid: i64,
        id: i64,
        hash: &str,
        expires_at: i64,
        credential_gen: i64,
    ) -> StoreResult<bool>;

    /// Deletes the export and its archive.
    async fn delete_export(&self, uid: i64, id: i64) -> StoreResult<()>;

    /// `(uid, id)` of up to `limit` exports whose `expiresAt` is before
    /// `now`: the sweep deletes them.
    async fn expired_exports(&self, now: i64, limit: usize) -> StoreResult<Vec<(i64, i64)>>;
}
