//! What the tests that run the real binary share: a free port, waiting
//! for it to be ready, a JSON call, an account; and `Server`, the binary
//! started on a backend and followed through its log, with `Api` to call it.
#![allow(dead_code)]

pub mod multipart;
pub mod proxy;
pub mod sse;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub async fn wait_ready(client: &reqwest::Client, base: &str, child: &mut Child) {
    for _ in 0..200 {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                return;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("moments exited early: {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("moments did not become ready");
}

pub async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client.request(method, url);
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

/// Registers and signs in `name`; returns (uid, token).
pub async fn account(client: &reqwest::Client, api: &str, name: &str) -> (i64, String) {
    let body = json!({"username": name, "password": "password-123"});
    let (s, card) = call(
        client,
        reqwest::Method::POST,
        format!("{api}/users"),
        None,
        Some(body.clone()),
    )
    .await;
    assert_eq!(s, 201, "{card}");
    let (s, session) = call(
        client,
        reqwest::Method::POST,
        format!("{api}/sessions"),
        None,
        Some(body),
    )
    .await;
    assert_eq!(s, 201, "{session}");
    (
        card["uid"].as_i64().unwrap(),
        session["token"].as_str().unwrap().to_string(),
    )
}

/// How long start-up, a request, or a wait for the server may take before
/// a test gives up: a hang must end the test, not the whole run.
pub const WAIT: Duration = Duration::from_secs(60);

pub fn random_suffix() -> String {
    let mut b = [0u8; 6];
    getrandom::getrandom(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A variable scripts/test.sh exports for the stores it starts.
pub fn test_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run scripts/test.sh, which starts redis-server and nx-27017 and sets it"
        )
    })
}

/// Where the server keeps its documents and live state.
#[derive(Clone)]
pub enum Backend {
    Embedded,
    Stores {
        mongodb_uri: String,
        redis_url: String,
        /// The database name, and the Redis key prefix: the test's own.
        name: String,
    },
}

impl Backend {
    /// The MongoDB and Redis scripts/test.sh started, under a database and
    /// key prefix named `tag` and a random suffix.
    pub fn stores(tag: &str) -> Self {
        Self::Stores {
            mongodb_uri: test_env("MOMENTS_TEST_MONGODB_URI"),
            redis_url: test_env("MOMENTS_TEST_REDIS_URL"),
            name: format!("{tag}_{}", random_suffix()),
        }
    }
}

/// A data directory of the test's own, removed however the test ends.
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn new(tag: &str) -> Self {
        Self(std::env::temp_dir().join(format!("moments-{tag}-{}", random_suffix())))
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `moments`, killed however the test ends, so a failed
/// assertion leaves no server behind.
pub struct Server {
    pub child: Child,
    lines: Receiver<String>,
    /// Every log line read so far (JSON), for assertions and failure messages.
    pub seen: Vec<String>,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fields of a JSON log line.
pub fn message(line: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line).ok()?;
    v.get("fields").cloned()
}

impl Server {
    /// Starts `moments serve` on a free port with only the environment
    /// given here and in `env` (none of the caller's `MOMENTS_*`), and
    /// waits until it serves.
    pub fn start(backend: &Backend, dir: &DataDir, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_moments"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("MOMENTS_DATA_DIR", &dir.0)
            .env("MOMENTS_LISTEN", "127.0.0.1:0")
            .env("MOMENTS_RATE_LIMITS", "off")
            .env("MOMENTS_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
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

    pub fn transcript(&self) -> String {
        self.seen.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Reads log lines until one's fields satisfy `stop`, and returns it.
    pub fn read_until(&mut self, stop: impl Fn(&Value) -> bool) -> String {
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

    pub fn terminate(&self) {
        self.signal("TERM");
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the process to exit, reading its log to the end; fails if
    /// it has not exited by `within`.
    pub fn exit_within(&mut self, within: Duration) -> ExitStatus {
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
    pub fn logged(&self, what: &str) -> Option<Value> {
        self.seen
            .iter()
            .filter_map(|l| message(l))
            .find(|f| f["message"] == what)
    }
}

/// The API of a `Server`.
pub struct Api {
    pub client: reqwest::Client,
    /// `http://127.0.0.1:PORT/api/v1`
    pub base: String,
}

impl Api {
    pub fn new(port: u16) -> Self {
        Self {
            client: reqwest::Client::builder().timeout(WAIT).build().unwrap(),
            base: format!("http://127.0.0.1:{port}/api/v1"),
        }
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        call(
            &self.client,
            method,
            format!("{}{path}", self.base),
            token,
            body,
        )
        .await
    }

    /// Calls, and fails the test unless the answer is a 2xx; returns its body.
    pub async fn ok(
        &self,
        method: reqwest::Method,
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

    /// Registers and signs in; returns (uid, token).
    pub async fn user(&self, name: &str) -> (i64, String) {
        account(&self.client, &self.base, name).await
    }

    /// Every post id of the viewer's feed, paging through all of it.
    pub async fn whole_feed(&self, token: &str) -> Vec<i64> {
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
