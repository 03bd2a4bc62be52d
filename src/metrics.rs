//! Prometheus metrics: what the service counts, and the text `GET /metrics`
//! answers.
//!
//! Recorded through the `metrics` facade and rendered by
//! `metrics-exporter-prometheus` without a listener of its own: the scrape
//! is an actix route like any other, admin-only on the main port or open on
//! `MOMENTS_METRICS_LISTEN`. The recorder is global to the process, so every
//! app in it (tests spawn many) records into one registry.
//!
//! Every label value comes from a fixed set (route templates, port and
//! method names, kinds of key, budget names), never from a request: a
//! client cannot grow the number of series.

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock, RwLock};
use std::time::Duration;

use ::metrics::{
    counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Counter,
    Histogram,
};
use actix_web::http::{Method, StatusCode};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub const HTTP_REQUESTS: &str = "moments_http_requests_total";
pub const HTTP_SECONDS: &str = "moments_http_request_duration_seconds";
pub const STORE_ROUND_TRIPS: &str = "moments_store_round_trips_total";
pub const STORE_SECONDS: &str = "moments_store_round_trip_duration_seconds";
pub const LIVE_HITS: &str = "moments_live_hits_total";
pub const LIVE_MISSES: &str = "moments_live_misses_total";
pub const LIVE_REBUILDS: &str = "moments_live_rebuilds_total";
pub const NEAR_HITS: &str = "moments_near_cache_hits_total";
pub const NEAR_STALE: &str = "moments_near_cache_stale_total";
pub const FAN_OUT_PUSHED: &str = "moments_fan_out_timelines_pushed_total";
pub const FAN_OUT_MISSED: &str = "moments_fan_out_timelines_missed_total";
pub const FAN_OUT_FAILURES: &str = "moments_fan_out_failures_total";
pub const FAN_OUTS_IN_FLIGHT: &str = "moments_fan_outs_in_flight";
pub const REPAIR_PENDING: &str = "moments_live_repair_pending";
pub const RATE_LIMIT_REJECTIONS: &str = "moments_rate_limit_rejections_total";
pub const VIEWS_UNCOUNTED: &str = "moments_views_uncounted_total";
pub const OLDEST_OPEN_REPORT: &str = "moments_moderation_oldest_open_seconds";
pub const STREAMS_OPEN: &str = "moments_streams_open";
pub const STREAM_EVENTS: &str = "moments_stream_events_sent_total";
pub const STREAM_SLOW_READERS: &str = "moments_stream_slow_readers_dropped_total";
pub const STREAM_RESUMES: &str = "moments_stream_resumes_total";
pub const STREAM_RESETS: &str = "moments_stream_resets_total";
pub const STREAMS_REFUSED: &str = "moments_streams_refused_total";
pub const STREAM_ANNOUNCE_FAILURES: &str = "moments_stream_announce_failures_total";
pub const STREAM_PULLED_WALKS: &str = "moments_stream_pulled_walks_total";
pub const EXPORT_RUNS: &str = "moments_export_runs_total";
pub const EXPORTS_ENDED: &str = "moments_exports_ended_total";
pub const EXPORT_BYTES: &str = "moments_export_bytes_total";
/// The names Prometheus's own clients give these, so stock dashboards work.
pub const RESIDENT_BYTES: &str = "process_resident_memory_bytes";
pub const VIRTUAL_BYTES: &str = "process_virtual_memory_bytes";

/// The route label of a request that matched no route: its raw path would
/// let any client mint a series per URL.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Requests: from a warm read (about a millisecond) to a slow import.
const HTTP_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Store round trips: the embedded stores answer in microseconds, a
/// network store in a fraction of a millisecond.
const STORE_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// Without a scrape the histograms' samples pile up until this drains them.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's recorder, once; later calls return the same handle.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let builder = [(HTTP_SECONDS, HTTP_BUCKETS), (STORE_SECONDS, STORE_BUCKETS)]
            .into_iter()
            .try_fold(PrometheusBuilder::new(), |b, (name, buckets)| {
                b.set_buckets_for_metric(Matcher::Full(name.to_string()), buckets)
            });
        let recorder = match builder {
            Ok(b) => b.build_recorder(),
            Err(e) => {
                tracing::warn!(error = %e, "histogram buckets refused; latencies are summaries");
                PrometheusBuilder::new().build_recorder()
            }
        };
        let handle = recorder.handle();
        if let Err(e) = ::metrics::set_global_recorder(recorder) {
            tracing::warn!(error = %e, "another metrics recorder is installed; /metrics stays empty");
        }
        describe();
        // Series that may stay at zero for days are shown from the start,
        // so that a rate or an alert over them has something to read.
        for name in [
            FAN_OUT_PUSHED,
            FAN_OUT_MISSED,
            FAN_OUT_FAILURES,
            VIEWS_UNCOUNTED,
            STREAM_SLOW_READERS,
            STREAM_RESUMES,
            STREAM_RESETS,
            STREAMS_REFUSED,
            STREAM_ANNOUNCE_FAILURES,
        ] {
            counter!(name).increment(0);
        }
        gauge!(FAN_OUTS_IN_FLIGHT).increment(0.0);
        gauge!(STREAMS_OPEN).increment(0.0);
        let upkeep = handle.clone();
        let spawned = std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || loop {
                std::thread::sleep(UPKEEP_EVERY);
                upkeep.run_upkeep();
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no metrics upkeep thread; histograms drain on scrape only");
        }
        handle
    })
}

fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests answered, by route template, method and status"
    );
    describe_histogram!(
        HTTP_SECONDS,
        ::metrics::Unit::Seconds,
        "Time to answer an HTTP request, by route template, method and status"
    );
    describe_counter!(
        STORE_ROUND_TRIPS,
        "Calls that reached a store, by port and operation, background ones included"
    );
    describe_histogram!(
        STORE_SECONDS,
        ::metrics::Unit::Seconds,
        "Time of a store round trip, by port and operation"
    );
    describe_counter!(LIVE_HITS, "Live keys read and found, by kind of key");
    describe_counter!(
        LIVE_MISSES,
        "Live keys read and found absent, by kind of key"
    );
    describe_counter!(
        LIVE_REBUILDS,
        "Live keys built from the documents instead (absent, awaiting repair, or the live store failed), by kind of key"
    );
    describe_counter!(
        NEAR_HITS,
        "Live keys served from this instance's near cache, their owner's generation unchanged, by kind of key"
    );
    describe_counter!(
        NEAR_STALE,
        "Near-cache copies found outdated by their owner's generation and read again, by kind of key"
    );
    describe_counter!(FAN_OUT_PUSHED, "Home timelines a new post was pushed to");
    describe_counter!(
        VIEWS_UNCOUNTED,
        "Views not counted because this instance's buffer of views to write was full"
    );
    describe_counter!(
        FAN_OUT_MISSED,
        "Home timelines a push failed to reach, dropped to be rebuilt on read"
    );
    describe_counter!(
        FAN_OUT_FAILURES,
        "Fan-outs a store failure stopped early: saved where they got to, for a sweep to resume"
    );
    describe_gauge!(
        FAN_OUTS_IN_FLIGHT,
        "Fan-outs running in the background, resumed ones included"
    );
    describe_gauge!(
        REPAIR_PENDING,
        "Owners whose live keys await dropping after a failed live update"
    );
    describe_counter!(
        RATE_LIMIT_REJECTIONS,
        "Requests refused with 429, by the budget (MOMENTS_RATE_*) that refused them"
    );
    describe_gauge!(
        OLDEST_OPEN_REPORT,
        ::metrics::Unit::Seconds,
        "Age of the oldest open item in the moderation queue (0 when none): the response window an operator watches"
    );
    describe_gauge!(STREAMS_OPEN, "Live-update streams this instance holds open");
    describe_counter!(
        STREAM_EVENTS,
        "Events written to live-update streams, by event name"
    );
    describe_counter!(
        STREAM_SLOW_READERS,
        "Live-update streams disconnected because their client stopped reading (it resumes from its last event)"
    );
    describe_counter!(
        STREAM_RESUMES,
        "Live-update streams that resumed after a Last-Event-ID with nothing missed"
    );
    describe_counter!(
        STREAM_RESETS,
        "reset events sent: a stream could not resume (its id fell out of the log, or the log was lost)"
    );
    describe_counter!(
        STREAMS_REFUSED,
        "Live-update streams refused with 503 because this instance holds MOMENTS_STREAM_PER_INSTANCE"
    );
    describe_counter!(
        STREAM_ANNOUNCE_FAILURES,
        "Live updates that could not be logged or announced (the live store failed); the writes stand"
    );
    describe_counter!(
        STREAM_PULLED_WALKS,
        "A pulled author's posts told to streams, by the side walked: the accounts with event logs (logs) or the active followers (followers)"
    );
    describe_counter!(
        EXPORT_RUNS,
        "Data export runs started here, by whether it was the export's first (a later one follows a failure or an instance that died)"
    );
    describe_counter!(EXPORTS_ENDED, "Data exports ended here, ready or failed");
    describe_counter!(
        EXPORT_BYTES,
        ::metrics::Unit::Bytes,
        "Bytes of the archives made ready here"
    );
    describe_gauge!(
        RESIDENT_BYTES,
        ::metrics::Unit::Bytes,
        "Resident set size of the process"
    );
    describe_gauge!(
        VIRTUAL_BYTES,
        ::metrics::Unit::Bytes,
        "Virtual memory size of the process"
    );
}

