//! Live-update streams under load (issue 24), each figure beside a bare
//! SSE server in this same binary that writes the same bytes with no
//! service behind it: the ceiling.
//!
//!   scripts/bench-stream.sh                          # both phases, stores started
//!   BENCH_STREAM_ONLY=across scripts/bench-stream.sh # one phase (idle, across)
//!
//! The driver (no arguments) starts this binary again as the servers it
//! measures, so that a server's RSS and CPU are its own, not the clients':
//! - `serve --out FILE --users N [--follow]` builds the service exactly as
//!   `moments serve` does (settings from the environment), seeds N accounts
//!   with sessions and one author through the service layer (each account
//!   following the author with `--follow`, and the author's one public
//!   post), writes them to FILE, and serves;
//! - `serve` alone is a second instance on the same stores;
//! - `bare` answers every GET with `retry:`, a `ready` event and a heartbeat
//!   comment at the service's interval, and writes whatever is POSTed to it
//!   to every open stream: the same bytes, and nothing else.
//!
//! It measures:
//! 1. idle: 10,000 streams (2,000 accounts, 5 each) on one instance, RSS
//!    per stream and the CPU of a minute of heartbeats;
//! 2. counts: with 1,000 streams open at instance B watching one post, a
//!    like sent to instance A, until `post.counts` with the new count
//!    reaches each stream (needs MOMENTS_MONGODB_URI and MOMENTS_REDIS_URL);
//! 3. post.new: the author of 2. posts; until the last of its 1,000
//!    followers' streams has `post.new`. With
//!    `BENCH_STREAM_SILENT_FOLLOWERS=N` the author has N more followers,
//!    none of them connected: past `MOMENTS_PULLED_AUTHOR_FOLLOWERS`
//!    (10,000) it is a pulled author, whose post is pushed into no
//!    timeline and is told to the streams of the followers with logs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use moments::config::Settings;
use moments::domain::post::NewPost;
use moments::ids::{next_id, now_ms};
use moments::service::{accounts, posts, social, Presentation};
use moments::startup::Application;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[path = "support/mod.rs"]
mod support;

const IDLE_ACCOUNTS: usize = 2_000;
const STREAMS_PER_ACCOUNT: usize = 5;
const CONNECTED_FOLLOWERS: usize = 1_000;
const LIKES: usize = 50;
const POSTS: usize = 10;
const IDLE_SECS: u64 = 60;
const HEARTBEAT_SECS: u64 = 15;
/// Opens in flight at once: what a crowd reconnecting looks like, without
/// filling the listen backlog.
const OPENING: usize = 200;

fn main() {
    moments::startup::tune_allocator();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("bare") => bare(),
        _ => drive(),
    }
}

// ---- the servers ----------------------------------------------------------

fn serve(args: &[String]) {
    let mut out = None;
    let mut users = 0;
    let mut follow = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--out" => out = it.next().cloned(),
            "--users" => users = it.next().unwrap().parse().unwrap(),
            "--follow" => follow = true,
            other => panic!("unknown flag {other}"),
        }
    }
    actix_web::rt::System::new().block_on(async move {
        let app = Application::build(Settings::from_env().unwrap())
            .await
            .unwrap();
        if let Some(out) = out {
            let seeded = seed(app.context(), users, follow).await;
            std::fs::write(&out, seeded.to_string()).unwrap();
        }
        app.run_until_stopped().await.unwrap();
    });
}

async fn seed(ctx: &moments::service::Context, users: usize, follow: bool) -> Value {
    let author = next_id();
    let uids: Vec<i64> = (0..users).map(|_| next_id()).collect();
    let mut tokens = Vec::with_capacity(users);
    let mut all = vec![author];
    all.extend(&uids);
    for chunk in all.chunks(64) {
        join_all(chunk.iter().map(|uid| async move {
            let mut doc = support::user(*uid);
            doc.username = format!("s{uid}");
            ctx.docs.insert_user(&doc).await.unwrap();
        }))
        .await;
        let opened = join_all(
            chunk
                .iter()
                .map(|uid| accounts::open_session(ctx, *uid, "bench".into(), 0)),
        )
        .await;
        tokens.extend(opened.into_iter().map(|o| o.unwrap().0));
    }
    if follow {
        for chunk in uids.chunks(64) {
            join_all(chunk.iter().map(|fan| social::follow(ctx, *fan, author))).await;
        }
        let silent: usize = std::env::var("BENCH_STREAM_SILENT_FOLLOWERS")
            .map(|n| n.parse().unwrap())
            .unwrap_or(0);
        let silent: Vec<i64> = (0..silent).map(|_| next_id()).collect();
        for chunk in silent.chunks(64) {
            join_all(chunk.iter().map(|uid| async move {
                let mut doc = support::user(*uid);
                doc.username = format!("s{uid}");
                ctx.docs.insert_user(&doc).await.unwrap();
                social::follow(ctx, *uid, author).await.unwrap();
            }))
            .await;
        }
    }
    let post = posts::create_post(
        ctx,
        author,
        text_post("被看着的一条"),
        &presentation(),
        None,
    )
    .await
    .unwrap();
    while ctx.fan_outs.running() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    json!({
        "author": { "uid": author, "token": tokens[0] },
        "users": uids.iter().zip(&tokens[1..]).map(|(u, t)| json!({"uid": u, "token": t})).collect::<Vec<_>>(),
        "post": post.id,
    })
}

