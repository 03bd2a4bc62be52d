//! `LiveStore` in process: the same sets, blobs, generation guards and
//! rate-limit counters as the Redis adapter, in memory. (Sessions are
//! documents; what is cached of them here goes with the rest.)
//!
//! Memory is bounded: past `max_entries` cached values, or past `max_bytes`
//! as they are counted here (a set's members at a fixed cost each, a blob by
//! its length, each value's own overhead), the least recently used tenth is
//! evicted (timelines among them), so what is hot stays.
//! Generations that are dropped restart above every value handed out, so a
//! rebuild that began before can still never write after it.

use std::collections::{BTreeSet, HashMap};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use async_trait::async_trait;

use crate::hashing::IdMap;
use crate::ids::now_ms;
use crate::store::{
    BlobKey, Changes, LimitCheck, LimitCount, LiveAnswer, LiveChange, LiveFill, LiveKey, LiveRead,
    LiveStore, Owner, SetKey, SetView, SharedTable, StoreResult,
};

const HOME_TTL_MS: i64 = 24 * 3600 * 1000;
/// How stale a timeline's noted last use may be: its expiry is a day late
/// by at most this much.
const HOME_USE_NOTED_EVERY_MS: i64 = 60 * 1000;
/// Timelines pushed to per hold of the write lock: some 100 µs of it.
const PUSH_SLICE: usize = 256;
/// Rate-limit counters kept per table (about 100 bytes each), as
/// `MOMENTS_LIVE_MAX_COUNTERS` sets it.
pub const DEFAULT_COUNTERS_PER_TABLE: usize = 100_000;
/// What one cached value costs beyond its contents: its key, its map slot
/// and its use tick, with the allocator's rounding.
const VALUE_BYTES: usize = 96;
/// What one member of a sorted set costs: its score map slot and its place
/// in the ordered tree, about 20 and 28 bytes with their overheads.
const MEMBER_BYTES: usize = 48;

fn blob_bytes(text: &str) -> usize {
    VALUE_BYTES + text.len()
}

fn set_bytes(z: &ZSet) -> usize {
    VALUE_BYTES + z.scores.len() * MEMBER_BYTES
}

/// The rate-limit counters of one budget and kind of subject (reads per
/// account, reads per address, sign-ins per address, failed sign-ins per
/// account, ...), bounded on their own, so that keys a client controls (its
/// address) crowd out no other table.
///
/// A full table makes room by forgetting the counter whose window started
/// first, which forgives that subject's recent requests and nothing more.
/// In a table of lockouts (failed sign-ins per account) it forgets the
/// lowest count instead, so that filling the table cannot wipe out a
/// guesser's own count just short of the lockout and buy a fresh round of
/// guesses; a counter at its `lockout_at` is never forgotten, and only when
/// every counter of the table is such a lockout is a new counter refused.
struct CounterTable {
    /// key → (count, window end in epoch ms).
    windows: HashMap<String, (i64, i64)>,
    /// (window end, key) in the order windows opened; entries whose window
    /// has since changed or gone are skipped when met.
    opened: std::collections::VecDeque<(i64, String)>,
    max: usize,
    /// When the expired counters were last swept out.
    swept_at: i64,
    /// Until when a table found full of lockouts refuses new counters
    /// without looking again (a second), so a flood does not make every
    /// request walk it.
    locked_until: i64,
}

impl CounterTable {
    fn new(max: usize) -> Self {
        Self {
            windows: HashMap::new(),
            opened: std::collections::VecDeque::new(),
            max: max.max(1),
            swept_at: 0,
            locked_until: 0,
        }
    }

    fn check(&mut self, c: &LimitCheck, now: i64) -> LimitCount {
        let open = |e: &(i64, i64)| e.1 > now;
        if c.cost < 0 {
            // A refund never makes a counter nor takes one below zero; one
            // back at zero is gone (as good as absent).
            let Some(e) = self.windows.get_mut(&c.key).filter(|e| open(e)) else {
                return LimitCount::default();
            };
            e.0 = (e.0 + c.cost).max(0);
            let left = LimitCount {
                count: e.0,
                resets_in_ms: (e.1 - now).max(0) as u64,
            };
            if e.0 == 0 {
                self.windows.remove(&c.key);
            }
            return left;
        }
        if !self.windows.contains_key(&c.key)
            && self.windows.len() >= self.max
            && !self.make_room(now, c.lockout_at)
        {
            return LimitCount {
                count: i64::MAX,
                resets_in_ms: 1000,
            };
        }
        let end = now + c.window_ms as i64;
        let entry = self.windows.entry(c.key.clone()).or_insert((0, 0));
        if !open(entry) {
            *entry = (0, end);
            self.opened.push_back((end, c.key.clone()));
        }
        entry.0 += c.cost;
        let counted = LimitCount {
            count: entry.0,
            resets_in_ms: (entry.1 - now).max(0) as u64,
        };
        if self.opened.len() > 2 * self.max {
            // Skipped entries pile up when windows restart; drop them so
            // the queue stays as bounded as the table.
            let windows = &self.windows;
            self.opened
                .retain(|(end, key)| windows.get(key).is_some_and(|e| e.1 == *end));
        }
        counted
    }

