//! Accounts and sessions.

use actix_web::{web, HttpResponse};

use super::extract::{AuthUser, JsonBody};
use crate::error::AppError;
use crate::service::accounts::{self, LoginRequest, Me, ProfilePatch, RegisterRequest, Session};
use crate::service::Context;
use crate::store::UserCard;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/users", web::post().to(register))
        .route("/sessions", web::post().to(login))
        .route("/sessions/current", web::delete().to(logout))
        .route("/me", web::get().to(me))
        .route("/me", web::patch().to(update_me));
}

#[utoipa::path(post, path = "/api/v1/users", tag = "accounts", request_body = RegisterRequest,
    responses((status = 201, body = UserCard), (status = 400, body = super::problem::Problem), (status = 409, body = super::problem::Problem)))]
pub async fn register(
    ctx: web::Data<Context>,
    JsonBody(req): JsonBody<RegisterRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(accounts::register(&ctx, req).await?))
}

#[utoipa::path(post, path = "/api/v1/sessions", tag = "accounts", request_body = LoginRequest,
    responses((status = 201, body = Session), (status = 401, body = super::problem::Problem)))]
pub async fn login(
    ctx: web::Data<Context>,
    JsonBody(req): JsonBody<LoginRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(accounts::login(&ctx, req).await?))
}

#[utoipa::path(delete, path = "/api/v1/sessions/current", tag = "accounts",
    responses((status = 204), (status = 401, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn logout(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    accounts::logout(&ctx, &user.token).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/api/v1/me", tag = "accounts",
    responses((status = 200, body = Me), (status = 401, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn me(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::me(&ctx, user.uid).await?))
}

#[utoipa::path(patch, path = "/api/v1/me", tag = "accounts", request_body = ProfilePatch,
    responses((status = 200, body = Me), (status = 400, body = super::problem::Problem)), security(("bearer" = [])))]
pub async fn update_me(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(patch): JsonBody<ProfilePatch>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::update_me(&ctx, user.uid, patch).await?))
}
