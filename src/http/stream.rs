//! Live updates over Server-Sent Events (`service::stream`): the stream,
//! its tickets, and what it watches.

use std::convert::Infallible;

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use super::extract::{parse_json_object, path_id, query, AuthUser, Body};
use crate::error::AppError;
use crate::service::accounts;
use crate::service::rate_limits::Traffic;
use crate::service::stream::events::names;
use crate::service::stream::tickets::{self, Ticket};
use crate::service::stream::{self, Opening, Resume, MAX_WATCHED};
use crate::service::Context;
use crate::store::EventId;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/stream", [(Method::GET, web::to(open))]));
    cfg.service(super::resource(
        "/stream/tickets",
        [(Method::POST, web::to(ticket))],
    ));
    cfg.service(super::resource(
        "/stream/{id}/watch",
        [(Method::PUT, web::to(watch))],
    ));
}

/// The kernel's send buffer of a stream's socket: what a client that stops
/// reading can hold there, beside the stream's own buffer
/// (`MOMENTS_STREAM_SEND_BUFFER`), before it is found slow. Left to grow,
/// Linux lets it reach megabytes per connection.
const SOCKET_SEND_BUFFER: usize = 16 * 1024;

/// The raw descriptor of a connection's socket, noted when it is accepted
/// (`startup`), so that a stream can cut a client that stopped reading.
#[derive(Clone, Copy)]
pub struct ConnectionSocket(pub i32);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// A ticket from `POST /stream/tickets`, for clients that cannot send
    /// `Authorization` (a browser's `EventSource`). Used once.
    #[param(max_length = 128)]
    pub ticket: Option<String>,
    /// The posts on the client's screen, comma-separated (at most 50):
    /// their counts and new comments are sent. Empty watches none.
    #[param(pattern = r"^([1-9][0-9]{0,17}(,[1-9][0-9]{0,17}){0,49})?$")]
    pub watch: Option<String>,
    /// Where to resume, as `Last-Event-ID` (which wins when both are sent):
    /// for a client that opens a new connection itself, which cannot send
    /// that header.
    #[param(pattern = r"^[0-9]{1,19}-[0-9]{1,19}$")]
    pub last_event_id: Option<String>,
}

/// The events a stream sends: each has an `id:` (where the stream got to
/// in the account's log: send it back as `Last-Event-ID`), an `event:` name
/// and one line of JSON `data:` of the schema named here. Heartbeats are
/// comment lines. (`openapi::describe_event_stream` writes this into the
/// document, one schema per event.)
pub const EVENTS: &[(&str, &str)] = &[
    // First, after any resumed events: the stream's id, whether the resume held.
    (names::READY, "Ready"),
    // A post entered the home feed (fetch it with `GET /posts/{id}`).
    (names::POST_NEW, "PostNew"),
    // A watched post was deleted, or may no longer be seen.
    (names::POST_DELETED, "PostDeleted"),
    // A watched post's counts, as this viewer sees them; also for every
    // watched post when the watch starts or changes.
    (names::POST_COUNTS, "PostCounts"),
    (names::COMMENT_NEW, "CommentNew"),
    // Expanded as `GET /notifications` lists it.
    (names::NOTIFICATION, "NotificationView"),
    (names::UNREAD, "UnreadCount"),
    // The stream could not resume, or was replaced: refetch.
    (names::RESET, "Reset"),
];

fn watch_list(raw: Option<&str>) -> Result<Vec<i64>, AppError> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(Vec::new());
    };
    let ids: Vec<i64> = raw
        .split(',')
        .map(|p| p.parse::<i64>().ok().filter(|id| *id > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| AppError::invalid("watch", "comma-separated post ids"))?;
    if ids.len() > MAX_WATCHED {
        return Err(AppError::invalid(
            "watch",
            format!("at most {MAX_WATCHED} posts"),
        ));
    }
    Ok(ids)
}

fn resume_from(req: &HttpRequest, query: &StreamQuery) -> Result<Option<Resume>, AppError> {
    // The header is the browser's, opaque to it: an id it holds that this
    // service did not write cannot be resumed from, which a `reset` says.
    // The parameter is ours, documented by its pattern: a malformed one is
    // the caller's mistake, refused.
    let param = match query.last_event_id.as_deref() {
        None => None,
        // As its pattern says, exactly: 19 digits a side always fit.
        Some(raw) => Some(
            raw.split_once('-')
                .filter(|(ms, seq)| ms.len() <= 19 && seq.len() <= 19)
                .and_then(|_| EventId::parse(raw))
                .ok_or_else(|| {
                    AppError::invalid("lastEventId", "an event id as the stream sent it (MS-SEQ)")
                })?,
        ),
    };
    if let Some(header) = req.headers().get("last-event-id") {
        let id = header.to_str().ok().and_then(|h| EventId::parse(h.trim()));
        return Ok(Some(id.map_or(Resume::Unplaceable, Resume::After)));
    }
    Ok(param.map(Resume::After))
}

