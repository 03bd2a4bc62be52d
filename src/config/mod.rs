//! Typed settings read from the environment, validated once at start-up.
//!
//! [`variables`] is the one list of settings, written in a file per area
//! (`server`, `stores`, `media`, `search`, `social`, `moderation`, `stream`,
//! `account_jobs`, `rate_limits`): `from_lookup` reads exactly the variables in it,
//! `moments --help` and the README's table are generated from it, and any
//! other `MOMENTS_*` variable is warned about at start-up as a likely typo.

use std::fmt;
use std::path::PathBuf;

use crate::domain::addr::IpBlock;
use crate::domain::user::{Password, Username};
pub use crate::store::objects::S3Bucket;

mod account_jobs;
mod media;
mod moderation;
mod rate_limits;
mod search;
mod server;
mod social;
mod stores;
mod stream;

#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// A budget: at most `count` in each window of `window_secs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub window_secs: u64,
}

impl Rate {
    pub const fn new(count: u32, window_secs: u64) -> Self {
        Self { count, window_secs }
    }

    /// `10/15m`, `120/1m`, `200/1h`, `5/30s`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let (count, window) = raw
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("{raw:?} is not COUNT/WINDOW, such as 10/15m"))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| format!("{raw:?}: the count must be a whole number"))?;
        let window = window.trim();
        let split = window
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(window.len());
        let (n, unit) = window.split_at(split);
        let n: u64 = if n.is_empty() {
            1
        } else {
            n.parse().map_err(|_| format!("{raw:?}: bad window"))?
        };
        let unit_secs = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return Err(format!("{raw:?}: the window's unit must be s, m, h or d")),
        };
        if n == 0 {
            return Err(format!("{raw:?}: the window must be longer than 0"));
        }
        Ok(Self::new(count, n * unit_secs))
    }
}

/// Request budgets, per account and per client address (`MOMENTS_RATE_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimits {
    /// Failed sign-ins per account, whatever the address.
    pub login_failures: Rate,
    /// Sign-in attempts per address.
    pub logins_per_ip: Rate,
    /// Registrations per address: enough for a school or office behind one.
    pub signups_per_ip: Rate,
    /// Writes (posts, comments, likes, follows, blocks…) per account.
    pub writes: Rate,
    pub writes_per_ip: Rate,
    /// Reads per account.
    pub reads: Rate,
    pub reads_per_ip: Rate,
    /// Lookups of someone by username per account: far below reads, so
    /// the lookup cannot walk a list of names at read speed.
    pub user_lookups: Rate,
    /// Reports filed per account: enough for anyone reporting in good
    /// faith, too few to bury the moderators.
    pub reports: Rate,
    /// Rows of imported lists (previews and imports alike) per account:
    /// each names someone by username, so this bounds how many names an
    /// account can try, as `user_lookups` does for one at a time.
    pub import_rows: Rate,
    /// Bytes of pictures uploaded per account: the media quota.
    pub media_bytes: Rate,
    /// Searches per account: each asks the index and checks every hit.
    pub searches: Rate,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            login_failures: Rate::new(10, 15 * 60),
            logins_per_ip: Rate::new(300, 15 * 60),
            signups_per_ip: Rate::new(300, 3600),
            writes: Rate::new(120, 60),
            writes_per_ip: Rate::new(1200, 60),
            reads: Rate::new(1200, 60),
            reads_per_ip: Rate::new(6000, 60),
            user_lookups: Rate::new(30, 60),
            reports: Rate::new(50, 24 * 3600),
            import_rows: Rate::new(20_000, 24 * 3600),
            media_bytes: Rate::new(1 << 30, 24 * 3600),
            searches: Rate::new(60, 60),
        }
    }
}

