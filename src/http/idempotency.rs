//! `Idempotency-Key` on the create endpoints (`service::idempotency`).

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use tracing::Instrument;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::service::idempotency::{self, Claim, Reservation, MAX_KEY_CHARS};
use crate::service::Context;
use crate::store::metered::{count_request_trips, note_request_trips};

pub const HEADER: &str = "Idempotency-Key";
/// On an answer replayed for a retried key.
pub const REPLAYED: &str = "Idempotent-Replayed";

/// The header's schema for the document: what `idempotency::parse_key` takes.
pub fn key_schema() -> utoipa::openapi::Object {
    crate::domain::StringSchema {
        pattern: Some(format!(
            "^([!#-~]{{1,{MAX_KEY_CHARS}}}|\"[!#-~]{{1,{MAX_KEY_CHARS}}}\")$"
        )),
        ..Default::default()
    }
    .build()
}

/// The header on the create operations.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // read by utoipa only: `once` reads the header itself
pub struct IdempotencyKeyHeader {
    /// Makes a retry safe: the same key with the same request answers what
    /// the first answered, and makes nothing new (kept 24 h).
    #[param(rename = "Idempotency-Key", schema_with = key_schema)]
    key: Option<String>,
}

fn key_of(req: &HttpRequest) -> AppResult<Option<String>> {
    let mut values = req.headers().get_all(HEADER);
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(AppError::invalid(HEADER, "send one key, not several"));
    }
    let text = value.to_str().map_err(|_| {
        AppError::invalid(HEADER, "must be visible ASCII characters, such as a UUID")
    })?;
    idempotency::parse_key(text).map(Some)
}

/// Answers 201 with what `create` makes, at most once per key in `scope`.
/// The request is checked (and charged to its budgets) before this is
/// called, so a bad one never holds a key. `identity` is what tells two
/// requests apart besides method, path and query: the body, or what of it
/// may be kept. `create` is given where its key says to make its thing
/// (none without a key), and where earlier tries may have made it.
pub async fn once<T: Serialize + 'static, F: Future<Output = AppResult<T>> + 'static>(
    ctx: &Context,
    req: &HttpRequest,
    scope: String,
    identity: &[u8],
    create: impl FnOnce(Option<Reservation>) -> F,
) -> Result<HttpResponse, AppError> {
    let Some(key) = key_of(req)? else {
        return Ok(HttpResponse::Created().json(create(None).await?));
    };
    let fingerprint = idempotency::fingerprint(
        req.method().as_str(),
        req.path(),
        req.query_string(),
        identity,
    );
    let ticket = match idempotency::claim(ctx, &scope, &key, fingerprint).await? {
        Claim::Replay { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::CREATED);
            return Ok(HttpResponse::build(status)
                .content_type("application/json")
                .insert_header((REPLAYED, "true"))
                .body(body));
        }
        Claim::Run(ticket) => ticket,
    };
    let create = create(Some(ticket.reservation.clone()));
    // Run apart from this request: if the client goes away mid-way, actix
    // drops the handler, and the answer must still be recorded, because the
    // client's retry is exactly the case this is for. It runs as part of
    // the request all the same: in its span, under its id, its round trips
    // counted as the request's.
    let ctx = ctx.clone();
    let made = async move {
        let made = AssertUnwindSafe(create).catch_unwind().await;
        let json = match made {
            Ok(Ok(made)) => {
                serde_json::to_string(&made).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(AppError::Internal(anyhow::anyhow!(
                "an idempotent create panicked"
            ))),
        };
        match json {
            Ok(json) => {
                idempotency::finish(&ctx, ticket, StatusCode::CREATED.as_u16(), &json).await;
                Ok(json)
            }
            Err(e) => {
                idempotency::release(&ctx, ticket).await;
                Err(e)
            }
        }
    };
    let made = count_request_trips(made).instrument(tracing::Span::current());
    let run = match super::request_id::current() {
        Some(id) => actix_web::rt::spawn(super::request_id::scope(id, made).boxed_local()),
        None => actix_web::rt::spawn(made.boxed_local()),
    };
    let (json, (docs, live)) = run
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("an idempotent create failed: {e}")))?;
    note_request_trips(docs, live);
    Ok(HttpResponse::Created()
        .content_type("application/json")
        .body(json?))
}
