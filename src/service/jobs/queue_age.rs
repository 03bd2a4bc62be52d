//! Keeps the gauge of how long the oldest open moderation queue item has
//! waited (`moments_moderation_oldest_open_seconds`), so that an operator
//! can alert before an app store's response window (a day) runs out. Every
//! instance looks; each look is one indexed read.

use std::time::Duration;

use crate::ids::now_ms;
use crate::service::Context;

/// How often the gauge is brought up to date.
pub const LOOK_EVERY: Duration = Duration::from_secs(30);

pub fn spawn(ctx: Context) -> tokio::task::JoinHandle<()> {
    super::spawn_every(LOOK_EVERY, move || {
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
