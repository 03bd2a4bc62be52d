//! Graceful shutdown of the real binary under load: posts are published
//! from several connections at once while the process gets SIGTERM. Every
//! request sent on a connection the server had accepted must be answered
//! whole (a connection refused once the listener is shut is fine), the
//! process must exit 0 within its timeout, and after a restart on the same
//! data every post that was acknowledged must read back and be in every
//! follower's feed: none lost with the process, no fan-out dropped.
//!
//! Once on the embedded default, once on MongoDB (wire) + Redis, where
//! timelines outlive the process and a dropped fan-out would show as a
//! missing post (scripts/test.sh starts those servers; without them that
//! test fails saying so, like tests/conformance.rs). And SIGINT, which
//! stops as gracefully, and a second signal, which stops at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `MOMENTS_SHUTDOWN_TIMEOUT_SECS` of the server under test.
const SHUTDOWN_TIMEOUT_SECS: u64 = 10;
/// On top of that timeout: saving fan-outs, closing the stores, and a debug
/// build on a busy machine.
const EXIT_SLACK: Duration = Duration::from_secs(30);
/// How long start-up, a request, or a fan-out may take before the test
/// gives up: a hang must end the test, not the whole run.
const WAIT: Duration = Duration::from_secs(60);
const FOLLOWERS: usize = 4;
const PUBLISHERS: usize = 6;
/// Posts acknowledged before the signal is sent, so that it lands mid-load.
const POSTS_BEFORE_SIGNAL: usize = 30;

/// Where the server keeps its documents and live state.
#[derive(Clone)]
enum Backend {
    Embedded,
    Stores {
        mongodb_uri: String,
        redis_url: String,
        /// The database name, and the Redis key prefix: this test's own.
        name: String,
    },
}

fn random_suffix() -> String {
    let mut b = [0u8; 6];
    getrandom::getrandom(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn test_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run scripts/test.sh, which starts redis-server and nx-27017 and sets it"
        )
    })
}

/// A data directory of this test's own, removed however the test ends.
struct DataDir(PathBuf);

impl DataDir {
    fn new(tag: &str) -> Self {
        Self(std::env::temp_dir().join(format!("moments-shutdown-{tag}-{}", random_suffix())))
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `moments`, killed however the test ends, so a failed
/// assertion leaves no server behind.
struct Server {
    child: Child,
    lines: Receiver<String>,
    /// Every log line read so far (JSON), for assertions and failure messages.
    seen: Vec<String>,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn message(line: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line).ok()?;
    v.get("fields").cloned()
}

impl Server {
    fn start(backend: &Backend, dir: &DataDir) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_moments"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("MOMENTS_DATA_DIR", &dir.0)
            .env("MOMENTS_LISTEN", "127.0.0.1:0")
            .env("MOMENTS_RATE_LIMITS", "off")
            .env(
                "MOMENTS_SHUTDOWN_TIMEOUT_SECS",
                SHUTDOWN_TIMEOUT_SECS.to_string(),
            )
            .env("MOMENTS_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Backend::Stores {
            mongodb_uri,
            redis_url,
            name,
        } = backend
        {
            cmd.env("MOMENTS_MONGODB_URI", mongodb_uri)
                .env("MOMENTS_MONGODB_DB", name)
                .env("MOMENTS_REDIS_URL", redis_url)
                .env("MOMENTS_REDIS_PREFIX", format!("{name}:"));
        }
        let mut child = cmd.spawn().expect("start moments");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            lines,
            seen: Vec::new(),
            port: 0,
        };
        let serving = server.read_until(|f| f["message"] == "serving");
        server.port = message(&serving).unwrap()["port"]
            .as_u64()
            .expect("the serving line names its port") as u16;
        server
    }

    fn transcript(&self) -> String {
        self.seen.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Reads log lines until one's fields satisfy `stop`, and returns it.
    fn read_until(&mut self, stop: impl Fn(&Value) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if message(&line).is_some_and(|f| stop(&f)) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no such line within {WAIT:?}:\n{}", self.transcript())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("moments closed its output first:\n{}", self.transcript())
                }
            }
        }
    }

    fn terminate(&self) {
        self.signal("TERM");
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the process to exit, reading its log to the end; fails if
    /// it has not exited by `within`.
    fn exit_within(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "still running {within:?} after SIGTERM:\n{}",
                    self.transcript()
                ),
            }
        }
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "closed its output but did not exit:\n{}",
                self.transcript()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The fields of the log line whose message is `what`.
    fn logged(&self, what: &str) -> Option<Value> {
        self.seen
            .iter()
            .filter_map(|l| message(l))
            .find(|f| f["message"] == what)
    }
}

struct Api {
    client: reqwest::Client,
    base: String,
}

impl Api {
    fn new(port: u16) -> Self {
        Self {
            client: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            base: format!("http://127.0.0.1:{port}/api/v1"),
        }
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        support::call(
            &self.client,
            method,
            format!("{}{path}", self.base),
            token,
            body,
        )
        .await
    }

