//! Small objects held in memory in front of a media store: the grid's
//! previews, which every feed page names nine at a time. Serving one from
//! here skips the open, read and close of a file (or an S3 round trip),
//! which was most of what a preview cost above `/healthz` (BENCHMARKS.md,
//! "Photos").
//!
//! Objects never change under a key, so a held copy is right for as long as
//! the object exists. Deleting through this instance forgets the copy at
//! once; another instance's delete (two instances on one bucket) reaches
//! this one's memory within `HELD_FOR`, which is the bound the README
//! states.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::media::{ByteRange, MediaStore, Reading};
use super::StoreResult;

/// Objects larger than this are streamed from the store every time:
/// previews are a few dozen KB, originals megabytes.
pub const LARGEST_HELD: u64 = 256 * 1024;

/// How long a copy is served before the store is asked again, so that a
/// picture deleted by another instance stops being served here too.
pub const HELD_FOR: Duration = Duration::from_secs(60);

pub struct CachedMedia {
    inner: Arc<dyn MediaStore>,
    held: Mutex<Held>,
    /// Bytes of objects held at most.
    budget: usize,
}

/// The copies, and the order they came in: the oldest is let go first when
/// the budget is spent. A key can be in `arrivals` more than once (held,
/// forgotten, held again) or after it was forgotten; `let_go_oldest`
/// skips what no longer matches.
#[derive(Default)]
struct Held {
    copies: HashMap<String, Copy>,
    arrivals: VecDeque<(String, Instant)>,
    bytes: usize,
}

struct Copy {
    bytes: Bytes,
    since: Instant,
}

impl Held {
    fn fresh(&mut self, key: &str, now: Instant) -> Option<Bytes> {
        let copy = self.copies.get(key)?;
        if now.duration_since(copy.since) < HELD_FOR {
            return Some(copy.bytes.clone());
        }
        self.forget(key);
        None
    }

    fn forget(&mut self, key: &str) {
        if let Some(copy) = self.copies.remove(key) {
            self.bytes -= copy.bytes.len();
        }
    }

    fn hold(&mut self, key: &str, bytes: Bytes, now: Instant, budget: usize) {
        self.forget(key);
        self.bytes += bytes.len();
        self.copies
            .insert(key.to_owned(), Copy { bytes, since: now });
        self.arrivals.push_back((key.to_owned(), now));
        while self.bytes > budget {
            self.let_go_oldest();
        }
        // Arrivals of copies already forgotten (deleted, expired) are
        // dropped once they outnumber the copies, so the queue stays within
        // a small multiple of what is held.
        if self.arrivals.len() > 2 * self.copies.len() + 64 {
            let copies = &self.copies;
            self.arrivals
                .retain(|(key, since)| copies.get(key).is_some_and(|c| c.since == *since));
        }
    }

    fn let_go_oldest(&mut self) {
        let Some((key, since)) = self.arrivals.pop_front() else {
            return;
        };
        if self.copies.get(&key).is_some_and(|c| c.since == since) {
            self.forget(&key);
        }
    }
}

