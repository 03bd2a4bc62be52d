//! Two instances on the same MongoDB and Redis agree: whatever one answers
//! for a write, the other shows at once. Each instance leases its own
//! instance id, so their ids never collide either.
//!
//! Most of these run both instances in this process, where a test can cut
//! one's Redis or reach into its context; but one process has one id
//! generator, so the lease is checked on two processes of the real binary
//! (`two_processes_lease_different_instance_ids_and_agree`).
//!
//! Needs `MOMENTS_TEST_MONGODB_URI` and `MOMENTS_TEST_REDIS_URL`
//! (scripts/test.sh sets them), like tests/conformance.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::proxy::Proxy;
use support::{test_env as env, Api, Backend, DataDir, Server};

use reqwest::Method;
use serde_json::{json, Value};

use moments::config::Settings;
use moments::ids::instance_of;
use moments::startup::{Application, Stopper};

struct Instance {
    base: String,
    ctx: moments::service::Context,
    http: reqwest::Client,
    stopper: Stopper,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Its own folder for what it keeps beside the stores (the search
    /// index), as two instances on two machines would have: held until
    /// the instance is dropped.
    _data: DataDir,
}

impl Instance {
    async fn start(db: &str) -> Self {
        Self::start_on(db, env("MOMENTS_TEST_REDIS_URL")).await
    }

    async fn start_on(db: &str, redis_url: String) -> Self {
        Self::start_with(db, redis_url, |_| {}).await
    }

    async fn start_with(db: &str, redis_url: String, tune: impl FnOnce(&mut Settings)) -> Self {
        let data = DataDir::new(db);
        let mut settings = Settings {
            listen: "127.0.0.1:0".into(),
            data_dir: data.0.clone(),
            mongodb_uri: Some(env("MOMENTS_TEST_MONGODB_URI")),
            mongodb_db: db.into(),
            redis_url: Some(redis_url),
            redis_prefix: format!("{db}:"),
            workers: Some(1),
            rate_limits: None,
            ..Settings::default()
        };
        tune(&mut settings);
        moments::telemetry::init("warn");
        let app = Application::build(settings).await.expect("build app");
        let base = format!("http://127.0.0.1:{}", app.port());
        let ctx = app.context().clone();
        let stopper = app.stopper();
        let running = tokio::spawn(app.run_until_stopped());
        Self {
            base,
            ctx,
            http: reqwest::Client::new(),
            stopper,
            running,
            _data: data,
        }
    }

    async fn stop(self) {
        self.stopper.stop();
        self.running.await.unwrap().unwrap();
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        support::call(
            &self.http,
            method,
            format!("{}{path}", self.base),
            token,
            body,
        )
        .await
    }

