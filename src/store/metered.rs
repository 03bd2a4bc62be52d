//! Round-trip counters around the ports. Every store call is one round trip,
//! so these counters are how the "a page of N posts costs a constant number
//! of round trips" promise is checked, in tests and in production.
//!
//! One generic layer: `Metered::measured` does the counting (and feeds
//! the store metrics of `/metrics`), and the `metered!` list below states
//! each port method once, with how it counts.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::faults::{injected, Faults, Verdict};
use super::*;

tokio::task_local! {
    /// This request's (documents, live) round trips, when a request scope is set.
    static REQUEST_TRIPS: std::cell::Cell<(u32, u32)>;
}

/// Runs `fut` counting the round trips it makes; returns them with its output.
pub async fn count_request_trips<F: std::future::Future>(fut: F) -> (F::Output, (u32, u32)) {
    REQUEST_TRIPS
        .scope(std::cell::Cell::new((0, 0)), async move {
            let out = fut.await;
            (out, REQUEST_TRIPS.with(|c| c.get()))
        })
        .await
}

/// Adds round trips made elsewhere (a task the request waited for) to the
/// request's count.
pub fn note_request_trips(docs: u32, live: u32) {
    let _ = REQUEST_TRIPS.try_with(|c| {
        let (d, l) = c.get();
        c.set((d + docs, l + live));
    });
}

#[derive(Default, Debug)]
pub struct RoundTrips {
    pub docs: AtomicU64,
    pub live: AtomicU64,
    /// Rebuilt state written back in the background, off any request's path.
    pub live_writebacks: AtomicU64,
}

impl RoundTrips {
    /// (documents, live) so far.
    pub fn snapshot(&self) -> (u64, u64) {
        (
            self.docs.load(Ordering::Relaxed),
            self.live.load(Ordering::Relaxed),
        )
    }
}

/// Which store a metered port reaches, and so which counter it ticks.
#[derive(Debug, Clone, Copy)]
enum Side {
    Documents,
    Live,
}

/// How one call is accounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trip {
    /// A round trip of the request (or of the work it started).
    Counted,
    /// Start-up, heartbeats, sweeps and polls: not a request's round trip,
    /// so the promise about requests is not blurred by them.
    Background,
    /// Rebuilt state written back off the request's path, counted apart.
    Writeback,
    /// An empty batch: the adapters answer it without a round trip.
    Skipped,
}

/// A port wrapped so that each call is counted.
pub struct Metered<S: ?Sized> {
    inner: Arc<S>,
    trips: Arc<RoundTrips>,
    faults: Arc<Faults>,
    side: Side,
}

pub type MeteredDocs = Metered<dyn DocStore>;
pub type MeteredLive = Metered<dyn LiveStore>;

impl MeteredDocs {
    pub fn new(inner: Arc<dyn DocStore>, trips: Arc<RoundTrips>, faults: Arc<Faults>) -> Self {
        Self {
            inner,
            trips,
            faults,
            side: Side::Documents,
        }
    }
}

impl MeteredLive {
    pub fn new(inner: Arc<dyn LiveStore>, trips: Arc<RoundTrips>, faults: Arc<Faults>) -> Self {
        Self {
            inner,
            trips,
            faults,
            side: Side::Live,
        }
    }
}

impl<S: ?Sized> Metered<S> {
    /// Runs one call to `port`'s method `op`, accounted as `trip` says.
    /// Every call that reaches the store is timed for `/metrics`, a
    /// request's or not: a slow sweep is as worth seeing as a slow read.
    /// An injected fault (`store::faults`) is met first.
    async fn measured<T>(
        &self,
        port: &'static str,
        op: &'static str,
        trip: Trip,
        call: impl Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let lost_answer = match self.faults.at(port, op).await {
            Verdict::Run => false,
            Verdict::Fail => return injected(port, op),
            Verdict::FailAfter => true,
        };
        let out = self.counted_call(port, op, trip, call).await;
        match (lost_answer, out) {
            (true, Ok(_)) => injected(port, op),
            (_, out) => out,
        }
    }

