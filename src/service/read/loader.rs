//! Read-through loading of live state: one batched live read per call, then
//! one batched document query per kind of miss (run concurrently), then the
//! rebuilt values written back in the background. So a call costs a constant
//! number of round trips whatever the number of items, and a warm call
//! touches the live store only.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::near_cache::{self, Copies, NearCache, NearValue};
use super::visibility::{BlockedBy, RelationSets, Relations};
use crate::error::AppResult;
use crate::hashing::IdMap;
use crate::metrics::LiveLookups;
use crate::service::jobs::repair::PendingNow;
use crate::service::Context;
use crate::store::{
    BlobKey, FilterKind, LikeDoc, LikeKind, LiveAnswer, LiveFill, LiveRead, LiveStore, Owner,
    PostBody, SetKey, SetRead, SetView, StoreResult,
};

/// Members of a rebuilt set kept in the near cache beyond what was asked
/// for: enough for every read of its newest members, bounded for a set a
/// stranger can grow (a viral post's likers).
const NEAR_SET_MEMBERS: usize = 1024;

#[derive(Default)]
pub struct Loaded {
    pub blobs: IdMap<BlobKey, Arc<str>>,
    /// A set read more than once in one call (whole, and asked about a
    /// member) keeps its fullest view here.
    pub sets: IdMap<SetKey, SetView>,
    /// (set, member) → whether the member is in it, for every read that
    /// asked (`SetRead::probe`).
    pub probed: IdMap<(SetKey, i64), bool>,
    /// Each owner's generation, read before any of its values here, for
    /// the owners whose values are all the live store's (not awaiting
    /// repair, read while the live store answered).
    gens: IdMap<Owner, u64>,
    near: Option<Arc<NearCache>>,
    /// A viewer's relation sets served from this instance's copy: their
    /// six sets were then not read (`relation_sets`).
    relations: Option<(i64, Arc<RelationSets>)>,
}

impl Loaded {
    fn put_set(&mut self, read: &SetRead, view: SetView) {
        if let Some(p) = read.probe {
            self.probed
                .insert((read.key, p), view.probe_score.is_some());
        }
        match self.sets.get(&read.key) {
            Some(had) if had.top.len() >= view.top.len() => {}
            _ => {
                self.sets.insert(read.key, view);
            }
        }
    }

    /// The viewer's relation sets from what `Relations::reads` loaded:
    /// built once per generation of the viewer and shared through the near
    /// cache.
    pub fn relation_sets(&self, viewer: i64) -> Arc<RelationSets> {
        if let Some((v, sets)) = &self.relations {
            if *v == viewer {
                return sets.clone();
            }
        }
        let read_here = [
            SetKey::Following(viewer),
            SetKey::Friends(viewer),
            SetKey::Blocking(viewer),
            SetKey::BlockedBy(viewer),
            SetKey::Muted(viewer),
            SetKey::HiddenBy(viewer),
        ]
        .iter()
        .all(|k| self.sets.contains_key(k));
        let owner = Owner::User(viewer);
        let shared = match (&self.near, self.gens.get(&owner)) {
            (Some(near), Some(g)) if read_here => Some((near, *g)),
            _ => None,
        };
        if let Some((near, g)) = shared {
            let copies = near.get(owner).filter(|c| c.generation == g);
            if let Some(sets) = copies.as_ref().and_then(|c| c.relations()) {
                return sets.clone();
            }
        }
        let built = Arc::new(relation_sets_of(viewer, self));
        if let Some((near, g)) = shared {
            near.put(owner, g, NearValue::Relations(built.clone()));
        }
        built
    }
}

/// The viewer's relation sets from what `reads` loaded.
fn relation_sets_of(v: i64, loaded: &Loaded) -> RelationSets {
    let members = |key: SetKey| -> HashSet<i64> {
        loaded
            .sets
            .get(&key)
            .map(|view| view.top.iter().map(|(m, _)| *m).collect())
            .unwrap_or_default()
    };
    let blockers = members(SetKey::BlockedBy(v));
    let every_blocker_read = loaded
        .sets
        .get(&SetKey::BlockedBy(v))
        .is_none_or(|view| view.count as usize <= view.top.len());
    RelationSets {
        following: members(SetKey::Following(v)),
        friends: members(SetKey::Friends(v)),
        blocking: members(SetKey::Blocking(v)),
        blocked_by: if every_blocker_read {
            BlockedBy::whole(blockers)
        } else {
            BlockedBy::some_of(blockers)
        },
        muted: members(SetKey::Muted(v)),
        hidden_by: members(SetKey::HiddenBy(v)),
    }
}

pub struct Loader<'a> {
    ctx: &'a Context,
    /// Generations read alongside the values, guarding the rebuilt values.
    gens: IdMap<Owner, u64>,
    /// False once the live store failed in this request: then nothing is
    /// written back (a guard read from a failing store proves nothing).
    live_ok: bool,
    fill: LiveFill,
    /// Users found blocked by more than are read whole, with the blocks
    /// read then: a later read of this loader asks about people without
    /// reading those again.
    blocked_by_many: HashMap<i64, Vec<crate::store::BlockDoc>>,
    /// Set once a near-cache copy turned out outdated in this request (a
    /// write since, or the live state lost): later loads then read values
    /// with their generations rather than bet on copies again, so a cold
    /// request pays one extra round trip, not one per load.
    copies_doubted: bool,
    /// The owners awaiting repair, as of the start of the current load.
    pending: PendingNow,
    /// Owners whose generations the next load reads too (`expect`).
    expected: Vec<Owner>,
    pub live_round_trips: u32,
    pub doc_round_trips: u32,
}