/// What lets the stream cut its client: a copy of the connection's socket,
/// whose send buffer is bounded here.
#[cfg(unix)]
fn cutter(req: &HttpRequest) -> Option<Box<dyn FnOnce() + Send>> {
    use std::os::fd::BorrowedFd;
    let fd = req.conn_data::<ConnectionSocket>()?.0;
    // SAFETY: the descriptor is this request's connection's, open while
    // the request is handled; it is duplicated at once, and only the
    // duplicate is kept.
    let owned = unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .ok()?;
    let socket = socket2::SockRef::from(&owned);
    if let Err(e) = socket.set_send_buffer_size(SOCKET_SEND_BUFFER) {
        tracing::debug!(error = %e, "could not bound a stream's send buffer");
    }
    Some(Box::new(move || {
        let _ = socket2::SockRef::from(&owned).shutdown(std::net::Shutdown::Both);
    }))
}

#[cfg(not(unix))]
fn cutter(_: &HttpRequest) -> Option<Box<dyn FnOnce() + Send>> {
    None
}

#[utoipa::path(get, path = "/api/v1/stream", tag = "stream",
    params(StreamQuery,
        ("Last-Event-ID" = Option<String>, Header,
         description = "the id of the last event received: every event after it follows, or, for an id \
                        the log no longer holds or never wrote, one `reset`")),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
         description = "Server-Sent Events until the client leaves, its session ends, the stream's lifetime \
                        (MOMENTS_STREAM_MAX_SECS) passes or the instance stops (the last two end with a `retry:`). \
                        Each event's `data` is JSON of the schema its `event` names."),
        (status = 401, description = "no valid bearer token or ticket"),
        (status = 503, description = "this instance holds as many streams as it may; try another or later"),
    ),
    security(("bearer" = []), ()))]
pub async fn open(ctx: web::Data<Context>, req: HttpRequest) -> Result<HttpResponse, AppError> {
    let query: StreamQuery = query(&req)?;
    let watch = watch_list(query.watch.as_deref())?;
    let resume = resume_from(&req, &query)?;
    let who = match query.ticket.as_deref() {
        Some(ticket) => {
            // A ticket is a guess until redeemed: the address pays for each
            // one before the store is asked, so made-up tickets cost their
            // sender as any anonymous read does.
            let origin = super::extract::origin(&req, &ctx);
            accounts::limit_anonymous(&ctx, Traffic::Read, &origin).await?;
            tickets::redeem(&ctx, ticket).await?
        }
        None => {
            let c = super::extract::Credentials::of(&req, &ctx)?;
            accounts::authenticate(&ctx, &c.token, c.traffic, &c.origin).await?
        }
    };
    let opening = Opening {
        who,
        resume,
        watch,
        cut: cutter(&req),
    };
    let opened = ctx.streams.open(&ctx, opening).await?;
    let frames = futures_util::stream::unfold(opened.frames, |mut frames| async move {
        let frame = frames.recv().await?;
        Some((Ok::<_, Infallible>(web::Bytes::from(frame)), frames))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-store"))
        // Proxies that buffer answers (nginx) pass this one through as
        // it is written.
        .insert_header(("X-Accel-Buffering", "no"))
        .force_close()
        .streaming(frames))
}

#[utoipa::path(post, path = "/api/v1/stream/tickets", tag = "stream",
    responses((status = 201, body = Ticket, description = "a ticket for one `GET /stream?ticket=`, within 60 s")),
    security(("bearer" = [])))]
pub async fn ticket(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(tickets::issue(&ctx, &user.session).await?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchRequest {
    /// The posts on the client's screen now (at most 50); the stream's
    /// watch is replaced by these.
    #[serde(deserialize_with = "crate::domain::id_list")]
    #[schema(max_items = 50)]
    pub posts: Vec<i64>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Watching {
    /// Those of the posts asked for that the caller may see: the stream
    /// watches these, and sends each one's counts now.
    pub watching: Vec<i64>,
}

#[utoipa::path(put, path = "/api/v1/stream/{id}/watch", tag = "stream",
    params(("id" = i64, Path, description = "the stream's id, from its `ready` event")),
    request_body = WatchRequest,
    responses((status = 200, body = Watching),
        (status = 404, description = "no such stream of the caller's is open")),
    security(("bearer" = [])))]
pub async fn watch(
    ctx: web::Data<Context>,
    user: AuthUser,
    path: web::Path<String>,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let stream_id = path_id(&path, "stream")?;
    let req: WatchRequest = parse_json_object(&body)?;
    let watching = stream::watch(&ctx, user.uid, stream_id, req.posts).await?;
    Ok(HttpResponse::Ok().json(Watching { watching }))
}
