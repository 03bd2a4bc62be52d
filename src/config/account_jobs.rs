//! Data exports and imports of lists of people (`MOMENTS_EXPORT_*`,
//! `MOMENTS_IMPORT_*`): their pace and bounds.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
    Variable {
        name: "MOMENTS_EXPORT_INTERVAL_SECS",
        default: DefaultValue::Literal("86400"),
        allowed: "a whole number of seconds, 0 to 2592000",
        meaning:
            "how long after asking for a data export an account may ask for the next (a failed \
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
        meaning:
            "bytes in each stored piece of an export's archive: what one store read serves of a \
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
        meaning:
            "how long a data export pauses between two batches, leaving the stores to requests",
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
];