/// How log lines are written (`MOMENTS_LOG_FORMAT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub listen: String,
    pub mongodb_uri: Option<String>,
    pub mongodb_db: String,
    pub redis_url: Option<String>,
    /// Prepended to every Redis key, so several deployments (or test apps)
    /// can share one Redis without seeing each other's state.
    pub redis_prefix: String,
    pub data_dir: PathBuf,
    /// Pages of the embedded store's file kept in memory (redb's cache).
    pub docs_cache_bytes: usize,
    pub admin: Option<(String, Secret)>,
    /// Request bodies above this many bytes are refused with 413, except
    /// where an operation's valid bodies are larger.
    pub body_limit: usize,
    /// How long derived keys live in Redis without being rebuilt.
    pub live_ttl_secs: u64,
    /// How many ids a post keeps in `comments_postid` / `likes_postid`.
    pub post_id_array_cap: usize,
    /// How often each instance checks whether an admin changed the device table.
    pub device_refresh_ms: u64,
    /// HTTP worker threads; `None` is one per core.
    pub workers: Option<usize>,
    /// Cached values the in-process live state holds before it starts over.
    pub live_max_entries: usize,
    /// Bytes those values may take, as the in-process live state counts them.
    pub live_max_bytes: usize,
    /// Rate-limit counters the in-process live state keeps per budget and kind of subject.
    pub live_max_counters: usize,
    /// Copies of live values this instance keeps (`service::read::near_cache`); 0 keeps none.
    pub near_cache_entries: usize,
    /// Bytes those copies may take, roughly.
    pub near_cache_bytes: usize,
    /// Followers inactive for longer are not pushed new posts (0: push to
    /// nobody, every timeline is built on read).
    pub active_days: u64,
    /// Authors with more followers are never pushed; their posts are pulled
    /// into followers' timelines at read time.
    pub pulled_author_followers: u64,
    /// Days a closed case keeps its snapshot of what was reported.
    pub moderation_retention_days: u64,
    /// How often each instance sweeps: resumes what was cut short (fan-outs,
    /// erasures, closed moderation cases) and deletes what expired.
    pub sweep_ms: u64,
    /// How often each instance updates the oldest open case's gauge.
    pub queue_age_ms: u64,
    /// Entries a home timeline keeps in the live store; older pages come
    /// from the documents.
    pub timeline_max: usize,
    /// `None`: no rate limits (`MOMENTS_RATE_LIMITS=off`).
    pub rate_limits: Option<RateLimits>,
    /// Peers whose `X-Forwarded-For` names the client; none by default.
    pub trusted_proxies: Vec<IpBlock>,
    /// The instance bits of generated ids; `None`: leased from the documents.
    pub instance_id: Option<u16>,
    /// Accounts one account may follow.
    pub max_following: u64,
    /// Accounts one account may block.
    pub max_blocks: u64,
    /// Records of a deleted account erased before `DELETE /me` answers.
    pub erase_in_request: usize,
    /// Blockers of one user that a read of theirs takes whole; past it,
    /// reads ask only about the people at hand.
    pub blockers_read_whole: usize,
    /// How often views waiting in this instance are written, in ms.
    pub view_flush_ms: u64,
    /// Views that may wait in this instance at most.
    pub view_buffer: usize,
    /// How often queued like-array refreshes are applied, in ms.
    pub like_array_flush_ms: u64,
    /// Where `/metrics` is served without a token; `None`: on the main
    /// port, to an admin's token.
    pub metrics_listen: Option<String>,
    /// How long a stopping server waits for in-flight requests and fan-outs.
    pub shutdown_timeout_secs: u64,
    pub log_format: LogFormat,
    /// Live updates (`service::stream`).
    pub stream: StreamSettings,
    /// Data exports (`service::exports`).
    pub exports: ExportSettings,
    /// Imports of lists of people (`service::imports`).
    pub imports: ImportSettings,
    /// Uploaded pictures (`service::media`).
    pub media: MediaSettings,
    /// The search index's engine (`service::search`).
    pub search: SearchSettings,
}

