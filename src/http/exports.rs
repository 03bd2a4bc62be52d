//! Data exports: start one, follow it, and download its archive, whole or
//! by byte range (RFC 9110's `Range`, `If-Range` and `ETag`), with the
//! caller's token or a download link.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::extract::{path_id, query, AuthUser};
use crate::error::AppError;
use crate::service::exports::{self, DownloadLink, ExportView, ReadyArchive};
use crate::service::rate_limits::Traffic;
use crate::service::read::responses::Page;
use crate::service::{accounts, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/me/exports",
        [(Method::POST, web::to(start)), (Method::GET, web::to(list))],
    ));
    cfg.service(super::resource(
        "/me/exports/{id}",
        [(Method::GET, web::to(get))],
    ));
    cfg.service(super::resource(
        "/me/exports/{id}/link",
        [(Method::POST, web::to(link))],
    ));
    cfg.service(super::resource(
        "/me/exports/{id}/download",
        [(Method::GET, web::to(download))],
    ));
}

#[utoipa::path(post, path = "/api/v1/me/exports", tag = "exports",
    responses(
        (status = 202, body = ExportView, description = "queued; `GET /me/exports/{id}` follows it"),
        (status = 409, description = "an export of this account is queued or running"),
        (status = 429, description = "the last export was asked for less than MOMENTS_EXPORT_INTERVAL_SECS ago; \
                                      `Retry-After` says when the next may be"),
    ),
    security(("bearer" = [])))]
pub async fn start(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    let export = exports::start(&ctx, user.uid).await?;
    Ok(HttpResponse::Accepted()
        .insert_header((
            header::LOCATION,
            format!("/api/v1/me/exports/{}", export.id),
        ))
        .json(export))
}

#[utoipa::path(get, path = "/api/v1/me/exports", tag = "exports",
    responses((status = 200, body = Page<ExportView>, description = "the caller's exports, newest first")),
    security(("bearer" = [])))]
pub async fn list(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(exports::list(&ctx, user.uid).await?))
}

#[utoipa::path(get, path = "/api/v1/me/exports/{id}", tag = "exports",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = ExportView, description = "its state, progress, and once ready its size and download"),
        (status = 404, description = "no such export of the caller's"),
    ),
    security(("bearer" = [])))]
pub async fn get(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "export")?;
    Ok(HttpResponse::Ok().json(exports::get(&ctx, user.uid, id).await?))
}

#[utoipa::path(post, path = "/api/v1/me/exports/{id}/link", tag = "exports",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 201, body = DownloadLink, description = "a link that downloads the archive without a token for an \
                                                          hour (resumable), replacing the last one"),
        (status = 404, description = "no such export of the caller's"),
        (status = 409, description = "the export is not ready (or failed)"),
    ),
    security(("bearer" = [])))]
pub async fn link(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "export")?;
    Ok(HttpResponse::Created().json(exports::link(&ctx, user.uid, id).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DownloadQuery {
    /// The key of a link from `POST /me/exports/{id}/link`, instead of a
    /// bearer token.
    #[param(max_length = 128)]
    pub key: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/me/exports/{id}/download", tag = "exports",
    params(("id" = i64, Path, minimum = 1), DownloadQuery,
        ("Range" = Option<String>, Header, description = "one range of bytes (`bytes=0-99`, `bytes=100-`, \
                                                           `bytes=-100`) to resume a download; others are ignored"),
        ("If-Range" = Option<String>, Header, description = "the ETag the earlier bytes came with: a range of \
                                                              another archive is not sent, the whole one is")),
    responses(
        (status = 200, content_type = "application/zip", body = Vec<u8>,
         description = "the whole archive, with `Content-Length`, `ETag` and `Accept-Ranges: bytes`"),
        (status = 206, content_type = "application/zip", body = Vec<u8>,
         description = "the range asked for, with `Content-Range`"),
        (status = 401, description = "no valid token, or an unknown or expired link"),
        (status = 404, description = "no such export of the caller's, or it expired"),
        (status = 409, description = "the export is not ready (or failed)"),
        (status = 416, description = "the range starts past the end; `Content-Range: bytes */size` says the size"),
        (status = 429, description = "past the address's read budget (a link's request is charged before its \
                                      key is read), or MOMENTS_EXPORT_DOWNLOADS downloads of this export are \
                                      in progress; `Retry-After` says when to try again"),
    ),
    security(("bearer" = []), ()))]
pub async fn download(
    ctx: web::Data<Context>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "export")?;
    let q: DownloadQuery = query(&req)?;
    let archive = match q.key.as_deref() {
        Some(key) => {
            // Charged to the address before the key is read: a made-up key
            // costs the store two reads, and spends the budget like a real
            // one.
            let origin = super::extract::origin(&req, &ctx);
            accounts::limit_anonymous(&ctx, Traffic::Read, &origin).await?;
            exports::archive_by_link(&ctx, id, key).await?
        }
        None => {
            let c = super::extract::Credentials::of(&req, &ctx)?;
            let who = accounts::authenticate(&ctx, &c.token, c.traffic, &c.origin).await?;
            exports::archive_of(&ctx, who.uid, id).await?
        }
    };
    let etag = format!("\"{}\"", archive.sha256);
    let range = wanted_range(&req, &etag, archive.size);
    let (status, start, end) = match range {
        Wanted::Whole => (StatusCode::OK, 0, archive.size),
        Wanted::Part(start, end) => (StatusCode::PARTIAL_CONTENT, start, end),
        Wanted::Unsatisfiable => {
            return Ok(HttpResponse::RangeNotSatisfiable()
                .insert_header((header::CONTENT_RANGE, format!("bytes */{}", archive.size)))
                .insert_header((header::CONTENT_TYPE, "application/problem+json"))
                .body(
                    serde_json::json!({
                        "type": "about:blank",
                        "title": "Range Not Satisfiable",
                        "status": 416,
                        "detail": format!("the archive has {} bytes", archive.size),
                    })
                    .to_string(),
                ))
        }
    };
    let slot = exports::download::admit(&ctx, archive.id)?;
    let mut resp = HttpResponse::build(status);
    resp.insert_header((header::CONTENT_TYPE, "application/zip"))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            HeaderValue::from_str(&attachment_name(&archive))
                .map_err(|e| AppError::Internal(e.into()))?,
        ));
    if status == StatusCode::PARTIAL_CONTENT {
        resp.insert_header((
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{}", end - 1, archive.size),
        ));
    }
    Ok(resp
        .no_chunking(end - start)
        .streaming(exports::read_range(&ctx, archive, start, end, slot)))
}

