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
use futures_util::stream::BoxStream;

use super::StoreResult;

/// The one byte range a reader asked for (RFC 9110's `Range: bytes=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `a-b`: from byte `a` to byte `b`, both included.
    FromTo(u64, u64),
    /// `a-`: from byte `a` to the end.
    From(u64),
    /// `-n`: the last `n` bytes.
    Last(u64),
}

impl ByteRange {
    /// The first and last byte this range names of an object of `len`
    /// bytes; `None` when it names none of them (answered 416).
    pub fn within(self, len: u64) -> Option<(u64, u64)> {
        let end = len.checked_sub(1)?;
        let (first, last) = match self {
            ByteRange::FromTo(a, b) => (a, b.min(end)),
            ByteRange::From(a) => (a, end),
            ByteRange::Last(0) => return None,
            ByteRange::Last(n) => (len.saturating_sub(n), end),
        };
        (first <= last).then_some((first, last))
    }
}

/// An object being read: its length, and the bytes asked for as they
/// arrive, so that a large one never sits whole in memory.
pub struct Reading {
    /// The whole object's length.
    pub len: u64,
    /// The first and last byte `body` carries; `None` when the range asked
    /// for names no byte of the object (and `body` is empty).
    pub served: Option<(u64, u64)>,
    pub body: BoxStream<'static, StoreResult<Bytes>>,
}

#[async_trait]
pub trait MediaStore: Send + Sync {
    /// Stores `bytes` under `key`, whole: until it returns, a read of the
    /// key finds nothing.
    async fn put(&self, key: &str, bytes: Bytes) -> StoreResult<()>;

    /// The object at `key`, whole, in memory; `None` when there is none.
    /// For the service's own work on one object at a time (a snapshot's
    /// small copy, an export); serving readers uses `read`.
    async fn get(&self, key: &str) -> StoreResult<Option<Bytes>>;

    /// The object at `key` (or the `range` of it) as a stream; `None`
    /// when there is none.
    async fn read(&self, key: &str, range: Option<ByteRange>) -> StoreResult<Option<Reading>>;

    /// Removes the objects; keys already gone are not an error.
    async fn delete(&self, keys: &[String]) -> StoreResult<()>;
}

#[cfg(test)]
mod tests {
    use super::ByteRange::*;

    #[test]
    fn a_range_names_the_bytes_of_an_object_it_can() {
        let cases = [
            (FromTo(0, 9), 100, Some((0, 9))),
            (FromTo(90, 200), 100, Some((90, 99))),
            (FromTo(5, 3), 100, None),
            (FromTo(100, 120), 100, None),
            (From(10), 100, Some((10, 99))),
            (From(100), 100, None),
            (Last(10), 100, Some((90, 99))),
            (Last(500), 100, Some((0, 99))),
            (Last(0), 100, None),
            (From(0), 0, None),
        ];
        for (range, len, want) in cases {
            assert_eq!(range.within(len), want, "{range:?} of {len}");
        }
    }
}
