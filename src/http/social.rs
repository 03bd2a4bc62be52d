//! Follows, blocks and the lists of a user's graph.

use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, MaybeAuthUser, ReadParams};
use crate::error::AppError;
use crate::service::social::{self, BlockState, FollowState, Listing, Profile};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/users/{uid}", web::get().to(profile))
        .route("/users/{uid}/follow", web::put().to(follow))
        .route("/users/{uid}/follow", web::delete().to(unfollow))
        .route("/users/{uid}/block", web::put().to(block))
        .route("/users/{uid}/block", web::delete().to(unblock))
        .route("/users/{uid}/followers", web::get().to(followers))
        .route("/users/{uid}/following", web::get().to(following))
        .route("/users/{uid}/friends", web::get().to(friends));
}

#[utoipa::path(get, path = "/api/v1/users/{uid}", tag = "social", params(("uid" = i64, Path)),
    responses((status = 200, body = Profile), (status = 404, body = super::problem::Problem)))]
pub async fn profile(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::profile(&ctx, uid, viewer.0).await?))
}

#[utoipa::path(put, path = "/api/v1/users/{uid}/follow", tag = "social", params(("uid" = i64, Path)),
    responses((status = 200, body = FollowState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn follow(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::follow(&ctx, user.uid, them).await?))
}

#[utoipa::path(delete, path = "/api/v1/users/{uid}/follow", tag = "social", params(("uid" = i64, Path)),
    responses((status = 200, body = FollowState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn unfollow(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::unfollow(&ctx, user.uid, them).await?))
}

#[utoipa::path(put, path = "/api/v1/users/{uid}/block", tag = "social", params(("uid" = i64, Path)),
    responses((status = 200, body = BlockState), (status = 404, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn block(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(social::block(&ctx, user.uid, them).await?))
}

#[utoipa::path(delete, path = "/api/v1/users/{uid}/block", tag = "social", params(("uid" = i64, Path)),
    responses((status = 200, body = BlockState)), security(("bearer" = [])))]
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
    params: ReadParams,
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
        params.pres.now,
    )
    .await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/followers", tag = "social",
    params(("uid" = i64, Path), ("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [UserCard], nextCursor, serverTime}, newest follower first")))]
pub async fn followers(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Followers).await
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/following", tag = "social",
    params(("uid" = i64, Path), ("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [UserCard], nextCursor, serverTime}, newest first")))]
pub async fn following(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Following).await
}

#[utoipa::path(get, path = "/api/v1/users/{uid}/friends", tag = "social",
    params(("uid" = i64, Path), ("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query)),
    responses((status = 200, description = "{items: [UserCard], nextCursor, serverTime}: mutual follows")))]
pub async fn friends(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Friends).await
}
