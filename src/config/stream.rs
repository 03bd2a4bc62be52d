//! Live updates (`MOMENTS_STREAM_*`): their clocks, logs and bounds.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
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
        meaning:
            "live-update streams one account holds open; the oldest is closed when one more opens",
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
        meaning:
            "live-update streams one instance holds open; more are answered 503 with Retry-After",
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
        meaning:
            "events a live-update stream holds for a client that does not read; one that stays \
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
];