fn attachment_name(a: &ReadyArchive) -> String {
    let day = crate::domain::calendar::utc_text(a.created_at);
    let day = day.get(..10).unwrap_or("archive");
    format!("attachment; filename=\"moments-{}-{day}.zip\"", a.uid)
}

#[derive(Debug, PartialEq)]
enum Wanted {
    Whole,
    /// Bytes `start..end`.
    Part(u64, u64),
    Unsatisfiable,
}

/// What to send for the request's `Range` (RFC 9110 §14): one range is
/// honoured; none, several, a malformed one, or an `If-Range` that is not
/// this archive's ETag get the whole archive.
fn wanted_range(req: &HttpRequest, etag: &str, size: u64) -> Wanted {
    let Some(raw) = req.headers().get(header::RANGE) else {
        return Wanted::Whole;
    };
    if let Some(if_range) = req.headers().get(header::IF_RANGE) {
        if if_range.as_bytes() != etag.as_bytes() {
            return Wanted::Whole;
        }
    }
    raw.to_str()
        .map_or(Wanted::Whole, |raw| parse_range(raw, size))
}

fn parse_range(raw: &str, size: u64) -> Wanted {
    let Some(spec) = raw.trim().strip_prefix("bytes=") else {
        return Wanted::Whole;
    };
    if spec.contains(',') {
        return Wanted::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Wanted::Whole;
    };
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim(), last.trim()) {
        ("", suffix) => match number(suffix) {
            Some(0) => Wanted::Unsatisfiable,
            Some(n) if size > 0 => Wanted::Part(size.saturating_sub(n), size),
            Some(_) => Wanted::Unsatisfiable,
            None => Wanted::Whole,
        },
        (from, "") => match number(from) {
            Some(start) if start < size => Wanted::Part(start, size),
            Some(_) => Wanted::Unsatisfiable,
            None => Wanted::Whole,
        },
        (from, to) => match (number(from), number(to)) {
            (Some(start), Some(last)) if start <= last => {
                if start >= size {
                    Wanted::Unsatisfiable
                } else {
                    Wanted::Part(start, last.min(size - 1) + 1)
                }
            }
            _ => Wanted::Whole,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_range, Wanted};

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        let size = 1000;
        let cases: &[(&str, Wanted)] = &[
            ("bytes=0-99", Wanted::Part(0, 100)),
            ("bytes=100-", Wanted::Part(100, 1000)),
            ("bytes=-100", Wanted::Part(900, 1000)),
            ("bytes=-5000", Wanted::Part(0, 1000)),
            ("bytes=990-5000", Wanted::Part(990, 1000)),
            ("bytes=999-999", Wanted::Part(999, 1000)),
            ("bytes=1000-", Wanted::Unsatisfiable),
            ("bytes=1000-1001", Wanted::Unsatisfiable),
            ("bytes=-0", Wanted::Unsatisfiable),
            // Ignored, so the whole archive: several ranges, another
            // unit, a backwards or malformed one.
            ("bytes=0-1,5-6", Wanted::Whole),
            ("items=0-1", Wanted::Whole),
            ("bytes=5-1", Wanted::Whole),
            ("bytes=a-b", Wanted::Whole),
            ("bytes=+1-2", Wanted::Whole),
            ("bytes=-", Wanted::Whole),
        ];
        for (raw, want) in cases {
            assert_eq!(&parse_range(raw, size), want, "{raw}");
        }
    }
}
