//! Keeps the promise "a write whose live step failed still succeeds, and the
//! stale live keys are dropped": failed changes are remembered here and a
//! background task keeps trying to drop their keys until the store answers.
//! Until then, reads of those owners bypass the live store.
//!
//! With a live store other processes share (Redis), one instance's failure
//! is every instance's business: B, whose Redis works, would otherwise
//! serve the block, unfollow or delete that A could not apply. So the list
//! is also kept in the documents (`LiveRepairDocs`), where it survives a
//! restart, and every instance reads it every [`POLL_EVERY`]. The promise
//! to readers is exact, not "eventually":
//! - an instance serves from the live store only while its copy of the list
//!   was read less than [`VIEW_MAX_AGE`] ago (counting from when the read
//!   began); older, it treats every owner as stale and reads the documents;
//! - a write whose live step failed saves the keys to the list and only then
//!   waits [`VIEW_MAX_AGE`] plus one poll before it answers.
//!
//! So any read that starts after the answer runs on a copy read after the
//! save, which names the keys. The wait costs only writes that found the
//! live store failing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ids::{next_id, now_ms};
use crate::store::{Changes, DocStore, LiveKey, LiveRepairDoc, LiveStore, Owner};

/// How often each instance reads the shared list.
pub const POLL_EVERY: Duration = Duration::from_millis(100);
/// How old a copy of the shared list may be and still be trusted.
pub const VIEW_MAX_AGE: Duration = Duration::from_millis(500);
/// Records read per poll (a record per owner per failed save). A list that
/// long means the live store is failing wholesale: every owner then counts
/// as stale, and reads fall back to the documents until it is drained.
const LIST_LIMIT: usize = 10_000;

/// The owners pending at one moment (`LiveRepair::pending_now`).
#[derive(Debug, Default, Clone)]
pub struct PendingNow {
    /// The shared list could not be trusted: every owner counts as pending.
    every: bool,
    owners: HashSet<Owner>,
}

impl PendingNow {
    fn every() -> Self {
        PendingNow {
            every: true,
            owners: HashSet::new(),
        }
    }

    pub fn contains(&self, owner: Owner) -> bool {
        self.every || (!self.owners.is_empty() && self.owners.contains(&owner))
    }
}

#[derive(Default)]
pub struct LiveRepair {
    /// This instance's failures, in effect at once.
    pending: Mutex<HashMap<Owner, HashSet<LiveKey>>>,
    shared: Option<Shared>,
}

struct Shared {
    docs: Arc<dyn DocStore>,
    view: Mutex<View>,
    /// Failures not yet in the shared list (its save failed, or they came
    /// from a caller that does not wait): saved by the next poll.
    unsaved: Mutex<Vec<(Owner, Vec<LiveKey>)>>,
}

#[derive(Default)]
struct View {
    /// Owner → its keys, from every record of it, and those records' ids.
    owners: HashMap<Owner, (Vec<LiveKey>, Vec<String>)>,
    /// When the read behind `owners` began; `None` before the first.
    read_at: Option<Instant>,
    /// The read stopped at [`LIST_LIMIT`] records: owners past it are not
    /// in `owners`, so every owner counts as stale.
    truncated: bool,
}

fn keys_of(changes: &[Changes]) -> Vec<(Owner, Vec<LiveKey>)> {
    changes
        .iter()
        .map(|batch| (batch.owner, batch.changes.iter().map(|c| c.key()).collect()))
        .collect()
}

impl LiveRepair {
    /// A repair list shared through the documents, for a live store that
    /// other processes use too.
    pub fn shared(docs: Arc<dyn DocStore>) -> Self {
        Self {
            pending: Mutex::default(),
            shared: Some(Shared {
                docs,
                view: Mutex::default(),
                unsaved: Mutex::default(),
            }),
        }
    }

    /// Applies changes after a document write; never fails the write.
    /// Returns false when the live state could not be updated.
    pub async fn apply(&self, live: &dyn LiveStore, changes: Vec<Changes>) -> bool {
        if changes.is_empty() {
            return true;
        }
        let Err(e) = live.apply(&changes).await else {
            return true;
        };
        tracing::warn!(error = %e, "live update failed; its keys will be dropped when the store answers");
        let keys = keys_of(&changes);
        self.defer_local(&keys);
        if let Some(shared) = &self.shared {
            match shared.save(&keys).await {
                // Every other instance's copy of the list is now either
                // younger than the save, or too old to be trusted.
                Ok(()) => tokio::time::sleep(VIEW_MAX_AGE + POLL_EVERY).await,
                Err(e) => {
                    tracing::warn!(error = %e, "saving stale live keys to the shared list failed; retrying in the background");
                    shared.queue(keys);
                }
            }
        }
        false
    }

