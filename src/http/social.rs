//! Follows, blocks and the lists of a user's graph.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, MaybeAuthUser, PageParams, PageQuery};
use crate::error::AppError;
use crate::service::social::{self, BlockState, FollowState, Listing, Profile};
use crate::service::views::Page;
use crate::service::Context;
use crate::store::UserCard;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/users/{uid}",
        [(Method::GET, web::to(profile))],
    ));
    cfg.service(super::resource(
        "/users/{uid}/follow",
        [
            (Method::PUT, web::to(follow)),
            (Method::DELETE, web::to(unfollow)),
        ],
    ));
    cfg.service(super::resource(
        "/users/{uid}/block",
        [
            (Method::PUT, web::to(block)),
            (Method::DELETE, web::to(unblock)),
        ],
    ));
    cfg.service(super::resource(
        "/users/{uid}/followers",
        [(Method::GET, web::to(followers))],
    ));
    cfg.service(super::resource(
        "/users/{uid}/following",
        [(Method::GET, web::to(following))],
    ));
    cfg.service(super::resource(
        "/users/{uid}/friends",
        [(Method::GET, web::to(friends))],
    ));
}

#[utoipa::path(get, path = "/api/v1/users/{uid}", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = Profile),
              (status = 404, description = "no such user, or one who blocked the viewer")),
    security((), ("bearer" = [])))]
pub async fn profile(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::profile(&ctx, uid, viewer.0).await?))
}

#[utoipa::path(put, path = "/api/v1/users/{uid}/follow", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = FollowState), (status = 409, description = "that is the caller")),
    security(("bearer" = [])))]
pub async fn follow(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::follow(&ctx, user.uid, them).await?))
}

#[utoipa::path(delete, path = "/api/v1/users/{uid}/follow", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = FollowState), (status = 409, description = "that is the caller")),
    security(("bearer" = [])))]
pub async fn unfollow(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::unfollow(&ctx, user.uid, them).await?))
}

#[utoipa::path(put, path = "/api/v1/users/{uid}/block", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = BlockState), (status = 409, description = "that is the caller")),
    security(("bearer" = [])))]
pub async fn block(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::block(&ctx, user.uid, them).await?))
}

#[utoipa::path(delete, path = "/api/v1/users/{uid}/block", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = BlockState), (status = 409, description = "that is the caller")),
    security(("bearer" = [])))]
pub async fn unblock(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::unblock(&ctx, user.uid, them).await?))
}

async fn listing(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: PageParams,
    which: Listing,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    let page = social::list(
        &ctx,
        uid,
        which,
        viewer.0,
        params.cursor,
        params.limit,
        crate::ids::now_ms(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/followers", tag = "social",
    params(("uid" = i64, Path, minimum = 1), PageQuery),
    responses((status = 200, body = Page<UserCard>, description = "newest follower first")),
    security((), ("bearer" = [])))]
pub async fn followers(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: PageParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Followers).await
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/following", tag = "social",
    params(("uid" = i64, Path, minimum = 1), PageQuery),
    responses((status = 200, body = Page<UserCard>, description = "newest first")),
    security((), ("bearer" = [])))]
pub async fn following(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: PageParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Following).await
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/friends", tag = "social",
    params(("uid" = i64, Path, minimum = 1), PageQuery),
    responses((status = 200, body = Page<UserCard>, description = "mutual follows, newest first")),
    security((), ("bearer" = [])))]
pub async fn friends(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: PageParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Friends).await
}
