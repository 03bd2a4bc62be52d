//! The import job every instance runs: it claims queued imports (and
//! running ones whose instance stopped renewing its claim) and applies
//! their steps (the removes, then the adds) in order from where the last
//! run got to, each step as the
//! account would do it by hand. A step done twice is done once (a follow
//! that exists is a follow), so a run taken over may redo the step it was
//! cut in. A step the account may no longer take (someone blocked it
//! since the preview) is skipped and counted; a store failure ends the run
//! for the next attempt to go on from, up to `MAX_ATTEMPTS`. A stopping
//! instance hands its runs over at their last recorded step; a dead one's
//! are taken over once their claims lapse (`MOMENTS_IMPORT_CLAIM_SECS`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::{social, Context};
use crate::store::{FilterKind, ImportDoc, ImportKind, ImportState};

/// Runs of one import before it is failed for good.
pub const MAX_ATTEMPTS: i64 = 5;

const POLL: Duration = Duration::from_secs(1);

/// How long a stopping instance waits for its runs to hand over.
const HAND_OVER_WAIT: Duration = Duration::from_secs(3);

/// How long a run that stopped on a store waits before any instance tries
/// the next attempt.
const RETRY_AFTER_MS: i64 = 5_000;

/// How long an instance's claim on a running import lasts unrenewed.
fn claim_ms(ctx: &Context) -> i64 {
    ctx.settings.imports.claim_secs as i64 * 1000
}

/// How often a run records its progress and renews its claim: well within
/// the claim, so a busy instance never loses a live run.
fn renew_every(ctx: &Context) -> Duration {
    Duration::from_millis((claim_ms(ctx) / 4).clamp(250, 2_000) as u64)
}

/// Counts a run on this instance for as long as it lives, however it ends
/// (a panicking step included), so the instance's room is never lost.
struct Running<'a>(&'a Imports);

impl<'a> Running<'a> {
    fn new(imports: &'a Imports) -> Self {
        imports.running.fetch_add(1, Ordering::Relaxed);
        Running(imports)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
        self.0.wake();
    }
}

/// This instance's import runs.
#[derive(Default)]
pub struct Imports {
    wake: tokio::sync::Notify,
    running: AtomicUsize,
    stopping: AtomicBool,
    /// Runs there were when stopping began.
    stopped_runs: AtomicUsize,
}

impl Imports {
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Runs on this instance now.
    pub fn running_count(&self) -> usize {
        self.running.load(Ordering::Relaxed)
    }

