//! The floor under the service's Redis path, for BENCHMARKS.md (not a
//! test: `scripts/bench-mix.sh redis` runs it beside the mix).
//!
//! The same client the service uses (redis-rs, a `ConnectionManager` per
//! thread, two threads, each a current-thread runtime as an actix worker
//! is), with nothing else on those threads: tasks that each make one round
//! trip after another, an `MGET` of `--keys` 700-byte values (a page's post
//! bodies are about that size). It prints what one round trip costs this
//! process and Redis in CPU, so that a mix request's round trips can be
//! priced at what the client and the server alone would charge for them.
//!
//!   cargo run --release --example bench_redis_floor -- --redis redis://127.0.0.1:6379 \
//!     [--seconds 5] [--keys 10] [--tasks 16]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::AsyncCommands;

/// User and kernel CPU seconds this process has used.
fn own_cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's closing parenthesis: utime and stime
    // are the 12th and 13th of them.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // USER_HZ, the unit of those fields: 100 on Linux.
    let hz = 100.0;
    (
        fields[11].parse::<f64>().unwrap() / hz,
        fields[12].parse::<f64>().unwrap() / hz,
    )
}

/// Redis's own CPU seconds, user and system, from `INFO cpu`.
async fn redis_cpu(conn: &mut redis::aio::ConnectionManager) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| {
            l.strip_prefix("used_cpu_user:")
                .or_else(|| l.strip_prefix("used_cpu_sys:"))
        })
        .map(|v| v.trim().parse::<f64>().unwrap())
        .sum()
}

fn main() {
    let mut url = String::from("redis://127.0.0.1:6379");
    let (mut seconds, mut keys, mut tasks) = (5u64, 10usize, 16usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().expect("each flag takes a value");
        match a.as_str() {
            "--redis" => url = v,
            "--seconds" => seconds = v.parse().unwrap(),
            "--keys" => keys = v.parse().unwrap(),
            "--tasks" => tasks = v.parse().unwrap(),
            _ => panic!("unknown flag {a}"),
        }
    }
    let client = redis::Client::open(url.as_str()).unwrap();
    let names: Arc<Vec<String>> = Arc::new((0..keys).map(|i| format!("floor:{{f}}:{i}")).collect());

    let setup = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut admin = setup.block_on(client.get_connection_manager()).unwrap();
    setup.block_on(async {
        let value = "x".repeat(700);
        for k in names.iter() {
            let _: () = admin.set(k, &value).await.unwrap();
        }
    });

    let trips = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (cpu_before, redis_before) = (own_cpu(), setup.block_on(redis_cpu(&mut admin)));
    let started = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (client, names, trips, stop) =
                (client.clone(), names.clone(), trips.clone(), stop.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let conn = client.get_connection_manager().await.unwrap();
                    let local = tokio::task::LocalSet::new();
                    for _ in 0..tasks / 2 {
                        let (mut conn, names, trips, stop) =
                            (conn.clone(), names.clone(), trips.clone(), stop.clone());
                        local.spawn_local(async move {
                            while !stop.load(Ordering::Relaxed) {
                                let got: Vec<Option<String>> =
                                    conn.mget(names.as_slice()).await.unwrap();
                                assert_eq!(got.len(), names.len());
                                trips.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    }
                    local.await;
                });
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let took = started.elapsed().as_secs_f64();
    let (cpu_after, redis_after) = (own_cpu(), setup.block_on(redis_cpu(&mut admin)));
    let n = trips.load(Ordering::Relaxed) as f64;
    let (user, kernel) = (cpu_after.0 - cpu_before.0, cpu_after.1 - cpu_before.1);
    println!(
        "floor: {n:.0} round trips (MGET of {keys}) in {took:.1}s, {:.0}/s, {tasks} tasks on 2 threads; \
         client CPU per round trip {:.1} us (user {:.1}, kernel {:.1}); redis CPU per round trip {:.1} us",
        n / took,
        (user + kernel) / n * 1e6,
        user / n * 1e6,
        kernel / n * 1e6,
        (redis_after - redis_before) / n * 1e6,
    );
}
