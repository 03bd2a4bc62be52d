//! Keeps the gauge of how long the oldest open moderation case has
//! waited (`moments_moderation_oldest_open_seconds`), so that an operator
//! can alert before an app store's response window (a day) runs out. Every
//! instance looks; each look is one indexed read.

use std::time::Duration;

use crate::ids::now_ms;
use crate::service::Context;

/// Brings the gauge up to date every `MOMENTS_QUEUE_AGE_MS` (30 s).
pub fn spawn(ctx: Context) -> tokio::task::JoinHandle<()> {
    let every = Duration::from_millis(ctx.settings.queue_age_ms);
    super::spawn_every(every, move || {
        let ctx = ctx.clone();
        async move {
            match ctx.docs.oldest_open_case().await {
                Ok(oldest) => {
                    let age_ms = oldest.map_or(0, |c| (now_ms() - c.opened_at).max(0));
                    crate::metrics::oldest_open_report(age_ms as f64 / 1000.0);
                }
                Err(e) => tracing::debug!(error = %e, "could not read the oldest open report"),
            }
        }
    })
}
