//! History (浏览记录): the posts a reader viewed in the last 30 days, newest
//! view first, from the views counted in `service::jobs::post_views`.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{AuthUser, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::service::read::responses::{ExpandedPost, Page};
use crate::service::{jobs::post_views, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/me/history",
        [(Method::GET, web::to(history))],
    ));
}

#[utoipa::path(get, path = "/api/v1/me/history", tag = "history",
    params(PageQuery, PresentationQuery),
    responses((status = 200, body = Page<ExpandedPost>, description = "the posts the caller viewed in the last 30 days and may still see, newest view first, one entry per post and day (views of the last second may not be listed yet)")),
    security(("bearer" = [])))]
pub async fn history(
    ctx: web::Data<Context>,
    user: AuthUser,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let page =
        post_views::history(&ctx, user.uid, params.cursor, params.limit, &params.pres).await?;
    super::posts_page(&page)
}
