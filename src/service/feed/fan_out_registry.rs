//! Fan-outs in flight, and those an instance left unfinished.
//!
//! A fan-out (`fan_out`) pushes a new post into the home timelines of the
//! author's followers, in the background, after the post was acknowledged.
//! A timeline it has not reached yet exists without the post and is not
//! rebuilt, so a fan-out that is simply dropped leaves a gap until that
//! timeline expires. Every fan-out therefore runs registered here with how
//! far it got. A stopping instance waits for them until its deadline and
//! saves each one left as a `FanOutDoc`; so does a fan-out that a store
//! failure stopped. The sweep of every instance (at start-up and every few
//! minutes) claims saved fan-outs, for a while, so that one instance runs
//! each, and resumes them. Pushes add a post id to a set, so running part
//! of a fan-out twice is harmless.
//!
//! On the in-process live store a restart starts with no timelines at all:
//! every one is rebuilt from the documents, new posts included, and a
//! resumed fan-out finds nothing to push to. It runs anyway, so that every
//! backend takes one path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

use super::fan_out;
use crate::error::AppResult;
use crate::ids::now_ms;
use crate::metrics::FanOutInFlight;
use crate::service::Context;
use crate::store::{DocStore, FanOutDoc};

/// How long a claim lasts: a resumed fan-out whose instance died is resumed
/// by another after this. One that runs longer may be resumed twice, which
/// is harmless.
const CLAIM_MS: i64 = 10 * 60 * 1000;
/// Saved fan-outs claimed per sweep.
const CLAIMED_PER_SWEEP: usize = 64;
/// Resumed fan-outs running at once, so that a start-up after a crowded
/// shutdown does not compete with requests all at once.
const RESUMED_AT_ONCE: usize = 4;
/// How long a stopping instance gives the stopped fan-outs' saves.
const SAVING_WITHIN: Duration = Duration::from_secs(5);

pub struct FanOutRegistry {
    /// Where fan-outs run: the runtime that built the application, which
    /// lasts until the process ends, not the HTTP worker that published
    /// the post, whose runtime ends (cancelling what it runs) when the
    /// server stops.
    runtime: tokio::runtime::Handle,
    registry: Mutex<Registry>,
    /// Told whenever a fan-out or a claim ends.
    ended: Notify,
    resume_turns: Arc<Semaphore>,
}

#[derive(Default)]
struct Registry {
    /// Set when the instance starts stopping: nothing more is claimed.
    stopping: bool,
    next_id: u64,
    running: HashMap<u64, Running>,
    /// Sweeps claiming saved fan-outs now; what they claim is registered
    /// before they end.
    claiming: usize,
    /// Fan-outs that ran to their end (or failed and were saved).
    finished: u64,
}

struct Running {
    /// What is left of it: its plan, moved on as pages of followers land.
    left: FanOutDoc,
    task: Option<JoinHandle<()>>,
}

/// What stopping did to the fan-outs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Ran to their end while the instance waited.
    pub finished: u64,
    /// Cut short and saved, to be resumed.
    pub saved: usize,
    /// Cut short and not saved: their followers not yet reached see the
    /// post once their timelines are rebuilt.
    pub lost: usize,
}

/// A registered fan-out, for the task that runs it: its entry goes when
/// the task ends however it ends (done, failed, or aborted by a stopping
/// instance), and with it its count in `moments_fan_outs_in_flight`.
struct Entry {
    fan_outs: Arc<FanOutRegistry>,
    id: u64,
    _in_flight: FanOutInFlight,
}

impl Entry {
    fn reached(&self, edge: i64) {
        if let Some(r) = self.fan_outs.registry().running.get_mut(&self.id) {
            r.left.resume_before = Some(edge);
        }
    }

    fn left(&self) -> Option<FanOutDoc> {
        let registry = self.fan_outs.registry();
        registry.running.get(&self.id).map(|r| r.left.clone())
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        {
            let mut registry = self.fan_outs.registry();
            // Absent: a stopping instance took it over to save it.
            if registry.running.remove(&self.id).is_some() {
                registry.finished += 1;
            }
        }
        self.fan_outs.ended.notify_waiters();
    }
}

/// A sweep claiming saved fan-outs, counted while it does.
struct Claiming<'a>(&'a FanOutRegistry);

impl Drop for Claiming<'_> {
    fn drop(&mut self) {
        self.0.registry().claiming -= 1;
        self.0.ended.notify_waiters();
    }
}

