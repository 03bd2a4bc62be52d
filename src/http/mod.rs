//! The HTTP edge: each resource module owns its routes; handlers parse, call
//! one service function and shape the response.

pub mod accounts;
pub mod admin;
pub mod comments;
pub mod extract;
pub mod feed;
pub mod likes;
pub mod notifications;
pub mod openapi;
pub mod ops;
pub mod posts;
pub mod problem;
pub mod request_id;
pub mod social;

use actix_web::web;

use crate::error::AppError;

/// Everything under `/api/v1`.
pub fn api(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v1")
            .configure(accounts::routes)
            .configure(posts::routes)
            .configure(comments::routes)
            .configure(likes::routes)
            .configure(social::routes)
            .configure(feed::routes)
            .configure(notifications::routes)
            .configure(admin::routes),
    )
    .configure(ops::routes);
}

/// Unknown paths answer a problem too, not an empty body.
pub async fn not_found() -> Result<actix_web::HttpResponse, AppError> {
    Err(AppError::NotFound("resource"))
}
