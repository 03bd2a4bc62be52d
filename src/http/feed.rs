//! The home timeline.

use actix_web::{web, HttpResponse};

use super::extract::{AuthUser, ReadParams};
use crate::error::AppError;
use crate::service::{timeline, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/feed", web::get().to(feed));
}

#[utoipa::path(get, path = "/api/v1/feed", tag = "feed",
    params(("cursor" = Option<String>, Query), ("limit" = Option<usize>, Query),
           ("lang" = Option<String>, Query), ("tz" = Option<String>, Query)),
    responses((status = 200, description = "{items: [ExpandedPost], nextCursor, serverTime}: the home timeline, newest first, own posts included"),
              (status = 401, body = super::problem::Problem)),
    security(("bearer" = [])))]
pub async fn feed(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let page = timeline::home(&ctx, user.uid, params.cursor, params.limit, &params.pres).await?;
    Ok(HttpResponse::Ok().json(page))
}
