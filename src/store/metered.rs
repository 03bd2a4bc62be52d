//! Round-trip counters around the ports. Every store call is one round trip,
//! so these counters are how the "a page of N posts costs a constant number
//! of round trips" promise is checked, in tests and in production.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

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

fn note_request_trip(docs: u32, live: u32) {
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

pub struct MeteredDocs {
    inner: Arc<dyn DocStore>,
    trips: Arc<RoundTrips>,
}

pub struct MeteredLive {
    inner: Arc<dyn LiveStore>,
    trips: Arc<RoundTrips>,
}

impl MeteredDocs {
    pub fn new(inner: Arc<dyn DocStore>, trips: Arc<RoundTrips>) -> Self {
        Self { inner, trips }
    }
    fn tick(&self) {
        self.trips.docs.fetch_add(1, Ordering::Relaxed);
        note_request_trip(1, 0);
    }
}

impl MeteredLive {
    pub fn new(inner: Arc<dyn LiveStore>, trips: Arc<RoundTrips>) -> Self {
        Self { inner, trips }
    }
    fn tick(&self) {
        self.trips.live.fetch_add(1, Ordering::Relaxed);
        note_request_trip(0, 1);
    }
}

/// Empty batches are answered without a round trip by the adapters, so they
/// are not counted either.
fn counts<T>(items: &[T]) -> bool {
    !items.is_empty()
}

#[async_trait]
impl DocStore for MeteredDocs {
    async fn ping(&self) -> StoreResult<()> {
        self.tick();
        self.inner.ping().await
    }

    async fn apply_schemas(&self) -> StoreResult<()> {
        self.inner.apply_schemas().await
    }

    async fn post_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>> {
        self.tick();
        self.inner.post_ids_after(after, limit).await
    }

    async fn user_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>> {
        self.tick();
        self.inner.user_ids_after(after, limit).await
    }

    async fn totals(&self) -> StoreResult<(u64, u64)> {
        self.tick();
        self.inner.totals().await
    }

    async fn lease_instance_id(
        &self,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<u16>> {
        // Start-up and its heartbeat, not a request's round trips.
        self.inner.lease_instance_id(holder, now, until).await
    }

    async fn renew_instance_id(&self, id: u16, holder: &str, until: i64) -> StoreResult<bool> {
        self.inner.renew_instance_id(id, holder, until).await
    }
}

#[async_trait]
impl AccountDocs for MeteredDocs {
    async fn insert_user(&self, user: &UserDoc) -> StoreResult<()> {
        self.tick();
        self.inner.insert_user(user).await
    }

    async fn user_by_username(&self, username: &str) -> StoreResult<Option<UserDoc>> {
        self.tick();
        self.inner.user_by_username(username).await
    }

    async fn users_by_ids(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>> {
        if counts(uids) {
            self.tick();
        }
        self.inner.users_by_ids(uids).await
    }

    async fn update_profile(
        &self,
        uid: i64,
        nick_name: Option<&str>,
        head_img: Option<&str>,
    ) -> StoreResult<Option<UserDoc>> {
        self.tick();
        self.inner.update_profile(uid, nick_name, head_img).await
    }

    async fn set_password_hash(&self, uid: i64, password_hash: &str) -> StoreResult<()> {
        self.tick();
        self.inner.set_password_hash(uid, password_hash).await
    }

    async fn insert_session(&self, session: &SessionDoc) -> StoreResult<()> {
        self.tick();
        self.inner.insert_session(session).await
    }

    async fn session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<SessionDoc>> {
        self.tick();
        self.inner.session_by_token_hash(token_hash).await
    }

    async fn sessions_of_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<SessionDoc>> {
        self.tick();
        self.inner.sessions_of_user(uid, limit).await
    }

    async fn delete_sessions(&self, uid: i64, ids: &[i64]) -> StoreResult<u64> {
        if counts(ids) {
            self.tick();
        }
        self.inner.delete_sessions(uid, ids).await
    }

    async fn touch_session(&self, id: i64, at: i64) -> StoreResult<()> {
        self.tick();
        self.inner.touch_session(id, at).await
    }

    async fn erase_user(&self, uid: i64) -> StoreResult<bool> {
        self.tick();
        self.inner.erase_user(uid).await
    }
    async fn accounts_being_erased(&self, limit: usize) -> StoreResult<Vec<i64>> {
        // The background sweep, not a request's round trip.
        self.inner.accounts_being_erased(limit).await
    }
    async fn erasure_done(&self, uid: i64) -> StoreResult<()> {
        self.tick();
        self.inner.erasure_done(uid).await
    }
    async fn purge_expired_sessions(&self, now: i64, limit: usize) -> StoreResult<u64> {
        // The background sweep, not a request's round trip.
        self.inner.purge_expired_sessions(now, limit).await
    }

    async fn touch_user(&self, uid: i64, at: i64) -> StoreResult<()> {
        self.tick();
        self.inner.touch_user(uid, at).await
    }
}

#[async_trait]
impl PostDocs for MeteredDocs {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        self.tick();
        self.inner.insert_post(post).await
    }
    async fn comments_by_author(&self, uid: i64, limit: usize) -> StoreResult<Vec<CommentDoc>> {
        self.tick();
        self.inner.comments_by_author(uid, limit).await
    }
    async fn likes_by_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<LikeDoc>> {
        self.tick();
        self.inner.likes_by_user(uid, limit).await
    }

    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>> {
        if counts(ids) {
            self.tick();
        }
        self.inner.posts_by_ids(ids).await
    }

    async fn delete_post(&self, id: i64) -> StoreResult<bool> {
        self.tick();
        self.inner.delete_post(id).await
    }

    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        self.tick();
        self.inner.post_ids_by_author(uid, before, limit).await
    }

    async fn insert_comment(&self, comment: &CommentDoc, cap: usize) -> StoreResult<()> {
        self.tick();
        self.inner.insert_comment(comment, cap).await
    }

    async fn comments_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<CommentDoc>> {
        if counts(ids) {
            self.tick();
        }
        self.inner.comments_by_ids(ids).await
    }

    async fn delete_comment(&self, comment: &CommentDoc) -> StoreResult<bool> {
        self.tick();
        self.inner.delete_comment(comment).await
    }

    async fn comments_page(
        &self,
        post_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        self.tick();
        self.inner.comments_page(post_id, before, limit).await
    }

    async fn comment_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if counts(post_ids) {
            self.tick();
        }
        self.inner.comment_ids_of_posts(post_ids).await
    }

    async fn reply_ids_of_comments(&self, comment_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if counts(comment_ids) {
            self.tick();
        }
        self.inner.reply_ids_of_comments(comment_ids).await
    }

    async fn insert_like(&self, like: &LikeDoc, cap: usize) -> StoreResult<bool> {
        self.tick();
        self.inner.insert_like(like, cap).await
    }

    async fn delete_like(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>> {
        self.tick();
        self.inner.delete_like(kind, target_id, uid).await
    }

    async fn likes_of_targets(
        &self,
        kind: LikeKind,
        target_ids: &[i64],
    ) -> StoreResult<Vec<LikeDoc>> {
        if counts(target_ids) {
            self.tick();
        }
        self.inner.likes_of_targets(kind, target_ids).await
    }

    async fn likes_page(
        &self,
        kind: LikeKind,
        target_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        self.tick();
        self.inner.likes_page(kind, target_id, before, limit).await
    }

    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        if counts(authors) {
            self.tick();
        }
        self.inner.post_ids_by_authors(authors, before, limit).await
    }
}

