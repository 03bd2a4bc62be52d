//! Comments and replies.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{
    path_id, AuthUser, JsonBody, MaybeAuthUser, PageQuery, PresentationParams, PresentationQuery,
    ReadParams,
};
use crate::domain::comment::NewCommentRequest;
use crate::error::AppError;
use crate::service::views::{CommentView, Page};
use crate::service::{comments, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/posts/{id}/comments",
        [
            (Method::POST, web::to(create)),
            (Method::GET, web::to(list)),
        ],
    ));
    cfg.service(super::resource(
        "/comments/{id}",
        [(Method::DELETE, web::to(delete))],
    ));
}

#[utoipa::path(post, path = "/api/v1/posts/{id}/comments", tag = "comments",
    params(("id" = i64, Path, minimum = 1), PresentationQuery),
    request_body = NewCommentRequest,
    responses((status = 201, body = CommentView),
              (status = 404, description = "no such post, or no such comment to reply to, for this viewer")),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    PresentationParams(pres): PresentationParams,
    JsonBody(req): JsonBody<NewCommentRequest>,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let view = comments::create_comment(&ctx, post, user.uid, req, &pres).await?;
    Ok(HttpResponse::Created().json(view))
}

#[utoipa::path(get, path = "/api/v1/posts/{id}/comments", tag = "comments",
    params(("id" = i64, Path, minimum = 1), PageQuery, PresentationQuery),
    responses((status = 200, body = Page<CommentView>, description = "the comments the viewer may see, newest first")),
    security((), ("bearer" = [])))]
pub async fn list(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    id: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let page = comments::list_comments(
        &ctx,
        post,
        viewer.0,
        params.cursor,
        params.limit,
        &params.pres,
    )
    .await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(delete, path = "/api/v1/comments/{id}", tag = "comments", params(("id" = i64, Path, minimum = 1)),
    responses((status = 204, description = "deleted"),
              (status = 403, description = "neither the comment's author nor the post's")),
    security(("bearer" = [])))]
pub async fn delete(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "comment")?;
    comments::delete_comment(&ctx, id, user.uid).await?;
    Ok(HttpResponse::NoContent().finish())
}
