//! The one error type of the service layer. Each variant names the HTTP status
//! it becomes (`http::problem` does the mapping); services never see HTTP.
//! Beside it, the stores' error and how it maps to the service's: this
//! module depends on neither the stores nor the domain, so both can use it.

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400 `invalid_input`: the request is malformed (syntax, type, length,
    /// pattern, range, count, a required field, a cursor or header); `field`
    /// names the offending field (a JSON path).
    #[error("{field}: {reason}")]
    InvalidInput { field: String, reason: String },
    /// 422 `unprocessable`: well formed, but `field` names what is not
    /// there or not the caller's to name (a mention of no such user, a
    /// label member who is not a friend, a label that is not the caller's).
    /// Fixing the syntax cannot help; fixing the data can.
    #[error("{field}: {reason}")]
    Unprocessable { field: String, reason: String },
    /// 401 `unauthorized`: no token, an unknown or expired one.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 403 `forbidden`: authenticated, but not allowed to do this.
    #[error("{0}")]
    Forbidden(&'static str),
    /// 403 `account_suspended`: the right password, for an account a
    /// moderator suspended (until the given epoch ms) or banned (`None`),
    /// by `strike`, which the account may appeal without signing in.
    #[error("{}", suspended_text(*until))]
    Suspended {
        until: Option<i64>,
        strike: Option<i64>,
    },
    /// 404 `not_found`: also for things the viewer may not see.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 405 `method_not_allowed`: the path is there, the method is not; the
    /// methods it does answer.
    #[error("this resource answers {0}")]
    MethodNotAllowed(String),
    /// 422 `idempotency_key_reused`: this `Idempotency-Key` was first sent
    /// with a different request.
    #[error(
        "this Idempotency-Key was used for a different request; use a new key for a new request"
    )]
    KeyReused,
    /// 409 `conflict`.
    #[error("{0}")]
    Conflict(String),
    /// 408 `request_timeout`: the body did not arrive in time (uploads).
    #[error("the request's body did not arrive within {0}")]
    RequestTimeout(&'static str),
    /// 413 `payload_too_large`.
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// 429 `rate_limited`: too many requests of this kind from this account
    /// or address; try again after `retry_after_secs`.
    #[error("too many {what}; try again in {retry_after_secs} s")]
    RateLimited {
        what: &'static str,
        retry_after_secs: u64,
    },
    /// 503 `overloaded`: the server is shedding this kind of work for now.
    #[error("the server is busy with {0}; try again shortly")]
    Overloaded(&'static str),
    /// 503 `store_unavailable`: a store needed to answer is unreachable.
    #[error("a store needed for this request is unavailable")]
    StoreUnavailable(#[source] anyhow::Error),
    /// 500 `internal`: logged with its cause chain, answered generically.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

fn suspended_text(until: Option<i64>) -> String {
    match until {
        Some(t) => format!(
            "this account is suspended until {}",
            crate::domain::calendar::utc_text(t)
        ),
        None => "this account is banned".into(),
    }
}

impl AppError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        AppError::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn unprocessable(field: impl Into<String>, reason: impl Into<String>) -> Self {
        AppError::Unprocessable {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// What a store call can fail with, whichever store it is.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store unavailable: {0}")]
    Unavailable(anyhow::Error),
    #[error("duplicate {0}")]
    Duplicate(&'static str),
    /// A generated id is taken: never "this exists already". The caller
    /// retries with a fresh id (`service::with_fresh_id`).
    #[error("generated id already taken")]
    IdTaken,
    #[error(transparent)]
    Other(anyhow::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(cause) => AppError::StoreUnavailable(cause),
            StoreError::Duplicate(what) => AppError::Conflict(format!("{what} already exists")),
            // Only after retries with fresh ids: two processes are minting
            // the same ids, which a retry later may not meet.
            StoreError::IdTaken => AppError::StoreUnavailable(anyhow::anyhow!(
                "generated ids keep colliding: are two instances sharing MOMENTS_INSTANCE_ID?"
            )),
            StoreError::Other(cause) => AppError::Internal(cause),
        }
    }
}

pub type AppResult<T> = Result<T, AppError>;
