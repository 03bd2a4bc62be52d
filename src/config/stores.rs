//! The stores: MongoDB or the embedded file, Redis or the in-process live
//! state, their caches and bounds, and the background work that keeps the
//! documents in step with the live state.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
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
];
