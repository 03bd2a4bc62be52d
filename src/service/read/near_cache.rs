//! The near cache: this instance's copies of live values, kept per owner
//! (a post, a user) with the generation the owner had when they were read,
//! and served only while a read finds the owner at that generation still.
//!
//! Every write to a post or a user moves its owner's generation in the same
//! atomic step that changes its live values (`LiveStore::apply`), on every
//! instance's shared store. So a copy whose owner's generation is unchanged
//! is exactly what the live store would answer, and checking costs one
//! small value per owner in the round trip the read makes anyway, instead
//! of the values themselves: a post's body, its likers and comment ids, the
//! cards on it, the viewer's relation sets. A write through another
//! instance shows in this one's next read, as it would without the cache.
//!
//! What makes a copy safe to keep is when its generation was read: before
//! the value (first in the same pipeline, or in an earlier round trip, or
//! before the documents it was rebuilt from). A write in between then
//! leaves the copy tagged older than it is, which costs a miss, never a
//! stale answer. Generations are never handed out twice for one owner
//! (the live stores restart them above every earlier value), so a copy
//! cannot match a generation from before a flush of the live store.
//!
//! One entry per owner holds all of that owner's copies at one generation:
//! a page of posts is one lookup per post, and a newer generation replaces
//! the whole entry, so nothing outdated lingers beside it. Bounded in
//! entries and in bytes (`MOMENTS_NEAR_CACHE_ENTRIES`,
//! `MOMENTS_NEAR_CACHE_BYTES`): past either, the least recently used eighth
//! of a shard goes. An entry is also dropped once older than the live TTL,
//! so nothing is served longer than the live store itself would keep it.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use super::snapshot::PostSnapshot;
use super::visibility::RelationSets;
use crate::hashing::{IdHash, IdMap};
use crate::store::{BlobKey, Owner, SetKey, SetView};

/// Shards, each behind its own lock, so the workers seldom wait on each
/// other.
const SHARDS: usize = 16;

/// What one entry costs beyond its payload: the key, the map's slot, the
/// `Arc` header and the bookkeeping, roughly.
const ENTRY_OVERHEAD: usize = 128;
/// What one value inside an entry costs beyond its payload.
const VALUE_OVERHEAD: usize = 48;

/// One owner's copies, all read at `generation`.
#[derive(Debug, Clone, Default)]
pub struct Copies {
    pub generation: u64,
    blobs: Vec<(BlobKey, Arc<str>)>,
    /// Each set as read: its newest members (as many as were asked for) and
    /// its count; whole when it holds every member.
    sets: Vec<(SetKey, Arc<SetView>)>,
    /// The user's relation sets, built once per generation.
    relations: Option<Arc<RelationSets>>,
    /// The post's viewer-independent parts, assembled once per generation.
    snapshot: Option<Arc<PostSnapshot>>,
    bytes: usize,
}

