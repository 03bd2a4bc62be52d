//! storebench: compares embedded key-value stores on the moments document
//! workload (see README.md). Run with `cargo run --release` from this folder;
//! optional arguments pick stores: `cargo run --release -- redb sqlite`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod stores;

/// First 16-digit id; post ids are BASE + n, author ids AUTHOR_BASE + n.
const BASE: u64 = 1_000_000_000_000_000;
const AUTHOR_BASE: u64 = 2_000_000_000_000_000;
const AUTHORS: u64 = 100; // 100k posts / 100 authors = ~1,000 index entries each
const LOAD_DOCS: u64 = 100_000;
const LOAD_BATCH: usize = 10_000;
const SEQ_WRITES: u64 = 2_000;
const CONC_THREADS: u64 = 4;
const CONC_PER_THREAD: u64 = 500;
const READ_THREADS: usize = 2;
const READS_PER_THREAD: usize = 200_000;
const RANGE_REPS: usize = 50_000;
const RANGE_LIMIT: usize = 20;
const RANGE_AUTHOR: u64 = AUTHOR_BASE + 7;
const DOC_LEN: usize = 300;
const REOPENS: usize = 3;

/// One post: id, author, ~300-byte JSON document.
pub struct Item {
    pub id: u64,
    pub author: u64,
    pub doc: Vec<u8>,
}

/// A per-thread handle (SQLite connections are not Sync; the others just
/// borrow the shared database).
pub trait Session {
    /// Writes all items (document + (author, id) index entry each) in ONE
    /// transaction, durable on disk when this returns.
    fn put(&mut self, items: &[Item]);
    /// Point read of one document in its own read transaction / snapshot;
    /// returns the value length.
    fn get(&mut self, id: u64) -> Option<usize>;
    /// Newest `limit` post ids of `author` from the index, newest first.
    fn newest(&mut self, author: u64, limit: usize) -> Vec<u64>;
}

pub trait Store: Sync + Sized {
    const NAME: &'static str;
    fn open(dir: &Path) -> Self;
    fn session(&self) -> Box<dyn Session + '_>;
}

fn doc(id: u64, author: u64) -> Vec<u8> {
    let mut s = format!(
        "{{\"postId\":{id},\"uid\":{author},\"createTime\":{},\"visibility\":0,\
         \"location\":\"Shanghai\",\"deviceModel\":\"iPhone 15\",\"images\":[],\
         \"likes_postid\":[],\"comments_postid\":[],\"content\":\"",
        1_764_400_000_000u64 + id % 1_000_000
    );
    let mut n = id;
    while s.len() < DOC_LEN - 2 {
        n = splitmix(n);
        s.push((b'a' + (n % 26) as u8) as char);
    }
    s.push_str("\"}");
    debug_assert_eq!(s.len(), DOC_LEN);
    s.into_bytes()
}

fn item(n: u64) -> Item {
    let id = BASE + n;
    let author = AUTHOR_BASE + n % AUTHORS;
    Item { id, author, doc: doc(id, author) }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn dir_size(p: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(p).expect("read_dir") {
        let e = e.expect("entry");
        let md = e.metadata().expect("metadata");
        if md.is_dir() {
            total += dir_size(&e.path());
        } else {
            total += md.len();
        }
    }
    total
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[derive(Default, Clone)]
struct Results {
    name: &'static str,
    load_s: f64,
    size_mb: f64,
    reopen_ms: f64,
    reads_s: f64,
    range_s: f64,
    seq_w_s: f64,
    seq_p50_ms: f64,
    seq_p99_ms: f64,
    seq_max_ms: f64,
    conc_w_s: f64,
    conc_p99_ms: f64,
    conc_max_ms: f64,
    seq_kib_per_write: f64,
}

/// Bytes this process has handed to write syscalls (Linux /proc/self/io
/// `wchar`; all threads, including background ones).
fn proc_write_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("wchar:").map(|v| v.trim().parse().ok()))
                .flatten()
        })
        .unwrap_or(0)
}