impl FanOutRegistry {
    /// Fan-outs will run on `runtime`.
    pub fn new(runtime: tokio::runtime::Handle) -> Self {
        Self {
            runtime,
            registry: Mutex::default(),
            ended: Notify::new(),
            resume_turns: Arc::new(Semaphore::new(RESUMED_AT_ONCE)),
        }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // No code panics while holding it; what a panic left is still whole.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fan-outs registered now.
    pub fn running(&self) -> usize {
        self.registry().running.len()
    }

    /// Runs what is left of `plan` in the background, registered.
    /// `resumed`: it was claimed from the saved ones, so it waits its turn
    /// among them and its record is deleted once it ends.
    pub fn start(self: &Arc<Self>, ctx: &Context, plan: FanOutDoc, resumed: bool) {
        let id = {
            let mut registry = self.registry();
            registry.next_id += 1;
            let id = registry.next_id;
            registry.running.insert(
                id,
                Running {
                    left: plan.clone(),
                    task: None,
                },
            );
            id
        };
        let entry = Entry {
            fan_outs: self.clone(),
            id,
            _in_flight: FanOutInFlight::start(),
        };
        let ctx = ctx.clone();
        let turns = resumed.then(|| self.resume_turns.clone());
        let task = self.runtime.spawn(async move {
            let _turn = match turns {
                Some(t) => t.acquire_owned().await.ok(),
                None => None,
            };
            let run = fan_out::push_remaining(&ctx, &plan, fan_out::FAN_OUT_PAGE, |edge| {
                entry.reached(edge)
            })
            .await;
            match run {
                Ok(_) if resumed => {
                    if let Err(e) = ctx.docs.delete_fan_out(plan.post_id).await {
                        tracing::debug!(post_id = plan.post_id, error = %e, "could not delete a resumed fan-out's record; it runs once more when its claim lapses");
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    crate::metrics::fan_out_failed();
                    let left = entry.left().unwrap_or(plan);
                    let post_id = left.post_id;
                    match save(ctx.docs.as_ref(), left).await {
                        Ok(()) => tracing::warn!(post_id, error = %e, "fan-out stopped; saved where it got to, for a sweep to resume"),
                        Err(save_error) => tracing::warn!(post_id, error = %e, %save_error, "fan-out stopped and could not be saved: the followers not yet reached see the post once their timelines are rebuilt"),
                    }
                }
            }
            drop(entry);
        });
        if let Some(r) = self.registry().running.get_mut(&id) {
            r.task = Some(task);
        }
    }

    /// Stops claiming saved fan-outs, waits for the running ones until
    /// `deadline`, then aborts those left and saves each where it got to.
    pub async fn stop(&self, docs: &dyn DocStore, deadline: tokio::time::Instant) -> Stopped {
        let finished_before = {
            let mut registry = self.registry();
            registry.stopping = true;
            registry.finished
        };
        loop {
            let ended = self.ended.notified();
            {
                let registry = self.registry();
                if registry.running.is_empty() && registry.claiming == 0 {
                    break;
                }
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                break;
            }
        }
        let (left, finished) = {
            let mut registry = self.registry();
            let left: Vec<Running> = registry.running.drain().map(|(_, r)| r).collect();
            (left, registry.finished - finished_before)
        };
        let mut tasks = Vec::new();
        let mut plans = Vec::new();
        for r in left {
            if let Some(task) = r.task {
                task.abort();
                tasks.push(task);
            }
            plans.push(r.left);
        }
        // Aborted at their next await; none pushes after this.
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            futures_util::future::join_all(tasks),
        )
        .await;
        let saves = futures_util::future::join_all(plans.iter().map(|plan| async move {
            let saved = save(docs, plan.clone()).await;
            if let Err(e) = &saved {
                tracing::error!(post_id = plan.post_id, error = %e, "could not save an unfinished fan-out: the followers not yet reached see the post once their timelines are rebuilt");
            }
            saved.is_ok()
        }));
        let saved = match tokio::time::timeout(SAVING_WITHIN, saves).await {
            Ok(results) => results.into_iter().filter(|ok| *ok).count(),
            Err(_) => {
                tracing::error!(
                    fan_outs = plans.len(),
                    "saving unfinished fan-outs timed out: the followers not yet reached see \
                     their posts once their timelines are rebuilt"
                );
                0
            }
        };
        Stopped {
            finished,
            saved,
            lost: plans.len() - saved,
        }
    }
}

async fn save(docs: &dyn DocStore, left: FanOutDoc) -> crate::store::StoreResult<()> {
    let doc = FanOutDoc {
        saved_at: now_ms(),
        claimed_until: 0,
        ..left
    };
    docs.save_fan_out(&doc).await
}

/// Claims saved fan-outs and resumes them: part of the sweep, on every
/// instance, and so of every start-up. Returns how many it claimed.
pub async fn resume_saved(ctx: &Context) -> AppResult<usize> {
    let fan_outs = &ctx.fan_outs;
    {
        let mut registry = fan_outs.registry();
        if registry.stopping {
            return Ok(0);
        }
        registry.claiming += 1;
    }
    let _claiming = Claiming(fan_outs);
    let now = now_ms();
    let claimed = ctx
        .docs
        .claim_fan_outs(now, now + CLAIM_MS, CLAIMED_PER_SWEEP)
        .await?;
    let n = claimed.len();
    if n > 0 {
        tracing::info!(
            fan_outs = n,
            "resuming fan-outs an instance left unfinished"
        );
    }
    for plan in claimed {
        fan_outs.start(ctx, plan, true);
    }
    Ok(n)
}
