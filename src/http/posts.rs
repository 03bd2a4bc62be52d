//! Posts: publish, the expanded read, delete, a user's list.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{
    path_id, AuthUser, JsonBody, MaybeAuthUser, PageQuery, PresentationParams, PresentationQuery,
    ReadParams,
};
use crate::domain::post::{NewPost, NewPostRequest};
use crate::error::AppError;
use crate::service::views::{ExpandedPost, Page};
use crate::service::{posts, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/posts", [(Method::POST, web::to(create))]));
    cfg.service(super::resource(
        "/posts/{id}",
        [
            (Method::GET, web::to(get)),
            (Method::DELETE, web::to(delete)),
        ],
    ));
    cfg.service(super::resource(
        "/users/{uid}/posts",
        [(Method::GET, web::to(user_posts))],
    ));
}

#[utoipa::path(post, path = "/api/v1/posts", tag = "posts", request_body = NewPostRequest,
    params(PresentationQuery),
    responses((status = 201, body = ExpandedPost, description = "published, as its author sees it")),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    PresentationParams(pres): PresentationParams,
    JsonBody(req): JsonBody<NewPostRequest>,
) -> Result<HttpResponse, AppError> {
    let post = NewPost::parse(req)?;
    Ok(HttpResponse::Created().json(posts::create_post(&ctx, user.uid, post, &pres).await?))
}

#[utoipa::path(get, path = "/api/v1/posts/{id}", tag = "posts",
    params(("id" = i64, Path, minimum = 1), PresentationQuery),
    responses((status = 200, body = ExpandedPost),
              (status = 404, description = "no such post, or the viewer may not see it")),
    security((), ("bearer" = [])))]
pub async fn get(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    id: web::Path<String>,
    PresentationParams(pres): PresentationParams,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "post")?;
    Ok(HttpResponse::Ok().json(posts::get_post(&ctx, id, viewer.0, &pres).await?))
}

#[utoipa::path(delete, path = "/api/v1/posts/{id}", tag = "posts", params(("id" = i64, Path, minimum = 1)),
    responses((status = 204, description = "deleted"), (status = 403, description = "not the author's")),
    security(("bearer" = [])))]
pub async fn delete(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "post")?;
    posts::delete_post(&ctx, id, user.uid).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/posts", tag = "posts",
    params(("uid" = i64, Path, minimum = 1), PageQuery, PresentationQuery),
    responses((status = 200, body = Page<ExpandedPost>, description = "the posts of the user's album the viewer may see, newest first")),
    security((), ("bearer" = [])))]
pub async fn user_posts(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    let page = posts::user_posts(
        &ctx,
        uid,
        viewer.0,
        params.cursor,
        params.limit,
        &params.pres,
    )
    .await?;
    Ok(HttpResponse::Ok().json(page))
}
