//! Media: uploading a picture (`multipart/form-data`), reading, describing
//! and deleting one's own uploads, and serving the stored renditions at
//! `/media/{key}/{rendition}.{ext}` (`files`), which the default media
//! URLs name.

use actix_web::body::SizedStream;
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures_util::{StreamExt, TryStreamExt};

use super::extract::{path_id, AuthUser, JsonBody};
use crate::domain::media::{
    parse_description, Encoding, Focus, MediaKey, MediaPatchRequest, Rendition,
    MAX_DESCRIPTION_CHARS,
};
use crate::error::AppError;
use crate::service::media::uploads::{self, Upload};
use crate::service::media::MediaView;
use crate::service::Context;
use crate::store::ByteRange;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/media", [(Method::POST, web::to(upload))]));
    cfg.service(super::resource(
        "/media/{id}",
        [
            (Method::GET, web::to(get)),
            (Method::PUT, web::to(describe)),
            (Method::DELETE, web::to(delete)),
        ],
    ));
}

/// The stored renditions, outside `/api/v1`: what `MOMENTS_MEDIA_BASE_URL`
/// names by default. A static prefix whose handler reads the rest of the
/// path itself: a `{key}/{file}` pattern is matched by a regex on every
/// request, which was 2% of serving a preview (BENCHMARKS.md, "Photos").
pub fn files(cfg: &mut web::ServiceConfig) {
    cfg.service(web::scope("/media").default_service(web::to(serve)));
}

/// Room in a form beyond its file: the part headers and boundaries, the
/// alt text and the focus.
const FORM_SLACK: usize = 64 * 1024;

/// The longest an upload's body may pause between two bytes.
const IDLE: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a body stopped arriving, as a payload error carries it.
const IDLE_MESSAGE: &str = "no byte of the body for 30 s";

/// The upload form, as the OpenAPI document types it.
/// Its serde attributes are what the document reads (no other field is
/// taken); the handler reads the parts itself.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The picture: JPEG, PNG, WebP or GIF (its first frame), at most
    /// `MOMENTS_MEDIA_MAX_BYTES` (16 MiB by default). Its part's content
    /// type, if it names an image format, must be the one the bytes are.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// Alt text, at most 1,500 characters.
    #[schema(schema_with = crate::domain::media::description_text_schema)]
    description: Option<String>,
    /// `"x,y"`, each from -1 to 1: where a crop should stay.
    #[schema(schema_with = focus_form_schema)]
    focus: Option<String>,
}

/// A form that could not be read; `limit` is the file's bound, which a
/// body past its own bound overstepped.
fn focus_form_schema() -> utoipa::openapi::Object {
    crate::domain::media::focus_text_schema(false)
}

fn form_error(e: actix_multipart::MultipartError, limit: usize) -> AppError {
    use actix_web::error::PayloadError;
    match e {
        actix_multipart::MultipartError::Payload(PayloadError::Overflow) => {
            AppError::PayloadTooLarge { limit }
        }
        actix_multipart::MultipartError::Payload(PayloadError::Io(e))
            if e.kind() == std::io::ErrorKind::TimedOut =>
        {
            AppError::RequestTimeout("30 s of the last byte")
        }
        other => AppError::invalid(
            "body",
            format!("not a readable multipart/form-data body: {other}"),
        ),
    }
}

/// A part's bytes, refused with `too_big` past `max`.
async fn read_part(
    mut field: actix_multipart::Field,
    max: usize,
    too_big: impl Fn() -> AppError,
    file_limit: usize,
) -> Result<Bytes, AppError> {
    let mut out = BytesMut::new();
    while let Some(chunk) = field
        .try_next()
        .await
        .map_err(|e| form_error(e, file_limit))?
    {
        if out.len() + chunk.len() > max {
            return Err(too_big());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

fn text_part(bytes: &[u8], field: &str) -> Result<String, AppError> {
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| AppError::invalid(field, "must be UTF-8 text"))
}

#[utoipa::path(post, path = "/api/v1/media", tag = "media",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, body = MediaView, description = "stored: the original (upright, capped on its long side, without any metadata), a preview for the grid and a blurhash; attach it to a post with `mediaIds`. Deleted after `MOMENTS_MEDIA_UNATTACHED_HOURS` if no post takes it"),
        (status = 400, description = "not a multipart/form-data body, no `file`, an unknown field, a bad `description` or `focus`"),
        (status = 408, description = "the body did not arrive within `MOMENTS_MEDIA_RECEIVE_SECONDS`, or 30 s passed without a byte of it"),
        (status = 413, description = "the file is larger than `MOMENTS_MEDIA_MAX_BYTES`"),
        (status = 422, description = "not a JPEG, PNG, WebP or GIF picture; sent as one format and being another; cut short or damaged; more pixels than `MOMENTS_MEDIA_MAX_PIXELS`"),
        (status = 429, description = "the account's media quota (`MOMENTS_RATE_MEDIA_BYTES`) is spent, or it has `MOMENTS_MEDIA_UPLOADS_PER_ACCOUNT` uploads under way"),
        (status = 503, description = "too many uploads at once, or the media store does not answer; try again after `Retry-After`"),
    ),
    security(("bearer" = [])))]