#[async_trait]
impl SocialDocs for MeteredDocs {
    async fn insert_follow(&self, follow: &FollowDoc) -> StoreResult<bool> {
        self.tick();
        self.inner.insert_follow(follow).await
    }

    async fn delete_follow(&self, follower: i64, followee: i64) -> StoreResult<bool> {
        self.tick();
        self.inner.delete_follow(follower, followee).await
    }

    async fn followers_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.tick();
        self.inner.followers_page(uid, before, limit).await
    }

    async fn following_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.tick();
        self.inner.following_page(uid, before, limit).await
    }

    async fn follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)> {
        self.tick();
        self.inner.follow_counts(uid).await
    }

    async fn follow_edges(&self, uid: i64, others: &[i64]) -> StoreResult<(Vec<i64>, Vec<i64>)> {
        if counts(others) {
            self.tick();
        }
        self.inner.follow_edges(uid, others).await
    }

    async fn insert_block(&self, block: &BlockDoc) -> StoreResult<bool> {
        self.tick();
        self.inner.insert_block(block).await
    }

    async fn delete_block(&self, blocker: i64, blocked: i64) -> StoreResult<bool> {
        self.tick();
        self.inner.delete_block(blocker, blocked).await
    }

    async fn blocks_between(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        if counts(others) {
            self.tick();
        }
        self.inner.blocks_between(uid, others).await
    }

    async fn active_followers(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<(Vec<i64>, Option<i64>)> {
        self.tick();
        self.inner.active_followers(uid, since, before, limit).await
    }

    async fn follower_counts(&self, uids: &[i64]) -> StoreResult<Vec<(i64, u64)>> {
        if counts(uids) {
            self.tick();
        }
        self.inner.follower_counts(uids).await
    }

    async fn follows_from(&self, uids: &[i64]) -> StoreResult<Vec<FollowDoc>> {
        if counts(uids) {
            self.tick();
        }
        self.inner.follows_from(uids).await
    }

    async fn blocks_involving(&self, uids: &[i64]) -> StoreResult<Vec<BlockDoc>> {
        if counts(uids) {
            self.tick();
        }
        self.inner.blocks_involving(uids).await
    }
}

