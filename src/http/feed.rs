//! The home timeline.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{AuthUser, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::service::{timeline, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/feed", [(Method::GET, web::to(feed))]));
}

#[utoipa::path(get, path = "/api/v1/feed", tag = "feed",
    params(PageQuery, PresentationQuery),
    responses((status = 200, body = crate::service::views::Page<crate::service::views::ExpandedPost>,
               description = "the home timeline, newest first, own posts included")),
    security(("bearer" = [])))]
pub async fn feed(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let page = timeline::home(&ctx, user.uid, params.cursor, params.limit, &params.pres).await?;
    super::posts_page(&page)
}