    async fn counted_call<T>(
        &self,
        port: &'static str,
        op: &'static str,
        trip: Trip,
        call: impl Future<Output = T>,
    ) -> T {
        match (trip, self.side) {
            (Trip::Counted, Side::Documents) => {
                self.trips.docs.fetch_add(1, Ordering::Relaxed);
                note_request_trips(1, 0);
            }
            (Trip::Counted, Side::Live) => {
                self.trips.live.fetch_add(1, Ordering::Relaxed);
                note_request_trips(0, 1);
            }
            (Trip::Writeback, _) => {
                self.trips.live_writebacks.fetch_add(1, Ordering::Relaxed);
            }
            (Trip::Background, _) => {}
            (Trip::Skipped, _) => return call.await,
        }
        let started = Instant::now();
        let out = call.await;
        crate::metrics::store_round_trip(port, op, started.elapsed());
        out
    }
}

/// Writes the delegating impls: each entry is `HOW fn name(args) -> T;`,
/// where HOW is `counted`, `background`, `writeback`, or `batch(arg)`
/// (counted unless `arg` is empty), and the method returns `StoreResult<T>`.
macro_rules! metered {
    (@trip counted) => { Trip::Counted };
    (@trip background) => { Trip::Background };
    (@trip writeback) => { Trip::Writeback };
    (@trip batch($items:ident)) => {
        if $items.is_empty() { Trip::Skipped } else { Trip::Counted }
    };
    ($(impl $port:ident for $metered:ty {
        $($how:ident $(($batch:ident))? fn $op:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty;)*
    })*) => {
        /// Every store port, as the metrics' `port` label names it: each
        /// must be metered to be used, so this list is whole.
        pub const PORTS: &[&str] = &[$(stringify!($port)),*];
        $(
        #[async_trait]
        impl $port for $metered {
            $(
                async fn $op(&self, $($arg: $ty),*) -> StoreResult<$out> {
                    let trip = metered!(@trip $how $(($batch))?);
                    let call = self.inner.$op($($arg),*);
                    self.measured(stringify!($port), stringify!($op), trip, call).await
                }
            )*
        }
    )*};
}