    pub fn spawn(ctx: Context) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let _ = tokio::time::timeout(POLL, ctx.imports.wake.notified()).await;
                if ctx.imports.stopping.load(Ordering::Relaxed) {
                    return;
                }
                let jobs = ctx.settings.imports.jobs;
                let room = jobs.saturating_sub(ctx.imports.running.load(Ordering::Relaxed));
                if room == 0 {
                    continue;
                }
                let now = now_ms();
                match ctx
                    .docs
                    .claim_imports(now, now + claim_ms(&ctx), room)
                    .await
                {
                    Ok(claimed) => {
                        for import in claimed {
                            let ctx = ctx.clone();
                            tokio::spawn(async move {
                                let _running = Running::new(&ctx.imports);
                                run(&ctx, import).await;
                            });
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "could not look for imports to run"),
                }
            }
        })
    }

    /// Stopping, as soon as the instance is asked to: runs stop at their
    /// next step and hand their imports over (their claims made lapsed),
    /// for another instance to go on from their last recorded step at once.
    pub fn stop(&self) {
        if !self.stopping.swap(true, Ordering::Relaxed) {
            self.stopped_runs
                .store(self.running.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Stops, and waits up to `HAND_OVER_WAIT` for the runs to hand over (a
    /// step is one follow or block); a run still in its step then is taken
    /// over once its claim lapses. Answers the runs there were when the
    /// instance began to stop.
    pub async fn hand_over(&self) -> usize {
        self.stop();
        let deadline = Instant::now() + HAND_OVER_WAIT;
        while self.running.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.stopped_runs.load(Ordering::Relaxed)
    }
}

/// What the account an import acts for is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    Active,
    Suspended,
    /// Deleted: erased, or being erased.
    Gone,
    /// The store could not say: no step is taken on a guess.
    Unknown,
}

/// One step of an import: add or remove one account on the list.
async fn step(
    ctx: &Context,
    kind: ImportKind,
    add: bool,
    me: i64,
    them: i64,
) -> Result<(), AppError> {
    match (kind, add) {
        (ImportKind::Following, true) => social::follow(ctx, me, them).await.map(|_| ()),
        (ImportKind::Following, false) => social::unfollow(ctx, me, them).await.map(|_| ()),
        (ImportKind::Blocks, true) => social::block(ctx, me, them).await.map(|_| ()),
        (ImportKind::Blocks, false) => social::unblock(ctx, me, them).await.map(|_| ()),
        (ImportKind::Mutes, true) => social::set_filter(ctx, FilterKind::Mute, me, them).await,
        (ImportKind::Mutes, false) => social::clear_filter(ctx, FilterKind::Mute, me, them).await,
        (ImportKind::Hidden, true) => social::set_filter(ctx, FilterKind::Hide, me, them).await,
        (ImportKind::Hidden, false) => social::clear_filter(ctx, FilterKind::Hide, me, them).await,
    }
}

async fn run(ctx: &Context, import: ImportDoc) {
    let (uid, id, attempt) = (import.uid, import.id, import.attempt);
    let finish = |state: ImportState, error: Option<String>| async move {
        if let Err(e) = ctx
            .docs
            .finish_import(uid, id, attempt, state, error.as_deref(), now_ms())
            .await
        {
            tracing::warn!(import = id, error = %e, "could not record how an import ended; it is run again");
        }
    };
    if attempt > MAX_ATTEMPTS {
        finish(
            ImportState::Failed,
            Some(format!(
                "the import was interrupted {} times; {} of its steps were done",
                attempt - 1,
                import.done
            )),
        )
        .await;
        return;
    }
    // Removes first: an overwrite near the cap needs the room.
    let steps: Vec<(bool, i64)> = import
        .remove
        .iter()
        .map(|u| (false, *u))
        .chain(import.add.iter().map(|u| (true, *u)))
        .collect();
    // A run taken over may come after one that died mid-step, with a
    // follow or block written but its counters not yet moved: redone, the
    // step finds it written and moves nothing. So the counters of everyone
    // a dead run may have reached are counted again first (edges are the
    // record).
    if import.attempt > 1 && matches!(import.kind, ImportKind::Following | ImportKind::Blocks) {
        let reached = usize::try_from(import.done).unwrap_or(0);
        let accounts = steps.iter().skip(reached).map(|(_, them)| *them);
        for account in std::iter::once(uid).chain(accounts) {
            if let Err(e) = ctx.docs.recount_follows(account).await {
                tracing::warn!(import = id, account, error = %e, "could not count follows again");
            }
        }
    }
    let (mut done, mut skipped) = (import.done, import.skipped);
    // Where this attempt goes on from: its last recorded step.
    tracing::info!(import = id, uid, attempt, from = done, "import run started");
    // What the account is now: a suspended or deleted one takes no more
    // steps, as it could take none by hand. A store that cannot say ends
    // this attempt, as a step the store failed does: a step taken on a
    // guess could follow from a deleted account.
    let standing = || async {
        match ctx.docs.users_by_ids(&[uid]).await {
            Ok(found) => match found.first() {
                None => Standing::Gone,
                Some(u) if u.is_erased() => Standing::Gone,
                Some(u) if u.is_withheld(now_ms()) => Standing::Suspended,
                Some(_) => Standing::Active,
            },
            Err(_) => Standing::Unknown,
        }
    };
    let retry_later = |done: i64, skipped: i64| async move {
        if let Err(e) = ctx
            .docs
            .renew_import(uid, id, attempt, now_ms() + RETRY_AFTER_MS, done, skipped)
            .await
        {
            tracing::debug!(import = id, error = %e, "its claim lapses instead");
        }
    };
    let mut renewed = Instant::now();
    while let Some((add, them)) = usize::try_from(done)
        .ok()
        .and_then(|d| steps.get(d))
        .copied()
    {
        if ctx.imports.stopping.load(Ordering::Relaxed) {
            // A claim that lapsed already: any instance may go on at once.
            if let Err(e) = ctx
                .docs
                .renew_import(uid, id, attempt, 0, done, skipped)
                .await
            {
                tracing::warn!(import = id, error = %e, "could not hand an import over; it is taken over once its claim lapses");
            }
            return;
        }
        // Before every step, not at each renewal only: the steps between
        // two renewals would otherwise follow from a deleted account, and
        // a follow written after its erasure passed the follows is an
        // edge nobody erases, counted on its followee. (`social::follow`
        // and `block` do not ask whether the actor still exists.)
        let now = standing().await;
        if now == Standing::Unknown {
            tracing::warn!(
                import = id,
                attempt,
                "an import stopped: its account could not be read; the next attempt goes on"
            );
            retry_later(done, skipped).await;
            return;
        }
        if now != Standing::Active {
            tracing::info!(
                import = id,
                uid,
                steps = done,
                "an import stopped: its account was suspended or deleted"
            );
            finish(
                ImportState::Failed,
                Some(format!(
                    "the account was suspended or deleted; {done} of its steps were done"
                )),
            )
            .await;
            return;
        }
        match step(ctx, import.kind, add, uid, them).await {
            Ok(()) => {}
            Err(AppError::StoreUnavailable(e)) => {
                tracing::warn!(import = id, attempt, error = %e, "an import stopped on a store; the next attempt goes on");
                retry_later(done, skipped).await;
                return;
            }
            Err(AppError::Internal(e)) => {
                tracing::error!(import = id, attempt, error = %e, "an import step failed");
                retry_later(done, skipped).await;
                return;
            }
            // The account may no longer take this step: someone blocked
            // it since the preview, left, or a cap filled meanwhile.
            Err(_) => skipped += 1,
        }
        if add && standing().await == Standing::Gone {
            // Deleted while the step ran: its erasure may have passed
            // what the step wrote. Erasing again (every part of it a
            // delete, so twice is harmless) takes it; one that had not
            // yet passed takes it anyway.
            tracing::info!(
                import = id,
                uid,
                "an import's account was deleted during a step; erasing again"
            );
            crate::service::erasure::finish_in_background(ctx, uid);
            return;
        }
        done += 1;
        if ctx.settings.imports.pause_ms > 0 {
            tokio::time::sleep(Duration::from_millis(ctx.settings.imports.pause_ms)).await;
        }
        if renewed.elapsed() >= renew_every(ctx) {
            renewed = Instant::now();
            match ctx
                .docs
                .renew_import(uid, id, attempt, now_ms() + claim_ms(ctx), done, skipped)
                .await
            {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    tracing::debug!(import = id, error = %e, "could not record an import's progress")
                }
            }
        }
    }
    match ctx
        .docs
        .renew_import(uid, id, attempt, now_ms() + claim_ms(ctx), done, skipped)
        .await
    {
        Ok(true) => {
            finish(ImportState::Done, None).await;
            tracing::info!(
                import = id,
                uid,
                attempt,
                steps = done,
                skipped,
                "import done"
            );
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(import = id, error = %e, "could not record an import's end; it is run again")
        }
    }
}