    /// `apply` for one owner's changes that need no ordering (whole values,
    /// drops, last-writer-wins sets).
    pub async fn apply_unordered(
        &self,
        live: &dyn LiveStore,
        owner: Owner,
        changes: Vec<crate::store::LiveChange>,
    ) -> bool {
        self.apply(
            live,
            vec![Changes {
                owner,
                expected_gen: None,
                changes,
            }],
        )
        .await
    }

    /// Marks these changes' keys stale without trying the store first
    /// (the caller just saw it fail): reads here bypass them at once, other
    /// instances' after the next poll saves them.
    pub fn defer(&self, changes: Vec<Changes>) {
        let keys = keys_of(&changes);
        self.defer_local(&keys);
        if let Some(shared) = &self.shared {
            shared.queue(keys);
        }
    }

    fn defer_local(&self, keys: &[(Owner, Vec<LiveKey>)]) {
        if let Ok(mut pending) = self.pending.lock() {
            for (owner, ks) in keys {
                pending
                    .entry(*owner)
                    .or_default()
                    .extend(ks.iter().copied());
            }
        }
    }

    /// Whether some of this owner's live keys may be stale.
    pub fn is_pending(&self, owner: Owner) -> bool {
        let here = self
            .pending
            .lock()
            .map(|p| p.contains_key(&owner))
            .unwrap_or(true);
        here || self.shared.as_ref().is_some_and(|s| s.is_pending(owner))
    }

    /// Which owners are pending now, taken once for a batch of checks
    /// (`is_pending` takes two locks and reads the clock per owner).
    pub fn pending_now(&self) -> PendingNow {
        let mut owners: HashSet<Owner> = match self.pending.lock() {
            Ok(p) => p.keys().copied().collect(),
            Err(_) => return PendingNow::every(),
        };
        if let Some(shared) = &self.shared {
            let Ok(view) = shared.view.lock() else {
                return PendingNow::every();
            };
            let fresh = view.read_at.is_some_and(|at| at.elapsed() < VIEW_MAX_AGE);
            if !fresh || view.truncated {
                return PendingNow::every();
            }
            owners.extend(view.owners.keys().copied());
        }
        PendingNow {
            every: false,
            owners,
        }
    }

    pub fn pending_count(&self) -> usize {
        let here = self.pending.lock().map(|p| p.len()).unwrap_or(0);
        let shared = self.shared.as_ref().map_or(0, |s| {
            s.view.lock().map(|v| v.owners.len()).unwrap_or(0)
                + s.unsaved.lock().map(|u| u.len()).unwrap_or(0)
        });
        here + shared
    }

    /// Reads the shared list (and saves what is waiting to be): what the
    /// background task does every poll, and start-up does once before the
    /// first request.
    pub async fn poll(&self) {
        if let Some(shared) = &self.shared {
            shared.poll().await;
        }
    }

    /// One pass: drops what it can, keeps the rest for the next pass. An
    /// owner stays pending until its keys are gone, so no read sees them in
    /// between.
    pub async fn drain(&self, live: &dyn LiveStore) {
        let batch: Vec<(Owner, Vec<LiveKey>)> = match self.pending.lock() {
            Ok(p) => p
                .iter()
                .map(|(o, k)| (*o, k.iter().copied().collect()))
                .collect(),
            Err(_) => return,
        };
        for (owner, keys) in batch {
            if live.drop_keys(owner, &keys).await.is_ok() {
                if let Ok(mut p) = self.pending.lock() {
                    // Keys added by a failure during this pass stay pending.
                    if let Some(left) = p.get_mut(&owner) {
                        left.retain(|k| !keys.contains(k));
                        if left.is_empty() {
                            p.remove(&owner);
                        }
                    }
                }
                // Dropped: no other instance needs to hear of them now.
                if let Some(shared) = &self.shared {
                    shared.forget_unsaved(owner, &keys);
                }
            }
        }
        if let Some(shared) = &self.shared {
            shared.drain(live).await;
        }
    }

