//! Logging set up once per process, honouring `RUST_LOG` the way env_logger users expect.

use tracing_subscriber::EnvFilter;

/// Installs a fmt subscriber; `RUST_LOG` overrides `default_filter`.
/// Safe to call more than once (tests spawn many apps in one process).
pub fn init(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    // Logs go to stderr, coloured only on a terminal (files and log
    // collectors get plain text).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