metered! {
    impl DocStore for MeteredDocs {
        counted fn ping() -> ();
        // Start-up and its heartbeat, not a request's round trips.
        background fn apply_schemas() -> ();
        background fn lease_instance_id(holder: &str, now: i64, until: i64) -> Option<u16>;
        background fn renew_instance_id(id: u16, holder: &str, until: i64) -> bool;
        counted fn post_ids_after(after: Option<i64>, limit: usize) -> Vec<i64>;
        counted fn user_ids_after(after: Option<i64>, limit: usize) -> Vec<i64>;
        counted fn totals() -> (u64, u64);
        // Shutdown, not a request's round trip.
        background fn close() -> ();
    }

    impl AccountDocs for MeteredDocs {
        counted fn insert_user(user: &UserDoc) -> ();
        counted fn user_by_username(username: &str) -> Option<UserDoc>;
        batch(uids) fn users_by_ids(uids: &[i64]) -> Vec<UserDoc>;
        // The search indexer, not a request's round trip.
        background fn users_for_indexing(uids: &[i64]) -> Vec<UserDoc>;
        batch(usernames) fn users_by_usernames(usernames: &[String]) -> Vec<UserDoc>;
        counted fn users_by_name_prefix(by: NameKey, prefix: &str, after: Option<(String, i64)>, limit: usize) -> Vec<UserDoc>;
        counted fn set_roles(uid: i64, roles: &[String]) -> bool;
        counted fn set_suspension(uid: i64, until: i64) -> bool;
        counted fn extend_suspension(uid: i64, until: i64) -> ();
        counted fn staff(limit: usize) -> Vec<i64>;
        counted fn update_profile(uid: i64, change: ProfileChange<'_>) -> Option<UserDoc>;
        counted fn set_password_hash(uid: i64, password_hash: &str, checked_gen: i64, credential_gen: i64) -> bool;
        counted fn raise_credential_gen(uid: i64, credential_gen: i64) -> ();
        counted fn set_session_credential_gen(uid: i64, session_id: i64, credential_gen: i64) -> ();
        counted fn touch_user(uid: i64, at: i64) -> ();
        counted fn insert_session(session: &SessionDoc) -> ();
        counted fn session_by_token_hash(uid: i64, token_hash: &str) -> Option<SessionDoc>;
        counted fn sessions_of_user(uid: i64, limit: usize) -> Vec<SessionDoc>;
        batch(ids) fn delete_sessions(uid: i64, ids: &[i64]) -> u64;
        counted fn touch_session(uid: i64, id: i64, at: i64) -> ();
        // The background sweep, not a request's round trip.
        background fn purge_expired_sessions(now: i64, limit: usize) -> u64;
        counted fn erase_user(uid: i64) -> bool;
        // The background sweep, not a request's round trip.
        background fn accounts_being_erased(limit: usize) -> Vec<i64>;
        counted fn erasure_done(uid: i64) -> ();
    }

    impl PostDocs for MeteredDocs {
        counted fn insert_post(post: &PostDoc) -> ();
        batch(ids) fn posts_by_ids(ids: &[i64]) -> Vec<PostDoc>;
        counted fn delete_post(id: i64) -> bool;
        counted fn set_post_moderation(id: i64, moderation: Option<PostModeration>) -> Option<PostDoc>;
        counted fn post_ids_by_author(uid: i64, before: Option<i64>, limit: usize) -> Vec<i64>;
        batch(authors) fn post_ids_by_authors(
            authors: &[i64],
            before: Option<i64>,
            limit: usize,
        ) -> Vec<i64>;
        // The search indexer, not a request's round trip.
        background fn posts_after(after: Option<i64>, limit: usize) -> Vec<PostDoc>;
        background fn post_presence_after(after: Option<i64>, limit: usize) -> Vec<PostPresence>;
    }

    impl CommentDocs for MeteredDocs {
        counted fn comments_by_author(uid: i64, before: Option<i64>, limit: usize) -> Vec<CommentDoc>;
        counted fn raise_likes_peak(post_id: i64, comment_id: i64) -> ();
        counted fn hot_comments_page(post_id: i64, after: Option<(i64, i64)>, limit: usize) -> Vec<CommentDoc>;
        counted fn insert_comment(comment: &CommentDoc, cap: usize) -> ();
        batch(ids) fn comments_by_ids(ids: &[(i64, i64)]) -> Vec<CommentDoc>;
        batch(ids) fn comments_by_id_alone(ids: &[i64]) -> Vec<CommentDoc>;
        counted fn delete_comment(comment: &CommentDoc) -> bool;
        counted fn comments_page(
            post_id: i64,
            before: Option<i64>,
            limit: usize,
        ) -> Vec<CommentDoc>;
        counted fn thread_page(post_id: i64, thread_id: i64, after: Option<i64>, limit: usize) -> Vec<CommentDoc>;
        batch(post_ids) fn comment_ids_of_posts(post_ids: &[i64]) -> Vec<(i64, i64)>;
        batch(comments) fn reply_ids_of_comments(comments: &[(i64, i64)]) -> Vec<(i64, i64)>;
    }

    impl LikeDocs for MeteredDocs {
        counted fn likes_by_user(uid: i64, before: Option<i64>, limit: usize) -> Vec<LikeDoc>;
        counted fn insert_like_only(like: &LikeDoc) -> bool;
        counted fn delete_like_only(kind: LikeKind, target_id: i64, uid: i64) -> Option<LikeDoc>;
        background fn refresh_like_array(post_id: i64, cap: usize, read_at: i64) -> ();
        counted fn insert_like(like: &LikeDoc, cap: usize) -> bool;
        counted fn delete_like(kind: LikeKind, target_id: i64, uid: i64) -> Option<LikeDoc>;
        batch(target_ids) fn likes_of_targets(kind: LikeKind, target_ids: &[i64]) -> Vec<LikeDoc>;
        counted fn likes_page(
            kind: LikeKind,
            target_id: i64,
            before: Option<i64>,
            limit: usize,
        ) -> Vec<LikeDoc>;
    }

    impl SocialDocs for MeteredDocs {
        counted fn insert_follow(follow: &FollowDoc) -> bool;
        counted fn delete_follow(follower: i64, followee: i64) -> bool;
        counted fn followers_page(uid: i64, before: Option<i64>, limit: usize) -> Vec<FollowDoc>;
        counted fn following_page(uid: i64, before: Option<i64>, limit: usize) -> Vec<FollowDoc>;
        counted fn follow_counts(uid: i64) -> (u64, u64);
        counted fn recount_follows(uid: i64) -> ();
        batch(others) fn follow_edges(uid: i64, others: &[i64]) -> (Vec<i64>, Vec<i64>);
        counted fn insert_block(block: &BlockDoc) -> bool;
        counted fn delete_block(blocker: i64, blocked: i64) -> bool;
        batch(others) fn blocks_between(uid: i64, others: &[i64]) -> Vec<i64>;
        counted fn active_followers(
            uid: i64,
            since: i64,
            before: Option<i64>,
            limit: usize,
        ) -> (Vec<i64>, Option<i64>);
        batch(uids) fn follower_counts(uids: &[i64]) -> Vec<(i64, u64)>;
        batch(uids) fn follows_from(uids: &[i64]) -> Vec<FollowDoc>;
        batch(blockers) fn blocks_by(blockers: &[i64]) -> Vec<BlockDoc>;
        counted fn blockers_of(uid: i64, limit: usize) -> Vec<BlockDoc>;
        batch(others) fn blockers_among(uid: i64, others: &[i64]) -> Vec<i64>;
        batch(others) fn followers_among(uid: i64, others: &[i64]) -> Vec<i64>;
        background fn blocks_involving(uid: i64, limit: usize) -> Vec<BlockDoc>;
        counted fn insert_filter(filter: &FilterDoc) -> bool;
        counted fn delete_filter(kind: FilterKind, uid: i64, other: i64) -> bool;
        counted fn filters_page(kind: FilterKind, uid: i64, before: Option<i64>, limit: usize) -> Vec<FilterDoc>;
        batch(uids) fn filters_set_by(kind: FilterKind, uids: &[i64]) -> Vec<FilterDoc>;
        batch(setters) fn filters_on_from(kind: FilterKind, on: i64, setters: &[i64]) -> Vec<FilterDoc>;
        background fn delete_filters_involving(uid: i64, limit: usize) -> u64;
    }

    impl NotificationDocs for MeteredDocs {
        counted fn insert_notification(n: &NotificationDoc) -> bool;
        counted fn notifications_page(
            uid: i64,
            since: i64,
            before: Option<i64>,
            limit: usize,
        ) -> Vec<NotificationDoc>;
        counted fn unread_notifications(uid: i64, since: i64, cap: u64) -> u64;
        counted fn mark_notifications_read(uid: i64, up_to: i64) -> ();
        // The background sweep, not a request's round trip.
        background fn purge_notifications_before(before: i64, limit: usize) -> u64;
        counted fn delete_notifications_involving(uid: i64, limit: usize) -> u64;
    }

    // Shutdown, failed fan-outs, start-up and the sweep: none of them a
    // request's round trips.
    impl FanOutDocs for MeteredDocs {
        background fn save_fan_out(fan_out: &FanOutDoc) -> ();
        background fn claim_fan_outs(now: i64, until: i64, limit: usize) -> Vec<FanOutDoc>;
        background fn delete_fan_out(post_id: i64) -> ();
    }

    // Starting, listing and downloading are requests'; the job's own
    // calls (claims, progress, chunks written) and the sweep are not.
    impl ExportDocs for MeteredDocs {
        counted fn insert_export(export: &ExportDoc, newest_seen: Option<i64>) -> bool;
        counted fn exports_of(uid: i64, limit: usize) -> Vec<ExportDoc>;
        counted fn export_by_id(uid: i64, id: i64) -> Option<ExportDoc>;
        background fn claim_exports(now: i64, until: i64, limit: usize) -> Vec<ExportDoc>;
        background fn renew_export(uid: i64, id: i64, attempt: i64, until: i64, done: i64, known: i64) -> bool;
        background fn put_export_chunk(uid: i64, id: i64, attempt: i64, n: i64, data: &[u8]) -> bool;
        counted fn export_chunk(id: i64, attempt: i64, n: i64) -> Option<Vec<u8>>;
        background fn finish_export(uid: i64, id: i64, attempt: i64, outcome: &ExportOutcome) -> bool;
        background fn delete_export_attempt(id: i64, attempt: i64) -> ();
        counted fn set_export_link(uid: i64, id: i64, hash: &str, expires_at: i64, credential_gen: i64) -> bool;
        counted fn delete_export(uid: i64, id: i64) -> ();
        background fn expired_exports(now: i64, limit: usize) -> Vec<(i64, i64)>;
    }

    // Starting and following an import are requests'; the job's calls
    // are not.
    impl ImportDocs for MeteredDocs {
        counted fn insert_import(import: &ImportDoc, newest_seen: Option<i64>) -> bool;
        counted fn imports_of(uid: i64, limit: usize) -> Vec<ImportDoc>;
        counted fn import_by_id(uid: i64, id: i64) -> Option<ImportDoc>;
        background fn claim_imports(now: i64, until: i64, limit: usize) -> Vec<ImportDoc>;
        background fn renew_import(uid: i64, id: i64, attempt: i64, until: i64, done: i64, skipped: i64) -> bool;
        background fn finish_import(uid: i64, id: i64, attempt: i64, state: ImportState, error: Option<&str>, at: i64) -> bool;
        counted fn delete_imports_of(uid: i64, keep: usize) -> u64;
    }

    // Failed live updates and the repair task: not a request's round trips
    // (a write whose live step failed waits for its save, but the save is
    // the exception, not the request's cost).
    impl LiveRepairDocs for MeteredDocs {
        background fn save_live_repairs(repairs: &[(Owner, Vec<LiveKey>)], mark: i64, now: i64) -> ();
        background fn live_repairs(limit: usize) -> Vec<LiveRepairDoc>;
        background fn finish_live_repairs(ids: &[String]) -> ();
    }

    impl ModerationDocs for MeteredDocs {
        counted fn open_case(case: &CaseDoc) -> CaseDoc;
        counted fn file_report(report: &ReportDoc) -> Option<(ReportDoc, bool)>;
        batch(ids) fn cases_by_ids(ids: &[i64]) -> Vec<CaseDoc>;
        counted fn cases_page(open: bool, account: Option<i64>, before: Option<i64>, limit: usize) -> Vec<CaseDoc>;
        counted fn reports_of_case(case_id: i64, after: Option<i64>, limit: usize) -> Vec<ReportDoc>;
        counted fn reports_by_reporter(reporter: i64, before: Option<i64>, limit: usize) -> Vec<ReportDoc>;
        counted fn hold_in_case(held: &HeldPostDoc, shown: &HeldPost) -> Option<bool>;
        counted fn held_posts_of_case(case_id: i64, after: Option<i64>, limit: usize) -> Vec<(i64, Option<u64>)>;
        counted fn forget_held_post(post_id: i64) -> ();
        counted fn close_case(case_id: i64, closing: &CaseClosing) -> Option<CaseDoc>;
        // The sweep that finishes telling, not a request's round trip.
        background fn unfinished_cases(before: i64, limit: usize) -> Vec<i64>;
        counted fn mark_finished(case_id: i64) -> ();
        counted fn append_audit(entry: &AuditDoc) -> ();
        counted fn audit_page(before: Option<i64>, limit: usize) -> Vec<AuditDoc>;
        background fn oldest_open_case() -> Option<CaseDoc>;
        counted fn instance_info() -> Option<InstanceDoc>;
        counted fn set_instance_info(info: &InstanceDoc) -> ();
        background fn content_filters() -> Vec<ContentFilterDoc>;
        counted fn insert_content_filter(filter: &ContentFilterDoc) -> ();
        counted fn update_content_filter(filter: &ContentFilterDoc) -> bool;
        counted fn delete_content_filter(id: i64) -> bool;
        counted fn insert_strike(strike: &StrikeDoc) -> ();
        batch(ids) fn strikes_by_ids(ids: &[i64]) -> Vec<StrikeDoc>;
        counted fn strikes_of(uid: i64, before: Option<i64>, limit: usize) -> Vec<StrikeDoc>;
        counted fn record_appeal(strike_id: i64, appeal: &StrikeAppeal) -> bool;
        counted fn overturn_strike(strike_id: i64, at: i64) -> bool;
        counted fn lift_strikes(uid: i64, at: i64) -> ();
        // An erasure's, not a request's round trip.
        background fn erase_report_comment(report: &ReportDoc) -> ();
        // The retention sweep and an erasure's, not a request's round trips.
        background fn erase_snapshots(account: Option<i64>, before: i64, limit: usize) -> u64;
        background fn delete_strikes_of(uid: i64, limit: usize) -> u64;
    }

    impl DeviceModelDocs for MeteredDocs {
        counted fn device_models() -> Vec<DeviceModelDoc>;
        counted fn upsert_device_models(models: &[DeviceModelDoc]) -> ();
        counted fn delete_device_model(key: &str) -> bool;
    }

    impl MediaDocs for MeteredDocs {
        counted fn insert_media(media: &MediaDoc) -> ();
        batch(ids) fn media_by_ids(uid: i64, ids: &[i64]) -> Vec<MediaDoc>;
        batch(ids) fn move_media(uid: i64, ids: &[i64], from: MediaState, to: MediaState, since: i64) -> u64;
        counted fn describe_media(uid: i64, id: i64, description: &str, focus: Option<crate::domain::media::Focus>) -> Option<MediaDoc>;
        batch(ids) fn attach_media(uid: i64, ids: &[i64], post_id: i64, now: i64) -> u64;
        batch(ids) fn detach_media(uid: i64, ids: &[i64], post_id: i64, now: i64) -> ();
        // The sweeps' and an account's erasure and export, not a request's.
        background fn media_in_state_before(state: MediaState, before: i64, limit: usize) -> Vec<MediaDoc>;
        background fn media_of(uid: i64, after: Option<i64>, limit: usize) -> Vec<MediaDoc>;
        batch(ids) fn delete_media(uid: i64, ids: &[i64]) -> u64;
    }

    impl FavoriteDocs for MeteredDocs {
        counted fn insert_favorite(favorite: &FavoriteDoc) -> bool;
        counted fn delete_favorite(uid: i64, post_id: i64) -> bool;
        counted fn favorites_page(uid: i64, before: Option<i64>, limit: usize) -> Vec<FavoriteDoc>;
        background fn delete_favorites_of(uid: i64, limit: usize) -> u64;
    }

    impl LabelDocs for MeteredDocs {
        counted fn insert_label(label: &LabelDoc) -> ();
        counted fn labels_of(owner: i64, limit: usize) -> Vec<LabelDoc>;
        batch(ids) fn labels_by_ids(ids: &[(i64, i64)]) -> Vec<LabelDoc>;
        counted fn update_label(owner: i64, id: i64, name: Option<&str>, members: Option<&[i64]>, at: i64) -> Option<LabelDoc>;
        counted fn delete_label(owner: i64, id: i64) -> bool;
        background fn delete_labels_of(owner: i64, limit: usize) -> u64;
    }

    impl ShareDocs for MeteredDocs {
        counted fn insert_share(share: &ShareDoc) -> bool;
        batch(post_ids) fn share_ids_of_posts(post_ids: &[i64]) -> Vec<(i64, i64)>;
        background fn shares_by_user(uid: i64, before: Option<i64>, limit: usize) -> Vec<ShareDoc>;
        background fn delete_share(share: &ShareDoc) -> bool;
    }

    // Written by the view flusher, off every request's path.
    impl ViewDocs for MeteredDocs {
        background fn record_views(batch: i64, views: &[ViewDoc]) -> usize;
        batch(post_ids) fn view_counts(post_ids: &[i64]) -> Vec<(i64, u64)>;
        counted fn views_page(uid: i64, since: i64, before: Option<i64>, limit: usize) -> Vec<ViewDoc>;
        background fn purge_views_before(before: i64, limit: usize) -> u64;
        background fn delete_views_of(uid: i64, limit: usize) -> u64;
    }

    impl IdempotencyDocs for MeteredDocs {
        counted fn claim_idempotency_key(key: &IdempotencyDoc, now: i64, stale_before: i64) -> KeyClaim;
        counted fn complete_idempotency_key(id: &str, started_at: i64, status: u16, body: &str) -> ();
        counted fn release_idempotency_key(id: &str, started_at: i64) -> ();
        background fn purge_expired_idempotency_keys(now: i64, limit: usize) -> u64;
    }

    impl StreamStore for MeteredLive {
        // A stream's, not a request's: opened, read and renewed by the
        // streams held open, in the background of every request.
        background fn open_event_log(uid: i64, bounds: LogBounds) -> EventId;
        counted fn append_events(events: &[NewEvent], bounds: LogBounds) -> Vec<i64>;
        background fn events_after(uid: i64, after: EventId, max: usize) -> LogRead;
        background fn keep_event_logs(uids: &[i64], bounds: LogBounds) -> Vec<bool>;
        // A pulled author's fan-out's, in the background.
        background fn logged_account_count() -> u64;
        background fn logged_accounts(cursor: u64, count: usize) -> (Vec<i64>, u64);
        counted fn publish(message: &str) -> ();
        background fn bus() -> tokio::sync::broadcast::Receiver<BusNote>;
        counted fn put_stream_ticket(holder: i64, ticket: &str, value: &str, ttl_ms: u64) -> bool;
        background fn take_stream_ticket(ticket: &str) -> Option<String>;
        background fn register_stream(uid: i64, stream: i64, now_ms: i64, stale_before: i64, max: usize) -> Vec<i64>;
        background fn renew_streams(streams: &[(i64, i64)], now_ms: i64) -> ();
        background fn unregister_stream(uid: i64, stream: i64) -> ();
        counted fn stream_registered(uid: i64, stream: i64) -> bool;
    }

    impl LiveStore for MeteredLive {
        counted fn ping() -> ();
        counted fn read(read: &LiveRead) -> LiveAnswer;
        writeback fn fill(fill: &LiveFill) -> ();
        counted fn apply(changes: &[Changes]) -> ();
        counted fn drop_keys(owner: Owner, keys: &[LiveKey]) -> ();
        counted fn push_to_timelines(post_id: i64, uids: &[i64], max: usize) -> ();
        // The repair tools and tests, not a request's round trip.
        background fn clear_derived() -> usize;
        // The background poll, not a request's round trip.
        background fn table_version(table: SharedTable) -> u64;
        counted fn bump_table_version(table: SharedTable) -> u64;
        // A fan-out's note and every instance's poll: no request's trips.
        background fn note_pulled_author_posted(author: i64, post: i64) -> ();
        background fn pulled_authors_posted_after(seq: u64) -> PulledNotes;
        counted fn queue_array_refreshes(post_ids: &[i64]) -> ();
        // The applier's, off every request's path.
        background fn take_array_refreshes(consumer: &str, max: usize, reclaim_idle_ms: u64) -> Vec<(String, i64)>;
        background fn ack_array_refreshes(entries: &[String]) -> ();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::{self, documents::EmbeddedDocs, live::MemoryLive};

    #[tokio::test]
    async fn requests_count_their_round_trips_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("moments-metered-{}", crate::ids::next_id()));
        let trips = Arc::new(RoundTrips::default());
        let faults = Arc::new(Faults::default());
        let docs = MeteredDocs::new(
            Arc::new(EmbeddedDocs::new(
                embedded::open(&dir, 1 << 20).unwrap(),
                10,
            )),
            trips.clone(),
            faults.clone(),
        );
        let live = MeteredLive::new(Arc::new(MemoryLive::new(100)), trips.clone(), faults);
        let ((), per_request) = count_request_trips(async {
            // Start-up, not counted.
            docs.apply_schemas().await.unwrap();
            docs.users_by_ids(&[1, 2]).await.unwrap();
            docs.follow_counts(1).await.unwrap();
            live.ping().await.unwrap();
            // Empty batches, background calls and write-backs are no
            // request's round trips.
            docs.users_by_ids(&[]).await.unwrap();
            docs.follows_from(&[]).await.unwrap();
            docs.purge_expired_sessions(0, 10).await.unwrap();
            docs.accounts_being_erased(10).await.unwrap();
            docs.claim_fan_outs(0, 0, 10).await.unwrap();
            docs.delete_fan_out(1).await.unwrap();
            live.table_version(SharedTable::DeviceModels).await.unwrap();
            live.fill(&LiveFill::default()).await.unwrap();
        })
        .await;
        assert_eq!(per_request, (2, 1));
        assert_eq!(trips.snapshot(), (2, 1));
        assert_eq!(trips.live_writebacks.load(Ordering::Relaxed), 1);
        // Outside a request only the totals move.
        docs.totals().await.unwrap();
        assert_eq!(trips.snapshot(), (3, 1));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_readme_names_every_port() {
        let readme = include_str!("../../README.md");
        let built = readme
            .lines()
            .find(|l| l.starts_with("- `src/store/`:"))
            .expect("the README's line on src/store/");
        let labels = &readme[readme
            .find("`port` the store trait")
            .expect("the README's metrics labels")..];
        let labels = &labels[..labels.find(')').unwrap()];
        for port in PORTS {
            let named = format!("`{port}`");
            assert!(
                built.contains(&named),
                "README's src/store/ line lacks {named}"
            );
            assert!(
                labels.contains(&named),
                "README's metrics labels lack {named}"
            );
        }
    }
}