impl Copies {
    pub fn blob(&self, key: BlobKey) -> Option<&Arc<str>> {
        self.blobs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn set(&self, key: SetKey) -> Option<&Arc<SetView>> {
        self.sets.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn relations(&self) -> Option<&Arc<RelationSets>> {
        self.relations.as_ref()
    }

    pub fn snapshot(&self) -> Option<&Arc<PostSnapshot>> {
        self.snapshot.as_ref()
    }
}

/// A value to keep a copy of.
pub enum NearValue {
    Blob(BlobKey, Arc<str>),
    Set(SetKey, Arc<SetView>),
    Relations(Arc<RelationSets>),
    Snapshot(Arc<PostSnapshot>),
}

impl NearValue {
    fn bytes(&self) -> usize {
        VALUE_OVERHEAD
            + match self {
                NearValue::Blob(_, text) => text.len(),
                NearValue::Set(_, view) => view.top.len() * 16,
                NearValue::Relations(r) => r.bytes(),
                NearValue::Snapshot(p) => p.bytes(),
            }
    }

    /// Whether copies of this value may be kept. A home timeline changes
    /// without its owner's generation moving (pushes are commutative and
    /// need no ordering), so it is always read from the live store.
    fn is_cacheable(&self) -> bool {
        !matches!(self, NearValue::Set(SetKey::Home(_), _))
    }
}

struct Slot {
    copies: Arc<Copies>,
    /// A tick of the shard's clock at the last use: eviction goes by it.
    used: u64,
    /// When the entry's generation was first stored, in ms since the epoch.
    stored_at: i64,
}

struct Shard {
    map: IdMap<Owner, Slot>,
    bytes: usize,
    clock: u64,
}

impl Shard {
    /// Evicts the least recently used eighth (at least what is over).
    fn make_room(&mut self, max_entries: usize, max_bytes: usize) {
        while (self.map.len() > max_entries || self.bytes > max_bytes) && !self.map.is_empty() {
            let mut by_use: Vec<(u64, Owner)> =
                self.map.iter().map(|(k, s)| (s.used, *k)).collect();
            let over = self.map.len().saturating_sub(max_entries);
            let evict = (over + self.map.len() / 8).clamp(1, by_use.len());
            if evict < by_use.len() {
                by_use.select_nth_unstable_by_key(evict, |(used, _)| *used);
                by_use.truncate(evict);
            }
            for (_, key) in by_use {
                if let Some(s) = self.map.remove(&key) {
                    self.bytes -= s.copies.bytes;
                }
            }
        }
    }
}

/// Counts for `/metrics` and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NearStats {
    pub entries: usize,
    pub bytes: usize,
}

pub struct NearCache {
    shards: Vec<Mutex<Shard>>,
    hasher: IdHash,
    max_entries_per_shard: usize,
    max_bytes_per_shard: usize,
    max_age_ms: i64,
}

impl NearCache {
    /// `max_entries` owners and `max_bytes` bound the whole cache; 0
    /// entries turns it off. Copies older than `max_age_secs` are not
    /// served.
    pub fn new(max_entries: usize, max_bytes: usize, max_age_secs: u64) -> Self {
        let hasher = IdHash::default();
        Self {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        map: IdMap::default(),
                        bytes: 0,
                        clock: 0,
                    })
                })
                .collect(),
            hasher,
            max_entries_per_shard: max_entries.div_ceil(SHARDS),
            max_bytes_per_shard: max_bytes.div_ceil(SHARDS),
            max_age_ms: (max_age_secs.min(i64::MAX as u64 / 1000) * 1000) as i64,
        }
    }

    /// A cache that keeps nothing.
    pub fn off() -> Self {
        Self::new(0, 0, 0)
    }

    pub fn is_on(&self) -> bool {
        self.max_entries_per_shard > 0
    }

    fn shard(&self, owner: Owner) -> std::sync::MutexGuard<'_, Shard> {
        let i = (self.hasher.hash_one(owner) >> 32) as usize % SHARDS;
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The owner's copies and the generation they were read at, whatever
    /// the owner's generation is now (the caller checks that).
    pub fn get(&self, owner: Owner) -> Option<Arc<Copies>> {
        self.with(owner, |c| c.clone())
    }

    /// `f` of the owner's copies (`get`), without sharing them: a hot
    /// post's entry is read by every worker at once, and each `Arc` taken
    /// of it is a write to one cache line they all share.
    pub fn with<R>(&self, owner: Owner, f: impl FnOnce(&Arc<Copies>) -> R) -> Option<R> {
        if !self.is_on() {
            return None;
        }
        let now = crate::ids::now_ms();
        let mut shard = self.shard(owner);
        shard.clock += 1;
        let tick = shard.clock;
        let slot = shard.map.get_mut(&owner)?;
        if now - slot.stored_at > self.max_age_ms {
            return None;
        }
        slot.used = tick;
        Some(f(&slot.copies))
    }

    /// Keeps `copy` of `owner`'s as read at `generation` (read before the
    /// value). Copies at an older generation are dropped with it; a copy
    /// for an older generation than the entry's is not kept. Of a set, the
    /// copy holding more members is kept.
    pub fn put(&self, owner: Owner, generation: u64, copy: NearValue) {
        if !self.is_on() || !copy.is_cacheable() {
            return;
        }
        let bytes = copy.bytes();
        if bytes > self.max_bytes_per_shard / 4 {
            return;
        }
        let now = crate::ids::now_ms();
        let (max_entries, max_bytes) = (self.max_entries_per_shard, self.max_bytes_per_shard);
        let mut shard = self.shard(owner);
        shard.clock += 1;
        let tick = shard.clock;
        let shard = &mut *shard;
        let existed = shard.map.contains_key(&owner);
        let slot = shard.map.entry(owner).or_insert_with(|| Slot {
            copies: Arc::new(Copies {
                generation,
                bytes: ENTRY_OVERHEAD,
                ..Copies::default()
            }),
            used: tick,
            stored_at: now,
        });
        let before = if existed { slot.copies.bytes } else { 0 };
        let expired = now - slot.stored_at > self.max_age_ms;
        if slot.copies.generation > generation && !expired {
            return;
        }
        if slot.copies.generation != generation || expired {
            slot.copies = Arc::new(Copies {
                generation,
                bytes: ENTRY_OVERHEAD,
                ..Copies::default()
            });
            slot.stored_at = now;
        }
        slot.used = tick;
        let copies = Arc::make_mut(&mut slot.copies);
        match copy {
            NearValue::Blob(key, text) => match copies.blobs.iter_mut().find(|(k, _)| *k == key) {
                Some(had) => {
                    copies.bytes -= VALUE_OVERHEAD + had.1.len();
                    had.1 = text;
                }
                None => copies.blobs.push((key, text)),
            },
            NearValue::Set(key, view) => match copies.sets.iter_mut().find(|(k, _)| *k == key) {
                Some(had) if had.1.top.len() >= view.top.len() => return,
                Some(had) => {
                    copies.bytes -= VALUE_OVERHEAD + had.1.top.len() * 16;
                    had.1 = view;
                }
                None => copies.sets.push((key, view)),
            },
            NearValue::Relations(r) => {
                if let Some(had) = &copies.relations {
                    copies.bytes -= VALUE_OVERHEAD + had.bytes();
                }
                copies.relations = Some(r);
            }
            NearValue::Snapshot(p) => {
                if let Some(had) = &copies.snapshot {
                    copies.bytes -= VALUE_OVERHEAD + had.bytes();
                }
                copies.snapshot = Some(p);
            }
        }
        copies.bytes += bytes;
        let after = copies.bytes;
        shard.bytes = shard.bytes + after - before;
        shard.make_room(max_entries, max_bytes);
    }

    /// Forgets every copy (the live state was dropped on purpose here).
    pub fn clear(&self) {
        for s in &self.shards {
            let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
            shard.map.clear();
            shard.bytes = 0;
        }
    }

    pub fn stats(&self) -> NearStats {
        let mut out = NearStats::default();
        for s in &self.shards {
            let shard = s.lock().unwrap_or_else(|p| p.into_inner());
            out.entries += shard.map.len();
            out.bytes += shard.bytes;
        }
        out
    }
}

