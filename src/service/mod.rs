//! Use cases. Services see the ports, never HTTP types or a concrete store.

pub mod accounts;
pub mod assemble;
pub mod comments;
pub mod device_names;
pub mod erasure;
pub mod expiry;
pub mod fan_outs;
pub mod favorites;
pub mod idempotency;
pub mod in_flight;
pub mod instance_lease;
pub mod labels;
pub mod like_arrays;
pub mod likes;
pub mod live_tools;
pub mod loader;
pub mod near_cache;
pub mod notifications;
pub mod paging;
pub mod password_pool;
pub mod post_json;
pub mod post_views;
pub mod posts;
pub mod rate_limits;
pub mod repair;
pub mod responses;
pub mod shares;
pub mod social;
pub mod timeline;
pub mod visibility;

use std::sync::Arc;

use crate::config::Settings;
use crate::domain::time_text::{Lang, TzOffset};
use crate::store::metered::RoundTrips;
use crate::store::{DocStore, LiveStore, StoreError, StoreResult};
use device_names::DeviceNames;

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
use repair::LiveRepair;
pub use visibility::{can_see, shows_actor, Relations};

/// Everything a use case needs, shared by all requests.
#[derive(Clone)]
pub struct Context {
    pub docs: Arc<dyn DocStore>,
    pub live: Arc<dyn LiveStore>,
    pub devices: Arc<DeviceNames>,
    pub repair: Arc<LiveRepair>,
    pub settings: Arc<Settings>,
    /// Store round trips made so far, by port.
    pub round_trips: Arc<RoundTrips>,
    /// Faults injected into store calls (tests of races and partial
    /// failures); none unless something injects them.
    pub faults: Arc<crate::store::faults::Faults>,
    pub celebrity_cache: Arc<timeline::CelebrityCache>,
    /// This instance's copies of live values, served while their owners'
    /// generations are unchanged (`near_cache`).
    pub near: Arc<near_cache::NearCache>,
    /// Rebuild reads in flight, shared by the requests that need them.
    pub rebuilds: Arc<in_flight::Rebuilds>,
    /// When each user was last recorded active by this instance.
    pub activity: Arc<accounts::RecentActivity>,
    /// When each session was last recorded in use by this instance.
    pub session_activity: Arc<accounts::RecentActivity>,
    /// Password hashes and verifications this instance asked of the
    /// password pool (an unknown username's dummy one included). The pool
    /// is shared by every app in a process; this count is the app's own.
    pub password_hashes: Arc<std::sync::atomic::AtomicU64>,
    /// Fan-outs running in the background, which a stopping instance
    /// finishes or saves.
    pub fan_outs: Arc<fan_outs::FanOuts>,
    /// Views counted here and not yet written to the documents.
    pub post_views: Arc<post_views::PostViews>,
    /// Whether a like leaves its post's `likes_postid` to the batched
    /// applier (`like_arrays`): on MongoDB with Redis, whose stream is the
    /// durable queue. Elsewhere the array is written with the like (MongoDB
    /// alone) or read from the like index (the embedded documents).
    pub like_arrays_queued: bool,
}

/// Runs an insert that takes a generated id, with a fresh id each time the
/// one it was given turns out taken (three tries). Ids are unique per leased
/// instance, so a taken one means another process minted it: it must never
/// be read as "this exists already".
pub async fn with_fresh_id<T, Fut>(mut insert: impl FnMut(i64) -> Fut) -> StoreResult<T>
where
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let mut tries = 0;
    loop {
        match insert(crate::ids::next_id()).await {
            Err(StoreError::IdTaken) if tries < 2 => {
                tries += 1;
                tracing::warn!(tries, "a generated id was taken; trying a fresh one");
            }
            other => return other,
        }
    }
}

/// `with_fresh_id` for a create behind an `Idempotency-Key`: if an
/// earlier try of it made its thing before failing (`earlier` finds it
/// under one of the reservation's earlier ids), that is answered as made;
/// otherwise it is inserted under the id reserved for this try, or a
/// fresh one if that is taken by anything else. Without a reservation it
/// is `with_fresh_id`.
pub async fn insert_reserved<T, Fut, EarlierFut>(
    reserved: Option<idempotency::Reservation>,
    mut insert: impl FnMut(i64) -> Fut,
    earlier: impl Fn(i64) -> EarlierFut,
) -> StoreResult<T>
where
    Fut: std::future::Future<Output = StoreResult<T>>,
    EarlierFut: std::future::Future<Output = StoreResult<Option<T>>>,
{
    let Some(reserved) = reserved else {
        return with_fresh_id(insert).await;
    };
    for id in &reserved.earlier {
        if let Some(made) = earlier(*id).await? {
            return Ok(made);
        }
    }
    match insert(reserved.id).await {
        Err(taken @ (StoreError::IdTaken | StoreError::Duplicate(_))) => {
            match earlier(reserved.id).await? {
                Some(made) => Ok(made),
                None if matches!(taken, StoreError::IdTaken) => with_fresh_id(insert).await,
                None => Err(taken),
            }
        }
        other => other,
    }
}

/// Who is asking: `None` is an anonymous reader.
pub type Viewer = Option<i64>;

/// How the reader wants times and device names shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct Presentation {
    /// `Some` adds `createtimeText` in that language.
    pub lang: Option<Lang>,
    pub tz: TzOffset,
    pub now: i64,
}

impl Presentation {
    pub fn device_lang(&self) -> Lang {
        self.lang.unwrap_or_default()
    }
    pub fn text(&self, created: i64) -> Option<String> {
        self.lang
            .map(|l| crate::domain::time_text::createtime_text(created, self.now, l, self.tz))
    }
}
