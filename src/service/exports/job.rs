//! The export job every instance runs: it claims queued exports (and
//! running ones whose instance stopped renewing its claim, which is how a
//! dead instance's export is taken over), writes each archive as a new
//! attempt, renews its claim with the progress while it writes, and ends
//! it ready or failed. A failed run frees the account at once; a run that
//! fails on a store is tried again, up to `MAX_ATTEMPTS` runs in all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::archive::{self, Stop};
use super::run::Run;
use crate::ids::now_ms;
use crate::service::Context;
use crate::store::{ExportDoc, ExportOutcome};

/// Runs of one export, takeovers included, before it is failed for good.
pub const MAX_ATTEMPTS: i64 = 3;

/// How often an idle instance looks for exports to run; a start on this
/// instance wakes it at once.
const POLL: Duration = Duration::from_secs(1);

/// How long a run that failed on a store waits before any instance tries
/// the next attempt.
const RETRY_AFTER_MS: i64 = 5_000;

/// The longest one run may take: an archive of MOMENTS_EXPORT_MAX_BYTES
/// (64 GiB) at the 15 MB/s measured takes about 75 minutes.
const RUN_DEADLINE: Duration = Duration::from_secs(4 * 3600);

/// Aborts its task when dropped, however the scope that holds it ends.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// This instance's export runs.
#[derive(Default)]
pub struct Exports {
    wake: tokio::sync::Notify,
    running: Mutex<HashMap<i64, Arc<Run>>>,
    /// The most archive bytes any run here held in memory at once: the
    /// proof that an archive is streamed to the store, not built whole.
    peak_buffered: AtomicUsize,
    /// The most records any run here held at once (`Run::hold`).
    peak_records_held: AtomicI64,
    stopping: AtomicBool,
    /// The downloads this instance serves.
    pub downloads: super::download::Downloads,
}

impl Exports {
    /// Looks for work now rather than at the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub fn peak_buffered(&self) -> usize {
        self.peak_buffered.load(Ordering::Relaxed)
    }

    pub fn peak_records_held(&self) -> i64 {
        self.peak_records_held.load(Ordering::Relaxed)
    }

    pub fn running_count(&self) -> usize {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The poller: claims what this instance has room for and runs it.
    pub fn spawn(ctx: Context) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let _ = tokio::time::timeout(POLL, ctx.exports.wake.notified()).await;
                if ctx.exports.stopping.load(Ordering::Relaxed) {
                    return;
                }
                let room = ctx
                    .settings
                    .exports
                    .jobs
                    .saturating_sub(ctx.exports.running_count());
                if room == 0 {
                    continue;
                }
                let now = now_ms();
                let until = now + claim_ms(&ctx);
                match ctx.docs.claim_exports(now, until, room).await {
                    Ok(claimed) => {
                        for export in claimed {
                            let ctx = ctx.clone();
                            tokio::spawn(async move { run_one(&ctx, export).await });
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "could not look for exports to run"),
                }
            }
        })
    }

    /// Stopping: every run here stops at its next batch, and its export is
    /// handed over at once (its claim cleared) instead of when the claim
    /// would have lapsed.
    pub async fn hand_over(&self, ctx: &Context) -> usize {
        self.stopping.store(true, Ordering::Relaxed);
        let runs: Vec<Arc<Run>> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for run in &runs {
            run.lose();
            let e = &run.export;
            let (done, known) = run.progress();
            if let Err(err) = ctx
                .docs
                .renew_export(e.uid, e.id, e.attempt, 0, done, known)
                .await
            {
                tracing::warn!(export = e.id, error = %err, "could not hand an export over; it is taken over once its claim lapses");
            }
        }
        runs.len()
    }
}

fn claim_ms(ctx: &Context) -> i64 {
    ctx.settings.exports.claim_secs as i64 * 1000
}

