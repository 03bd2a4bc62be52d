//! Rebuilding and checking the live state from the documents, for admins
//! (the same work as `moments rebuild-live` and `moments check`).

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::AdminUser;
use crate::error::AppError;
use crate::service::jobs::live_tools::{self, CheckReport, RebuildReport};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/admin/live/rebuild",
        [(Method::POST, web::to(rebuild_live))],
    ));
    cfg.service(super::resource(
        "/admin/live/check",
        [(Method::GET, web::to(check_live))],
    ));
}

#[utoipa::path(post, path = "/api/v1/admin/live/rebuild", tag = "admin",
    responses((status = 200, body = RebuildReport)),
    security(("bearer" = [])))]
pub async fn rebuild_live(
    ctx: web::Data<Context>,
    _admin: AdminUser,
) -> Result<HttpResponse, AppError> {
    let report = live_tools::rebuild_live(ctx.docs.as_ref(), ctx.live.as_ref(), |_| {}).await?;
    Ok(HttpResponse::Ok().json(report))
}

#[utoipa::path(get, path = "/api/v1/admin/live/check", tag = "admin",
    responses((status = 200, body = CheckReport)),
    security(("bearer" = [])))]
pub async fn check_live(
    ctx: web::Data<Context>,
    _admin: AdminUser,
) -> Result<HttpResponse, AppError> {
    let report = live_tools::check_live(ctx.docs.as_ref(), ctx.live.as_ref(), |_| {}).await?;
    Ok(HttpResponse::Ok().json(report))
}
