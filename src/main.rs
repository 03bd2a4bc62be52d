//! The `moments` binary: `moments serve` (the default) runs the service.

use anyhow::Context as _;
use moments::config::{self, ConfigError, Settings};
use moments::startup::{Application, Stopper};

const USAGE: &str = "usage: moments [serve | rebuild-live | check | rebuild-search | help]

  serve           run the service (the default)
  rebuild-live    recompute every live (Redis) key from the documents; safe while serving
  check           compare the live state with the documents; exits 1 on any mismatch
  rebuild-search  empty this instance's search index (MOMENTS_DATA_DIR/search) and index
                  every post again from the documents; with the instance stopped
  help            print this, and every setting with its default (also -h, --help)";

fn main() -> std::process::ExitCode {
    moments::startup::tune_allocator();
    actix_web::rt::System::new().block_on(serve())
}

async fn serve() -> std::process::ExitCode {
    let command = std::env::args().nth(1);
    match command.as_deref() {
        None | Some("serve") => {}
        Some(tool @ ("rebuild-live" | "check")) => return repair_tool(tool).await,
        Some("rebuild-search") => return rebuild_search().await,
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}\n\n{}", config::help_settings());
            return std::process::ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("unknown command {other:?}\n\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    }
    let settings = match settings_and_logging() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("moments: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let timeout_secs = settings.shutdown_timeout_secs;
    let result = async {
        let app = Application::build(settings).await?;
        // From here on, not before: a signal during start-up ends the
        // process at once, before anything was served.
        let signals = Signals::catch().context("listening for SIGTERM and SIGINT")?;
        tokio::spawn(stop_on_signals(signals, app.stopper(), timeout_secs));
        app.run_until_stopped().await?;
        anyhow::Ok(())
    }
    .await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("moments: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The first SIGTERM or SIGINT stops the service gracefully; a second one
/// ends the process at once, finished or not.
async fn stop_on_signals(mut signals: Signals, stopper: Stopper, timeout_secs: u64) {
    let first = signals.next().await;
    tracing::info!(
        signal = first,
        timeout_secs,
        "stopping: finishing requests and fan-outs (send it again to stop at once)"
    );
    stopper.stop();
    let again = signals.next().await;
    tracing::warn!(signal = again, "stopping at once, unfinished");
    std::process::exit(1);
}

/// SIGTERM and SIGINT, caught from when this is made.
#[cfg(unix)]
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn catch() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn catch() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn next(&mut self) -> &'static str {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    }
}

/// Reads the settings before any log line, since they choose the log
/// format; a refusal is for the caller to print, plainly, to stderr. Then
/// warns of each `MOMENTS_*` variable that is no setting.
fn settings_and_logging() -> Result<Settings, ConfigError> {
    let settings = Settings::from_env()?;
    moments::telemetry::init_as("info", settings.log_format);
    let names = std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned());
    for unknown in config::unknown_variables(names) {
        tracing::warn!(variable = %unknown.name, "{unknown}");
    }
    Ok(settings)
}

/// The index `rebuild-search` fills, and where it is. Either way the
/// instances must be stopped: the embedded index is held by its instance
/// (and refused here), and on OpenSearch a running instance's indexer
/// could write its mark into the emptied index, so that the posts below
/// it were never indexed again.
fn search_index_to_rebuild(
    settings: &moments::config::Settings,
) -> Result<(Box<dyn moments::store::search::SearchIndex>, String), String> {
    if let Some(url) = &settings.search.opensearch_url {
        let name = &settings.search.opensearch_index;
        let index = moments::store::opensearch::OpenSearchIndex::new(url, name)
            .map_err(|e| format!("no client for OpenSearch: {e}"))?;
        return Ok((Box::new(index), format!("the OpenSearch index {name}")));
    }
    let dir = settings.data_dir.join("search");
    match moments::store::embedded::search::EmbeddedSearch::open(&dir) {
        Ok(index) => Ok((Box::new(index), dir.display().to_string())),
        // Held by a running instance (tantivy's writer lock): that one
        // must stop first. Anything else (a damaged index) is for this
        // command to mend, with the folder moved aside.
        Err(e) if e.to_string().contains("LockBusy") => Err(format!(
            "the index in {} is in use; stop the instance that uses it first",
            dir.display()
        )),
        Err(e) => Err(format!(
            "the index in {} could not be opened ({e}); move that folder aside (the instance \
             stopped) and run this again",
            dir.display()
        )),
    }
}

/// `moments rebuild-live` and `moments check`, with a progress bar.
/// `moments rebuild-search`: the index is derived from the documents, so
/// it is emptied and filled again from them. The instance that uses it
/// must be stopped: it holds the index (and, on the embedded default, the
/// documents) open, and this says so rather than wait.
async fn rebuild_search() -> std::process::ExitCode {
    use std::process::ExitCode;
    let settings = match settings_and_logging() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("moments: {e}");
            return ExitCode::from(2);
        }
    };
    let (index, place) = match search_index_to_rebuild(&settings) {
        Ok(opened) => opened,
        Err(why) => {
            eprintln!("moments rebuild-search: {why}");
            return ExitCode::FAILURE;
        }
    };
    let (docs, _) = match moments::startup::connect_stores(&settings).await {
        Ok(stores) => stores,
        Err(e) => {
            eprintln!("moments: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let total = docs.totals().await.map(|(posts, _)| posts).unwrap_or(0);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "rebuild-search [{bar:40}] {pos}/{len} posts ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    moments::domain::search_text::warm_up();
    let progress = |n: u64| bar.inc(n);
    match moments::service::search::rebuild(docs.as_ref(), index.as_ref(), &progress).await {
        Ok(read) => {
            bar.finish();
            println!("indexed the posts again: read {read} (deleted ones included) into {place}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            bar.abandon();
            eprintln!("moments rebuild-search: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn repair_tool(tool: &str) -> std::process::ExitCode {
    use moments::service::jobs::live_tools;
    use std::process::ExitCode;

    let settings = match settings_and_logging() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("moments: {e}");
            return ExitCode::from(2);
        }
    };
    if settings.redis_url.is_none() {
        eprintln!(
            "moments {tool}: the live state is inside the running server when MOMENTS_REDIS_URL is \
             unset; ask it instead, as an admin: POST /api/v1/admin/live/rebuild or \
             GET /api/v1/admin/live/check"
        );
        return ExitCode::from(2);
    }
    let (docs, live) = match moments::startup::connect_stores(&settings).await {
        Ok(stores) => stores,
        Err(e) => {
            eprintln!("moments: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let total = match docs.totals().await {
        Ok((posts, users)) => posts + users,
        Err(e) => {
            eprintln!("moments: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:40}] {pos}/{len} posts and users ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(tool.to_string());
    let progress = |n: u64| bar.inc(n);
    if tool == "rebuild-live" {
        match live_tools::rebuild_live(docs.as_ref(), live.as_ref(), progress).await {
            Ok(r) => {
                bar.finish();
                println!(
                    "rebuilt the live state of {} posts and {} users",
                    r.posts, r.users
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                bar.abandon();
                eprintln!("moments rebuild-live: {e}");
                ExitCode::FAILURE
            }
        }
    } else {
        match live_tools::check_live(docs.as_ref(), live.as_ref(), progress).await {
            Ok(r) => {
                bar.finish();
                for m in &r.mismatches {
                    println!("mismatch: {m}");
                }
                println!(
                    "checked {} posts and {} users: {} mismatches, {} keys absent (rebuilt on next read)",
                    r.posts,
                    r.users,
                    r.mismatches.len(),
                    r.absent
                );
                if r.mismatches.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Err(e) => {
                bar.abandon();
                eprintln!("moments check: {e}");
                ExitCode::FAILURE
            }
        }
    }
}
