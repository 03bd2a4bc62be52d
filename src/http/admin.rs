//! The device-model table, for admins.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use super::extract::{parse_json, AdminUser, Body};
use crate::domain::device::DeviceModelRequest;
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::device_names::{self, DeviceModelView, ImportFormat};
use crate::service::live_tools::{self, CheckReport, RebuildReport};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/device-models", web::get().to(list))
        .route("/admin/device-models/import", web::post().to(import))
        .route("/admin/device-models/{model}", web::put().to(upsert))
        .route("/admin/device-models/{model}", web::delete().to(delete))
        .route("/admin/live/rebuild", web::post().to(rebuild_live))
        .route("/admin/live/check", web::get().to(check_live));
}

#[utoipa::path(post, path = "/api/v1/admin/live/rebuild", tag = "admin",
    responses((status = 200, body = RebuildReport), (status = 403, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn rebuild_live(
    ctx: web::Data<Context>,
    _admin: AdminUser,
) -> Result<HttpResponse, AppError> {
    let report = live_tools::rebuild_live(ctx.docs.as_ref(), ctx.live.as_ref(), |_| {}).await?;
    Ok(HttpResponse::Ok().json(report))
}

#[utoipa::path(get, path = "/api/v1/admin/live/check", tag = "admin",
    responses((status = 200, body = CheckReport), (status = 403, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn check_live(
    ctx: web::Data<Context>,
    _admin: AdminUser,
) -> Result<HttpResponse, AppError> {
    let report = live_tools::check_live(ctx.docs.as_ref(), ctx.live.as_ref(), |_| {}).await?;
    Ok(HttpResponse::Ok().json(report))
}

#[utoipa::path(get, path = "/api/v1/admin/device-models", tag = "admin",
    responses((status = 200, description = "{items: [DeviceModelView], nextCursor: null, serverTime}"),
              (status = 403, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn list(ctx: web::Data<Context>, _admin: AdminUser) -> Result<HttpResponse, AppError> {
    let items = device_names::list(&ctx).await?;
    Ok(HttpResponse::Ok()
        .json(json!({ "items": items, "nextCursor": null, "serverTime": now_ms() })))
}

#[utoipa::path(put, path = "/api/v1/admin/device-models/{model}", tag = "admin",
    params(("model" = String, Path, description = "raw model, any case and spacing")),
    request_body = DeviceModelRequest,
    responses((status = 200, body = DeviceModelView), (status = 400, body = super::problem::Problem),
              (status = 403, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn upsert(
    ctx: web::Data<Context>,
    admin: AdminUser,
    model: web::Path<String>,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let req: DeviceModelRequest = parse_json(&body)?;
    Ok(HttpResponse::Ok().json(device_names::upsert(&ctx, admin.0, &model, req).await?))
}

#[utoipa::path(delete, path = "/api/v1/admin/device-models/{model}", tag = "admin",
    params(("model" = String, Path)),
    responses((status = 204), (status = 404, body = super::problem::Problem), (status = 403, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn delete(
    ctx: web::Data<Context>,
    _admin: AdminUser,
    model: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    device_names::delete(&ctx, &model).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = "/api/v1/admin/device-models/import", tag = "admin",
    request_body(content = String, description = "A JSON array of {model, displayName: {zh, en}, brand} (application/json), or CSV with a header row model,zh,en[,brand] (text/csv)"),
    responses((status = 200, description = "{imported: N}"), (status = 400, body = super::problem::Problem),
              (status = 403, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn import(
    ctx: web::Data<Context>,
    admin: AdminUser,
    req: HttpRequest,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let content_type = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let format = if content_type.starts_with("text/csv") {
        ImportFormat::Csv
    } else if content_type.is_empty() || content_type.contains("json") {
        ImportFormat::Json
    } else {
        return Err(AppError::invalid(
            "Content-Type",
            "send application/json or text/csv",
        ));
    };
    let models = device_names::parse_import(&body, format)?;
    let imported = device_names::import(&ctx, admin.0, models).await?;
    Ok(HttpResponse::Ok().json(json!({ "imported": imported })))
}
