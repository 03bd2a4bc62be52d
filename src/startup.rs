//! Builds the application: connects the stores, applies schemas, bootstraps
//! the admin, loads the device table, binds the listeners (the API's and,
//! when `MOMENTS_METRICS_LISTEN` is set, the metrics one). Tests build it on
//! port 0 and read the ports back.
//!
//! And stops it, when asked (`Stopper`; the binary asks on SIGTERM and
//! SIGINT), in this order, within `MOMENTS_SHUTDOWN_TIMEOUT_SECS`:
//! 1. stop accepting: the listening socket is shut, so a client is refused
//!    at once rather than queued;
//! 2. drain HTTP: every request already sent is answered, each with
//!    `Connection: close`, until no connection is left (or the deadline);
//!    then the servers stop, the metrics listener with them;
//! 3. fan-outs: waited for until the deadline; those left are saved, to be
//!    resumed by any instance (`service::feed::fan_out_registry`);
//! 4. background tasks: stopped, the views waiting written, and failed live
//!    updates dropped once more;
//! 5. stores: the embedded documents commit what was queued and close.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::dev::{Server, ServerHandle, Service};
use actix_web::http::ConnectionType;
use actix_web::{web, App, HttpServer};
use anyhow::Context as _;
use tokio::sync::Notify;
use tracing::Instrument;

use crate::config::{without_credentials, Settings};
use crate::http;
use crate::service::device_models::DeviceNames;
use crate::service::feed::fan_out_registry::FanOutRegistry;
use crate::service::jobs::like_arrays;
use crate::service::jobs::post_views::PostViews;
use crate::service::jobs::repair::LiveRepair;
use crate::service::jobs::shared_tables::{self, SharedCopy};
use crate::service::media::Library;
use crate::service::read::near_cache::NearCache;
use crate::service::search::Search;
use crate::service::{accounts, jobs::expiry, jobs::instance_lease, Context};
use crate::store::embedded::search::EmbeddedSearch;
use crate::store::embedded::{self, documents::EmbeddedDocs, live::MemoryLive};
use crate::store::faults::Faults;
use crate::store::media_cache::CachedMedia;
use crate::store::metered::{count_request_trips, MeteredDocs, MeteredLive, RoundTrips};
use crate::store::mongo::MongoDocs;
use crate::store::objects::ObjectMedia;
use crate::store::opensearch::OpenSearchIndex;
use crate::store::redis::RedisLive;
use crate::store::{DocStore, LiveStore, MediaStore};

/// Pins glibc's mmap threshold at its default 128 KiB. Left dynamic, glibc
/// raises it to the size of the largest block freed, so every 19 MiB argon2
/// buffer after the first is carved from the heap, fragments it, and is never
/// returned: measured, 30 registrations left the process at 280 MiB instead
/// of 12 MiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune_allocator() {
    // SAFETY: mallopt only sets an allocator parameter; it is called once,
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_allocator() {}

pub struct Application {
    port: u16,
    server: Server,
    /// The `MOMENTS_METRICS_LISTEN` listener's port and server.
    metrics: Option<(u16, Server)>,
    context: Context,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The API's listening socket, again: actix closes its own copy only
    /// once its workers have stopped, and until then the kernel would queue
    /// new connections that nobody accepts, to reset them at the end.
    listener: TcpListener,
    connections: Arc<OpenConnections>,
    /// Set while stopping: every answer then closes its connection.
    draining: Arc<AtomicBool>,
    stopper: Stopper,
}

/// Asks a running `Application` to stop gracefully; clones ask the same one.
#[derive(Clone, Default)]
pub struct Stopper(Arc<StopRequest>);

#[derive(Default)]
struct StopRequest {
    asked: AtomicBool,
    notify: Notify,
}