/// A set's view for one read of it, from a copy: its newest `top` members
/// and its count, and the probed member's score if the copy holds every
/// member. `None` when the copy cannot answer: it lacks members asked for,
/// or the probe needs members it does not hold.
pub fn view_from_copy(copy: &SetView, top: usize, probe: Option<i64>) -> Option<SetView> {
    let whole = copy.top.len() as u64 >= copy.count;
    if !covers(copy, top) {
        return None;
    }
    let probe_score = match probe {
        None => None,
        Some(_) if !whole => return None,
        Some(p) => copy.top.iter().find(|(m, _)| *m == p).map(|(_, s)| *s),
    };
    Some(SetView {
        count: copy.count,
        top: copy.top.iter().take(top).copied().collect(),
        probe_score,
    })
}

/// Whether the copy holds the members a read of the newest `top` asks for.
pub fn covers(copy: &SetView, top: usize) -> bool {
    copy.top.len() as u64 >= copy.count || copy.top.len() >= top
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> NearValue {
        NearValue::Blob(BlobKey::PostBody(7), Arc::from(text))
    }

    fn text_at(near: &NearCache, generation: u64) -> Option<String> {
        near.get(Owner::Post(7))
            .filter(|c| c.generation == generation)
            .and_then(|c| c.blob(BlobKey::PostBody(7)).map(|t| t.to_string()))
    }

    #[test]
    fn copies_are_served_only_at_their_generation() {
        let near = NearCache::new(1000, 1 << 20, 3600);
        near.put(Owner::Post(7), 5, body("five"));
        near.put(
            Owner::Post(7),
            5,
            NearValue::Set(SetKey::PostLikers(7), Arc::new(SetView::default())),
        );
        assert_eq!(text_at(&near, 5), Some("five".into()));
        assert_eq!(text_at(&near, 6), None);
        // An older read never replaces a newer copy.
        near.put(Owner::Post(7), 4, body("four"));
        assert_eq!(text_at(&near, 5), Some("five".into()));
        // A newer one replaces the owner's entry whole: nothing of the
        // older generation stays beside it.
        near.put(Owner::Post(7), 6, body("six"));
        assert_eq!(text_at(&near, 6), Some("six".into()));
        let copies = near.get(Owner::Post(7)).unwrap();
        assert!(copies.set(SetKey::PostLikers(7)).is_none());
    }

    #[test]
    fn timelines_are_never_kept() {
        let near = NearCache::new(1000, 1 << 20, 3600);
        let home = NearValue::Set(SetKey::Home(1), Arc::new(SetView::default()));
        near.put(Owner::User(1), 1, home);
        assert!(near
            .get(Owner::User(1))
            .is_none_or(|c| c.set(SetKey::Home(1)).is_none()));
    }

    #[test]
    fn entries_and_bytes_stay_within_their_bounds() {
        let near = NearCache::new(160, 1 << 30, 3600);
        for p in 0..10_000 {
            let copy = NearValue::Blob(BlobKey::PostBody(p), Arc::from("x"));
            near.put(Owner::Post(p), 1, copy);
        }
        assert!(near.stats().entries <= 160, "{:?}", near.stats());
        let near = NearCache::new(1_000_000, 1 << 20, 3600);
        let big: Arc<str> = Arc::from("y".repeat(1000));
        for p in 0..10_000 {
            near.put(
                Owner::Post(p),
                1,
                NearValue::Blob(BlobKey::PostBody(p), big.clone()),
            );
        }
        let stats = near.stats();
        assert!(stats.bytes <= 1 << 20 && stats.entries > 500, "{stats:?}");
        // The most recent ones are what stayed.
        assert!(near.get(Owner::Post(9_999)).is_some());
        // Replacing a value keeps the count of bytes right.
        let near = NearCache::new(1000, 1 << 20, 3600);
        for _ in 0..100 {
            near.put(
                Owner::Post(1),
                1,
                NearValue::Blob(BlobKey::PostBody(1), big.clone()),
            );
        }
        assert!(near.stats().bytes < 2 * 1000 + 2 * ENTRY_OVERHEAD);
    }

    #[test]
    fn a_copy_older_than_the_live_ttl_is_not_served() {
        let near = NearCache::new(1000, 1 << 20, 0);
        near.put(
            Owner::User(1),
            1,
            NearValue::Blob(BlobKey::Card(1), Arc::from("{}")),
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(near.get(Owner::User(1)).is_none());
    }

    #[test]
    fn a_set_copy_answers_what_it_holds() {
        let whole = SetView {
            count: 2,
            top: vec![(9, 90), (7, 70)],
            probe_score: None,
        };
        let v = view_from_copy(&whole, 1, Some(7)).unwrap();
        assert_eq!(
            (v.count, v.top, v.probe_score),
            (2, vec![(9, 90)], Some(70))
        );
        assert_eq!(
            view_from_copy(&whole, 5, Some(3)).unwrap().probe_score,
            None
        );
        let part = SetView {
            count: 500,
            top: vec![(9, 90), (7, 70)],
            probe_score: None,
        };
        // Not every member: no probe, and no more members than it holds.
        assert!(view_from_copy(&part, 2, Some(7)).is_none());
        assert!(view_from_copy(&part, 3, None).is_none());
        assert_eq!(view_from_copy(&part, 2, None).unwrap().count, 500);
        assert!(covers(&part, 2) && !covers(&part, 3) && covers(&whole, 100));
    }
}
