//! Keeps the promise "a write whose live step failed still succeeds, and the
//! stale live keys are dropped": failed changes are remembered here and a
//! background task keeps trying to drop their keys until the store answers.
//! Until then, reads of those owners bypass the live store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store::{Changes, LiveKey, LiveStore, Owner};

#[derive(Default)]
pub struct LiveRepair {
    pending: Mutex<HashMap<Owner, HashSet<LiveKey>>>,
}

impl LiveRepair {
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
        self.defer(changes);
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
    /// (the caller just saw it fail): reads bypass them until they are dropped.
    pub fn defer(&self, changes: Vec<Changes>) {
        if let Ok(mut pending) = self.pending.lock() {
            for batch in changes {
                pending
                    .entry(batch.owner)
                    .or_default()
                    .extend(batch.changes.iter().map(|c| c.key()));
            }
        }
    }

    /// Whether some of this owner's live keys may be stale.
    pub fn is_pending(&self, owner: Owner) -> bool {
        self.pending
            .lock()
            .map(|p| p.contains_key(&owner))
            .unwrap_or(true)
    }

    pub fn pending_count(&self) -> usize {
        self.pending.lock().map(|p| p.len()).unwrap_or(0)
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
            }
        }
    }

    pub fn spawn(self: &Arc<Self>, live: Arc<dyn LiveStore>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tick.tick().await;
                if me.pending_count() > 0 {
                    me.drain(live.as_ref()).await;
                }
            }
        })
    }
}
