//! The embedded default: documents in a redb file under `MOMENTS_DATA_DIR`,
//! live state in process. What `moments serve` runs on when no MongoDB or
//! Redis is configured, so that `cargo run` just works: a real product mode
//! with the same ports, behaviours and errors as MongoDB + Redis. The
//! live state's part in live updates is `event_log`; the search index is
//! `search` (tantivy, in the same folder).

pub mod documents;
pub mod event_log;
pub mod group_commit;
pub mod live;
pub mod search;

use std::path::Path;
use std::sync::Arc;

use super::{StoreError, StoreResult};

pub const FILE_NAME: &str = "moments.redb";

/// Opens (creating if needed) the database file in `dir`. A second process
/// on the same directory is refused: redb locks the file for its writer.
/// `cache_bytes` bounds the file's pages kept in memory.
pub fn open(dir: &Path, cache_bytes: usize) -> StoreResult<Arc<redb::Database>> {
    std::fs::create_dir_all(dir).map_err(|e| {
        StoreError::Other(anyhow::anyhow!(
            "cannot create data directory {}: {e}",
            dir.display()
        ))
    })?;
    let path = dir.join(FILE_NAME);
    match redb::Builder::new()
        .set_cache_size(cache_bytes)
        .create(&path)
    {
        Ok(db) => Ok(Arc::new(db)),
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => Err(StoreError::Other(anyhow::anyhow!(
            "{} is in use by another moments process; stop it first, or point \
             MOMENTS_DATA_DIR at another directory",
            path.display()
        ))),
        Err(e) => Err(StoreError::Other(anyhow::anyhow!(
            "cannot open {}: {e}",
            path.display()
        ))),
    }
}

pub(crate) fn other(e: impl std::fmt::Display) -> StoreError {
    StoreError::Other(anyhow::anyhow!("embedded store: {e}"))
}
