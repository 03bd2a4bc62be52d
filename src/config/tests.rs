//! The settings, each refused value and the generated texts, held to the
//! README.

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
    for v in variables() {
        listed.push(v.name.to_string());
        listed.extend(old_name_of(v.name).map(String::from));
    }
    assert_eq!(asked.into_inner(), listed);
}

#[test]
fn the_table_names_each_setting_once_and_as_a_setting() {
    let mut names: Vec<&str> = variables().map(|v| v.name).collect();
    for n in &names {
        assert!(
            n.starts_with("MOMENTS_") && !n.starts_with("MOMENTS_TEST_"),
            "{n}"
        );
        assert!(
            n.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
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
    for v in variables() {
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
    let listed: Vec<&str> = variables().map(|v| v.name).collect();
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
    for v in variables() {
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
    let mut out = String::from("| variable | default | allowed | meaning |\n|---|---|---|---|\n");
    for v in variables() {
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
    let readme = include_str!("../../README.md");
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
        "README.md's settings table differs from config::variables(); it should be:\n\n{want}"
    );
}
