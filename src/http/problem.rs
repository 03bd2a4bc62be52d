//! RFC 9457 problem details for every error, with a stable `code` member.
//! 500s log their cause chain and answer a generic message: no internals leak.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use crate::error::AppError;

#[derive(Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: &'static str,
    pub status: u16,
    pub detail: String,
    pub code: &'static str,
    /// For `invalid_input` and `unprocessable`: the JSON path of the
    /// offending field (or the parameter or header it names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// This occurrence: the request's id (also its `X-Request-Id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// For `account_suspended`: when the suspension ends (epoch ms), for a
    /// client to show in its reader's language and zone; absent for a ban.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    /// For `account_suspended`: the strike that suspends the account, to
    /// appeal through `POST /appeals` (it cannot sign in to).
    #[serde(rename = "strikeId", skip_serializing_if = "Option::is_none")]
    pub strike_id: Option<i64>,
}

impl AppError {
    fn parts(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            AppError::InvalidInput { .. } => {
                (StatusCode::BAD_REQUEST, "invalid_input", "Invalid input")
            }
            AppError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized"),
            AppError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", "Forbidden"),
            AppError::Suspended { .. } => (
                StatusCode::FORBIDDEN,
                "account_suspended",
                "Account suspended",
            ),
            AppError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", "Not found"),
            AppError::MethodNotAllowed(_) => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "Method not allowed",
            ),
            AppError::Conflict(_) => (StatusCode::CONFLICT, "conflict", "Conflict"),
            AppError::Unprocessable { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "unprocessable",
                "Unprocessable content",
            ),
            AppError::KeyReused => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                "Idempotency key reused",
            ),
            AppError::RequestTimeout(_) => (
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                "Request timeout",
            ),
            AppError::PayloadTooLarge { .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "Payload too large",
            ),
            AppError::RateLimited { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "Too many requests",
            ),
            AppError::Overloaded(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "overloaded", "Overloaded")
            }
            AppError::StoreUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "Store unavailable",
            ),
            AppError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error",
            ),
        }
    }
}

impl ResponseError for AppError {
    fn status_code(&self) -> StatusCode {
        self.parts().0
    }

    fn error_response(&self) -> HttpResponse {
        let (status, code, title) = self.parts();
        match self {
            AppError::Internal(cause) => {
                tracing::error!(error = ?cause, "internal error")
            }
            AppError::StoreUnavailable(cause) => {
                tracing::warn!(error = %cause, "store unavailable")
            }
            _ => {}
        }
        let field = match self {
            AppError::InvalidInput { field, .. } | AppError::Unprocessable { field, .. } => {
                Some(field.clone())
            }
            _ => None,
        };
        let problem = Problem {
            kind: format!("https://moments.dev/problems/{code}"),
            title,
            status: status.as_u16(),
            detail: self.to_string(),
            code,
            field,
            instance: super::request_id::current(),
            until: match self {
                AppError::Suspended { until, .. } => *until,
                _ => None,
            },
            strike_id: match self {
                AppError::Suspended { strike, .. } => *strike,
                _ => None,
            },
        };
        let mut resp = HttpResponse::build(status);
        resp.content_type("application/problem+json");
        if status == StatusCode::UNAUTHORIZED {
            resp.insert_header(("WWW-Authenticate", "Bearer"));
        }
        match self {
            AppError::MethodNotAllowed(allow) => {
                resp.insert_header(("Allow", allow.as_str()));
            }
            AppError::RateLimited {
                retry_after_secs, ..
            } => {
                resp.insert_header(("Retry-After", retry_after_secs.max(&1).to_string()));
            }
            _ if status == StatusCode::SERVICE_UNAVAILABLE => {
                resp.insert_header(("Retry-After", "1"));
            }
            _ => {}
        }
        resp.json(problem)
    }
}