    /// Frees one place in a full table; false when every counter in it is
    /// a lockout. Expired counters go first (swept at most once a second,
    /// so a flood does not make every request walk the table).
    fn make_room(&mut self, now: i64, lockout_at: Option<i64>) -> bool {
        if now < self.locked_until {
            return false;
        }
        if now - self.swept_at >= 1000 {
            self.swept_at = now;
            self.windows.retain(|_, e| e.1 > now);
            if self.windows.len() < self.max {
                return true;
            }
        }
        if let Some(at) = lockout_at {
            // A walk of the table, paid only when a full lockout table
            // takes a new subject: a sign-in for an existing name not seen
            // in the window, within its address's sign-in budget.
            let lowest = self
                .windows
                .iter()
                .filter(|(_, e)| e.0 < at || e.1 <= now)
                .min_by_key(|(_, e)| (e.1 > now, e.0))
                .map(|(k, _)| k.clone());
            if let Some(key) = lowest {
                self.windows.remove(&key);
                return true;
            }
            self.locked_until = now + 1000;
            return false;
        }
        // Each live counter is met at most once.
        for _ in 0..self.opened.len() {
            let Some((end, key)) = self.opened.pop_front() else {
                break;
            };
            let Some(&(_, current_end)) = self.windows.get(&key) else {
                continue;
            };
            if current_end != end {
                continue;
            }
            self.windows.remove(&key);
            return true;
        }
        self.locked_until = now + 1000;
        false
    }
}

/// Every budget's counters, each budget and kind of subject in a table of its own.
struct Counters {
    tables: HashMap<String, CounterTable>,
    max_per_table: usize,
}

impl Counters {
    fn new(max_per_table: usize) -> Self {
        Self {
            tables: HashMap::new(),
            max_per_table,
        }
    }

    fn check(&mut self, c: &LimitCheck, now: i64) -> LimitCount {
        // Keys are `KIND:SUBJECT_TYPE:SUBJECT` (`service::rate_limits`): one
        // table per kind and subject type, so that a flood of fresh addresses
        // cannot push out the per-account counters of the same budget. Both
        // are fixed sets, so the tables are too.
        let kind = match c.key.match_indices(':').nth(1) {
            Some((i, _)) => &c.key[..i],
            None => c.key.as_str(),
        };
        let max = self.max_per_table;
        self.tables
            .entry(kind.to_string())
            .or_insert_with(|| CounterTable::new(max))
            .check(c, now)
    }
}

#[derive(Default, Clone)]
struct ZSet {
    scores: IdMap<i64, i64>,
    /// (score, member), for highest-first reads.
    order: BTreeSet<(i64, i64)>,
}

impl ZSet {
    fn from_members(members: &[(i64, i64)]) -> Self {
        let mut z = ZSet::default();
        for (m, s) in members {
            z.add(*m, *s);
        }
        z
    }
    fn add(&mut self, member: i64, score: i64) {
        if let Some(old) = self.scores.insert(member, score) {
            self.order.remove(&(old, member));
        }
        self.order.insert((score, member));
    }
    fn remove(&mut self, member: i64) {
        if let Some(old) = self.scores.remove(&member) {
            self.order.remove(&(old, member));
        }
    }
    /// Adds, or raises the score of, `member`; never lowers it.
    fn add_newer(&mut self, member: i64, score: i64) {
        if self.scores.get(&member).is_none_or(|s| *s < score) {
            self.add(member, score);
        }
    }
    /// Removes `member` if its score is at most `score`.
    fn remove_upto(&mut self, member: i64, score: i64) {
        if self.scores.get(&member).is_some_and(|s| *s <= score) {
            self.remove(member);
        }
    }
}

/// How long a last-writer-wins set remembers a removal, and an add made
/// while it was absent: longer than any rebuild takes to read.
const LWW_MEMORY_MS: i64 = 600_000;

/// A last-writer-wins set's recent changes: member → (id, forgotten at).
#[derive(Default)]
struct Recent(HashMap<i64, (i64, i64)>);

impl Recent {
    fn note(&mut self, member: i64, id: i64, now: i64) {
        if self.0.len() >= 1024 {
            self.0.retain(|_, (_, until)| *until > now);
        }
        let e = self.0.entry(member).or_insert((id, 0));
        e.0 = e.0.max(id);
        e.1 = now + LWW_MEMORY_MS;
    }
    fn live(&self, now: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.0
            .iter()
            .filter(move |(_, (_, until))| *until > now)
            .map(|(m, (id, _))| (*m, *id))
    }
    fn get(&self, member: i64, now: i64) -> Option<i64> {
        self.0
            .get(&member)
            .filter(|(_, until)| *until > now)
            .map(|(id, _)| *id)
    }
}

/// A cached value and when it was last used (a tick of `State::clock`),
/// which eviction goes by. Reads note use under the shared lock.
struct Cached<V> {
    value: V,
    used: AtomicU64,
}

impl<V> Cached<V> {
    fn new(value: V, tick: u64) -> Self {
        Self {
            value,
            used: AtomicU64::new(tick),
        }
    }
}

impl<V> Deref for Cached<V> {
    type Target = V;
    fn deref(&self) -> &V {
        &self.value
    }
}

impl<V> DerefMut for Cached<V> {
    fn deref_mut(&mut self) -> &mut V {
        &mut self.value
    }
}

