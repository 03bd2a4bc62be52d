//! Spawns the real app on port 0 against the real stores that
//! `scripts/test.sh` started, with a database and a Redis key prefix of its
//! own, so tests run in parallel without seeing each other.

use std::sync::Arc;

use moments::config::{Secret, Settings};
use moments::service::Context;
use moments::startup::{connect_stores, Application, Stopper};
use moments::store::{DocStore, LiveStore};
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub const ADMIN: (&str, &str) = ("root", "root-password-1");

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub ctx: Context,
    pub settings: Settings,
    /// The `metrics_listen` listener's port, when the settings asked for one.
    pub metrics_port: Option<u16>,
}

pub struct User {
    pub uid: i64,
    pub token: String,
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test.sh, which starts redis-server and nx-27017 and sets it")
    })
}

fn unique(prefix: &str) -> String {
    let mut b = [0u8; 6];
    getrandom::getrandom(&mut b).unwrap();
    let s: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{prefix}{s}")
}

/// Which backend this run tests: `MOMENTS_TEST_BACKEND=stores` for MongoDB
/// + Redis (scripts/test.sh starts them), anything else the embedded default.
pub fn on_real_stores() -> bool {
    std::env::var("MOMENTS_TEST_BACKEND").is_ok_and(|b| b == "stores")
}

pub fn test_settings() -> Settings {
    let db = unique("t_");
    let mut s = Settings {
        listen: "127.0.0.1:0".into(),
        mongodb_db: db.clone(),
        redis_prefix: format!("{db}:"),
        data_dir: std::env::temp_dir().join(format!("moments-test-{db}")),
        admin: Some((ADMIN.0.into(), Secret::new(ADMIN.1))),
        workers: Some(1),
        device_refresh_ms: 100,
        ..Settings::default()
    };
    if on_real_stores() {
        s.mongodb_uri = Some(env("MOMENTS_TEST_MONGODB_URI"));
        s.redis_url = Some(env("MOMENTS_TEST_REDIS_URL"));
    }
    // Media are files under the data directory by default; the media tests
    // run on S3 as well (tests/api/media.rs).
    // The search index is the embedded one, or with MOMENTS_TEST_SEARCH=
    // opensearch an index of its own on the OpenSearch node scripts/test.sh
    // starts (the search tests' lane).
    if std::env::var("MOMENTS_TEST_SEARCH").as_deref() == Ok("opensearch") {
        s.search.opensearch_url = Some(env("MOMENTS_TEST_OPENSEARCH_URL"));
        s.search.opensearch_index = db;
    }
    s
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(test_settings()).await
}

pub async fn spawn_app_with(settings: Settings) -> TestApp {
    let (docs, live) = connect_stores(&settings).await.expect("connect stores");
    spawn_app_on(settings, docs, live).await
}

pub async fn spawn_app_on(
    settings: Settings,
    docs: Arc<dyn DocStore>,
    live: Arc<dyn LiveStore>,
) -> TestApp {
    spawn_stoppable_app_on(settings, docs, live).await.0
}

/// `spawn_app_on`, with what stops the app and the task that serves until
/// then and stops it (its result is `run_until_stopped`'s).
pub async fn spawn_stoppable_app_on(
    settings: Settings,
    docs: Arc<dyn DocStore>,
    live: Arc<dyn LiveStore>,
) -> (
    TestApp,
    Stopper,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    moments::telemetry::init("warn");
    let app = Application::build_on(settings.clone(), docs, live)
        .await
        .expect("build app");
    let base = format!("http://127.0.0.1:{}", app.port());
    let ctx = app.context().clone();
    let metrics_port = app.metrics_port();
    let stopper = app.stopper();
    let running = tokio::spawn(app.run_until_stopped());
    let app = TestApp {
        base,
        client: reqwest::Client::new(),
        ctx,
        settings,
        metrics_port,
    };
    (app, stopper, running)
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if self.settings.mongodb_uri.is_none() {
            let _ = std::fs::remove_dir_all(&self.settings.data_dir);
            return;
        }
        // On MongoDB every test is also a check that its queries would each
        // reach one shard of a sharded cluster (store/mongo/collections/shard_keys.rs).
        let scatter = moments::store::mongo::collections::shard_keys::violations_in(
            &self.settings.mongodb_db,
        );
        if !scatter.is_empty() && !std::thread::panicking() {
            panic!(
                "queries without their shard key (add the key, or list the query with its reason in shard_keys::SCATTER):\n{}",
                scatter.join("\n")
            );
        }
    }
}

