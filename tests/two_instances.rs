//! Two instances on the same MongoDB and Redis agree: whatever one answers
//! for a write, the other shows at once. Each instance leases its own
//! instance id, so their ids never collide either.
//!
//! Needs `MOMENTS_TEST_MONGODB_URI` and `MOMENTS_TEST_REDIS_URL`
//! (scripts/test.sh sets them), like tests/conformance.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::Method;
use serde_json::{json, Value};

use moments::config::Settings;
use moments::startup::{Application, Stopper};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test.sh, which starts redis-server and nx-27017")
    })
}

struct Instance {
    base: String,
    http: reqwest::Client,
    stopper: Stopper,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Instance {
    async fn start(db: &str) -> Self {
        let settings = Settings {
            listen: "127.0.0.1:0".into(),
            mongodb_uri: Some(env("MOMENTS_TEST_MONGODB_URI")),
            mongodb_db: db.into(),
            redis_url: Some(env("MOMENTS_TEST_REDIS_URL")),
            redis_prefix: format!("{db}:"),
            workers: Some(1),
            rate_limits: None,
            ..Settings::default()
        };
        moments::telemetry::init("warn");
        let app = Application::build(settings).await.expect("build app");
        let base = format!("http://127.0.0.1:{}", app.port());
        let stopper = app.stopper();
        let running = tokio::spawn(app.run_until_stopped());
        Self {
            base,
            http: reqwest::Client::new(),
            stopper,
            running,
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
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
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

#[tokio::test]
async fn a_write_through_one_instance_is_seen_through_the_other_at_once() {
    let mut suffix = [0u8; 6];
    getrandom::getrandom(&mut suffix).unwrap();
    let db: String = std::iter::once("two_".to_string())
        .chain(suffix.iter().map(|b| format!("{b:02x}")))
        .collect();
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