#[derive(Default)]
struct State {
    blobs: IdMap<BlobKey, Cached<String>>,
    sets: IdMap<SetKey, Cached<ZSet>>,
    /// Ticks for `Cached::used`.
    clock: AtomicU64,
    gens: IdMap<Owner, u64>,
    /// The generation of an owner not in `gens`.
    gen_floor: u64,
    /// When each home timeline was last read or built: unread for a day, it
    /// is dropped and rebuilt on its owner's return, as in Redis.
    home_used: IdMap<i64, i64>,
    /// The same, ordered by time, so expiry looks only at what expired.
    home_order: BTreeSet<(i64, i64)>,
    /// What `blobs` and `sets` take, as `blob_bytes` and `set_bytes` count.
    bytes: usize,
    /// Adds to absent last-writer-wins sets, for their rebuild to merge.
    lww_adds: HashMap<SetKey, Recent>,
    /// Removals from last-writer-wins sets.
    lww_gone: HashMap<SetKey, Recent>,
}

impl State {
    fn gen(&self, owner: Owner) -> u64 {
        self.gens.get(&owner).copied().unwrap_or(self.gen_floor)
    }
    fn bump(&mut self, owner: Owner) {
        let next = self.gen(owner) + 1;
        self.gens.insert(owner, next);
    }
    fn entries(&self) -> usize {
        self.blobs.len() + self.sets.len() + self.lww_adds.len() + self.lww_gone.len()
    }
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }
    /// The blob, marked used at `tick`: one tick per read, not per key, since
    /// the clock is one cache line that every worker's reads contend on.
    fn blob(&self, key: &BlobKey, tick: u64) -> Option<&String> {
        self.blobs.get(key).map(|c| {
            c.used.store(tick, Ordering::Relaxed);
            &c.value
        })
    }
    fn set(&self, key: &SetKey, tick: u64) -> Option<&ZSet> {
        self.sets.get(key).map(|c| {
            c.used.store(tick, Ordering::Relaxed);
            &c.value
        })
    }
    fn put_blob(&mut self, key: BlobKey, text: String) {
        let tick = self.tick();
        self.bytes += blob_bytes(&text);
        if let Some(old) = self.blobs.insert(key, Cached::new(text, tick)) {
            self.bytes -= blob_bytes(&old);
        }
    }
    fn put_set(&mut self, key: SetKey, set: ZSet) {
        let tick = self.tick();
        self.bytes += set_bytes(&set);
        if let Some(old) = self.sets.insert(key, Cached::new(set, tick)) {
            self.bytes -= set_bytes(&old);
        }
    }
    /// Changes a cached set in place, if it is cached, keeping `bytes` true.
    fn change_set(&mut self, key: &SetKey, change: impl FnOnce(&mut ZSet)) {
        if let Some(z) = self.sets.get_mut(key) {
            let before = set_bytes(z);
            change(z);
            self.bytes = self.bytes + set_bytes(z) - before;
        }
    }
    fn remove_blob(&mut self, key: &BlobKey) {
        if let Some(old) = self.blobs.remove(key) {
            self.bytes -= blob_bytes(&old);
        }
    }
    fn remove_set(&mut self, key: &SetKey) {
        if let Some(old) = self.sets.remove(key) {
            self.bytes -= set_bytes(&old);
        }
        if let SetKey::Home(u) = key {
            if let Some(used) = self.home_used.remove(u) {
                self.home_order.remove(&(used, *u));
            }
        }
    }
    fn home_used_at(&mut self, uid: i64, now: i64) {
        if let Some(old) = self.home_used.insert(uid, now) {
            self.home_order.remove(&(old, uid));
        }
        self.home_order.insert((now, uid));
    }

    /// Makes room for `incoming` more values under `max` values and
    /// `max_bytes`: evicts the least recently used, a tenth of each bound at a
    /// time, so the scan this takes (linear, under the write lock) is paid
    /// once per many fills. (The bytes a batch brings are known only after
    /// it: they may overshoot by one.)
    fn make_room(&mut self, incoming: usize, max: usize, max_bytes: usize) {
        if self.gens.len() > max {
            // Too many owners remembered: forget them all above every
            // generation handed out (sets and blobs stay).
            self.gen_floor = self.gens.values().copied().max().unwrap_or(self.gen_floor) + 1;
            self.gens.clear();
        }
        let over = (self.entries() + incoming).saturating_sub(max);
        if over == 0 && self.bytes <= max_bytes {
            return;
        }
        let mut evict = if over == 0 { 0 } else { over + max / 10 };
        if self.bytes > max_bytes {
            // As many values as the bytes over a tenth below the bound make
            // of all values, on average: one linear pass, as for the count.
            // Evicted values smaller than the average leave it over, and
            // the next batch makes room again.
            let goal = max_bytes - max_bytes / 10;
            let values = self.blobs.len() + self.sets.len();
            let share = ((self.bytes - goal) as u128 * values as u128).div_ceil(self.bytes as u128);
            evict = evict.max(share as usize);
        }
        let mut by_use: Vec<(u64, LiveKey)> = self
            .blobs
            .iter()
            .map(|(k, c)| (c.used.load(Ordering::Relaxed), LiveKey::Blob(*k)))
            .chain(
                self.sets
                    .iter()
                    .map(|(k, c)| (c.used.load(Ordering::Relaxed), LiveKey::Set(*k))),
            )
            .collect();
        if evict < by_use.len() {
            by_use.select_nth_unstable_by_key(evict, |(used, _)| *used);
            by_use.truncate(evict);
        }
        for (_, key) in by_use {
            match key {
                LiveKey::Blob(k) => self.remove_blob(&k),
                LiveKey::Set(k) => self.remove_set(&k),
            }
        }
    }

    fn drop_cache(&mut self) {
        self.gen_floor = self.gens.values().copied().max().unwrap_or(self.gen_floor) + 1;
        self.gens.clear();
        self.blobs.clear();
        self.sets.clear();
        self.bytes = 0;
        self.home_used.clear();
        self.home_order.clear();
        // Recent removals outlive the drop: a rebuild that read the
        // documents before it may still merge, and must leave them out.
        let now = now_ms();
        self.lww_adds.clear();
        self.lww_gone.retain(|_, r| {
            r.0.retain(|_, (_, until)| *until > now);
            !r.0.is_empty()
        });
    }

    fn lww_add(&mut self, key: SetKey, member: i64, id: i64, now: i64) {
        if self
            .lww_gone
            .get(&key)
            .and_then(|g| g.get(member, now))
            .is_some_and(|gone| gone >= id)
        {
            return;
        }
        if self.sets.contains_key(&key) {
            self.change_set(&key, |z| z.add_newer(member, id));
        } else {
            self.lww_adds.entry(key).or_default().note(member, id, now);
        }
    }

    fn lww_remove(&mut self, key: SetKey, member: i64, id: i64, now: i64) {
        self.change_set(&key, |z| z.remove_upto(member, id));
        if let Some(adds) = self.lww_adds.get_mut(&key) {
            if adds.get(member, now).is_some_and(|a| a <= id) {
                adds.0.remove(&member);
            }
        }
        self.lww_gone.entry(key).or_default().note(member, id, now);
    }

    /// A rebuilt last-writer-wins set merged with what changed meanwhile.
    fn lww_fill(&mut self, key: SetKey, members: &[(i64, i64)], now: i64) {
        let adds: Vec<(i64, i64)> = self
            .lww_adds
            .remove(&key)
            .map(|a| a.live(now).collect())
            .unwrap_or_default();
        let gone: Vec<(i64, i64)> = self
            .lww_gone
            .get(&key)
            .map(|g| g.live(now).collect())
            .unwrap_or_default();
        if !self.sets.contains_key(&key) {
            self.put_set(key, ZSet::default());
        }
        self.change_set(&key, |z| {
            for (m, id) in members.iter().chain(&adds) {
                z.add_newer(*m, *id);
            }
            for (m, id) in gone {
                z.remove_upto(m, id);
            }
        });
    }

    /// Drops home timelines unread for longer than a day: the oldest first,
    /// stopping at the first one still in use.
    fn expire_homes(&mut self, now: i64) {
        while let Some(&(used, uid)) = self.home_order.first() {
            if now - used <= HOME_TTL_MS {
                break;
            }
            self.remove_set(&SetKey::Home(uid));
        }
    }
}

