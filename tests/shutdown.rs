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
//! stops as gracefully, and a second signal, which stops at once. And
//! what no signal announces: an instance killed mid-export, whose export
//! the next instance takes over and finishes, and one killed mid-import,
//! whose import the next goes on with from its last recorded step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::{message, Api, Backend, DataDir, Server, WAIT};

use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `MOMENTS_SHUTDOWN_TIMEOUT_SECS` of the server under test.
const SHUTDOWN_TIMEOUT_SECS: u64 = 10;
/// On top of that timeout: saving fan-outs, closing the stores, and a debug
/// build on a busy machine.
const EXIT_SLACK: Duration = Duration::from_secs(30);
const FOLLOWERS: usize = 4;
const PUBLISHERS: usize = 6;
/// Posts acknowledged before the signal is sent, so that it lands mid-load.
const POSTS_BEFORE_SIGNAL: usize = 30;

/// The server under test, with this test's shutdown timeout.
fn start(backend: &Backend, dir: &DataDir) -> Server {
    let timeout = SHUTDOWN_TIMEOUT_SECS.to_string();
    Server::start(
        backend,
        dir,
        &[("MOMENTS_SHUTDOWN_TIMEOUT_SECS", timeout.as_str())],
    )
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
        Backend::Embedded => "shutdown-embedded",
        Backend::Stores { .. } => "shutdown-stores",
    });
    let mut server = start(&backend, &dir);
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

    let server = start(&backend, &dir);
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
    sigterm_under_load_loses_nothing(Backend::stores("shutdown")).await;
}

#[test]
fn sigint_stops_as_gracefully_as_sigterm() {
    let dir = DataDir::new("shutdown-sigint");
    let mut server = start(&Backend::Embedded, &dir);
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

/// A second signal ends the process while work the first one waits for is
/// provably unfinished: a sign-up whose body the test holds back, so the
/// drain cannot end before the test lets it, nor by its deadline (the
/// longest shutdown timeout, ten times what the test waits for the exit).
#[test]
fn a_second_signal_stops_at_once() {
    use std::io::{Read, Write};
    let dir = DataDir::new("shutdown-twice");
    let mut server = Server::start(
        &Backend::Embedded,
        &dir,
        &[("MOMENTS_SHUTDOWN_TIMEOUT_SECS", "600")],
    );
    // Accepted for sure: one request answered on it first.
    let mut held = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    held.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8];
        held.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .expect("a content-length");
    held.read_exact(&mut vec![0u8; length]).unwrap();
    held.write_all(
        b"POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"username\": ",
    )
    .unwrap();
    server.terminate();
    let stopping = server.read_until(|f| f["message"] == "stopped accepting new connections");
    assert_eq!(
        message(&stopping).unwrap()["open_connections"],
        1,
        "the held request is what the drain waits for:\n{}",
        server.transcript()
    );
    server.terminate();
    let status = server.exit_within(WAIT);
    assert_eq!(status.code(), Some(1), "{}", server.transcript());
    assert!(
        server.logged("stopping at once, unfinished").is_some(),
        "{}",
        server.transcript()
    );
    for unreached in ["HTTP drained", "stopped"] {
        assert!(
            server.logged(unreached).is_none(),
            "{unreached:?} though a request was unfinished:\n{}",
            server.transcript()
        );
    }
    // The request was never answered: the connection ended with the
    // process, without a byte of an answer.
    let mut answer = Vec::new();
    let _ = held.read_to_end(&mut answer);
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
}

