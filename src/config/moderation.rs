//! Moderation: how long closed cases keep what was reported, and how often
//! the age of the queue is measured.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
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
];
