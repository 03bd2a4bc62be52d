//! Liveness, readiness and the API description, outside `/api/v1`.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/openapi.json", web::get().to(openapi));
}

/// The process is up and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// Both stores answer; 503 with which one does not.
pub async fn readyz(ctx: web::Data<Context>) -> HttpResponse {
    let (docs, live) = tokio::join!(ctx.docs.ping(), ctx.live.ping());
    let status = |r: &Result<(), crate::store::StoreError>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => e.to_string(),
    };
    let body = json!({ "documents": status(&docs), "live": status(&live) });
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
