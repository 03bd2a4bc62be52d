//! The live state is derived: losing it, or failing to update it, changes no
//! answer; and reads cost a constant number of round trips.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use moments::startup::connect_stores;
use moments::store::*;
use serde_json::{json, Value};

use crate::helpers::{
    follow, spawn_app, spawn_app_on, stable, test_settings, wait_until, whole_feed, TestApp, User,
};

/// A post with everything: pictures, comments, a reply, post and comment likes.
async fn rich_post(app: &TestApp) -> (i64, Vec<User>) {
    let mut users = Vec::new();
    for name in ["zhangsan", "lisi", "wangwu", "zhaoliu"] {
        users.push(app.user(name).await);
    }
    let (_, post) = app
        .post(
            "/api/v1/posts",
            Some(&users[0].token),
            json!({"category": "PICTURE", "content": "全家福", "pictureUrls": ["https://cdn/1.jpg"], "device": "Redmi 6"}),
        )
        .await;
    let id = post["id"].as_i64().unwrap();
    let mut last = None;
    for (i, u) in users.iter().enumerate() {
        let c = app.comment(u, id, &format!("评论{i}"), last).await;
        last = Some(c["id"].as_i64().unwrap());
        app.put(&format!("/api/v1/posts/{id}/like"), Some(&u.token))
            .await;
        app.put(
            &format!("/api/v1/comments/{}/like", c["id"]),
            Some(&users[0].token),
        )
        .await;
    }
    app.delete(&format!("/api/v1/posts/{id}/like"), Some(&users[2].token))
        .await;
    (id, users)
}

async fn views(app: &TestApp, id: i64, users: &[User]) -> Vec<Value> {
    let mut out = Vec::new();
    for u in users.iter().map(|u| Some(u.token.as_str())).chain([None]) {
        out.push(stable(&app.get(&format!("/api/v1/posts/{id}"), u).await.1));
        let mut comments = app.get(&format!("/api/v1/posts/{id}/comments"), u).await.1;
        comments.as_object_mut().unwrap().remove("serverTime");
        out.push(comments);
    }
    out
}

#[tokio::test]
async fn losing_the_live_state_changes_no_answer() {
    let app = spawn_app().await;
    let (id, users) = rich_post(&app).await;
    let before = views(&app, id, &users).await;
    assert_eq!(before[0]["likeCount"], 3);
    assert_eq!(before[0]["commentCount"], 4);
    let dropped = app.lose_live_state().await;
    assert!(
        dropped > 5,
        "the live state was there to lose ({dropped} keys)"
    );
    let after = views(&app, id, &users).await;
    assert_eq!(before, after);
    // And once more, now from the rebuilt live state.
    assert_eq!(before, views(&app, id, &users).await);
}

/// The real Redis adapter, with a switch that makes post-write updates fail
/// (as when Redis drops the connection between the MongoDB write and the
/// live update).
struct FailingUpdates {
    inner: Arc<dyn LiveStore>,
    failing: AtomicBool,
    failing_pushes: AtomicBool,
}

moments::delegate_stream_store!(FailingUpdates, inner);

