//! Strikes: what moderators recorded against the signed-in account, and
//! its appeals of them.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, JsonBody, PageParams, PageQuery, RequestOrigin};
use crate::error::AppError;
use crate::service::read::responses::Page;
use crate::service::strikes::{self, AppealRequest, StrikeView, SuspendedAppealRequest};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/me/strikes",
        [(Method::GET, web::to(mine))],
    ));
    cfg.service(super::resource(
        "/me/strikes/{id}/appeal",
        [(Method::POST, web::to(appeal))],
    ));
    cfg.service(super::resource(
        "/appeals",
        [(Method::POST, web::to(appeal_while_suspended))],
    ));
}

#[utoipa::path(get, path = "/api/v1/me/strikes", tag = "reports", params(PageQuery),
    responses((status = 200, body = Page<StrikeView>, description = "the caller's strikes, newest first: what was struck, why if the moderator said, the appeal and until when one may be made")),
    security(("bearer" = [])))]
pub async fn mine(
    ctx: web::Data<Context>,
    user: AuthUser,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(strikes::mine(&ctx, user.uid, page.cursor, page.limit).await?))
}

#[utoipa::path(post, path = "/api/v1/me/strikes/{id}/appeal", tag = "reports",
    params(("id" = i64, Path, minimum = 1)), request_body = AppealRequest,
    responses(
        (status = 201, body = StrikeView, description = "appealed: the appeal is in the moderation queue"),
        (status = 404, description = "no such strike of the caller's"),
        (status = 409, description = "appealed already, or withdrawn already"),
        (status = 422, description = "more than 20 days after the strike"),
    ),
    security(("bearer" = [])))]
pub async fn appeal(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    JsonBody(req): JsonBody<AppealRequest>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "strike")?;
    Ok(HttpResponse::Created().json(strikes::appeal(&ctx, user.uid, id, req).await?))
}

#[utoipa::path(post, path = "/api/v1/appeals", tag = "reports",
    request_body = SuspendedAppealRequest,
    responses(
        (status = 201, body = StrikeView, description = "appealed: the appeal is in the moderation queue"),
        (status = 401, description = "wrong username or password"),
        (status = 404, description = "no such strike of this account's"),
        (status = 409, description = "appealed already, or withdrawn already"),
        (status = 422, description = "the account is not suspended (it appeals signed in), or more than 20 days after the strike"),
    ))]
/// For an account that cannot sign in (suspended or banned): appeal a
/// strike with the username and password, checked and counted as a
/// sign-in is. The refused sign-in names the strike (`strikeId`).
pub async fn appeal_while_suspended(
    ctx: web::Data<Context>,
    RequestOrigin(origin): RequestOrigin,
    JsonBody(req): JsonBody<SuspendedAppealRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(strikes::appeal_while_suspended(&ctx, req, &origin).await?))
}