impl TestApp {
    /// Any request; the body is sent as JSON when given. Returns the status
    /// and the parsed body (`Null` when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status();
        let text = resp.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    /// Calls with the body written as an ASCII-only JSON encoder writes it
    /// (Python's default): every other character as `\\uXXXX`, one outside
    /// the BMP as a pair of them, so a body takes the most bytes it can.
    pub async fn call_escaped(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: &Value,
    ) -> (StatusCode, Value, usize) {
        let mut escaped = String::new();
        for c in body.to_string().chars() {
            if c.is_ascii() {
                escaped.push(c);
            } else {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    escaped.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
        let size = escaped.len();
        let resp = self
            .client
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(escaped)
            .send()
            .await
            .expect("request");
        let status = resp.status();
        let value = resp.json().await.unwrap_or(Value::Null);
        (status, value, size)
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, token, Some(body)).await
    }

    pub async fn put(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::PUT, path, token, None).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, token, None).await
    }

    /// Registers and signs in a user.
    pub async fn user(&self, name: &str) -> User {
        self.user_nicknamed(name, &format!("{name}昵称")).await
    }

    /// Registers and signs in a user with this nickname.
    pub async fn user_nicknamed(&self, name: &str, nick: &str) -> User {
        let (s, card) = self
            .post(
                "/api/v1/users",
                None,
                serde_json::json!({"username": name, "password": "password-123", "nickName": nick}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{card}");
        let token = self.login(name, "password-123").await;
        User {
            uid: card["uid"].as_i64().unwrap(),
            token,
        }
    }

    /// `user`, for use in concurrent futures that outlive a borrowed name.
    pub async fn user_owned(&self, name: String) -> User {
        self.user(&name).await
    }

    pub async fn login(&self, name: &str, password: &str) -> String {
        let (s, session) = self
            .post(
                "/api/v1/sessions",
                None,
                serde_json::json!({"username": name, "password": password}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{session}");
        session["token"].as_str().unwrap().to_string()
    }

    pub async fn admin(&self) -> User {
        let token = self.login(ADMIN.0, ADMIN.1).await;
        let (_, me) = self.get("/api/v1/me", Some(&token)).await;
        User {
            uid: me["uid"].as_i64().unwrap(),
            token,
        }
    }

    /// Posts `body` as `user`; the new post's id.
    pub async fn post_with(&self, user: &User, body: Value) -> i64 {
        let (s, post) = self.post("/api/v1/posts", Some(&user.token), body).await;
        assert_eq!(s.as_u16(), 201, "{post}");
        post["id"].as_i64().unwrap()
    }

    /// Deletes `who`'s account (their password given, as the API asks).
    pub async fn delete_account(&self, who: &User) {
        let (s, body) = self
            .call(
                Method::DELETE,
                "/api/v1/me",
                Some(&who.token),
                Some(serde_json::json!({"password": "password-123"})),
            )
            .await;
        assert_eq!(s.as_u16(), 204, "{body}");
    }

    pub async fn text_post(&self, user: &User, content: &str) -> i64 {
        let (s, post) = self
            .post(
                "/api/v1/posts",
                Some(&user.token),
                serde_json::json!({"category": "TEXT", "content": content}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{post}");
        post["id"].as_i64().unwrap()
    }

    pub async fn comment(
        &self,
        user: &User,
        post: i64,
        content: &str,
        reply_to: Option<i64>,
    ) -> Value {
        let (s, c) = self
            .post(
                &format!("/api/v1/posts/{post}/comments"),
                Some(&user.token),
                serde_json::json!({"content": content, "replyToCommentId": reply_to}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{c}");
        c
    }

    /// Drops every derived live key of this app (sessions stay): what
    /// losing Redis, or restarting the embedded default, does to the live state.
    pub async fn lose_live_state(&self) -> usize {
        self.ctx.live.clear_derived().await.unwrap()
    }
}

/// Asserts a problem+json answer with this status and code; returns it.
/// `who` follows `whom`.
pub async fn follow(app: &TestApp, who: &User, whom: &User) {
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/follow", whom.uid),
            Some(&who.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
}

/// Every item of a cursor-paged list at `path` (which takes `?limit=`),
/// walking its pages of `limit`: each page answers 200 and holds at most
/// `limit` items.
pub async fn every_item(
    app: &TestApp,
    path: &str,
    token: Option<&str>,
    limit: usize,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor = String::new();
    for _ in 0..100 {
        let (s, page) = app
            .get(&format!("{path}?limit={limit}&cursor={cursor}"), token)
            .await;
        assert_eq!(s.as_u16(), 200, "{page}");
        let got = page["items"].as_array().unwrap();
        assert!(got.len() <= limit, "{page}");
        items.extend(got.iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => return items,
        }
    }
    panic!("{path} never ended");
}

/// The `id` of each item.
pub fn ids(items: &[Value]) -> Vec<i64> {
    items.iter().map(|i| i["id"].as_i64().unwrap()).collect()
}

/// Every post id of the viewer's timeline, paging through all of it.
pub async fn whole_feed(app: &TestApp, viewer: &User, limit: usize) -> Vec<i64> {
    ids(&every_item(app, "/api/v1/feed", Some(&viewer.token), limit).await)
}

pub fn assert_problem(resp: &(StatusCode, Value), status: u16, code: &str) -> Value {
    assert_eq!(resp.0.as_u16(), status, "{}", resp.1);
    assert_eq!(resp.1["code"], code, "{}", resp.1);
    assert_eq!(resp.1["status"], status);
    resp.1.clone()
}

/// Everything in the expanded post except times that move on their own.
/// An answer without what may change between two reads of an unchanged
/// post: the clock, and `viewCount`, which moves when the view buffer is
/// flushed (every `MOMENTS_VIEW_FLUSH_MS`), whenever that falls between the
/// reads. tests/api/views.rs checks the counts themselves.
pub fn stable(post: &Value) -> Value {
    let mut p = post.clone();
    if let Some(o) = p.as_object_mut() {
        o.remove("serverTime");
        o.remove("viewCount");
    }
    p
}

impl TestApp {
    /// A request with extra headers; the body is sent as JSON when given.
    pub async fn call_with(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let (status, headers) = (resp.status(), resp.headers().clone());
        let text = resp.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, headers, value)
    }

    /// Signs in again as `name` from a device with this name.
    pub async fn login_on(&self, name: &str, password: &str, device: &str) -> String {
        let (s, session) = self
            .post(
                "/api/v1/sessions",
                None,
                serde_json::json!({"username": name, "password": password, "device": device}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{session}");
        session["token"].as_str().unwrap().to_string()
    }
}

/// Waits until background work (fan-outs, activity records) has stopped
/// making round trips, so that a count measures one request; fails if it
/// never stops within 10 s, since a count taken then would measure the
/// background work too.
pub async fn settle(app: &TestApp) {
    let mut last = app.ctx.round_trips.snapshot();
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = app.ctx.round_trips.snapshot();
        if now == last {
            return;
        }
        last = now;
    }
    panic!("background work still making store round trips after 10 s");
}

/// Waits until `done` answers true, asking every 20 ms, and fails naming
/// `what` if it has not within 30 s: for what background work (a
/// write-back, a fan-out, a cache fill) makes true a moment after the
/// request that started it was answered. Never a measure of how long it
/// took: a slow machine only waits longer.
pub async fn wait_until<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still not so after 30 s: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// How many password hashes and verifications this app has asked for so
/// far (the pool is the process's, shared by the tests running at once;
/// this count is the app's own).
pub fn password_hashes(app: &TestApp) -> u64 {
    app.ctx
        .password_hashes
        .load(std::sync::atomic::Ordering::Relaxed)
}
