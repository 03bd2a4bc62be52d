//! A viral post's likes, for BENCHMARKS.md (not a test: run it on purpose).
//!
//! One post with 100,000 likes and one with 10, side by side in the same
//! run: new likes, unlikes, repeated likes and unlikes, and reads of the
//! expanded post, by 8 concurrent clients on each post, with the sets warm.
//! The viral post's figures should stay within 2x of the small one's:
//! nothing a like or a read does may grow with the likes already there.
//! Then the cold case: the live state lost, 32 readers of the viral post at
//! once, and how many times its 100,000 likes were read from the documents.
//!
//! Documents on the embedded store (in a temp dir); live state on Redis when
//! `MOMENTS_REDIS_URL` is set, else in process.
//!
//!   cargo run --release --example bench_viral_post
//!   MOMENTS_REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example bench_viral_post
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use moments::ids::{next_id, now_ms};
use moments::service::likes::{like, unlike, LikeTarget};
use moments::service::{posts, Context, Presentation};
use moments::startup::Application;
use moments::store::{LikeDoc, LikeKind};

#[path = "support/mod.rs"]
mod support;
use support::{bench_settings, percentile, post, user};

const CLIENTS: usize = 8;
const ROUNDS: usize = 150;

#[derive(Default)]
struct Timings {
    like: Vec<Duration>,
    again: Vec<Duration>,
    unlike: Vec<Duration>,
    unlike_again: Vec<Duration>,
    read: Vec<Duration>,
}

impl Timings {
    fn merge(&mut self, other: Timings) {
        self.like.extend(other.like);
        self.again.extend(other.again);
        self.unlike.extend(other.unlike);
        self.unlike_again.extend(other.unlike_again);
        self.read.extend(other.read);
    }
    fn rows(mut self) -> Vec<(&'static str, f64, f64)> {
        let mut out = Vec::new();
        for (name, v) in [
            ("like", &mut self.like),
            ("like again", &mut self.again),
            ("unlike", &mut self.unlike),
            ("unlike again", &mut self.unlike_again),
            ("read", &mut self.read),
        ] {
            v.sort_unstable();
            out.push((name, percentile(v, 50.0), percentile(v, 99.0)));
        }
        out
    }
}

async fn timed<T>(f: impl std::future::Future<Output = T>, into: &mut Vec<Duration>) -> T {
    let start = Instant::now();
    let out = f.await;
    into.push(start.elapsed());
    out
}

/// One client's rounds on `post`: like, like again, read, unlike, unlike again.
async fn client(ctx: Context, post: i64, uid: i64) -> Timings {
    let mut t = Timings::default();
    let pres = Presentation {
        now: now_ms(),
        ..Presentation::default()
    };
    for _ in 0..ROUNDS {
        let target = LikeTarget::Post(post);
        let s = timed(like(&ctx, target, uid), &mut t.like).await.unwrap();
        assert!(s.liked);
        timed(like(&ctx, target, uid), &mut t.again).await.unwrap();
        timed(posts::get_post(&ctx, post, Some(uid), &pres), &mut t.read)
            .await
            .unwrap();
        let s = timed(unlike(&ctx, target, uid), &mut t.unlike)
            .await
            .unwrap();
        assert!(!s.liked);
        timed(unlike(&ctx, target, uid), &mut t.unlike_again)
            .await
            .unwrap();
    }
    t
}

async fn seed_likes(ctx: &Context, post: i64, n: usize) {
    let uids: Vec<i64> = (0..n).map(|_| next_id()).collect();
    for chunk in uids.chunks(2000) {
        let writes = chunk.iter().map(|u| {
            let ctx = ctx.clone();
            let u = *u;
            async move {
                ctx.docs.insert_user(&user(u)).await.unwrap();
                let like = LikeDoc::new(next_id(), LikeKind::Post, post, u);
                ctx.docs.insert_like(&like, 10_000).await.unwrap();
            }
        });
        futures_util::future::join_all(writes).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (mut settings, dir, backend) = bench_settings("viral");
    settings.rate_limits = None;
    let app = Application::build(settings).await.unwrap();
    let ctx = app.context().clone();

    let author = next_id();
    ctx.docs.insert_user(&user(author)).await.unwrap();
    let (small, viral) = (post(author), post(author));
    ctx.docs.insert_post(&small).await.unwrap();
    ctx.docs.insert_post(&viral).await.unwrap();
    let start = Instant::now();
    seed_likes(&ctx, small.id, 10).await;
    seed_likes(&ctx, viral.id, 100_000).await;
    eprintln!(
        "seeded 100,010 likes in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    let clients: Vec<i64> = (0..2 * CLIENTS).map(|_| next_id()).collect();
    for u in &clients {
        ctx.docs.insert_user(&user(*u)).await.unwrap();
    }
    // Warm: the first read of each post rebuilds its sets.
    let pres = Presentation {
        now: now_ms(),
        ..Presentation::default()
    };
    for p in [small.id, viral.id] {
        let start = Instant::now();
        let got = posts::get_post(&ctx, p, Some(clients[0]), &pres)
            .await
            .unwrap();
        eprintln!(
            "first read of a post with {} likes: {:.1} ms",
            got.like_state().1,
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Both posts at once, so both see the same machine.
    let runs: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let p = if i < CLIENTS { small.id } else { viral.id };
            tokio::spawn(client(ctx.clone(), p, *u))
        })
        .collect();
    let mut by_post = [Timings::default(), Timings::default()];
    for (i, r) in runs.into_iter().enumerate() {
        by_post[usize::from(i >= CLIENTS)].merge(r.await.unwrap());
    }
    let [small_t, viral_t] = by_post;
    println!("live state {backend}; {CLIENTS} clients on each post, {ROUNDS} rounds each\n");
    println!("| operation | 10 likes p50 | p99 | 100,000 likes p50 | p99 | p99 ratio |");
    println!("|---|---|---|---|---|---|");
    for ((name, s50, s99), (_, v50, v99)) in small_t.rows().into_iter().zip(viral_t.rows()) {
        println!(
            "| {name} | {s50:.2} ms | {s99:.2} ms | {v50:.2} ms | {v99:.2} ms | {:.2} |",
            v99 / s99.max(0.001)
        );
    }

    // Cold: the live state lost, 32 readers of the viral post at once.
    ctx.live.clear_derived().await.unwrap();
    let reads_before = ctx.round_trips.snapshot().0;
    let start = Instant::now();
    let readers: Vec<_> = (0..32)
        .map(|i| {
            let ctx = ctx.clone();
            let uid = clients[i % clients.len()];
            let id = viral.id;
            tokio::spawn(async move {
                let pres = Presentation {
                    now: now_ms(),
                    ..Presentation::default()
                };
                posts::get_post(&ctx, id, Some(uid), &pres).await.unwrap()
            })
        })
        .collect();
    for r in readers {
        assert_eq!(r.await.unwrap().like_state().1, 100_000);
    }
    let elapsed = start.elapsed();
    let doc_trips = ctx.round_trips.snapshot().0 - reads_before;
    println!(
        "\ncold: 32 concurrent first reads of the viral post in {:.0} ms, {doc_trips} document round trips",
        elapsed.as_secs_f64() * 1000.0
    );
    drop(app);
    let _ = std::fs::remove_dir_all(dir);
}
