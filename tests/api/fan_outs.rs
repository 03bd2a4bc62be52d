//! Unfinished fan-outs: saved by a stopping instance, claimed by one
//! instance at a time, resumed from where they got to until every
//! follower's timeline has the post. On both backends: the in-process live
//! state outlives an app here as Redis outlives a process, so on either a
//! push that never happened is a post missing from a timeline that exists.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use moments::domain::post::Visibility;
use moments::ids::{next_id, now_ms};
use moments::startup::connect_stores;
use moments::store::{
    Changes, FanOutDoc, LiveAnswer, LiveFill, LiveKey, LiveRead, LiveStore, Owner, PostDoc,
    SharedTable, StoreError, StoreResult,
};

use crate::helpers::{
    follow, spawn_app, spawn_app_on, spawn_stoppable_app_on, test_settings, whole_feed, TestApp,
    User,
};

const DAY_MS: i64 = 24 * 3600 * 1000;

fn fan_out(post_id: i64, author: i64, resume_before: Option<i64>) -> FanOutDoc {
    FanOutDoc {
        resume_before,
        saved_at: now_ms(),
        ..FanOutDoc::new(post_id, author, Visibility::Public, now_ms() - DAY_MS)
    }
}

/// Waits (at most 10 s) until the viewer's feed holds `post`.
async fn feed_gets(app: &TestApp, viewer: &User, post: i64) -> bool {
    for _ in 0..200 {
        if whole_feed(app, viewer, 50).await.contains(&post) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// An author and followers whose timelines exist (each read once) and so
/// get new posts only by being pushed them.
async fn author_and_followers(app: &TestApp, n: usize) -> (User, Vec<User>) {
    let author = app.user("saved_author").await;
    let mut followers = Vec::new();
    for i in 0..n {
        let f = app.user(&format!("saved_fan{i}")).await;
        follow(app, &f, &author).await;
        assert_eq!(whole_feed(app, &f, 10).await, Vec::<i64>::new());
        followers.push(f);
    }
    (author, followers)
}

#[tokio::test]
async fn a_saved_fan_out_is_claimed_by_one_caller_at_a_time() {
    let settings = test_settings();
    // The ports alone: an app's own sweep would claim what is saved here.
    let (docs, _) = connect_stores(&settings).await.unwrap();
    docs.apply_schemas().await.unwrap();
    let (post, author) = (next_id(), next_id());
    docs.save_fan_out(&fan_out(post, author, Some(42)))
        .await
        .unwrap();
    let now = now_ms();
    let (a, b) = tokio::join!(
        docs.claim_fan_outs(now, now + 1000, 10),
        docs.claim_fan_outs(now, now + 1000, 10)
    );
    let claimed: Vec<FanOutDoc> = a.unwrap().into_iter().chain(b.unwrap()).collect();
    assert_eq!(claimed.len(), 1, "two sweeps at once: one gets it");
    assert_eq!(claimed[0].post_id, post);
    assert_eq!(claimed[0].author, author);
    assert_eq!(claimed[0].resume_before, Some(42));
    assert_eq!(claimed[0].claimed_until, now + 1000);
    assert!(
        docs.claim_fan_outs(now + 999, now + 2000, 10)
            .await
            .unwrap()
            .is_empty(),
        "held while its claim lasts"
    );
    let again = docs
        .claim_fan_outs(now + 1001, now + 3000, 10)
        .await
        .unwrap();
    assert_eq!(
        again.len(),
        1,
        "a lapsed claim (its instance died) is taken again"
    );

    // A stopping instance saves how far it got, which releases the claim.
    docs.save_fan_out(&fan_out(post, author, Some(7)))
        .await
        .unwrap();
    let resumed = docs
        .claim_fan_outs(now + 1001, now + 4000, 10)
        .await
        .unwrap();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].resume_before, Some(7));

    docs.delete_fan_out(post).await.unwrap();
    assert!(docs
        .claim_fan_outs(i64::MAX / 2, i64::MAX / 2, 10)
        .await
        .unwrap()
        .is_empty());
    docs.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&settings.data_dir);
}

#[tokio::test]
async fn a_saved_fan_out_is_resumed_from_where_it_got_to() {
    let app = spawn_app().await;
    let (author, followers) = author_and_followers(&app, 4).await;
    let post = PostDoc::text(
        next_id(),
        author.uid,
        "published just before the instance stopped",
        now_ms(),
    );
    app.ctx.docs.insert_post(&post).await.unwrap();
    // Newest follow first, the order a fan-out pages in: the instance got
    // as far as the two newest followers, and left the two oldest.
    let edges = app
        .ctx
        .docs
        .followers_page(author.uid, None, 10)
        .await
        .unwrap();
    assert_eq!(edges[1].follower, followers[2].uid);
    app.ctx
        .docs
        .save_fan_out(&fan_out(post.id, author.uid, Some(edges[1].id)))
        .await
        .unwrap();

    // This instance's sweep may have claimed it first: either way it runs.
    moments::service::feed::fan_out_registry::resume_saved(&app.ctx)
        .await
        .unwrap();
    for f in &followers[..2] {
        assert!(
            feed_gets(&app, f, post.id).await,
            "a follower the fan-out had not reached yet lacks the post"
        );
    }
    // The two it had reached were not pushed again (here, where they never
    // were pushed, their timelines show it).
    for f in &followers[2..] {
        assert!(!whole_feed(&app, f, 50).await.contains(&post.id));
    }
    let now = now_ms();
    assert!(
        app.ctx
            .docs
            .claim_fan_outs(now + 2 * DAY_MS, now + 3 * DAY_MS, 10)
            .await
            .unwrap()
            .is_empty(),
        "a fan-out that ran to its end is forgotten"
    );
}