fn view_of(mut members: Vec<(i64, i64)>, read: &SetRead) -> SetView {
    members.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    SetView {
        count: members.len() as u64,
        probe_score: read
            .probe
            .and_then(|p| members.iter().find(|(m, _)| *m == p).map(|(_, s)| *s)),
        top: members.into_iter().take(read.top).collect(),
    }
}

/// A set read the near cache holds a copy for, the owner's generation not
/// yet known to match it.
struct SetCopy {
    read: SetRead,
    gen: u64,
    /// The copy as this read sees it; its probe answered by the live
    /// store (`probe_at`) when the copy does not hold every member.
    view: SetView,
    probe_at: Option<usize>,
}

tokio::task_local! {
    /// Set while a bulk read runs (`bulk`).
    static BULK: ();
}

/// Runs `read` as a bulk read: a data export paging through an account's
/// whole history reads what no reader asked for, so none of it is kept in
/// the near cache or written back to the live store, where it would push
/// out what readers want (measured: 350 MiB of an instance's memory for an
/// account of 100,000 posts).
pub async fn bulk<F: std::future::Future>(read: F) -> F::Output {
    BULK.scope((), read).await
}

fn in_bulk() -> bool {
    BULK.try_with(|_| ()).is_ok()
}

impl<'a> Loader<'a> {
    pub fn new(ctx: &'a Context) -> Self {
        Self {
            ctx,
            gens: IdMap::default(),
            live_ok: true,
            fill: LiveFill::default(),
            blocked_by_many: HashMap::new(),
            copies_doubted: false,
            pending: PendingNow::default(),
            expected: Vec::new(),
            live_round_trips: 0,
            doc_round_trips: 0,
        }
    }

    /// Whether the near cache may serve or keep `owner`'s values in this
    /// request.
    fn near_for(&self, owner: Owner) -> bool {
        self.live_ok && self.ctx.near.is_on() && !self.pending.contains(owner)
    }

    /// Keeps a value read from the live store (or rebuilt from the
    /// documents after its owner's generation was read) in the near cache.
    fn keep_near(&mut self, owner: Owner, value: NearValue) {
        if in_bulk() {
            return;
        }
        match (self.near_for(owner), self.gens.get(&owner)) {
            // No generation to keep it under: have one started, for the
            // next read to keep its copies under.
            (true, Some(0)) if !self.fill.start_gens.contains(&owner) => {
                self.fill.start_gens.push(owner);
            }
            (true, Some(g)) if *g != 0 => self.ctx.near.put(owner, *g, value),
            _ => {}
        }
    }

    fn keep_set_near(&mut self, key: SetKey, view: &SetView) {
        if !self.ctx.near.is_on() {
            return;
        }
        let copy = SetView {
            count: view.count,
            top: view.top.clone(),
            probe_score: None,
        };
        self.keep_near(key.owner(), NearValue::Set(key, Arc::new(copy)));
    }

    /// This instance's copies of `owner`'s values, looked up once per load.
    fn copies_of(
        &self,
        found: &mut Vec<(Owner, Option<Arc<Copies>>)>,
        owner: Owner,
    ) -> Option<Arc<Copies>> {
        if !self.near_for(owner) {
            return None;
        }
        if let Some((_, c)) = found.iter().find(|(o, _)| *o == owner) {
            return c.clone();
        }
        let c = self.ctx.near.get(owner);
        found.push((owner, c.clone()));
        c
    }

    /// Whether a copy of `owner`'s values kept at `generation` holds: the
    /// owner's generation, read by this request, is still that one, and
    /// the owner awaits no repair.
    pub fn vouches_for(&self, owner: Owner, generation: u64) -> bool {
        self.near_for(owner) && generation != 0 && self.gens.get(&owner) == Some(&generation)
    }

    /// Keeps a post's snapshot, assembled from what this request read after
    /// the post's generation (`snapshot::PostSnapshot`).
    pub fn keep_snapshot(&mut self, snapshot: super::snapshot::PostSnapshot) {
        if self.ctx.near.is_on() {
            let owner = Owner::Post(snapshot.body.id);
            self.keep_near(owner, NearValue::Snapshot(Arc::new(snapshot)));
        }
    }

    /// Owners whose values a later load of this request will likely want
    /// (the people this instance's copies of a page name): their
    /// generations ride in the next load's round trip, so that a later load
    /// served from copies makes none of its own.
    pub fn expect(&mut self, owners: impl IntoIterator<Item = Owner>) {
        self.expected.extend(owners);
    }

