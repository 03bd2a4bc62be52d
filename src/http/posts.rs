//! Posts: publish, the expanded read, delete, a user's list.

use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, JsonBody, MaybeAuthUser, ReadParams};
use crate::domain::post::{NewPost, NewPostRequest};
use crate::error::AppError;
use crate::service::views::ExpandedPost;
use crate::service::{posts, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/posts", web::post().to(create))
        .route("/posts/{id}", web::get().to(get))
        .route("/posts/{id}", web::delete().to(delete))
        .route("/users/{uid}/posts", web::get().to(user_posts));
}

#[utoipa::path(post, path = "/api/v1/posts", tag = "posts", request_body = NewPostRequest,
    responses((status = 201, body = ExpandedPost), (status = 400, body = super::problem::Problem),
              (status = 401, body = super::problem::Problem), (status = 413, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
    JsonBody(req): JsonBody<NewPostRequest>,
) -> Result<HttpResponse, AppError> {
    let post = NewPost::parse(req)?;
    Ok(HttpResponse::Created().json(posts::create_post(&ctx, user.uid, post, &params.pres).await?))
}

#[utoipa::path(get, path = "/api/v1/posts/{id}", tag = "posts",
    params(("id" = i64, Path), ("lang" = Option<String>, Query, description = "zh or en: adds createtimeText"),
           ("tz" = Option<String>, Query, description = "UTC offset for dates, default +08:00")),
    responses((status = 200, body = ExpandedPost), (status = 404, body = super::problem::Problem)))]
pub async fn get(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    id: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "post")?;
    Ok(HttpResponse::Ok().json(posts::get_post(&ctx, id, viewer.0, &params.pres).await?))
}

#[utoipa::path(delete, path = "/api/v1/posts/{id}", tag = "posts", params(("id" = i64, Path)),
    responses((status = 204), (status = 403, body = super::problem::Problem), (status = 404, body = super::problem::Problem)),
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
    params(("uid" = i64, Path), ("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [ExpandedPost], nextCursor, serverTime}")))]
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