    pub fn spawn(self: &Arc<Self>, live: Arc<dyn LiveStore>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        super::spawn_every(POLL_EVERY, move || {
            let (me, live) = (me.clone(), live.clone());
            async move {
                me.poll().await;
                if me.pending_count() > 0 {
                    me.drain(live.as_ref()).await;
                }
            }
        })
    }
}

impl Shared {
    /// One record per owner: a save's records are named by owner and mark.
    async fn save(&self, keys: &[(Owner, Vec<LiveKey>)]) -> crate::store::StoreResult<()> {
        let mut merged: Vec<(Owner, Vec<LiveKey>)> = Vec::new();
        for (owner, ks) in keys {
            match merged.iter_mut().find(|(o, _)| o == owner) {
                Some((_, into)) => {
                    for k in ks {
                        if !into.contains(k) {
                            into.push(*k);
                        }
                    }
                }
                None => merged.push((*owner, ks.clone())),
            }
        }
        self.docs
            .save_live_repairs(&merged, next_id(), now_ms())
            .await
    }

    fn queue(&self, keys: Vec<(Owner, Vec<LiveKey>)>) {
        if let Ok(mut u) = self.unsaved.lock() {
            u.extend(keys);
        }
    }

    fn forget_unsaved(&self, owner: Owner, dropped: &[LiveKey]) {
        if let Ok(mut u) = self.unsaved.lock() {
            for (o, keys) in u.iter_mut() {
                if *o == owner {
                    keys.retain(|k| !dropped.contains(k));
                }
            }
            u.retain(|(_, keys)| !keys.is_empty());
        }
    }

    fn is_pending(&self, owner: Owner) -> bool {
        let Ok(view) = self.view.lock() else {
            return true;
        };
        let fresh = view.read_at.is_some_and(|at| at.elapsed() < VIEW_MAX_AGE);
        !fresh || view.truncated || view.owners.contains_key(&owner)
    }

    async fn poll(&self) {
        let unsaved = match self.unsaved.lock() {
            Ok(mut u) => std::mem::take(&mut *u),
            Err(_) => Vec::new(),
        };
        if !unsaved.is_empty() {
            if let Err(e) = self.save(&unsaved).await {
                tracing::warn!(error = %e, "saving stale live keys to the shared list failed");
                self.queue(unsaved);
            }
        }
        let began = Instant::now();
        match self.docs.live_repairs(LIST_LIMIT).await {
            Ok(docs) => {
                let owners = by_owner(&docs);
                if let Ok(mut view) = self.view.lock() {
                    *view = View {
                        owners,
                        read_at: Some(began),
                        truncated: docs.len() >= LIST_LIMIT,
                    };
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the shared list of stale live keys failed")
            }
        }
    }

    async fn drain(&self, live: &dyn LiveStore) {
        let owners: Vec<(Owner, Vec<LiveKey>, Vec<String>)> = match self.view.lock() {
            Ok(v) => v
                .owners
                .iter()
                .map(|(o, (k, ids))| (*o, k.clone(), ids.clone()))
                .collect(),
            Err(_) => return,
        };
        for (owner, keys, ids) in owners {
            if live.drop_keys(owner, &keys).await.is_err() {
                continue;
            }
            if self.docs.finish_live_repairs(&ids).await.is_ok() {
                if let Ok(mut v) = self.view.lock() {
                    // Unless a poll since found more records of it.
                    if v.owners.get(&owner).is_some_and(|(_, seen)| *seen == ids) {
                        v.owners.remove(&owner);
                    }
                }
            }
        }
    }
}

/// The records as each owner's keys and record ids. A key code this
/// version cannot read (a kind a newer version added) is skipped, and so
/// is an owner code.
fn by_owner(docs: &[LiveRepairDoc]) -> HashMap<Owner, (Vec<LiveKey>, Vec<String>)> {
    let mut owners: HashMap<Owner, (Vec<LiveKey>, Vec<String>)> = HashMap::new();
    for doc in docs {
        let Some(owner) = Owner::from_code(doc.owner_code()) else {
            continue;
        };
        let (keys, ids) = owners.entry(owner).or_default();
        for key in doc.keys.iter().filter_map(|c| LiveKey::from_code(owner, c)) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        ids.push(doc.id.clone());
    }
    owners
}