    /// Loads blobs and sets; what the live store lacks comes from the documents.
    /// Absent blobs (no such document) are simply not in the result.
    ///
    /// Values the near cache holds cost only their owners' generations in
    /// the round trip; a copy found outdated there is read again in a
    /// second one (only then).
    pub async fn load(&mut self, blobs: &[BlobKey], sets: &[SetRead]) -> AppResult<Loaded> {
        self.load_then(blobs, sets, |_| (Vec::new(), Vec::new()))
            .await
    }

    /// `load`, and what `more` asks for once the generations are read (the
    /// values a caller's own copies turned out too old for), in the round
    /// trip that reads again what the near cache's copies were too old for:
    /// so a request whose copies are outdated pays one round trip more, and
    /// its misses are all rebuilt from the documents together.
    pub async fn load_then(
        &mut self,
        blobs: &[BlobKey],
        sets: &[SetRead],
        more: impl FnOnce(&Self) -> (Vec<BlobKey>, Vec<SetRead>),
    ) -> AppResult<Loaded> {
        self.pending = self.ctx.repair.pending_now();
        let expected = std::mem::take(&mut self.expected);
        let mut owners: Vec<Owner> = blobs
            .iter()
            .map(|b| b.owner())
            .chain(sets.iter().map(|s| s.key.owner()))
            .chain(expected)
            .filter(|o| !self.gens.contains_key(o))
            .collect();
        owners.sort_unstable();
        owners.dedup();
        let mut out = Loaded {
            near: Some(self.ctx.near.clone()),
            ..Loaded::default()
        };
        let mut lookups = LiveLookups::default();

        // What the near cache holds: served at once where the owner's
        // generation is known to match, else checked by the round trip.
        let mut found: Vec<(Owner, Option<Arc<Copies>>)> = Vec::new();
        let mut live_blobs: Vec<BlobKey> = Vec::new();
        let mut blob_copies: Vec<(BlobKey, u64, Arc<str>)> = Vec::new();
        for key in blobs {
            let owner = key.owner();
            if let Some(copies) = self.copies_of(&mut found, owner) {
                if let Some(text) = copies.blob(*key).cloned() {
                    let g = copies.generation;
                    match self.gens.get(&owner) {
                        Some(known) if *known == g => {
                            lookups.near_hit(key.kind());
                            out.blobs.insert(*key, text);
                            continue;
                        }
                        Some(_) => lookups.near_stale(key.kind()),
                        None if self.copies_doubted => {}
                        None => {
                            blob_copies.push((*key, g, text));
                            continue;
                        }
                    }
                }
            }
            live_blobs.push(*key);
        }
        // A viewer's six relation sets, when this instance keeps them built
        // (`Relations::reads` asks for all six): only the viewer's
        // generation is read, and the sets only if it moved.
        let mut kept_relations: Option<(i64, u64, Arc<RelationSets>, Vec<SetRead>)> = None;
        if let Some(v) = Relations::reader_of(sets) {
            if let Some(copies) = self.copies_of(&mut found, Owner::User(v)) {
                if let Some(r) = copies.relations() {
                    let reads: Vec<SetRead> = sets
                        .iter()
                        .filter(|s| Relations::is_relation_read(s, v))
                        .copied()
                        .collect();
                    match self.gens.get(&Owner::User(v)) {
                        Some(g) if *g == copies.generation => {
                            lookups.near_hit("relations");
                            out.relations = Some((v, r.clone()));
                        }
                        Some(_) => {}
                        None => kept_relations = Some((v, copies.generation, r.clone(), reads)),
                    }
                }
            }
        }
        let served_viewer = match (&out.relations, &kept_relations) {
            (Some((v, _)), _) | (_, Some((v, ..))) => Some(*v),
            _ => None,
        };
        let relations_served =
            |read: &SetRead| served_viewer.is_some_and(|v| Relations::is_relation_read(read, v));
        let mut live_sets: Vec<SetRead> = Vec::new();
        let mut set_copies: Vec<SetCopy> = Vec::new();
        let mut probes: Vec<SetRead> = Vec::new();
        for read in sets.iter().filter(|r| !relations_served(r)) {
            let owner = read.key.owner();
            let copies = match read.below {
                None => self.copies_of(&mut found, owner),
                Some(_) => None,
            };
            let copy = copies
                .as_ref()
                .and_then(|c| c.set(read.key).map(|v| (c.generation, v.clone())));
            if let Some((g, copy)) = copy {
                let known = self.gens.get(&owner).copied();
                if known.is_some_and(|k| k != g) {
                    lookups.near_stale(read.key.kind());
                } else if known.is_none() && self.copies_doubted {
                } else if near_cache::covers(&copy, read.top) {
                    let (view, probe_at) =
                        match near_cache::view_from_copy(&copy, read.top, read.probe) {
                            Some(v) => (v, None),
                            None => {
                                // Every member but the one asked about: the
                                // live store answers the probe alone.
                                probes.push(SetRead {
                                    key: read.key,
                                    top: 0,
                                    probe: read.probe,
                                    below: None,
                                });
                                let v = near_cache::view_from_copy(&copy, read.top, None)
                                    .unwrap_or_default();
                                (v, Some(probes.len() - 1))
                            }
                        };
                    match (known, probe_at) {
                        (Some(_), None) => {
                            lookups.near_hit(read.key.kind());
                            out.put_set(read, view);
                        }
                        _ => set_copies.push(SetCopy {
                            read: *read,
                            gen: g,
                            view,
                            probe_at,
                        }),
                    }
                    continue;
                }
            }
            live_sets.push(*read);
        }

        let first_sets = live_sets.len();
        let mut read_sets = live_sets.clone();
        read_sets.extend(probes.iter().copied());
        let read = LiveRead {
            blobs: live_blobs.clone(),
            sets: read_sets,
            gens: owners.clone(),
            ..Default::default()
        };
        // Whether the live store answered this read: only then is an
        // absent value a miss.
        let (answer, answered) = if read.is_empty() {
            (LiveAnswer::default(), false)
        } else {
            self.live_round_trips += 1;
            match self.ctx.live.read(&read).await {
                Ok(a) => (a, true),
                Err(e) => {
                    tracing::warn!(error = %e, "live read failed; answering from the documents");
                    self.live_ok = false;
                    let nothing = LiveAnswer {
                        blobs: vec![None; read.blobs.len()],
                        sets: vec![None; read.sets.len()],
                        gens: vec![0; owners.len()],
                        ..Default::default()
                    };
                    (nothing, false)
                }
            }
        };
        if answered {
            for (o, g) in owners.iter().zip(&answer.gens) {
                self.gens.insert(*o, *g);
            }
        }
        let LiveAnswer {
            blobs: blob_answers,
            sets: mut set_answers,
            ..
        } = answer;
        let probe_answers = set_answers.split_off(first_sets.min(set_answers.len()));

        // The copies whose owners turned out unchanged are served; the
        // others are read again, in a second round trip.
        let mut again_blobs: Vec<BlobKey> = Vec::new();
        for (key, g, text) in blob_copies {
            if answered && self.gens.get(&key.owner()) == Some(&g) {
                lookups.near_hit(key.kind());
                out.blobs.insert(key, text);
            } else {
                if answered {
                    lookups.near_stale(key.kind());
                }
                again_blobs.push(key);
            }
        }
        let mut again_sets: Vec<SetRead> = Vec::new();
        for copy in set_copies {
            let current = answered && self.gens.get(&copy.read.key.owner()) == Some(&copy.gen);
            let probed = match copy.probe_at {
                None => Some(None),
                Some(i) => probe_answers
                    .get(i)
                    .cloned()
                    .flatten()
                    .map(|v| v.probe_score),
            };
            match (current, probed) {
                (true, Some(probe_score)) => {
                    lookups.near_hit(copy.read.key.kind());
                    let mut view = copy.view;
                    if copy.probe_at.is_some() {
                        view.probe_score = probe_score;
                    }
                    out.put_set(&copy.read, view);
                }
                _ => {
                    if answered {
                        lookups.near_stale(copy.read.key.kind());
                    }
                    again_sets.push(copy.read);
                }
            }
        }
        let mut blob_answers: Vec<(BlobKey, Option<String>)> =
            live_blobs.into_iter().zip(blob_answers).collect();
        let mut set_answers: Vec<(SetRead, Option<SetView>)> =
            live_sets.into_iter().zip(set_answers).collect();
        if let Some((v, g, r, reads)) = kept_relations {
            if answered && self.gens.get(&Owner::User(v)) == Some(&g) {
                lookups.near_hit("relations");
                out.relations = Some((v, r));
            } else {
                if answered {
                    lookups.near_stale("relations");
                }
                again_sets.extend(reads);
            }
        }
        let (more_blobs, more_sets) = more(self);
        let callers_outdated = !more_blobs.is_empty() || !more_sets.is_empty();
        again_blobs.extend(more_blobs);
        again_sets.extend(more_sets);
        let mut answered_again = answered;
        if callers_outdated {
            self.copies_doubted = true;
        }
        if answered && (!again_blobs.is_empty() || !again_sets.is_empty()) {
            self.copies_doubted = true;
            let read = LiveRead {
                blobs: again_blobs.clone(),
                sets: again_sets.clone(),
                ..Default::default()
            };
            self.live_round_trips += 1;
            match self.ctx.live.read(&read).await {
                Ok(a) => {
                    blob_answers.extend(again_blobs.into_iter().zip(a.blobs));
                    set_answers.extend(again_sets.into_iter().zip(a.sets));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "live read failed; answering from the documents");
                    self.live_ok = false;
                    answered_again = false;
                    blob_answers.extend(again_blobs.into_iter().map(|k| (k, None)));
                    set_answers.extend(again_sets.into_iter().map(|r| (r, None)));
                }
            }
        } else {
            blob_answers.extend(again_blobs.into_iter().map(|k| (k, None)));
            set_answers.extend(again_sets.into_iter().map(|r| (r, None)));
        }

