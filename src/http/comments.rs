//! Comments and replies.

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};

use super::extract::{
    parse_json_object, path_id, AuthUser, Body, CommentsParams, CommentsQuery, MaybeAuthUser,
    PageQuery, PresentationParams, PresentationQuery, ReadParams,
};
use super::idempotency::{self, IdempotencyKeyHeader};
use crate::domain::comment::NewCommentRequest;
use crate::error::AppError;
use crate::service::read::responses::{CommentView, Page};
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
    cfg.service(super::resource(
        "/comments/{id}/replies",
        [(Method::GET, web::to(replies))],
    ));
}

#[utoipa::path(post, path = "/api/v1/posts/{id}/comments", tag = "comments",
    params(("id" = i64, Path, minimum = 1), PresentationQuery, IdempotencyKeyHeader),
    request_body = NewCommentRequest,
    responses((status = 201, body = CommentView),
              (status = 404, description = "no such post, or no such comment to reply to, for this viewer"),
              (status = 409, description = "the first request with this Idempotency-Key is still running"),
              (status = 422, description = "this Idempotency-Key was used for a different request; or the content is refused by a content filter")),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    PresentationParams(pres): PresentationParams,
    req: HttpRequest,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let comment: NewCommentRequest = parse_json_object(&body)?;
    let (make, uid) = (ctx.clone(), user.uid);
    let create = move |reserved| async move {
        comments::create_comment(&make, post, uid, comment, &pres, reserved).await
    };
    idempotency::once(&ctx, &req, format!("u{uid}"), &body, create).await
}

#[utoipa::path(get, path = "/api/v1/posts/{id}/comments", tag = "comments",
    params(("id" = i64, Path, minimum = 1), CommentsQuery, PresentationQuery),
    responses((status = 200, body = Page<CommentView>, description = "the comments the viewer may see, newest first, or with sort=hot by the most likes each has had at once, then newest; no page repeats a comment while likes change")),
    security((), ("bearer" = [])))]
pub async fn list(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    id: web::Path<String>,
    params: CommentsParams,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let page = comments::list_comments(
        &ctx,
        post,
        viewer.0,
        params.from,
        params.limit,
        &params.pres,
    )
    .await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(get, path = "/api/v1/comments/{id}/replies", tag = "comments",
    params(("id" = i64, Path, minimum = 1), PageQuery, PresentationQuery),
    responses(
        (status = 200, body = Page<CommentView>, description = "the replies in the comment's thread the viewer may see (to it, and to those replies), oldest first"),
        (status = 404, description = "no such comment, or the viewer may not see it"),
    ),
    security((), ("bearer" = [])))]
pub async fn replies(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    id: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let comment = path_id(&id, "comment")?;
    let page = comments::list_replies(
        &ctx,
        comment,
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
