//! Search over a million posts on the embedded default, for BENCHMARKS.md
//! (not a test: run it on purpose).
//!
//!   cargo run --release --example bench_search
//!   BENCH_SEARCH_POSTS=100000 cargo run --release --example bench_search
//!
//! The posts are a generated mix: six in ten Chinese, four in ten English,
//! 6 to 30 words each drawn from a few hundred common words (skewed, so
//! some words are in a third of the posts and others in a few hundred),
//! by 2,000 authors; eight in ten public, the rest for friends or private.
//!
//! 1. The bare engine: the posts indexed straight into a fresh index
//!    (`EmbeddedSearch::index_posts`: cutting the text and tantivy), ten
//!    thousand a commit as the service's indexer commits them, with no
//!    documents read: posts a second, and the index's size a post.
//! 2. The service: the same posts written to the documents, then the
//!    application started on them; its indexer reads them in id order,
//!    asks their authors' setting and indexes them: posts a second until
//!    its mark passes the last.
//! 3. Queries over HTTP, 16 connections, each a signed-in reader who
//!    follows 100 of the authors, every hit judged by the visibility rules,
//!    pages of 20: p50 and p99 by kind of query, beside `/healthz` under
//!    the same 16 connections in the same run.
//! 4. The process's resident memory at the end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use moments::ids::{first_id_at, now_ms, timestamp_of};
use moments::startup::Application;
use moments::store::embedded::search::EmbeddedSearch;
use moments::store::search::{IndexedPost, SearchIndex};
use moments::store::{FollowDoc, PostDoc};

#[path = "support/mod.rs"]
mod support;
use support::{bench_settings, percentile, user};

const AUTHORS: usize = 2_000;
const FOLLOWED: usize = 100;
const CONNECTIONS: usize = 16;
const QUERIES_EACH: usize = 200;
/// Posts each connection writes in a compose run: several seconds of
/// them, several of the indexer's busy passes and commits, so that they
/// weigh as they would under a stream of posts rather than after it.
const COMPOSE_EACH: usize = 4_000;
/// Pairs of composing runs, without and with indexing, in turn (off
/// first, then on first, and so on): the machine's drift between runs is
/// as large as what is measured, so the ratio is given for each pair and
/// for their sums.
const COMPOSE_ROUNDS: usize = 4;

const ZH: &[&str] = &[
    "今天",
    "天气",
    "不错",
    "我们",
    "一起",
    "去",
    "西湖",
    "划船",
    "朋友",
    "咖啡",
    "周末",
    "开心",
    "下雨",
    "晚饭",
    "火锅",
    "电影",
    "地铁",
    "上班",
    "加班",
    "旅行",
    "北京",
    "上海",
    "杭州",
    "成都",
    "照片",
    "日落",
    "海边",
    "爬山",
    "跑步",
    "健身",
    "读书",
    "学习",
    "考试",
    "毕业",
    "生日",
    "蛋糕",
    "礼物",
    "家人",
    "孩子",
    "妈妈",
    "爸爸",
    "猫咪",
    "小狗",
    "春天",
    "夏天",
    "秋天",
    "冬天",
    "雪",
    "花",
    "樱花",
    "银杏",
    "音乐",
    "演唱会",
    "吉他",
    "钢琴",
    "画画",
    "做饭",
    "早餐",
    "面条",
    "饺子",
    "奶茶",
    "甜品",
    "烧烤",
    "夜宵",
    "公园",
    "散步",
    "风景",
    "城市",
    "乡下",
    "回家",
    "机场",
    "火车",
    "高铁",
    "酒店",
    "民宿",
    "露营",
    "星空",
    "月亮",
    "太阳",
    "彩虹",
    "大海",
    "湖边",
    "山顶",
    "森林",
    "工作",
    "项目",
    "会议",
    "同事",
    "老板",
    "新年",
    "春节",
    "中秋",
    "月饼",
    "红包",
    "烟花",
    "灯笼",
    "长城",
    "故宫",
    "外滩",
    "熊猫",
    "兰州",
    "拉面",
    "人民",
    "共和国",
    "博物馆",
    "图书馆",
    "展览",
];

