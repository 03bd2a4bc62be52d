//! Logging set up once per process, honouring `RUST_LOG` the way env_logger users expect.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs a text subscriber; `RUST_LOG` overrides `default_filter`.
/// Safe to call more than once (tests spawn many apps in one process).
pub fn init(default_filter: &str) {
    init_as(default_filter, LogFormat::Text);
}

/// Installs a subscriber writing `format` (`MOMENTS_LOG_FORMAT`) to stderr;
/// `RUST_LOG` overrides `default_filter`. Only the first call in a process
/// takes effect.
pub fn init_as(default_filter: &str, format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true)
        .with_writer(std::io::stderr);
    let _ = match format {
        // Coloured only on a terminal (files and log collectors get plain
        // text).
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        // Every enclosing span with its fields, not just the innermost, so
        // the request span's `request_id` is on every line of a request
        // even when a deeper span is open.
        LogFormat::Json => builder
            .json()
            .with_ansi(false)
            .with_current_span(false)
            .with_span_list(true)
            .try_init(),
    };
}
