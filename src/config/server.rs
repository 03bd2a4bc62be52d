//! The server itself: where it listens, its workers and instance id, the
//! proxies it trusts, metrics, shutdown, logs, request bodies, and the
//! first admin.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
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
];
