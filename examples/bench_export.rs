//! A data export of a big account (issue 25): 100,000 posts and 100,000
//! likes, on the embedded default (or with MOMENTS_REDIS_URL, its live
//! state on Redis). It measures the export's wall time, CPU, peak RSS (the
//! process's high-water mark, reset after seeding) and the archive's size,
//! beside a same-run ceiling: the bare store reads of the same records in
//! the same batches, with no assembly, JSON or zip.
//!
//!   cargo run --release --example bench_export               # 100k + 100k
//!   BENCH_EXPORT_POSTS=10000 cargo run --release --example bench_export
//!   BENCH_EXPORT_BIG=1 cargo run --release --example bench_export
//!
//! `BENCH_EXPORT_BIG=1` makes an archive over 4 GiB (posts of 5,000 random
//! CJK characters, which do not compress much), writes it out of the store
//! chunk by chunk to a file, and has Python's zipfile check every entry's
//! CRC: no size limit comes from a field type (Zip64 sizes and offsets).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use moments::domain::post::{Category, Geo};
use moments::ids::{first_id_at, now_ms};
use moments::service::exports;
use moments::startup::Application;
use moments::store::{ExportState, LikeDoc, LikeKind, PostDoc};

#[path = "support/mod.rs"]
mod support;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// (VmRSS, VmHWM) in KiB.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU seconds of this process so far (user + system).
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// Text like a post's: a few dozen characters, mixed scripts, varied.
fn text(i: usize) -> String {
    const WORDS: &[&str] = &[
        "周末",
        "去湖边",
        "走走",
        "天气",
        "真好",
        "coffee",
        "☕",
        "和朋友",
        "吃饭",
        "新的一周",
        "加油",
        "读完了",
        "一本书",
        "跑步",
        "5km",
        "晚霞",
        "🌅",
        "上班",
        "好累",
        "旅行",
    ];
    let mut seed = (i as u64).wrapping_mul(6364136223846793005).wrapping_add(1);
    let n = 6 + (i % 14);
    (0..n)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            WORDS[(seed >> 33) as usize % WORDS.len()]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` CJK characters drawn from 20,000: about 14 bits each, so that a
/// post of them compresses to about two thirds of its UTF-8.
fn cjk(i: usize, n: usize) -> String {
    let mut seed = (i as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(7);
    (0..n)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            char::from_u32(0x4E00 + ((seed >> 33) % 20_000) as u32).unwrap()
        })
        .collect()
}

fn main() {
    let big = std::env::var("BENCH_EXPORT_BIG").is_ok_and(|v| v == "1");
    let posts = count("BENCH_EXPORT_POSTS", if big { 280_000 } else { 100_000 });
    let likes = count("BENCH_EXPORT_LIKES", if big { 0 } else { 100_000 }).min(posts);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (settings, dir, backend) = support::bench_settings("bench-export");
        let batch = settings.exports.batch;
        let app = Application::build(settings).await.unwrap();
        let ctx = app.context().clone();
        let uid = 10_000_001_i64;
        ctx.docs.insert_user(&support::user(uid)).await.unwrap();

        // Seeding: the account's posts (one in ten with pictures and a
        // place), then its likes of them, many writes at once so that the
        // embedded store commits them in groups.
        let seeded = Instant::now();
        let start_ms = now_ms() - posts as i64 * 60_000;
        let mut ids = Vec::with_capacity(posts);
        for chunk in (0..posts).collect::<Vec<_>>().chunks(2_000) {
            let docs: Vec<PostDoc> = chunk
                .iter()
                .map(|&i| {
                    let at = start_ms + i as i64 * 60_000;
                    let body = if big { cjk(i, 5000) } else { text(i) };
                    let mut p = PostDoc::text(first_id_at(at) + (i as i64 % 1000), uid, body, at);
                    if i % 10 == 0 {
                        p.category = Category::Picture;
                        p.picture_urls = (0..3)
                            .map(|n| format!("https://img.example/{i}/{n}.jpg"))
                            .collect();
                        p.geo = Some(Geo {
                            lat: 30.25,
                            lon: 120.15,
                            name: Some("西湖".into()),
                        });
                        p.device = "ONEPLUS A6000".into();
                    }
                    p
                })
                .collect();
            ids.extend(docs.iter().map(|p| p.id));
            join_all(docs.iter().map(|p| ctx.docs.insert_post(p)))
                .await
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
        }
        for chunk in ids[..likes].chunks(2_000) {
            let docs: Vec<LikeDoc> = chunk
                .iter()
                .map(|&post| LikeDoc::new(post + 1, LikeKind::Post, post, uid))
                .collect();
            join_all(docs.iter().map(|l| ctx.docs.insert_like_only(l)))
                .await
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
        }
        eprintln!(
            "seeded {posts} posts and {likes} likes in {:.1} s",
            seeded.elapsed().as_secs_f64()
        );

        // The ceiling: the same records read bare, in the same batches.
        let bare = Instant::now();
        let mut before = None;
        let mut read = 0;
        loop {
            let page = ctx.docs.post_ids_by_author(uid, before, batch).await.unwrap();
            read += ctx.docs.posts_by_ids(&page).await.unwrap().len();
            if page.len() < batch {
                break;
            }
            before = page.last().copied();
        }
        let mut before = None;
        loop {
            let page = ctx.docs.likes_by_user(uid, before, batch).await.unwrap();
            read += page.len();
            if page.len() < batch {
                break;
            }
            before = page.last().map(|l| l.id);
        }
        let bare = bare.elapsed();
        assert_eq!(read, posts + likes);

        // The export, with the peak RSS counted from here.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let (rss_before, _) = rss();
        let cpu_before = cpu();
        let started = Instant::now();
        let export = exports::start(&ctx, uid).await.unwrap();
        let done = loop {
            let e = ctx.docs.export_by_id(uid, export.id).await.unwrap().unwrap();
            match e.state {
                ExportState::Ready => break e,
                ExportState::Failed => panic!("the export failed: {:?}", e.error),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        let took = started.elapsed();
        let cpu_used = cpu() - cpu_before;
        let (_, peak) = rss();
        let size = done.size.unwrap();
        let first = ctx.docs.export_chunk(done.id, done.attempt, 0).await.unwrap().unwrap();
        assert_eq!(&first[..2], b"PK", "a zip");

        println!("live state: {backend}; batch {batch}; chunk {} KiB", ctx.settings.exports.chunk_bytes / 1024);
        println!("| account | export, s | CPU, s | records/s | archive, MiB | RSS before, MiB | peak RSS, MiB | bytes held at once, KiB | bare reads, s | export ÷ bare |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        println!(
            "| {posts} posts + {likes} likes | {:.2} | {:.2} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} | {:.2} | {:.1}× |",
            took.as_secs_f64(),
            cpu_used,
            done.done as f64 / took.as_secs_f64(),
            size as f64 / 1024.0 / 1024.0,
            rss_before as f64 / 1024.0,
            peak as f64 / 1024.0,
            ctx.exports.peak_buffered() as f64 / 1024.0,
            bare.as_secs_f64(),
            took.as_secs_f64() / bare.as_secs_f64(),
        );
        if big {
            // Out of the store a chunk at a time, as a download reads it,
            // and checked by another zip reader.
            let path = dir.join("big.zip");
            let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            let chunks = (size as u64).div_ceil(ctx.settings.exports.chunk_bytes as u64);
            for n in 0..chunks {
                let chunk = ctx.docs.export_chunk(done.id, done.attempt, n as i64).await.unwrap().unwrap();
                std::io::Write::write_all(&mut file, &chunk).unwrap();
            }
            std::io::Write::flush(&mut file).unwrap();
            drop(file);
            let checked = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import sys, zipfile\n\
                     z = zipfile.ZipFile(sys.argv[1])\n\
                     bad = z.testzip()\n\
                     assert bad is None, bad\n\
                     for i in z.infolist(): print(i.filename, i.file_size, i.compress_size)",
                    path.to_str().unwrap(),
                ])
                .output()
                .unwrap();
            assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
            println!("Python's zipfile read every entry of the {size}-byte archive, CRCs good:");
            print!("{}", String::from_utf8_lossy(&checked.stdout));
        }
        drop(app);
        let _ = std::fs::remove_dir_all(dir);
    });
}
