//! Serving archives: how many downloads of one export this instance serves
//! at once, and the chunks being served.
//!
//! A range is served from the chunk that holds it, read whole: MongoDB (and
//! FerretDB) cannot hand back part of a binary field (`$slice` takes
//! arrays, and no aggregation operator cuts `BinData`), and redb reads a
//! value's pages whole whatever part of it is wanted, so reading "only the
//! bytes a range needs" would save no store work. Instead the chunks being
//! served are kept for a little while: a run of small ranges in one chunk
//! (a client resuming byte by byte, or one sending `bytes=0-0` over and
//! over) costs one store read per chunk, not one per request.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::web::Bytes;

use super::{Exports, ReadyArchive};
use crate::error::{AppError, AppResult};
use crate::service::Context;

/// Chunks kept: with MOMENTS_EXPORT_CHUNK_BYTES at most 8 MiB, 32 MiB at
/// worst, 4 MiB at the default.
const CACHED_CHUNKS: usize = 4;

/// How long a chunk is kept: long enough for a resumed download's next
/// request. An export deleted (expired, or with its account) is forgotten
/// at once.
const CACHED_FOR: Duration = Duration::from_secs(30);

/// When to try again, past the cap: a download of a big archive lasts
/// minutes, so sooner would mostly be refused again.
const RETRY_AFTER_SECS: u64 = 10;

struct Cached {
    key: (i64, i64, i64),
    at: Instant,
    bytes: Bytes,
}

#[derive(Default)]
pub struct Downloads {
    /// Downloads in progress, by export.
    serving: Mutex<HashMap<i64, usize>>,
    /// Newest last.
    chunks: Mutex<VecDeque<Cached>>,
}

impl Downloads {
    /// Downloads of export `id` this instance is serving.
    pub fn serving(&self, id: i64) -> usize {
        self.serving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .copied()
            .unwrap_or(0)
    }

    fn cached(&self, key: (i64, i64, i64)) -> Option<Bytes> {
        let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
        chunks.retain(|c| c.at.elapsed() < CACHED_FOR);
        chunks
            .iter()
            .find(|c| c.key == key)
            .map(|c| c.bytes.clone())
    }

    /// Drops what is kept of export `id`: deleted, its bytes leave memory.
    pub fn forget(&self, id: i64) {
        self.chunks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|c| c.key.0 != id);
    }

    fn keep(&self, key: (i64, i64, i64), bytes: Bytes) {
        let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
        chunks.retain(|c| c.key != key);
        while chunks.len() >= CACHED_CHUNKS {
            chunks.pop_front();
        }
        chunks.push_back(Cached {
            key,
            at: Instant::now(),
            bytes,
        });
    }
}

/// One download of an export in progress, counted until dropped (when its
/// response ends, or its client goes).
pub struct Slot {
    exports: Arc<Exports>,
    id: i64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut serving = self
            .exports
            .downloads
            .serving
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = serving.get_mut(&self.id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                serving.remove(&self.id);
            }
        }
    }
}

/// A slot for one more download of export `id`: 429 past
/// MOMENTS_EXPORT_DOWNLOADS at once. Per instance: what it bounds is this
/// instance's store reads and memory, and a client spread over instances
/// is held to its address's read budget on each.
pub fn admit(ctx: &Context, id: i64) -> AppResult<Slot> {
    let cap = ctx.settings.exports.downloads;
    let mut serving = ctx
        .exports
        .downloads
        .serving
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let n = serving.entry(id).or_insert(0);
    if *n >= cap {
        return Err(AppError::RateLimited {
            what: "downloads of this export at once",
            retry_after_secs: RETRY_AFTER_SECS,
        });
    }
    *n += 1;
    Ok(Slot {
        exports: ctx.exports.clone(),
        id,
    })
}

/// Chunk `n` of the archive, from the chunks kept or else the store.
pub async fn chunk(ctx: &Context, archive: &ReadyArchive, n: u64) -> AppResult<Bytes> {
    let key = (archive.id, archive.attempt, n as i64);
    if let Some(bytes) = ctx.exports.downloads.cached(key) {
        return Ok(bytes);
    }
    let bytes = Bytes::from(
        ctx.docs
            .export_chunk(archive.id, archive.attempt, n as i64)
            .await?
            .ok_or_else(|| {
                AppError::Internal(anyhow::anyhow!(
                    "export {} lacks chunk {n} of its archive",
                    archive.id
                ))
            })?,
    );
    ctx.exports.downloads.keep(key, bytes.clone());
    Ok(bytes)
}
