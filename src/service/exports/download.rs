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

/// Chunks kept of one export: a client's run of small ranges walks one
/// chunk at a time, and a second covers a range across two.
const CACHED_PER_EXPORT: usize = 2;

/// Chunks kept in all: with MOMENTS_EXPORT_CHUNK_BYTES at most 8 MiB,
/// 64 MiB at worst, 8 MiB at the default. Since one export keeps two at
/// most, a client walking its own archive's chunks pushes out only its
/// own; it takes downloads of five exports at once to push out another's.
const CACHED_CHUNKS: usize = 8;

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
        let of_export = chunks.iter().filter(|c| c.key.0 == key.0).count();
        if of_export >= CACHED_PER_EXPORT {
            if let Some(oldest) = chunks.iter().position(|c| c.key.0 == key.0) {
                chunks.remove(oldest);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A client walking every chunk of its own archive, a byte at a time,
    /// pushes out its own chunks and no one else's.
    #[test]
    fn one_exports_chunks_push_out_only_its_own() {
        let downloads = Downloads::default();
        let theirs = (1, 0, 0);
        downloads.keep(theirs, Bytes::from_static(b"theirs"));
        for n in 0..100 {
            downloads.keep((2, 0, n), Bytes::from_static(b"mine"));
        }
        assert_eq!(downloads.cached(theirs).as_deref(), Some(&b"theirs"[..]));
        let mine: Vec<_> = (0..100)
            .filter(|n| downloads.cached((2, 0, *n)).is_some())
            .collect();
        assert_eq!(mine, [98, 99], "its newest, as many as one export keeps");
        // Many exports share the room, oldest out first.
        for id in 10..10 + CACHED_CHUNKS as i64 {
            downloads.keep((id, 0, 0), Bytes::from_static(b"x"));
        }
        assert_eq!(downloads.cached(theirs), None);
        downloads.forget(10);
        assert_eq!(downloads.cached((10, 0, 0)), None);
        assert!(downloads.cached((11, 0, 0)).is_some());
    }
}
