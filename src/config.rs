//! Typed settings read from the environment, validated once at start-up.
//!
//! [`VARIABLES`] is the one list of settings: `from_lookup` reads exactly the
//! variables in it, `moments --help` and the README's table are generated
//! from it, and any other `MOMENTS_*` variable is warned about at start-up as
//! a likely typo.

use std::fmt;
use std::path::PathBuf;

use crate::domain::addr::IpBlock;
use crate::domain::user::{Password, Username};

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
}

/// `MOMENTS_BODY_LIMIT` unset: request bodies above this many bytes are
/// refused, except on the few operations whose valid bodies are larger
/// (`http::extract::LARGER_BODIES`).
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

const RATE: &str = "COUNT/WINDOW, such as 10/15m (the window in s, m, h or d)";
const HOST_PORT: &str =
    "HOST:PORT, such as 0.0.0.0:8080 (an IPv6 host in brackets; port 0 picks a \
                         free port)";

/// Every setting, in the order `--help` and the README list them.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "MOMENTS_LISTEN",
        default: DefaultValue::Literal("127.0.0.1:8080"),
        allowed: HOST_PORT,
        meaning: "the address the API is served on",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.listen = host_port(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MONGODB_URI",
        default: DefaultValue::Described("unset"),
        allowed: "a mongodb:// or mongodb+srv:// URI",
        meaning: "MongoDB, for the documents; unset, they are kept in the embedded store under \
                  MOMENTS_DATA_DIR",
        echo: Echo::Credentials,
        apply: |d, v| {
            d.settings.mongodb_uri = Some(url(v, &["mongodb://", "mongodb+srv://"])?);
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MONGODB_DB",
        default: DefaultValue::Literal("moments"),
        allowed: "a database name of at most 63 bytes, without spaces or any of / \\ . \" $",
        meaning: "the MongoDB database",
        echo: Echo::Plain,
        apply: |d, v| {
            let ok = v.len() <= 63
                && !v
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || "/\\.\"$".contains(c));
            if !ok {
                return Err(Refused::default());
            }
            d.settings.mongodb_db = v.to_string();
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_REDIS_URL",
        default: DefaultValue::Described("unset"),
        allowed: "a redis://, rediss://, redis+unix:// or unix:// URL; or a Redis Cluster's seed nodes, redis:// or rediss:// URLs separated by commas",
        meaning: "Redis, for the live state; unset, it is kept in process (one instance only)",
        echo: Echo::Credentials,
        apply: |d, v| {
            let v = v.trim();
            d.settings.redis_url = Some(if v.contains(',') {
                v.split(',')
                    .map(|seed| url(seed, &["redis://", "rediss://"]))
                    .collect::<Result<Vec<_>, _>>()?
                    .join(",")
            } else {
                url(v, &["redis://", "rediss://", "redis+unix://", "unix://"])?
            });
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_REDIS_PREFIX",
        default: DefaultValue::Described("empty"),
        allowed: "any text",
        meaning: "prepended to every Redis key, so several deployments can share one Redis",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.redis_prefix = v.to_string();
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_DATA_DIR",
        default: DefaultValue::Literal("./data"),
        allowed: "a directory path",
        meaning: "where the embedded store keeps its file (when MOMENTS_MONGODB_URI is unset)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.data_dir = PathBuf::from(v);
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_DOCS_CACHE_BYTES",
        default: DefaultValue::Literal("134217728"),
        allowed: "a whole number of bytes, at least 1048576",
        meaning: "pages of the embedded store's file kept in memory (128 MiB by default; redb's \
                  own default, 1 GiB, would let a long-running process grow to it); pages past \
                  it are read from the file again",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.docs_cache_bytes = whole_usize(v, 1 << 20, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_ADMIN_USERNAME",
        default: DefaultValue::Described("unset"),
        allowed: "3 to 32 letters, digits, '_', '.' or '-'",
        meaning: "with MOMENTS_ADMIN_PASSWORD (both or neither): that admin account exists after \
                  start-up; an existing account without the admin role is never promoted",
        echo: Echo::Plain,
        apply: |d, v| {
            Username::parse(v).map_err(|_| Refused::default())?;
            d.admin_username = Some(v.to_string());
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_ADMIN_PASSWORD",
        default: DefaultValue::Described("unset"),
        allowed: "8 to 128 characters",
        meaning: "the admin's password (with MOMENTS_ADMIN_USERNAME); changing it signs out the \
                  admin's sessions",
        echo: Echo::Secret,
        apply: |d, v| {
            Password::parse(v).map_err(|_| Refused::default())?;
            d.admin_password = Some(Secret::new(v));
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_BODY_LIMIT",
        default: DefaultValue::Literal("65536"),
        allowed: "a whole number of bytes, at least 1",
        meaning: "request bodies above this many bytes get 413, except where an operation's valid \
                  bodies are larger: a post (320 KiB), the instance's rules (640 KiB), and the \
                  imports, which take the size of their lists",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.body_limit = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_LIVE_TTL_SECS",
        default: DefaultValue::Literal("259200"),
        allowed: "a whole number of seconds, at least 60",
        meaning: "how long derived Redis keys live without being rebuilt",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.live_ttl_secs = whole(v, 60, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_LIVE_MAX_ENTRIES",
        default: DefaultValue::Literal("1000000"),
        allowed: "a whole number, at least 1000",
        meaning: "cached values the in-process live state holds; past it the least recently used \
                  tenth is evicted",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.live_max_entries = whole_usize(v, 1000, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_LIVE_MAX_BYTES",
        default: DefaultValue::Literal("1073741824"),
        allowed: "a whole number of bytes, at least 1048576",
        meaning: "memory the in-process live state's cached values may take, roughly (1 GiB by \
                  default; a set member counts 48 bytes, a text its length, each value 96 more); \
                  past it the least recently used tenth is evicted",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.live_max_bytes = whole_usize(v, 1 << 20, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_LIVE_MAX_COUNTERS",
        default: DefaultValue::Literal("100000"),
        allowed: "a whole number, at least 1",
        meaning: "rate-limit counters the in-process live state keeps per budget and kind of subject \
                  (account, address); a full table forgets its oldest counter, never an account \
                  locked by failed sign-ins",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.live_max_counters = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_NEAR_CACHE_ENTRIES",
        default: DefaultValue::Literal("200000"),
        allowed: "a whole number; 0 keeps no copies",
        meaning: "copies of live values (post bodies, sets, cards, a reader's relations) this \
                  instance keeps and serves while their owner's generation is unchanged; past it \
                  the least recently used go",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.near_cache_entries = whole_usize(v, 0, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_NEAR_CACHE_BYTES",
        default: DefaultValue::Literal("268435456"),
        allowed: "a whole number of bytes, at least 65536",
        meaning: "memory those copies may take, roughly (256 MiB by default); past it the least \
                  recently used go",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.near_cache_bytes = whole_usize(v, 65_536, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_POST_ID_ARRAY_CAP",
        default: DefaultValue::Literal("10000"),
        allowed: "a whole number, at least 1",
        meaning: "newest ids kept in a post's comments_postid and likes_postid",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.post_id_array_cap = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_DEVICE_REFRESH_MS",
        default: DefaultValue::Literal("500"),
        allowed: "a whole number of milliseconds, at least 50",
        meaning: "how often each instance checks whether an admin changed the device table or a moderator the content filters",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.device_refresh_ms = whole(v, 50, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_ACTIVE_DAYS",
        default: DefaultValue::Literal("7"),
        allowed: "a whole number of days",
        meaning:
            "followers inactive for longer are not pushed new posts (0: push to nobody, build \
                  every timeline on read)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.active_days = whole(v, 0, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_PULLED_AUTHOR_FOLLOWERS",
        default: DefaultValue::Literal("10000"),
        allowed: "a whole number",
        meaning: "authors with more followers are pulled at read time, never pushed",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.pulled_author_followers = whole(v, 0, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MODERATION_RETENTION_DAYS",
        default: DefaultValue::Literal("365"),
        allowed: "a whole number, 1 to 3650",
        meaning: "days a closed moderation case keeps its snapshot of the reported content (erased at once, once closed, when the reported account is deleted)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.moderation_retention_days = whole(v, 1, 3650)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_SWEEP_MS",
        default: DefaultValue::Literal("300000"),
        allowed: "a whole number of milliseconds, at least 100",
        meaning: "how often each instance resumes the fan-outs, account erasures and closed moderation cases left unfinished (a case's own request has a minute, or this long if shorter, before the sweep finishes it), deletes what expired and erases snapshots past their retention",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.sweep_ms = whole(v, 100, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_QUEUE_AGE_MS",
        default: DefaultValue::Literal("30000"),
        allowed: "a whole number of milliseconds, at least 100",
        meaning: "how often each instance updates `moments_moderation_oldest_open_seconds`",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.queue_age_ms = whole(v, 100, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_HEARTBEAT_SECS",
        default: DefaultValue::Literal("15"),
        allowed: "a whole number of seconds, 1 to 300",
        meaning: "seconds between two heartbeat lines on an idle live-update stream",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.heartbeat_secs = whole(v, 1, 300)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_RETRY_MS",
        default: DefaultValue::Literal("3000"),
        allowed: "a whole number of milliseconds, 100 to 600000",
        meaning: "the retry: a live-update stream gives: how long a client waits to reconnect",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.retry_ms = whole(v, 100, 600_000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_LOG_EVENTS",
        default: DefaultValue::Literal("1000"),
        allowed: "a whole number, 10 to 100000",
        meaning: "events each account's live-update log keeps for a reconnecting client",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.log_events = whole_usize(v, 10, 100_000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_LOG_MINUTES",
        default: DefaultValue::Literal("1440"),
        allowed: "a whole number of minutes, 1 to 10080",
        meaning: "how long each account's live-update log keeps an event",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.log_minutes = whole(v, 1, 10_080)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_PER_ACCOUNT",
        default: DefaultValue::Literal("5"),
        allowed: "a whole number, 1 to 100",
        meaning: "live-update streams one account holds open; the oldest is closed when one more opens",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.per_account = whole_usize(v, 1, 100)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_PER_INSTANCE",
        default: DefaultValue::Literal("10000"),
        allowed: "a whole number, 1 to 1000000",
        meaning: "live-update streams one instance holds open; more are answered 503 with Retry-After",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.per_instance = whole_usize(v, 1, 1_000_000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_SEND_BUFFER",
        default: DefaultValue::Literal("256"),
        allowed: "a whole number of events, 4 to 65536",
        meaning: "events a live-update stream holds for a client that does not read; one that stays \
                  that far behind is disconnected, to resume from its last event",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.send_buffer = whole_usize(v, 4, 65_536)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_MAX_SECS",
        default: DefaultValue::Literal("3600"),
        allowed: "a whole number of seconds, 1 to 86400",
        meaning: "how long a live-update stream lives before it is closed with a retry:, so that \
                  clients spread over instances as they come and go",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.max_secs = whole(v, 1, 86_400)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_STREAM_TICKET_SECS",
        default: DefaultValue::Literal("60"),
        allowed: "a whole number of seconds, 1 to 600",
        meaning: "how long a ticket for opening a live-update stream stays valid (it opens one)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.stream.ticket_secs = whole(v, 1, 600)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_INTERVAL_SECS",
        default: DefaultValue::Literal("86400"),
        allowed: "a whole number of seconds, 0 to 2592000",
        meaning: "how long after asking for a data export an account may ask for the next (a failed \
                  one does not count; 0: whenever none is running)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.interval_secs = whole(v, 0, 30 * 86_400)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_KEEP_SECS",
        default: DefaultValue::Literal("604800"),
        allowed: "a whole number of seconds, 60 to 7776000",
        meaning: "how long a ready data export's archive is kept for download, then deleted",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.keep_secs = whole(v, 60, 90 * 86_400)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_MAX_BYTES",
        default: DefaultValue::Literal("68719476736"),
        allowed: "a whole number of bytes, 1048576 to 1099511627776",
        meaning: "the largest archive a data export may make; a bigger one fails, saying so",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.max_bytes = whole(v, 1 << 20, 1 << 40)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_CHUNK_BYTES",
        default: DefaultValue::Literal("1048576"),
        allowed: "a whole number of bytes, 4096 to 8388608",
        meaning: "bytes in each stored piece of an export's archive: what one store read serves of a \
                  download",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.chunk_bytes = whole_usize(v, 4096, 8 << 20)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_BATCH",
        default: DefaultValue::Literal("500"),
        allowed: "a whole number, 1 to 5000",
        meaning: "records a data export reads from the stores at a time",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.batch = whole_usize(v, 1, 5000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_PAUSE_MS",
        default: DefaultValue::Literal("0"),
        allowed: "a whole number of milliseconds, 0 to 10000",
        meaning: "how long a data export pauses between two batches, leaving the stores to requests",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.pause_ms = whole(v, 0, 10_000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_JOBS",
        default: DefaultValue::Literal("1"),
        allowed: "a whole number, 1 to 16",
        meaning: "data exports one instance runs at once; more wait, queued, for any instance",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.jobs = whole_usize(v, 1, 16)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_CLAIM_SECS",
        default: DefaultValue::Literal("30"),
        allowed: "a whole number of seconds, 2 to 600",
        meaning: "how long a running data export stays its instance's unrenewed: how soon another \
                  instance takes over the export of one that died",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.claim_secs = whole(v, 2, 600)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_EXPORT_DOWNLOADS",
        default: DefaultValue::Literal("4"),
        allowed: "a whole number, 1 to 64",
        meaning: "downloads of one data export an instance serves at once; one more is 429 with \
                  `Retry-After`",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.exports.downloads = whole_usize(v, 1, 64)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_IMPORT_PAUSE_MS",
        default: DefaultValue::Literal("0"),
        allowed: "a whole number of milliseconds, 0 to 10000",
        meaning: "how long an import of a list of people pauses between two steps (a follow, a \
                  block…), leaving the stores to requests",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.imports.pause_ms = whole(v, 0, 10_000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_IMPORT_JOBS",
        default: DefaultValue::Literal("2"),
        allowed: "a whole number, 1 to 16",
        meaning: "imports of lists of people one instance applies at once; more wait, queued, for \
                  any instance",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.imports.jobs = whole_usize(v, 1, 16)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_IMPORT_CLAIM_SECS",
        default: DefaultValue::Literal("30"),
        allowed: "a whole number of seconds, 2 to 600",
        meaning: "how long a running import stays its instance's unrenewed: how soon another \
                  instance takes over the import of one that died",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.imports.claim_secs = whole(v, 2, 600)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_TIMELINE_MAX",
        default: DefaultValue::Literal("800"),
        allowed: "a whole number, at least 1",
        meaning: "entries a cached home timeline keeps; older pages come from the documents",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.timeline_max = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_WORKERS",
        default: DefaultValue::Described("one per core"),
        allowed: "a whole number, at least 1",
        meaning: "HTTP worker threads",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.workers = Some(whole_usize(v, 1, usize::MAX)?);
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_INSTANCE_ID",
        default: DefaultValue::Described("leased"),
        allowed: "a whole number from 0 to 31",
        meaning: "the instance bits of generated ids, distinct per instance; unset, each instance \
                  leases a free one from the documents (and renews it every 15 s)",
        echo: Echo::Plain,
        apply: |d, v| {
            let id = whole(v, 0, u64::from(crate::ids::MAX_INSTANCE))?;
            d.settings.instance_id = Some(u16::try_from(id).map_err(|_| Refused::default())?);
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MAX_FOLLOWING",
        default: DefaultValue::Literal("5000"),
        allowed: "a whole number, at least 1",
        meaning: "accounts one account may follow (one more: 409)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.max_following = whole(v, 1, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MAX_BLOCKS",
        default: DefaultValue::Literal("5000"),
        allowed: "a whole number, at least 1",
        meaning: "accounts one account may block (one more: 409)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.max_blocks = whole(v, 1, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_BLOCKERS_READ_WHOLE",
        default: DefaultValue::Literal("200"),
        allowed: "a whole number, at least 1",
        meaning: "accounts blocking one user that each read of that user loads whole; past it, \
                  reads ask only whether the people on the page are among them",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.blockers_read_whole = whole_usize(v, 1, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_ERASE_IN_REQUEST",
        default: DefaultValue::Literal("2000"),
        allowed: "a whole number",
        meaning: "records of a deleted account (posts, comments, likes, follows...) erased before \
                  DELETE /me answers; the rest are erased in the background (0: all of them), \
                  and from the answer on its posts and follows are not readable (its comments and \
                  likes on others' posts show as an unknown user's until erased)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.erase_in_request = whole_usize(v, 0, usize::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_VIEW_FLUSH_MS",
        default: DefaultValue::Literal("1000"),
        allowed: "a whole number of milliseconds, at least 10",
        meaning: "how often the views counted by this instance are written to the documents",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.view_flush_ms = whole(v, 10, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_VIEW_BUFFER",
        default: DefaultValue::Literal("10000"),
        allowed: "a whole number, at least 1",
        meaning: "views that may wait to be written at most; a crash loses at most these, and a view that finds the buffer full is not counted",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.view_buffer = whole(v, 1, u32::MAX as u64)? as usize;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_LIKE_ARRAY_FLUSH_MS",
        default: DefaultValue::Literal("200"),
        allowed: "a whole number of milliseconds, at least 10",
        meaning: "on MongoDB with Redis: how often the likes_postid arrays of liked posts are written, in one batch per post, from the queue likes leave in Redis",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.like_array_flush_ms = whole(v, 10, u64::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_LIMITS",
        default: DefaultValue::Literal("on"),
        allowed: "on or off",
        meaning: "off turns every rate limit off (load tests, trusted networks)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rate_limits_on = one_of(v, &[("on", true), ("off", false)])?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_LOGIN_FAILURES",
        default: DefaultValue::Literal("10/15m"),
        allowed: RATE,
        meaning: "failed sign-ins per account, whatever the address",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.login_failures = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_LOGINS_PER_IP",
        default: DefaultValue::Literal("300/15m"),
        allowed: RATE,
        meaning: "sign-in attempts per client address",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.logins_per_ip = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_SIGNUPS_PER_IP",
        default: DefaultValue::Literal("300/1h"),
        allowed: RATE,
        meaning: "registrations per client address (enough for a school or office behind one \
                  address)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.signups_per_ip = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_USER_LOOKUPS",
        default: DefaultValue::Literal("30/1m"),
        allowed: RATE,
        meaning: "lookups of someone by username (GET /users?username=) per account",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.user_lookups = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_REPORTS",
        default: DefaultValue::Literal("50/1d"),
        allowed: RATE,
        meaning: "reports filed (POST /reports) per account",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.reports = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_IMPORT_ROWS",
        default: DefaultValue::Literal("20000/1d"),
        allowed: RATE,
        meaning: "rows of imported lists of people per account (previews and imports alike; each names \
                  someone)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.import_rows = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_WRITES",
        default: DefaultValue::Literal("120/1m"),
        allowed: RATE,
        meaning: "writes (posts, comments, likes, follows, blocks...) per account",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.writes = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_WRITES_PER_IP",
        default: DefaultValue::Literal("1200/1m"),
        allowed: RATE,
        meaning: "writes per client address",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.writes_per_ip = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_READS",
        default: DefaultValue::Literal("1200/1m"),
        allowed: RATE,
        meaning: "reads per account",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.reads = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_READS_PER_IP",
        default: DefaultValue::Literal("6000/1m"),
        allowed: RATE,
        meaning: "reads per client address, signed in or not",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.reads_per_ip = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_TRUSTED_PROXIES",
        default: DefaultValue::Described("none"),
        allowed: "comma-separated addresses or blocks, such as 10.0.0.0/8,::1",
        meaning: "peers whose X-Forwarded-For names the client",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.trusted_proxies = v
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(IpBlock::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| Refused(Some(e)))?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_METRICS_LISTEN",
        default: DefaultValue::Described("unset"),
        allowed: HOST_PORT,
        meaning: "serve /metrics on this address without a token, instead of on the main port to \
                  an admin's token",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.metrics_listen = Some(host_port(v)?);
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_SHUTDOWN_TIMEOUT_SECS",
        default: DefaultValue::Literal("20"),
        allowed: "a whole number of seconds, 1 to 600",
        meaning: "how long a stopping server waits for in-flight requests and fan-outs",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.shutdown_timeout_secs = whole(v, 1, 600)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_LOG_FORMAT",
        default: DefaultValue::Literal("text"),
        allowed: "text or json",
        meaning: "text: one readable line per event; json: one JSON object per line, with the \
                  fields of its spans (such as the request id)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.log_format =
                one_of(v, &[("text", LogFormat::Text), ("json", LogFormat::Json)])?;
            Ok(())
        },
    },
];

/// The setting named exactly `name`, if there is one.
pub fn variable(name: &str) -> Option<&'static Variable> {
    VARIABLES.iter().find(|v| v.name == name)
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

    /// Reads each variable in [`VARIABLES`] through `get`, and no other.
    /// Every refused value is reported, not just the first. An empty value
    /// counts as unset (`docker compose` passes `${X:-}` as empty).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut draft = Draft {
            settings: Settings::default(),
            rate_limits_on: true,
            rates: RateLimits::default(),
            admin_username: None,
            admin_password: None,
        };
        let mut errors = Vec::new();
        let mut set = Vec::new();
        for var in VARIABLES {
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
            let suggestion = VARIABLES
                .iter()
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

/// The settings part of `moments --help`, from [`VARIABLES`], in lines of
/// at most [`HELP_WIDTH`] characters.
pub fn help_settings() -> String {
    let mut out = String::from(
        "Settings, from environment variables read at start-up (an empty value counts as\n\
         unset; a misspelt MOMENTS_ variable is warned about, not obeyed):\n",
    );
    for v in VARIABLES {
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
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    fn refusal(name: &str, value: &str) -> String {
        match settings(&[(name, value)]) {
            Ok(_) => panic!("{name}={value:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    fn accepted(name: &str, value: &str) -> Settings {
        settings(&[(name, value)]).unwrap_or_else(|e| panic!("{name}={value:?}: {e}"))
    }

    #[test]
    fn defaults_match_the_design_table() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.listen, "127.0.0.1:8080");
        assert_eq!(s.mongodb_db, "moments");
        assert!(s.mongodb_uri.is_none() && s.redis_url.is_none() && s.admin.is_none());
        assert_eq!(s.data_dir, PathBuf::from("./data"));
        assert!(s.metrics_listen.is_none());
        assert_eq!(s.shutdown_timeout_secs, 20);
        assert_eq!(s.log_format, LogFormat::Text);
    }

    #[test]
    fn from_lookup_asks_for_exactly_the_listed_variables_and_old_names() {
        let asked = RefCell::new(Vec::new());
        Settings::from_lookup(|k| {
            asked.borrow_mut().push(k.to_string());
            None
        })
        .unwrap();
        let mut listed = Vec::new();
        for v in VARIABLES {
            listed.push(v.name.to_string());
            listed.extend(old_name_of(v.name).map(String::from));
        }
        assert_eq!(asked.into_inner(), listed);
    }

    #[test]
    fn the_table_names_each_setting_once_and_as_a_setting() {
        let mut names: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
        for n in &names {
            assert!(
                n.starts_with("MOMENTS_") && !n.starts_with("MOMENTS_TEST_"),
                "{n}"
            );
            assert!(
                n.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{n}"
            );
        }
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a name is listed twice");
    }

    #[test]
    fn each_literal_default_shown_is_the_default_in_force() {
        let default = format!("{:?}", Settings::default());
        for v in VARIABLES {
            if let DefaultValue::Literal(shown) = v.default {
                let set = format!("{:?}", accepted(v.name, shown));
                assert_eq!(set, default, "{}={shown} is not the default", v.name);
            }
        }
    }

    #[test]
    fn admin_needs_both_variables() {
        assert!(settings(&[("MOMENTS_ADMIN_USERNAME", "root")]).is_err());
        assert!(settings(&[("MOMENTS_ADMIN_PASSWORD", "password-1")]).is_err());
        let s = settings(&[
            ("MOMENTS_ADMIN_USERNAME", "root"),
            ("MOMENTS_ADMIN_PASSWORD", "password-1"),
        ])
        .unwrap();
        let (user, password) = s.admin.unwrap();
        assert_eq!((user.as_str(), password.expose()), ("root", "password-1"));
    }

    #[test]
    fn a_bad_admin_password_is_refused_without_being_printed() {
        let err = settings(&[
            ("MOMENTS_ADMIN_USERNAME", "root"),
            ("MOMENTS_ADMIN_PASSWORD", "hunter2"),
        ])
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "MOMENTS_ADMIN_PASSWORD must be 8 to 128 characters; got 7 characters"
        );
        let err = settings(&[
            ("MOMENTS_ADMIN_USERNAME", "a b"),
            ("MOMENTS_ADMIN_PASSWORD", "password-1"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("MOMENTS_ADMIN_USERNAME must be 3 to 32"),
            "{err}"
        );
    }

    #[test]
    fn store_urls_lose_their_credentials_in_messages() {
        assert_eq!(
            without_credentials("redis://:s3cret@cache:6379/0"),
            "redis://***@cache:6379/0"
        );
        assert_eq!(
            without_credentials("mongodb://app:pw@db1,db2/?replicaSet=rs"),
            "mongodb://***@db1,db2/?replicaSet=rs"
        );
        assert_eq!(
            without_credentials("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
    }

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(
            format!("{:?}", Secret::new("hunter2")),
            "Secret([redacted])"
        );
    }

    #[test]
    fn rates_parse_and_limits_can_be_tuned_or_turned_off() {
        assert_eq!(Rate::parse("10/15m"), Ok(Rate::new(10, 900)));
        assert_eq!(Rate::parse("5/s"), Ok(Rate::new(5, 1)));
        assert_eq!(Rate::parse(" 200 / 1h "), Ok(Rate::new(200, 3600)));
        for bad in ["10", "x/1m", "10/0m", "10/1y", "10/m5"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
        let s = accepted("MOMENTS_RATE_WRITES", "3/1m");
        assert_eq!(s.rate_limits.unwrap().writes, Rate::new(3, 60));
        for off in ["off", "OFF", " off "] {
            assert!(accepted("MOMENTS_RATE_LIMITS", off).rate_limits.is_none());
        }
        for on in ["on", "On"] {
            assert!(accepted("MOMENTS_RATE_LIMITS", on).rate_limits.is_some());
        }
        assert_eq!(
            refusal("MOMENTS_RATE_READS", "lots"),
            format!("MOMENTS_RATE_READS must be {RATE}; got \"lots\"")
        );
    }

    #[test]
    fn a_bad_rate_is_refused_even_with_limits_off() {
        let err = settings(&[
            ("MOMENTS_RATE_LIMITS", "off"),
            ("MOMENTS_RATE_WRITES", "often"),
        ])
        .unwrap_err();
        assert!(
            err.to_string().starts_with("MOMENTS_RATE_WRITES must be"),
            "{err}"
        );
    }

    #[test]
    fn booleans_and_enums_take_only_their_words() {
        for bad in ["yes", "true", "1", "no", "of"] {
            assert_eq!(
                refusal("MOMENTS_RATE_LIMITS", bad),
                format!("MOMENTS_RATE_LIMITS must be on or off; got {bad:?}")
            );
        }
        assert_eq!(
            accepted("MOMENTS_LOG_FORMAT", "json").log_format,
            LogFormat::Json
        );
        assert_eq!(
            accepted("MOMENTS_LOG_FORMAT", "text").log_format,
            LogFormat::Text
        );
        assert_eq!(
            refusal("MOMENTS_LOG_FORMAT", "xml"),
            "MOMENTS_LOG_FORMAT must be text or json; got \"xml\""
        );
    }

    #[test]
    fn an_instance_id_out_of_range_is_refused_not_masked() {
        assert_eq!(
            refusal("MOMENTS_INSTANCE_ID", "32"),
            "MOMENTS_INSTANCE_ID must be a whole number from 0 to 31; got \"32\""
        );
        assert_eq!(accepted("MOMENTS_INSTANCE_ID", "31").instance_id, Some(31));
        assert_eq!(accepted("MOMENTS_INSTANCE_ID", "0").instance_id, Some(0));
        assert_eq!(settings(&[]).unwrap().instance_id, None);
    }

    #[test]
    fn trusted_proxies_are_parsed_and_none_by_default() {
        assert!(settings(&[]).unwrap().trusted_proxies.is_empty());
        let s = accepted("MOMENTS_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1");
        assert_eq!(s.trusted_proxies.len(), 2);
        let err = refusal("MOMENTS_TRUSTED_PROXIES", "10.0.0.0/8,10.0.0.0/99");
        assert!(
            err.starts_with("MOMENTS_TRUSTED_PROXIES must be comma-separated")
                && err.contains("the prefix must be 0 to 32"),
            "{err}"
        );
    }

    #[test]
    fn bad_numbers_are_reported_by_name() {
        assert_eq!(
            refusal("MOMENTS_BODY_LIMIT", "lots"),
            "MOMENTS_BODY_LIMIT must be a whole number of bytes, at least 1; got \"lots\""
        );
        for bad in [
            "-1",
            "1.5",
            "+5",
            "65_536",
            "1e6",
            "99999999999999999999999",
        ] {
            assert!(
                refusal("MOMENTS_BODY_LIMIT", bad).starts_with("MOMENTS_BODY_LIMIT must be"),
                "{bad}"
            );
        }
        assert_eq!(accepted("MOMENTS_BODY_LIMIT", " 1024 ").body_limit, 1024);
    }

    #[test]
    fn values_once_clamped_are_refused_at_the_limits() {
        assert_eq!(
            refusal("MOMENTS_LIVE_TTL_SECS", "5"),
            "MOMENTS_LIVE_TTL_SECS must be a whole number of seconds, at least 60; got \"5\""
        );
        // (variable, lowest refused, lowest accepted)
        let limits = [
            ("MOMENTS_BODY_LIMIT", "0", "1"),
            ("MOMENTS_LIVE_TTL_SECS", "59", "60"),
            ("MOMENTS_LIVE_MAX_ENTRIES", "999", "1000"),
            ("MOMENTS_LIVE_MAX_BYTES", "1048575", "1048576"),
            ("MOMENTS_DOCS_CACHE_BYTES", "1048575", "1048576"),
            ("MOMENTS_POST_ID_ARRAY_CAP", "0", "1"),
            ("MOMENTS_DEVICE_REFRESH_MS", "49", "50"),
            ("MOMENTS_SWEEP_MS", "99", "100"),
            ("MOMENTS_QUEUE_AGE_MS", "99", "100"),
            ("MOMENTS_TIMELINE_MAX", "0", "1"),
            ("MOMENTS_WORKERS", "0", "1"),
            ("MOMENTS_MAX_FOLLOWING", "0", "1"),
            ("MOMENTS_VIEW_FLUSH_MS", "9", "10"),
            ("MOMENTS_VIEW_BUFFER", "0", "1"),
            ("MOMENTS_LIKE_ARRAY_FLUSH_MS", "9", "10"),
            ("MOMENTS_SHUTDOWN_TIMEOUT_SECS", "0", "1"),
        ];
        for (name, refused, ok) in limits {
            let err = refusal(name, refused);
            assert!(err.starts_with(&format!("{name} must be")), "{err}");
            assert!(err.ends_with(&format!("got {refused:?}")), "{err}");
            accepted(name, ok);
        }
        let s = settings(&[
            ("MOMENTS_LIVE_TTL_SECS", "60"),
            ("MOMENTS_WORKERS", "3"),
            ("MOMENTS_SHUTDOWN_TIMEOUT_SECS", "600"),
            ("MOMENTS_ACTIVE_DAYS", "0"),
        ])
        .unwrap();
        assert_eq!(s.live_ttl_secs, 60);
        assert_eq!(s.workers, Some(3));
        assert_eq!(s.shutdown_timeout_secs, 600);
        assert_eq!(s.active_days, 0);
        assert!(refusal("MOMENTS_SHUTDOWN_TIMEOUT_SECS", "601").contains("1 to 600"));
    }

    #[test]
    fn listen_addresses_need_a_host_and_a_port() {
        for ok in [
            "127.0.0.1:8080",
            "0.0.0.0:0",
            "[::1]:8080",
            "[::]:65535",
            "localhost:9000",
            "moments_app-1.internal:80",
        ] {
            assert_eq!(accepted("MOMENTS_LISTEN", ok).listen, ok);
            assert_eq!(
                accepted("MOMENTS_METRICS_LISTEN", ok)
                    .metrics_listen
                    .as_deref(),
                Some(ok)
            );
        }
        for bad in [
            "8080",
            ":8080",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:+80",
            "::1:8080",
            "[::1:8080",
            "[nope]:80",
            "my host:80",
            "http://127.0.0.1:80",
        ] {
            assert_eq!(
                refusal("MOMENTS_LISTEN", bad),
                format!("MOMENTS_LISTEN must be {HOST_PORT}; got {bad:?}")
            );
            assert!(
                refusal("MOMENTS_METRICS_LISTEN", bad).starts_with("MOMENTS_METRICS_LISTEN"),
                "{bad}"
            );
        }
    }

    #[test]
    fn store_urls_need_their_schemes_and_keep_their_passwords_out_of_errors() {
        for ok in [
            "mongodb://db1,db2/?replicaSet=rs",
            "mongodb+srv://cluster.example",
        ] {
            assert_eq!(
                accepted("MOMENTS_MONGODB_URI", ok).mongodb_uri.as_deref(),
                Some(ok)
            );
        }
        for ok in [
            "redis://127.0.0.1:6379",
            "rediss://cache:6380/0",
            "redis+unix:///run/redis.sock",
            "unix:///run/redis.sock",
            "redis://10.0.0.1:7000,redis://10.0.0.2:7000,rediss://10.0.0.3:7000",
        ] {
            assert_eq!(
                accepted("MOMENTS_REDIS_URL", ok).redis_url.as_deref(),
                Some(ok)
            );
        }
        assert_eq!(
            accepted("MOMENTS_REDIS_URL", " redis://a:1, redis://b:2 ")
                .redis_url
                .as_deref(),
            Some("redis://a:1,redis://b:2"),
            "seed nodes are trimmed"
        );
        for bad in ["localhost:27017", "mongodb://", "http://db", "mongo://db"] {
            assert!(
                refusal("MOMENTS_MONGODB_URI", bad)
                    .starts_with("MOMENTS_MONGODB_URI must be a mongodb:// or mongodb+srv:// URI"),
                "{bad}"
            );
        }
        for bad in [
            "127.0.0.1:6379",
            "redis:/x",
            "redis://",
            "memcached://m",
            "redis://a:1,",
            "redis://a:1,unix:///run/redis.sock",
            "redis://a:1,b:2",
        ] {
            assert!(
                refusal("MOMENTS_REDIS_URL", bad).starts_with("MOMENTS_REDIS_URL must be"),
                "{bad}"
            );
        }
        let err = refusal("MOMENTS_MONGODB_URI", "mongo://app:s3cret@db");
        assert!(err.ends_with("got \"mongo://***@db\""), "{err}");
        let err = refusal("MOMENTS_REDIS_URL", "http//:s3cret@cache");
        assert!(!err.contains("s3cret"), "{err}");
        assert_eq!(
            without_credentials("redis://:s3cret@a:1,redis://:s3cret@b:2"),
            "redis://***@a:1,redis://***@b:2"
        );
    }

    #[test]
    fn database_names_mongodb_would_refuse_are_refused_here() {
        assert_eq!(
            accepted("MOMENTS_MONGODB_DB", "t_ab12-x").mongodb_db,
            "t_ab12-x"
        );
        for bad in ["a.b", "a/b", "a b", "a$b", &"x".repeat(64)] {
            assert!(
                refusal("MOMENTS_MONGODB_DB", bad).starts_with("MOMENTS_MONGODB_DB must be"),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_refused_value_is_reported_at_once() {
        let err = settings(&[
            ("MOMENTS_BODY_LIMIT", "lots"),
            ("MOMENTS_LOG_FORMAT", "xml"),
        ])
        .unwrap_err()
        .to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 3, "{err}");
        assert_eq!(lines[0], "2 settings are invalid:");
        assert!(
            lines[1].trim_start().starts_with("MOMENTS_BODY_LIMIT"),
            "{err}"
        );
        assert!(
            lines[2].trim_start().starts_with("MOMENTS_LOG_FORMAT"),
            "{err}"
        );
    }

    #[test]
    fn empty_values_count_as_unset() {
        let s = settings(&[("MOMENTS_LISTEN", "  "), ("MOMENTS_ADMIN_PASSWORD", "")]).unwrap();
        assert_eq!(s.listen, "127.0.0.1:8080");
        assert!(s.admin.is_none());
    }

    #[test]
    fn unknown_variables_are_found_with_the_closest_setting() {
        let env = [
            "PATH",
            "RUST_LOG",
            "MOMENTS_LISTEN",
            "MOMENTS_TEST_BACKEND",
            "MOMENTS_TEST_MONGODB_URI",
            "MOMENTS_BODY_LIMTI",
            "MOMENTS_REDIS_URI",
            "moments_listen",
            "MOMENTS_FROBNICATE",
        ];
        let found = unknown_variables(env);
        let pairs: Vec<(&str, Option<&str>)> = found
            .iter()
            .map(|u| (u.name.as_str(), u.suggestion))
            .collect();
        assert_eq!(
            pairs,
            [
                ("MOMENTS_BODY_LIMTI", Some("MOMENTS_BODY_LIMIT")),
                ("MOMENTS_FROBNICATE", None),
                ("MOMENTS_REDIS_URI", Some("MOMENTS_REDIS_URL")),
                ("moments_listen", Some("MOMENTS_LISTEN")),
            ]
        );
        assert_eq!(
            found[0].to_string(),
            "MOMENTS_BODY_LIMTI is not a moments setting and is ignored; did you mean \
             MOMENTS_BODY_LIMIT?"
        );
        assert!(
            found[1].to_string().contains("moments --help"),
            "{}",
            found[1]
        );
        let listed: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
        assert!(unknown_variables(listed).is_empty());
    }

    #[test]
    fn an_old_name_is_read_until_the_new_one_is_set_and_warned_of() {
        let old = settings(&[("MOMENTS_CELEBRITY_FOLLOWERS", "42")]).unwrap();
        assert_eq!(old.pulled_author_followers, 42);
        let both = settings(&[
            ("MOMENTS_CELEBRITY_FOLLOWERS", "42"),
            ("MOMENTS_PULLED_AUTHOR_FOLLOWERS", "7"),
        ])
        .unwrap();
        assert_eq!(both.pulled_author_followers, 7);
        assert!(settings(&[("MOMENTS_CELEBRITY_FOLLOWERS", "many")]).is_err());
        let warned = unknown_variables(["MOMENTS_CELEBRITY_FOLLOWERS"]);
        assert_eq!(warned.len(), 1);
        assert_eq!(
            warned[0].to_string(),
            "MOMENTS_CELEBRITY_FOLLOWERS is the old name of MOMENTS_PULLED_AUTHOR_FOLLOWERS; \
             it is read while MOMENTS_PULLED_AUTHOR_FOLLOWERS is unset, so rename it"
        );
        for (old, new) in RENAMED {
            assert!(
                variable(new).is_some(),
                "{old} renamed to {new}, which is no setting"
            );
            assert!(variable(old).is_none(), "{old} is both old and current");
        }
    }

    #[test]
    fn edit_distance_counts_insertions_deletions_substitutions_and_swaps() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("LIMIT", "LIMTI"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("ca", "abc"), 3);
        assert_eq!(edit_distance("MOMENTS_WORKER", "MOMENTS_WORKERS"), 1);
    }

    #[test]
    fn help_lists_every_setting_within_the_width() {
        let help = help_settings();
        for v in VARIABLES {
            let header = format!("  {}  (default: {})", v.name, v.default.text());
            assert!(help.lines().any(|l| l == header), "{header}");
        }
        for line in help.lines() {
            assert!(line.chars().count() <= HELP_WIDTH, "too wide: {line}");
        }
        assert!(help.contains("RUST_LOG"));
    }

    /// The README's settings table, as it must read.
    fn readme_table() -> String {
        let cell = |s: &str| s.replace('|', "\\|");
        let mut out =
            String::from("| variable | default | allowed | meaning |\n|---|---|---|---|\n");
        for v in VARIABLES {
            let default = match v.default {
                DefaultValue::Literal(x) => format!("`{x}`"),
                DefaultValue::Described(x) => x.to_string(),
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                v.name,
                cell(&default),
                cell(v.allowed),
                cell(v.meaning)
            ));
        }
        out
    }

    #[test]
    fn the_readme_table_is_the_table() {
        let readme = include_str!("../README.md");
        let want = readme_table();
        let header = want.lines().next().unwrap_or_default();
        let got: String = readme
            .lines()
            .skip_while(|l| *l != header)
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            got == want,
            "README.md's settings table differs from config::VARIABLES; it should be:\n\n{want}"
        );
    }
}