impl CachedMedia {
    /// `inner` with up to `budget` bytes of its small objects in memory.
    pub fn new(inner: Arc<dyn MediaStore>, budget: usize) -> Self {
        Self {
            inner,
            held: Mutex::new(Held::default()),
            budget,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic while holding the lock leaves the map consistent (every
        // step that changes it completes or does not start), so its poison
        // is not a reason to stop serving.
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bytes held now (tests and the benchmark).
    pub fn held_bytes(&self) -> usize {
        self.held().bytes
    }
}

/// A held copy served as the store would: a whole read is the range from
/// its first byte (so an empty object, like an empty file, names none).
fn serving(bytes: Bytes, range: Option<ByteRange>) -> Reading {
    let len = bytes.len() as u64;
    let served = range.unwrap_or(ByteRange::From(0)).within(len);
    let body = match served {
        Some((first, last)) => bytes.slice(first as usize..=last as usize),
        None => Bytes::new(),
    };
    Reading {
        len,
        served,
        body: futures_util::stream::once(async move { Ok(body) }).boxed(),
    }
}

#[async_trait]
impl MediaStore for CachedMedia {
    async fn put(&self, key: &str, bytes: Bytes) -> StoreResult<()> {
        self.inner.put(key, bytes).await
    }

    async fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        if let Some(bytes) = self.held().fresh(key, Instant::now()) {
            return Ok(Some(bytes));
        }
        self.inner.get(key).await
    }

    async fn read(&self, key: &str, range: Option<ByteRange>) -> StoreResult<Option<Reading>> {
        if let Some(bytes) = self.held().fresh(key, Instant::now()) {
            return Ok(Some(serving(bytes, range)));
        }
        let Some(reading) = self.inner.read(key, range).await? else {
            return Ok(None);
        };
        // Only a whole read of a small object is kept: a range names part
        // of it, and a large one is streamed so it never sits in memory.
        if range.is_some() || reading.len > LARGEST_HELD || self.budget == 0 {
            return Ok(Some(reading));
        }
        let mut whole = BytesMut::with_capacity(reading.len as usize);
        let mut body = reading.body;
        while let Some(chunk) = body.next().await {
            whole.extend_from_slice(&chunk?);
        }
        let whole = whole.freeze();
        if whole.len() as u64 == reading.len {
            self.held()
                .hold(key, whole.clone(), Instant::now(), self.budget);
        }
        Ok(Some(serving(whole, None)))
    }

    async fn delete(&self, keys: &[String]) -> StoreResult<()> {
        let result = self.inner.delete(keys).await;
        // Forgotten after the store's delete as well as whatever it
        // answered: a read between the two would otherwise hold the copy
        // again.
        let mut held = self.held();
        for key in keys {
            held.forget(key);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Bytes {
        Bytes::from(vec![7u8; n])
    }

    #[test]
    fn the_oldest_copy_goes_first_and_the_budget_holds() {
        let mut held = Held::default();
        let now = Instant::now();
        for key in ["a", "b", "c"] {
            held.hold(key, bytes(40), now, 100);
        }
        assert_eq!(held.bytes, 80, "a went to make room for c");
        assert!(held.fresh("a", now).is_none());
        assert!(held.fresh("b", now).is_some() && held.fresh("c", now).is_some());
    }

    #[test]
    fn a_copy_is_not_served_past_its_time() {
        let mut held = Held::default();
        let then = Instant::now();
        held.hold("a", bytes(10), then, 100);
        assert!(held.fresh("a", then + HELD_FOR / 2).is_some());
        assert!(held.fresh("a", then + HELD_FOR).is_none());
        assert_eq!(held.bytes, 0);
    }

    #[test]
    fn a_key_held_again_is_not_let_go_for_its_old_arrival() {
        let mut held = Held::default();
        let now = Instant::now();
        held.hold("a", bytes(40), now, 100);
        held.forget("a");
        let later = now + Duration::from_millis(1);
        held.hold("b", bytes(40), later, 100);
        held.hold("a", bytes(40), later + Duration::from_millis(1), 100);
        // Over budget: b is the oldest copy; a's first arrival is stale.
        held.hold("c", bytes(40), later + Duration::from_millis(2), 100);
        assert!(
            held.fresh("a", later).is_some(),
            "a's second arrival is not its first"
        );
        assert!(held.fresh("b", later).is_none());
        assert_eq!(held.bytes, 80);
    }

    #[test]
    fn arrivals_stay_within_a_multiple_of_the_copies() {
        let mut held = Held::default();
        let now = Instant::now();
        for i in 0..10_000 {
            let key = format!("k{i}");
            held.hold(&key, bytes(1), now, 1 << 20);
            held.forget(&key);
        }
        assert!(held.arrivals.len() <= 2 * held.copies.len() + 65);
    }

    #[test]
    fn a_range_of_a_held_copy_is_cut_from_it() {
        let whole = Bytes::from_static(b"0123456789");
        let reading = serving(whole.clone(), Some(ByteRange::FromTo(2, 4)));
        assert_eq!((reading.len, reading.served), (10, Some((2, 4))));
        let reading = serving(whole, Some(ByteRange::From(10)));
        assert_eq!(reading.served, None);
    }
}