/// Where the search index lives, each a `MOMENTS_OPENSEARCH_*` setting.
#[derive(Debug, Clone)]
pub struct SearchSettings {
    /// An OpenSearch cluster; `None`: an index under `data_dir/search`.
    pub opensearch_url: Option<String>,
    /// The posts' index on it.
    pub opensearch_index: String,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            opensearch_url: None,
            opensearch_index: "moments-posts".into(),
        }
    }
}

/// What an upload may be, what is kept of it and where, each a
/// `MOMENTS_MEDIA_*` or `MOMENTS_S3_*` setting.
#[derive(Debug, Clone)]
pub struct MediaSettings {
    /// Bytes an uploaded file may have.
    pub max_bytes: usize,
    /// Pixels (width × height) an uploaded picture may have.
    pub max_pixels: u64,
    /// The longest side a stored original keeps.
    pub original_side: u32,
    /// The shorter side of a preview.
    pub preview_side: u32,
    /// Hours an upload that no post took is kept.
    pub unattached_hours: u64,
    /// Uploads one instance receives at once.
    pub uploads: usize,
    /// Of those, how many one account may have.
    pub uploads_per_account: usize,
    /// Seconds an upload's whole body may take to arrive.
    pub receive_secs: u64,
    /// Bytes of small pictures held in memory in front of the store.
    pub cache_bytes: usize,
    /// What media URLs start with, without a trailing `/`.
    pub base_url: String,
    /// An S3-compatible bucket; `None`: files under `data_dir/media`.
    pub s3: Option<S3Bucket>,
}

impl Default for MediaSettings {
    fn default() -> Self {
        Self {
            max_bytes: 16 << 20,
            max_pixels: 50_000_000,
            original_side: 4096,
            preview_side: 480,
            unattached_hours: 24,
            uploads: 16,
            uploads_per_account: 4,
            receive_secs: 300,
            cache_bytes: 32 << 20,
            base_url: "/media".into(),
            s3: None,
        }
    }
}

/// The bounds and clocks of live updates, each a `MOMENTS_STREAM_*` setting.
#[derive(Debug, Clone)]
pub struct StreamSettings {
    /// Seconds between two heartbeat lines on an idle stream.
    pub heartbeat_secs: u64,
    /// The `retry:` a stream gives: how long a client waits to reconnect.
    pub retry_ms: u64,
    /// Events each account's log keeps at most.
    pub log_events: usize,
    /// Minutes each account's log keeps an event at most.
    pub log_minutes: u64,
    /// Streams one account holds open; the oldest is closed past it.
    pub per_account: usize,
    /// Streams one instance holds open; more are refused with 503.
    pub per_instance: usize,
    /// Events a stream holds for a client that is not reading; a client
    /// that falls this far behind for long is disconnected.
    pub send_buffer: usize,
    /// Seconds a stream lives before it is closed with a `retry:`, so that
    /// clients spread over instances as they come and go.
    pub max_secs: u64,
    /// Seconds a stream ticket stays valid, unused.
    pub ticket_secs: u64,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            heartbeat_secs: 15,
            retry_ms: 3000,
            log_events: 1000,
            log_minutes: 24 * 60,
            per_account: 5,
            per_instance: 10_000,
            send_buffer: 256,
            max_secs: 3600,
            ticket_secs: 60,
        }
    }
}

/// The limits and pace of data exports, each a `MOMENTS_EXPORT_*` setting.
#[derive(Debug, Clone)]
pub struct ExportSettings {
    /// Seconds from one export an account asked for to the next it may
    /// ask for (a failed one does not count); 0: only one at a time.
    pub interval_secs: u64,
    /// Seconds a ready archive (or a failed export's reason) is kept.
    pub keep_secs: u64,
    /// Bytes an archive may reach; a bigger one fails, saying so.
    pub max_bytes: u64,
    /// Bytes in each stored chunk of an archive.
    pub chunk_bytes: usize,
    /// Records read from the stores per batch.
    pub batch: usize,
    /// Milliseconds an export pauses between batches, leaving the stores
    /// to requests.
    pub pause_ms: u64,
    /// Exports one instance runs at once.
    pub jobs: usize,
    /// Seconds an instance's claim on a running export lasts unrenewed:
    /// how long a dead instance's export waits to be taken over.
    pub claim_secs: u64,
    /// Downloads of one export an instance serves at once.
    pub downloads: usize,
}