/// Per-metric median over rounds.
fn median(rs: &[Results]) -> Results {
    fn med(rs: &[Results], f: impl Fn(&Results) -> f64) -> f64 {
        let mut v: Vec<f64> = rs.iter().map(f).collect();
        v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
        v[v.len() / 2]
    }
    Results {
        name: rs[0].name,
        load_s: med(rs, |r| r.load_s),
        size_mb: med(rs, |r| r.size_mb),
        reopen_ms: med(rs, |r| r.reopen_ms),
        reads_s: med(rs, |r| r.reads_s),
        range_s: med(rs, |r| r.range_s),
        seq_w_s: med(rs, |r| r.seq_w_s),
        seq_p50_ms: med(rs, |r| r.seq_p50_ms),
        seq_p99_ms: med(rs, |r| r.seq_p99_ms),
        seq_max_ms: med(rs, |r| r.seq_max_ms),
        conc_w_s: med(rs, |r| r.conc_w_s),
        conc_p99_ms: med(rs, |r| r.conc_p99_ms),
        conc_max_ms: med(rs, |r| r.conc_max_ms),
        seq_kib_per_write: med(rs, |r| r.seq_kib_per_write),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run<S: Store>() -> Results {
    let dir: PathBuf = std::env::temp_dir().join(format!("storebench-{}-{}", S::NAME, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut r = Results { name: S::NAME, ..Default::default() };
    eprintln!("== {} in {}", S::NAME, dir.display());

    // Bulk load: 100k documents in transactions of 10k.
    {
        let store = S::open(&dir);
        let mut s = store.session();
        let t = Instant::now();
        let mut n = 0;
        while n < LOAD_DOCS {
            let batch: Vec<Item> = (n..(n + LOAD_BATCH as u64).min(LOAD_DOCS)).map(item).collect();
            s.put(&batch);
            n += LOAD_BATCH as u64;
        }
        r.load_s = t.elapsed().as_secs_f64();
        assert_eq!(s.get(BASE + 12_345), Some(DOC_LEN));
    } // closed here
    r.size_mb = dir_size(&dir) as f64 / 1e6;
    eprintln!("  load {:.2}s, size {:.1} MB", r.load_s, r.size_mb);

    // Reopen: open + one read, median of REOPENS runs.
    let mut reopens = Vec::new();
    for _ in 0..REOPENS {
        let t = Instant::now();
        let store = S::open(&dir);
        assert_eq!(store.session().get(BASE + 54_321), Some(DOC_LEN));
        reopens.push(t.elapsed());
        drop(store);
    }
    reopens.sort();
    r.reopen_ms = ms(reopens[REOPENS / 2]);
    eprintln!("  reopen {:.1} ms (runs: {:?})", r.reopen_ms, reopens);

    let store = S::open(&dir);

    // Point reads: 2 threads x 200k random gets, each in its own read txn.
    {
        let t = Instant::now();
        std::thread::scope(|sc| {
            for th in 0..READ_THREADS {
                let store = &store;
                sc.spawn(move || {
                    let mut s = store.session();
                    let mut x = 42 + th as u64;
                    for _ in 0..READS_PER_THREAD {
                        x = splitmix(x);
                        let got = s.get(BASE + x % LOAD_DOCS);
                        assert_eq!(black_box(got), Some(DOC_LEN));
                    }
                });
            }
        });
        let el = t.elapsed();
        r.reads_s = (READ_THREADS * READS_PER_THREAD) as f64 / el.as_secs_f64();
        eprintln!("  point reads {:.0}/s", r.reads_s);
    }

    // Range: newest 20 index entries of one author (~1,000 entries).
    {
        let mut s = store.session();
        let first = s.newest(RANGE_AUTHOR, RANGE_LIMIT);
        assert_eq!(first.len(), RANGE_LIMIT);
        assert_eq!(first[0], BASE + (LOAD_DOCS - AUTHORS) + 7);
        assert!(first.windows(2).all(|w| w[0] > w[1]));
        let t = Instant::now();
        for _ in 0..RANGE_REPS {
            let v = s.newest(RANGE_AUTHOR, RANGE_LIMIT);
            assert_eq!(black_box(v).len(), RANGE_LIMIT);
        }
        r.range_s = RANGE_REPS as f64 / t.elapsed().as_secs_f64();
        eprintln!("  range {:.0}/s", r.range_s);
    }

    // Durable sequential writes: 2,000 single-document transactions.
    {
        let items: Vec<Item> = (LOAD_DOCS..LOAD_DOCS + SEQ_WRITES).map(item).collect();
        let mut s = store.session();
        let mut lat = Vec::with_capacity(items.len());
        let wb = proc_write_bytes();
        let t = Instant::now();
        for it in &items {
            let t0 = Instant::now();
            s.put(std::slice::from_ref(it));
            lat.push(t0.elapsed());
        }
        let el = t.elapsed();
        r.seq_kib_per_write = (proc_write_bytes() - wb) as f64 / 1024.0 / SEQ_WRITES as f64;
        lat.sort();
        r.seq_w_s = SEQ_WRITES as f64 / el.as_secs_f64();
        r.seq_p50_ms = ms(pct(&lat, 50));
        r.seq_p99_ms = ms(pct(&lat, 99));
        r.seq_max_ms = ms(lat[lat.len() - 1]);
        eprintln!(
            "  seq writes {:.0}/s p50 {:.3} ms p99 {:.3} ms max {:.3} ms, {:.1} KiB passed to write syscalls/write",
            r.seq_w_s, r.seq_p50_ms, r.seq_p99_ms, r.seq_max_ms, r.seq_kib_per_write
        );
    }

    // Durable concurrent writes: 4 threads x 500 single-document txns.
    {
        let start = LOAD_DOCS + SEQ_WRITES;
        let per: Vec<Vec<Item>> = (0..CONC_THREADS)
            .map(|th| {
                let a = start + th * CONC_PER_THREAD;
                (a..a + CONC_PER_THREAD).map(item).collect()
            })
            .collect();
        let t = Instant::now();
        let mut lat: Vec<Duration> = std::thread::scope(|sc| {
            let hs: Vec<_> = per
                .iter()
                .map(|items| {
                    let store = &store;
                    sc.spawn(move || {
                        let mut s = store.session();
                        let mut lat = Vec::with_capacity(items.len());
                        for it in items {
                            let t0 = Instant::now();
                            s.put(std::slice::from_ref(it));
                            lat.push(t0.elapsed());
                        }
                        lat
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().expect("thread")).collect()
        });
        let el = t.elapsed();
        lat.sort();
        r.conc_w_s = (CONC_THREADS * CONC_PER_THREAD) as f64 / el.as_secs_f64();
        r.conc_p99_ms = ms(pct(&lat, 99));
        r.conc_max_ms = ms(lat[lat.len() - 1]);
        eprintln!(
            "  concurrent writes {:.0}/s p99 {:.3} ms max {:.3} ms",
            r.conc_w_s, r.conc_p99_ms, r.conc_max_ms
        );
        let mut s = store.session();
        let last = BASE + start + CONC_THREADS * CONC_PER_THREAD - 1;
        assert_eq!(s.get(last), Some(DOC_LEN));
    }

    drop(store);
    std::fs::remove_dir_all(&dir).expect("cleanup");
    r
}

fn main() {
    // Arguments: store names to run (default all) and `--rounds N` (default 9).
    // Each round runs the chosen stores one after another, never in parallel;
    // the table shows the per-metric median over rounds.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 9usize;
    if let Some(i) = args.iter().position(|a| a == "--rounds") {
        rounds = args.get(i + 1).and_then(|n| n.parse().ok()).expect("--rounds N");
        args.drain(i..i + 2);
    }
    let want = |n: &str| args.is_empty() || args.iter().any(|a| a == n);
    let names = ["redb", "fjall", "sled", "sqlite"];
    let mut per: Vec<Vec<Results>> = vec![Vec::new(); names.len()];
    for round in 1..=rounds {
        eprintln!("### round {round}/{rounds}");
        for (i, n) in names.iter().enumerate() {
            if !want(n) {
                continue;
            }
            per[i].push(match i {
                0 => run::<stores::Redb>(),
                1 => run::<stores::Fjall>(),
                2 => run::<stores::Sled>(),
                _ => run::<stores::Sqlite>(),
            });
        }
    }
    println!("median of {rounds} round(s)");
    println!(
        "| store | seq durable writes/s | seq p50 ms | seq p99 ms | seq max ms | 4-thread durable writes/s \
         | 4-thread p99 ms | 4-thread max ms | point reads/s (2 thr) | newest-20 range ops/s \
         | size after 100k load MB | reopen ms | bulk load 100k s | KiB written (syscalls) per seq write |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for rs in per.iter().filter(|v| !v.is_empty()) {
        let r = median(rs);
        println!(
            "| {} | {:.0} | {:.3} | {:.3} | {:.2} | {:.0} | {:.3} | {:.2} | {:.0} | {:.0} | {:.1} | {:.1} | {:.2} | {:.1} |",
            r.name, r.seq_w_s, r.seq_p50_ms, r.seq_p99_ms, r.seq_max_ms, r.conc_w_s, r.conc_p99_ms,
            r.conc_max_ms, r.reads_s, r.range_s, r.size_mb, r.reopen_ms, r.load_s, r.seq_kib_per_write
        );
    }
}
