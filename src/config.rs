//! Typed settings read from the environment (DESIGN.md's table), validated once at start-up.

use std::fmt;
use std::path::PathBuf;

use crate::domain::addr::IpBlock;

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
        }
    }
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
    pub admin: Option<(String, Secret)>,
    /// Request bodies above this many bytes are refused with 413.
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
    /// Followers inactive for longer are not pushed new posts (0: push to
    /// nobody, every timeline is built on read).
    pub active_days: u64,
    /// Authors with more followers are never pushed; their posts are pulled
    /// into followers' timelines at read time.
    pub celebrity_followers: u64,
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
    /// Where a second listener serves `/metrics` to anyone who can reach
    /// it; `None`: the main port serves it to admins only.
    pub metrics_listen: Option<String>,
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
            admin: None,
            body_limit: 64 * 1024,
            live_ttl_secs: 3 * 24 * 3600,
            post_id_array_cap: 10_000,
            device_refresh_ms: 500,
            workers: None,
            live_max_entries: 1_000_000,
            active_days: 7,
            celebrity_followers: 10_000,
            timeline_max: 800,
            rate_limits: Some(RateLimits::default()),
            trusted_proxies: Vec::new(),
            instance_id: None,
            max_following: 5000,
            metrics_listen: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(String);

impl Settings {
    /// Reads `MOMENTS_*` variables over the defaults.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut s = Settings::default();
        let non_empty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = non_empty("MOMENTS_LISTEN") {
            s.listen = v;
        }
        s.mongodb_uri = non_empty("MOMENTS_MONGODB_URI");
        if let Some(v) = non_empty("MOMENTS_MONGODB_DB") {
            s.mongodb_db = v;
        }
        s.redis_url = non_empty("MOMENTS_REDIS_URL");
        s.metrics_listen = non_empty("MOMENTS_METRICS_LISTEN");
        if let Some(v) = non_empty("MOMENTS_REDIS_PREFIX") {
            s.redis_prefix = v;
        }
        if let Some(v) = non_empty("MOMENTS_DATA_DIR") {
            s.data_dir = PathBuf::from(v);
        }
        match (
            non_empty("MOMENTS_ADMIN_USERNAME"),
            non_empty("MOMENTS_ADMIN_PASSWORD"),
        ) {
            (Some(u), Some(p)) => s.admin = Some((u, Secret::new(p))),
            (None, None) => {}
            _ => {
                return Err(ConfigError(
                    "set both MOMENTS_ADMIN_USERNAME and MOMENTS_ADMIN_PASSWORD (8 to 128 \
                     characters), or neither"
                        .into(),
                ))
            }
        }
        let number = |k: &str| -> Result<Option<u64>, ConfigError> {
            non_empty(k)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| ConfigError(format!("{k} must be a whole number, got {v:?}")))
                })
                .transpose()
        };
        if let Some(v) = number("MOMENTS_BODY_LIMIT")? {
            s.body_limit = v as usize;
        }
        if let Some(v) = number("MOMENTS_LIVE_TTL_SECS")? {
            s.live_ttl_secs = v.max(60);
        }
        if let Some(v) = number("MOMENTS_POST_ID_ARRAY_CAP")? {
            s.post_id_array_cap = (v as usize).max(1);
        }
        if let Some(v) = number("MOMENTS_DEVICE_REFRESH_MS")? {
            s.device_refresh_ms = v.max(50);
        }
        if let Some(v) = number("MOMENTS_LIVE_MAX_ENTRIES")? {
            s.live_max_entries = v as usize;
        }
        if let Some(v) = number("MOMENTS_ACTIVE_DAYS")? {
            s.active_days = v;
        }
        if let Some(v) = number("MOMENTS_CELEBRITY_FOLLOWERS")? {
            s.celebrity_followers = v;
        }
        if let Some(v) = number("MOMENTS_TIMELINE_MAX")? {
            s.timeline_max = (v as usize).max(1);
        }
        if let Some(v) = number("MOMENTS_WORKERS")? {
            s.workers = Some((v as usize).max(1));
        }
        if let Some(v) = number("MOMENTS_MAX_FOLLOWING")? {
            s.max_following = v.max(1);
        }
        if let Some(v) = number("MOMENTS_INSTANCE_ID")? {
            let max = u64::from(crate::ids::MAX_INSTANCE);
            if v > max {
                return Err(ConfigError(format!(
                    "MOMENTS_INSTANCE_ID must be 0 to {max}, got {v}; or leave it unset to lease one"
                )));
            }
            s.instance_id = Some(v as u16);
        }
        if let Some(v) = non_empty("MOMENTS_TRUSTED_PROXIES") {
            s.trusted_proxies = v
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(IpBlock::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| ConfigError(format!("MOMENTS_TRUSTED_PROXIES: {e}")))?;
        }
        match non_empty("MOMENTS_RATE_LIMITS").map(|v| v.trim().to_lowercase()) {
            None => {}
            Some(v) if v == "on" => {}
            Some(v) if v == "off" => s.rate_limits = None,
            Some(v) => {
                return Err(ConfigError(format!(
                    "MOMENTS_RATE_LIMITS must be on or off, got {v:?}"
                )))
            }
        }
        if let Some(limits) = s.rate_limits.as_mut() {
            let rates: [(&str, &mut Rate); 7] = [
                ("MOMENTS_RATE_LOGIN_FAILURES", &mut limits.login_failures),
                ("MOMENTS_RATE_LOGINS_PER_IP", &mut limits.logins_per_ip),
                ("MOMENTS_RATE_SIGNUPS_PER_IP", &mut limits.signups_per_ip),
                ("MOMENTS_RATE_WRITES", &mut limits.writes),
                ("MOMENTS_RATE_WRITES_PER_IP", &mut limits.writes_per_ip),
                ("MOMENTS_RATE_READS", &mut limits.reads),
                ("MOMENTS_RATE_READS_PER_IP", &mut limits.reads_per_ip),
            ];
            for (name, rate) in rates {
                if let Some(v) = non_empty(name) {
                    *rate = Rate::parse(&v).map_err(|e| ConfigError(format!("{name}: {e}")))?;
                }
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_match_the_design_table() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.listen, "127.0.0.1:8080");
        assert_eq!(s.mongodb_db, "moments");
        assert!(s.mongodb_uri.is_none() && s.redis_url.is_none() && s.admin.is_none());
        assert_eq!(s.data_dir, PathBuf::from("./data"));
    }

    #[test]
    fn admin_needs_both_variables() {
        assert!(settings(&[("MOMENTS_ADMIN_USERNAME", "root")]).is_err());
        let s = settings(&[
            ("MOMENTS_ADMIN_USERNAME", "root"),
            ("MOMENTS_ADMIN_PASSWORD", "pw"),
        ])
        .unwrap();
        assert_eq!(s.admin.unwrap().1.expose(), "pw");
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
        let s = settings(&[("MOMENTS_RATE_WRITES", "3/1m")]).unwrap();
        assert_eq!(s.rate_limits.unwrap().writes, Rate::new(3, 60));
        assert!(settings(&[("MOMENTS_RATE_LIMITS", "off")])
            .unwrap()
            .rate_limits
            .is_none());
        let err = settings(&[("MOMENTS_RATE_READS", "lots")]).unwrap_err();
        assert!(err.to_string().contains("MOMENTS_RATE_READS"), "{err}");
    }

    #[test]
    fn an_instance_id_out_of_range_is_refused_not_masked() {
        let err = settings(&[("MOMENTS_INSTANCE_ID", "32")]).unwrap_err();
        assert!(err.to_string().contains("MOMENTS_INSTANCE_ID"), "{err}");
        assert_eq!(
            settings(&[("MOMENTS_INSTANCE_ID", "31")])
                .unwrap()
                .instance_id,
            Some(31)
        );
        assert_eq!(settings(&[]).unwrap().instance_id, None);
    }

    #[test]
    fn trusted_proxies_are_parsed_and_none_by_default() {
        assert!(settings(&[]).unwrap().trusted_proxies.is_empty());
        let s = settings(&[("MOMENTS_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1")]).unwrap();
        assert_eq!(s.trusted_proxies.len(), 2);
        assert!(settings(&[("MOMENTS_TRUSTED_PROXIES", "10.0.0.0/99")]).is_err());
    }

    #[test]
    fn bad_numbers_are_reported_by_name() {
        let err = settings(&[("MOMENTS_BODY_LIMIT", "lots")]).unwrap_err();
        assert!(err.to_string().contains("MOMENTS_BODY_LIMIT"));
    }
}
