//! Comments and replies.

use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, JsonBody, MaybeAuthUser, ReadParams};
use crate::domain::comment::NewCommentRequest;
use crate::error::AppError;
use crate::service::views::CommentView;
use crate::service::{comments, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/posts/{id}/comments", web::post().to(create))
        .route("/posts/{id}/comments", web::get().to(list))
        .route("/comments/{id}", web::delete().to(delete));
}

#[utoipa::path(post, path = "/api/v1/posts/{id}/comments", tag = "comments", params(("id" = i64, Path)),
    request_body = NewCommentRequest,
    responses((status = 201, body = CommentView), (status = 400, body = super::problem::Problem), (status = 404, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    params: ReadParams,
    JsonBody(req): JsonBody<NewCommentRequest>,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let view = comments::create_comment(&ctx, post, user.uid, req, &params.pres).await?;
    Ok(HttpResponse::Created().json(view))
}

#[utoipa::path(get, path = "/api/v1/posts/{id}/comments", tag = "comments",
    params(("id" = i64, Path), ("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [CommentView], nextCursor, serverTime}")))]
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

#[utoipa::path(delete, path = "/api/v1/comments/{id}", tag = "comments", params(("id" = i64, Path)),
    responses((status = 204), (status = 403, body = super::problem::Problem), (status = 404, body = super::problem::Problem)),
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
