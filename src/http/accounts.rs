//! Accounts and sessions.

use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, JsonBody, RequestOrigin};
use super::problem::Problem;
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::accounts::{
    self, AccountDeletion, LoginRequest, Me, PasswordChange, ProfilePatch, RegisterRequest,
    Session, SessionView,
};
use crate::service::Context;
use crate::store::UserCard;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/users", web::post().to(register))
        .route("/sessions", web::post().to(login))
        .route("/sessions", web::get().to(list_sessions))
        .route("/sessions", web::delete().to(sign_out_everywhere))
        .route("/sessions/current", web::delete().to(logout))
        .route("/sessions/{id}", web::delete().to(sign_out_session))
        .route("/me", web::get().to(me))
        .route("/me", web::patch().to(update_me))
        .route("/me", web::delete().to(delete_account))
        .route("/me/password", web::put().to(change_password));
}

#[utoipa::path(post, path = "/api/v1/users", tag = "accounts", request_body = RegisterRequest,
    responses((status = 201, body = UserCard), (status = 400, body = Problem), (status = 409, body = Problem),
        (status = 429, body = Problem), (status = 503, body = Problem)))]
pub async fn register(
    ctx: web::Data<Context>,
    RequestOrigin(origin): RequestOrigin,
    JsonBody(req): JsonBody<RegisterRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(accounts::register(&ctx, req, &origin).await?))
}

#[utoipa::path(post, path = "/api/v1/sessions", tag = "accounts", request_body = LoginRequest,
    responses((status = 201, body = Session), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 429, body = Problem), (status = 503, body = Problem)))]
pub async fn login(
    ctx: web::Data<Context>,
    RequestOrigin(origin): RequestOrigin,
    JsonBody(req): JsonBody<LoginRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(accounts::login(&ctx, req, &origin).await?))
}

/// The caller's signed-in devices, newest first (`{items, nextCursor, serverTime}`).
#[utoipa::path(get, path = "/api/v1/sessions", tag = "accounts",
    responses((status = 200, body = [SessionView]), (status = 401, body = Problem)), security(("bearer" = [])))]
pub async fn list_sessions(
    ctx: web::Data<Context>,
    user: AuthUser,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::list_sessions(&ctx, &user.session, now_ms()).await?))
}

/// Signs out every session of the caller, this one included.
#[utoipa::path(delete, path = "/api/v1/sessions", tag = "accounts",
    responses((status = 204), (status = 401, body = Problem)), security(("bearer" = [])))]
pub async fn sign_out_everywhere(
    ctx: web::Data<Context>,
    user: AuthUser,
) -> Result<HttpResponse, AppError> {
    accounts::sign_out_everywhere(&ctx, user.uid, None).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(delete, path = "/api/v1/sessions/current", tag = "accounts",
    responses((status = 204), (status = 401, body = Problem)), security(("bearer" = [])))]
pub async fn logout(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    accounts::logout(&ctx, &user.session).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Signs out one of the caller's sessions.
#[utoipa::path(delete, path = "/api/v1/sessions/{id}", tag = "accounts",
    params(("id" = i64, Path, description = "a session id from GET /sessions")),
    responses((status = 204), (status = 401, body = Problem), (status = 404, body = Problem)), security(("bearer" = [])))]
pub async fn sign_out_session(
    ctx: web::Data<Context>,
    user: AuthUser,
    path: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&path, "session")?;
    accounts::sign_out_session(&ctx, &user.session, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/api/v1/me", tag = "accounts",
    responses((status = 200, body = Me), (status = 401, body = Problem)), security(("bearer" = [])))]
pub async fn me(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::me(&ctx, user.uid).await?))
}

#[utoipa::path(patch, path = "/api/v1/me", tag = "accounts", request_body = ProfilePatch,
    responses((status = 200, body = Me), (status = 400, body = Problem)), security(("bearer" = [])))]
pub async fn update_me(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(patch): JsonBody<ProfilePatch>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::update_me(&ctx, user.uid, patch).await?))
}

/// Changes the password and signs out every other session.
#[utoipa::path(put, path = "/api/v1/me/password", tag = "accounts", request_body = PasswordChange,
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 429, body = Problem)), security(("bearer" = [])))]
pub async fn change_password(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(req): JsonBody<PasswordChange>,
) -> Result<HttpResponse, AppError> {
    accounts::change_password(&ctx, &user.session, req).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Deletes the caller's account and erases what it did from every read.
#[utoipa::path(delete, path = "/api/v1/me", tag = "accounts", request_body = AccountDeletion,
    responses((status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 429, body = Problem)), security(("bearer" = [])))]
pub async fn delete_account(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(req): JsonBody<AccountDeletion>,
) -> Result<HttpResponse, AppError> {
    accounts::delete_account(&ctx, &user.session, req).await?;
    Ok(HttpResponse::NoContent().finish())
}
