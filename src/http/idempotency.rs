//! `Idempotency-Key` on the create endpoints (`service::idempotency`).

use std::future::Future;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::service::idempotency::{self, Claim, MAX_KEY_CHARS};
use crate::service::Context;

pub const HEADER: &str = "Idempotency-Key";
/// On an answer replayed for a retried key.
pub const REPLAYED: &str = "Idempotent-Replayed";

/// The header's schema for the document: what `idempotency::parse_key` takes.
pub fn key_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(format!(
            "^([!#-~]{{1,{MAX_KEY_CHARS}}}|\"[!#-~]{{1,{MAX_KEY_CHARS}}}\")$"
        )))
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
/// The request is checked before this is called, so a bad one never
/// holds a key.
pub async fn once<T: Serialize + 'static>(
    ctx: &Context,
    req: &HttpRequest,
    scope: String,
    body: &[u8],
    create: impl Future<Output = AppResult<T>> + 'static,
) -> Result<HttpResponse, AppError> {
    let Some(key) = key_of(req)? else {
        return Ok(HttpResponse::Created().json(create.await?));
    };
    let fingerprint =
        idempotency::fingerprint(req.method().as_str(), req.path(), req.query_string(), body);
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
    // Run apart from this request: if the client goes away mid-way, actix
    // drops the handler, and the answer must still be recorded, because the
    // client's retry is exactly the case this is for.
    let ctx = ctx.clone();
    let run = actix_web::rt::spawn(async move {
        match create.await {
            Ok(made) => {
                let json = serde_json::to_string(&made)
                    .map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
                idempotency::finish(&ctx, ticket, StatusCode::CREATED.as_u16(), &json).await;
                Ok(json)
            }
            Err(e) => {
                idempotency::release(&ctx, ticket).await;
                Err(e)
            }
        }
    });
    let json = run
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("an idempotent create failed: {e}")))??;
    Ok(HttpResponse::Created()
        .content_type("application/json")
        .body(json))
}
