//! The signed-in user's notifications.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{parse_json_object, AuthUser, Body, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::notifications::{self, MarkRead, NotificationView, Unread};
use crate::service::read::responses::Page;
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/notifications",
        [(Method::GET, web::to(list))],
    ));
    cfg.service(super::resource(
        "/notifications/unread",
        [(Method::GET, web::to(unread))],
    ));
    cfg.service(super::resource(
        "/notifications/read",
        [(Method::POST, web::to(mark_read))],
    ));
}

#[utoipa::path(get, path = "/api/v1/notifications", tag = "notifications",
    params(PageQuery, PresentationQuery),
    responses((status = 200, body = Page<NotificationView>, description = "newest first, the last 30 days")),
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

#[utoipa::path(post, path = "/api/v1/notifications/read", tag = "notifications", 
    request_body(content = Option<MarkRead>, description = "optional: without a body, everything is marked read"),
    responses((status = 200, body = Unread, description = "what is still unread")), security(("bearer" = [])))]
pub async fn mark_read(
    ctx: web::Data<Context>,
    user: AuthUser,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    // No body (or `null`) marks everything read.
    let all = MarkRead { up_to: None };
    let text = body.trim_ascii();
    let req: MarkRead = if text.is_empty() || text == b"null" {
        all
    } else {
        parse_json_object(text)?
    };
    Ok(HttpResponse::Ok().json(notifications::mark_read(&ctx, user.uid, req, now_ms()).await?))
}
