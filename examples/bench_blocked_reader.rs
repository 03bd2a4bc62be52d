//! A reader blocked by 100,000 accounts beside a reader blocked by none,
//! for BENCHMARKS.md (not a test: run it on purpose).
//!
//! Both follow the same 20 authors (5 posts each, every post liked by 5
//! of the blockers and 5 others, all with cards) and read the first page
//! of their home feed (20 posts), 8 concurrent clients each, at the same
//! time. The blocked reader's feed should stay within 2x of the other's:
//! who blocked them is read only as far as MOMENTS_BLOCKERS_READ_WHOLE,
//! and past it only the people on the page are asked about. Run twice:
//! with the blocked-by set absent from the live state (each read asks the
//! documents) and present (each read asks the live set).
//!
//! Documents on the embedded store (in a temp dir); live state on Redis when
//! `MOMENTS_REDIS_URL` is set, else in process.
//!
//!   cargo run --release --example bench_blocked_reader
//!   MOMENTS_REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example bench_blocked_reader
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use moments::ids::{next_id, now_ms};
use moments::service::{feed::page, Context, Presentation};
use moments::startup::Application;
use moments::store::{BlockDoc, LikeDoc, LikeKind, LiveFill, SetKey};

#[path = "support/mod.rs"]
mod support;
use support::{bench_settings, follow, percentile, post, user};

const BLOCKERS: usize = 100_000;
const AUTHORS: usize = 20;
const POSTS_EACH: usize = 5;
const CLIENTS: usize = 8;
const ROUNDS: usize = 100;

async fn reads(ctx: Context, reader: i64) -> Vec<Duration> {
    let mut out = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let pres = Presentation {
            now: now_ms(),
            ..Presentation::default()
        };
        let start = Instant::now();
        let page = page::feed_page(&ctx, reader, None, 20, &pres)
            .await
            .unwrap();
        out.push(start.elapsed());
        assert_eq!(page.items.len(), 20);
    }
    out
}

/// p50 and p99 of both readers' feed reads, measured at once.
async fn side_by_side(ctx: &Context, blocked: i64, free: i64) -> [(f64, f64); 2] {
    let runs: Vec<_> = (0..2 * CLIENTS)
        .map(|i| {
            let reader = if i < CLIENTS { free } else { blocked };
            tokio::spawn(reads(ctx.clone(), reader))
        })
        .collect();
    let mut by_reader = [Vec::new(), Vec::new()];
    for (i, r) in runs.into_iter().enumerate() {
        by_reader[usize::from(i >= CLIENTS)].extend(r.await.unwrap());
    }
    by_reader.map(|mut t| {
        t.sort_unstable();
        (percentile(&t, 50.0), percentile(&t, 99.0))
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (mut settings, dir, backend) = bench_settings("blocked");
    settings.rate_limits = None;
    let read_whole = settings.blockers_read_whole;
    let app = Application::build(settings).await.unwrap();
    let ctx = app.context().clone();

    let (blocked, free) = (next_id(), next_id());
    for u in [blocked, free] {
        ctx.docs.insert_user(&user(u)).await.unwrap();
    }
    let blockers: Vec<i64> = (0..BLOCKERS).map(|_| next_id()).collect();
    let likers: Vec<i64> = (0..5).map(|_| next_id()).collect();
    for u in blockers.iter().take(5).chain(&likers) {
        ctx.docs.insert_user(&user(*u)).await.unwrap();
    }
    let start = Instant::now();
    for chunk in blockers.chunks(2000) {
        let writes = chunk.iter().map(|b| {
            let ctx = ctx.clone();
            let b = *b;
            async move {
                let block = BlockDoc::new(next_id(), b, blocked);
                assert!(ctx.docs.insert_block(&block).await.unwrap());
            }
        });
        futures_util::future::join_all(writes).await;
    }
    eprintln!(
        "seeded {BLOCKERS} blocks in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    for _ in 0..AUTHORS {
        let author = next_id();
        ctx.docs.insert_user(&user(author)).await.unwrap();
        for reader in [blocked, free] {
            follow(&app, reader, author).await;
        }
        for _ in 0..POSTS_EACH {
            let p = post(author);
            ctx.docs.insert_post(&p).await.unwrap();
            for uid in blockers.iter().take(5).chain(&likers) {
                let like = LikeDoc::new(next_id(), LikeKind::Post, p.id, *uid);
                ctx.docs.insert_like(&like, 10_000).await.unwrap();
            }
        }
    }
    // Warm: timelines built, sets and cards cached.
    for reader in [blocked, free] {
        reads(ctx.clone(), reader).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    println!(
        "live state {backend}; MOMENTS_BLOCKERS_READ_WHOLE {read_whole}; {CLIENTS} clients on each reader, {ROUNDS} feed reads each\n"
    );
    println!("| who blocked the reader | blocked by none p50 | p99 | blocked by 100,000 p50 | p99 | p99 ratio |");
    println!("|---|---|---|---|---|---|");
    let row = |what: &str, [(f50, f99), (b50, b99)]: [(f64, f64); 2]| {
        println!(
            "| {what} | {f50:.2} ms | {f99:.2} ms | {b50:.2} ms | {b99:.2} ms | {:.2} |",
            b99 / f99.max(0.001)
        );
    };
    let trips_before = ctx.round_trips.snapshot();
    row(
        "not in the live state: the documents are asked",
        side_by_side(&ctx, blocked, free).await,
    );
    let trips = ctx.round_trips.snapshot();
    eprintln!(
        "round trips per feed read, both readers together: {:.1} documents, {:.1} live",
        (trips.0 - trips_before.0) as f64 / (2 * CLIENTS * ROUNDS) as f64,
        (trips.1 - trips_before.1) as f64 / (2 * CLIENTS * ROUNDS) as f64,
    );
    // The whole set in the live state, as Redis keeps one that grew block
    // by block.
    let members: Vec<(i64, i64)> = blockers.iter().map(|b| (*b, next_id())).collect();
    let fill = LiveFill {
        sets: vec![(SetKey::BlockedBy(blocked), members, 0)],
        ..Default::default()
    };
    ctx.live.fill(&fill).await.unwrap();
    row(
        "in the live state: the set is asked",
        side_by_side(&ctx, blocked, free).await,
    );
    drop(app);
    let _ = std::fs::remove_dir_all(dir);
}
