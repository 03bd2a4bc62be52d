//! The import job every instance runs: it claims queued imports (and
//! running ones whose instance stopped renewing its claim) and applies
//! their steps (the removes, then the adds) in order from where the last
//! run got to, each step as the
//! account would do it by hand. A step done twice is done once (a follow
//! that exists is a follow), so a run taken over may redo the step it was
//! cut in. A step the account may no longer take (someone blocked it
//! since the preview) is skipped and counted; a store failure ends the run
//! for the next attempt to go on from, up to `MAX_ATTEMPTS`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::{social, Context};
use crate::store::{FilterKind, ImportDoc, ImportKind, ImportState};

/// Runs of one import before it is failed for good.
pub const MAX_ATTEMPTS: i64 = 5;

/// Imports one instance applies at once.
const JOBS: usize = 2;

const POLL: Duration = Duration::from_secs(1);

/// How long an instance's claim on a running import lasts unrenewed.
const CLAIM_MS: i64 = 30_000;

/// How often a run records its progress (and renews its claim).
const RENEW_EVERY: Duration = Duration::from_secs(2);

/// This instance's import runs.
#[derive(Default)]
pub struct Imports {
    wake: tokio::sync::Notify,
    running: AtomicUsize,
    stopping: AtomicBool,
}

impl Imports {
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub fn spawn(ctx: Context) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let _ = tokio::time::timeout(POLL, ctx.imports.wake.notified()).await;
                if ctx.imports.stopping.load(Ordering::Relaxed) {
                    return;
                }
                let room = JOBS.saturating_sub(ctx.imports.running.load(Ordering::Relaxed));
                if room == 0 {
                    continue;
                }
                let now = now_ms();
                match ctx.docs.claim_imports(now, now + CLAIM_MS, room).await {
                    Ok(claimed) => {
                        for import in claimed {
                            let ctx = ctx.clone();
                            ctx.imports.running.fetch_add(1, Ordering::Relaxed);
                            tokio::spawn(async move {
                                run(&ctx, import).await;
                                ctx.imports.running.fetch_sub(1, Ordering::Relaxed);
                                ctx.imports.wake();
                            });
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "could not look for imports to run"),
                }
            }
        })
    }

    /// Stopping: runs stop at their next step, their claims lapse, and
    /// another instance goes on from their last recorded step.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }
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
    let (mut done, mut skipped) = (import.done, import.skipped);
    let mut renewed = Instant::now();
    while let Some((add, them)) = usize::try_from(done)
        .ok()
        .and_then(|d| steps.get(d))
        .copied()
    {
        if ctx.imports.stopping.load(Ordering::Relaxed) {
            return;
        }
        match step(ctx, import.kind, add, uid, them).await {
            Ok(()) => {}
            Err(AppError::StoreUnavailable(e)) => {
                tracing::warn!(import = id, attempt, error = %e, "an import stopped on a store; the next attempt goes on");
                let _ = ctx
                    .docs
                    .renew_import(uid, id, attempt, now_ms() + 5_000, done, skipped)
                    .await;
                return;
            }
            Err(AppError::Internal(e)) => {
                tracing::error!(import = id, attempt, error = %e, "an import step failed");
                let _ = ctx
                    .docs
                    .renew_import(uid, id, attempt, now_ms() + 5_000, done, skipped)
                    .await;
                return;
            }
            // The account may no longer take this step: someone blocked
            // it since the preview, left, or a cap filled meanwhile.
            Err(_) => skipped += 1,
        }
        done += 1;
        if renewed.elapsed() >= RENEW_EVERY {
            renewed = Instant::now();
            match ctx
                .docs
                .renew_import(uid, id, attempt, now_ms() + CLAIM_MS, done, skipped)
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
        .renew_import(uid, id, attempt, now_ms() + CLAIM_MS, done, skipped)
        .await
    {
        Ok(true) => {
            finish(ImportState::Done, None).await;
            tracing::info!(import = id, uid, steps = done, skipped, "import done");
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(import = id, error = %e, "could not record an import's end; it is run again")
        }
    }
}
