//! Posts: publish, the expanded read, delete, a user's list.

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};

use super::extract::{
    parse_json_object, path_id, AuthUser, Body, MaybeAuthUser, PageQuery, PresentationParams,
    PresentationQuery, ReadParams,
};
use super::idempotency::{self, IdempotencyKeyHeader};
use crate::domain::post::{NewPost, NewPostRequest};
use crate::error::AppError;
use crate::service::read::responses::{ExpandedPost, Page};
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
        [(Method::GET, web::to(album))],
    ));
}

#[utoipa::path(post, path = "/api/v1/posts", tag = "posts", request_body = NewPostRequest,
    params(PresentationQuery, IdempotencyKeyHeader),
    responses((status = 201, body = ExpandedPost, description = "published, as its author sees it; \
                 a retry with the same Idempotency-Key answers the same, with Idempotent-Replayed: true"),
              (status = 409, description = "the first request with this Idempotency-Key is still running; or \
                 another post took one of `mediaIds` at the same moment"),
              (status = 422, description = "well formed, but `field` names what is not there or not the author's \
                 to name: `audience.labels` a label that is not the author's, `mentions` the author, no such user, \
                 or someone who may not see the post, `mediaIds[i]` no upload of the author's, or one on another \
                 post (code `unprocessable`); or this Idempotency-Key was used for \
                 a different request (code `idempotency_key_reused`)")),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    PresentationParams(pres): PresentationParams,
    req: HttpRequest,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let post = NewPost::parse(parse_json_object::<NewPostRequest>(&body)?)?;
    let (make, uid) = (ctx.clone(), user.uid);
    let create =
        move |reserved| async move { posts::create_post(&make, uid, post, &pres, reserved).await };
    idempotency::once(&ctx, &req, format!("u{uid}"), &body, create).await
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
    let post = posts::get_post(&ctx, id, viewer.0, &pres).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(post.json))
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
pub async fn album(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    let page = posts::album(
        &ctx,
        uid,
        viewer.0,
        params.cursor,
        params.limit,
        &params.pres,
    )
    .await?;
    super::posts_page(&page)
}