/// Notes of pulled authors' posts, oldest first: (number, (author, post)).
type PulledLog = std::collections::VecDeque<(u64, (i64, i64))>;

pub struct MemoryLive {
    state: RwLock<State>,
    max_entries: usize,
    max_bytes: usize,
    counters: Mutex<Counters>,
    table_versions: [AtomicU64; 2],
    /// (newest sequence number, the newest notes as (number, author)).
    pulled_posted: Mutex<(u64, PulledLog)>,
    streams: super::event_log::MemoryStreams,
}

impl MemoryLive {
    pub fn new(max_entries: usize) -> Self {
        Self::with_bounds(max_entries, usize::MAX, DEFAULT_COUNTERS_PER_TABLE)
    }

    /// `new`, keeping at most `max_bytes` of cached values (as counted
    /// here) and `counters_per_table` rate-limit counters in each table (one
    /// per budget and kind of subject).
    pub fn with_bounds(max_entries: usize, max_bytes: usize, counters_per_table: usize) -> Self {
        Self {
            // Generations start at 1: 0 means "none" to readers
            // (`LiveAnswer::gens`).
            state: RwLock::new(State {
                gen_floor: 1,
                ..State::default()
            }),
            max_entries: max_entries.max(1000),
            max_bytes: max_bytes.max(1 << 20),
            counters: Mutex::new(Counters::new(counters_per_table)),
            table_versions: [AtomicU64::new(1), AtomicU64::new(1)],
            pulled_posted: Mutex::default(),
            streams: Default::default(),
        }
    }

    fn state_read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn state_write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }
}

// Live updates' part is kept beside the rest (`event_log`).
crate::delegate_stream_store!(MemoryLive, streams);

#[async_trait]
impl LiveStore for MemoryLive {
    async fn ping(&self) -> StoreResult<()> {
        Ok(())
    }