    /// Registers and signs in; returns (uid, token).
    async fn user(&self, name: &str) -> (i64, String) {
        let credentials = json!({"username": name, "password": "password-123"});
        let (s, card) = self
            .call(
                reqwest::Method::POST,
                "/users",
                None,
                Some(credentials.clone()),
            )
            .await;
        assert_eq!(s, 201, "{card}");
        let (s, session) = self
            .call(reqwest::Method::POST, "/sessions", None, Some(credentials))
            .await;
        assert_eq!(s, 201, "{session}");
        (
            card["uid"].as_i64().unwrap(),
            session["token"].as_str().unwrap().to_string(),
        )
    }

    /// Every post id of the viewer's feed, paging through all of it.
    async fn whole_feed(&self, token: &str) -> Vec<i64> {
        let mut seen = Vec::new();
        let mut cursor = String::new();
        for _ in 0..1000 {
            let (s, page) = self
                .call(
                    reqwest::Method::GET,
                    &format!("/feed?limit=100&cursor={cursor}"),
                    Some(token),
                    None,
                )
                .await;
            assert_eq!(s, 200, "{page}");
            seen.extend(
                page["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["id"].as_i64().unwrap()),
            );
            match page["nextCursor"].as_str() {
                Some(c) => cursor = c.to_string(),
                None => return seen,
            }
        }
        panic!("the feed never ended");
    }
}

/// How one publisher's requests ended.
#[derive(Default)]
struct Published {
    /// Ids of the posts answered 201.
    acknowledged: Vec<i64>,
    /// Requests the server never took: refused connections.
    refused: usize,
    /// Anything else: an answer that was not 201, or a request on an
    /// accepted connection that got no whole answer.
    failures: Vec<String>,
}

/// Publishes posts until the server refuses the connection.
async fn publish(client: reqwest::Client, url: String, token: String, n: usize) -> Published {
    let mut out = Published::default();
    for i in 0.. {
        let sent = client
            .post(&url)
            .bearer_auth(&token)
            .json(&json!({"category": "TEXT", "content": format!("publisher {n}, post {i}")}))
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) if e.is_connect() => {
                out.refused += 1;
                return out;
            }
            Err(e) => {
                out.failures.push(format!("request {i}: {e:?}"));
                return out;
            }
        };
        let status = resp.status().as_u16();
        match resp.text().await {
            Ok(text) if status == 201 => {
                let post: Value = serde_json::from_str(&text).unwrap();
                out.acknowledged.push(post["id"].as_i64().unwrap());
            }
            Ok(text) => out.failures.push(format!("request {i}: {status} {text}")),
            Err(e) => {
                out.failures
                    .push(format!("request {i}: answer cut short: {e:?}"));
                return out;
            }
        }
    }
    out
}