pub async fn upload(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    // Taken before a byte of the body is read, and held until answered.
    let _slot = ctx.media.admit(user.uid)?;
    let max = ctx.settings.media.max_bytes;
    let too_big = || AppError::PayloadTooLarge { limit: max };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > max + FORM_SLACK) {
        return Err(too_big());
    }
    // The whole body is bounded too, whatever its parts say of themselves,
    // and so is every pause in it: a place is not held by a client that
    // sends a byte a minute.
    let bounded =
        futures_util::stream::unfold((payload, 0usize), move |(mut payload, seen)| async move {
            use actix_web::error::PayloadError;
            let next = match tokio::time::timeout(IDLE, payload.next()).await {
                Err(_) => Err(PayloadError::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    IDLE_MESSAGE,
                ))),
                Ok(None) => return None,
                Ok(Some(chunk)) => chunk,
            };
            let seen = seen + next.as_ref().map_or(0, Bytes::len);
            let next = next.and_then(|chunk| {
                if seen > max + FORM_SLACK {
                    Err(PayloadError::Overflow)
                } else {
                    Ok(chunk)
                }
            });
            Some((next, (payload, seen)))
        })
        // The form reader may ask again after the end.
        .fuse();
    let form = actix_multipart::Multipart::new(req.headers(), bounded);
    let deadline = std::time::Duration::from_secs(ctx.settings.media.receive_secs);
    let upload = tokio::time::timeout(deadline, read_form(form, max))
        .await
        .map_err(|_| AppError::RequestTimeout("MOMENTS_MEDIA_RECEIVE_SECONDS"))??;
    let view = uploads::upload(&ctx, user.uid, upload).await?;
    Ok(HttpResponse::Created().json(view))
}

/// The upload's parts: its file, and its alt text and focus if given.
async fn read_form(mut form: actix_multipart::Multipart, max: usize) -> Result<Upload, AppError> {
    let too_big = || AppError::PayloadTooLarge { limit: max };
    let (mut file, mut description, mut focus) = (None, String::new(), None);
    while let Some(field) = form.try_next().await.map_err(|e| form_error(e, max))? {
        let name = field.name().unwrap_or_default().to_string();
        match name.as_str() {
            "file" if file.is_some() => {
                return Err(AppError::invalid("file", "one file per upload"));
            }
            "file" => {
                let content_type = field
                    .content_type()
                    .map(|m| m.essence_str().to_string())
                    .unwrap_or_default();
                let bytes = read_part(field, max, too_big, max).await?;
                file = Some((bytes, content_type));
            }
            "description" => {
                let too_long = || {
                    AppError::invalid(
                        "description",
                        format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
                    )
                };
                let bytes = read_part(field, 4 * MAX_DESCRIPTION_CHARS, too_long, max).await?;
                description = parse_description(&text_part(&bytes, "description")?)?;
            }
            "focus" => {
                let bad = || AppError::invalid("focus", "must be \"x,y\", each from -1 to 1");
                let bytes = read_part(field, 64, bad, max).await?;
                focus = Some(Focus::parse(&text_part(&bytes, "focus")?)?);
            }
            _ => {
                return Err(AppError::invalid(
                    if name.is_empty() {
                        "body"
                    } else {
                        name.as_str()
                    },
                    "not a field of an upload (file, description, focus)",
                ))
            }
        }
    }
    let (bytes, content_type) =
        file.ok_or_else(|| AppError::invalid("file", "the picture is required"))?;
    Ok(Upload {
        bytes,
        content_type,
        description,
        focus,
    })
}

#[utoipa::path(get, path = "/api/v1/media/{id}", tag = "media",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = MediaView, description = "one of the caller's uploads"),
        (status = 404, description = "the caller has no such upload"),
    ),
    security(("bearer" = [])))]
pub async fn get(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "media")?;
    Ok(HttpResponse::Ok().json(uploads::get(&ctx, user.uid, id).await?))
}

