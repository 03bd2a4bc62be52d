//! The HTTP edge: each resource module owns its routes; handlers parse, call
//! one service function and shape the response.

pub mod accounts;
pub mod comments;
pub mod device_models;
pub mod exports;
pub mod extract;
pub mod favorites;
pub mod feed;
pub mod history;
pub mod idempotency;
pub mod imports;
pub mod labels;
pub mod likes;
pub mod live_tools;
pub mod media;
pub mod moderation;
pub mod notifications;
pub mod openapi;
pub mod ops;
pub mod posts;
pub mod problem;
pub mod profiles;
pub mod reports;
pub mod request_id;
pub mod search;
pub mod shares;
pub mod social;
pub mod stream;
pub mod strikes;
pub mod web_client;

use actix_web::http::Method;
use actix_web::{web, Resource, Route};

use crate::error::AppError;

/// Everything under `/api/v1`.
pub fn api(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v1")
            .configure(accounts::routes)
            .configure(posts::routes)
            .configure(comments::routes)
            .configure(likes::routes)
            .configure(favorites::routes)
            .configure(media::routes)
            .configure(history::routes)
            .configure(reports::routes)
            .configure(moderation::routes)
            .configure(strikes::routes)
            .configure(labels::routes)
            .configure(shares::routes)
            .configure(profiles::routes)
            .configure(social::routes)
            .configure(feed::routes)
            .configure(search::routes)
            .configure(notifications::routes)
            .configure(stream::routes)
            .configure(exports::routes)
            .configure(imports::routes)
            .configure(device_models::routes)
            .configure(live_tools::routes),
    )
    .configure(ops::routes)
    .configure(media::files)
    .configure(web_client::routes);
}

/// A page of expanded posts as JSON (`post_json::page_bytes`: posts kept
/// as text are copied in, not serialised again).
pub fn posts_page(
    page: &crate::service::read::responses::Page<crate::service::read::post_json::PostJson>,
) -> Result<actix_web::HttpResponse, crate::error::AppError> {
    Ok(actix_web::HttpResponse::Ok()
        .content_type("application/json")
        .body(crate::service::read::post_json::page_bytes(page)))
}

/// One path and the methods it answers; any other method gets 405 with an
/// `Allow` header naming these (RFC 9110), not a 404 that says the path is
/// not there.
pub fn resource<const N: usize>(path: &str, routes: [(Method, Route); N]) -> Resource {
    let allow: Vec<&str> = routes.iter().map(|(m, _)| m.as_str()).collect();
    let allow = allow.join(", ");
    let mut resource = web::resource(path).default_service(web::to(move || {
        let allow = allow.clone();
        async move { Err::<actix_web::HttpResponse, _>(AppError::MethodNotAllowed(allow)) }
    }));
    for (method, route) in routes {
        resource = resource.route(route.method(method));
    }
    resource
}

/// Unknown paths answer a problem too, not an empty body.
pub async fn not_found() -> Result<actix_web::HttpResponse, AppError> {
    Err(AppError::NotFound("resource"))
}