impl Default for ExportSettings {
    fn default() -> Self {
        Self {
            interval_secs: 24 * 3600,
            keep_secs: 7 * 24 * 3600,
            max_bytes: 64 * 1024 * 1024 * 1024,
            chunk_bytes: 1024 * 1024,
            batch: 500,
            pause_ms: 0,
            jobs: 1,
            claim_secs: 30,
            downloads: 4,
        }
    }
}

/// The pace of imports of lists of people, each a `MOMENTS_IMPORT_*`
/// setting.
#[derive(Debug, Clone)]
pub struct ImportSettings {
    /// Milliseconds an import pauses between two steps, leaving the stores
    /// (and a follow's timeline work) to requests.
    pub pause_ms: u64,
    /// Imports one instance applies at once.
    pub jobs: usize,
    /// Seconds an instance's claim on a running import lasts unrenewed:
    /// how long a dead instance's import waits to be taken over.
    pub claim_secs: u64,
}

impl Default for ImportSettings {
    fn default() -> Self {
        Self {
            pause_ms: 0,
            jobs: 2,
            claim_secs: 30,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            mongodb_uri: None,
            mongodb_db: "moments".into(),
            redis_url: None,
            redis_prefix: String::new(),
            data_dir: PathBuf::from("./data"),
            docs_cache_bytes: 128 * 1024 * 1024,
            admin: None,
            body_limit: DEFAULT_BODY_LIMIT,
            live_ttl_secs: 3 * 24 * 3600,
            post_id_array_cap: 10_000,
            device_refresh_ms: 500,
            workers: None,
            live_max_entries: 1_000_000,
            live_max_bytes: 1024 * 1024 * 1024,
            live_max_counters: crate::store::embedded::live::DEFAULT_COUNTERS_PER_TABLE,
            near_cache_entries: 200_000,
            near_cache_bytes: 256 * 1024 * 1024,
            active_days: 7,
            pulled_author_followers: 10_000,
            moderation_retention_days: 365,
            sweep_ms: 300_000,
            queue_age_ms: 30_000,
            timeline_max: 800,
            rate_limits: Some(RateLimits::default()),
            trusted_proxies: Vec::new(),
            instance_id: None,
            max_following: 5000,
            max_blocks: 5000,
            erase_in_request: 2000,
            blockers_read_whole: 200,
            view_flush_ms: 1000,
            view_buffer: 10_000,
            like_array_flush_ms: 200,
            metrics_listen: None,
            shutdown_timeout_secs: 20,
            log_format: LogFormat::Text,
            stream: StreamSettings::default(),
            exports: ExportSettings::default(),
            imports: ImportSettings::default(),
            media: MediaSettings::default(),
            search: SearchSettings::default(),
        }
    }
}

