//! Deletes what has expired, on every backend: sessions past their 30 days,
//! and notifications and views past theirs, pictures no post took
//! (`media::sweeps`); and erases the snapshots of
//! moderation cases closed past their retention. Reads already ignore both; this keeps the
//! stores from growing with them (MongoDB's TTL indexes do the same, and
//! the sweep covers the embedded store, which has none, and lagging TTL
//! monitors).

use std::future::Future;
use std::time::Duration;

use crate::ids::{first_id_at, now_ms};
use crate::store::{DocStore, StoreResult};

const BATCH: usize = 1000;

/// Deletes in batches of `BATCH` (each its own short write) until a batch
/// comes back short, at most 100 a pass.
async fn sweep<F, Fut>(what: &str, mut batch: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<u64>>,
{
    for _ in 0..100 {
        match batch().await {
            Ok(n) if n >= BATCH as u64 => continue,
            Ok(_) => return,
            Err(e) => {
                tracing::debug!(error = %e, what, "could not delete expired records");
                return;
            }
        }
    }
}

/// One pass over everything that expires.
pub async fn sweep_once(docs: &dyn DocStore) {
    sweep("sessions", || docs.purge_expired_sessions(now_ms(), BATCH)).await;
    sweep("idempotency keys", || {
        docs.purge_expired_idempotency_keys(now_ms(), BATCH)
    })
    .await;
    let kept_from = first_id_at(now_ms() - crate::service::notifications::KEEP_MS);
    sweep("notifications", || {
        docs.purge_notifications_before(kept_from, BATCH)
    })
    .await;
    let views_from = first_id_at(now_ms() - super::post_views::HISTORY_MS);
    sweep("views", || docs.purge_views_before(views_from, BATCH)).await;
}

/// Erases the snapshots of cases closed past the retention
/// (`MOMENTS_MODERATION_RETENTION_DAYS`, counted from when each opened):
/// who and when stay, what was reported goes.
pub async fn erase_old_snapshots(docs: &dyn DocStore, retention_days: u64) {
    let days = i64::try_from(retention_days).unwrap_or(i64::MAX);
    let before = first_id_at(now_ms().saturating_sub(days.saturating_mul(crate::ids::DAY_MS)));
    sweep("snapshots", || docs.erase_snapshots(None, before, BATCH)).await;
}

/// At start-up and every `MOMENTS_SWEEP_MS` (five minutes): the fan-outs,
/// account erasures and closed moderation items an instance left
/// unfinished, and the expired.
pub fn spawn(ctx: crate::service::Context) -> tokio::task::JoinHandle<()> {
    let every = Duration::from_millis(ctx.settings.sweep_ms);
    // A closed item's own request finishes it unless it failed; the sweep
    // waits its grace for that, or one sweep if sweeps come sooner.
    let grace_ms = i64::try_from(ctx.settings.sweep_ms)
        .unwrap_or(i64::MAX)
        .min(crate::service::moderation::FINISH_GRACE_MS);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            // First: until they run, some timelines lack a post.
            if let Err(e) = crate::service::feed::fan_out_registry::resume_saved(&ctx).await {
                tracing::warn!(error = %e, "could not resume unfinished fan-outs");
            }
            sweep_once(ctx.docs.as_ref()).await;
            erase_old_snapshots(ctx.docs.as_ref(), ctx.settings.moderation_retention_days).await;
            if let Err(e) = crate::service::moderation::finish_unfinished(&ctx, grace_ms).await {
                tracing::warn!(error = %e, "could not finish closed moderation items");
            }
            if let Err(e) = crate::service::media::sweeps::sweep_once(&ctx).await {
                tracing::warn!(error = %e, "could not sweep media");
            }
            if let Err(e) = crate::service::exports::delete_expired(&ctx).await {
                tracing::warn!(error = %e, "could not delete expired data exports");
            }
            if let Err(e) = crate::service::erasure::resume_unfinished(&ctx).await {
                tracing::warn!(error = %e, "could not resume erasing deleted accounts");
            }
        }
    })
}