/// An export whose instance is killed (`kill -9`, no hand-over) while it
/// writes is taken over by the next instance once its claim lapses, as a
/// new attempt, and ends ready with every record: on the embedded default
/// the next instance is a restart on the same directory; on MongoDB and
/// Redis another process.
async fn a_killed_instances_export_is_taken_over(backend: Backend, tag: &str) {
    let dir = DataDir::new(tag);
    // Slow enough to be killed mid-run; a claim that lapses in 2 s.
    let env = [
        ("MOMENTS_EXPORT_BATCH", "2"),
        ("MOMENTS_EXPORT_PAUSE_MS", "100"),
        ("MOMENTS_EXPORT_CLAIM_SECS", "2"),
    ];
    let mut first = Server::start(&backend, &dir, &env);
    let api = Api::new(first.port);
    let (_, token) = api.user("exported").await;
    const POSTS: usize = 60;
    for i in 0..POSTS {
        api.ok(
            reqwest::Method::POST,
            "/posts",
            Some(&token),
            Some(json!({"category": "TEXT", "content": format!("post {i}")})),
        )
        .await;
    }
    let started = api
        .ok(
            reqwest::Method::POST,
            "/me/exports",
            Some(&token),
            Some(json!({})),
        )
        .await;
    let path = format!("/me/exports/{}", started["id"]);
    let deadline = Instant::now() + WAIT;
    loop {
        let e = api
            .ok(reqwest::Method::GET, &path, Some(&token), None)
            .await;
        assert_ne!(
            e["state"], "ready",
            "finished before it could be killed: {e}"
        );
        if e["state"] == "running" && e["progress"]["done"].as_i64().unwrap() > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "never seen running: {e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    let mut second = Server::start(&backend, &dir, &env);
    let api = Api::new(second.port);
    let ready = second.read_until(|f| f["message"] == "data export ready");
    let ready = message(&ready).unwrap();
    assert_eq!(ready["attempt"], 2, "a second attempt: {ready}");
    let e = api
        .ok(reqwest::Method::GET, &path, Some(&token), None)
        .await;
    assert_eq!(e["state"], "ready", "{e}");
    let bytes = api
        .client
        .get(format!("{}{path}/download", api.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.len() as i64, e["size"].as_i64().unwrap());
    let archive = rawzip::ZipArchive::from_slice(&bytes[..]).expect("a zip");
    let mut posts = None;
    let mut entries = 0;
    for entry in archive.entries() {
        let entry = entry.unwrap();
        let name = String::from_utf8_lossy(entry.file_path().as_bytes()).into_owned();
        let found = archive.get_entry(entry.wayfinder()).unwrap();
        let mut data = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::DeflateDecoder::new(found.data()),
            &mut data,
        )
        .unwrap();
        // Each file whole as the zip's directory records it, by a CRC-32
        // computed here rather than by the library that wrote it.
        assert_eq!(
            data.len() as u64,
            entry.uncompressed_size_hint(),
            "{name}'s size"
        );
        assert_eq!(crc32(&data), entry.crc32(), "{name}'s CRC-32");
        entries += 1;
        if name == "posts.json" {
            posts = Some(serde_json::from_slice::<Value>(&data).unwrap());
        }
    }
    assert!(entries >= 10, "{entries} files in the archive");
    let posts = posts.expect("posts.json in the archive");
    assert_eq!(posts.as_array().unwrap().len(), POSTS);
}

/// CRC-32 (IEEE 802.3, as zip has it), bit by bit.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn the_tests_crc32_is_zips() {
    // The check value of CRC-32/ISO-HDLC.
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instances_export_is_taken_over_on_the_embedded_default() {
    a_killed_instances_export_is_taken_over(Backend::Embedded, "export-killed-embedded").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instances_export_is_taken_over_on_mongodb_and_redis() {
    a_killed_instances_export_is_taken_over(
        Backend::stores("export_killed"),
        "export-killed-stores",
    )
    .await;
}

/// How an instance running an import ends.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    /// `kill -9`: its import is taken over once its claim (2 s) lapses.
    Killed,
    /// SIGTERM: it hands its import over as it stops, so the next instance
    /// goes on at once though the claim would hold for 10 minutes.
    Stopped,
}

/// An import whose instance ends while it follows people one by one is
/// taken over, goes on from its last recorded step as a second attempt,
/// and ends done with every follow made once: the list followed is exactly
/// the CSV's.
async fn an_import_is_taken_over(backend: Backend, tag: &str, ending: Ending) {
    let dir = DataDir::new(tag);
    // Slow enough to be stopped mid-run.
    let claim = match ending {
        Ending::Killed => "2",
        Ending::Stopped => "600",
    };
    let env = [
        ("MOMENTS_IMPORT_PAUSE_MS", "100"),
        ("MOMENTS_IMPORT_CLAIM_SECS", claim),
    ];
    let mut first = Server::start(&backend, &dir, &env);
    let api = Api::new(first.port);
    let (uid, token) = api.user("importer").await;
    const PEOPLE: usize = 30;
    let mut wanted = std::collections::BTreeSet::new();
    let mut csv = String::from("Account address,Show boosts\n");
    for i in 0..PEOPLE {
        let name = format!("followed_{i}");
        wanted.insert(api.user(&name).await.0);
        csv.push_str(&format!("{name},true\n"));
    }
    let started = api
        .ok(
            reqwest::Method::POST,
            "/me/imports",
            Some(&token),
            Some(json!({"kind": "following", "mode": "merge", "csv": csv})),
        )
        .await;
    let path = format!("/me/imports/{}", started["id"]);
    let deadline = Instant::now() + WAIT;
    let done_before_kill = loop {
        let i = api
            .ok(reqwest::Method::GET, &path, Some(&token), None)
            .await;
        assert_ne!(
            i["state"], "done",
            "finished before it could be killed: {i}"
        );
        let done = i["progress"]["done"].as_i64().unwrap();
        if i["state"] == "running" && done > 0 {
            break done;
        }
        assert!(Instant::now() < deadline, "never seen running: {i}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    match ending {
        Ending::Killed => {
            first.child.kill().unwrap();
            first.child.wait().unwrap();
        }
        Ending::Stopped => {
            first.terminate();
            assert!(first.exit_within(EXIT_SLACK).success());
            let handed = first
                .logged("data exports and imports handed over")
                .expect("the hand-over logged");
            assert_eq!(handed["imports"], 1, "{handed}");
        }
    }

    let mut second = Server::start(&backend, &dir, &env);
    let api = Api::new(second.port);
    // The second attempt goes on from the first one's last recorded step
    // (which is at least what was seen recorded before it ended), with
    // steps left to take: the first one ended mid-run, and nothing it
    // recorded was done again from the start.
    let resumed = second.read_until(|f| f["message"] == "import run started" && f["attempt"] == 2);
    let from = message(&resumed).unwrap()["from"].as_i64().unwrap();
    assert!(
        0 < done_before_kill && done_before_kill <= from && from < PEOPLE as i64,
        "the second attempt started at step {from}, after {done_before_kill} were seen done, of {PEOPLE}"
    );
    let done = second.read_until(|f| f["message"] == "import done");
    let done = message(&done).unwrap();
    assert_eq!(done["attempt"], 2, "a second attempt: {done}");
    let i = api
        .ok(reqwest::Method::GET, &path, Some(&token), None)
        .await;
    assert_eq!(i["state"], "done", "{i}");
    assert_eq!(i["progress"]["done"], PEOPLE as i64, "{i}");
    assert_eq!(i["progress"]["total"], PEOPLE as i64, "{i}");
    assert_eq!(i["skipped"], 0, "{i}");
    let page = api
        .ok(
            reqwest::Method::GET,
            &format!("/users/{uid}/following?limit=100"),
            Some(&token),
            None,
        )
        .await;
    let following: std::collections::BTreeSet<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["uid"].as_i64().unwrap())
        .collect();
    assert_eq!(following, wanted);
    let me = api
        .ok(
            reqwest::Method::GET,
            &format!("/users/{uid}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(
        me["followingCount"], PEOPLE as i64,
        "each follow made once: {me}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instances_import_is_taken_over_on_the_embedded_default() {
    an_import_is_taken_over(Backend::Embedded, "import-killed-embedded", Ending::Killed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instances_import_is_taken_over_on_mongodb_and_redis() {
    an_import_is_taken_over(
        Backend::stores("import_killed"),
        "import-killed-stores",
        Ending::Killed,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_instance_hands_its_import_over_on_mongodb_and_redis() {
    an_import_is_taken_over(
        Backend::stores("import_stopped"),
        "import-stopped-stores",
        Ending::Stopped,
    )
    .await;
}