fn text_post(content: &str) -> NewPost {
    NewPost::text(content)
}

fn presentation() -> Presentation {
    Presentation {
        now: now_ms(),
        ..Presentation::default()
    }
}

/// The ceiling: an SSE server with nothing behind it, on the same actix
/// and the same allocator as the service.
fn bare() {
    use actix_web::{web, App, HttpResponse, HttpServer};
    type Streams = Arc<std::sync::Mutex<Vec<mpsc::Sender<web::Bytes>>>>;
    let listen = std::env::var("MOMENTS_LISTEN").unwrap();
    let streams: Streams = Arc::default();
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(move || {
            let streams = streams.clone();
            App::new()
                .app_data(web::Data::new(streams))
                .route(
                    "/healthz",
                    web::get().to(|| async { HttpResponse::Ok().finish() }),
                )
                .default_service(web::to(
                    |streams: web::Data<Streams>, req: actix_web::HttpRequest, body: web::Bytes| async move {
                        if req.method() == actix_web::http::Method::POST {
                            let all = streams.lock().unwrap().clone();
                            for s in all {
                                let _ = s.send(body.clone()).await;
                            }
                            return HttpResponse::NoContent().finish();
                        }
                        let (tx, rx) = mpsc::channel::<web::Bytes>(256);
                        streams.lock().unwrap().push(tx.clone());
                        let ready = format!(
                            "retry: 3000\n\nid: {0}-0\nevent: ready\ndata: {{\"streamId\":{1},\"resumed\":false,\"heartbeatSecs\":{HEARTBEAT_SECS}}}\n\n",
                            now_ms(),
                            next_id()
                        );
                        let _ = tx.send(web::Bytes::from(ready)).await;
                        actix_web::rt::spawn(async move {
                            let every = Duration::from_secs(HEARTBEAT_SECS);
                            let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                            loop {
                                beat.tick().await;
                                if tx.send(web::Bytes::from_static(b": heartbeat\n\n")).await.is_err() {
                                    break;
                                }
                            }
                        });
                        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
                            let f = rx.recv().await?;
                            Some((Ok::<_, std::convert::Infallible>(f), rx))
                        });
                        HttpResponse::Ok()
                            .content_type("text/event-stream")
                            .insert_header(("Cache-Control", "no-store"))
                            .force_close()
                            .streaming(frames)
                    },
                ))
        })
        .bind(listen)
        .unwrap()
        .run()
        .await
        .unwrap();
    });
}

// ---- the driver -----------------------------------------------------------

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// RSS in KiB, and CPU seconds so far (user + system).
    fn usage(&self) -> (u64, f64) {
        let pid = self.child.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let rss = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .parse()
            .unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat, 11 and 12 here.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        (rss, ticks as f64 / 100.0)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start(args: &[&str], env: &[(&str, String)]) -> Server {
    let port = free_port();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(args)
        .env("MOMENTS_LISTEN", format!("127.0.0.1:{port}"))
        .env("MOMENTS_RATE_LIMITS", "off")
        .env("MOMENTS_STREAM_HEARTBEAT_SECS", HEARTBEAT_SECS.to_string())
        .env("MOMENTS_STREAM_PER_INSTANCE", "12000")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null());
    for (k, v) in env {
        if v.is_empty() {
            cmd.env_remove(k);
        } else {
            cmd.env(k, v);
        }
    }
    let server = Server {
        child: cmd.spawn().unwrap(),
        port,
    };
    let client = reqwest::Client::new();
    for _ in 0..1200 {
        let up = client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if up {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{args:?} did not come up");
}

/// What a client's stream saw: an event's name and data, when it arrived.
struct Seen {
    conn: usize,
    event: String,
    data: Value,
    at: Instant,
}

/// Opens a stream and reads it on a task of its own, reporting `ready` and
/// every `post.*` event. Returns once `ready` came.
async fn open(
    port: u16,
    path: &str,
    token: Option<&str>,
    conn: usize,
    seen: mpsc::UnboundedSender<Seen>,
) -> usize {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n{auth}\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut reader = BufReader::with_capacity(2048, tcp);
    let mut line = String::new();
    let mut event = String::new();
    let mut bytes = 0;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let mut ready_tx = Some(ready_tx);
    // Before the task: the status line must say 200.
    reader.read_line(&mut line).await.unwrap();
    assert!(line.contains(" 200 "), "stream refused: {line}");
    tokio::spawn(async move {
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(n) => bytes += n,
            }
            // Chunk-size lines come between frames (each frame is one
            // chunk): only `event:` and `data:` lines matter here.
            if let Some(name) = line.strip_prefix("event: ") {
                event = name.trim().to_string();
            } else if let Some(data) = line.strip_prefix("data: ") {
                let at = Instant::now();
                if event == "ready" {
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(bytes);
                    }
                } else if event.starts_with("post.") {
                    let data = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
                    let _ = seen.send(Seen {
                        conn,
                        event: event.clone(),
                        data,
                        at,
                    });
                }
            }
        }
    });
    ready_rx.await.expect("a ready event")
}

