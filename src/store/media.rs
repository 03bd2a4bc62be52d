//! The media store: where the bytes of uploaded pictures live, apart from
//! the documents that describe them (`MediaDocs`). Objects are written
//! whole once under a fresh random key and never changed, so a reader sees
//! an object entirely or not at all, and any copy of one (a CDN's, a
//! browser's) stays right forever.
//!
//! Adapters: `objects` (files under `MOMENTS_DATA_DIR` on the embedded
//! default, or any S3-compatible store).

use async_trait::async_trait;
use bytes::Bytes;

use super::StoreResult;

#[async_trait]
pub trait MediaStore: Send + Sync {
    /// Stores `bytes` under `key`, whole: until it returns, a read of the
    /// key finds nothing.
    async fn put(&self, key: &str, bytes: Bytes) -> StoreResult<()>;

    /// The object at `key`, whole; `None` when there is none. Objects are
    /// small (an original is capped on its long side, a few MB at most),
    /// so a byte range is cut from the whole by the caller rather than
    /// asked of the store.
    async fn get(&self, key: &str) -> StoreResult<Option<Bytes>>;

    /// Removes the objects; keys already gone are not an error.
    async fn delete(&self, keys: &[String]) -> StoreResult<()>;
}
