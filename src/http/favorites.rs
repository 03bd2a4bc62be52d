//! Favorites: posts a reader keeps for later (keeping twice is keeping
//! once), listed newest first.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::service::read::responses::{ExpandedPost, FavoriteState, Page};
use crate::service::{favorites, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/posts/{id}/favorite",
        [
            (Method::PUT, web::to(favorite)),
            (Method::DELETE, web::to(unfavorite)),
        ],
    ));
    cfg.service(super::resource(
        "/me/favorites",
        [(Method::GET, web::to(list))],
    ));
}

#[utoipa::path(put, path = "/api/v1/posts/{id}/favorite", tag = "favorites", params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = FavoriteState, description = "kept; repeating it changes nothing"),
        (status = 404, description = "no such post, or the caller may not see it"),
    ),
    security(("bearer" = [])))]
pub async fn favorite(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    Ok(HttpResponse::Ok().json(favorites::favorite(&ctx, post, user.uid).await?))
}

#[utoipa::path(delete, path = "/api/v1/posts/{id}/favorite", tag = "favorites", params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = FavoriteState, description = "no longer kept; repeating it changes nothing")),
    security(("bearer" = [])))]
pub async fn unfavorite(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let post = path_id(&id, "post")?;
    Ok(HttpResponse::Ok().json(favorites::unfavorite(&ctx, post, user.uid).await?))
}

#[utoipa::path(get, path = "/api/v1/me/favorites", tag = "favorites",
    params(PageQuery, PresentationQuery),
    responses((status = 200, body = Page<ExpandedPost>, description = "the posts the caller keeps and may still see, newest favorite first")),
    security(("bearer" = [])))]
pub async fn list(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let page =
        favorites::favorites(&ctx, user.uid, params.cursor, params.limit, &params.pres).await?;
    super::posts_page(&page)
}
