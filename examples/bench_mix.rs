//! The service under `scripts/bench-mix.sh`: DeathStarBench socialNetwork's
//! mixed workload (not a test: run it through the script).
//!
//! Builds the application exactly as `moments serve` does (the settings
//! from the environment, one actix system), seeds it through the service
//! layer before it answers anything, writes the accounts' tokens for wrk's
//! script, and serves until it is killed. Seeding is not timed by the load
//! run; it goes through the service so the live state is what real traffic
//! would have left (follows mirrored, posts fanned out), but skips argon2:
//! the sessions are opened directly.
//!
//! The graph: each undirected edge of `--edges FILE` is a follow both ways
//! (DeathStarBench's `init_social_graph.py`); `--scale K` instead generates
//! K times the users and edges with the same degree shape (each user's
//! degree drawn from the file's, paired at random), plus a few accounts
//! followed one-way by 5,000 and more. Each user gets 0 to 20 posts,
//! uniformly, 256 characters each. Everything random comes from `--seed`.
//!
//!   cargo run --release --example bench_mix -- --edges ../shared/data/socfb-Reed98.edges \
//!     --lua /tmp/mix-data.lua [--scale 10] [--seed 21]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::time::Instant;

use futures_util::future::join_all;
use moments::config::Settings;
use moments::domain::post::NewPost;
use moments::ids::{next_id, now_ms};
use moments::service::{accounts, posts, social, Context, Presentation};
use moments::startup::Application;

#[path = "support/mod.rs"]
mod support;

/// Accounts with 5,000 and more followers on a generated graph.
const PULLED_AUTHORS: usize = 5;
/// Writes in flight at once while seeding: enough to fill the embedded
/// store's group commits.
const SEED_CONCURRENCY: usize = 64;

struct Args {
    edges: String,
    lua: String,
    scale: usize,
    seed: u64,
}

fn args() -> Args {
    let mut out = Args {
        edges: String::new(),
        lua: String::new(),
        scale: 1,
        seed: 21,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--edges" => out.edges = value,
            "--lua" => out.lua = value,
            "--scale" => out.scale = value.parse().expect("--scale is a whole number"),
            "--seed" => out.seed = value.parse().expect("--seed is a whole number"),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        !out.edges.is_empty() && !out.lua.is_empty(),
        "--edges and --lua are needed"
    );
    out
}

/// splitmix64: small, seedable, and good enough to shuffle a graph.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Undirected edges of the file, 0-based ids, and how many users.
fn read_edges(path: &str) -> (usize, Vec<(usize, usize)>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let mut edges = Vec::new();
    let mut users = 0;
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(a), Some(b)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) else {
            continue;
        };
        users = users.max(a + 1).max(b + 1);
        edges.push((a, b));
    }
    (users, edges)
}

/// `scale` times the users, each with a degree drawn from `edges`' degrees,
/// the stubs paired at random (self-loops and repeats dropped).
fn generate(
    users: usize,
    edges: &[(usize, usize)],
    scale: usize,
    rng: &mut Rng,
) -> (usize, Vec<(usize, usize)>) {
    let mut degree = vec![0usize; users];
    for (a, b) in edges {
        degree[*a] += 1;
        degree[*b] += 1;
    }
    let n = users * scale;
    let mut stubs = Vec::new();
    for u in 0..n {
        for _ in 0..degree[rng.below(users)] {
            stubs.push(u);
        }
    }
    for i in (1..stubs.len()).rev() {
        stubs.swap(i, rng.below(i + 1));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for pair in stubs.chunks_exact(2) {
        let (a, b) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
        if a != b && seen.insert((a, b)) {
            out.push((a, b));
        }
    }
    (n, out)
}

fn text(rng: &mut Rng, chars: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..chars)
        .map(|_| ALPHABET[rng.below(ALPHABET.len())] as char)
        .collect()
}

async fn in_chunks<T, F, Fut>(items: Vec<T>, f: F)
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        join_all(items.by_ref().take(SEED_CONCURRENCY).map(&f)).await;
    }
}

async fn seed(ctx: &Context, args: &Args) -> (Vec<i64>, Vec<String>) {
    let mut rng = Rng(args.seed);
    let (users, edges) = read_edges(&args.edges);
    let (users, edges) = if args.scale > 1 {
        generate(users, &edges, args.scale, &mut rng)
    } else {
        (users, edges)
    };
    let mut follows: Vec<(usize, usize)> =
        edges.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
    if args.scale > 1 {
        for c in 0..PULLED_AUTHORS {
            let mut fans = HashSet::new();
            while fans.len() < 5_000 + 1_000 * c {
                let fan = rng.below(users);
                if fan != c {
                    fans.insert(fan);
                }
            }
            let already: HashSet<usize> =
                follows.iter().filter(|f| f.1 == c).map(|f| f.0).collect();
            follows.extend(fans.difference(&already).map(|&fan| (fan, c)));
        }
    }
    let started = Instant::now();
    let uids: Vec<i64> = (0..users).map(|_| next_id()).collect();
    in_chunks(uids.clone(), |uid| async move {
        let mut doc = support::user(uid);
        doc.username = format!("mix{uid}");
        ctx.docs.insert_user(&doc).await.unwrap();
    })
    .await;
    let mut tokens = Vec::with_capacity(users);
    for chunk in uids.chunks(SEED_CONCURRENCY) {
        let opened = join_all(
            chunk
                .iter()
                .map(|uid| accounts::open_session(ctx, *uid, "bench".into(), 0)),
        )
        .await;
        tokens.extend(opened.into_iter().map(|o| o.unwrap().0));
    }
    eprintln!(
        "seeded {users} users in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let pairs: Vec<(i64, i64)> = follows.iter().map(|&(a, b)| (uids[a], uids[b])).collect();
    in_chunks(pairs, |(a, b)| async move {
        social::follow(ctx, a, b).await.unwrap();
    })
    .await;
    eprintln!(
        "seeded {} follows in {:.1}s",
        follows.len(),
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let mut authored = Vec::new();
    for uid in &uids {
        for _ in 0..rng.below(21) {
            authored.push((*uid, text(&mut rng, 256)));
        }
    }
    let count = authored.len();
    in_chunks(authored, |(author, content)| async move {
        let post = NewPost::text(content);
        let pres = Presentation {
            now: now_ms(),
            ..Presentation::default()
        };
        posts::create_post(ctx, author, post, &pres, None)
            .await
            .unwrap();
    })
    .await;
    while ctx.fan_outs.running() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    eprintln!(
        "seeded {count} posts, fanned out, in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    (uids, tokens)
}

fn write_lua(path: &str, uids: &[i64], tokens: &[String]) {
    // Strings: Lua would print a 16-digit number as 1.2e+15.
    let quoted = |items: Vec<String>| items.join(",");
    let body = format!(
        "tokens = {{{}}}\nuids = {{{}}}\n",
        quoted(tokens.iter().map(|t| format!("{t:?}")).collect()),
        quoted(uids.iter().map(|u| format!("\"{u}\"")).collect()),
    );
    let partial = format!("{path}.partial");
    std::fs::write(&partial, body).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

fn main() {
    moments::startup::tune_allocator();
    let args = args();
    actix_web::rt::System::new().block_on(async move {
        let settings = Settings::from_env().unwrap();
        let app = Application::build(settings).await.unwrap();
        let ctx = app.context().clone();
        let (uids, tokens) = seed(&ctx, &args).await;
        write_lua(&args.lua, &uids, &tokens);
        eprintln!("serving on port {}", app.port());
        app.run_until_stopped().await.unwrap();
    });
}