#[async_trait]
impl LiveStore for FailingUpdates {
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
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(anyhow::anyhow!(
                "injected: connection reset"
            )));
        }
        self.inner.apply(changes).await
    }
    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(anyhow::anyhow!(
                "injected: connection reset"
            )));
        }
        self.inner.drop_keys(owner, keys).await
    }
    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()> {
        if self.failing_pushes.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(anyhow::anyhow!(
                "injected: connection reset"
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
async fn a_failed_live_update_loses_no_write_and_serves_no_stale_answer() {
    let (app, failing) = failing_app().await;
    let a = app.user("writer").await;
    let b = app.user("reader").await;
    let id = app.text_post(&a, "p").await;
    // Warm the live state, then break the update step.
    assert_eq!(
        app.get(&format!("/api/v1/posts/{id}"), None).await.1["likeCount"],
        0
    );
    failing.failing.store(true, Ordering::SeqCst);

    let (s, state) = app
        .put(&format!("/api/v1/posts/{id}/like"), Some(&b.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(state, json!({"liked": true, "likeCount": 1}));
    let c = app.comment(&b, id, "still here", None).await;
    let (_, p) = app
        .get(&format!("/api/v1/posts/{id}"), Some(&b.token))
        .await;
    assert_eq!(
        (p["likeCount"].as_i64(), p["commentCount"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(p["likedByMe"], true);
    assert_eq!(p["comments"][0]["id"], c["id"]);

    // The store answers again: the repair pass drops the stale keys and
    // the rebuilt state agrees with the documents.
    failing.failing.store(false, Ordering::SeqCst);
    app.ctx.repair.drain(failing.as_ref()).await;
    assert_eq!(app.ctx.repair.pending_count(), 0);
    let (_, p) = app
        .get(&format!("/api/v1/posts/{id}"), Some(&b.token))
        .await;
    assert_eq!(
        (p["likeCount"].as_i64(), p["commentCount"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(p["likedByMe"], true);
}

/// An app whose live store fails on demand.
async fn failing_app() -> (TestApp, Arc<FailingUpdates>) {
    let settings = test_settings();
    let (docs, live) = connect_stores(&settings).await.unwrap();
    let failing = Arc::new(FailingUpdates {
        inner: live,
        failing: AtomicBool::new(false),
        failing_pushes: AtomicBool::new(false),
    });
    (spawn_app_on(settings, docs, failing.clone()).await, failing)
}

#[tokio::test]
async fn an_unfollow_whose_live_update_failed_still_leaves_the_feed_at_once() {
    let (app, failing) = failing_app().await;
    let author = app.user("followed").await;
    let reader = app.user("unfollower").await;
    follow(&app, &reader, &author).await;
    let id = app.text_post(&author, "soon gone from the feed").await;
    // Built and cached: the timeline and the following set are live now.
    assert_eq!(whole_feed(&app, &reader, 20).await, vec![id]);
    assert_eq!(whole_feed(&app, &reader, 20).await, vec![id]);

    failing.failing.store(true, Ordering::SeqCst);
    let (s, _) = app
        .delete(
            &format!("/api/v1/users/{}/follow", author.uid),
            Some(&reader.token),
        )
        .await;
    assert!(s.is_success(), "the unfollow itself succeeds: {s}");
    assert_eq!(
        whole_feed(&app, &reader, 20).await,
        Vec::<i64>::new(),
        "the stale timeline and following set must not be served"
    );

    failing.failing.store(false, Ordering::SeqCst);
    // Background work started while writes failed (a read's write-back, the
    // unfollow's own) may join the list a moment after a drain: drained
    // again until empty, which it must become.
    wait_until("the repair list drains", || {
        let (app, failing) = (&app, &failing);
        async move {
            app.ctx.repair.drain(failing.as_ref()).await;
            app.ctx.repair.pending_count() == 0
        }
    })
    .await;
    assert_eq!(whole_feed(&app, &reader, 20).await, Vec::<i64>::new());
}

async fn trips_of(app: &TestApp, path: &str) -> (u64, u64) {
    let before = app.ctx.round_trips.snapshot();
    let (s, body) = app.get(path, None).await;
    assert_eq!(s.as_u16(), 200, "{body}");
    let after = app.ctx.round_trips.snapshot();
    (after.0 - before.0, after.1 - before.1)
}

#[tokio::test]
async fn reads_cost_a_constant_number_of_round_trips() {
    let app = spawn_app().await;
    let (id, users) = rich_post(&app).await;
    let author = &users[0];
    for i in 0..11 {
        let p = app.text_post(author, &format!("more {i}")).await;
        app.comment(&users[1], p, "hi", None).await;
        app.put(&format!("/api/v1/posts/{p}/like"), Some(&users[2].token))
            .await;
    }
    let one = format!("/api/v1/posts/{id}");
    let page = |n: usize| format!("/api/v1/users/{}/posts?limit={n}", author.uid);
    // Warm everything, and wait for the background work to land: the
    // fan-outs of the posts, and the write-back of what the warming reads
    // rebuilt (until it has, a read still reaches the documents).
    wait_until(
        "no fan-out runs and warm reads reach no document",
        || async {
            app.ctx.fan_outs.running() == 0
                && trips_of(&app, &one).await.0 == 0
                && trips_of(&app, &page(12)).await.0 == 1
        },
    )
    .await;

    // A warm single read touches the live store only: one batched read of
    // generations (the post's, and those of everyone whose card it shows,
    // named by this instance's copies of it), whose copies are then served
    // (`near_cache`), and the anonymous reader's per-address rate-limit
    // check (a signed-in reader's rides in its session lookup).
    const LIMIT_CHECK: u64 = 1;
    let (docs, live) = trips_of(&app, &one).await;
    assert_eq!(docs, 0, "a warm read must not touch MongoDB");
    assert_eq!(live, 1 + LIMIT_CHECK, "{live} live round trips");

    // A page costs the same whatever its size: one query for the ids, and
    // the same batched live reads.
    for n in [1, 2, 12] {
        let (docs, live) = trips_of(&app, &page(n)).await;
        assert_eq!(docs, 1, "page of {n}: only the id query reaches MongoDB");
        assert_eq!(
            live,
            1 + LIMIT_CHECK,
            "page of {n}: {live} live round trips"
        );
    }

    // Cold (live state lost), still bounded: one batched query per kind of
    // miss (posts, likers, comment ids, shares, view counts; comments, their
    // likers, replies, users; users again for comment authors), plus the id
    // query, whatever the page size. The instance's near-cache copies turn
    // out outdated (the generations moved on): one live round trip more,
    // to read the values their generations no longer vouch for.
    const OUTDATED_COPIES: u64 = 1;
    for n in [1, 12] {
        app.lose_live_state().await;
        let (docs, live) = trips_of(&app, &page(n)).await;
        assert!(
            docs <= 1 + 10,
            "cold page of {n}: {docs} document round trips"
        );
        assert!(
            live <= 3 + LIMIT_CHECK + OUTDATED_COPIES,
            "cold page of {n}: {live} live round trips"
        );
    }
}

#[tokio::test]
async fn a_failed_fan_out_costs_a_rebuild_never_a_missing_post() {
    let (app, failing) = failing_app().await;
    let author = app.user("unlucky").await;
    let fan = app.user("waiting").await;
    follow(&app, &fan, &author).await;
    // Both timelines built (and empty) before the post.
    assert_eq!(whole_feed(&app, &fan, 20).await, Vec::<i64>::new());
    assert_eq!(whole_feed(&app, &author, 20).await, Vec::<i64>::new());

    failing.failing_pushes.store(true, Ordering::SeqCst);
    let id = app.text_post(&author, "pushed into the void").await;
    // The fan-out runs in the background; once it has failed, both
    // timelines are awaiting their drop and are read from the documents.
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = whole_feed(&app, &fan, 20).await;
        if seen == vec![id] {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(seen, vec![id], "the fan's feed must come to show the post");
    assert_eq!(whole_feed(&app, &author, 20).await, vec![id]);

    // The store answers again: the timelines are dropped and rebuilt.
    failing.failing_pushes.store(false, Ordering::SeqCst);
    app.ctx.repair.drain(failing.as_ref()).await;
    assert_eq!(app.ctx.repair.pending_count(), 0);
    assert_eq!(whole_feed(&app, &fan, 20).await, vec![id]);
    assert_eq!(whole_feed(&app, &fan, 20).await, vec![id]);
    assert_eq!(whole_feed(&app, &author, 20).await, vec![id]);
}

#[tokio::test]
async fn a_post_without_comments_leaves_an_empty_hint_so_warm_reads_miss_nothing() {
    let app = spawn_app().await;
    let author = app.user("hint_author").await;
    let post = app.text_post(&author, "nobody has commented").await;
    let path = format!("/api/v1/posts/{post}");
    let hint = || async {
        let read = LiveRead {
            blobs: vec![BlobKey::CommentPeople(post)],
            ..Default::default()
        };
        app.ctx.live.read(&read).await.unwrap().blobs[0].clone()
    };
    assert_eq!(app.get(&path, Some(&author.token)).await.0.as_u16(), 200);
    // The hint is written back in the background with what the read rebuilt.
    wait_until("the read left the comment-people hint", || async {
        hint().await.is_some()
    })
    .await;
    let people: Vec<i64> = serde_json::from_str(&hint().await.unwrap()).unwrap();
    assert!(people.is_empty(), "{people:?}");
    // A comment puts its author in the hint on the next read.
    let reader = app.user("hint_reader").await;
    app.comment(&reader, post, "first", None).await;
    assert_eq!(app.get(&path, Some(&author.token)).await.0.as_u16(), 200);
    wait_until("the hint names the commenter", || async {
        hint()
            .await
            .and_then(|h| serde_json::from_str::<Vec<i64>>(&h).ok())
            .is_some_and(|p| p.contains(&reader.uid))
    })
    .await;
}
