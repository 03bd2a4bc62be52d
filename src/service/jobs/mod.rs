//! Background work every instance runs beside the requests: pollers,
//! sweeps, batched appliers and the operators' repair tools.

pub mod expiry;
pub mod instance_lease;
pub mod like_arrays;
pub mod live_tools;
pub mod post_views;
pub mod queue_age;
pub mod repair;
pub mod shared_tables;

/// Runs `step` every `period` for as long as the returned task lives. A
/// step that overruns delays the next one rather than bunching them: a
/// poller that fell behind polls once, not a burst of catch-ups.
pub fn spawn_every<F, Fut>(period: std::time::Duration, mut step: F) -> tokio::task::JoinHandle<()>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            step().await;
        }
    })
}
