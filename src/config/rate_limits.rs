//! Request budgets (`MOMENTS_RATE_*`), per account and per client address.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
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
        name: "MOMENTS_RATE_SEARCHES",
        default: DefaultValue::Literal("60/1m"),
        allowed: RATE,
        meaning: "searches (GET /search) per account, each page one",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.searches = rate(v)?;
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
        meaning:
            "rows of imported lists of people per account (previews and imports alike; each names \
                  someone)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.import_rows = rate(v)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_RATE_MEDIA_BYTES",
        default: DefaultValue::Literal("1073741824/1d"),
        allowed: RATE,
        meaning: "bytes of pictures uploaded per account (the files as sent): the media quota",
        echo: Echo::Plain,
        apply: |d, v| {
            d.rates.media_bytes = rate(v)?;
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
];