impl Stopper {
    pub fn stop(&self) {
        self.0.asked.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    async fn asked(&self) {
        loop {
            let notified = self.0.notify.notified();
            if self.0.asked.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// Connections to the API that are open: counted from their accept until
/// they close and their last request is done.
#[derive(Default)]
struct OpenConnections {
    open: AtomicUsize,
    closed: Notify,
}

/// Kept in a connection's extensions, so it goes when the connection does.
struct OpenConnection(Arc<OpenConnections>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
        self.0.closed.notify_waiters();
    }
}

impl OpenConnections {
    fn count(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Waits until none is open or `deadline`; true if none is.
    async fn none_by(&self, deadline: tokio::time::Instant) -> bool {
        loop {
            let closed = self.closed.notified();
            if self.count() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, closed).await.is_err() {
                return self.count() == 0;
            }
        }
    }
}

fn millis(since: Instant) -> u64 {
    since.elapsed().as_millis() as u64
}

/// Connects the stores that `settings` names: MongoDB or the embedded
/// documents, Redis or the in-process live state.
pub async fn connect_stores(
    settings: &Settings,
) -> anyhow::Result<(Arc<dyn DocStore>, Arc<dyn LiveStore>)> {
    let docs: Arc<dyn DocStore> = match &settings.mongodb_uri {
        Some(uri) => Arc::new(
            MongoDocs::connect(uri, &settings.mongodb_db)
                .await
                .with_context(|| {
                    format!("connecting to MongoDB at {}", without_credentials(uri))
                })?,
        ),
        None => {
            let db = embedded::open(&settings.data_dir, settings.docs_cache_bytes)?;
            tracing::info!(dir = %settings.data_dir.display(), "documents in the embedded store");
            Arc::new(EmbeddedDocs::new(db, settings.post_id_array_cap))
        }
    };
    let live: Arc<dyn LiveStore> = match &settings.redis_url {
        Some(url) => Arc::new(
            RedisLive::connect(url, &settings.redis_prefix, settings.live_ttl_secs)
                .await
                .with_context(|| format!("connecting to Redis at {}", without_credentials(url)))?,
        ),
        None => {
            if settings.mongodb_uri.is_some() {
                tracing::warn!(
                    "live state in process with MongoDB documents: run one instance only \
                     (rate limits and caches are per process); set MOMENTS_REDIS_URL to scale out"
                );
            }
            Arc::new(MemoryLive::with_bounds(
                settings.live_max_entries,
                settings.live_max_bytes,
                settings.live_max_counters,
            ))
        }
    };
    Ok((docs, live))
}

/// The media store that `settings` names: an S3-compatible bucket, or
/// files under the data directory.
pub fn connect_media(settings: &Settings) -> anyhow::Result<Arc<dyn MediaStore>> {
    let store: Arc<dyn MediaStore> = match &settings.media.s3 {
        Some(bucket) => {
            tracing::info!(bucket = %bucket.bucket, endpoint = %bucket.endpoint, "media in S3");
            Arc::new(ObjectMedia::s3(bucket).context("configuring the S3 media store")?)
        }
        None => {
            let dir = settings.data_dir.join("media");
            Arc::new(
                ObjectMedia::files(&dir)
                    .with_context(|| format!("opening the media folder {}", dir.display()))?,
            )
        }
    };
    Ok(match settings.media.cache_bytes {
        0 => store,
        budget => Arc::new(CachedMedia::new(store, budget)),
    })
}

/// The search index: on OpenSearch when one is set, else in the data
/// directory; without one (another instance holds the folder, or the
/// engine's client cannot be made) this instance serves everything but
/// search.
pub fn open_search(settings: &Settings) -> Search {
    if let Some(url) = &settings.search.opensearch_url {
        return match OpenSearchIndex::new(url, &settings.search.opensearch_index) {
            Ok(index) => {
                crate::domain::search_text::warm_up();
                Search::new(Arc::new(index))
            }
            Err(e) => {
                let why = format!("no client for OpenSearch: {e}");
                tracing::warn!("{why}");
                Search::unavailable(why)
            }
        };
    }
    let dir = settings.data_dir.join("search");
    match EmbeddedSearch::open(&dir) {
        Ok(index) => {
            crate::domain::search_text::warm_up();
            Search::new(Arc::new(index))
        }
        Err(e) => {
            let why = format!(
                "the search index in {} could not be opened: {e}",
                dir.display()
            );
            tracing::warn!("{why}; give each instance its own MOMENTS_DATA_DIR");
            Search::unavailable(why)
        }
    }
}

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let (docs, live) = connect_stores(&settings).await?;
        Self::build_on(settings, docs, live).await
    }

    /// Builds on stores the caller connected (tests, other backends).
    pub async fn build_on(
        settings: Settings,
        docs: Arc<dyn DocStore>,
        live: Arc<dyn LiveStore>,
    ) -> anyhow::Result<Self> {
        crate::metrics::install();
        docs.apply_schemas().await.context("applying schemas/")?;
        let lease = match settings.instance_id {
            Some(id) => {
                crate::ids::global().set_instance(id);
                None
            }
            None => {
                let lease = instance_lease::acquire(docs.as_ref())
                    .await
                    .context("leasing an instance id")?;
                tracing::info!(instance = lease.id, "leased an instance id");
                Some(lease)
            }
        };
        let round_trips = Arc::new(RoundTrips::default());
        let faults = Arc::new(Faults::default());
        let docs: Arc<dyn DocStore> =
            Arc::new(MeteredDocs::new(docs, round_trips.clone(), faults.clone()));
        let live: Arc<dyn LiveStore> =
            Arc::new(MeteredLive::new(live, round_trips.clone(), faults.clone()));
        let devices = Arc::new(DeviceNames::new());
        // A Redis outlives this process and is shared with other instances:
        // its stale keys are everyone's to know about (service/jobs/repair.rs).
        let repair = Arc::new(if settings.redis_url.is_some() {
            LiveRepair::shared(docs.clone())
        } else {
            LiveRepair::default()
        });
        repair.poll().await;
        let context = Context {
            docs: docs.clone(),
            live: live.clone(),
            devices: devices.clone(),
            content_filters: Arc::default(),
            repair: repair.clone(),
            settings: Arc::new(settings.clone()),
            round_trips,
            faults,
            pulled_authors: Arc::default(),
            near: Arc::new(NearCache::new(
                settings.near_cache_entries,
                settings.near_cache_bytes,
                settings.live_ttl_secs,
            )),
            rebuilds: Arc::default(),
            activity: Arc::default(),
            session_activity: Arc::default(),
            password_hashes: Arc::default(),
            fan_outs: Arc::new(FanOutRegistry::new(tokio::runtime::Handle::current())),
            post_views: Arc::new(PostViews::new(settings.view_buffer)),
            like_arrays_queued: settings.mongodb_uri.is_some() && settings.redis_url.is_some(),
            streams: Arc::default(),
            exports: Arc::default(),
            imports: Arc::default(),
            media: Arc::new(Library::new(connect_media(&settings)?, &settings.media)),
            search: Arc::new(open_search(&settings)),
        };
        if let Some((user, password)) = &settings.admin {
            let uid = accounts::bootstrap_admin(&context, user, password.expose())
                .await
                .map_err(|e| anyhow::anyhow!("bootstrapping the admin account: {e}"))?;
            tracing::info!(uid, username = %user, "admin account ready");
        }
        devices
            .refresh(docs.as_ref(), live.as_ref())
            .await
            .map_err(|e| anyhow::anyhow!("loading the device table: {e}"))?;
        context
            .content_filters
            .refresh(docs.as_ref(), live.as_ref())
            .await
            .map_err(|e| anyhow::anyhow!("loading the content filters: {e}"))?;
        let mut tasks = vec![
            shared_tables::spawn_refresher(
                &context.content_filters,
                docs.clone(),
                live.clone(),
                Duration::from_millis(settings.device_refresh_ms),
            ),
            shared_tables::spawn_refresher(
                &devices,
                docs.clone(),
                live.clone(),
                Duration::from_millis(settings.device_refresh_ms),
            ),
            repair.spawn(live.clone()),
            context.pulled_authors.spawn_poller(live.clone()),
            expiry::spawn(context.clone()),
            crate::service::jobs::queue_age::spawn(context.clone()),
            crate::service::stream::Hub::spawn(context.clone()).await?,
            crate::service::exports::Exports::spawn(context.clone()),
            crate::service::imports::Imports::spawn(context.clone()),
            Search::spawn_indexer(context.clone()),
            PostViews::spawn_flusher(
                context.clone(),
                Duration::from_millis(settings.view_flush_ms),
            ),
        ];
        if context.like_arrays_queued {
            tasks.push(like_arrays::spawn_applier(
                context.clone(),
                Duration::from_millis(settings.like_array_flush_ms),
            ));
        }
        if let Some(lease) = lease {
            tasks.push(instance_lease::spawn_renewal(docs.clone(), lease));
        }

        let listener = TcpListener::bind(&settings.listen)
            .with_context(|| format!("binding {}", settings.listen))?;
        let port = listener.local_addr()?.port();
        let own_listener = listener
            .try_clone()
            .context("keeping a handle on the API listener")?;
        let connections = Arc::new(OpenConnections::default());
        let draining = Arc::new(AtomicBool::new(false));
        let metrics_listener = match &settings.metrics_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .with_context(|| format!("binding MOMENTS_METRICS_LISTEN {addr}"))?,
            ),
            None => None,
        };
        let metrics_on_main_port = metrics_listener.is_none();
        let data = web::Data::new(context.clone());
        let workers = settings.workers;
        let api_data = data.clone();
        let api_draining = draining.clone();
        let counted = connections.clone();
        let mut server = HttpServer::new(move || {
            let draining = api_draining.clone();
            App::new()
                .wrap_fn(move |req, srv| {
                    let request_id =
                        http::request_id::id_for(req.headers().get(http::request_id::HEADER));
                    let span = tracing::info_span!(
                        "request",
                        request_id = %request_id,
                        method = %req.method(),
                        path = %req.path()
                    );
                    let started = std::time::Instant::now();
                    let route = req.match_pattern();
                    let method = req.method().clone();
                    let fut = srv.call(req);
                    let header = actix_web::http::header::HeaderValue::from_str(&request_id).ok();
                    let draining = draining.clone();
                    http::request_id::scope(
                        request_id,
                        async move {
                            let (mut res, (docs, live)) = count_request_trips(fut).await;
                            let status = match &res {
                                Ok(r) => r.status(),
                                Err(e) => e.as_response_error().status_code(),
                            };
                            crate::metrics::http_request(route, &method, status, started.elapsed());
                            if let Ok(r) = &mut res {
                                if let Some(h) = header {
                                    r.headers_mut().insert(http::request_id::HEADER, h);
                                }
                                // No answer is ever to be read as another
                                // type than it says (JSON as HTML, say).
                                r.headers_mut().insert(
                                    actix_web::http::header::X_CONTENT_TYPE_OPTIONS,
                                    actix_web::http::header::HeaderValue::from_static("nosniff"),
                                );
                                // Stopping: the client takes a fresh
                                // connection for its next request, and is
                                // refused, rather than race the close of
                                // this one.
                                if draining.load(Ordering::Relaxed) {
                                    r.response_mut()
                                        .head_mut()
                                        .set_connection_type(ConnectionType::Close);
                                }
                                tracing::debug!(
                                    status = r.status().as_u16(),
                                    micros = started.elapsed().as_micros() as u64,
                                    doc_round_trips = docs,
                                    live_round_trips = live,
                                    "done"
                                );
                            }
                            res
                        }
                        .instrument(span),
                    )
                })
                .app_data(api_data.clone())
                .configure(http::api)
                .configure(|cfg| {
                    if metrics_on_main_port {
                        http::ops::admin_metrics_route(cfg);
                    }
                })
                .default_service(web::to(http::not_found))
        })
        .on_connect(move |conn, extensions| {
            counted.open.fetch_add(1, Ordering::SeqCst);
            extensions.insert(OpenConnection(counted.clone()));
            #[cfg(unix)]
            if let Some(socket) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                use std::os::fd::AsRawFd;
                extensions.insert(http::stream::ConnectionSocket(socket.as_raw_fd()));
            }
        })
        .listen(listener)?
        // Stopping is ours (`run_until_stopped`): actix's SIGINT stop does
        // not wait for anything.
        .disable_signals()
        .shutdown_timeout(settings.shutdown_timeout_secs);
        if let Some(n) = workers {
            server = server.workers(n);
        }
        let metrics = match metrics_listener {
            Some(listener) => {
                let metrics_port = listener.local_addr()?.port();
                let metrics_server = HttpServer::new(move || {
                    App::new()
                        .app_data(data.clone())
                        .route("/metrics", web::get().to(http::ops::metrics))
                        .default_service(web::to(http::not_found))
                })
                .listen(listener)?
                .workers(1)
                // It stops after the API server has drained
                // (`run_until_stopped`), never on a signal of its own.
                .disable_signals()
                .shutdown_timeout(1)
                .run();
                tracing::info!(port = metrics_port, "serving /metrics");
                Some((metrics_port, metrics_server))
            }
            None => None,
        };
        let server = server.run();
        Ok(Self {
            port,
            server,
            metrics,
            context,
            tasks,
            listener: own_listener,
            connections,
            draining,
            stopper: Stopper::default(),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port of the `MOMENTS_METRICS_LISTEN` listener, when there is one.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics.as_ref().map(|(port, _)| *port)
    }

    pub fn context(&self) -> &Context {
        &self.context
    }

    /// What asks this application to stop.
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Serves until asked to stop (`stopper`), then stops in order (see the
    /// module's documentation) and returns.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        // Said here, not when built: the binary catches its signals between
        // the two, and whoever waits for this line (an orchestrator, the
        // shutdown tests) may signal at once.
        tracing::info!(
            port = self.port,
            web_client = %format!("http://127.0.0.1:{}/", self.port),
            "serving"
        );
        let Self {
            server,
            metrics,
            context,
            tasks,
            listener,
            connections,
            draining,
            stopper,
            ..
        } = self;
        let timeout = Duration::from_secs(context.settings.shutdown_timeout_secs);
        let api = server.handle();
        let (metrics_handle, metrics_server) = match metrics {
            Some((_, s)) => (Some(s.handle()), Some(s)),
            None => (None, None),
        };
        let servers = async move {
            let metrics = async {
                match metrics_server {
                    Some(s) => s.await,
                    None => Ok(()),
                }
            };
            let (api, metrics) = futures_util::future::join(server, metrics).await;
            if let Err(e) = metrics {
                tracing::warn!(error = %e, "the metrics listener failed");
            }
            api
        };
        let mut servers = std::pin::pin!(servers);
        let asked = std::pin::pin!(stopper.asked());
        let (served, deadline, started) =
            match futures_util::future::select(servers.as_mut(), asked).await {
                futures_util::future::Either::Left((served, _)) => {
                    tracing::info!("the HTTP server stopped by itself; stopping the rest");
                    (
                        served,
                        tokio::time::Instant::now() + timeout,
                        Instant::now(),
                    )
                }
                futures_util::future::Either::Right(((), _)) => {
                    let started = Instant::now();
                    let deadline = tokio::time::Instant::now() + timeout;
                    // An import's steps are background writes no request
                    // waits for: they stop now, not after the drain.
                    context.imports.stop();
                    // Streams never end by themselves: each is closed with
                    // a last `retry:`, and its connection with it.
                    let streams = context.streams.open_count();
                    context.streams.close_all(deadline).await;
                    tracing::info!(
                        streams,
                        left = context.streams.open_count(),
                        "live-update streams closed"
                    );
                    let drain = drain_http(
                        &api,
                        metrics_handle.as_ref(),
                        &listener,
                        &connections,
                        &draining,
                        deadline,
                    );
                    let (served, ()) = futures_util::future::join(servers, drain).await;
                    (served, deadline, started)
                }
            };

        let step = Instant::now();
        let fan_outs = context.fan_outs.stop(context.docs.as_ref(), deadline).await;
        tracing::info!(
            took_ms = millis(step),
            finished = fan_outs.finished,
            saved = fan_outs.saved,
            lost = fan_outs.lost,
            "fan-outs finished or saved"
        );

        let step = Instant::now();
        let (imports, exports) = futures_util::future::join(
            context.imports.hand_over(),
            context.exports.hand_over(&context),
        )
        .await;
        tracing::info!(
            took_ms = millis(step),
            exports,
            imports,
            "data exports and imports handed over"
        );

        let step = Instant::now();
        for t in &tasks {
            t.abort();
        }
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            futures_util::future::join_all(tasks),
        )
        .await;
        // The views waiting here are written now, or they would be lost.
        if let Err(e) = context.post_views.flush(&context).await {
            tracing::error!(error = %e, waiting = context.post_views.waiting(), "could not write the views waiting");
        }
        // Timelines a failed push may have missed are dropped by the repair
        // task; once this instance is gone nothing would drop them.
        if context.repair.pending_count() > 0 {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                context.repair.drain(context.live.as_ref()),
            )
            .await;
        }
        tracing::info!(
            took_ms = millis(step),
            live_repairs_left = context.repair.pending_count(),
            "background tasks stopped"
        );

        let step = Instant::now();
        match context.docs.close().await {
            Ok(()) => tracing::info!(took_ms = millis(step), "documents flushed and closed"),
            Err(e) => {
                tracing::error!(took_ms = millis(step), error = %e, "could not close the documents cleanly")
            }
        }
        tracing::info!(took_ms = millis(started), "stopped");
        served
    }
}