/// How long the oldest open case has waited, as of the last look.
pub fn oldest_open_report(seconds: f64) {
    gauge!(OLDEST_OPEN_REPORT).set(seconds);
}

/// The scrape: gauges read now, then everything in Prometheus text format.
pub fn render(repair_pending: usize) -> String {
    let handle = install();
    gauge!(REPAIR_PENDING).set(repair_pending as f64);
    if let Some(memory) = process_memory() {
        gauge!(RESIDENT_BYTES).set(memory.resident as f64);
        gauge!(VIRTUAL_BYTES).set(memory.virtual_size as f64);
    }
    handle.render()
}

/// A method label from a fixed set: actix accepts any token as a method.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// A series' counter and latency histogram, looked up in the registry once:
/// building a key and finding it on every request and every store call
/// cost about a tenth of a warm read (BENCHMARKS.md).
#[derive(Clone)]
struct Series {
    count: Counter,
    seconds: Histogram,
}

impl Series {
    fn record(&self, took: Duration) {
        self.count.increment(1);
        self.seconds.record(took.as_secs_f64());
    }
}

/// The handle (a series, a counter) of `key`, made by `make` the first
/// time. Label sets are bounded (see the module's comment), so the cache is
/// too.
fn cached<K: std::hash::Hash + Eq, V: Clone>(
    cache: &RwLock<HashMap<K, V>>,
    key: K,
    make: impl FnOnce(&K) -> V,
) -> V {
    if let Some(series) = cache.read().ok().and_then(|c| c.get(&key).cloned()) {
        return series;
    }
    // Handles made before the recorder is installed would record nowhere.
    install();
    let series = make(&key);
    if let Ok(mut c) = cache.write() {
        c.entry(key).or_insert_with(|| series.clone());
    }
    series
}

