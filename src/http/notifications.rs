//! The signed-in user's notifications.

use actix_web::{web, HttpResponse};

use super::extract::{parse_json, AuthUser, Body, ReadParams};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::notifications::{self, MarkRead, Unread};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/notifications", web::get().to(list))
        .route("/notifications/unread", web::get().to(unread))
        .route("/notifications/read", web::post().to(mark_read));
}

#[utoipa::path(get, path = "/api/v1/notifications", tag = "notifications",
    params(("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [NotificationView], nextCursor, serverTime}, newest first, the last 30 days"),
              (status = 401, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn list(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let page =
        notifications::list(&ctx, user.uid, params.cursor, params.limit, &params.pres).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(get, path = "/api/v1/notifications/unread", tag = "notifications",
    responses((status = 200, body = Unread)), security(("bearer" = [])))]
pub async fn unread(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(notifications::unread(&ctx, user.uid, now_ms()).await?))
}

#[utoipa::path(post, path = "/api/v1/notifications/read", tag = "notifications", request_body = MarkRead,
    responses((status = 200, body = Unread)), security(("bearer" = [])))]
pub async fn mark_read(
    ctx: web::Data<Context>,
    user: AuthUser,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    // An empty body marks everything read.
    let req: MarkRead = if body.iter().all(|b| b.is_ascii_whitespace()) {
        MarkRead { up_to: None }
    } else {
        parse_json(&body)?
    };
    Ok(HttpResponse::Ok().json(notifications::mark_read(&ctx, user.uid, req, now_ms()).await?))
}
