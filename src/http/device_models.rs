//! The device-model table, for admins: each raw model a phone reports
//! and the names it shows as.

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};

use super::extract::{parse_json_object, read_body, AdminUser, Body};
use crate::domain::device_models::DeviceModelRequest;
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::device_models::{
    self, DeviceModelView, DeviceModelsPreview, ImportFormat, ImportRow,
};
use crate::service::read::responses::Page;
use crate::service::Context;

/// `{model}` in a path: a raw model, any case and spacing.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // read by utoipa only: handlers take the segment as a string
struct ModelPath {
    /// A raw device model as phones report it, any case and spacing.
    #[param(schema_with = crate::domain::device_models::model_schema)]
    model: String,
}

/// The JSON way to write an import: 1 to 10,000 rows. (A schema only: the
/// import parses rows one by one, to name the bad one.)
struct ImportRows;

impl utoipa::PartialSchema for ImportRows {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ArrayBuilder::new()
            .items(utoipa::openapi::Ref::from_schema_name("ImportRow"))
            .min_items(Some(1))
            .max_items(Some(device_models::MAX_IMPORT_ROWS))
            .into()
    }
}
impl utoipa::ToSchema for ImportRows {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        schemas.push((
            "ImportRow".into(),
            <ImportRow as utoipa::PartialSchema>::schema(),
        ));
    }
}

/// The CSV way to write an import (a schema only).
struct ImportCsv;

impl utoipa::PartialSchema for ImportCsv {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        device_models::csv_import_schema().into()
    }
}
impl utoipa::ToSchema for ImportCsv {}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct Imported {
    /// Rows written (added or replaced).
    imported: usize,
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/admin/device-models",
        [(Method::GET, web::to(list))],
    ));
    // The literal path wins over `{model}`, as in the document: a model
    // whose key is "import" is written by an import, not by its path.
    cfg.service(super::resource(
        "/admin/device-models/import",
        [(Method::POST, web::to(import))],
    ));
    cfg.service(super::resource(
        "/admin/device-models/import/preview",
        [(Method::POST, web::to(preview_import))],
    ));
    cfg.service(super::resource(
        "/admin/device-models/{model}",
        [
            (Method::PUT, web::to(upsert)),
            (Method::DELETE, web::to(delete)),
        ],
    ));
}

#[utoipa::path(get, path = "/api/v1/admin/device-models", tag = "admin",
    responses((status = 200, body = Page<DeviceModelView>, description = "the whole table, on one page")),
    security(("bearer" = [])))]
pub async fn list(ctx: web::Data<Context>, _admin: AdminUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(Page {
        items: device_models::list(&ctx).await?,
        next_cursor: None,
        server_time: now_ms(),
    }))
}

#[utoipa::path(put, path = "/api/v1/admin/device-models/{model}", tag = "admin",
    params(ModelPath),
    request_body = DeviceModelRequest,
    responses((status = 200, body = DeviceModelView, description = "added or replaced")),
    security(("bearer" = [])))]
pub async fn upsert(
    ctx: web::Data<Context>,
    admin: AdminUser,
    model: web::Path<String>,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let req: DeviceModelRequest = parse_json_object(&body)?;
    Ok(HttpResponse::Ok().json(device_models::upsert(&ctx, admin.0, &model, req).await?))
}

#[utoipa::path(delete, path = "/api/v1/admin/device-models/{model}", tag = "admin",
    params(ModelPath),
    responses((status = 204, description = "removed"), (status = 404, description = "not in the table")),
    security(("bearer" = [])))]
pub async fn delete(
    ctx: web::Data<Context>,
    _admin: AdminUser,
    model: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    device_models::delete(&ctx, &model).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = "/api/v1/admin/device-models/import", tag = "admin",
    request_body(description = "all rows or none: one bad row refuses the import, naming the row",
        content((ImportRows = "application/json"), (ImportCsv = "text/csv"))),
    responses((status = 200, body = Imported)), security(("bearer" = [])))]
pub async fn import(
    ctx: web::Data<Context>,
    admin: AdminUser,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    let models = read_import(&req, payload).await?;
    let imported = device_models::import(&ctx, admin.0, models).await?;
    Ok(HttpResponse::Ok().json(Imported { imported }))
}

#[utoipa::path(post, path = "/api/v1/admin/device-models/import/preview", tag = "admin",
    request_body(description = "an import as `POST /admin/device-models/import` takes it; nothing is written",
        content((ImportRows = "application/json"), (ImportCsv = "text/csv"))),
    responses((status = 200, body = DeviceModelsPreview, description = "what the import would add and change")),
    security(("bearer" = [])))]
pub async fn preview_import(
    ctx: web::Data<Context>,
    _admin: AdminUser,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    let models = read_import(&req, payload).await?;
    Ok(HttpResponse::Ok().json(device_models::preview_import(&ctx, models).await?))
}

/// An import's body, parsed whole (JSON or CSV by its Content-Type).
async fn read_import(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<Vec<crate::domain::device_models::DeviceModel>, AppError> {
    // A whole table is bigger than any other body; only an admin may send
    // one, so it is read after the role is checked.
    let body = read_body(payload, device_models::MAX_IMPORT_BYTES).await?;
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
    device_models::parse_import(&body, format)
}