/// Every setting refused, each message naming its variable and what it
/// allows.
#[derive(Debug)]
pub struct ConfigError(Vec<String>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => f.write_str(one),
            many => {
                write!(f, "{} settings are invalid:", many.len())?;
                for m in many {
                    write!(f, "\n  {m}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// A setting's value when its variable is unset.
#[derive(Clone, Copy, Debug)]
pub enum DefaultValue {
    /// A value one could set the variable to, with the same effect.
    Literal(&'static str),
    /// No value; what the service does instead ("unset", "one per core").
    Described(&'static str),
}

impl DefaultValue {
    pub fn text(&self) -> &'static str {
        match self {
            DefaultValue::Literal(s) | DefaultValue::Described(s) => s,
        }
    }
}

/// How a refused value is quoted back: some carry credentials.
#[derive(Clone, Copy, Debug)]
enum Echo {
    Plain,
    /// A URL, shown without the user and password before its `@`.
    Credentials,
    /// Only its length.
    Secret,
}

/// Why a value was refused, beyond what [`Variable::allowed`] says.
#[derive(Debug, Default)]
struct Refused(Option<String>);

type Apply = fn(&mut Draft, &str) -> Result<(), Refused>;

/// One `MOMENTS_*` setting.
#[derive(Debug)]
pub struct Variable {
    pub name: &'static str,
    pub default: DefaultValue,
    /// What a value must be, worded to follow "must be".
    pub allowed: &'static str,
    /// What the setting does.
    pub meaning: &'static str,
    echo: Echo,
    apply: Apply,
}

impl Variable {
    fn refusal(&self, raw: &str, why: Refused) -> String {
        let got = match self.echo {
            Echo::Plain => format!("{raw:?}"),
            Echo::Credentials => format!("{:?}", without_credentials(raw)),
            Echo::Secret => format!("{} characters", raw.chars().count()),
        };
        match why.0 {
            None => format!("{} must be {}; got {got}", self.name, self.allowed),
            Some(detail) => format!(
                "{} must be {}; got {got} ({detail})",
                self.name, self.allowed
            ),
        }
    }
}

/// Settings being read. The admin pair and the rate budgets are only
/// settled once every variable has been seen.
struct Draft {
    settings: Settings,
    rate_limits_on: bool,
    rates: RateLimits,
    admin_username: Option<String>,
    admin_password: Option<Secret>,
    /// The S3 settings read so far; settled into `settings.media.s3` once
    /// all are.
    s3: S3Bucket,
    /// Whether any `MOMENTS_S3_*` that needs the rest was set.
    s3_given: bool,
}

/// `MOMENTS_BODY_LIMIT` unset: request bodies above this many bytes are
/// refused, except on the few operations whose valid bodies are larger
/// (`http::extract::LARGER_BODIES`).
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

const RATE: &str = "COUNT/WINDOW, such as 10/15m (the window in s, m, h or d)";
const HOST_PORT: &str =
    "HOST:PORT, such as 0.0.0.0:8080 (an IPv6 host in brackets; port 0 picks a \
                         free port)";

/// Every setting, by area; `--help` and the README list them in this order.
const AREAS: &[&[Variable]] = &[
    server::VARIABLES,
    stores::VARIABLES,
    media::VARIABLES,
    search::VARIABLES,
    social::VARIABLES,
    moderation::VARIABLES,
    stream::VARIABLES,
    account_jobs::VARIABLES,
    rate_limits::VARIABLES,
];

/// Every setting: the one list `from_lookup` reads, `--help` and the
/// README's table are made from, and unknown names are checked against.
pub fn variables() -> impl Iterator<Item = &'static Variable> {
    AREAS.iter().flat_map(|area| area.iter())
}

/// The setting named exactly `name`, if there is one.
pub fn variable(name: &str) -> Option<&'static Variable> {
    variables().find(|v| v.name == name)
}

/// Settings renamed since a release, as (old name, new name). An old name
/// is still read while the new one is unset, so a deployment that set it
/// keeps its value; start-up warns to rename it.
pub const RENAMED: &[(&str, &str)] = &[(
    "MOMENTS_CELEBRITY_FOLLOWERS",
    "MOMENTS_PULLED_AUTHOR_FOLLOWERS",
)];

fn old_name_of(name: &str) -> Option<&'static str> {
    RENAMED
        .iter()
        .find(|(_, new)| *new == name)
        .map(|(old, _)| *old)
}

/// Digits only: `u64::from_str` would also take `+5`.
fn whole(v: &str, min: u64, max: u64) -> Result<u64, Refused> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refused::default());
    }
    let n: u64 = v.parse().map_err(|_| Refused::default())?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(Refused::default())
    }
}

