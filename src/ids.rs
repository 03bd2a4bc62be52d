//! Time-ordered integer ids made in-process, without a store round trip.
//!
//! Layout above a fixed base of 10^15 (so every id has 16 digits and text
//! order equals number order, which the MongoDB-wire stand-in relies on):
//! 40 bits of milliseconds since 2025-01-01, 5 bits of instance, 7 bits of
//! sequence. The largest id is 10^15 + 2^52 - 1 < 2^53, exact in JavaScript.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// 2025-01-01T00:00:00Z in epoch milliseconds.
pub const EPOCH_MS: i64 = 1_735_689_600_000;
pub const ID_BASE: i64 = 1_000_000_000_000_000;
const INSTANCE_BITS: u32 = 5;
const SEQUENCE_BITS: u32 = 7;
const TIME_BITS: u32 = 40;
pub const MAX_INSTANCE: u16 = (1 << INSTANCE_BITS) - 1;

/// A day in milliseconds, the unit of every time in the documents.
pub const DAY_MS: i64 = 24 * HOUR_MS;
pub const HOUR_MS: i64 = 3600 * 1000;

/// Milliseconds since the Unix epoch, UTC.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub struct IdGenerator {
    /// Set once the instance id is configured or leased; a lost lease
    /// replaced by a new one changes it while running.
    instance: AtomicU64,
    /// `(ms << SEQUENCE_BITS) | seq` of the last id: a burst of more than 128
    /// ids in one millisecond borrows from the next millisecond instead of
    /// waiting, so ids stay unique and increasing.
    last: AtomicU64,
}

impl IdGenerator {
    pub fn new(instance: u16) -> Self {
        Self {
            instance: AtomicU64::new(u64::from(instance.min(MAX_INSTANCE))),
            last: AtomicU64::new(0),
        }
    }

    /// Uses `instance` (0 to `MAX_INSTANCE`, checked by the caller) from now on.
    pub fn set_instance(&self, instance: u16) {
        self.instance
            .store(u64::from(instance.min(MAX_INSTANCE)), Ordering::Release);
    }

    pub fn instance(&self) -> u16 {
        self.instance.load(Ordering::Acquire) as u16
    }

    pub fn next_id(&self) -> i64 {
        let now = (now_ms() - EPOCH_MS).max(0) as u64;
        let candidate = now << SEQUENCE_BITS;
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = candidate.max(last + 1);
            match self
                .last
                .compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return self.compose(next),
                Err(actual) => last = actual,
            }
        }
    }

    fn compose(&self, clock: u64) -> i64 {
        let ms = (clock >> SEQUENCE_BITS) & ((1 << TIME_BITS) - 1);
        let seq = clock & ((1 << SEQUENCE_BITS) - 1);
        let instance = self.instance.load(Ordering::Acquire);
        let raw = (ms << (INSTANCE_BITS + SEQUENCE_BITS)) | (instance << SEQUENCE_BITS) | seq;
        ID_BASE + raw as i64
    }
}

/// The epoch-millisecond time at which `id` was made.
pub fn timestamp_of(id: i64) -> i64 {
    let raw = (id - ID_BASE).max(0) as u64;
    (raw >> (INSTANCE_BITS + SEQUENCE_BITS)) as i64 + EPOCH_MS
}

/// The instance bits of `id`: which instance made it.
pub fn instance_of(id: i64) -> u16 {
    let raw = (id - ID_BASE).max(0) as u64;
    ((raw >> SEQUENCE_BITS) & u64::from(MAX_INSTANCE)) as u16
}

/// The smallest id that could have been made at `ms`: a keyset bound for times.
pub fn first_id_at(ms: i64) -> i64 {
    let raw = ((ms - EPOCH_MS).max(0) as u64) << (INSTANCE_BITS + SEQUENCE_BITS);
    ID_BASE + raw as i64
}

/// The process-wide generator: one process is one instance, so every app in
/// it (tests spawn many) shares one sequence and never repeats an id. The
/// service sets its instance bits at start-up (`MOMENTS_INSTANCE_ID`, or a
/// lease from the documents); until then, and in the command-line tools,
/// they are random.
pub fn global() -> &'static IdGenerator {
    static GEN: OnceLock<IdGenerator> = OnceLock::new();
    GEN.get_or_init(|| {
        let mut b = [0u8; 1];
        let _ = getrandom::getrandom(&mut b);
        IdGenerator::new(u16::from(b[0]) % (MAX_INSTANCE + 1))
    })
}

pub fn next_id() -> i64 {
    global().next_id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_sixteen_digits_below_2_pow_53_and_increasing() {
        let gen = IdGenerator::new(MAX_INSTANCE);
        let mut prev = 0;
        for _ in 0..10_000 {
            let id = gen.next_id();
            assert!(id > prev, "{id} after {prev}");
            assert_eq!(id.to_string().len(), 16);
            assert!(id < (1i64 << 53));
            prev = id;
        }
    }

    #[test]
    fn the_largest_possible_id_stays_below_2_pow_53() {
        let gen = IdGenerator::new(MAX_INSTANCE);
        let max = gen.compose(u64::MAX >> (64 - TIME_BITS - SEQUENCE_BITS));
        assert!(max < (1i64 << 53));
        assert_eq!(max.to_string().len(), 16);
    }

    #[test]
    fn timestamp_round_trips_to_the_millisecond() {
        let before = now_ms();
        let id = IdGenerator::new(3).next_id();
        let after = now_ms();
        let ts = timestamp_of(id);
        assert!(
            ts >= before && ts <= after + 1,
            "{before} <= {ts} <= {after}"
        );
        assert!(first_id_at(ts) <= id);
        assert!(first_id_at(ts + 2) > id);
    }

    #[test]
    fn instance_of_reads_back_the_generators_instance() {
        for instance in [0, 1, 17, MAX_INSTANCE] {
            let gen = IdGenerator::new(instance);
            // Past 128 in one millisecond the sequence borrows from the
            // next: the instance bits must stay put.
            for _ in 0..300 {
                assert_eq!(instance_of(gen.next_id()), instance);
            }
        }
    }

    #[test]
    fn ids_from_later_milliseconds_are_larger_across_instances() {
        let a = IdGenerator::new(31);
        let b = IdGenerator::new(0);
        let first = a.next_id();
        std::thread::sleep(std::time::Duration::from_millis(3));
        assert!(b.next_id() > first);
    }
}