async fn run_one(ctx: &Context, export: ExportDoc) {
    let keep_ms = ctx.settings.exports.keep_secs as i64 * 1000;
    if export.attempt > MAX_ATTEMPTS {
        let outcome = ExportOutcome::Failed {
            error: format!(
                "the export was interrupted {} times; ask for a new one",
                export.attempt - 1
            ),
            expires_at: now_ms() + keep_ms,
        };
        finish(ctx, &export, &outcome).await;
        return;
    }
    // The chunk size the export was started with, which its downloads
    // read by: instances of another setting (a rolling deploy) agree.
    let chunk_bytes = usize::try_from(export.chunk_bytes)
        .ok()
        .filter(|b| *b > 0)
        .unwrap_or(ctx.settings.exports.chunk_bytes);
    let run = Arc::new(Run::new(export.clone(), chunk_bytes));
    ctx.exports
        .running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(export.id, run.clone());
    crate::metrics::export_started(export.attempt);
    let heartbeat = AbortOnDrop(spawn_heartbeat(ctx.clone(), run.clone()));
    let started = std::time::Instant::now();
    // In a task of its own, so that a panic ends the run (and its
    // heartbeat, whose claim then lapses) instead of renewing it forever;
    // and under a deadline, so that a store call that never answers
    // cannot either.
    let writing = {
        let (ctx, run) = (ctx.clone(), run.clone());
        tokio::spawn(
            async move { crate::service::read::loader::bulk(archive::write(&ctx, &run)).await },
        )
    };
    let mut writing = AbortOnDrop(writing);
    let written = match tokio::time::timeout(RUN_DEADLINE, &mut writing.0).await {
        Ok(Ok(written)) => written,
        Ok(Err(panicked)) => Err(Stop::Failed(crate::error::AppError::Internal(
            anyhow::anyhow!("the archive writer stopped: {panicked}"),
        ))),
        Err(_) => {
            run.lose();
            Err(Stop::Failed(crate::error::AppError::Internal(
                anyhow::anyhow!(
                    "the run passed its deadline of {} s",
                    RUN_DEADLINE.as_secs()
                ),
            )))
        }
    };
    drop(writing);
    drop(heartbeat);
    if let Some(sink) = run.sink() {
        ctx.exports
            .peak_buffered
            .fetch_max(sink.peak(), Ordering::Relaxed);
    }
    ctx.exports
        .peak_records_held
        .fetch_max(run.peak_held(), Ordering::Relaxed);
    let e = &run.export;
    match written {
        Ok(size) => {
            let sha256 = run.sink().map(|s| s.sha256_hex()).unwrap_or_default();
            let outcome = ExportOutcome::Ready {
                size: size as i64,
                sha256,
                records: run.progress().0,
                expires_at: now_ms() + keep_ms,
            };
            if finish(ctx, e, &outcome).await {
                let (done, _) = run.progress();
                tracing::info!(
                    export = e.id,
                    uid = e.uid,
                    attempt = e.attempt,
                    size,
                    records = done,
                    took_ms = started.elapsed().as_millis() as u64,
                    "data export ready"
                );
                crate::metrics::export_ended("ready", size);
            }
        }
        Err(Stop::Lost) => {
            tracing::info!(
                export = e.id,
                attempt = e.attempt,
                "a data export run stopped: taken over, deleted or handed over"
            );
            forget_attempt(ctx, e).await;
        }
        Err(Stop::TooLarge(max)) => {
            let outcome = ExportOutcome::Failed {
                error: format!(
                    "the archive would be larger than {max} bytes, the most this service keeps"
                ),
                expires_at: now_ms() + keep_ms,
            };
            finish(ctx, e, &outcome).await;
            crate::metrics::export_ended("failed", 0);
        }
        Err(Stop::Failed(err)) => {
            tracing::warn!(export = e.id, attempt = e.attempt, error = %err, "a data export run failed");
            forget_attempt(ctx, e).await;
            if e.attempt < MAX_ATTEMPTS {
                // Left running with a claim that lapses soon: the next
                // attempt is any instance's.
                let (done, known) = run.progress();
                let retry_at = now_ms() + RETRY_AFTER_MS;
                if let Err(err) = ctx
                    .docs
                    .renew_export(e.uid, e.id, e.attempt, retry_at, done, known)
                    .await
                {
                    tracing::debug!(export = e.id, error = %err, "could not schedule the next attempt; it follows the claim's lapse");
                }
            } else {
                // The cause is in the log above; the account is told what
                // it can do, not the store's words.
                let outcome = ExportOutcome::Failed {
                    error: format!("the export failed {MAX_ATTEMPTS} times; ask for a new one"),
                    expires_at: now_ms() + keep_ms,
                };
                finish(ctx, e, &outcome).await;
                crate::metrics::export_ended("failed", 0);
            }
        }
    }
    ctx.exports
        .running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&e.id);
    ctx.exports.wake();
}

/// Ends the export as `outcome` says; false when the run was no longer
/// its own (taken over meanwhile).
async fn finish(ctx: &Context, e: &ExportDoc, outcome: &ExportOutcome) -> bool {
    for _ in 0..3 {
        match ctx
            .docs
            .finish_export(e.uid, e.id, e.attempt, outcome)
            .await
        {
            Ok(true) => return true,
            Ok(false) => {
                forget_attempt(ctx, e).await;
                return false;
            }
            Err(err) => {
                tracing::warn!(export = e.id, error = %err, "could not record how a data export ended; trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    // Its claim lapses and the next attempt starts over.
    false
}

async fn forget_attempt(ctx: &Context, e: &ExportDoc) {
    if let Err(err) = ctx.docs.delete_export_attempt(e.id, e.attempt).await {
        tracing::warn!(export = e.id, attempt = e.attempt, error = %err, "could not delete a stopped run's chunks; they go with the export");
    }
}

/// Renews the run's claim with its progress, every 2 s (a third of a
/// claim at most),
/// until it is aborted; a renewal refused means the run lost its export.
fn spawn_heartbeat(ctx: Context, run: Arc<Run>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // Often enough for a progress bar, and well inside the claim.
        let every = Duration::from_millis((claim_ms(&ctx) / 3).clamp(500, 2000) as u64);
        loop {
            tokio::time::sleep(every).await;
            let e = &run.export;
            let (done, known) = run.progress();
            match ctx
                .docs
                .renew_export(
                    e.uid,
                    e.id,
                    e.attempt,
                    now_ms() + claim_ms(&ctx),
                    done,
                    known,
                )
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    run.lose();
                    return;
                }
                Err(err) => {
                    tracing::debug!(export = e.id, error = %err, "could not renew a data export's claim");
                }
            }
        }
    })
}