    async fn read(&self, read: &LiveRead) -> StoreResult<LiveAnswer> {
        let homes: Vec<i64> = read
            .sets
            .iter()
            .filter_map(|r| match r.key {
                SetKey::Home(u) => Some(u),
                _ => None,
            })
            .collect();
        if !homes.is_empty() {
            // A use is noted at most once a minute per timeline (the TTL is a
            // day): most reads then need only the shared lock, not the one
            // every other read and push waits on.
            let now = now_ms();
            let due = |state: &State, u: &i64| {
                state.sets.contains_key(&SetKey::Home(*u))
                    && state
                        .home_used
                        .get(u)
                        .is_none_or(|at| now - at >= HOME_USE_NOTED_EVERY_MS)
            };
            let needs_write = {
                let state = self.state_read();
                let expired = state
                    .home_order
                    .first()
                    .is_some_and(|(used, _)| now - used > HOME_TTL_MS);
                expired || homes.iter().any(|u| due(&state, u))
            };
            if needs_write {
                let mut state = self.state_write();
                state.expire_homes(now);
                for u in homes {
                    if due(&state, &u) {
                        state.home_used_at(u, now);
                    }
                }
            }
        }
        let limits = if read.limits.is_empty() {
            Vec::new()
        } else {
            let now = now_ms();
            let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
            read.limits.iter().map(|c| counters.check(c, now)).collect()
        };
        let state = self.state_read();
        let tick = state.tick();
        Ok(LiveAnswer {
            limits,
            blobs: read
                .blobs
                .iter()
                .map(|b| state.blob(b, tick).cloned())
                .collect(),
            sets: read
                .sets
                .iter()
                .map(|r| {
                    state.set(&r.key, tick).map(|z| SetView {
                        count: z.scores.len() as u64,
                        top: z
                            .order
                            .range(..(r.below.unwrap_or(i64::MAX), i64::MIN))
                            .rev()
                            .take(r.top)
                            .map(|(s, m)| (*m, *s))
                            .collect(),
                        probe_score: r.probe.and_then(|p| z.scores.get(&p).copied()),
                    })
                })
                .collect(),
            gens: read.gens.iter().map(|o| state.gen(*o)).collect(),
        })
    }

    async fn fill(&self, fill: &LiveFill) -> StoreResult<()> {
        let mut state = self.state_write();
        state.make_room(
            fill.blobs.len() + fill.sets.len(),
            self.max_entries,
            self.max_bytes,
        );
        for (key, text, guard) in &fill.blobs {
            if guard.is_none_or(|g| g == state.gen(key.owner())) {
                state.put_blob(*key, text.clone());
            }
        }
        let now = now_ms();
        for (key, members, guard) in &fill.sets {
            if key.is_last_writer_wins() {
                state.lww_fill(*key, members, now);
            } else if *guard == state.gen(key.owner()) {
                state.put_set(*key, ZSet::from_members(members));
                if let SetKey::Home(u) = key {
                    state.home_used_at(*u, now);
                }
            }
        }
        Ok(())
    }

