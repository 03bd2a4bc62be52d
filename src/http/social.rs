//! Follows, blocks, mutes, hides and the lists of a user's graph.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, MaybeAuthUser, PageParams, PageQuery};
use crate::error::AppError;
use crate::service::read::responses::Page;
use crate::service::social::{self, BlockState, FollowState, HideState, Listing, MuteState};
use crate::service::Context;
use crate::store::{FilterKind, UserCard};

pub fn routes(cfg: &mut web::ServiceConfig) {
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
        "/users/{uid}/mute",
        [
            (Method::PUT, web::to(mute)),
            (Method::DELETE, web::to(unmute)),
        ],
    ));
    cfg.service(super::resource(
        "/users/{uid}/hide",
        [
            (Method::PUT, web::to(hide)),
            (Method::DELETE, web::to(unhide)),
        ],
    ));
    cfg.service(super::resource(
        "/me/muted",
        [(Method::GET, web::to(muted))],
    ));
    cfg.service(super::resource(
        "/me/hidden",
        [(Method::GET, web::to(hidden))],
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

#[utoipa::path(put, path = "/api/v1/users/{uid}/follow", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = FollowState), (status = 409, description = "that is the caller, one the caller blocked, or the caller follows as many accounts as one may")),
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

/// Sets or clears a mute or a hide, answering the state as JSON.
async fn filter(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
    kind: FilterKind,
    on: bool,
) -> Result<HttpResponse, AppError> {
    let them = path_id(&uid, "user")?;
    if on {
        social::set_filter(&ctx, kind, user.uid, them).await?;
    } else {
        social::clear_filter(&ctx, kind, user.uid, them).await?;
    }
    Ok(match kind {
        FilterKind::Mute => HttpResponse::Ok().json(MuteState { muted: on }),
        FilterKind::Hide => HttpResponse::Ok().json(HideState { hidden: on }),
    })
}

#[utoipa::path(put, path = "/api/v1/users/{uid}/mute", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = MuteState, description = "their posts leave the caller's home feed; their album stays open; repeating it changes nothing"),
              (status = 409, description = "that is the caller, one the caller blocked, or the caller mutes as many accounts as one may")),
    security(("bearer" = [])))]
pub async fn mute(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    filter(ctx, user, uid, FilterKind::Mute, true).await
}

#[utoipa::path(delete, path = "/api/v1/users/{uid}/mute", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = MuteState), (status = 409, description = "that is the caller")),
    security(("bearer" = [])))]
pub async fn unmute(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    filter(ctx, user, uid, FilterKind::Mute, false).await
}

#[utoipa::path(put, path = "/api/v1/users/{uid}/hide", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = HideState, description = "none of the caller's posts are visible to them; repeating it changes nothing"),
              (status = 409, description = "that is the caller, one the caller blocked, not one of the caller's followers, or the caller hides from as many accounts as one may")),
    security(("bearer" = [])))]
pub async fn hide(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    filter(ctx, user, uid, FilterKind::Hide, true).await
}

#[utoipa::path(delete, path = "/api/v1/users/{uid}/hide", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = HideState, description = "they see the caller's posts again, earlier ones included"),
              (status = 409, description = "that is the caller")),
    security(("bearer" = [])))]
pub async fn unhide(
    ctx: web::Data<Context>,
    user: AuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    filter(ctx, user, uid, FilterKind::Hide, false).await
}

async fn filtered(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: PageParams,
    kind: FilterKind,
) -> Result<HttpResponse, AppError> {
    let now = crate::ids::now_ms();
    let page = social::filtered(&ctx, user.uid, kind, params.cursor, params.limit, now).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(get, path = "/api/v1/me/muted", tag = "social", params(PageQuery),
    responses((status = 200, body = Page<UserCard>, description = "the accounts the caller muted, newest first")),
    security(("bearer" = [])))]
pub async fn muted(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: PageParams,
) -> Result<HttpResponse, AppError> {
    filtered(ctx, user, params, FilterKind::Mute).await
}

#[utoipa::path(get, path = "/api/v1/me/hidden", tag = "social", params(PageQuery),
    responses((status = 200, body = Page<UserCard>, description = "the accounts the caller hides their posts from, newest first")),
    security(("bearer" = [])))]
pub async fn hidden(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: PageParams,
) -> Result<HttpResponse, AppError> {
    filtered(ctx, user, params, FilterKind::Hide).await
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
    responses((status = 200, body = Page<UserCard>, description = "newest follower first"),
              (status = 404, description = "no such user (or a deleted one), or one who blocked the viewer")),
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
    responses((status = 200, body = Page<UserCard>, description = "newest first"),
              (status = 404, description = "no such user (or a deleted one), or one who blocked the viewer")),
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
    responses((status = 200, body = Page<UserCard>, description = "mutual follows, newest first"),
              (status = 404, description = "no such user (or a deleted one), or one who blocked the viewer")),
    security((), ("bearer" = [])))]
pub async fn friends(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
    params: PageParams,
) -> Result<HttpResponse, AppError> {
    listing(ctx, viewer, uid, params, Listing::Friends).await
}