#[utoipa::path(put, path = "/api/v1/media/{id}", tag = "media",
    params(("id" = i64, Path, minimum = 1)),
    request_body = MediaPatchRequest,
    responses(
        (status = 200, body = MediaView, description = "its alt text and focus as given"),
        (status = 404, description = "the caller has no such upload"),
        (status = 409, description = "it is on a post already: a post's pictures stay as published"),
    ),
    security(("bearer" = [])))]
pub async fn describe(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    JsonBody(patch): JsonBody<MediaPatchRequest>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "media")?;
    let description = patch
        .description
        .as_deref()
        .map(parse_description)
        .transpose()?;
    let focus = patch
        .focus
        .map(|f| f.as_deref().map(Focus::parse).transpose())
        .transpose()?;
    Ok(HttpResponse::Ok().json(uploads::describe(&ctx, user.uid, id, description, focus).await?))
}

#[utoipa::path(delete, path = "/api/v1/media/{id}", tag = "media",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 204, description = "deleted, bytes and all"),
        (status = 404, description = "the caller has no such upload"),
        (status = 409, description = "it is on a post: delete the post instead"),
    ),
    security(("bearer" = [])))]
pub async fn delete(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "media")?;
    uploads::delete(&ctx, user.uid, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The one byte range a client asked for (`bytes=a-b`, `bytes=a-`,
/// `bytes=-n`); several, a malformed one or one that ends before it
/// starts are ignored and the whole object answered, as RFC 9110 says.
fn one_range(req: &HttpRequest) -> Option<ByteRange> {
    let raw = req.headers().get(header::RANGE)?.to_str().ok()?;
    let spec = raw.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (start.trim(), end.trim()) {
        ("", suffix) => Some(ByteRange::Last(number(suffix)?)),
        (a, "") => Some(ByteRange::From(number(a)?)),
        (a, b) => {
            let (first, last) = (number(a)?, number(b)?);
            (first <= last).then_some(ByteRange::FromTo(first, last))
        }
    }
}

/// A stored rendition: immutable (its key is fresh for every upload), so
/// cached for a year by anyone, validated by its `ETag`, cut to a `Range`,
/// and sent as it is read, never whole in memory.
pub async fn serve(ctx: web::Data<Context>, req: HttpRequest) -> Result<HttpResponse, AppError> {
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        return Err(AppError::MethodNotAllowed("GET, HEAD".into()));
    }
    let named = req
        .path()
        .strip_prefix("/media/")
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(key, file)| {
            let (name, ext) = file.split_once('.')?;
            Some((
                MediaKey::parse(key)?,
                Rendition::from_name(name)?,
                Encoding::from_extension(ext)?,
            ))
        });
    let Some((key, rendition, encoding)) = named else {
        return Err(AppError::NotFound("media"));
    };
    let etag = format!("\"{}-{}\"", key.as_str(), rendition.name());
    let cache = |r: &mut actix_web::HttpResponseBuilder| {
        r.insert_header((header::ETAG, etag.clone()))
            .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    };
    let unchanged = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if unchanged {
        let mut r = HttpResponse::NotModified();
        cache(&mut r);
        return Ok(r.finish());
    }
    let range = one_range(&req);
    // A HEAD is told the length and sent nothing: one byte is asked for,
    // only to learn it.
    let head = req.method() == Method::HEAD;
    let asked = if head {
        Some(ByteRange::FromTo(0, 0))
    } else {
        range
    };
    let reading = ctx
        .media
        .store
        .read(&key.object(rendition, encoding), asked)
        .await?
        .ok_or(AppError::NotFound("media"))?;
    let len = reading.len;
    let Some((first, last)) = reading.served else {
        // Not cached as the object is: the answer is about this request.
        let mut r = HttpResponse::RangeNotSatisfiable();
        r.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{len}"))
                    .unwrap_or(HeaderValue::from_static("bytes */0")),
            ));
        return Ok(r.finish());
    };
    let mut r = HttpResponse::Ok();
    cache(&mut r);
    r.content_type(encoding.content_type())
        .insert_header((header::ACCEPT_RANGES, "bytes"));
    if head {
        // The length is announced and nothing is sent after a HEAD's
        // headers, so the body is an empty stream of that length.
        let nothing = futures_util::stream::empty::<Result<Bytes, crate::error::StoreError>>();
        return Ok(r.body(SizedStream::new(len, nothing)));
    }
    if range.is_some() {
        r.status(StatusCode::PARTIAL_CONTENT)
            .insert_header((header::CONTENT_RANGE, format!("bytes {first}-{last}/{len}")));
    }
    Ok(r.body(SizedStream::new(last - first + 1, reading.body)))
}