/// Steps 1 and 2 of stopping: stop accepting, answer every request already
/// sent, then stop the servers.
async fn drain_http(
    api: &ServerHandle,
    metrics: Option<&ServerHandle>,
    listener: &TcpListener,
    connections: &OpenConnections,
    draining: &AtomicBool,
    deadline: tokio::time::Instant,
) {
    let step = Instant::now();
    // Paused first, and a moment given to actix's acceptor thread to stop
    // polling the socket: one still polling it when it is shut logs an
    // error (not shown: `telemetry::stopping_accept`). A connection
    // completed in that moment is reset, as it would be by actix closing
    // the socket itself.
    api.pause().await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    crate::telemetry::stopping_accept();
    if let Err(e) = socket2::SockRef::from(listener).shutdown(std::net::Shutdown::Read) {
        tracing::warn!(error = %e, "could not shut the listening socket; connections made while draining are reset at the end");
    }
    draining.store(true, Ordering::SeqCst);
    tracing::info!(
        took_ms = millis(step),
        open_connections = connections.count(),
        "stopped accepting new connections"
    );

    let step = Instant::now();
    let open = connections.count();
    // Not actix's own graceful stop at once: it closes a connection whose
    // request has arrived but not started, unanswered. Left alone, each
    // connection is answered, closes after its answer, or ends by its
    // keep-alive timeout when idle.
    let drained = connections.none_by(deadline).await;
    let cut_off = connections.count();
    if !drained {
        tracing::warn!(
            cut_off,
            "the shutdown timeout passed with connections open; closing them"
        );
    }
    api.stop(drained).await;
    if let Some(m) = metrics {
        m.stop(true).await;
    }
    tracing::info!(
        took_ms = millis(step),
        connections = open,
        cut_off,
        "HTTP drained"
    );
}
