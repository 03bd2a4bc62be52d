//! Likes on posts and comments; doing again what is done is not an error.

use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, MaybeAuthUser, ReadParams};
use crate::error::AppError;
use crate::service::likes::{self, LikeTarget};
use crate::service::views::LikeState;
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/posts/{id}/like", web::put().to(like_post))
        .route("/posts/{id}/like", web::delete().to(unlike_post))
        .route("/comments/{id}/like", web::put().to(like_comment))
        .route("/comments/{id}/like", web::delete().to(unlike_comment))
        .route("/posts/{id}/likes", web::get().to(list));
}

#[utoipa::path(put, path = "/api/v1/posts/{id}/like", tag = "likes", params(("id" = i64, Path)),
    responses((status = 200, body = LikeState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn like_post(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Post(path_id(&id, "post")?);
    Ok(HttpResponse::Ok().json(likes::like(&ctx, target, user.uid).await?))
}

#[utoipa::path(delete, path = "/api/v1/posts/{id}/like", tag = "likes", params(("id" = i64, Path)),
    responses((status = 200, body = LikeState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn unlike_post(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Post(path_id(&id, "post")?);
    Ok(HttpResponse::Ok().json(likes::unlike(&ctx, target, user.uid).await?))
}

#[utoipa::path(put, path = "/api/v1/comments/{id}/like", tag = "likes", params(("id" = i64, Path)),
    responses((status = 200, body = LikeState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn like_comment(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Comment(path_id(&id, "comment")?);
    Ok(HttpResponse::Ok().json(likes::like(&ctx, target, user.uid).await?))
}

#[utoipa::path(delete, path = "/api/v1/comments/{id}/like", tag = "likes", params(("id" = i64, Path)),
    responses((status = 200, body = LikeState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn unlike_comment(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Comment(path_id(&id, "comment")?);
    Ok(HttpResponse::Ok().json(likes::unlike(&ctx, target, user.uid).await?))
}

#[utoipa::path(get, path = "/api/v1/posts/{id}/likes", tag = "likes",
    params(("id" = i64, Path), ("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [LikeView], nextCursor, serverTime}")))]
pub async fn list(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    id: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    let page = likes::list_likes(
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
