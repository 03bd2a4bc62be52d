//! Typed settings read from the environment (DESIGN.md's table), validated once at start-up.

use std::fmt;
use std::path::PathBuf;

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
                    "set both MOMENTS_ADMIN_USERNAME and MOMENTS_ADMIN_PASSWORD, or neither".into(),
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
    fn bad_numbers_are_reported_by_name() {
        let err = settings(&[("MOMENTS_BODY_LIMIT", "lots")]).unwrap_err();
        assert!(err.to_string().contains("MOMENTS_BODY_LIMIT"));
    }
}