async fn sigterm_under_load_loses_nothing(backend: Backend) {
    let dir = DataDir::new(match backend {
        Backend::Embedded => "embedded",
        Backend::Stores { .. } => "stores",
    });
    let mut server = Server::start(&backend, &dir);
    let api = Api::new(server.port);
    let (_, author) = api.user("author").await;
    let mut followers = Vec::new();
    for i in 0..FOLLOWERS {
        let (_, token) = api.user(&format!("follower{i}")).await;
        followers.push(token);
    }
    let (_, author_card) = api
        .call(reqwest::Method::GET, "/me", Some(&author), None)
        .await;
    let author_uid = author_card["uid"].as_i64().unwrap();
    for token in &followers {
        let (s, _) = api
            .call(
                reqwest::Method::PUT,
                &format!("/users/{author_uid}/follow"),
                Some(token),
                None,
            )
            .await;
        assert_eq!(s, 200);
        // Their timelines exist now (in Redis they outlive the process),
        // so from here on a post reaches them only by being pushed.
        assert_eq!(api.whole_feed(token).await, Vec::<i64>::new());
    }

    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|n| {
            let url = format!("{}/posts", api.base);
            tokio::spawn(publish(api.client.clone(), url, author.clone(), n))
        })
        .collect();
    let start_of_load = Instant::now();
    loop {
        let (_, page) = api
            .call(
                reqwest::Method::GET,
                &format!("/users/{author_uid}/posts?limit=100"),
                None,
                None,
            )
            .await;
        if page["items"].as_array().map_or(0, Vec::len) >= POSTS_BEFORE_SIGNAL {
            break;
        }
        assert!(
            start_of_load.elapsed() < WAIT,
            "the load never got going:\n{}",
            server.transcript()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let signalled = Instant::now();
    server.terminate();

    let mut posts = Vec::new();
    let mut refused = 0;
    let mut failures = Vec::new();
    for p in publishers {
        let out = tokio::time::timeout(WAIT, p)
            .await
            .expect("a publisher still runs a minute after SIGTERM")
            .unwrap();
        posts.extend(out.acknowledged);
        refused += out.refused;
        failures.extend(out.failures);
    }
    let status = server.exit_within(Duration::from_secs(SHUTDOWN_TIMEOUT_SECS) + EXIT_SLACK);
    let exited_after = signalled.elapsed();
    assert!(
        failures.is_empty(),
        "requests on accepted connections without a whole 201: {failures:#?}\n{}",
        server.transcript()
    );
    assert_eq!(
        refused, PUBLISHERS,
        "every publisher stops on a refused connection"
    );
    assert!(
        status.success(),
        "exited {status}:\n{}",
        server.transcript()
    );
    assert!(
        !server
            .seen
            .iter()
            .any(|l| l.contains("\"level\":\"ERROR\"")),
        "errors were logged while stopping:\n{}",
        server.transcript()
    );
    let steps = [
        "stopped accepting new connections",
        "HTTP drained",
        "fan-outs finished or saved",
        "background tasks stopped",
        "documents flushed and closed",
        "stopped",
    ];
    let order: Vec<usize> = steps
        .iter()
        .map(|step| {
            server
                .seen
                .iter()
                .position(|l| message(l).is_some_and(|f| f["message"] == *step))
                .unwrap_or_else(|| panic!("no {step:?} line:\n{}", server.transcript()))
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "the steps are logged out of order:\n{}",
        server.transcript()
    );
    // What the report of this test says about a shutdown under load.
    eprintln!(
        "{} posts acknowledged; SIGTERM to exit {exited_after:?}; steps: {}",
        posts.len(),
        steps
            .iter()
            .map(|s| format!("{s}: {}", server.logged(s).unwrap()))
            .collect::<Vec<_>>()
            .join("; ")
    );
    drop(server);

    let server = Server::start(&backend, &dir);
    let api = Api::new(server.port);
    for id in &posts {
        let (s, post) = api
            .call(reqwest::Method::GET, &format!("/posts/{id}"), None, None)
            .await;
        assert_eq!(s, 200, "acknowledged post {id} is gone: {post}");
    }
    // A fan-out the first process saved is resumed by this one's start-up
    // sweep, in the background: wait for it, boundedly.
    for (i, token) in followers.iter().enumerate() {
        let started = Instant::now();
        loop {
            let feed = api.whole_feed(token).await;
            let missing: Vec<i64> = posts
                .iter()
                .copied()
                .filter(|p| !feed.contains(p))
                .collect();
            if missing.is_empty() {
                break;
            }
            assert!(
                started.elapsed() < WAIT,
                "follower {i}'s feed lacks {} acknowledged posts: {missing:?}",
                missing.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut server = server;
    server.terminate();
    let status = server.exit_within(Duration::from_secs(SHUTDOWN_TIMEOUT_SECS) + EXIT_SLACK);
    assert!(
        status.success(),
        "the restarted server exited {status}:\n{}",
        server.transcript()
    );
    eprintln!(
        "restarted, idle but for this test's pooled connections: {}",
        server.logged("HTTP drained").unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_on_the_embedded_default_loses_nothing() {
    sigterm_under_load_loses_nothing(Backend::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_on_mongodb_and_redis_loses_nothing() {
    let backend = Backend::Stores {
        mongodb_uri: test_env("MOMENTS_TEST_MONGODB_URI"),
        redis_url: test_env("MOMENTS_TEST_REDIS_URL"),
        name: format!("shutdown_{}", random_suffix()),
    };
    sigterm_under_load_loses_nothing(backend).await;
}

#[test]
fn sigint_stops_as_gracefully_as_sigterm() {
    let dir = DataDir::new("sigint");
    let mut server = Server::start(&Backend::Embedded, &dir);
    server.signal("INT");
    let status = server.exit_within(Duration::from_secs(SHUTDOWN_TIMEOUT_SECS) + EXIT_SLACK);
    assert!(
        status.success(),
        "exited {status}:\n{}",
        server.transcript()
    );
    let stopping =
        server.logged("stopping: finishing requests and fan-outs (send it again to stop at once)");
    assert_eq!(
        stopping.unwrap()["signal"],
        "SIGINT",
        "{}",
        server.transcript()
    );
    assert!(server.logged("documents flushed and closed").is_some());
}

#[test]
fn a_second_signal_stops_at_once() {
    let dir = DataDir::new("twice");
    let mut server = Server::start(&Backend::Embedded, &dir);
    // An idle keep-alive connection: draining waits for its keep-alive
    // timeout (5 s), time enough for a second signal.
    let mut idle = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    std::io::Write::write_all(
        &mut idle,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n",
    )
    .unwrap();
    let mut answer = [0u8; 12];
    std::io::Read::read_exact(&mut idle, &mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    server.terminate();
    server.read_until(|f| f["message"] == "stopped accepting new connections");
    server.terminate();
    let status = server.exit_within(Duration::from_secs(SHUTDOWN_TIMEOUT_SECS) + EXIT_SLACK);
    assert_eq!(status.code(), Some(1), "{}", server.transcript());
    assert!(
        server.logged("stopping at once, unfinished").is_some(),
        "{}",
        server.transcript()
    );
    assert!(
        server.logged("stopped").is_none(),
        "{}",
        server.transcript()
    );
    drop(idle);
}