/// Opens `paths.len()` streams, `OPENING` at a time.
async fn open_all(
    port: u16,
    streams: Vec<(String, Option<String>)>,
    seen: &mpsc::UnboundedSender<Seen>,
) -> Duration {
    let started = Instant::now();
    let mut conn = 0;
    for chunk in streams.chunks(OPENING) {
        join_all(chunk.iter().map(|(path, token)| {
            conn += 1;
            open(port, path, token.as_deref(), conn - 1, seen.clone())
        }))
        .await;
    }
    started.elapsed()
}

fn drive() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // BENCH_STREAM_ONLY=idle or =across runs one phase (to profile it).
    let only = std::env::var("BENCH_STREAM_ONLY").unwrap_or_default();
    rt.block_on(async {
        if only != "across" {
            idle().await;
        }
        if only == "idle" {
            return;
        }
        if std::env::var("MOMENTS_MONGODB_URI").is_ok() && std::env::var("MOMENTS_REDIS_URL").is_ok() {
            across_instances().await;
        } else {
            eprintln!("counts and post.new across instances need MOMENTS_MONGODB_URI and MOMENTS_REDIS_URL");
        }
    });
}

fn embedded_env(tag: &str) -> (Vec<(&'static str, String)>, std::path::PathBuf) {
    let dir =
        std::env::temp_dir().join(format!("moments-bench-stream-{tag}-{}", std::process::id()));
    let env = vec![
        ("MOMENTS_DATA_DIR", dir.display().to_string()),
        ("MOMENTS_MONGODB_URI", String::new()),
        ("MOMENTS_REDIS_URL", String::new()),
    ];
    (env, dir)
}

/// Phase 1: idle streams. The service and the bare server, each measured
/// with the same client and the same idle minute.
async fn idle() {
    let streams = IDLE_ACCOUNTS * STREAMS_PER_ACCOUNT;
    let (env, dir) = embedded_env("idle");
    let out = dir.with_extension("json");
    let service = start(
        &[
            "serve",
            "--out",
            out.to_str().unwrap(),
            "--users",
            &IDLE_ACCOUNTS.to_string(),
        ],
        &env,
    )
    .await;
    let seeded: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let tokens: Vec<String> = seeded["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["token"].as_str().unwrap().to_string())
        .collect();
    let wanted: Vec<(String, Option<String>)> = (0..STREAMS_PER_ACCOUNT)
        .flat_map(|_| {
            tokens
                .iter()
                .map(|t| ("/api/v1/stream".to_string(), Some(t.clone())))
        })
        .collect();
    let moments = measure_idle("moments", &service, wanted, streams).await;
    drop(service);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&out);

    let bare = start(&["bare"], &[]).await;
    let wanted = (0..streams)
        .map(|_| ("/stream".to_string(), None))
        .collect();
    let ceiling = measure_idle("bare", &bare, wanted, streams).await;
    drop(bare);

    println!("\n### {streams} idle streams on one instance (embedded), heartbeat every {HEARTBEAT_SECS} s, {IDLE_SECS} s idle\n");
    println!("| server | open all, s | RSS before, MiB | RSS after, MiB | KiB per stream | CPU over {IDLE_SECS} s idle, s | µs CPU per heartbeat |");
    println!("|---|---|---|---|---|---|---|");
    for (name, m) in [("moments", &moments), ("bare SSE (ceiling)", &ceiling)] {
        println!(
            "| {name} | {:.1} | {:.0} | {:.0} | {:.1} | {:.2} | {:.1} |",
            m.open.as_secs_f64(),
            m.rss_before as f64 / 1024.0,
            m.rss_after as f64 / 1024.0,
            (m.rss_after - m.rss_before) as f64 / streams as f64,
            m.idle_cpu,
            m.idle_cpu * 1e6 / m.heartbeats as f64,
        );
    }
    println!(
        "\nmoments ÷ bare: {:.2}× the memory per stream, {:.2}× the CPU per heartbeat",
        (moments.rss_after - moments.rss_before) as f64
            / (ceiling.rss_after - ceiling.rss_before).max(1) as f64,
        moments.idle_cpu / ceiling.idle_cpu.max(0.01),
    );
}

struct Idle {
    open: Duration,
    rss_before: u64,
    rss_after: u64,
    idle_cpu: f64,
    heartbeats: u64,
}

async fn measure_idle(
    name: &str,
    server: &Server,
    wanted: Vec<(String, Option<String>)>,
    streams: usize,
) -> Idle {
    let (rss_before, _) = server.usage();
    let (seen, _rx) = mpsc::unbounded_channel();
    let open = open_all(server.port, wanted, &seen).await;
    // Settled: what opening allocated and let go is returned before the count.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (rss_after, cpu_before) = server.usage();
    tokio::time::sleep(Duration::from_secs(IDLE_SECS)).await;
    let (_, cpu_after) = server.usage();
    eprintln!(
        "{name}: {streams} streams open in {:.1}s",
        open.as_secs_f64()
    );
    Idle {
        open,
        rss_before,
        rss_after,
        idle_cpu: cpu_after - cpu_before,
        heartbeats: streams as u64 * (IDLE_SECS / HEARTBEAT_SECS),
    }
}

/// Phases 2 and 3: two instances on the same MongoDB and Redis, streams at
/// B, writes at A.
async fn across_instances() {
    let prefix = format!("bs{}:", std::process::id());
    let db = format!("bench_stream_{}", std::process::id());
    let env = vec![
        ("MOMENTS_REDIS_PREFIX", prefix),
        ("MOMENTS_MONGODB_DB", db),
        (
            "MOMENTS_DATA_DIR",
            std::env::temp_dir()
                .join("moments-bench-stream-ab")
                .display()
                .to_string(),
        ),
    ];
    let out =
        std::env::temp_dir().join(format!("moments-bench-stream-{}.json", std::process::id()));
    let a = start(
        &[
            "serve",
            "--out",
            out.to_str().unwrap(),
            "--users",
            &CONNECTED_FOLLOWERS.to_string(),
            "--follow",
        ],
        &env,
    )
    .await;
    let b = start(&["serve"], &env).await;
    let seeded: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let post = seeded["post"].as_i64().unwrap();
    let author = seeded["author"]["token"].as_str().unwrap().to_string();
    let fans: Vec<String> = seeded["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["token"].as_str().unwrap().to_string())
        .collect();
    let client = reqwest::Client::new();

    let (seen, mut events) = mpsc::unbounded_channel();
    let wanted = fans
        .iter()
        .map(|t| (format!("/api/v1/stream?watch={post}"), Some(t.clone())))
        .collect();
    open_all(b.port, wanted, &seen).await;
    // Each stream's first counts, sent as its watch starts.
    let mut first = 0;
    while first < fans.len() {
        let s = events.recv().await.unwrap();
        if s.event == "post.counts" {
            first += 1;
        }
    }
    let mut counts_frame = String::new();
    let mut like_deliveries = Vec::new();
    let mut like_last = Vec::new();
    let mut like_answer = Vec::new();
    for (i, fan) in fans.iter().take(LIKES).enumerate() {
        let sent = Instant::now();
        let r = client
            .put(format!(
                "http://127.0.0.1:{}/api/v1/posts/{post}/like",
                a.port
            ))
            .bearer_auth(fan)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "like: {}", r.status());
        like_answer.push(sent.elapsed());
        let mut reached = vec![false; fans.len()];
        let mut left = fans.len();
        let mut last = Duration::ZERO;
        while left > 0 {
            let s = tokio::time::timeout(Duration::from_secs(30), events.recv())
                .await
                .expect("post.counts within 30 s")
                .unwrap();
            if s.event == "post.counts"
                && s.data["likeCount"].as_i64() == Some(i as i64 + 1)
                && !reached[s.conn]
            {
                reached[s.conn] = true;
                left -= 1;
                let d = s.at - sent;
                like_deliveries.push(d);
                last = last.max(d);
                if counts_frame.is_empty() {
                    counts_frame = format!(
                        "id: 1796400000000-12\nevent: post.counts\ndata: {}\n\n",
                        s.data
                    );
                }
            }
        }
        like_last.push(last);
    }

    let mut post_last = Vec::new();
    let mut post_deliveries = Vec::new();
    let mut new_frame = String::new();
    for i in 0..POSTS {
        let sent = Instant::now();
        let r = client
            .post(format!("http://127.0.0.1:{}/api/v1/posts", a.port))
            .bearer_auth(&author)
            .json(&json!({"category": "TEXT", "content": format!("第{i}条")}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "post: {}", r.status());
        let id = r.json::<Value>().await.unwrap()["id"].as_i64().unwrap();
        let mut reached = vec![false; fans.len()];
        let mut left = fans.len();
        let mut last = Duration::ZERO;
        while left > 0 {
            let s = tokio::time::timeout(Duration::from_secs(60), events.recv())
                .await
                .expect("post.new within 60 s")
                .unwrap();
            if s.event == "post.new" && s.data["postId"].as_i64() == Some(id) && !reached[s.conn] {
                reached[s.conn] = true;
                left -= 1;
                let d = s.at - sent;
                post_deliveries.push(d);
                last = last.max(d);
                if new_frame.is_empty() {
                    new_frame = format!(
                        "id: 1796400000000-13\nevent: post.new\ndata: {}\n\n",
                        s.data
                    );
                }
            }
        }
        post_last.push(last);
    }
    drop(a);
    drop(b);

    // The ceiling: the same number of streams on the bare server, the
    // same frames written to all of them per trigger.
    let bare = start(&["bare"], &[]).await;
    let (seen, mut events) = mpsc::unbounded_channel();
    let wanted = (0..fans.len())
        .map(|_| ("/stream".to_string(), None))
        .collect();
    open_all(bare.port, wanted, &seen).await;
    let mut ceilings = HashMap::new();
    for (name, frame, rounds) in [
        ("post.counts", &counts_frame, LIKES),
        ("post.new", &new_frame, POSTS),
    ] {
        let mut all = Vec::new();
        let mut lasts = Vec::new();
        for _ in 0..rounds {
            let sent = Instant::now();
            client
                .post(format!("http://127.0.0.1:{}/fire", bare.port))
                .body(frame.clone())
                .send()
                .await
                .unwrap();
            let mut last = Duration::ZERO;
            for _ in 0..fans.len() {
                let s = events.recv().await.unwrap();
                let d = s.at - sent;
                all.push(d);
                last = last.max(d);
            }
            lasts.push(last);
        }
        ceilings.insert(name, (all, lasts));
    }
    drop(bare);

    let n = fans.len();
    println!("\n### Across two instances on one MongoDB and Redis: {n} streams at B\n");
    println!("| what | per stream p50, ms | p99, ms | to the last stream p50, ms | p99, ms | write answered p50, ms |");
    println!("|---|---|---|---|---|---|");
    let row = |name: &str,
               all: &mut Vec<Duration>,
               lasts: &mut Vec<Duration>,
               answer: Option<&mut Vec<Duration>>| {
        all.sort();
        lasts.sort();
        let answered = answer.map_or("–".to_string(), |a| {
            a.sort();
            format!("{:.1}", support::percentile(a, 50.0))
        });
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {answered} |",
            support::percentile(all, 50.0),
            support::percentile(all, 99.0),
            support::percentile(lasts, 50.0),
            support::percentile(lasts, 99.0),
        );
    };
    row(
        &format!("like at A → `post.counts` at B ({LIKES} likes, {n} watchers)"),
        &mut like_deliveries,
        &mut like_last,
        Some(&mut like_answer),
    );
    let (mut all, mut lasts) = ceilings.remove("post.counts").unwrap();
    row(
        "bare SSE: the same frame to every stream (ceiling)",
        &mut all,
        &mut lasts,
        None,
    );
    row(
        &match std::env::var("BENCH_STREAM_SILENT_FOLLOWERS") {
            Ok(silent) => format!(
                "post at A → `post.new` at B ({POSTS} posts, {n} connected of {n} + {silent} followers)"
            ),
            Err(_) => format!("post at A → `post.new` at B ({POSTS} posts, {n} followers)"),
        },
        &mut post_deliveries,
        &mut post_last,
        None,
    );
    let (mut all, mut lasts) = ceilings.remove("post.new").unwrap();
    row(
        "bare SSE: the same frame to every stream (ceiling)",
        &mut all,
        &mut lasts,
        None,
    );
    let _ = (counts_frame, new_frame);
}
