//! Likes on posts and comments; doing again what is done is not an error.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, MaybeAuthUser, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::service::likes::{self, LikeTarget};
use crate::service::read::responses::{ExpandedPost, LikeState, LikeView, Page};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/posts/{id}/like",
        [
            (Method::PUT, web::to(like_post)),
            (Method::DELETE, web::to(unlike_post)),
        ],
    ));
    cfg.service(super::resource(
        "/comments/{id}/like",
        [
            (Method::PUT, web::to(like_comment)),
            (Method::DELETE, web::to(unlike_comment)),
        ],
    ));
    cfg.service(super::resource(
        "/posts/{id}/likes",
        [(Method::GET, web::to(list))],
    ));
    cfg.service(super::resource(
        "/me/likes",
        [(Method::GET, web::to(liked_by_me))],
    ));
}

#[utoipa::path(put, path = "/api/v1/posts/{id}/like", tag = "likes", params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = LikeState, description = "the like state after the change; repeating it changes nothing")),
    security(("bearer" = [])))]
pub async fn like_post(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Post(path_id(&id, "post")?);
    Ok(HttpResponse::Ok().json(likes::like(&ctx, target, user.uid).await?))
}

#[utoipa::path(delete, path = "/api/v1/posts/{id}/like", tag = "likes", params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = LikeState, description = "the like state after the change; repeating it changes nothing")),
    security(("bearer" = [])))]
pub async fn unlike_post(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Post(path_id(&id, "post")?);
    Ok(HttpResponse::Ok().json(likes::unlike(&ctx, target, user.uid).await?))
}

#[utoipa::path(put, path = "/api/v1/comments/{id}/like", tag = "likes", params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = LikeState, description = "the like state after the change; repeating it changes nothing")),
    security(("bearer" = [])))]
pub async fn like_comment(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Comment(path_id(&id, "comment")?);
    Ok(HttpResponse::Ok().json(likes::like(&ctx, target, user.uid).await?))
}

#[utoipa::path(delete, path = "/api/v1/comments/{id}/like", tag = "likes", params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = LikeState, description = "the like state after the change; repeating it changes nothing")),
    security(("bearer" = [])))]
pub async fn unlike_comment(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let target = LikeTarget::Comment(path_id(&id, "comment")?);
    Ok(HttpResponse::Ok().json(likes::unlike(&ctx, target, user.uid).await?))
}

#[utoipa::path(get, path = "/api/v1/posts/{id}/likes", tag = "likes",
    params(("id" = i64, Path, minimum = 1), PageQuery, PresentationQuery),
    responses((status = 200, body = Page<LikeView>, description = "the likes the viewer may see, newest first")),
    security((), ("bearer" = [])))]
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

#[utoipa::path(get, path = "/api/v1/me/likes", tag = "likes",
    params(PageQuery, PresentationQuery),
    responses((status = 200, body = Page<ExpandedPost>, description = "the posts the caller liked and may still see, newest like first")),
    security(("bearer" = [])))]
pub async fn liked_by_me(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let page =
        likes::liked_posts(&ctx, user.uid, params.cursor, params.limit, &params.pres).await?;
    super::posts_page(&page)
}