const EN: &[&str] = &[
    "today",
    "weather",
    "great",
    "we",
    "went",
    "to",
    "the",
    "lake",
    "rowing",
    "friends",
    "coffee",
    "weekend",
    "happy",
    "rain",
    "dinner",
    "hotpot",
    "movie",
    "subway",
    "work",
    "late",
    "trip",
    "beijing",
    "shanghai",
    "city",
    "photo",
    "sunset",
    "beach",
    "hiking",
    "running",
    "gym",
    "book",
    "study",
    "exam",
    "graduation",
    "birthday",
    "cake",
    "gift",
    "family",
    "kids",
    "mom",
    "dad",
    "cat",
    "dog",
    "spring",
    "summer",
    "autumn",
    "winter",
    "snow",
    "flowers",
    "music",
    "concert",
    "guitar",
    "piano",
    "painting",
    "cooking",
    "breakfast",
    "noodles",
    "dumplings",
    "tea",
    "dessert",
    "barbecue",
    "park",
    "walk",
    "view",
    "home",
    "airport",
    "train",
    "hotel",
    "camping",
    "stars",
    "moon",
    "sun",
    "rainbow",
    "sea",
    "mountain",
    "forest",
    "project",
    "meeting",
    "colleague",
    "new",
    "year",
    "festival",
    "fireworks",
    "lantern",
    "museum",
    "library",
    "exhibition",
    "kite",
    "river",
    "bridge",
    "garden",
    "market",
    "street",
    "night",
    "morning",
];

/// A small, fixed generator: the same posts every run, and for both the
/// bare index and the service.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Skewed toward the start of `0..n`: the first words are common.
    fn skewed(&mut self, n: usize) -> usize {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((u * u * u) * n as f64) as usize
    }
}

struct Corpus {
    first_id: i64,
    authors: Vec<i64>,
}

