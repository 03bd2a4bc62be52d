//! Logging set up once per process, honouring `RUST_LOG` the way env_logger users expect.

use std::sync::atomic::{AtomicBool, Ordering};

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
    use tracing_subscriber::filter::FilterExt;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter))
        .and(tracing_subscriber::filter::filter_fn(|meta| {
            !(STOPPING_ACCEPT.load(Ordering::Relaxed)
                && meta.target().starts_with("actix_server::accept"))
        }));
    let layer = tracing_subscriber::fmt::layer()
        .with_target(true)
        .with_writer(std::io::stderr);
    let layer = match format {
        // Coloured only on a terminal (files and log collectors get plain
        // text).
        LogFormat::Text => layer
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .boxed(),
        // Every enclosing span with its fields, not just the innermost, so
        // the request span's `request_id` is on every line of a request
        // even when a deeper span is open.
        LogFormat::Json => layer
            .json()
            .with_ansi(false)
            .with_current_span(false)
            .with_span_list(true)
            .boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
}

/// Set once the service shuts its listening socket to stop accepting.
/// actix's acceptor thread may poll the socket once more before it sees the
/// pause sent ahead of that, and then logs the refused `accept` (EINVAL)
/// and its own deregistering as errors: expected then, and not logged.
static STOPPING_ACCEPT: AtomicBool = AtomicBool::new(false);

/// Says the listening socket is being shut on purpose (`STOPPING_ACCEPT`).
pub fn stopping_accept() {
    STOPPING_ACCEPT.store(true, Ordering::Relaxed);
}
