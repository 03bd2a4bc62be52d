//! Accounts and sessions.

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};

use super::extract::{parse_json_object, path_id, AuthUser, Body, JsonBody, RequestOrigin};
use super::idempotency::{self, IdempotencyKeyHeader};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::accounts::{
    self, AccountDeletion, LoginRequest, Me, PasswordChange, ProfilePatch, RegisterRequest,
    Session, SessionView,
};
use crate::service::profiles::{self, Profile};
use crate::service::read::responses::Page;
use crate::service::Context;
use crate::store::UserCard;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/users",
        [
            (Method::POST, web::to(register)),
            (Method::GET, web::to(find_user)),
        ],
    ));
    cfg.service(super::resource(
        "/sessions",
        [
            (Method::POST, web::to(login)),
            (Method::GET, web::to(list_sessions)),
            (Method::DELETE, web::to(sign_out_everywhere)),
        ],
    ));
    cfg.service(super::resource(
        "/sessions/current",
        [(Method::DELETE, web::to(logout))],
    ));
    cfg.service(super::resource(
        "/sessions/{id}",
        [(Method::DELETE, web::to(sign_out_session))],
    ));
    cfg.service(super::resource(
        "/me",
        [
            (Method::GET, web::to(me)),
            (Method::PATCH, web::to(update_me)),
            (Method::DELETE, web::to(delete_account)),
        ],
    ));
    cfg.service(super::resource(
        "/me/password",
        [(Method::PUT, web::to(change_password))],
    ));
}

/// `?username=` on `GET /users`.
#[derive(serde::Deserialize)]
pub struct FindUserQuery {
    username: String,
}

// By hand: utoipa's derive leaves a parameter with `schema_with` optional.
impl utoipa::IntoParams for FindUserQuery {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        vec![ParameterBuilder::new()
            .name("username")
            .parameter_in(ParameterIn::Query)
            .required(utoipa::openapi::Required::True)
            .description(Some("The exact username, any case."))
            .schema(Some(crate::domain::user::username_schema()))
            .build()]
    }
}

/// Finding someone to follow by the name they told you (WeChat's "search
/// by ID"): an exact match only, for a signed-in caller, on a budget of its
/// own (`MOMENTS_RATE_USER_LOOKUPS`), so the directory cannot be listed.
#[utoipa::path(get, path = "/api/v1/users", tag = "accounts", params(FindUserQuery),
    responses((status = 200, body = Profile),
              (status = 404, description = "no such user, or one who blocked the caller"),
              (status = 429, description = "over MOMENTS_RATE_USER_LOOKUPS")),
    security(("bearer" = [])))]
pub async fn find_user(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: HttpRequest,
) -> Result<HttpResponse, AppError> {
    let q: FindUserQuery = super::extract::query(&req)?;
    Ok(HttpResponse::Ok().json(profiles::profile_by_username(&ctx, &q.username, user.uid).await?))
}

#[utoipa::path(post, path = "/api/v1/users", tag = "accounts", request_body = RegisterRequest,
    params(IdempotencyKeyHeader),
    responses((status = 201, body = UserCard),
              (status = 409, description = "the username is taken, or the first request with this \
                 Idempotency-Key is still running"),
              (status = 422, description = "this Idempotency-Key was used for a different request; or the nickname is refused by a content filter")))]
pub async fn register(
    ctx: web::Data<Context>,
    RequestOrigin(origin): RequestOrigin,
    req: HttpRequest,
    Body(body): Body,
) -> Result<HttpResponse, AppError> {
    let registration =
        accounts::check_registration(&ctx, parse_json_object::<RegisterRequest>(&body)?, &origin)
            .await?;
    // Nobody is signed in yet: keys are scoped to the client's address.
    let scope = format!("a{}", origin.addr.as_deref().unwrap_or("-"));
    let identity = registration.identity();
    let make = ctx.clone();
    let create =
        move |reserved| async move { accounts::register(&make, registration, reserved).await };
    idempotency::once(&ctx, &req, scope, &identity, create).await
}

#[utoipa::path(post, path = "/api/v1/sessions", tag = "accounts", request_body = LoginRequest,
    responses((status = 201, body = Session),
        (status = 401, description = "wrong username or password"),
        (status = 403, description = "the right password for an account a moderator suspended (`account_suspended`: `until` says when it ends) or banned; `strikeId` names the strike it may appeal (POST /appeals)")))]
pub async fn login(
    ctx: web::Data<Context>,
    RequestOrigin(origin): RequestOrigin,
    JsonBody(req): JsonBody<LoginRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(accounts::login(&ctx, req, &origin).await?))
}

/// The caller's signed-in devices, newest first (`{items, nextCursor, serverTime}`).
#[utoipa::path(get, path = "/api/v1/sessions", tag = "accounts",
    responses((status = 200, body = Page<SessionView>, description = "the caller's signed-in devices, newest first")), security(("bearer" = [])))]
pub async fn list_sessions(
    ctx: web::Data<Context>,
    user: AuthUser,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::list_sessions(&ctx, &user.session, now_ms()).await?))
}

/// Signs out every session of the caller, this one included.
#[utoipa::path(delete, path = "/api/v1/sessions", tag = "accounts",
    responses((status = 204, description = "every session of the account is signed out")), security(("bearer" = [])))]
pub async fn sign_out_everywhere(
    ctx: web::Data<Context>,
    user: AuthUser,
) -> Result<HttpResponse, AppError> {
    crate::service::credentials::sign_out_everywhere(&ctx, user.uid).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(delete, path = "/api/v1/sessions/current", tag = "accounts",
    responses((status = 204, description = "this session is signed out")), security(("bearer" = [])))]
pub async fn logout(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    accounts::logout(&ctx, &user.session).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Signs out one of the caller's sessions.
#[utoipa::path(delete, path = "/api/v1/sessions/{id}", tag = "accounts",
    params(("id" = i64, Path, minimum = 1, description = "a session id from GET /sessions")),
    responses((status = 204, description = "signed out"), (status = 404, description = "no such session of the caller's")), security(("bearer" = [])))]
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
    responses((status = 200, body = Me)), security(("bearer" = [])))]
pub async fn me(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::me(&ctx, user.uid).await?))
}

#[utoipa::path(patch, path = "/api/v1/me", tag = "accounts", request_body = ProfilePatch,
    responses((status = 200, body = Me),
              (status = 422, description = "the nickname is refused by a content filter (its reason in `detail`)")),
    security(("bearer" = [])))]
pub async fn update_me(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(patch): JsonBody<ProfilePatch>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(accounts::update_me(&ctx, user.uid, patch).await?))
}

/// Changes the password and signs out every other session.
#[utoipa::path(put, path = "/api/v1/me/password", tag = "accounts", request_body = PasswordChange,
    responses((status = 204, description = "changed; every other session is signed out"),
        (status = 403, description = "the old password is not right"),
        (status = 409, description = "another change of the password came first; this session \
            is signed out")), security(("bearer" = [])))]
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
    responses((status = 204, description = "the account is gone; what it did is being erased"),
        (status = 403, description = "the password is not right")), security(("bearer" = [])))]
pub async fn delete_account(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(req): JsonBody<AccountDeletion>,
) -> Result<HttpResponse, AppError> {
    accounts::delete_account(&ctx, &user.session, req).await?;
    Ok(HttpResponse::NoContent().finish())
}