    async fn ok(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Value {
        let (s, v) = self.call(method.clone(), path, token, body).await;
        assert!(
            (200..300).contains(&s),
            "{method} {path} on {}: {s} {v}",
            self.base
        );
        v
    }

    async fn user(&self, name: &str) -> (i64, String) {
        let password = format!("{name}-password-1");
        let card = self
            .ok(
                Method::POST,
                "/api/v1/users",
                None,
                Some(json!({"username": name, "password": password})),
            )
            .await;
        let session = self
            .ok(
                Method::POST,
                "/api/v1/sessions",
                None,
                Some(json!({"username": name, "password": password})),
            )
            .await;
        (
            card["uid"].as_i64().unwrap(),
            session["token"].as_str().unwrap().to_string(),
        )
    }
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().or_else(|| i["uid"].as_i64()).unwrap())
        .collect()
}

/// A database name no earlier run used: the suites share one server.
fn fresh_db(prefix: &str) -> String {
    let mut suffix = [0u8; 6];
    getrandom::getrandom(&mut suffix).unwrap();
    std::iter::once(prefix.to_string())
        .chain(suffix.iter().map(|b| format!("{b:02x}")))
        .collect()
}

#[tokio::test]
async fn a_write_through_one_instance_is_seen_through_the_other_at_once() {
    let db = fresh_db("two_");
    let a = Instance::start(&db).await;
    let b = Instance::start(&db).await;

    // Accounts and sessions: made on one, good on the other.
    let (ann_uid, ann) = a.user("ann").await;
    let (bob_uid, bob) = b.user("bob").await;
    let me = b.ok(Method::GET, "/api/v1/me", Some(&ann), None).await;
    assert_eq!(me["uid"].as_i64(), Some(ann_uid));

    // Follows, both ways: friends on both.
    a.ok(
        Method::PUT,
        &format!("/api/v1/users/{ann_uid}/follow"),
        Some(&bob),
        None,
    )
    .await;
    b.ok(
        Method::PUT,
        &format!("/api/v1/users/{bob_uid}/follow"),
        Some(&ann),
        None,
    )
    .await;
    let friends = a
        .ok(
            Method::GET,
            &format!("/api/v1/users/{ann_uid}/friends"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!(ids(&friends), vec![bob_uid]);

    // A friends-only post made on A, read, commented on and liked on B.
    let post = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&ann),
            Some(json!({"category": "TEXT", "content": "for friends", "visibility": "friends"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let seen = b
        .ok(
            Method::GET,
            &format!("/api/v1/posts/{post}"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(seen["id"].as_i64(), Some(post));
    let comment = b
        .ok(
            Method::POST,
            &format!("/api/v1/posts/{post}/comments"),
            Some(&bob),
            Some(json!({"content": "nice"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    b.ok(
        Method::PUT,
        &format!("/api/v1/posts/{post}/like"),
        Some(&bob),
        None,
    )
    .await;
    let on_a = a
        .ok(
            Method::GET,
            &format!("/api/v1/posts/{post}"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!(on_a["likeCount"].as_i64(), Some(1), "{on_a}");
    assert_eq!(on_a["commentCount"].as_i64(), Some(1), "{on_a}");
    let comments = a
        .ok(
            Method::GET,
            &format!("/api/v1/posts/{post}/comments"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!(ids(&comments), vec![comment]);

    // A profile change on A is the card B shows.
    a.ok(
        Method::PATCH,
        "/api/v1/me",
        Some(&ann),
        Some(json!({"nickName": "安娜"})),
    )
    .await;
    let seen = b
        .ok(
            Method::GET,
            &format!("/api/v1/posts/{post}"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(seen["author"]["nickName"], "安娜", "{seen}");

    // Unfollowing on A ends the friendship on B: the post is hidden there.
    a.ok(
        Method::DELETE,
        &format!("/api/v1/users/{bob_uid}/follow"),
        Some(&ann),
        None,
    )
    .await;
    let (s, _) = b
        .call(
            Method::GET,
            &format!("/api/v1/posts/{post}"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(s, 404, "a friends-only post after the friendship ended");

    // A block on B hides a public post on A.
    let public = b
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&bob),
            Some(json!({"category": "TEXT", "content": "for everyone"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    a.ok(
        Method::GET,
        &format!("/api/v1/posts/{public}"),
        Some(&ann),
        None,
    )
    .await;
    b.ok(
        Method::PUT,
        &format!("/api/v1/users/{ann_uid}/block"),
        Some(&bob),
        None,
    )
    .await;
    let (s, _) = a
        .call(
            Method::GET,
            &format!("/api/v1/posts/{public}"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!(s, 404, "a blocker's post, across instances");

    // A delete on B is gone on A.
    b.ok(
        Method::DELETE,
        &format!("/api/v1/posts/{public}"),
        Some(&bob),
        None,
    )
    .await;
    let (s, _) = a
        .call(Method::GET, &format!("/api/v1/posts/{public}"), None, None)
        .await;
    assert_eq!(s, 404);

    // Signing out on A ends the session on B.
    a.ok(Method::DELETE, "/api/v1/sessions/current", Some(&ann), None)
        .await;
    let (s, _) = b.call(Method::GET, "/api/v1/me", Some(&ann), None).await;
    assert_eq!(s, 401);

    a.stop().await;
    b.stop().await;
    let _ = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db)
        .drop()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_instance_could_not_apply_to_redis_no_instance_serves_stale() {
    let db = fresh_db("cut_");
    let redis = env("MOMENTS_TEST_REDIS_URL");
    let upstream = redis
        .trim_start_matches("redis://")
        .split('/')
        .next()
        .unwrap();
    let proxy = Proxy::start(upstream).await;
    // A reaches Redis through the proxy, B directly: same keys (one prefix).
    let a = Instance::start_on(&db, format!("redis://{}", proxy.addr())).await;
    let b = Instance::start(&db).await;
    let (ann_uid, ann) = a.user("ann").await;
    let (_, bob) = a.user("bob").await;
    let (_, cyd) = a.user("cyd").await;
    for (who, whom) in [(&bob, ann_uid), (&cyd, ann_uid)] {
        a.ok(
            Method::PUT,
            &format!("/api/v1/users/{whom}/follow"),
            Some(who),
            None,
        )
        .await;
    }
    let post = |content: &str, visibility: &str| json!({"category": "TEXT", "content": content, "visibility": visibility});
    let to_delete = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&ann),
            Some(post("deleted soon", "public")),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let for_followers = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&ann),
            Some(post("followers only", "followers")),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let public = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&ann),
            Some(post("public", "public")),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    // B has read them all: every one is cached in Redis.
    for (who, p) in [(&bob, to_delete), (&bob, for_followers), (&cyd, public)] {
        b.ok(Method::GET, &format!("/api/v1/posts/{p}"), Some(who), None)
            .await;
    }
    b.ok(Method::GET, "/api/v1/feed", Some(&bob), None).await;

    // A's Redis fails; its writes still succeed, on the documents.
    proxy.cut();
    a.ok(
        Method::DELETE,
        &format!("/api/v1/posts/{to_delete}"),
        Some(&ann),
        None,
    )
    .await;
    a.ok(
        Method::DELETE,
        &format!("/api/v1/users/{ann_uid}/follow"),
        Some(&bob),
        None,
    )
    .await;
    a.ok(
        Method::PUT,
        &format!("/api/v1/users/{ann_uid}/block"),
        Some(&cyd),
        None,
    )
    .await;

    // B, whose Redis works and still holds the old state, serves none of it.
    let gone = |s: u16| s == 404;
    let (s, v) = b
        .call(
            Method::GET,
            &format!("/api/v1/posts/{to_delete}"),
            Some(&bob),
            None,
        )
        .await;
    assert!(gone(s), "a deleted post, through B: {s} {v}");
    let (s, v) = b
        .call(
            Method::GET,
            &format!("/api/v1/posts/{for_followers}"),
            Some(&bob),
            None,
        )
        .await;
    assert!(
        gone(s),
        "a followers-only post after unfollowing, through B: {s} {v}"
    );
    let feed = b.ok(Method::GET, "/api/v1/feed", Some(&bob), None).await;
    assert!(
        !ids(&feed).contains(&to_delete) && !ids(&feed).contains(&for_followers),
        "B's feed after the delete and the unfollow: {feed}"
    );
    let (s, v) = b
        .call(
            Method::GET,
            &format!("/api/v1/posts/{public}"),
            Some(&cyd),
            None,
        )
        .await;
    assert!(
        gone(s),
        "the post of someone one blocked, through B: {s} {v}"
    );

    // The list is in the documents: an instance started now honours it too.
    a.stop().await;
    let c = Instance::start(&db).await;
    let (s, v) = c
        .call(
            Method::GET,
            &format!("/api/v1/posts/{to_delete}"),
            Some(&bob),
            None,
        )
        .await;
    assert!(
        gone(s),
        "a deleted post, through an instance started after: {s} {v}"
    );

    // Once an instance with a working Redis has dropped the stale keys, the
    // list empties.
    proxy.mend().await;
    let repairs = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db)
        .collection::<mongodb::bson::Document>("live_repairs");
    let start = std::time::Instant::now();
    while repairs
        .count_documents(mongodb::bson::doc! {})
        .await
        .unwrap()
        > 0
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the shared repair list never emptied"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (s, _) = b
        .call(
            Method::GET,
            &format!("/api/v1/posts/{for_followers}"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(s, 404, "after the repair too");

    b.stop().await;
    c.stop().await;
    let _ = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db)
        .drop()
        .await;
}

#[tokio::test]
async fn a_big_accounts_new_post_reaches_readers_on_every_instance() {
    let db = fresh_db("big_");
    // Two followers make a pulled author here: pulled at read time, never
    // pushed, and each instance keeps a copy of its newest post ids.
    let big = |s: &mut Settings| s.pulled_author_followers = 1;
    let a = Instance::start_with(&db, env("MOMENTS_TEST_REDIS_URL"), big).await;
    let b = Instance::start_with(&db, env("MOMENTS_TEST_REDIS_URL"), big).await;
    let (star_uid, star) = a.user("star").await;
    let (_, fan) = a.user("fan").await;
    let (_, other) = a.user("other").await;
    for who in [&fan, &other] {
        a.ok(
            Method::PUT,
            &format!("/api/v1/users/{star_uid}/follow"),
            Some(who),
            None,
        )
        .await;
    }
    let text = |c: &str| json!({"category": "TEXT", "content": c});
    let first = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&star),
            Some(text("first")),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    // B pulls the account and keeps its copy.
    let feed = b.ok(Method::GET, "/api/v1/feed", Some(&fan), None).await;
    assert_eq!(ids(&feed), vec![first]);

    let second = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&star),
            Some(text("second")),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    // The publishing instance notes the post in the live store (after its
    // answer, with the fan-out)...
    let live = b.ctx.live.clone();
    let start = std::time::Instant::now();
    loop {
        let (_, authors) = live.pulled_authors_posted_after(0).await.unwrap();
        if authors.unwrap_or_default().contains(&(star_uid, second)) {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "no note of the post"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // ...and B's next poll (every 250 ms; run here at once) drops its copy,
    // long before the copy's own 5 s are up.
    b.ctx.pulled_authors.poll(live.as_ref()).await.unwrap();
    let feed = b.ok(Method::GET, "/api/v1/feed", Some(&fan), None).await;
    assert_eq!(ids(&feed), vec![second, first], "through B: {feed}");

    a.stop().await;
    b.stop().await;
    let _ = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db)
        .drop()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_lease_different_instance_ids_and_agree() {
    let backend = Backend::stores("procs");
    let Backend::Stores { name: db, .. } = &backend else {
        unreachable!()
    };
    let (dir_a, dir_b) = (DataDir::new("procs-a"), DataDir::new("procs-b"));
    // Started at once, as a deployment starts its instances, so both lease
    // on the empty lease table together. `Server::start` passes on none of
    // this process's environment: MOMENTS_INSTANCE_ID is unset in both.
    let (server_a, server_b) = std::thread::scope(|s| {
        let a = s.spawn(|| Server::start(&backend, &dir_a, &[]));
        let b = s.spawn(|| Server::start(&backend, &dir_b, &[]));
        (a.join().unwrap(), b.join().unwrap())
    });
    let (a, b) = (Api::new(server_a.port), Api::new(server_b.port));

    let (ann_uid, ann) = a.user("ann").await;
    let (bob_uid, bob) = b.user("bob").await;
    let (cyd_uid, cyd) = b.user("cyd").await;
    let text = |c: &str| json!({"category": "TEXT", "content": c});
    let liked = a
        .ok(Method::POST, "/posts", Some(&ann), Some(text("liked")))
        .await["id"]
        .as_i64()
        .unwrap();
    let deleted = a
        .ok(Method::POST, "/posts", Some(&ann), Some(text("deleted")))
        .await["id"]
        .as_i64()
        .unwrap();
    let bobs = b
        .ok(Method::POST, "/posts", Some(&bob), Some(text("bob's")))
        .await["id"]
        .as_i64()
        .unwrap();

    // A like through A, seen through B at once. B reads the post first, so
    // whatever it keeps of it is from before the like.
    let before = b
        .ok(Method::GET, &format!("/posts/{liked}"), Some(&bob), None)
        .await;
    assert_eq!(
        (before["likeCount"].as_i64(), before["likedByMe"].as_bool()),
        (Some(0), Some(false)),
        "{before}"
    );
    a.ok(
        Method::PUT,
        &format!("/posts/{liked}/like"),
        Some(&bob),
        None,
    )
    .await;
    let post = b
        .ok(Method::GET, &format!("/posts/{liked}"), Some(&bob), None)
        .await;
    assert_eq!(
        (post["likeCount"].as_i64(), post["likedByMe"].as_bool()),
        (Some(1), Some(true)),
        "through B, as the liker: {post}"
    );
    let likers = |v: &Value| -> Vec<i64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|l| l["user"]["uid"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(likers(&post["likes"]), vec![bob_uid], "{post}");
    let likes = b
        .ok(
            Method::GET,
            &format!("/posts/{liked}/likes"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!(likers(&likes["items"]), vec![bob_uid], "{likes}");
    let like_id = likes["items"][0]["id"].as_i64().unwrap();
    let as_author = b
        .ok(Method::GET, &format!("/posts/{liked}"), Some(&ann), None)
        .await;
    assert_eq!(
        (
            as_author["likeCount"].as_i64(),
            as_author["likedByMe"].as_bool()
        ),
        (Some(1), Some(false)),
        "through B, as the author: {as_author}"
    );

    // A block through A: through B, bob no longer sees ann's post or
    // profile, and cannot follow her. He saw both through B just before.
    b.ok(Method::GET, &format!("/users/{ann_uid}"), Some(&bob), None)
        .await;
    a.ok(
        Method::PUT,
        &format!("/users/{bob_uid}/block"),
        Some(&ann),
        None,
    )
    .await;
    for (method, path) in [
        (Method::GET, format!("/posts/{liked}")),
        (Method::GET, format!("/users/{ann_uid}")),
        (Method::PUT, format!("/users/{ann_uid}/follow")),
    ] {
        let (s, v) = b.call(method.clone(), &path, Some(&bob), None).await;
        assert_eq!(s, 404, "{method} {path} through B by the blocked: {v}");
    }

    // A deletion through A: through B the post is 404 and gone from the
    // feeds it was in.
    b.ok(
        Method::PUT,
        &format!("/users/{ann_uid}/follow"),
        Some(&cyd),
        None,
    )
    .await;
    let album = format!("/users/{ann_uid}/posts");
    let in_album = |page: &Value| ids(page).contains(&deleted);
    assert!(in_album(&b.ok(Method::GET, &album, Some(&cyd), None).await));
    assert!(b.whole_feed(&ann).await.contains(&deleted));
    // A follow merges the followed's recent posts into the timeline in the
    // background: wait for it, boundedly, so the deletion is what is tested.
    let following = std::time::Instant::now();
    while !b.whole_feed(&cyd).await.contains(&deleted) {
        assert!(
            following.elapsed() < support::WAIT,
            "ann's post never reached her new follower's feed through B"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (s, _) = a
        .call(
            Method::DELETE,
            &format!("/posts/{deleted}"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!(s, 204);
    for viewer in [Some(cyd.as_str()), None] {
        let (s, v) = b
            .call(Method::GET, &format!("/posts/{deleted}"), viewer, None)
            .await;
        assert_eq!(s, 404, "a deleted post through B: {v}");
    }
    for (whose, token) in [("follower's", &cyd), ("author's", &ann)] {
        assert!(
            !b.whole_feed(token).await.contains(&deleted),
            "a deleted post in the {whose} feed through B"
        );
    }
    let page = b.ok(Method::GET, &album, Some(&cyd), None).await;
    assert!(
        !in_album(&page),
        "a deleted post in the album through B: {page}"
    );

    // Every id a process mints carries its generator's instance bits, set
    // before it listens: from MOMENTS_INSTANCE_ID (unset here) or from the
    // lease. Until then they are random, so two processes that skipped or
    // shared the lease would differ by luck 31 times in 32. But the lease
    // hands out the lowest free id, and this database is the test's own: so
    // between them the two hold 0 and 1, which random bits would hit 2
    // times in 1,024. One bit each throughout and {0, 1} together is the
    // lease, and different bits mean neither process can mint an id the
    // other has minted or will.
    let bits = |minted: &[i64]| -> Vec<u16> { minted.iter().map(|&id| instance_of(id)).collect() };
    let (on_a, on_b) = (
        bits(&[ann_uid, liked, deleted, like_id]),
        bits(&[bob_uid, cyd_uid, bobs]),
    );
    assert!(
        on_a.iter().all(|&i| i == on_a[0]) && on_b.iter().all(|&i| i == on_b[0]),
        "one instance per process: A minted {on_a:?}, B {on_b:?}"
    );
    let mut leased = [on_a[0], on_b[0]];
    leased.sort_unstable();
    assert_eq!(
        leased,
        [0, 1],
        "the two processes' instance bits: A {}, B {}",
        on_a[0],
        on_b[0]
    );

    drop((server_a, server_b));
    let _ = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(db)
        .drop()
        .await;
}

/// Whether instance `x` keeps copies of this post (`near_cache`): its
/// snapshot, which a warm read serves in place of the live values.
fn keeps_snapshot(x: &Instance, post: i64) -> bool {
    x.ctx
        .near
        .get(moments::store::Owner::Post(post))
        .is_some_and(|c| c.snapshot().is_some())
}

/// Reads `path` on `x` until `x` serves it warm: a read that reaches no
/// document (the first keeps the copies; background work, such as views
/// being written, may still count in the next few).
async fn warm(x: &Instance, path: &str, token: &str) -> Value {
    x.ok(Method::GET, path, Some(token), None).await;
    for _ in 0..20 {
        let before = x.ctx.round_trips.snapshot().0;
        let v = x.ok(Method::GET, path, Some(token), None).await;
        if x.ctx.round_trips.snapshot().0 == before {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("reads of {path} kept reaching the documents");
}

#[tokio::test]
async fn every_change_through_one_instance_outdates_the_copies_the_other_keeps() {
    let db = fresh_db("near_");
    // A reads (and keeps copies), B writes.
    let a = Instance::start(&db).await;
    let b = Instance::start(&db).await;
    let (ann_uid, ann) = b.user("ann").await;
    let (bob_uid, bob) = b.user("bob").await;
    let (cyd_uid, cyd) = b.user("cyd").await;
    for (who, whom) in [(&bob, ann_uid), (&ann, bob_uid), (&cyd, ann_uid)] {
        b.ok(
            Method::PUT,
            &format!("/api/v1/users/{whom}/follow"),
            Some(who),
            None,
        )
        .await;
    }
    let (writer, ann) = (&b, ann.as_str());
    let new_post = |body: Value| async move {
        writer
            .ok(Method::POST, "/api/v1/posts", Some(ann), Some(body))
            .await["id"]
            .as_i64()
            .unwrap()
    };
    let public = new_post(json!({"category": "TEXT", "content": "for everyone"})).await;
    let path = format!("/api/v1/posts/{public}");

    // A like, and taking it back.
    let seen = warm(&a, &path, &bob).await;
    assert!(keeps_snapshot(&a, public), "A keeps the post it read");
    assert_eq!(seen["likeCount"], 0);
    b.ok(Method::PUT, &format!("{path}/like"), Some(&bob), None)
        .await;
    let seen = a.ok(Method::GET, &path, Some(&bob), None).await;
    assert_eq!(seen["likeCount"], 1, "a like through B: {seen}");
    assert_eq!(seen["likedByMe"], true);
    assert_eq!(seen["likes"][0]["user"]["uid"], bob_uid);
    warm(&a, &path, &cyd).await;
    b.ok(Method::DELETE, &format!("{path}/like"), Some(&bob), None)
        .await;
    let seen = a.ok(Method::GET, &path, Some(&cyd), None).await;
    assert_eq!(seen["likeCount"], 0, "an unlike through B: {seen}");
    assert_eq!(seen["likes"], json!([]));

    // A comment, and its deletion.
    warm(&a, &path, &bob).await;
    let comment = b
        .ok(
            Method::POST,
            &format!("{path}/comments"),
            Some(&cyd),
            Some(json!({"content": "first!"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let seen = a.ok(Method::GET, &path, Some(&bob), None).await;
    assert_eq!(seen["commentCount"], 1, "a comment through B: {seen}");
    assert_eq!(seen["comments"][0]["id"], comment);
    warm(&a, &path, &bob).await;
    b.ok(
        Method::DELETE,
        &format!("/api/v1/comments/{comment}"),
        Some(&cyd),
        None,
    )
    .await;
    let seen = a.ok(Method::GET, &path, Some(&bob), None).await;
    assert_eq!(seen["commentCount"], 0, "a deleted comment: {seen}");
    assert_eq!(seen["comments"], json!([]));

    // A profile change: the card on the post.
    warm(&a, &path, &bob).await;
    b.ok(
        Method::PATCH,
        "/api/v1/me",
        Some(ann),
        Some(json!({"nickName": "安娜"})),
    )
    .await;
    let seen = a.ok(Method::GET, &path, Some(&bob), None).await;
    assert_eq!(seen["author"]["nickName"], "安娜", "{seen}");

    // A label edit: an `only` post's audience as the label is now.
    let label = b
        .ok(
            Method::POST,
            "/api/v1/labels",
            Some(ann),
            Some(json!({"name": "close", "members": [bob_uid]})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let only = new_post(json!({"category": "TEXT", "content": "close ones",
                               "visibility": "only", "audience": {"labels": [label]}}))
    .await;
    let only_path = format!("/api/v1/posts/{only}");
    warm(&a, &only_path, &bob).await;
    b.ok(
        Method::PATCH,
        &format!("/api/v1/labels/{label}"),
        Some(ann),
        Some(json!({"members": []})),
    )
    .await;
    let (s, v) = a.call(Method::GET, &only_path, Some(&bob), None).await;
    assert_eq!(s, 404, "out of the label through B: {v}");

    // A hide (不让他看): every post of the one hiding is gone.
    warm(&a, &path, &cyd).await;
    b.ok(
        Method::PUT,
        &format!("/api/v1/users/{cyd_uid}/hide"),
        Some(ann),
        None,
    )
    .await;
    let (s, v) = a.call(Method::GET, &path, Some(&cyd), None).await;
    assert_eq!(s, 404, "hidden from through B: {v}");
    b.ok(
        Method::DELETE,
        &format!("/api/v1/users/{cyd_uid}/hide"),
        Some(ann),
        None,
    )
    .await;
    let (s, v) = a.call(Method::GET, &path, Some(&cyd), None).await;
    assert_eq!(s, 200, "no longer hidden: {v}");

    // A mute (不看他): out of the home feed, album still open.
    let feed = warm(&a, "/api/v1/feed", &bob).await;
    assert!(ids(&feed).contains(&public), "{feed}");
    b.ok(
        Method::PUT,
        &format!("/api/v1/users/{ann_uid}/mute"),
        Some(&bob),
        None,
    )
    .await;
    let feed = a.ok(Method::GET, "/api/v1/feed", Some(&bob), None).await;
    assert!(!ids(&feed).contains(&public), "muted through B: {feed}");
    b.ok(
        Method::DELETE,
        &format!("/api/v1/users/{ann_uid}/mute"),
        Some(&bob),
        None,
    )
    .await;

    // An unfollow: a friends-only post leaves the one no longer a friend.
    let friends = new_post(json!({"category": "TEXT", "content": "friends",
                                  "visibility": "friends"}))
    .await;
    let friends_path = format!("/api/v1/posts/{friends}");
    warm(&a, &friends_path, &bob).await;
    b.ok(
        Method::DELETE,
        &format!("/api/v1/users/{bob_uid}/follow"),
        Some(ann),
        None,
    )
    .await;
    let (s, v) = a.call(Method::GET, &friends_path, Some(&bob), None).await;
    assert_eq!(s, 404, "no longer friends through B: {v}");

    // A block: nothing crosses it.
    warm(&a, &path, &cyd).await;
    b.ok(
        Method::PUT,
        &format!("/api/v1/users/{ann_uid}/block"),
        Some(&cyd),
        None,
    )
    .await;
    let (s, v) = a.call(Method::GET, &path, Some(&cyd), None).await;
    assert_eq!(s, 404, "blocked through B: {v}");

    // A deletion.
    warm(&a, &path, &bob).await;
    b.ok(Method::DELETE, &path, Some(ann), None).await;
    let (s, v) = a.call(Method::GET, &path, Some(&bob), None).await;
    assert_eq!(s, 404, "deleted through B: {v}");

    // A sign-out: the session A kept a copy of is over.
    warm(&a, "/api/v1/feed", &bob).await;
    b.ok(Method::DELETE, "/api/v1/sessions/current", Some(&bob), None)
        .await;
    let (s, _) = a.call(Method::GET, "/api/v1/feed", Some(&bob), None).await;
    assert_eq!(s, 401, "signed out through B");

    a.stop().await;
    b.stop().await;
    let _ = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db)
        .drop()
        .await;
}

/// Live updates cross instances: a stream held by one hears of writes made
/// through the other, and is told what to watch through either.
#[tokio::test]
async fn a_stream_on_one_instance_hears_writes_made_through_the_other() {
    let db = fresh_db("stream");
    let (a, b) = (Instance::start(&db).await, Instance::start(&db).await);
    let (reader, reader_token) = a.user("streamreader").await;
    let (author, author_token) = a.user("streamauthor").await;
    let (_, fan_token) = a.user("streamfan").await;
    a.ok(
        Method::PUT,
        &format!("/api/v1/users/{author}/follow"),
        Some(&reader_token),
        None,
    )
    .await;
    // The reader's stream is on B.
    let mut stream = support::sse::open(
        &b.http,
        &format!("{}/api/v1/stream", b.base),
        Some(&reader_token),
        None,
    )
    .await
    .map_err(|e| e.0)
    .unwrap();
    let (ready, _) = stream.until("ready", |_| true).await;
    // A post made through A enters the reader's feed: B's stream says so.
    let post = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&author_token),
            Some(json!({"category": "TEXT", "content": "from A"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    stream.until("post.new", |d| d["postId"] == post).await;
    // Watched through A, for the stream on B.
    let watching = a
        .ok(
            Method::PUT,
            &format!("/api/v1/stream/{}/watch", ready.data["streamId"]),
            Some(&reader_token),
            Some(json!({"posts": [post]})),
        )
        .await;
    assert_eq!(watching, json!({"watching": [post]}));
    stream
        .until("post.counts", |d| {
            d["postId"] == post && d["likeCount"] == 0
        })
        .await;
    a.ok(
        Method::PUT,
        &format!("/api/v1/posts/{post}/like"),
        Some(&fan_token),
        None,
    )
    .await;
    stream
        .until("post.counts", |d| {
            d["postId"] == post && d["likeCount"] == 1
        })
        .await;
    // A notification made through A.
    let mine = a
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&reader_token),
            Some(json!({"category": "TEXT", "content": "the reader's"})),
        )
        .await["id"]
        .clone();
    a.ok(
        Method::PUT,
        &format!("/api/v1/posts/{mine}/like"),
        Some(&author_token),
        None,
    )
    .await;
    let (n, _) = stream.until("notification", |d| d["kind"] == "like").await;
    assert_eq!(n.data["actor"]["uid"], author);
    stream.until("unread", |_| true).await;
    drop(stream);
    a.stop().await;
    b.stop().await;
    let _ = reader;
}

#[tokio::test]
async fn a_content_filter_added_through_one_instance_refuses_and_holds_on_the_other() {
    let db = fresh_db("filters_");
    let tune = |s: &mut Settings| {
        s.admin = Some((
            "filteradmin".into(),
            moments::config::Secret::new("filteradmin-password-1"),
        ));
        s.device_refresh_ms = 100;
    };
    let a = Instance::start_with(&db, env("MOMENTS_TEST_REDIS_URL"), tune).await;
    let b = Instance::start_with(&db, env("MOMENTS_TEST_REDIS_URL"), tune).await;
    let admin = a
        .ok(
            Method::POST,
            "/api/v1/sessions",
            None,
            Some(json!({"username": "filteradmin", "password": "filteradmin-password-1"})),
        )
        .await["token"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, author) = a.user("filtered").await;
    let post = |content: &'static str| {
        let (b, author) = (&b, author.clone());
        async move {
            b.call(
                Method::POST,
                "/api/v1/posts",
                Some(&author),
                Some(json!({"category": "TEXT", "content": content})),
            )
            .await
        }
    };
    // Before: B publishes both.
    assert_eq!(post("加微信 before").await.0, 201);
    assert_eq!(post("代购 before").await.0, 201);
    // The hold first: once B refuses by the later one, it holds by both.
    for (term, action) in [("代购", "hold"), ("加微信", "reject")] {
        a.ok(
            Method::POST,
            "/api/v1/admin/filters",
            Some(&admin),
            Some(json!({"term": term, "action": action, "reason": "not here"})),
        )
        .await;
    }
    // B reloads them on its own, within a bounded wait.
    let start = std::time::Instant::now();
    loop {
        let (refused, _) = post("加微信 after").await;
        if refused == 422 {
            break;
        }
        assert_eq!(refused, 201);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "B still publishes what A's filter refuses"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (s, held) = post("代购 after").await;
    assert_eq!(
        (s, held["moderation"].clone()),
        (201, json!("held")),
        "{held}"
    );

    a.stop().await;
    b.stop().await;
    let _ = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db)
        .drop()
        .await;
}

/// The S3 bucket scripts/test.sh started (SeaweedFS).
fn s3_bucket() -> moments::config::S3Bucket {
    moments::config::S3Bucket {
        endpoint: env("MOMENTS_TEST_S3_ENDPOINT"),
        bucket: env("MOMENTS_TEST_S3_BUCKET"),
        region: "us-east-1".into(),
        access_key_id: env("MOMENTS_TEST_S3_ACCESS_KEY_ID"),
        secret_access_key: env("MOMENTS_TEST_S3_SECRET_ACCESS_KEY"),
    }
}

#[tokio::test]
async fn a_picture_uploaded_through_one_instance_is_posted_and_served_through_the_other() {
    let db = fresh_db("media_");
    let tune = |s: &mut Settings| s.media.s3 = Some(s3_bucket());
    let a = Instance::start_with(&db, env("MOMENTS_TEST_REDIS_URL"), tune).await;
    let b = Instance::start_with(&db, env("MOMENTS_TEST_REDIS_URL"), tune).await;
    let (_, token) = a.user("photographer").await;
    let photo = moments::service::media::samples::phone_jpeg(120, 80, 6).unwrap();
    let resp = a
        .http
        .post(format!("{}/api/v1/media", a.base))
        .bearer_auth(&token)
        .header("content-type", support::multipart::CONTENT_TYPE)
        .body(support::multipart::jpeg(photo))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let media: Value = resp.json().await.unwrap();
    // The other instance publishes it and reads it back.
    let post = b
        .ok(
            Method::POST,
            "/api/v1/posts",
            Some(&token),
            Some(json!({"category": "PICTURE", "mediaIds": [media["id"]]})),
        )
        .await;
    assert_eq!(post["media"][0], media);
    let seen = a
        .ok(
            Method::GET,
            &format!("/api/v1/posts/{}", post["id"]),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(seen["media"], post["media"]);
    // Either serves the bytes the other stored.
    let url = media["url"].as_str().unwrap();
    let fetch = |x: &Instance| {
        let request = x.http.get(format!("{}{url}", x.base));
        async move { request.send().await.unwrap().bytes().await.unwrap() }
    };
    let (from_a, from_b) = (fetch(&a).await, fetch(&b).await);
    assert!(from_a.len() > 100);
    assert_eq!(from_a, from_b);
    a.stop().await;
    b.stop().await;
}