fn whole_usize(v: &str, min: usize, max: usize) -> Result<usize, Refused> {
    let n = whole(v, min as u64, max as u64)?;
    usize::try_from(n).map_err(|_| Refused::default())
}

/// One of `choices`, in any case.
fn one_of<T: Copy>(v: &str, choices: &[(&str, T)]) -> Result<T, Refused> {
    let v = v.trim();
    choices
        .iter()
        .find(|(word, _)| word.eq_ignore_ascii_case(v))
        .map(|(_, value)| *value)
        .ok_or_else(Refused::default)
}

fn rate(v: &str) -> Result<Rate, Refused> {
    Rate::parse(v).map_err(|_| Refused::default())
}

/// `HOST:PORT`; whether the host resolves is left to binding it.
fn host_port(v: &str) -> Result<String, Refused> {
    let v = v.trim();
    let (host, port) = v.rsplit_once(':').ok_or_else(Refused::default)?;
    let port_ok =
        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok();
    let host_ok = match host.strip_prefix('[') {
        Some(inner) => inner
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok()),
        None => {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        }
    };
    if port_ok && host_ok {
        Ok(v.to_string())
    } else {
        Err(Refused::default())
    }
}

/// A URL in one of `schemes`, with something after the scheme.
fn url(v: &str, schemes: &[&str]) -> Result<String, Refused> {
    let v = v.trim();
    let ok = !v.contains(char::is_whitespace)
        && schemes.iter().any(|s| {
            v.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s)) && v.len() > s.len()
        });
    if ok {
        Ok(v.to_string())
    } else {
        Err(Refused::default())
    }
}

/// `v` with whatever precedes its last `@` (after the scheme, if any)
/// hidden, so an error or a log line never prints a store's password.
pub fn without_credentials(v: &str) -> String {
    if v.contains(',') {
        // A list of seed nodes: each its own URL.
        return v
            .split(',')
            .map(without_credentials)
            .collect::<Vec<_>>()
            .join(",");
    }
    let Some(at) = v.rfind('@') else {
        return v.to_string();
    };
    let start = v.find("://").map_or(0, |i| i + 3);
    if start > at {
        return v.to_string();
    }
    format!("{}***{}", &v[..start], &v[at..])
}

impl Settings {
    /// Reads `MOMENTS_*` variables over the defaults.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads each variable in [`variables`] through `get`, and no other.
    /// Every refused value is reported, not just the first. An empty value
    /// counts as unset (`docker compose` passes `${X:-}` as empty).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut draft = Draft {
            settings: Settings::default(),
            rate_limits_on: true,
            rates: RateLimits::default(),
            admin_username: None,
            admin_password: None,
            s3: S3Bucket {
                region: "us-east-1".into(),
                ..S3Bucket::default()
            },
            s3_given: false,
        };
        let mut errors = Vec::new();
        let mut set = Vec::new();
        for var in variables() {
            let given = |name: &str| get(name).filter(|v| !v.trim().is_empty());
            let Some(raw) = given(var.name).or_else(|| old_name_of(var.name).and_then(given))
            else {
                continue;
            };
            set.push(var.name);
            if let Err(why) = (var.apply)(&mut draft, &raw) {
                errors.push(var.refusal(&raw, why));
            }
        }
        let s3 = media::settle_s3(&draft, &mut errors);
        let mut s = draft.settings;
        let admin_set =
            ["MOMENTS_ADMIN_USERNAME", "MOMENTS_ADMIN_PASSWORD"].map(|n| set.contains(&n));
        if admin_set[0] != admin_set[1] {
            errors.push(
                "set both MOMENTS_ADMIN_USERNAME and MOMENTS_ADMIN_PASSWORD (8 to 128 \
                 characters), or neither"
                    .into(),
            );
        }
        if let (Some(u), Some(p)) = (draft.admin_username, draft.admin_password) {
            s.admin = Some((u, p));
        }
        s.media.s3 = s3;
        s.rate_limits = draft.rate_limits_on.then_some(draft.rates);
        if errors.is_empty() {
            Ok(s)
        } else {
            Err(ConfigError(errors))
        }
    }
}

