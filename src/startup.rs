//! Builds the application: connects the stores, applies schemas, bootstraps
//! the admin, loads the device table, binds the listeners (the API's and,
//! when `MOMENTS_METRICS_LISTEN` is set, the metrics one). Tests build it on
//! port 0 and read the ports back.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, Service};
use actix_web::{web, App, HttpServer};
use anyhow::Context as _;
use tracing::Instrument;

use crate::config::Settings;
use crate::http;
use crate::service::device_names::DeviceNames;
use crate::service::fan_outs::FanOuts;
use crate::service::repair::LiveRepair;
use crate::service::{accounts, expiry, instance_lease, Context};
use crate::store::embedded::{self, docs::EmbeddedDocs, live::MemoryLive};
use crate::store::metered::{count_request_trips, MeteredDocs, MeteredLive, RoundTrips};
use crate::store::mongo::MongoDocs;
use crate::store::redis::RedisLive;
use crate::store::{DocStore, LiveStore};

pub struct Application {
    port: u16,
    server: Server,
    /// The `MOMENTS_METRICS_LISTEN` listener's port and server.
    metrics: Option<(u16, Server)>,
    context: Context,
    tasks: Vec<tokio::task::JoinHandle<()>>,
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
                .with_context(|| format!("connecting to MongoDB at {}", redact(uri)))?,
        ),
        None => {
            let db = embedded::open(&settings.data_dir)?;
            tracing::info!(dir = %settings.data_dir.display(), "documents in the embedded store");
            Arc::new(EmbeddedDocs::new(db, settings.post_id_array_cap))
        }
    };
    let live: Arc<dyn LiveStore> = match &settings.redis_url {
        Some(url) => Arc::new(
            RedisLive::connect(url, &settings.redis_prefix, settings.live_ttl_secs)
                .await
                .with_context(|| format!("connecting to Redis at {}", redact(url)))?,
        ),
        None => {
            if settings.mongodb_uri.is_some() {
                tracing::warn!(
                    "live state in process with MongoDB documents: run one instance only \
                     (rate limits and caches are per process); set MOMENTS_REDIS_URL to scale out"
                );
            }
            Arc::new(MemoryLive::new(settings.live_max_entries))
        }
    };
    Ok((docs, live))
}

/// A store URL without its credentials, fit for logs and error messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_string(),
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
        let docs: Arc<dyn DocStore> = Arc::new(MeteredDocs::new(docs, round_trips.clone()));
        let live: Arc<dyn LiveStore> = Arc::new(MeteredLive::new(live, round_trips.clone()));
        let devices = Arc::new(DeviceNames::new());
        let repair = Arc::new(LiveRepair::default());
        let context = Context {
            docs: docs.clone(),
            live: live.clone(),
            devices: devices.clone(),
            repair: repair.clone(),
            settings: Arc::new(settings.clone()),
            round_trips,
            celebrity_cache: Arc::default(),
            rebuilds: Arc::default(),
            activity: Arc::default(),
            session_activity: Arc::default(),
            fan_outs: Arc::new(FanOuts::new(tokio::runtime::Handle::current())),
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
        let mut tasks = vec![
            devices.spawn_refresher(
                docs.clone(),
                live.clone(),
                Duration::from_millis(settings.device_refresh_ms),
            ),
            repair.spawn(live.clone()),
            expiry::spawn(context.clone()),
        ];
        if let Some(lease) = lease {
            tasks.push(instance_lease::spawn_renewal(docs.clone(), lease));
        }

        let listener = TcpListener::bind(&settings.listen)
            .with_context(|| format!("binding {}", settings.listen))?;
        let port = listener.local_addr()?.port();
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
        let mut server = HttpServer::new(move || {
            App::new()
                .wrap_fn(|req, srv| {
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
        .listen(listener)?
        .shutdown_timeout(5);
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
                // It stops with the API server (`run_until_stopped`), never
                // before it on a signal of its own.
                .disable_signals()
                .shutdown_timeout(1)
                .run();
                tracing::info!(port = metrics_port, "serving /metrics");
                Some((metrics_port, metrics_server))
            }
            None => None,
        };
        let server = server.run();
        tracing::info!(port, "serving");
        Ok(Self {
            port,
            server,
            metrics,
            context,
            tasks,
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

    /// Serves until the API server stops (a signal, or its handle), then
    /// stops the metrics listener and the background tasks.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let Self {
            server,
            metrics,
            tasks,
            ..
        } = self;
        let r = match metrics {
            Some((_, metrics_server)) => {
                let stop_metrics = metrics_server.handle();
                let api = async {
                    let r = server.await;
                    stop_metrics.stop(true).await;
                    r
                };
                let (r, metrics_result) = futures_util::future::join(api, metrics_server).await;
                if let Err(e) = metrics_result {
                    tracing::warn!(error = %e, "the metrics listener failed");
                }
                r
            }
            None => server.await,
        };
        for t in tasks {
            t.abort();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn store_urls_lose_their_credentials_in_messages() {
        assert_eq!(
            super::redact("redis://:s3cret@cache:6379/0"),
            "redis://***@cache:6379/0"
        );
        assert_eq!(
            super::redact("mongodb://app:pw@db1,db2/?replicaSet=rs"),
            "mongodb://***@db1,db2/?replicaSet=rs"
        );
        assert_eq!(
            super::redact("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
    }
}