#[async_trait]
impl NotificationDocs for MeteredDocs {
    async fn insert_notification(&self, n: &NotificationDoc) -> StoreResult<bool> {
        self.tick();
        self.inner.insert_notification(n).await
    }

    async fn notifications_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationDoc>> {
        self.tick();
        self.inner
            .notifications_page(uid, since, before, limit)
            .await
    }

    async fn unread_notifications(&self, uid: i64, since: i64, cap: u64) -> StoreResult<u64> {
        self.tick();
        self.inner.unread_notifications(uid, since, cap).await
    }

    async fn mark_notifications_read(&self, uid: i64, up_to: i64) -> StoreResult<()> {
        self.tick();
        self.inner.mark_notifications_read(uid, up_to).await
    }

    async fn delete_notifications_involving(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.tick();
        self.inner.delete_notifications_involving(uid, limit).await
    }
    async fn purge_notifications_before(&self, before: i64, limit: usize) -> StoreResult<u64> {
        // The background sweep, not a request's round trip.
        self.inner.purge_notifications_before(before, limit).await
    }
}

#[async_trait]
impl DeviceModelDocs for MeteredDocs {
    async fn device_models(&self) -> StoreResult<Vec<DeviceModelDoc>> {
        self.tick();
        self.inner.device_models().await
    }

    async fn upsert_device_models(&self, models: &[DeviceModelDoc]) -> StoreResult<()> {
        self.tick();
        self.inner.upsert_device_models(models).await
    }

    async fn delete_device_model(&self, key: &str) -> StoreResult<bool> {
        self.tick();
        self.inner.delete_device_model(key).await
    }
}

#[async_trait]
impl LiveStore for MeteredLive {
    async fn ping(&self) -> StoreResult<()> {
        self.tick();
        self.inner.ping().await
    }
    async fn read(&self, read: &LiveRead) -> StoreResult<LiveAnswer> {
        self.tick();
        self.inner.read(read).await
    }
    async fn fill(&self, fill: &LiveFill) -> StoreResult<()> {
        self.trips.live_writebacks.fetch_add(1, Ordering::Relaxed);
        self.inner.fill(fill).await
    }
    async fn apply(&self, changes: &[Changes]) -> StoreResult<()> {
        self.tick();
        self.inner.apply(changes).await
    }
    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()> {
        self.tick();
        self.inner.drop_keys(owner, keys).await
    }
    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()> {
        self.tick();
        self.inner.push_to_timelines(post_id, uids, max).await
    }
    async fn clear_derived(&self) -> StoreResult<usize> {
        self.inner.clear_derived().await
    }
    async fn device_table_version(&self) -> StoreResult<u64> {
        // The background poll, not a request's round trip.
        self.inner.device_table_version().await
    }
    async fn bump_device_table_version(&self) -> StoreResult<u64> {
        self.tick();
        self.inner.bump_device_table_version().await
    }
}
