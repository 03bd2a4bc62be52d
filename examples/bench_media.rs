//! Photos (issue 41): uploads of a 12 MP phone JPEG over HTTP, processed
//! and stored on the embedded default, beside a same-run ceiling: the bare
//! processing of the same bytes (decode, orient, resize, encode both
//! renditions, blurhash: `processing::process`, the crates' work alone),
//! on as many threads as the picture pool has. Then the memory an upload
//! takes at its peak, and the process's RSS across 1,000 uploads.
//!
//!   cargo run --release --example bench_media
//!   BENCH_MEDIA_PICTURES=24 BENCH_MEDIA_RSS_UPLOADS=1000 cargo run --release --example bench_media
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use moments::service::media::processing::{self, Bounds};
use moments::service::media::samples::textured_phone_jpeg;
use moments::service::thread_pool;
use moments::startup::Application;

#[path = "support/mod.rs"]
mod support;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// (VmRSS, VmHWM) in MiB.
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Resets the high-water mark to the current RSS (Linux: clear_refs 5).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

const BOUNDARY: &str = "bench-media-boundary-41";

fn form(photo: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"IMG.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(photo);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// `n` uploads of `photo`, `at_once` at a time; the wall time.
async fn uploads(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    photo: &[u8],
    n: usize,
    at_once: usize,
) -> Duration {
    let body = bytes::Bytes::from(form(photo));
    let started = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let worker = || async {
        while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
            let resp = client
                .post(format!("{base}/api/v1/media"))
                .bearer_auth(token)
                .header(
                    "content-type",
                    format!("multipart/form-data; boundary={BOUNDARY}"),
                )
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(
                resp.status().as_u16(),
                201,
                "{}",
                resp.text().await.unwrap()
            );
        }
    };
    join_all((0..at_once).map(|_| worker())).await;
    started.elapsed()
}

/// `n` bare processings of `photo` on `threads` threads; the wall time.
fn bare(photo: &[u8], n: usize, threads: usize, bounds: Bounds) -> Duration {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                    processing::process(photo, "image/jpeg", &bounds).unwrap();
                }
            });
        }
    });
    started.elapsed()
}

fn main() {
    let pictures = count("BENCH_MEDIA_PICTURES", 24);
    let rss_uploads = count("BENCH_MEDIA_RSS_UPLOADS", 1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (mut settings, dir, _) = support::bench_settings("bench-media");
        settings.rate_limits = None;
        let media = settings.media.clone();
        let bounds = Bounds {
            max_pixels: media.max_pixels,
            original_side: media.original_side,
            preview_side: media.preview_side,
        };
        let app = Application::build(settings).await.unwrap();
        let base = format!("http://127.0.0.1:{}", app.port());
        tokio::spawn(app.run_until_stopped());
        let client = reqwest::Client::new();
        let (_, token) =
            support::account(&client, &base, &format!("bench{}", std::process::id())).await;

        let photo = textured_phone_jpeg(4032, 3024, 6).unwrap();
        let threads = thread_pool::threads();
        println!(
            "a 12 MP phone JPEG: 4032 × 3024, {:.1} MB, orientation 6, GPS in its EXIF; \
             {threads} picture threads",
            photo.len() as f64 / 1e6
        );
        // Warm both paths once.
        bare(&photo, threads, threads, bounds);
        uploads(&client, &base, &token, &photo, threads, threads).await;

        let mut rounds = Vec::new();
        for round in 1..=3 {
            let photo_for_bare = photo.clone();
            let bare_time = tokio::task::spawn_blocking(move || {
                bare(&photo_for_bare, pictures, threads, bounds)
            })
            .await
            .unwrap();
            let upload_time = uploads(&client, &base, &token, &photo, pictures, threads).await;
            let per = |d: Duration| support::ms(d) * threads as f64 / pictures as f64;
            let rate = |d: Duration| pictures as f64 / d.as_secs_f64();
            println!(
                "round {round}: bare {:.0} ms a picture, {:.2} pictures/s; upload {:.0} ms a \
                 picture, {:.2} pictures/s; upload/bare time {:.3}",
                per(bare_time),
                rate(bare_time),
                per(upload_time),
                rate(upload_time),
                upload_time.as_secs_f64() / bare_time.as_secs_f64()
            );
            rounds.push(upload_time.as_secs_f64() / bare_time.as_secs_f64());
        }
        rounds.sort_by(f64::total_cmp);
        println!("upload/bare, median of 3: {:.3}", rounds[1]);

        // The peak one upload adds, then two at once.
        for at_once in [1, 2] {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let (before, _) = rss();
            reset_peak();
            uploads(&client, &base, &token, &photo, at_once * 3, at_once).await;
            let (_, peak) = rss();
            println!(
                "{at_once} upload(s) at once: peak RSS {:.0} MiB above the {:.0} MiB before \
                 ({:.0} MiB an upload)",
                peak - before,
                before,
                (peak - before) / at_once as f64
            );
        }

        // RSS across many uploads of a 2 MP photo, two at a time.
        let small = textured_phone_jpeg(1600, 1200, 1).unwrap();
        let step = (rss_uploads / 4).max(1);
        let mut line = format!("RSS across {rss_uploads} uploads of a 2 MP photo:");
        line.push_str(&format!(" {:.0}", rss().0));
        for _ in 0..4 {
            uploads(&client, &base, &token, &small, step, 2).await;
            line.push_str(&format!(" → {:.0}", rss().0));
        }
        println!("{line} MiB");
        let _ = std::fs::remove_dir_all(dir);
    });
}
