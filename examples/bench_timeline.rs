//! Timeline figures for BENCHMARKS.md (not a test: run it on purpose).
//!
//! 1. Fan-out: one post pushed to 100,000 active followers' timelines, from
//!    the publish (reading the active followers from the documents) to the
//!    last timeline written.
//! 2. A returning user's first feed page, rebuilt from 200 followees' posts.
//! 3. Store round trips of a warm feed page, by page size (and of the first
//!    read after the follower counts behind push-or-pull expire).
//!
//! Documents on the embedded store (in a temp dir); live state on Redis when
//! `MOMENTS_REDIS_URL` is set, else in process.
//!
//!   cargo run --release --example bench_timeline
//!   MOMENTS_REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example bench_timeline
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use moments::ids::{next_id, now_ms, timestamp_of};
use moments::service::feed::{fan_out, page};
use moments::service::Presentation;
use moments::startup::Application;
use moments::store::{LiveFill, Owner, SetKey};

#[path = "support/mod.rs"]
mod support;
use support::{bench_settings, follow, ms, post, user};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (mut settings, dir, backend) = bench_settings("bench");
    settings.pulled_author_followers = 1_000_000;
    let app = Application::build(settings).await.unwrap();
    let ctx = app.context().clone();

    // 1. Fan-out to 100,000 active followers with existing timelines.
    let followers = 100_000;
    let author = next_id();
    ctx.docs.insert_user(&user(author)).await.unwrap();
    let start = Instant::now();
    let mut uids = Vec::with_capacity(followers);
    for _ in 0..followers {
        uids.push(next_id());
    }
    for chunk in uids.chunks(5000) {
        let futs = chunk.iter().map(|u| {
            let ctx = ctx.clone();
            let u = *u;
            async move {
                let mut doc = user(u);
                doc.username = format!("f{u}");
                ctx.docs.insert_user(&doc).await.unwrap();
            }
        });
        futures_util::future::join_all(futs).await;
        for u in chunk {
            follow(&app, *u, author).await;
        }
    }
    // Give every follower a timeline, as an active reader has.
    for chunk in uids.chunks(5000) {
        let gens = ctx
            .live
            .read(&moments::store::LiveRead {
                gens: chunk.iter().map(|u| Owner::User(*u)).collect(),
                ..Default::default()
            })
            .await
            .unwrap()
            .gens;
        let fill = LiveFill {
            sets: chunk
                .iter()
                .zip(gens)
                .map(|(u, g)| (SetKey::Home(*u), vec![], g))
                .collect(),
            ..Default::default()
        };
        ctx.live.fill(&fill).await.unwrap();
    }
    eprintln!(
        "seeded {followers} followers in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let mut runs = Vec::new();
    for _ in 0..9 {
        let p = post(author);
        ctx.docs.insert_post(&p).await.unwrap();
        let t = Instant::now();
        let pushed = fan_out::fan_out(
            &ctx,
            p.id,
            author,
            moments::domain::post::Visibility::Public,
        )
        .await
        .unwrap();
        runs.push(ms(t.elapsed()));
        assert_eq!(pushed, followers + 1);
    }
    let in_order: Vec<String> = runs.iter().map(|r| format!("{r:.0}")).collect();
    runs.sort_by(f64::total_cmp);
    println!(
        "fan-out to {followers} active followers ({backend} live state): median {:.0} ms, best {:.0} ms, worst {:.0} ms (in order: {})",
        runs[4],
        runs[0],
        runs[8],
        in_order.join(", ")
    );
    // Where the time goes: finding the active followers, and the pushes
    // (fan_out overlaps the two, page by page).
    let t = Instant::now();
    let (mut active, mut before) = (Vec::new(), None);
    loop {
        let (page, next) = ctx
            .docs
            .active_followers(author, now_ms() - 7 * 86_400_000, before, 10_000)
            .await
            .unwrap();
        active.extend(page);
        match next {
            Some(edge) => before = Some(edge),
            None => break,
        }
    }
    let find = ms(t.elapsed());
    let t = Instant::now();
    ctx.live
        .push_to_timelines(next_id(), &active, 800)
        .await
        .unwrap();
    println!(
        "  of which: finding {} active followers {find:.0} ms, pushing {:.0} ms",
        active.len(),
        ms(t.elapsed())
    );

    // 1b. A feed read's latency while big fan-outs run: the reads share the
    // connection with the pushes, which are capped in flight.
    let reader = uids[0];
    let pres = Presentation {
        now: now_ms(),
        ..Default::default()
    };
    for _ in 0..3 {
        page::feed_page(&ctx, reader, None, 20, &pres)
            .await
            .unwrap();
    }
    let mut idle = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        page::feed_page(&ctx, reader, None, 20, &pres)
            .await
            .unwrap();
        idle.push(ms(t.elapsed()));
    }
    let fanning = {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            for _ in 0..5 {
                let p = post(author);
                ctx.docs.insert_post(&p).await.unwrap();
                fan_out::fan_out(
                    &ctx,
                    p.id,
                    author,
                    moments::domain::post::Visibility::Public,
                )
                .await
                .unwrap();
            }
        })
    };
    let mut busy = Vec::new();
    while !fanning.is_finished() {
        let t = Instant::now();
        page::feed_page(&ctx, reader, None, 20, &pres)
            .await
            .unwrap();
        busy.push(ms(t.elapsed()));
    }
    fanning.await.unwrap();
    let summary = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
        format!(
            "{} reads, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            v.len(),
            at(0.5),
            at(0.99),
            v[v.len() - 1]
        )
    };
    println!(
        "feed page of 20 while idle: {}; during 5 fan-outs to {followers}: {}",
        summary(&mut idle),
        summary(&mut busy)
    );

    // 2. Returning users' first pages, rebuilt from 200 followees x 30 posts.
    let followees: Vec<i64> = (0..200).map(|_| next_id()).collect();
    for f in &followees {
        ctx.docs.insert_user(&user(*f)).await.unwrap();
        for _ in 0..30 {
            ctx.docs.insert_post(&post(*f)).await.unwrap();
        }
    }
    let mut runs = Vec::new();
    for _ in 0..10 {
        let reader = next_id();
        ctx.docs.insert_user(&user(reader)).await.unwrap();
        for f in &followees {
            follow(&app, reader, *f).await;
        }
        let pres = Presentation {
            now: now_ms(),
            ..Default::default()
        };
        let t = Instant::now();
        let page = page::feed_page(&ctx, reader, None, 20, &pres)
            .await
            .unwrap();
        runs.push(ms(t.elapsed()));
        assert_eq!(page.items.len(), 20);
    }
    runs.sort_by(f64::total_cmp);
    println!(
        "returning user's first page, 200 followees ({backend} live state): median {:.1} ms, worst {:.1} ms",
        runs[5], runs[9]
    );

    // 3. Round trips of a warm feed page, by size, with the newest posts
    // commented on by people who are neither their authors nor likers.
    let newest = ctx
        .docs
        .post_ids_by_authors(&followees, None, 100)
        .await
        .unwrap();
    for (i, p) in newest.iter().enumerate() {
        let commenter = next_id();
        ctx.docs.insert_user(&user(commenter)).await.unwrap();
        let id = next_id();
        let c = moments::store::CommentDoc::text(
            id,
            *p,
            commenter,
            format!("评论 {i}"),
            timestamp_of(id),
        );
        ctx.docs.insert_comment(&c, 10_000).await.unwrap();
    }
    let reader = next_id();
    ctx.docs.insert_user(&user(reader)).await.unwrap();
    for f in &followees {
        follow(&app, reader, *f).await;
    }
    let pres = Presentation {
        now: now_ms(),
        ..Default::default()
    };
    page::feed_page(&ctx, reader, None, 100, &pres)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // The first read of a built timeline also fetches the followees'
    // follower counts (push or pull), which each instance keeps a minute.
    let before = ctx.round_trips.snapshot();
    page::feed_page(&ctx, reader, None, 20, &pres)
        .await
        .unwrap();
    let after = ctx.round_trips.snapshot();
    println!(
        "first page of 20 from the built timeline, follower counts not yet cached: {} document and {} live round trips (plus the session lookup)",
        after.0 - before.0,
        after.1 - before.1
    );
    for limit in [5, 20, 100] {
        let before = ctx.round_trips.snapshot();
        page::feed_page(&ctx, reader, None, limit, &pres)
            .await
            .unwrap();
        let after = ctx.round_trips.snapshot();
        println!(
            "warm feed page of {limit}: {} document and {} live round trips (plus the session lookup)",
            after.0 - before.0,
            after.1 - before.1
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
