//! Live updates (`GET /api/v1/stream`) through real HTTP: each kind of
//! event, resuming without loss, `reset` when resuming cannot be exact,
//! visibility at delivery, the bounds, tickets, slow readers, a lost live
//! store, signing out and stopping.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{follow, spawn_app_with, test_settings, TestApp, User};
use crate::sse::{self, Event, Sse};

fn quick() -> moments::config::Settings {
    let mut s = test_settings();
    s.stream.heartbeat_secs = 1;
    // Budgets have their own tests; these make hundreds of writes.
    s.rate_limits = None;
    s
}

async fn stream(app: &TestApp, user: &User, query: &str, last: Option<&str>) -> Sse {
    sse::open(
        &app.client,
        &format!("{}/api/v1/stream{query}", app.base),
        Some(&user.token),
        last,
    )
    .await
    .map_err(|(s, b, _)| format!("{s} {b}"))
    .expect("a stream")
}

/// A stream, read up to its `ready`: its id and the events before it.
async fn opened(
    app: &TestApp,
    user: &User,
    query: &str,
    last: Option<&str>,
) -> (Sse, Value, Vec<Event>) {
    let mut s = stream(app, user, query, last).await;
    let (ready, before) = s.until("ready", |_| true).await;
    assert_eq!(s.retries.first(), Some(&3000), "a retry: hint first");
    (s, ready.data, before)
}

async fn friends(app: &TestApp, a: &User, b: &User) {
    follow(app, a, b).await;
    follow(app, b, a).await;
}

async fn post(app: &TestApp, user: &User, body: Value) -> i64 {
    let (s, p) = app.post("/api/v1/posts", Some(&user.token), body).await;
    assert_eq!(s, StatusCode::CREATED, "{p}");
    p["id"].as_i64().unwrap()
}

async fn mark_read(app: &TestApp, user: &User) {
    let (s, b) = app
        .post("/api/v1/notifications/read", Some(&user.token), Value::Null)
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
}

fn is_post(id: i64) -> impl Fn(&Value) -> bool {
    move |d| d["postId"] == id
}

