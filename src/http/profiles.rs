//! A user's public profile (`GET /users/{uid}`); finding one by username
//! is `GET /users`, beside sign-up in `accounts.rs`.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, MaybeAuthUser};
use crate::error::AppError;
use crate::service::profiles::{self, Profile};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/users/{uid}",
        [(Method::GET, web::to(profile))],
    ));
}

#[utoipa::path(get, path = "/api/v1/users/{uid}", tag = "social", params(("uid" = i64, Path, minimum = 1)),
    responses((status = 200, body = Profile),
              (status = 404, description = "no such user, or one who blocked the viewer (whom the viewer blocked is found, `blocking`)")),
    security((), ("bearer" = [])))]
pub async fn profile(
    ctx: web::Data<Context>,
    viewer: MaybeAuthUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(profiles::profile(&ctx, uid, viewer.0).await?))
}
