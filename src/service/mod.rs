//! Use cases. Services see the ports, never HTTP types or a concrete store.

pub mod accounts;
pub mod comments;
pub mod content_filters;
pub mod credentials;
pub mod device_models;
pub mod erasure;
pub mod exports;
pub mod favorites;
pub mod feed;
pub mod idempotency;
pub mod imports;
pub mod instance;
pub mod jobs;
pub mod labels;
pub mod likes;
pub mod media;
pub mod moderation;
pub mod notifications;
pub mod posts;
pub mod profiles;
pub mod rate_limits;
pub mod read;
pub mod reports;
pub mod search;
pub mod shares;
pub mod social;
pub mod staff;
pub mod stream;
pub mod strikes;
pub mod thread_pool;

use std::sync::Arc;

use crate::config::Settings;
use crate::domain::lang::Lang;
use crate::domain::time_text::TzOffset;
use crate::store::metered::RoundTrips;
use crate::store::{DocStore, LiveStore, StoreError, StoreResult};
use device_models::DeviceNames;

use jobs::repair::LiveRepair;
pub use read::visibility::{can_see, shows_actor, Relations};

/// Everything a use case needs, shared by all requests.
#[derive(Clone)]
pub struct Context {
    pub docs: Arc<dyn DocStore>,
    pub live: Arc<dyn LiveStore>,
    pub devices: Arc<DeviceNames>,
    /// The content filters, as one automaton.
    pub content_filters: Arc<content_filters::ContentFilters>,
    pub repair: Arc<LiveRepair>,
    pub settings: Arc<Settings>,
    /// Store round trips made so far, by port.
    pub round_trips: Arc<RoundTrips>,
    /// Faults injected into store calls (tests of races and partial
    /// failures); none unless something injects them.
    pub faults: Arc<crate::store::faults::Faults>,
    pub pulled_authors: Arc<feed::pulled_authors::PulledAuthors>,
    /// This instance's copies of live values, served while their owners'
    /// generations are unchanged (`near_cache`).
    pub near: Arc<read::near_cache::NearCache>,
    /// Rebuild reads in flight, shared by the requests that need them.
    pub rebuilds: Arc<read::in_flight::Rebuilds>,
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
    pub fan_outs: Arc<feed::fan_out_registry::FanOutRegistry>,
    /// Views counted here and not yet written to the documents.
    pub post_views: Arc<jobs::post_views::PostViews>,
    /// Whether a like leaves its post's `likes_postid` to the batched
    /// applier (`like_arrays`): on MongoDB with Redis, whose stream is the
    /// durable queue. Elsewhere the array is written with the like (MongoDB
    /// alone) or read from the like index (the embedded documents).
    pub like_arrays_queued: bool,
    /// The live-update streams this instance holds open.
    pub streams: Arc<stream::Hub>,
    /// The data exports this instance runs.
    pub exports: Arc<exports::Exports>,
    /// The imports this instance applies.
    pub imports: Arc<imports::Imports>,
    /// Where uploaded pictures' bytes are, and how many uploads are being
    /// received.
    pub media: Arc<media::Library>,
    /// The search index and its indexer's wake-up.
    pub search: Arc<search::Search>,
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

#[cfg(test)]
mod tests {
    /// The README's architecture lines name every file here and in each
    /// folder, so that a newcomer finds a feature from the README alone.
    #[test]
    fn the_readme_names_every_file_of_the_service() {
        let readme = include_str!("../../README.md");
        let from = readme
            .find("- `src/service/`:")
            .expect("the README's line on src/service/");
        let lines = &readme[from..];
        let lines = &lines[..lines.find("\n- `src/store/`").unwrap()];
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src/service");
        for entry in std::fs::read_dir(root).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            if entry.file_type().unwrap().is_dir() {
                let folder = format!("- `service/{name}/`:");
                let at = lines
                    .find(&folder)
                    .unwrap_or_else(|| panic!("the README has no line {folder}"));
                let line = lines[at..].lines().next().unwrap();
                for file in std::fs::read_dir(entry.path()).unwrap() {
                    let file = file.unwrap().file_name().into_string().unwrap();
                    if file != "mod.rs" {
                        assert!(
                            line.contains(&format!("`{file}`")),
                            "the README's line on service/{name}/ does not name {file}"
                        );
                    }
                }
            } else if name != "mod.rs" {
                let first = lines.lines().next().unwrap();
                assert!(
                    first.contains(&format!("`{name}`")),
                    "the README's line on src/service/ does not name {name}"
                );
            }
        }
    }
}