/// A live store whose pushes to followers hang once `holding` is set, until
/// `gate` closes, and then fail: a fan-out caught mid-way by a shutdown
/// that none of its pushes outlives.
struct HeldPushes {
    inner: Arc<dyn LiveStore>,
    holding: AtomicBool,
    /// Pushes to this user's timeline alone (an author's own) go through.
    author: AtomicI64,
    gate: tokio::sync::Semaphore,
    held: AtomicUsize,
}

moments::delegate_stream_store!(HeldPushes, inner);

#[async_trait]
impl LiveStore for HeldPushes {
    async fn ping(&self) -> StoreResult<()> {
        self.inner.ping().await
    }
    async fn read(&self, read: &LiveRead) -> StoreResult<LiveAnswer> {
        self.inner.read(read).await
    }
    async fn fill(&self, fill: &LiveFill) -> StoreResult<()> {
        self.inner.fill(fill).await
    }
    async fn apply(&self, changes: &[Changes]) -> StoreResult<()> {
        self.inner.apply(changes).await
    }
    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()> {
        self.inner.drop_keys(owner, keys).await
    }
    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()> {
        if self.holding.load(Ordering::SeqCst) && uids != [self.author.load(Ordering::SeqCst)] {
            self.held.fetch_add(1, Ordering::SeqCst);
            let _ = self.gate.acquire().await;
            return Err(StoreError::Unavailable(anyhow::anyhow!(
                "injected: the process ended"
            )));
        }
        self.inner.push_to_timelines(post_id, uids, max).await
    }
    async fn clear_derived(&self) -> StoreResult<usize> {
        self.inner.clear_derived().await
    }
    async fn table_version(&self, table: SharedTable) -> StoreResult<u64> {
        self.inner.table_version(table).await
    }
    async fn bump_table_version(&self, table: SharedTable) -> StoreResult<u64> {
        self.inner.bump_table_version(table).await
    }
    async fn note_pulled_author_posted(&self, author: i64, post: i64) -> StoreResult<()> {
        self.inner.note_pulled_author_posted(author, post).await
    }
    async fn pulled_authors_posted_after(
        &self,
        seq: u64,
    ) -> StoreResult<moments::store::PulledNotes> {
        self.inner.pulled_authors_posted_after(seq).await
    }
}

#[tokio::test]
async fn a_fan_out_cut_short_by_a_shutdown_is_saved_and_resumed_after_the_restart() {
    let mut settings = test_settings();
    settings.shutdown_timeout_secs = 1;
    let (docs, live) = connect_stores(&settings).await.unwrap();
    let held = Arc::new(HeldPushes {
        inner: live.clone(),
        holding: AtomicBool::new(false),
        author: AtomicI64::new(0),
        gate: tokio::sync::Semaphore::new(0),
        held: AtomicUsize::new(0),
    });
    let (first, stopper, running) =
        spawn_stoppable_app_on(settings.clone(), docs, held.clone()).await;
    let (author, followers) = author_and_followers(&first, 3).await;
    held.author.store(author.uid, Ordering::SeqCst);
    held.holding.store(true, Ordering::SeqCst);
    let post = first.text_post(&author, "caught mid-way").await;
    for _ in 0..200 {
        if held.held.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(first.ctx.fan_outs.running(), 1, "the fan-out is under way");
    assert!(held.held.load(Ordering::SeqCst) > 0, "its push hangs");

    stopper.stop();
    tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("stopped within its timeout and a little more")
        .unwrap()
        .unwrap();
    assert_eq!(first.ctx.fan_outs.running(), 0);
    // The push it had started ends now, and lands nowhere.
    held.gate.close();

    // The next instance on the same documents, and the same live state.
    let (docs, _) = connect_stores(&settings).await.unwrap();
    let second = spawn_app_on(settings.clone(), docs, live).await;
    for (i, f) in followers.iter().enumerate() {
        assert!(
            feed_gets(&second, f, post).await,
            "follower {i}'s timeline lacks the post after the restart"
        );
    }
    assert!(whole_feed(&second, &author, 10).await.contains(&post));
    drop(second);
    drop(first);
}