        // An owner whose last live update failed may hold stale values until
        // the repair task drops them: read it from the documents and write
        // nothing back (its generation guard is about to move anyway).
        let pending = self.pending.clone();
        let stale = |o: Owner| pending.contains(o);
        let mut missing_blobs = Vec::new();
        for (key, value) in blob_answers {
            if stale(key.owner()) {
                missing_blobs.push(key);
                lookups.rebuilt(key.kind());
                continue;
            }
            match value {
                Some(v) => {
                    lookups.hit(key.kind());
                    let text: Arc<str> = Arc::from(v);
                    self.keep_near(key.owner(), NearValue::Blob(key, text.clone()));
                    out.blobs.insert(key, text);
                }
                None if key.is_hint() => {
                    if answered_again {
                        lookups.miss(key.kind());
                    }
                }
                None => {
                    if answered_again {
                        lookups.miss(key.kind());
                    }
                    lookups.rebuilt(key.kind());
                    missing_blobs.push(key)
                }
            }
        }
        let mut missing_sets = Vec::new();
        for (read, view) in set_answers {
            if stale(read.key.owner()) {
                missing_sets.push(read);
                lookups.rebuilt(read.key.kind());
                continue;
            }
            match view {
                Some(v) => {
                    lookups.hit(read.key.kind());
                    if read.below.is_none() {
                        self.keep_set_near(read.key, &v);
                    }
                    out.put_set(&read, v);
                }
                None => {
                    if answered_again {
                        lookups.miss(read.key.kind());
                    }
                    lookups.rebuilt(read.key.kind());
                    missing_sets.push(read)
                }
            }
        }
        lookups.record();
        if !missing_blobs.is_empty() || !missing_sets.is_empty() {
            self.rebuild(&missing_blobs, &missing_sets, &mut out)
                .await?;
        }
        if self.live_ok {
            for o in blobs
                .iter()
                .map(|b| b.owner())
                .chain(sets.iter().map(|s| s.key.owner()))
            {
                if let (false, Some(g)) = (stale(o), self.gens.get(&o)) {
                    if *g != 0 {
                        out.gens.insert(o, *g);
                    }
                }
            }
        }
        Ok(out)
    }

    fn guard(&self, owner: Owner) -> Option<u64> {
        self.gens.get(&owner).copied()
    }

    /// The owner's generation as read with its values, if the live store
    /// answered and the owner is not awaiting repair: what a writer passes as
    /// `expected_gen` after its document write.
    pub fn generation(&self, owner: Owner) -> Option<u64> {
        if self.live_ok {
            self.guard(owner)
        } else {
            None
        }
    }

    /// Queues a value to write back with the rebuilt ones (unguarded: for
    /// hints whose staleness costs only a round trip).
    pub fn write_back(&mut self, key: BlobKey, text: String) {
        if self.live_ok {
            self.keep_near(key.owner(), NearValue::Blob(key, Arc::from(text.as_str())));
            self.fill.blobs.push((key, text, None));
        }
    }

    /// Forgets rebuilt values of this owner (a post that turned out missing
    /// or deleted: nothing of it is worth caching).
    pub fn discard_fills(&mut self, owner: Owner) {
        self.fill.sets.retain(|(k, ..)| k.owner() != owner);
    }

    async fn rebuild(
        &mut self,
        blobs: &[BlobKey],
        sets: &[SetRead],
        out: &mut Loaded,
    ) -> AppResult<()> {
        let docs = &self.ctx.docs;
        let rebuilds = &self.ctx.rebuilds;
        let ids = |f: &dyn Fn(&BlobKey) -> Option<i64>| -> Vec<i64> {
            let mut v: Vec<i64> = blobs.iter().filter_map(f).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let post_ids = ids(&|b| match b {
            BlobKey::PostBody(p) => Some(*p),
            _ => None,
        });
        // Comments as (post, comment): the post is the comments' shard key.
        let mut comment_ids: Vec<(i64, i64)> = blobs
            .iter()
            .filter_map(|b| match b {
                BlobKey::CommentBody(p, c) => Some((*p, *c)),
                _ => None,
            })
            .collect();
        comment_ids.sort_unstable();
        comment_ids.dedup();
        let user_ids = ids(&|b| match b {
            BlobKey::Card(u) => Some(*u),
            _ => None,
        });
        let viewed_posts = ids(&|b| match b {
            BlobKey::ViewCount(p) => Some(*p),
            _ => None,
        });
        let set_ids = |f: &dyn Fn(&SetKey) -> Option<i64>| -> Vec<i64> {
            let mut v: Vec<i64> = sets.iter().filter_map(|s| f(&s.key)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let liked_posts = set_ids(&|k| match k {
            SetKey::PostLikers(p) => Some(*p),
            _ => None,
        });
        let commented_posts = set_ids(&|k| match k {
            SetKey::PostComments(p) => Some(*p),
            _ => None,
        });
        let liked_comments = set_ids(&|k| match k {
            SetKey::CommentLikers(_, c) => Some(*c),
            _ => None,
        });
        let mut replied_comments: Vec<(i64, i64)> = sets
            .iter()
            .filter_map(|s| match s.key {
                SetKey::CommentReplies(p, c) => Some((p, c)),
                _ => None,
            })
            .collect();
        replied_comments.sort_unstable();
        replied_comments.dedup();
        // Who hide from a reader counts only among those the reader follows
        // (a hide sleeps while its follow is gone): their followees too.
        let followers_of = set_ids(&|k| match k {
            SetKey::Following(u) | SetKey::Friends(u) | SetKey::HiddenBy(u) => Some(*u),
            _ => None,
        });
        let friends_of = set_ids(&|k| match k {
            SetKey::Friends(u) => Some(*u),
            _ => None,
        });
        let blocking_of = set_ids(&|k| match k {
            SetKey::Blocking(u) => Some(*u),
            _ => None,
        });
        let blocked_of = set_ids(&|k| match k {
            SetKey::BlockedBy(u) => Some(*u),
            _ => None,
        });
        // Of those not yet known to be blocked by too many: whose are read
        // whole (and so must be counted), and whether a rebuild found too
        // many before (the hint it left, one live read instead of the
        // documents); a read that only asks about people needs neither.
        let wants_whole = |u: &i64| {
            !self.blocked_by_many.contains_key(u)
                && sets
                    .iter()
                    .any(|s| s.key == SetKey::BlockedBy(*u) && s.top > 0)
        };
        let to_count: Vec<i64> = blocked_of.iter().copied().filter(wants_whole).collect();
        let hinted = self.hinted_many_blockers(&to_count).await;
        let blocked_unread: Vec<i64> = to_count
            .into_iter()
            .filter(|u| !hinted.contains(u))
            .collect();
        // Who blocked a user is read whole only while few: one more than
        // that says there are too many.
        let read_whole = self.ctx.settings.blockers_read_whole;
        let muted_by = set_ids(&|k| match k {
            SetKey::Muted(u) => Some(*u),
            _ => None,
        });
        let hidden_from = set_ids(&|k| match k {
            SetKey::HiddenBy(u) => Some(*u),
            _ => None,
        });
        let shared_posts = set_ids(&|k| match k {
            SetKey::PostShares(p) => Some(*p),
            _ => None,
        });
        let mut label_ids: Vec<(i64, i64)> = sets
            .iter()
            .filter_map(|s| match s.key {
                SetKey::LabelMembers(owner, label) => Some((owner, label)),
                _ => None,
            })
            .collect();
        label_ids.sort_unstable();
        label_ids.dedup();
        let calls = [
            !post_ids.is_empty(),
            !comment_ids.is_empty(),
            !user_ids.is_empty(),
            !liked_posts.is_empty(),
            !commented_posts.is_empty(),
            !liked_comments.is_empty(),
            !replied_comments.is_empty(),
            !followers_of.is_empty(),
            !blocking_of.is_empty(),
            !muted_by.is_empty(),
            !label_ids.is_empty(),
            !shared_posts.is_empty(),
            !viewed_posts.is_empty(),
        ];
        self.doc_round_trips +=
            calls.iter().filter(|c| **c).count() as u32 + blocked_unread.len() as u32;
        let (
            posts,
            comments,
            users,
            post_likes,
            post_comments,
            comment_likes,
            replies,
            follows,
            blocks,
            blockers,
            mutes,
            labels,
            shares,
            view_counts,
        ) = tokio::try_join!(
            docs.posts_by_ids(&post_ids),
            docs.comments_by_ids(&comment_ids),
            docs.users_by_ids(&user_ids),
            rebuilds.likes_of_targets(docs, LikeKind::Post, &liked_posts),
            rebuilds.comment_ids_of_posts(docs, &commented_posts),
            rebuilds.likes_of_targets(docs, LikeKind::Comment, &liked_comments),
            rebuilds.reply_ids_of_comments(docs, &replied_comments),
            docs.follows_from(&followers_of),
            docs.blocks_by(&blocking_of),
            futures_util::future::try_join_all(
                blocked_unread
                    .iter()
                    .map(|u| docs.blockers_of(*u, read_whole + 1))
            ),
            docs.filters_set_by(FilterKind::Mute, &muted_by),
            docs.labels_by_ids(&label_ids),
            rebuilds.share_ids_of_posts(docs, &shared_posts),
            docs.view_counts(&viewed_posts),
        )?;
        let followees_of = |u: i64| -> Vec<i64> {
            follows
                .iter()
                .filter(|f| f.follower == u)
                .map(|f| f.followee)
                .collect()
        };
        let mut hides = Vec::new();
        for u in &hidden_from {
            let followees = followees_of(*u);
            self.doc_round_trips += u32::from(!followees.is_empty());
            hides.extend(
                docs.filters_on_from(FilterKind::Hide, *u, &followees)
                    .await?,
            );
        }
        // Friends are the followees who follow back: one more query per user
        // asked for (a request asks for its viewer's only).
        let mut friends: Vec<(i64, i64, i64)> = Vec::new();
        for u in &friends_of {
            let followees: Vec<(i64, i64)> = follows
                .iter()
                .filter(|f| f.follower == *u)
                .map(|f| (f.followee, f.id))
                .collect();
            let ids: Vec<i64> = followees.iter().map(|f| f.0).collect();
            self.doc_round_trips += u32::from(!ids.is_empty());
            let (_, back) = docs.follow_edges(*u, &ids).await?;
            friends.extend(
                followees
                    .into_iter()
                    .filter(|(f, _)| back.contains(f))
                    .map(|(f, edge)| (*u, f, edge)),
            );
        }

        // Rebuilt values kept in the near cache, as of the generation read
        // before the documents were.
        let mut near_blobs: Vec<(BlobKey, Arc<str>)> = Vec::new();
        let mut put = |key: BlobKey, text: String, guard: Option<u64>, out: &mut Loaded| {
            let text: Arc<str> = Arc::from(text);
            self.fill.blobs.push((key, text.to_string(), guard));
            near_blobs.push((key, text.clone()));
            out.blobs.insert(key, text);
        };
        for p in posts {
            let key = BlobKey::PostBody(p.id);
            let guard = self.gens.get(&key.owner()).copied();
            if let Some(g) = guard {
                put(key, to_json(&PostBody::from(p))?, Some(g), out);
            } else {
                out.blobs
                    .insert(key, Arc::from(to_json(&PostBody::from(p))?));
            }
        }
        for (post, n) in view_counts {
            let key = BlobKey::ViewCount(post);
            let guard = self.gens.get(&key.owner()).copied();
            put(key, n.to_string(), guard, out);
        }
        for c in comments {
            // Comment bodies never change (deletion removes them from the
            // comment set instead), so they are written unguarded.
            let key = BlobKey::CommentBody(c.post_id, c.id);
            if blobs.contains(&key) {
                put(key, to_json(&c)?, None, out);
            }
        }
        // An erased or suspended account has no card: reads leave out what
        // it did, and its profile is not found. A suspension's end needs no
        // write: the first read after it finds the account whole again.
        let now = crate::ids::now_ms();
        for u in users.into_iter().filter(|u| !u.is_withheld(now)) {
            let key = BlobKey::Card(u.uid);
            let card = to_json(&u.cached_card())?;
            match self.gens.get(&key.owner()).copied() {
                Some(g) => put(key, card, Some(g), out),
                None => {
                    out.blobs.insert(key, Arc::from(card));
                }
            }
        }
        for (key, text) in near_blobs {
            self.keep_near(key.owner(), NearValue::Blob(key, text));
        }

        let mut members: HashMap<SetKey, Vec<(i64, i64)>> = HashMap::new();
        let wanted: HashSet<SetKey> = sets.iter().map(|s| s.key).collect();
        let like_member = |l: &LikeDoc| (l.uid, l.id);
        // Sets rebuilt from a read another request ran are written back by
        // that request: one write of a viral post's likers, not one per reader.
        let followed = |key: &SetKey| match key {
            SetKey::PostLikers(_) => !post_likes.led,
            SetKey::PostComments(_) => !post_comments.led,
            SetKey::CommentLikers(..) => !comment_likes.led,
            SetKey::CommentReplies(..) => !replies.led,
            SetKey::PostShares(_) => !shares.led,
            _ => false,
        };
        for l in post_likes.value.iter() {
            members
                .entry(SetKey::PostLikers(l.target_id))
                .or_default()
                .push(like_member(l));
        }
        for &(post, cid) in post_comments.value.iter() {
            members
                .entry(SetKey::PostComments(post))
                .or_default()
                .push((cid, cid));
        }
        // Comment-level sets are keyed under their post; map comment → post
        // from what was asked for.
        let comment_post: HashMap<i64, i64> = sets
            .iter()
            .filter_map(|s| match s.key {
                SetKey::CommentLikers(p, c) | SetKey::CommentReplies(p, c) => Some((c, p)),
                _ => None,
            })
            .collect();
        for l in comment_likes.value.iter() {
            if let Some(p) = comment_post.get(&l.target_id) {
                members
                    .entry(SetKey::CommentLikers(*p, l.target_id))
                    .or_default()
                    .push(like_member(l));
            }
        }
        for &(parent, reply) in replies.value.iter() {
            if let Some(p) = comment_post.get(&parent) {
                members
                    .entry(SetKey::CommentReplies(*p, parent))
                    .or_default()
                    .push((reply, reply));
            }
        }
        for f in &follows {
            members
                .entry(SetKey::Following(f.follower))
                .or_default()
                .push((f.followee, f.id));
        }
        for (u, friend, edge) in friends {
            members
                .entry(SetKey::Friends(u))
                .or_default()
                .push((friend, edge));
        }
        for b in &blocks {
            members
                .entry(SetKey::Blocking(b.blocker))
                .or_default()
                .push((b.blocked, b.id));
        }
        // Those blocked by more than are read whole: not built (a set is
        // whole or absent), and the people asked about are looked up
        // instead, each read by the blockers' own shard.
        let mut too_many: HashMap<SetKey, HashSet<i64>> = HashMap::new();
        let mut just_read: HashMap<i64, Vec<crate::store::BlockDoc>> =
            blocked_unread.iter().copied().zip(blockers).collect();
        for u in &blocked_of {
            let key = SetKey::BlockedBy(*u);
            let counted = just_read.remove(u);
            let many = match &counted {
                Some(found) => found.len() > read_whole,
                None => true,
            };
            let found = counted
                .or_else(|| self.blocked_by_many.get(u).cloned())
                .unwrap_or_default();
            if many {
                if !self.blocked_by_many.contains_key(u) && !hinted.contains(u) {
                    self.write_back(BlobKey::ManyBlockers(*u), "1".into());
                }
                self.blocked_by_many.insert(*u, found.clone());
                let asked: Vec<i64> = sets
                    .iter()
                    .filter(|s| s.key == key)
                    .filter_map(|s| s.probe)
                    .collect();
                self.doc_round_trips += u32::from(!asked.is_empty());
                let among = docs.blockers_among(*u, &asked).await?;
                too_many.insert(key, among.into_iter().collect());
            }
            members
                .entry(key)
                .or_default()
                .extend(found.iter().map(|b| (b.blocker, b.id)));
        }
        for f in &mutes {
            members
                .entry(SetKey::Muted(f.uid))
                .or_default()
                .push((f.other, f.id));
        }
        for f in &hides {
            members
                .entry(SetKey::HiddenBy(f.other))
                .or_default()
                .push((f.uid, f.id));
        }
        for &(post, share) in shares.value.iter() {
            members
                .entry(SetKey::PostShares(post))
                .or_default()
                .push((share, share));
        }
        for l in &labels {
            members.insert(
                SetKey::LabelMembers(l.owner, l.id),
                l.members.iter().map(|m| (*m, 0)).collect(),
            );
        }
        // A key may be asked for more than once in one call; fill it once.
        let mut filled: HashSet<SetKey> = HashSet::new();
        for read in sets {
            if let SetKey::Home(_) = read.key {
                // Timelines are rebuilt by the timeline service, which knows
                // the followees; an empty one must never be stored here.
                out.sets.insert(read.key, SetView::default());
                continue;
            }
            let m = members.get(&read.key).cloned().unwrap_or_default();
            if let Some(blockers) = too_many.get(&read.key) {
                let view = SetView {
                    // More than are read whole, whatever of them was read.
                    count: (read_whole as u64 + 1).max(m.len() as u64),
                    probe_score: read.probe.filter(|p| blockers.contains(p)),
                    top: m.into_iter().take(read.top).collect(),
                };
                out.put_set(read, view);
                continue;
            }
            if let (true, Some(g)) = (wanted.contains(&read.key), self.guard(read.key.owner())) {
                if self.live_ok && !followed(&read.key) && filled.insert(read.key) {
                    self.fill.sets.push((read.key, m.clone(), g));
                }
            }
            if self.ctx.near.is_on() && self.guard(read.key.owner()).is_some() {
                // The set as rebuilt, whole or its newest members.
                let kept = SetRead {
                    top: read.top.max(NEAR_SET_MEMBERS),
                    probe: None,
                    ..*read
                };
                self.keep_set_near(read.key, &view_of(m.clone(), &kept));
            }
            out.put_set(read, view_of(m, read));
        }
        if !self.live_ok {
            self.fill = LiveFill::default();
        }
        Ok(())
    }

    /// Which of these users a rebuild found blocked by too many to read
    /// whole (`BlobKey::ManyBlockers`); none when the live store fails.
    async fn hinted_many_blockers(&mut self, uids: &[i64]) -> HashSet<i64> {
        if uids.is_empty() || !self.live_ok {
            return HashSet::new();
        }
        let read = LiveRead {
            blobs: uids.iter().map(|u| BlobKey::ManyBlockers(*u)).collect(),
            ..Default::default()
        };
        self.live_round_trips += 1;
        match self.ctx.live.read(&read).await {
            Ok(answer) => uids
                .iter()
                .zip(answer.blobs)
                .filter(|(_, hint)| hint.is_some())
                .map(|(u, _)| *u)
                .collect(),
            Err(_) => HashSet::new(),
        }
    }

    /// Writes what was rebuilt back to the live store, off the request's path.
    pub fn finish(self, what: &'static str) {
        tracing::debug!(
            what,
            live_round_trips = self.live_round_trips,
            doc_round_trips = self.doc_round_trips,
            "store round trips"
        );
        if self.fill.is_empty() || !self.live_ok || in_bulk() {
            return;
        }
        let live: Arc<dyn LiveStore> = self.ctx.live.clone();
        let fill = self.fill;
        tokio::spawn(async move {
            let r: StoreResult<()> = live.fill(&fill).await;
            if let Err(e) = r {
                tracing::warn!(error = %e, "writing rebuilt live state failed");
            }
        });
    }
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> AppResult<String> {
    serde_json::to_string(v).map_err(|e| crate::error::AppError::Internal(e.into()))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> AppResult<T> {
    serde_json::from_str(s).map_err(|e| crate::error::AppError::Internal(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilt_views_order_newest_first_and_probe_the_viewer() {
        let read = SetRead {
            key: SetKey::PostLikers(1),
            top: 2,
            probe: Some(7),
            below: None,
        };
        let v = view_of(vec![(5, 100), (7, 300), (9, 200)], &read);
        assert_eq!(v.count, 3);
        assert_eq!(v.top, vec![(7, 300), (9, 200)]);
        assert_eq!(v.probe_score, Some(300));
        let none = view_of(vec![], &read);
        assert_eq!((none.count, none.probe_score), (0, None));
    }
}
