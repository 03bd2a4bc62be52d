//! Importing lists of people: a preview of what an import would do, the
//! import itself (applied in the background), and following it.

use actix_web::http::{header, Method};
use actix_web::{web, HttpRequest, HttpResponse};

use super::extract::{parse_json_object, path_id, read_body, AuthUser};
use crate::domain::people_csv;
use crate::error::AppError;
use crate::service::imports::{self, ImportPreview, ImportRequest, ImportView};
use crate::service::read::responses::Page;
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/me/imports/preview",
        [(Method::POST, web::to(preview))],
    ));
    cfg.service(super::resource(
        "/me/imports",
        [(Method::POST, web::to(start)), (Method::GET, web::to(list))],
    ));
    cfg.service(super::resource(
        "/me/imports/{id}",
        [(Method::GET, web::to(get))],
    ));
}

/// The body: a list is bigger than any other body a user sends, so it has
/// a limit of its own, read after the caller is known. The list's cap is
/// on the CSV itself (checked once parsed); in the JSON body it may be
/// escaped to three times its size (`\n` is 2 bytes for 1, an ASCII-only
/// encoder's `\uXXXX` 6 bytes for 3 of UTF-8 and 12 for 4), which a list
/// within its cap must not be refused for.
pub const BODY_LIMIT: usize = 3 * people_csv::MAX_BYTES + 4096;

async fn request(payload: web::Payload) -> Result<ImportRequest, AppError> {
    let body = read_body(payload, BODY_LIMIT).await?;
    parse_json_object(&body)
}

/// This service's host name as the client addressed it: `user@host` rows
/// naming it are accounts here.
fn host(req: &HttpRequest) -> String {
    let raw = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    // Without its port; an IPv6 literal keeps its brackets.
    match raw.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !h.is_empty() => h,
        _ => raw,
    }
    .to_ascii_lowercase()
}

#[utoipa::path(post, path = "/api/v1/me/imports/preview", tag = "imports",
    request_body = ImportRequest,
    responses(
        (status = 200, body = ImportPreview, description = "what the import would add and remove, and each row it \
                                                            cannot use; nothing is written"),
        (status = 413, description = "a list over 1 MiB"),
        (status = 429, description = "past MOMENTS_RATE_IMPORT_ROWS rows today"),
    ),
    security(("bearer" = [])))]
pub async fn preview(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    let body = request(payload).await?;
    Ok(HttpResponse::Ok().json(imports::plan(&ctx, user.uid, &body, &host(&req)).await?))
}

#[utoipa::path(post, path = "/api/v1/me/imports", tag = "imports",
    request_body = ImportRequest,
    responses(
        (status = 202, body = ImportView, description = "queued; `GET /me/imports/{id}` follows it"),
        (status = 200, body = ImportView, description = "a retry: the import of this plan made already"),
        (status = 409, description = "the plan is not the `planId` previewed, or another import is running"),
        (status = 413, description = "a list over 1 MiB"),
        (status = 429, description = "past MOMENTS_RATE_IMPORT_ROWS rows today"),
    ),
    security(("bearer" = [])))]
pub async fn start(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    let body = request(payload).await?;
    let (import, made) = imports::start(&ctx, user.uid, &body, &host(&req)).await?;
    let mut resp = if made {
        HttpResponse::Accepted()
    } else {
        HttpResponse::Ok()
    };
    Ok(resp
        .insert_header((
            header::LOCATION,
            format!("/api/v1/me/imports/{}", import.id),
        ))
        .json(import))
}

#[utoipa::path(get, path = "/api/v1/me/imports", tag = "imports",
    responses((status = 200, body = Page<ImportView>, description = "the caller's imports, newest first")),
    security(("bearer" = [])))]
pub async fn list(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(imports::list(&ctx, user.uid).await?))
}

#[utoipa::path(get, path = "/api/v1/me/imports/{id}", tag = "imports",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = ImportView, description = "its state and progress"),
        (status = 404, description = "no such import of the caller's"),
    ),
    security(("bearer" = [])))]
pub async fn get(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "import")?;
    Ok(HttpResponse::Ok().json(imports::get(&ctx, user.uid, id).await?))
}