type HttpKey = (String, &'static str, u16);
static HTTP_SERIES: LazyLock<RwLock<HashMap<HttpKey, Series>>> = LazyLock::new(Default::default);
static STORE_SERIES: LazyLock<RwLock<HashMap<(&'static str, &'static str), Series>>> =
    LazyLock::new(Default::default);

/// One answered request. `route` is the matched route template
/// (`/api/v1/posts/{id}`), `None` when no route matched.
pub fn http_request(route: Option<String>, method: &Method, status: StatusCode, took: Duration) {
    let route = route.unwrap_or_else(|| UNMATCHED_ROUTE.to_string());
    let key = (route, method_label(method), status.as_u16());
    cached(&HTTP_SERIES, key, |(route, method, status)| {
        let labels = [
            ("route", route.clone()),
            ("method", method.to_string()),
            ("status", status.to_string()),
        ];
        Series {
            count: counter!(HTTP_REQUESTS, &labels),
            seconds: histogram!(HTTP_SECONDS, &labels),
        }
    })
    .record(took);
}

/// One call that reached a store: `port` is the trait, `op` the method.
pub fn store_round_trip(port: &'static str, op: &'static str, took: Duration) {
    cached(&STORE_SERIES, (port, op), |(port, op)| Series {
        count: counter!(STORE_ROUND_TRIPS, "port" => *port, "op" => *op),
        seconds: histogram!(STORE_SECONDS, "port" => *port, "op" => *op),
    })
    .record(took);
}

static LIVE_COUNTERS: LazyLock<RwLock<HashMap<(&'static str, &'static str), Counter>>> =
    LazyLock::new(Default::default);

/// The counter `name` of keys of `kind`, looked up once: finding it in the
/// recorder's registry on every read (hashing its labels) was 2% of a
/// worker's CPU.
fn live_counter(name: &'static str, kind: &'static str) -> Counter {
    cached(
        &LIVE_COUNTERS,
        (name, kind),
        |(name, kind)| counter!(*name, "key" => *kind),
    )
}

/// The live lookups of one batched read, tallied by kind of key and
/// recorded at once: a page reads a hundred keys of a few kinds.
#[derive(Default)]
pub struct LiveLookups {
    /// (kind, [hits, misses, rebuilds, near-cache hits, near-cache copies
    /// found outdated])
    by_kind: Vec<(&'static str, [u64; 5])>,
}

impl LiveLookups {
    fn entry(&mut self, kind: &'static str) -> &mut [u64; 5] {
        let at = match self.by_kind.iter().position(|e| e.0 == kind) {
            Some(i) => i,
            None => {
                self.by_kind.push((kind, [0; 5]));
                self.by_kind.len() - 1
            }
        };
        &mut self.by_kind[at].1
    }

    pub fn hit(&mut self, kind: &'static str) {
        self.entry(kind)[0] += 1;
    }

    pub fn miss(&mut self, kind: &'static str) {
        self.entry(kind)[1] += 1;
    }

    /// Built from the documents instead of the live store.
    pub fn rebuilt(&mut self, kind: &'static str) {
        self.entry(kind)[2] += 1;
    }

    /// Served from this instance's copy, its owner's generation unchanged.
    pub fn near_hit(&mut self, kind: &'static str) {
        self.entry(kind)[3] += 1;
    }

    /// This instance's copy was outdated: read again.
    pub fn near_stale(&mut self, kind: &'static str) {
        self.entry(kind)[4] += 1;
    }

    pub fn record(self) {
        for (kind, [hits, misses, rebuilds, near_hits, near_stale]) in self.by_kind {
            for (name, n) in [
                (LIVE_HITS, hits),
                (LIVE_MISSES, misses),
                (LIVE_REBUILDS, rebuilds),
                (NEAR_HITS, near_hits),
                (NEAR_STALE, near_stale),
            ] {
                if n > 0 {
                    live_counter(name, kind).increment(n);
                }
            }
        }
    }
}

/// A fan-out running: counted in the gauge from `start` until dropped, so
/// one that panics or is cancelled leaves it too.
pub struct FanOutInFlight(());

impl FanOutInFlight {
    pub fn start() -> Self {
        gauge!(FAN_OUTS_IN_FLIGHT).increment(1.0);
        Self(())
    }
}

impl Drop for FanOutInFlight {
    fn drop(&mut self) {
        gauge!(FAN_OUTS_IN_FLIGHT).decrement(1.0);
    }
}

/// A data export run started; `attempt` 1 is the export's first.
pub fn export_started(attempt: i64) {
    let which = if attempt <= 1 { "first" } else { "retry" };
    counter!(EXPORT_RUNS, "run" => which).increment(1);
}

/// A data export ended, `state` ready or failed, with its archive's size.
pub fn export_ended(state: &'static str, bytes: u64) {
    counter!(EXPORTS_ENDED, "state" => state).increment(1);
    counter!(EXPORT_BYTES).increment(bytes);
}

pub fn stream_opened() {
    gauge!(STREAMS_OPEN).increment(1.0);
}

pub fn stream_closed() {
    gauge!(STREAMS_OPEN).decrement(1.0);
}

/// An event written to a stream; `event` is one of the documented names.
pub fn stream_event_sent(event: &'static str) {
    counter!(STREAM_EVENTS, "event" => event).increment(1);
}

pub fn stream_slow_reader_dropped() {
    counter!(STREAM_SLOW_READERS).increment(1);
}

pub fn stream_resumed() {
    counter!(STREAM_RESUMES).increment(1);
}

pub fn stream_reset() {
    counter!(STREAM_RESETS).increment(1);
}

pub fn stream_refused() {
    counter!(STREAMS_REFUSED).increment(1);
}

pub fn stream_announce_failed() {
    counter!(STREAM_ANNOUNCE_FAILURES).increment(1);
}

/// A pulled author's post told to streams by walking `walk`: `logs` or
/// `followers`, whichever side was smaller.
pub fn stream_pulled_walk(walk: &'static str) {
    counter!(STREAM_PULLED_WALKS, "walk" => walk).increment(1);
}

pub fn fan_out_pushed(timelines: usize) {
    counter!(FAN_OUT_PUSHED).increment(timelines as u64);
}

pub fn fan_out_missed(timelines: usize) {
    counter!(FAN_OUT_MISSED).increment(timelines as u64);
}

pub fn view_uncounted() {
    counter!(VIEWS_UNCOUNTED).increment(1);
}

pub fn fan_out_failed() {
    counter!(FAN_OUT_FAILURES).increment(1);
}

/// A request refused by `budget`, named as its `MOMENTS_RATE_*` setting
/// (`writes`, `reads_per_ip`), so the label says what to tune.
pub fn rate_limited(budget: &'static str) {
    counter!(RATE_LIMIT_REJECTIONS, "budget" => budget).increment(1);
}

struct ProcessMemory {
    resident: u64,
    virtual_size: u64,
}

/// From `/proc/self/status`, whose sizes are in kB: `statm` counts pages,
/// and the page size would need an unsafe libc call. `None` off Linux.
fn process_memory() -> Option<ProcessMemory> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let bytes = |field: &str| -> Option<u64> {
        let line = status.lines().find_map(|l| l.strip_prefix(field))?;
        let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
        Some(kib * 1024)
    };
    Some(ProcessMemory {
        resident: bytes("VmRSS:")?,
        virtual_size: bytes("VmSize:")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_outside_the_standard_ones_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        let made_up = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&made_up), "other");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn process_memory_is_read_on_linux() {
        let m = process_memory().unwrap();
        assert!(m.resident > 0 && m.virtual_size >= m.resident);
    }
}