/// A `MOMENTS_*` variable that is not a setting: most likely a typo, which
/// would otherwise leave the default silently in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVariable {
    pub name: String,
    /// The closest setting's name, if one is close; the new name, if
    /// `renamed`.
    pub suggestion: Option<&'static str>,
    /// An old name of a setting ([`RENAMED`]), still read.
    pub renamed: bool,
}

impl fmt::Display for UnknownVariable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (true, Some(new)) = (self.renamed, self.suggestion) {
            return write!(
                f,
                "{} is the old name of {new}; it is read while {new} is unset, so rename it",
                self.name
            );
        }
        write!(f, "{} is not a moments setting and is ignored", self.name)?;
        match self.suggestion {
            Some(s) => write!(f, "; did you mean {s}?"),
            None => f.write_str(" (moments --help lists the settings)"),
        }
    }
}

/// The names among `names` (an environment's) that look like settings but
/// are none, sorted, each with the closest setting within 3 edits.
pub fn unknown_variables<S: AsRef<str>>(
    names: impl IntoIterator<Item = S>,
) -> Vec<UnknownVariable> {
    let mut unknown: Vec<UnknownVariable> = names
        .into_iter()
        .filter_map(|name| {
            let name = name.as_ref();
            // Case-blind, so `moments_listen` is caught too.
            let upper = name.to_ascii_uppercase();
            // MOMENTS_TEST_* (MOMENTS_TEST_BACKEND, MOMENTS_TEST_MONGODB_URI…)
            // belong to the test harness, which shares its environment with
            // the apps and binaries it starts.
            if !upper.starts_with("MOMENTS_")
                || upper.starts_with("MOMENTS_TEST_")
                || variable(name).is_some()
            {
                return None;
            }
            if let Some((_, new)) = RENAMED.iter().find(|(old, _)| *old == name) {
                return Some(UnknownVariable {
                    name: name.to_string(),
                    suggestion: Some(new),
                    renamed: true,
                });
            }
            let suggestion = variables()
                .map(|v| (edit_distance(&upper, v.name), v.name))
                .filter(|(d, _)| *d <= 3)
                .min_by_key(|(d, _)| *d)
                .map(|(_, n)| n);
            Some(UnknownVariable {
                name: name.to_string(),
                suggestion,
                renamed: false,
            })
        })
        .collect();
    unknown.sort_by(|a, b| a.name.cmp(&b.name));
    unknown
}

/// Edits (insert, delete, substitute, or swap two neighbours) from `a` to
/// `b`; the swap counts as one because it is the commonest typo.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table are all the swap needs.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

/// The settings part of `moments --help`, from [`variables`], in lines of
/// at most [`HELP_WIDTH`] characters.
pub fn help_settings() -> String {
    let mut out = String::from(
        "Settings, from environment variables read at start-up (an empty value counts as\n\
         unset; a misspelt MOMENTS_ variable is warned about, not obeyed):\n",
    );
    for v in variables() {
        out.push('\n');
        out.push_str(&format!("  {}  (default: {})\n", v.name, v.default.text()));
        wrap_into(&mut out, v.meaning, "      ");
        wrap_into(&mut out, &format!("allowed: {}", v.allowed), "      ");
    }
    out.push('\n');
    wrap_into(
        &mut out,
        "RUST_LOG sets the log filter (default info; moments=debug logs each request's store \
         round trips).",
        "",
    );
    out
}

pub const HELP_WIDTH: usize = 100;

fn wrap_into(out: &mut String, text: &str, indent: &str) {
    let mut line = String::from(indent);
    let mut width = indent.chars().count();
    let bare = width;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if width > bare && width + 1 + w > HELP_WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = String::from(indent);
            width = bare;
        }
        if width > bare {
            line.push(' ');
            width += 1;
        }
        line.push_str(word);
        width += w;
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests;