impl Corpus {
    /// Post `i`: the same every time.
    fn post(&self, i: usize) -> PostDoc {
        let mut rng =
            Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let chinese = rng.next() % 10 < 6;
        let words = 6 + (rng.next() % 25) as usize;
        let mut text = String::new();
        for w in 0..words {
            if chinese {
                text.push_str(ZH[rng.skewed(ZH.len())]);
                if w % 7 == 6 {
                    text.push('，');
                }
            } else {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(EN[rng.skewed(EN.len())]);
            }
        }
        let id = self.first_id + i as i64;
        let author = self.authors[(rng.next() % self.authors.len() as u64) as usize];
        let mut post = PostDoc::text(id, author, text, timestamp_of(id));
        post.visibility = match rng.next() % 20 {
            0..=15 => moments::domain::post::Visibility::Public,
            16..=18 => moments::domain::post::Visibility::Friends,
            _ => moments::domain::post::Visibility::Private,
        };
        post
    }
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    let meta = e.metadata().unwrap();
                    if meta.is_dir() {
                        dir_bytes(&e.path())
                    } else {
                        meta.len()
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// CPU time this process has used, user and system, every thread.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `CONNECTIONS` clients each asking `paths` in turn, `QUERIES_EACH`
/// times: every answer's time, sorted.
async fn load(base: &str, token: &str, paths: &[String]) -> Vec<Duration> {
    let runs: Vec<_> = (0..CONNECTIONS)
        .map(|c| {
            let (base, token, paths) = (base.to_string(), token.to_string(), paths.to_vec());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut times = Vec::with_capacity(QUERIES_EACH);
                for i in 0..QUERIES_EACH {
                    let path = &paths[(c + i) % paths.len()];
                    let start = Instant::now();
                    let res = client
                        .get(format!("{base}{path}"))
                        .bearer_auth(&token)
                        .send()
                        .await
                        .unwrap();
                    assert!(res.status().is_success(), "{path}: {}", res.status());
                    res.bytes().await.unwrap();
                    times.push(start.elapsed());
                }
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    for r in runs {
        all.extend(r.await.unwrap());
    }
    all.sort_unstable();
    all
}

fn encoded(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn main() {
    let posts: usize = std::env::var("BENCH_SEARCH_POSTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (mut settings, dir, _) = bench_settings("bench-search");
        settings.rate_limits = None;
        // A day ago: settled, so the indexer's mark passes every post.
        let day_ago = now_ms() - 86_400_000;
        let corpus = Corpus {
            first_id: first_id_at(day_ago) + AUTHORS as i64 + 10,
            authors: (0..AUTHORS as i64).map(|a| first_id_at(day_ago) + a).collect(),
        };
        println!("{posts} posts by {AUTHORS} authors");

        // 1. The bare engine.
        let bare_dir = dir.with_extension("bare");
        let bare = EmbeddedSearch::open(&bare_dir).unwrap();
        let started = Instant::now();
        for chunk in (0..posts).collect::<Vec<_>>().chunks(10_000) {
            let batch: Vec<IndexedPost> = chunk
                .iter()
                .map(|i| moments::service::search::indexed(&corpus.post(*i), true))
                .collect();
            bare.index_posts(&batch).await.unwrap();
        }
        let bare_time = started.elapsed();
        let bare_bytes = dir_bytes(&bare_dir);
        println!(
            "bare index: {:.1} s, {:.0} posts/s, {:.0} bytes a post",
            bare_time.as_secs_f64(),
            posts as f64 / bare_time.as_secs_f64(),
            bare_bytes as f64 / posts as f64
        );
        drop(bare);
        let _ = std::fs::remove_dir_all(&bare_dir);

        // 2. The documents, written before the application starts, so that
        //    its indexer meets them all at once.
        let started = Instant::now();
        {
            use moments::store::{AccountDocs, DocStore, PostDocs};
            let db = moments::store::embedded::open(&settings.data_dir, settings.docs_cache_bytes)
                .unwrap();
            let docs = std::sync::Arc::new(moments::store::embedded::documents::EmbeddedDocs::new(
                db,
                settings.post_id_array_cap,
            ));
            docs.apply_schemas().await.unwrap();
            for author in &corpus.authors {
                docs.insert_user(&user(*author)).await.unwrap();
            }
            for chunk in (0..posts).collect::<Vec<_>>().chunks(5000) {
                let writes = chunk.iter().map(|i| {
                    let (docs, post) = (docs.clone(), corpus.post(*i));
                    async move { docs.insert_post(&post).await.unwrap() }
                });
                futures_util::future::join_all(writes).await;
            }
            docs.close().await.unwrap();
        }
        println!(
            "documents written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let started = Instant::now();
        let app = Application::build(settings).await.unwrap();
        let ctx = app.context().clone();
        let base = format!("http://127.0.0.1:{}", app.port());
        let stopper = app.stopper();
        let serving = tokio::spawn(app.run_until_stopped());
        let last = corpus.first_id + posts as i64 - 1;
        let index = ctx.search.index().unwrap().clone();
        loop {
            ctx.search.wake();
            if index.indexed_through().await.unwrap() >= Some(last) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let service_time = started.elapsed();
        let index_bytes = dir_bytes(&dir.join("search"));
        println!(
            "service's indexer: {:.1} s, {:.0} posts/s ({:.2} of the bare engine's rate), {:.0} bytes a post",
            service_time.as_secs_f64(),
            posts as f64 / service_time.as_secs_f64(),
            bare_time.as_secs_f64() / service_time.as_secs_f64(),
            index_bytes as f64 / posts as f64
        );

        // 3. A reader who follows 100 authors, and queries.
        let client = reqwest::Client::new();
        let (reader, token) = support::account(&client, &base, "searcher").await;
        for author in corpus.authors.iter().take(FOLLOWED) {
            ctx.docs
                .insert_follow(&FollowDoc::new(moments::ids::next_id(), reader, *author))
                .await
                .unwrap();
        }
        let kinds: [(&str, Vec<&str>); 6] = [
            ("a common word (in about a third of the posts)", vec!["今天", "today", "天气", "weather"]),
            ("a middling word", vec!["咖啡", "火锅", "coffee", "music", "杭州", "sunset"]),
            ("a rare word", vec!["博物馆", "展览", "library", "exhibition", "兰州", "kite"]),
            ("two words", vec!["西湖 划船", "lake rowing", "周末 咖啡", "sunset beach"]),
            ("a word, by relevance", vec!["咖啡&sort=relevance", "coffee&sort=relevance"]),
            ("two words, by relevance", vec!["西湖 划船&sort=relevance", "lake rowing&sort=relevance", "周末 咖啡&sort=relevance", "sunset beach&sort=relevance"]),
        ];
        let health = vec!["/healthz".to_string()];
        load(&base, &token, &health).await;
        let ceiling = load(&base, &token, &health).await;
        println!(
            "\n{CONNECTIONS} connections, {QUERIES_EACH} requests each, pages of 20\n\n| query | p50 | p99 | p99 ÷ /healthz p99 |\n|---|---|---|---|"
        );
        let c99 = percentile(&ceiling, 99.0);
        println!(
            "| /healthz (the ceiling) | {:.2} ms | {:.2} ms | 1 |",
            percentile(&ceiling, 50.0),
            c99
        );
        for (what, words) in kinds {
            let paths: Vec<String> = words
                .iter()
                .map(|w| {
                    let (q, rest) = w.split_once('&').map_or((*w, ""), |(q, r)| (q, r));
                    format!("/api/v1/search?q={}&limit=20&{rest}", encoded(q))
                })
                .collect();
            load(&base, &token, &paths).await;
            let times = load(&base, &token, &paths).await;
            let p99 = percentile(&times, 99.0);
            println!(
                "| {what} | {:.2} ms | {p99:.2} ms | {:.1} |",
                percentile(&times, 50.0),
                p99 / c99.max(0.001)
            );
        }
        println!("\nresident memory at the end: {:.0} MB", rss_mb());
        // Stopped before composing, which measures other instances.
        stopper.stop();
        serving.await.unwrap().unwrap();
        drop((ctx, index));
        let _ = std::fs::remove_dir_all(&dir);

        // 4. Composing with indexing on, beside an instance without an
        //    index (its folder held, as by another instance: no indexer
        //    runs), each on fresh data, `COMPOSE_ROUNDS` times in turn
        //    against drift.
        println!(
            "\nposting, {CONNECTIONS} connections, {COMPOSE_EACH} posts each\n\n| instance | posts/s | p50 | p99 | CPU a post | index caught up after the run |\n|---|---|---|---|---|---|"
        );
        let mut rates = [Vec::new(), Vec::new()];
        let mut cpus = [Vec::new(), Vec::new()];
        for round in 0..COMPOSE_ROUNDS {
            // Off then on, then on then off: a drift of the machine over
            // the rounds weighs on both alike.
            let order = match round % 2 {
                0 => [false, true],
                _ => [true, false],
            };
            for indexing in order {
                let run = compose(indexing, round, &corpus).await;
                println!(
                    "| indexing {} | {:.0} | {:.2} ms | {:.2} ms | {:.0} µs | {} |",
                    if indexing { "on" } else { "off" },
                    run.rate,
                    percentile(&run.times, 50.0),
                    percentile(&run.times, 99.0),
                    run.cpu * 1e6,
                    run.caught_up
                        .map_or("".into(), |d| format!("{:.1} s", d.as_secs_f64()))
                );
                rates[usize::from(indexing)].push(run.rate);
                cpus[usize::from(indexing)].push(run.cpu);
            }
        }
        let pairs: Vec<String> = rates[0]
            .iter()
            .zip(&rates[1])
            .map(|(off, on)| format!("{:.2}", on / off))
            .collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "\ncompose rate with indexing on: {:.2} of the rate without (each pair: {})",
            mean(&rates[1]) / mean(&rates[0]),
            pairs.join(", ")
        );
        // The rate moves with the machine between runs; the CPU a post
        // much less: what indexing adds to a post's cost, told apart.
        let cpu_pairs: Vec<String> = cpus[0]
            .iter()
            .zip(&cpus[1])
            .map(|(off, on)| format!("{:.2}", on / off))
            .collect();
        println!(
            "CPU a post with indexing on: {:.2} of it without ({:.0} µs more; each pair: {})",
            mean(&cpus[1]) / mean(&cpus[0]),
            (mean(&cpus[1]) - mean(&cpus[0])) * 1e6,
            cpu_pairs.join(", ")
        );
    });
}

/// What a composing run measured.
struct Composed {
    /// Posts a second.
    rate: f64,
    /// Every answer's time, sorted.
    times: Vec<Duration>,
    /// With indexing on: how long after the run's last answer the index
    /// found its newest post, which tells how far behind the run the
    /// indexer was.
    caught_up: Option<Duration>,
    /// CPU time a post, in seconds, of the whole process (the load
    /// generator, the instance and its indexer), from the run's start to
    /// 12 s after its end.
    cpu: f64,
}

/// Posts at `CONNECTIONS` connections on a fresh instance, with or
/// without its search index.
async fn compose(indexing: bool, round: usize, corpus: &Corpus) -> Composed {
    let tag = format!(
        "bench-compose-{}-{round}",
        if indexing { "on" } else { "off" }
    );
    let (mut settings, dir, _) = bench_settings(&tag);
    settings.rate_limits = None;
    let held = (!indexing).then(|| EmbeddedSearch::open(&dir.join("search")).unwrap());
    let app = Application::build(settings).await.unwrap();
    let ctx = app.context().clone();
    assert_eq!(ctx.search.index().is_ok(), indexing);
    let base = format!("http://127.0.0.1:{}", app.port());
    let stopper = app.stopper();
    let serving = tokio::spawn(app.run_until_stopped());
    let client = reqwest::Client::new();
    let (composer, token) = support::account(&client, &base, "composer").await;
    let texts: Vec<String> = (0..CONNECTIONS * COMPOSE_EACH)
        .map(|i| corpus.post(i).content)
        .collect();
    let started = Instant::now();
    let cpu_before = cpu_time();
    let runs: Vec<_> = (0..CONNECTIONS)
        .map(|c| {
            let (base, token) = (base.clone(), token.clone());
            let texts: Vec<String> = texts.iter().skip(c).step_by(CONNECTIONS).cloned().collect();
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut times = Vec::with_capacity(texts.len());
                for text in texts {
                    let start = Instant::now();
                    let res = client
                        .post(format!("{base}/api/v1/posts"))
                        .bearer_auth(&token)
                        .json(&serde_json::json!({"category": "TEXT", "content": text}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(res.status().as_u16(), 201);
                    res.bytes().await.unwrap();
                    times.push(start.elapsed());
                }
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    for r in runs {
        all.extend(r.await.unwrap());
    }
    let ended = Instant::now();
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    all.sort_unstable();
    let mut caught_up = None;
    if let Ok(index) = ctx.search.index() {
        let newest = ctx
            .docs
            .post_ids_by_author(composer, None, 1)
            .await
            .unwrap();
        let asking = moments::store::search::PostSearch {
            circle: vec![composer],
            limit: 1,
            ..Default::default()
        };
        loop {
            let found = index.search_posts(&asking).await.unwrap();
            if found.iter().map(|h| h.id).eq(newest.iter().copied()) {
                caught_up = Some(ended.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The indexer's work past the run (it settles the last ten seconds'
    // posts) is let finish and counted in the run's CPU; an instance
    // without an index waits as long, idle, for a like count.
    tokio::time::sleep(Duration::from_secs(12).saturating_sub(ended.elapsed())).await;
    let cpu = (cpu_time() - cpu_before).as_secs_f64() / (CONNECTIONS * COMPOSE_EACH) as f64;
    // Stopped, so that no instance's background work (its indexer's
    // polls among it) weighs on the runs after it.
    stopper.stop();
    serving.await.unwrap().unwrap();
    drop(ctx);
    drop(held);
    let _ = std::fs::remove_dir_all(&dir);
    Composed {
        rate,
        times: all,
        caught_up,
        cpu,
    }
}
