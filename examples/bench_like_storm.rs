//! A like storm on one post, for BENCHMARKS.md (not a test: run it on
//! purpose). Likes per second by distinct users on one hot post against the
//! same number spread over as many posts, with each post's likes_postid
//! written with every like ("before", as on MongoDB alone) and in batches
//! from the Redis queue ("after", service/jobs/like_arrays.rs), all in one run.
//! The spread run is the ceiling of the hot one: judge by the ratio.
//!
//! Needs MongoDB (wire) and Redis:
//!   MOMENTS_MONGODB_URI=mongodb://127.0.0.1:27017 MOMENTS_REDIS_URL=redis://127.0.0.1:6379 \
//!     cargo run --release --example bench_like_storm
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use moments::ids::next_id;
use moments::service::likes::{like, LikeTarget};
use moments::service::Context;
use moments::startup::Application;

#[path = "support/mod.rs"]
mod support;
use support::{post, user};

/// Likes per run, and clients sending them at once.
const LIKES: usize = 400;
const CLIENTS: usize = 16;

/// `LIKES` likes by as many new users, on `posts` (one post: a storm; as
/// many posts as likes: spread), `CLIENTS` at a time; likes per second.
async fn run(ctx: &Context, posts: &[i64]) -> f64 {
    let users: Vec<i64> = (0..LIKES).map(|_| next_id()).collect();
    for u in &users {
        ctx.docs.insert_user(&user(*u)).await.unwrap();
    }
    let started = Instant::now();
    let work: Vec<(i64, i64)> = users
        .iter()
        .enumerate()
        .map(|(i, u)| (*u, posts[i % posts.len()]))
        .collect();
    let chunks: Vec<Vec<(i64, i64)>> = work.chunks(LIKES / CLIENTS).map(<[_]>::to_vec).collect();
    let tasks: Vec<_> = chunks
        .into_iter()
        .map(|chunk| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                for (uid, p) in chunk {
                    like(&ctx, LikeTarget::Post(p), uid).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    LIKES as f64 / started.elapsed().as_secs_f64()
}

/// Waits until the post's array holds `n` ids; how long that took.
async fn drained(ctx: &Context, post: i64, n: usize) -> Duration {
    let started = Instant::now();
    while ctx.docs.posts_by_ids(&[post]).await.unwrap()[0]
        .likes_postid
        .len()
        < n
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let mut settings = moments::config::Settings::from_env().unwrap();
    assert!(
        settings.mongodb_uri.is_some() && settings.redis_url.is_some(),
        "set MOMENTS_MONGODB_URI and MOMENTS_REDIS_URL"
    );
    settings.listen = "127.0.0.1:0".into();
    settings.mongodb_db = format!("likestorm{}", std::process::id());
    settings.redis_prefix = format!("likestorm{}:", std::process::id());
    settings.admin = None;
    settings.rate_limits = None;
    let app = Application::build(settings).await.unwrap();
    let queued = app.context().clone();
    assert!(queued.like_arrays_queued);
    let at_once = Context {
        like_arrays_queued: false,
        ..queued.clone()
    };
    let author = next_id();
    queued.docs.insert_user(&user(author)).await.unwrap();
    println!(
        "| arrays written | one hot post, likes/s | spread over {LIKES} posts, likes/s | ratio |"
    );
    println!("|---|---|---|---|");
    for (name, ctx) in [
        ("with every like (before)", &at_once),
        ("in batches from the queue (after)", &queued),
    ] {
        let hot = post(author);
        ctx.docs.insert_post(&hot).await.unwrap();
        let mut spread = Vec::new();
        for _ in 0..LIKES {
            let p = post(author);
            ctx.docs.insert_post(&p).await.unwrap();
            spread.push(p.id);
        }
        // Every post read once first, so each run starts with its live
        // state warm and measures the likes alone.
        for p in std::iter::once(hot.id).chain(spread.iter().copied()) {
            moments::service::posts::get_post(ctx, p, None, &Default::default())
                .await
                .unwrap();
        }
        let on_hot = run(ctx, &[hot.id]).await;
        let lag = drained(ctx, hot.id, LIKES.min(ctx.settings.post_id_array_cap)).await;
        let on_spread = run(ctx, &spread).await;
        println!(
            "| {name} | {on_hot:.0} | {on_spread:.0} | {:.2} |",
            on_hot / on_spread
        );
        println!(
            "(the hot post's array held every like {} ms after the last one)",
            lag.as_millis()
        );
    }
}