/// A counter of the process's metrics (shared by every app in it).
fn metric(name: &str) -> f64 {
    moments::metrics::render(0)
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Waits until `user`'s feed holds `post`: the fan-out reached them.
async fn in_feed(app: &TestApp, user: &User, post: i64) {
    crate::helpers::wait_until("the post is in the feed", || async {
        let (_, feed) = app.get("/api/v1/feed", Some(&user.token)).await;
        feed["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(|p| p["id"] == post))
    })
    .await;
}

#[tokio::test]
async fn every_kind_of_event_reaches_the_stream() {
    let app = spawn_app_with(quick()).await;
    let (a, b) = (app.user("u_sa").await, app.user("u_sb").await);
    friends(&app, &a, &b).await;
    let (mut s, ready, _) = opened(&app, &b, "", None).await;
    let stream_id = ready["streamId"].as_i64().unwrap();
    assert_eq!(ready["resumed"], false);

    // post.new: a post entered b's home feed.
    let p = app.text_post(&a, "live").await;
    let (new, _) = s.until("post.new", is_post(p)).await;
    assert_eq!(new.data, json!({"postId": p, "authorUid": a.uid}));

    // Watching it: its counts now, then as they move.
    let (st, w) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/stream/{stream_id}/watch"),
            Some(&b.token),
            Some(json!({"posts": [p, 999_999]})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{w}");
    assert_eq!(w, json!({"watching": [p]}), "only the posts b may see");
    let (counts, _) = s.until("post.counts", is_post(p)).await;
    assert_eq!(
        counts.data,
        json!({"postId": p, "likeCount": 0, "commentCount": 0, "shareCount": 0, "likedByMe": false})
    );
    let (s2, _) = app
        .put(&format!("/api/v1/posts/{p}/like"), Some(&a.token))
        .await;
    assert_eq!(s2, StatusCode::OK);
    let (counts, _) = s.until("post.counts", |d| d["likeCount"] == 1).await;
    assert_eq!(counts.data["postId"], p);

    // comment.new, and the count with it.
    let c = app.comment(&a, p, "first", None).await;
    let (comment, _) = s.until("comment.new", is_post(p)).await;
    assert_eq!(comment.data, json!({"postId": p, "commentId": c["id"]}));
    s.until("post.counts", |d| d["commentCount"] == 1).await;
    let (st, _) = app
        .post(
            &format!("/api/v1/posts/{p}/shares"),
            Some(&b.token),
            json!({"platform": "wechat"}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED);
    s.until("post.counts", |d| d["shareCount"] == 1).await;

    // notification and unread: a likes b's post (b has read the rest).
    mark_read(&app, &b).await;
    s.until("unread", |d| d["unread"] == 0).await;
    let q = app.text_post(&b, "mine").await;
    app.put(&format!("/api/v1/posts/{q}/like"), Some(&a.token))
        .await;
    let (n, _) = s.until("notification", |d| d["kind"] == "like").await;
    assert_eq!(n.data["actor"]["uid"], a.uid);
    assert_eq!(n.data["post"]["id"], q);
    let (_, list) = app.get("/api/v1/notifications", Some(&b.token)).await;
    assert_eq!(n.data, list["items"][0], "expanded as the list shows it");
    let unread = s.expect("unread").await;
    assert_eq!(unread.data, json!({"unread": 1}));
    assert_eq!(unread.id, n.id, "the count that notification made");
    mark_read(&app, &b).await;
    s.until("unread", |d| d["unread"] == 0).await;

    // post.deleted: a watched post goes.
    let (st, _) = app
        .delete(&format!("/api/v1/posts/{p}"), Some(&a.token))
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (gone, _) = s.until("post.deleted", is_post(p)).await;
    assert_eq!(gone.data, json!({"postId": p}));
}

/// How often a pulled author's fan-out walked `walk` (`logs` or
/// `followers`), in this process. Only this test makes a follower walk
/// (others with pulled authors hold no streams, so their logs are fewer):
/// the `followers` count moves for it alone.
fn walks(walk: &str) -> f64 {
    metric(&format!(
        "moments_stream_pulled_walks_total{{walk=\"{walk}\"}}"
    ))
}

/// A pulled author's post is pushed into no timeline, yet it enters each
/// follower's home feed as they read, so their streams hear of it as they
/// would of a pushed one: found through the accounts with event logs while
/// they are fewer than the followers, through the followers once they are
/// not; friends-only to friends alone either way, nobody else told.
#[tokio::test]
async fn a_pulled_authors_post_reaches_its_followers_streams() {
    let mut settings = quick();
    settings.pulled_author_followers = 2;
    let app = spawn_app_with(settings).await;
    let a = app.user("u_pa").await;
    let (friend, fan) = (app.user("u_pf").await, app.user("u_pn").await);
    friends(&app, &a, &friend).await;
    follow(&app, &fan, &a).await;
    // Eight followers in all.
    for i in 0..6 {
        follow(&app, &app.user(&format!("u_pq{i}")).await, &a).await;
    }
    let (mut to_friend, _, _) = opened(&app, &friend, "", None).await;
    let (mut to_fan, _, _) = opened(&app, &fan, "", None).await;
    let mut strangers = Vec::new();
    for i in 0..13 {
        strangers.push(app.user(&format!("u_ps{i}")).await);
    }
    let (mut to_stranger, _, _) = opened(&app, &strangers[0], "", None).await;

    // Each walk, then: a public post and a friends-only one reach the
    // friend; the fan hears of the public one and, up to a post of its
    // own made after, of nothing else; the stranger of nothing.
    async fn told_as_they_should_be(
        app: &TestApp,
        (a, fan, stranger): (&User, &User, &User),
        to_friend: &mut Sse,
        to_fan: &mut Sse,
        to_stranger: &mut Sse,
    ) {
        let public = app.text_post(a, "pulled, for everyone").await;
        let only_friends = post(
            app,
            a,
            json!({"category": "TEXT", "content": "pulled, for friends", "visibility": "friends"}),
        )
        .await;
        to_friend.until("post.new", is_post(public)).await;
        to_friend.until("post.new", is_post(only_friends)).await;
        let (e, _) = to_fan.until("post.new", is_post(public)).await;
        assert_eq!(e.data, json!({"postId": public, "authorUid": a.uid}));
        in_feed(app, fan, public).await;
        let own = app.text_post(fan, "the fan's own").await;
        let (_, past) = to_fan.until("post.new", is_post(own)).await;
        assert!(
            !past.iter().any(|e| e.data["postId"] == only_friends),
            "the friends-only post reached a follower who is no friend: {past:?}"
        );
        // Had the walk told the stranger of either, that would have come
        // before its own post.
        let theirs = app.text_post(stranger, "mine").await;
        let (_, past) = to_stranger.until("post.new", is_post(theirs)).await;
        assert!(
            !past.iter().any(|e| e.name == "post.new"),
            "a stranger was told of a pulled author's post: {past:?}"
        );
    }

    // Three accounts with logs, one of them no follower, beside eight
    // followers: the logs are walked, for both posts.
    let (logs, followers) = (walks("logs"), walks("followers"));
    told_as_they_should_be(
        &app,
        (&a, &fan, &strangers[0]),
        &mut to_friend,
        &mut to_fan,
        &mut to_stranger,
    )
    .await;
    assert_eq!(walks("followers"), followers, "the followers were walked");
    assert!(walks("logs") >= logs + 2.0, "the logs were not walked");

    // Fifteen accounts with logs beside eight followers: the followers
    // are walked, for both posts.
    let mut held = Vec::new();
    for user in &strangers[1..] {
        held.push(opened(&app, user, "", None).await.0);
    }
    let followers = walks("followers");
    told_as_they_should_be(
        &app,
        (&a, &fan, &strangers[0]),
        &mut to_friend,
        &mut to_fan,
        &mut to_stranger,
    )
    .await;
    assert_eq!(
        walks("followers"),
        followers + 2.0,
        "the followers were not walked"
    );
}

#[tokio::test]
async fn a_resume_gets_exactly_the_events_missed_in_order() {
    let app = spawn_app_with(quick()).await;
    let (a, b) = (app.user("u_ra").await, app.user("u_rb").await);
    follow(&app, &b, &a).await;
    let q = app.text_post(&b, "b's").await;
    let (s, _, _) = opened(&app, &b, "", None).await;
    let resume_from = s.last_id.clone().unwrap();
    drop(s);

    // While b is away: a post, a like of b's post, another post.
    let p1 = app.text_post(&a, "one").await;
    in_feed(&app, &b, p1).await;
    app.put(&format!("/api/v1/posts/{q}/like"), Some(&a.token))
        .await;
    let p2 = app.text_post(&a, "two").await;
    in_feed(&app, &b, p2).await;

    let (mut s, ready, before) = opened(&app, &b, "", Some(&resume_from)).await;
    assert_eq!(ready["resumed"], true);
    // Whatever of it the log held when b came back came first, the rest
    // live; up to a marker, it is exactly this, once each.
    mark_read(&app, &b).await;
    let (_, after) = s.until("unread", |d| d["unread"] == 0).await;
    let got: Vec<(String, Value)> = before
        .iter()
        .chain(&after)
        .map(|e| {
            let key = match e.name.as_str() {
                "notification" => e.data["kind"].clone(),
                _ => e.data.get("postId").cloned().unwrap_or(e.data.clone()),
            };
            (e.name.clone(), key)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("post.new".to_string(), json!(p1)),
            ("notification".to_string(), json!("like")),
            ("unread".to_string(), json!({"unread": 1})),
            ("post.new".to_string(), json!(p2)),
        ]
    );
    let ids: Vec<&str> = before
        .iter()
        .chain(&after)
        .map(|e| e.id.as_deref().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|id| moments::store::EventId::parse(id).unwrap());
    assert_eq!(ids, sorted, "in the log's order");
    assert!(
        moments::store::EventId::parse(&resume_from).unwrap()
            < moments::store::EventId::parse(ids[0]).unwrap()
    );
}

#[tokio::test]
async fn an_id_older_than_the_log_gets_one_reset_then_live_events() {
    let mut settings = quick();
    settings.stream.log_events = 10;
    let app = spawn_app_with(settings).await;
    let b = app.user("u_lb").await;
    let (s, _, _) = opened(&app, &b, "", None).await;
    let old = s.last_id.clone().unwrap();
    drop(s);
    // Far more than the log keeps (each marking logs an `unread`).
    for _ in 0..250 {
        mark_read(&app, &b).await;
    }
    crate::helpers::wait_until("the old id falls out of the log", || async {
        matches!(
            app.ctx
                .live
                .events_after(b.uid, moments::store::EventId::parse(&old).unwrap(), 1)
                .await,
            Ok(moments::store::LogRead::Gone)
        )
    })
    .await;
    let (mut s, ready, before) = opened(&app, &b, "", Some(&old)).await;
    assert_eq!(ready["resumed"], false);
    let resets: Vec<&Event> = before.iter().filter(|e| e.name == "reset").collect();
    assert_eq!(resets.len(), 1, "one reset: {before:?}");
    assert_eq!(resets[0].data, json!({"reason": "gone"}));
    assert_eq!(
        before.last().unwrap().name,
        "reset",
        "and nothing of the log before it"
    );
    // Live events go on after it.
    let q = app.text_post(&b, "after the reset").await;
    s.until("post.new", is_post(q)).await;
    // A header this service never wrote can be resumed from no more than
    // a lost one: one reset, then live events.
    let (mut s, ready, before) = opened(&app, &b, "", Some("yesterday")).await;
    assert_eq!(ready["resumed"], false);
    let names: Vec<&str> = before.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["reset"], "one reset and nothing else: {before:?}");
    let r = app.text_post(&b, "after a foreign id").await;
    s.until("post.new", is_post(r)).await;
    // The parameter is the API's own, with a stated form: a malformed one
    // is refused.
    let refused = sse::open(
        &app.client,
        &format!("{}/api/v1/stream?lastEventId=yesterday", app.base),
        Some(&b.token),
        None,
    )
    .await;
    let (status, body, _) = refused.err().expect("refused");
    assert_eq!(status, 400);
    assert_eq!(body["field"], "lastEventId");
}

#[tokio::test]
async fn events_obey_visibility_at_delivery() {
    let app = spawn_app_with(quick()).await;
    let (a, friend, fan) = (
        app.user("u_va").await,
        app.user("u_vf").await,
        app.user("u_vn").await,
    );
    friends(&app, &a, &friend).await;
    follow(&app, &fan, &a).await;
    let (mut to_friend, _, _) = opened(&app, &friend, "", None).await;
    let (mut to_fan, _, _) = opened(&app, &fan, "", None).await;

    // A friends-only post reaches the friend, not the follower: the next
    // post the follower hears of is the public one after it.
    let hidden = post(
        &app,
        &a,
        json!({"category": "TEXT", "content": "friends", "visibility": "friends"}),
    )
    .await;
    let public = app.text_post(&a, "everyone").await;
    let (e, past) = to_fan.until("post.new", |_| true).await;
    assert_eq!(e.data["postId"], public, "{past:?}");
    to_friend.until("post.new", is_post(hidden)).await;
    to_friend.until("post.new", is_post(public)).await;

    // Counts are what each viewer may see: in a friends-only post a
    // stranger's like is not the friend's to count, but its author's.
    let stranger = app.user("u_vs").await;
    friends(&app, &a, &stranger).await;
    let ready_a = opened(&app, &a, &format!("?watch={hidden}"), None).await;
    let (mut to_a, _, _) = ready_a;
    to_a.until("post.counts", is_post(hidden)).await;
    drop(to_friend);
    let (mut to_friend, _, _) = opened(&app, &friend, &format!("?watch={hidden}"), None).await;
    to_friend
        .until("post.counts", |d| d["likeCount"] == 0)
        .await;
    app.put(
        &format!("/api/v1/posts/{hidden}/like"),
        Some(&stranger.token),
    )
    .await;
    to_a.until("post.counts", |d| d["likeCount"] == 1).await;
    app.put(&format!("/api/v1/posts/{hidden}/like"), Some(&friend.token))
        .await;
    let (mine, past) = to_friend
        .until("post.counts", |d| d["likedByMe"] == true)
        .await;
    assert_eq!(
        mine.data["likeCount"], 1,
        "the stranger's like is not counted: {past:?}"
    );
    for e in &past {
        assert_ne!(
            e.data["likeCount"], 1,
            "never the stranger's like: {past:?}"
        );
    }

    // A block made while connected: what the blocked one says on a
    // watched post is no longer delivered.
    let (st, _) = app
        .put(
            &format!("/api/v1/users/{}/block", stranger.uid),
            Some(&friend.token),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    app.comment(&stranger, hidden, "from a blocked one", None)
        .await;
    let marker = app.comment(&a, hidden, "from the author", None).await;
    let (e, past) = to_friend.until("comment.new", |_| true).await;
    assert_eq!(e.data["commentId"], marker["id"], "{past:?}");

    // An audience changed after the post entered the feed: the event is
    // checked as it is delivered, so a resume no longer tells of it.
    let (st, label) = app
        .post(
            "/api/v1/labels",
            Some(&a.token),
            json!({"name": "close", "members": [friend.uid]}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{label}");
    let resume_from = to_friend.last_id.clone().unwrap();
    drop(to_friend);
    let only = post(
        &app,
        &a,
        json!({"category": "TEXT", "content": "only close", "visibility": "only",
               "audience": {"labels": [label["id"]]}}),
    )
    .await;
    in_feed(&app, &friend, only).await;
    // The control: logged after it, and still for the friend.
    let control = app.text_post(&a, "still for the friend").await;
    in_feed(&app, &friend, control).await;
    let (st, _) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/api/v1/labels/{}", label["id"]),
            Some(&a.token),
            Some(json!({"members": []})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (mut again, ready, before) = opened(&app, &friend, "", Some(&resume_from)).await;
    assert_eq!(ready["resumed"], true);
    mark_read(&app, &friend).await;
    let (_, after) = again.until("unread", |_| true).await;
    for e in before.iter().chain(&after) {
        assert_ne!(
            e.data.get("postId"),
            Some(&json!(only)),
            "no longer for the friend: {e:?}"
        );
    }
    assert!(
        before
            .iter()
            .chain(&after)
            .any(|e| e.name == "post.new" && e.data["postId"] == control),
        "the same resume tells of the control: {before:?} {after:?}"
    );
}

/// Suspends `who`, as a moderator does after a report.
async fn suspend(app: &TestApp, who: &User, name: &str) {
    let reporter = app.user(&format!("{name}_rep")).await;
    let body = json!({"targetType": "user", "targetId": who.uid, "category": "spam"});
    assert_eq!(crate::reports::report(app, &reporter, body).await.0, 201);
    let m = crate::reports::moderator(app, &format!("{name}_mod")).await;
    let (st, v) = crate::strikes::act_on(
        app,
        &m,
        json!({"kind": "user", "id": who.uid}),
        json!({"action": "suspend", "days": 1}),
    )
    .await;
    assert_eq!(st, 200, "{v}");
}

/// Deletes `who`'s account, its erasure held before its posts, which stay
/// in the documents: the gate, to be opened.
async fn erased_with_posts_left(
    app: &TestApp,
    who: &User,
) -> std::sync::Arc<moments::store::faults::Gate> {
    use moments::store::faults::{Fault, Gate};
    let gate = Gate::new();
    app.ctx.faults.inject(
        "PostDocs",
        "post_ids_by_author",
        Fault::Hold(gate.clone()),
        1,
    );
    let (st, body) = app
        .call(
            reqwest::Method::DELETE,
            "/api/v1/me",
            Some(&who.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(st.as_u16(), 204, "{body}");
    gate.reached().await;
    gate
}

/// A suspended or erased account has no card, and every read leaves out
/// what it made however recent: so does a stream, at watch and on resume.
#[tokio::test]
async fn a_suspended_or_erased_authors_recent_posts_are_neither_watched_nor_told() {
    let mut settings = quick();
    settings.erase_in_request = 0;
    let app = spawn_app_with(settings).await;
    let (suspended, erased, other, b) = (
        app.user("u_ua").await,
        app.user("u_ue").await,
        app.user("u_uo").await,
        app.user("u_ub").await,
    );
    for author in [&suspended, &erased, &other] {
        follow(&app, &b, author).await;
    }
    let (s, ready, _) = opened(&app, &b, "", None).await;
    let stream_id = ready["streamId"].as_i64().unwrap();
    let resume_from = s.last_id.clone().unwrap();
    let theirs = app.text_post(&suspended, "before the suspension").await;
    let gone = app.text_post(&erased, "before the erasure").await;
    let kept = app.text_post(&other, "stays").await;
    for p in [theirs, gone, kept] {
        in_feed(&app, &b, p).await;
    }
    suspend(&app, &suspended, "u_ua").await;
    let gate = erased_with_posts_left(&app, &erased).await;
    for p in [theirs, gone] {
        let (st, _) = app.get(&format!("/api/v1/posts/{p}"), Some(&b.token)).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "post {p} reads as gone");
    }

    let (st, w) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/stream/{stream_id}/watch"),
            Some(&b.token),
            Some(json!({"posts": [theirs, gone, kept]})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{w}");
    assert_eq!(w, json!({"watching": [kept]}), "only what b may see");

    // Their post.new were logged before; a resume tells of neither, and
    // of the control logged after them.
    let control = app.text_post(&other, "the control").await;
    in_feed(&app, &b, control).await;
    drop(s);
    let (mut again, ready, before) = opened(&app, &b, "", Some(&resume_from)).await;
    assert_eq!(ready["resumed"], true);
    let mut told: Vec<Value> = before
        .iter()
        .filter(|e| e.name == "post.new")
        .map(|e| e.data["postId"].clone())
        .collect();
    if !told.contains(&json!(control)) {
        let (_, past) = again.until("post.new", is_post(control)).await;
        told.extend(
            past.iter()
                .filter(|e| e.name == "post.new")
                .map(|e| e.data["postId"].clone()),
        );
        told.push(json!(control));
    }
    assert_eq!(told, vec![json!(kept), json!(control)]);
    gate.open();
}

/// A like storm on a watched post: its watchers are told its counts at
/// most once a second, the last change at the end of its window, so the
/// likes cost far fewer `post.counts` than there were likes, and the last
/// one carries the final count.
#[tokio::test]
async fn a_like_storm_is_told_in_few_counts_the_last_one_final() {
    const LIKES: usize = 40;
    let app = spawn_app_with(quick()).await;
    let author = app.user("u_ca").await;
    let viewer = app.user("u_cv").await;
    let p = app.text_post(&author, "liked in a storm").await;
    let mut likers = Vec::new();
    for i in 0..LIKES {
        likers.push(app.user(&format!("u_c{i}")).await);
    }
    let (mut s, _, _) = opened(&app, &viewer, &format!("?watch={p}"), None).await;
    s.until("post.counts", |d| d["postId"] == p && d["likeCount"] == 0)
        .await;
    for liker in &likers {
        let (st, _) = app
            .put(&format!("/api/v1/posts/{p}/like"), Some(&liker.token))
            .await;
        assert_eq!(st, StatusCode::OK);
    }
    let (last, past) = s.until("post.counts", |d| d["likeCount"] == LIKES).await;
    assert_eq!(last.data["postId"], p);
    let told = 1 + past.iter().filter(|e| e.name == "post.counts").count();
    assert!(
        told <= LIKES / 4,
        "{told} post.counts for {LIKES} likes: {past:?}"
    );
}

#[tokio::test]
async fn an_accounts_oldest_stream_is_replaced_past_its_bound() {
    let mut settings = quick();
    settings.stream.per_account = 2;
    let app = spawn_app_with(settings).await;
    let b = app.user("u_pb").await;
    let (mut first, _, _) = opened(&app, &b, "", None).await;
    let (_second, _, _) = opened(&app, &b, "", None).await;
    let (_third, _, _) = opened(&app, &b, "", None).await;
    let rest = first.read_to_end().await;
    let reset = rest.last().expect("a last event");
    assert_eq!(reset.name, "reset");
    assert_eq!(reset.data, json!({"reason": "replaced"}));
}

#[tokio::test]
async fn an_instance_refuses_streams_past_its_bound_with_503() {
    let mut settings = quick();
    settings.stream.per_instance = 2;
    let app = spawn_app_with(settings).await;
    let (a, b) = (app.user("u_ia").await, app.user("u_ib").await);
    let _one = opened(&app, &a, "", None).await;
    let _two = opened(&app, &b, "", None).await;
    let refused = sse::open(
        &app.client,
        &format!("{}/api/v1/stream", app.base),
        Some(&a.token),
        None,
    )
    .await;
    let (status, body, headers) = refused.err().expect("refused");
    assert_eq!(status, 503);
    assert_eq!(body["code"], "overloaded");
    assert!(headers.contains_key("retry-after"));
}

#[tokio::test]
async fn a_ticket_opens_one_stream_once_and_expires() {
    let mut settings = quick();
    settings.stream.ticket_secs = 1;
    let app = spawn_app_with(settings).await;
    let b = app.user("u_tb").await;
    let url = |t: &str| format!("{}/api/v1/stream?ticket={t}", app.base);
    let (st, t) = app
        .post("/api/v1/stream/tickets", Some(&b.token), Value::Null)
        .await;
    assert_eq!(st, StatusCode::CREATED, "{t}");
    let ticket = t["ticket"].as_str().unwrap().to_string();
    assert!(t["expiresAt"].as_i64().unwrap() > moments::ids::now_ms());
    let mut s = sse::open(&app.client, &url(&ticket), None, None)
        .await
        .map_err(|e| e.0)
        .unwrap();
    s.until("ready", |_| true).await;
    let again = sse::open(&app.client, &url(&ticket), None, None).await;
    assert_eq!(again.err().map(|e| e.0), Some(401), "used once");
    let (_, t) = app
        .post("/api/v1/stream/tickets", Some(&b.token), Value::Null)
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late = sse::open(&app.client, &url(t["ticket"].as_str().unwrap()), None, None).await;
    assert_eq!(late.err().map(|e| e.0), Some(401), "expired");
    for bad in ["", "nope"] {
        let refused = sse::open(&app.client, &url(bad), None, None).await;
        assert_eq!(refused.err().map(|e| e.0), Some(401));
    }
    let anonymous = sse::open(
        &app.client,
        &format!("{}/api/v1/stream", app.base),
        None,
        None,
    )
    .await;
    assert_eq!(anonymous.err().map(|e| e.0), Some(401));
    // A stream that is not the caller's is not theirs to change.
    let other = app.user("u_tc").await;
    let (_, ready, _) = opened(&app, &other, "", None).await;
    let (st, _) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/stream/{}/watch", ready["streamId"]),
            Some(&b.token),
            Some(json!({"posts": []})),
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

/// `GET /stream?ticket=` has no bearer token whose session lookup would
/// carry the address's budget: each ticket tried, made up or real, is
/// charged to the address before the store is asked about it.
#[tokio::test]
async fn tickets_tried_are_charged_to_the_address() {
    let mut settings = quick();
    settings.rate_limits = Some(moments::config::RateLimits {
        reads_per_ip: moments::config::Rate::new(5, 60),
        ..Default::default()
    });
    let app = spawn_app_with(settings).await;
    let b = app.user("u_tr").await;
    let (st, t) = app
        .post("/api/v1/stream/tickets", Some(&b.token), Value::Null)
        .await;
    assert_eq!(st, StatusCode::CREATED, "{t}");
    let url = |t: &str| format!("{}/api/v1/stream?ticket={t}", app.base);
    for i in 0..5 {
        let refused = sse::open(&app.client, &url(&format!("made-up-{i}")), None, None).await;
        assert_eq!(refused.err().map(|e| e.0), Some(401), "guess {i}");
    }
    // The budget is spent: even a real ticket is refused, and not taken.
    let ticket = t["ticket"].as_str().unwrap();
    let refused = sse::open(&app.client, &url(ticket), None, None).await;
    let (status, body, headers) = refused.err().expect("refused");
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["code"], "rate_limited");
    assert!(headers.contains_key("retry-after"));
    assert!(
        app.ctx
            .live
            .take_stream_ticket(&moments::service::credentials::token_hash(ticket).hex())
            .await
            .unwrap()
            .is_some(),
        "a refused request takes no ticket"
    );
}

#[tokio::test]
async fn losing_the_live_store_costs_a_reset_and_nothing_else() {
    let app = spawn_app_with(quick()).await;
    let (a, b) = (app.user("u_xa").await, app.user("u_xb").await);
    follow(&app, &b, &a).await;
    let (mut s, _, _) = opened(&app, &b, "", None).await;
    let before = app.text_post(&a, "before").await;
    s.until("post.new", is_post(before)).await;
    app.lose_live_state().await;
    // The stream's upkeep finds its log gone within a heartbeat or two.
    let (reset, _) = s.until("reset", |_| true).await;
    assert_eq!(reset.data, json!({"reason": "gone"}));
    let after = app.text_post(&a, "after").await;
    s.until("post.new", is_post(after)).await;
    // The documents are untouched.
    let (st, _) = app
        .get(&format!("/api/v1/posts/{before}"), Some(&b.token))
        .await;
    assert_eq!(st, StatusCode::OK);
}

#[tokio::test]
async fn signing_out_ends_the_sessions_streams() {
    let app = spawn_app_with(quick()).await;
    let b = app.user("u_ob").await;
    let (mut s, _, _) = opened(&app, &b, "", None).await;
    let (st, _) = app.delete("/api/v1/sessions/current", Some(&b.token)).await;
    assert!(st.is_success(), "{st}");
    s.read_to_end().await;
    let refused = sse::open(
        &app.client,
        &format!("{}/api/v1/stream", app.base),
        Some(&b.token),
        None,
    )
    .await;
    assert_eq!(refused.err().map(|e| e.0), Some(401));
}

/// A client that stops reading fills its stream's buffer and is cut off;
/// reading again, it resumes from the last event it got, missing nothing.
#[tokio::test]
async fn a_slow_reader_is_dropped_and_resumes_from_its_last_event() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut settings = quick();
    settings.stream.send_buffer = 4;
    let app = spawn_app_with(settings).await;
    let (a, b) = (app.user("u_ka").await, app.user("u_kb").await);
    let q = app.text_post(&b, "liked a lot").await;
    let addr: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut conn = socket.connect(addr).await.unwrap();
    let request = format!(
        "GET /api/v1/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\r\n",
        b.token
    );
    conn.write_all(request.as_bytes()).await.unwrap();
    // Raw reads wait forever: each is bounded, so a stream that is never
    // answered, or never cut, fails the test instead of hanging it.
    const PATIENCE: Duration = Duration::from_secs(30);
    let mut head = vec![0u8; 512];
    let n = tokio::time::timeout(PATIENCE, conn.read(&mut head))
        .await
        .expect("the stream's head within 30 s")
        .unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    // Not reading: notifications (each some 300 bytes, and an `unread`)
    // pile up until the stream gives up on this client.
    let dropped = metric("moments_stream_slow_readers_dropped_total");
    let mut sent = Vec::new();
    for i in 0..400 {
        let liker = app.user(&format!("u_k{i}")).await;
        app.put(&format!("/api/v1/posts/{q}/like"), Some(&liker.token))
            .await;
        sent.push(liker.uid);
        if i % 20 == 19 && metric("moments_stream_slow_readers_dropped_total") > dropped {
            break;
        }
    }
    crate::helpers::wait_until("the slow reader is dropped", || async {
        metric("moments_stream_slow_readers_dropped_total") > dropped
    })
    .await;
    // Reading again: what was written before the cut, then the end.
    let mut got = Vec::new();
    tokio::time::timeout(PATIENCE, conn.read_to_end(&mut got))
        .await
        .expect("the server cut the slow reader's connection within 30 s")
        .unwrap_or_default();
    // The body is chunked, one chunk per frame; a cut may leave the last
    // one short, and it does not count.
    let body = String::from_utf8_lossy(&got).into_owned();
    let body = body
        .split_once("\r\n\r\n")
        .map_or(body.as_str(), |(_, b)| b);
    let frames = dechunk(body);
    let events: Vec<&str> = frames
        .iter()
        .filter(|f| f.contains("event: "))
        .map(String::as_str)
        .collect();
    let last_id = events
        .last()
        .and_then(|f| f.lines().find_map(|l| l.strip_prefix("id: ")))
        .expect("some events were written")
        .to_string();
    let seen: Vec<i64> = events
        .iter()
        .filter(|f| f.contains("event: notification"))
        .filter_map(|f| f.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["actor"]["uid"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert!(seen.len() < sent.len(), "cut off before the end");
    // The rest, from the last event it got.
    let (mut s, ready, before) = opened(&app, &b, "", Some(&last_id)).await;
    assert_eq!(ready["resumed"], true);
    let mut resumed: Vec<i64> = before
        .iter()
        .filter(|e| e.name == "notification")
        .map(|e| e.data["actor"]["uid"].as_i64().unwrap())
        .collect();
    while resumed.len() + seen.len() < sent.len() {
        let (e, _) = s.until("notification", |_| true).await;
        resumed.push(e.data["actor"]["uid"].as_i64().unwrap());
    }
    let all: Vec<i64> = seen.iter().chain(&resumed).copied().collect();
    assert_eq!(all, sent, "every like once, in order");
    let _ = a;
}

/// The whole chunks of a chunked HTTP body.
fn dechunk(mut body: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size + 2 {
            break;
        }
        chunks.push(rest[..size].to_string());
        body = &rest[size + 2..];
    }
    chunks
}

#[tokio::test]
async fn stopping_closes_streams_with_a_last_retry() {
    let settings = quick();
    let (docs, live) = moments::startup::connect_stores(&settings).await.unwrap();
    let (app, stopper, running) =
        crate::helpers::spawn_stoppable_app_on(settings, docs, live).await;
    let b = app.user("u_sb").await;
    let (mut s, _, _) = opened(&app, &b, "", None).await;
    stopper.stop();
    s.read_to_end().await;
    assert_eq!(s.retries.len(), 2, "the first retry:, and a last one");
    assert!(
        s.retries[1] < 3000,
        "soon: another instance takes the client"
    );
    running.await.unwrap().unwrap();
}

/// A burst of notifications moves the unread count many times; the stream
/// recounts it at most once a window (`UNREAD_WINDOW`, a second), the first
/// move at once and the last state at the window's end, so a stranger's
/// likes cannot make it recount the list once each.
#[tokio::test]
async fn a_burst_of_notifications_is_counted_once_a_window_ending_with_the_last_count() {
    let app = spawn_app_with(quick()).await;
    let a = app.user("burster").await;
    let b = app.user("burstee").await;
    let mut posts = Vec::new();
    for i in 0..20 {
        posts.push(app.text_post(&b, &format!("post {i}")).await);
    }
    mark_read(&app, &b).await;
    let (mut s, _, _) = opened(&app, &b, "", None).await;
    let started = std::time::Instant::now();
    for p in &posts {
        let (st, v) = app
            .put(&format!("/api/v1/posts/{p}/like"), Some(&a.token))
            .await;
        assert_eq!(st, StatusCode::OK, "{v}");
    }
    let burst = started.elapsed();
    // The count is read from the notifications themselves, which are
    // stored before their log entries are appended: a count told at a
    // window's end may run ahead of the notifications told, never behind
    // at the end. So: read until every notification is told and a count
    // of all twenty follows the last of them.
    let mut before: Vec<Event> = Vec::new();
    let last = loop {
        let e = s
            .next()
            .await
            .unwrap_or_else(|| panic!("the stream ended; read {before:?}"));
        let notified = before.iter().filter(|e| e.name == "notification").count();
        if notified == 20 && e.name == "unread" && e.data["unread"] == 20 {
            break e;
        }
        before.push(e);
    };
    let told: Vec<&Event> = before.iter().filter(|e| e.name == "unread").collect();
    let mut ids: Vec<i64> = before
        .iter()
        .filter(|e| e.name == "notification")
        .map(|e| e.data["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 20, "every notification told once");
    // One at once, then one per second the burst and its last window took.
    let windows = burst.as_secs() + 3;
    assert!(
        (told.len() as u64) < windows,
        "{} counts told for a burst of {burst:?}: {told:?}",
        told.len() + 1
    );
    let counts: Vec<u64> = told
        .iter()
        .filter_map(|e| e.data["unread"].as_u64())
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]) && counts.iter().all(|c| *c <= 20),
        "{told:?}"
    );
    // Told under the newest entry dealt with: nothing after it is missed
    // by a client resuming from it.
    let newest = before
        .iter()
        .filter_map(|e| e.id.as_deref())
        .max_by_key(|id| moments::store::EventId::parse(id).unwrap());
    let last_id = last.id.as_deref().unwrap();
    assert!(
        moments::store::EventId::parse(last_id).unwrap()
            >= moments::store::EventId::parse(newest.unwrap()).unwrap()
    );
}
