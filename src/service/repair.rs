//! Keeps the promise "a write whose live step failed still succeeds, and the
//! stale live keys are dropped": failed changes are remembered here and a
//! background task keeps trying to drop their keys until the store answers.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::store::{LiveChange, LiveKey, LiveStore, Owner};

#[derive(Default)]
pub struct LiveRepair {
    pending: Mutex<HashMap<Owner, HashSet<LiveKey>>>,
}

impl LiveRepair {
    /// Applies changes after a document write; never fails the write.
    /// Returns false when the live state could not be updated: until its keys
    /// are dropped, reads of those owners bypass the live store.
    pub async fn apply(
        &self,
        live: &dyn LiveStore,
        changes: Vec<(Owner, Vec<LiveChange>)>,
    ) -> bool {
        if changes.is_empty() {
            return true;
        }
        let Err(e) = live.apply(&changes).await else {
            return true;
        };
        tracing::warn!(error = %e, "live update failed; its keys will be dropped when the store answers");
        if let Ok(mut pending) = self.pending.lock() {
            for (owner, list) in changes {
                pending
                    .entry(owner)
                    .or_default()
                    .extend(list.iter().map(|c| c.key()));
            }
        }
        false
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

    /// One pass: drops what it can, keeps the rest for the next pass.
    pub async fn drain(&self, live: &dyn LiveStore) {
        let batch: Vec<(Owner, Vec<LiveKey>)> = match self.pending.lock() {
            Ok(mut p) => p
                .drain()
                .map(|(o, k)| (o, k.into_iter().collect()))
                .collect(),
            Err(_) => return,
        };
        for (owner, keys) in batch {
            if live.drop_keys(owner, &keys).await.is_err() {
                if let Ok(mut p) = self.pending.lock() {
                    p.entry(owner).or_default().extend(keys);
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
