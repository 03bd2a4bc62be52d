//! Shares: a reader records passing a post on.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, JsonBody};
use crate::domain::share::NewShareRequest;
use crate::error::AppError;
use crate::service::shares::{self, ShareState};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/posts/{id}/shares",
        [(Method::POST, web::to(share))],
    ));
}

#[utoipa::path(post, path = "/api/v1/posts/{id}/shares", tag = "shares", request_body = NewShareRequest,
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 201, body = ShareState, description = "recorded; sharing to the same platform again counts once"),
        (status = 404, description = "no such post, or the caller may not see it"),
    ),
    security(("bearer" = [])))]
pub async fn share(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    JsonBody(req): JsonBody<NewShareRequest>,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let state = shares::share(&ctx, post, user.uid, req.platform).await?;
    Ok(HttpResponse::Created().json(state))
}