    async fn apply(&self, changes: &[Changes]) -> StoreResult<()> {
        let mut state = self.state_write();
        state.make_room(changes.len(), self.max_entries, self.max_bytes);
        let now = now_ms();
        for batch in changes {
            let in_order = batch.expected_gen == Some(state.gen(batch.owner));
            state.bump(batch.owner);
            for change in &batch.changes {
                match change {
                    LiveChange::SetAdd(k, ..) | LiveChange::SetRemove(k, _) if !in_order => {
                        state.remove_set(k);
                    }
                    LiveChange::SetAdd(k, member, score) => {
                        state.change_set(k, |z| z.add(*member, *score));
                    }
                    LiveChange::SetRemove(k, member) => {
                        state.change_set(k, |z| z.remove(*member));
                    }
                    LiveChange::LwwAdd(k, member, id) => state.lww_add(*k, *member, *id, now),
                    LiveChange::LwwRemove(k, member, id) => state.lww_remove(*k, *member, *id, now),
                    LiveChange::PutBlob(k, text) => {
                        state.put_blob(*k, text.clone());
                    }
                    LiveChange::Drop(LiveKey::Blob(k)) => state.remove_blob(k),
                    LiveChange::Drop(LiveKey::Set(k)) => {
                        state.remove_set(k);
                    }
                    LiveChange::Begin(k) => {
                        if !state.sets.contains_key(k) {
                            state.lww_fill(*k, &[], now);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()> {
        self.apply(&[Changes {
            owner,
            expected_gen: None,
            changes: keys.iter().map(|k| LiveChange::Drop(*k)).collect(),
        }])
        .await
    }

    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()> {
        self.state_write().expire_homes(now_ms());
        // A slice of timelines per hold of the write lock, so that reads
        // wait behind one slice, never behind a widely followed author's whole
        // fan-out (pushes commute: nothing needs them in one step).
        for slice in uids.chunks(PUSH_SLICE) {
            {
                let mut state = self.state_write();
                for uid in slice {
                    state.change_set(&SetKey::Home(*uid), |home| {
                        home.add(post_id, post_id);
                        while home.scores.len() > max {
                            match home.order.iter().next().copied() {
                                Some((_, oldest)) => home.remove(oldest),
                                None => break,
                            }
                        }
                    });
                }
            }
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    async fn clear_derived(&self) -> StoreResult<usize> {
        let mut state = self.state_write();
        let n = state.entries();
        state.drop_cache();
        // The streams' logs are derived too, as they are on Redis.
        Ok(n + self.streams.clear_logs())
    }

    async fn table_version(&self, table: SharedTable) -> StoreResult<u64> {
        Ok(self.table_versions[table.index()].load(Ordering::Acquire))
    }

    async fn bump_table_version(&self, table: SharedTable) -> StoreResult<u64> {
        Ok(self.table_versions[table.index()].fetch_add(1, Ordering::AcqRel) + 1)
    }

    async fn note_pulled_author_posted(&self, author: i64, post: i64) -> StoreResult<()> {
        if let Ok(mut p) = self.pulled_posted.lock() {
            p.0 += 1;
            let seq = p.0;
            p.1.push_back((seq, (author, post)));
            while p.1.len() > crate::store::PULLED_AUTHOR_HISTORY {
                p.1.pop_front();
            }
        }
        Ok(())
    }

    async fn pulled_authors_posted_after(
        &self,
        seq: u64,
    ) -> StoreResult<crate::store::PulledNotes> {
        let p = self
            .pulled_posted
            .lock()
            .map_err(|_| crate::store::StoreError::Other(anyhow::anyhow!("poisoned")))?;
        Ok((p.0, pulled_after(p.0, &p.1, seq)))
    }
}

/// The authors of `notes` (oldest first) numbered above `seq`, if the notes
/// reach back that far and `newest` has not gone below `seq`.
pub(crate) fn pulled_after<T: Copy>(
    newest: u64,
    notes: &std::collections::VecDeque<(u64, T)>,
    seq: u64,
) -> Option<Vec<T>> {
    if newest < seq {
        return None;
    }
    let reaches = seq == newest || notes.front().is_some_and(|(first, _)| *first <= seq + 1);
    reaches.then(|| {
        notes
            .iter()
            .filter(|(n, _)| *n > seq)
            .map(|(_, a)| *a)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SetRead;

    #[test]
    fn pulled_notes_are_trusted_only_while_they_reach_back() {
        let notes: std::collections::VecDeque<(u64, i64)> =
            [(5, 10), (6, 11), (7, 10)].into_iter().collect();
        assert_eq!(pulled_after(7, &notes, 4), Some(vec![10, 11, 10]));
        assert_eq!(pulled_after(7, &notes, 6), Some(vec![10]));
        assert_eq!(pulled_after(7, &notes, 7), Some(vec![]));
        // Note 4 was trimmed: what came after 3 is not known whole.
        assert_eq!(pulled_after(7, &notes, 3), None);
        // The sequence went backwards: the store was flushed.
        assert_eq!(pulled_after(7, &notes, 9), None);
        assert_eq!(pulled_after::<i64>(0, &Default::default(), 0), Some(vec![]));
    }

    /// A generation-guarded set (likers are last-writer-wins instead).
    fn likers(p: i64) -> SetRead {
        SetRead {
            key: SetKey::Following(p),
            top: 2,
            probe: Some(7),
            below: None,
        }
    }

    #[tokio::test]
    async fn last_writer_wins_sets_merge_and_take_any_order() {
        crate::store::live_checks::last_writer_wins_sets(&MemoryLive::new(10_000), 1).await;
    }

    #[tokio::test]
    async fn event_logs_tickets_and_registers_behave_as_on_redis() {
        let live = MemoryLive::new(10_000);
        crate::store::live_checks::event_logs(&live, 7).await;
        crate::store::live_checks::stream_tickets_and_registers(&live, 8).await;
    }

    #[tokio::test]
    async fn a_fill_guarded_by_an_old_generation_is_skipped() {
        let live = MemoryLive::new(10_000);
        let read = LiveRead {
            sets: vec![likers(1)],
            gens: vec![Owner::User(1)],
            ..Default::default()
        };
        let before = live.read(&read).await.unwrap();
        assert_eq!(before.sets, vec![None]);
        // A write lands between the rebuild's read and its fill.
        live.apply(&[Changes {
            owner: Owner::User(1),
            expected_gen: Some(before.gens[0]),
            changes: vec![LiveChange::SetAdd(SetKey::Following(1), 7, 9)],
        }])
        .await
        .unwrap();
        let stale = LiveFill {
            sets: vec![(SetKey::Following(1), vec![(5, 3)], before.gens[0])],
            ..Default::default()
        };
        live.fill(&stale).await.unwrap();
        assert_eq!(live.read(&read).await.unwrap().sets, vec![None]);
        // A fill with the current generation lands, and later adds apply to it.
        let fresh = live.read(&read).await.unwrap();
        let fill = LiveFill {
            sets: vec![(SetKey::Following(1), vec![(5, 3), (7, 9)], fresh.gens[0])],
            ..Default::default()
        };
        live.fill(&fill).await.unwrap();
        live.apply(&[Changes {
            owner: Owner::User(1),
            expected_gen: Some(fresh.gens[0]),
            changes: vec![LiveChange::SetAdd(SetKey::Following(1), 8, 12)],
        }])
        .await
        .unwrap();
        let view = live.read(&read).await.unwrap().sets[0].clone().unwrap();
        assert_eq!(view.count, 3);
        assert_eq!(view.top, vec![(8, 12), (7, 9)]);
        assert_eq!(view.probe_score, Some(9));
    }

    #[tokio::test]
    async fn a_set_change_after_another_write_drops_the_set_instead() {
        let live = MemoryLive::new(10_000);
        let owner = Owner::User(1);
        let read = LiveRead {
            sets: vec![likers(1)],
            gens: vec![owner],
            ..Default::default()
        };
        let g = live.read(&read).await.unwrap().gens[0];
        let fill = LiveFill {
            sets: vec![(SetKey::Following(1), vec![(7, 9)], g)],
            ..Default::default()
        };
        live.fill(&fill).await.unwrap();
        // Two writers both read generation g; the unlike lands first.
        let unlike = Changes {
            owner,
            expected_gen: Some(g),
            changes: vec![LiveChange::SetRemove(SetKey::Following(1), 7)],
        };
        let late_like = Changes {
            owner,
            expected_gen: Some(g),
            changes: vec![LiveChange::SetAdd(SetKey::Following(1), 7, 11)],
        };
        live.apply(&[unlike]).await.unwrap();
        live.apply(&[late_like]).await.unwrap();
        // Which came last in the documents is unknown here: rebuild.
        assert_eq!(live.read(&read).await.unwrap().sets, vec![None]);
    }

    #[tokio::test]
    async fn cached_values_stay_under_the_byte_bound_and_the_recent_stay() {
        // 1 MiB: about 20,000 members. Sets of 1,000 members (48 KB each)
        // past it push the least recently used out, by bytes, not count.
        let live = MemoryLive::with_bounds(1_000_000, 1 << 20, 10);
        let members: Vec<(i64, i64)> = (0..1000).map(|m| (m, m)).collect();
        let key = |u: i64| SetKey::Following(u);
        let read_of = |u: i64| LiveRead {
            sets: vec![SetRead {
                key: key(u),
                top: 1,
                probe: None,
                below: None,
            }],
            gens: vec![Owner::User(u)],
            ..Default::default()
        };
        for u in 0..100 {
            let g = live.read(&read_of(u)).await.unwrap().gens[0];
            live.fill(&LiveFill {
                sets: vec![(key(u), members.clone(), g)],
                ..Default::default()
            })
            .await
            .unwrap();
            // The first set is read after every fill: it stays hot.
            assert!(
                live.read(&read_of(0)).await.unwrap().sets[0].is_some(),
                "{u}"
            );
            // Grown in place, past the bound too.
            let g = live.read(&read_of(u)).await.unwrap().gens[0];
            live.apply(&[Changes {
                owner: Owner::User(u),
                expected_gen: Some(g),
                changes: vec![LiveChange::SetAdd(key(u), 5000, 5000)],
            }])
            .await
            .unwrap();
        }
        let state = live.state_read();
        let counted: usize = state.sets.values().map(|z| set_bytes(z)).sum::<usize>()
            + state.blobs.values().map(|b| blob_bytes(b)).sum::<usize>();
        assert_eq!(state.bytes, counted, "the running count is the sum");
        // One batch may overshoot before the next makes room.
        assert!(state.bytes <= (1 << 20) + set_bytes(&state.sets[&key(0)]));
        assert!(
            state.sets.len() < 30,
            "most were evicted: {}",
            state.sets.len()
        );
        assert!(state.sets.contains_key(&key(0)) && state.sets.contains_key(&key(99)));
    }

    /// A write to `owner` (bumps its generation).
    async fn touch(live: &MemoryLive, owner: Owner) {
        live.apply(&[Changes {
            owner,
            expected_gen: None,
            changes: vec![LiveChange::Drop(LiveKey::Blob(BlobKey::Card(0)))],
        }])
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn forgotten_generations_keep_old_guards_from_matching() {
        let live = MemoryLive::new(1000);
        let owner = Owner::User(1);
        touch(&live, owner).await;
        let read = LiveRead {
            gens: vec![owner],
            ..Default::default()
        };
        let old = live.read(&read).await.unwrap().gens[0];
        // A write, then more owners than are remembered: the generations
        // are forgotten, and the write must still not be overwritten by a
        // rebuild that read before it.
        touch(&live, owner).await;
        for u in 2..1003 {
            touch(&live, Owner::User(u)).await;
        }
        touch(&live, Owner::User(5000)).await;
        // Counted afresh from where it was forgotten, it would be back at
        // the old guard now.
        touch(&live, owner).await;
        let stale = LiveFill {
            sets: vec![(SetKey::Following(1), vec![], old)],
            ..Default::default()
        };
        live.fill(&stale).await.unwrap();
        let r = LiveRead {
            sets: vec![likers(1)],
            ..Default::default()
        };
        assert_eq!(live.read(&r).await.unwrap().sets, vec![None]);
    }

    #[test]
    fn timelines_expire_oldest_first_and_only_those_unread_for_a_day() {
        let mut state = State::default();
        let now = 10 * HOME_TTL_MS;
        for (uid, age) in [(1, HOME_TTL_MS + 5), (2, 10), (3, HOME_TTL_MS + 1), (4, 0)] {
            state.put_set(SetKey::Home(uid), ZSet::default());
            state.home_used_at(uid, now - age);
        }
        // Read again: no longer the oldest.
        state.home_used_at(1, now);
        state.expire_homes(now);
        let left: Vec<bool> = (1..=4)
            .map(|u| state.sets.contains_key(&SetKey::Home(u)))
            .collect();
        assert_eq!(left, vec![true, true, false, true]);
        assert_eq!(state.home_order.len(), 3);
        assert_eq!(state.home_used.len(), 3);
    }

    #[tokio::test]
    async fn past_its_bound_the_cache_evicts_what_was_used_least_recently() {
        let live = MemoryLive::new(1000);
        let card = |i: i64| (BlobKey::Card(i), "{}".to_string(), None);
        let first = LiveFill {
            blobs: (0..1000).map(card).collect(),
            ..Default::default()
        };
        live.fill(&first).await.unwrap();
        // Card 7 is read: it is the hot one.
        let hot = LiveRead {
            blobs: vec![BlobKey::Card(7)],
            ..Default::default()
        };
        assert!(live.read(&hot).await.unwrap().blobs[0].is_some());
        let more = LiveFill {
            blobs: (1000..1010).map(card).collect(),
            ..Default::default()
        };
        live.fill(&more).await.unwrap();
        let all = LiveRead {
            blobs: (0..1010).map(BlobKey::Card).collect(),
            ..Default::default()
        };
        let cached = live.read(&all).await.unwrap().blobs;
        let kept = cached.iter().filter(|b| b.is_some()).count();
        assert!(
            (850..=1000).contains(&kept),
            "{kept} kept: a tenth or so goes, not all"
        );
        assert!(cached[7].is_some(), "the hot entry stays");
        assert!(cached[0].is_none(), "the oldest unused one goes");
        assert!(cached[1009].is_some(), "the newest stays");
    }

    #[tokio::test]
    async fn limit_counters_count_take_back_and_start_over() {
        let live = MemoryLive::new(1000);
        let check = |cost| LimitCheck {
            key: "writes:u:1".into(),
            cost,
            window_ms: 60_000,
            lockout_at: None,
        };
        let read = |cost| LiveRead {
            limits: vec![check(cost)],
            ..Default::default()
        };
        // A refund of nothing makes nothing.
        assert_eq!(live.read(&read(-1)).await.unwrap().limits[0].count, 0);
        assert_eq!(live.read(&read(1)).await.unwrap().limits[0].count, 1);
        assert_eq!(live.read(&read(1)).await.unwrap().limits[0].count, 2);
        assert_eq!(live.read(&read(-1)).await.unwrap().limits[0].count, 1);
        let peek = live.read(&read(0)).await.unwrap().limits[0];
        assert_eq!(peek.count, 1);
        assert!(peek.resets_in_ms > 0 && peek.resets_in_ms <= 60_000);
        let mut counters = live.counters.lock().unwrap();
        let now = now_ms();
        let over = LimitCheck {
            window_ms: 1,
            ..check(1)
        };
        counters.check(&over, now);
        // A window that has ended starts over at the next hit, and a
        // refund into an ended window does not open one below zero.
        assert_eq!(counters.check(&over, now + 70_000).count, 1);
        let refund = LimitCheck {
            cost: -1,
            ..over.clone()
        };
        assert_eq!(counters.check(&refund, now + 200_000).count, 0);
        assert_eq!(counters.check(&over, now + 200_000).count, 1);
    }

    #[test]
    fn a_full_table_forgets_the_oldest_counter_of_its_kind_and_never_a_lockout() {
        let mut counters = Counters::new(100);
        let now = now_ms();
        let hit = |key: String, lockout_at| LimitCheck {
            key,
            cost: 1,
            window_ms: 900_000,
            lockout_at,
        };
        let failure = |name: &str| hit(format!("login_failures:name:{name}"), Some(10));
        for _ in 0..11 {
            counters.check(&failure("victim"), now);
        }
        counters.check(&hit("reads:u:7".into(), None), now);
        // A flood of addresses fills its own table...
        for i in 0..1000 {
            counters.check(&hit(format!("logins:ip:{i}"), None), now + i);
        }
        // ...where a new address still gets a counter, the oldest going.
        assert_eq!(
            counters
                .check(&hit("logins:ip:fresh".into(), None), now)
                .count,
            1
        );
        assert_eq!(
            counters
                .check(&hit("logins:ip:999".into(), None), now)
                .count,
            2,
            "the newest are kept"
        );
        assert_eq!(
            counters.check(&hit("logins:ip:0".into(), None), now).count,
            1,
            "the oldest was forgotten"
        );
        // Other kinds are untouched by it.
        assert_eq!(counters.check(&hit("reads:u:7".into(), None), now).count, 2);
        assert_eq!(counters.check(&failure("victim"), now).count, 12);
        // Failed sign-ins past the budget are kept whatever comes after...
        for i in 0..500 {
            counters.check(&failure(&format!("other{i}")), now + i);
        }
        assert_eq!(counters.check(&failure("victim"), now).count, 13);
        // ...and only a table full of lockouts refuses a new counter.
        let mut locked = Counters::new(3);
        for name in ["a", "b", "c"] {
            for _ in 0..11 {
                locked.check(&failure(name), now);
            }
        }
        assert_eq!(locked.check(&failure("d"), now).count, i64::MAX);
        assert_eq!(locked.check(&failure("a"), now).count, 12);
    }

    #[test]
    fn filling_a_lockout_table_does_not_wipe_a_count_short_of_it() {
        // A guesser one short of the lockout, whose counter opened first,
        // then fills the table with one failure for each of many names.
        let mut counters = Counters::new(5);
        let now = now_ms();
        let failure = |name: &str| LimitCheck {
            key: format!("login_failures:name:{name}"),
            cost: 1,
            window_ms: 900_000,
            lockout_at: Some(10),
        };
        for _ in 0..9 {
            counters.check(&failure("victim"), now);
        }
        for i in 0..50 {
            assert_eq!(counters.check(&failure(&format!("other{i}")), now).count, 1);
        }
        assert_eq!(
            counters.check(&failure("victim"), now).count,
            10,
            "the guesser's count was forgotten"
        );
        // Between sweeps, an expired counter goes before a live one, however
        // low: "high" ends at now + 200, "x" is made at now + 100 (a sweep,
        // nothing expired yet, "low" forgotten), "y" at now + 300.
        let mut aging = Counters::new(2);
        for _ in 0..2 {
            aging.check(&failure("low"), now);
        }
        for _ in 0..5 {
            aging.check(&failure("high"), now - 899_800);
        }
        aging.check(&failure("x"), now + 100);
        aging.check(&failure("y"), now + 300);
        assert_eq!(aging.check(&failure("x"), now + 300).count, 2);
        assert_eq!(
            aging.check(&failure("low"), now + 300).count,
            1,
            "forgotten, it starts over"
        );
    }
}
