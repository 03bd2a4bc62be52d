//! Liveness, readiness, metrics and the API description, outside `/api/v1`.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde_json::json;

use super::extract::AdminUser;
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/healthz",
        [(Method::GET, web::to(healthz))],
    ));
    cfg.service(super::resource("/readyz", [(Method::GET, web::to(readyz))]));
    cfg.service(super::resource(
        "/openapi.json",
        [(Method::GET, web::to(openapi))],
    ));
}

/// The process is up and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// Both stores answer; 503 with which one does not. Only "ok" or
/// "unavailable": the driver's words (hosts, ports, versions) go to the log.
pub async fn readyz(ctx: web::Data<Context>) -> HttpResponse {
    let (docs, live) = tokio::join!(ctx.docs.ping(), ctx.live.ping());
    let status = |store: &str, r: &Result<(), crate::store::StoreError>| match r {
        Ok(()) => "ok",
        Err(e) => {
            tracing::warn!(store, error = %e, "not ready");
            "unavailable"
        }
    };
    let (docs_status, live_status) = (status("documents", &docs), status("live", &live));
    let body = json!({ "documents": docs_status, "live": live_status });
    if docs.is_ok() && live.is_ok() {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

pub async fn openapi() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(super::openapi::document())
}

/// `GET /metrics` on the main port, for admins: the scrape shows every
/// route's traffic and errors, which is no business of the public.
pub fn admin_metrics_route(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/metrics",
        [(Method::GET, web::to(metrics_for_admin))],
    ));
}

async fn metrics_for_admin(_admin: AdminUser, ctx: web::Data<Context>) -> HttpResponse {
    metrics(ctx).await
}

/// The Prometheus scrape. Unguarded: served as is only on
/// `MOMENTS_METRICS_LISTEN`, an address meant for the scraper alone.
pub async fn metrics(ctx: web::Data<Context>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(crate::metrics::render(ctx.repair.pending_count()))
}
