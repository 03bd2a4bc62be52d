//! The home timeline.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use actix_web::{FromRequest, HttpRequest};

use super::extract::{Credentials, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::service::{accounts, feed::page, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/feed", [(Method::GET, web::to(feed))]));
}

#[utoipa::path(get, path = "/api/v1/feed", tag = "feed",
    params(PageQuery, PresentationQuery),
    responses((status = 200, body = crate::service::read::responses::Page<crate::service::read::responses::ExpandedPost>,
               description = "the home timeline, newest first, own posts included")),
    security(("bearer" = [])))]
pub async fn feed(ctx: web::Data<Context>, req: HttpRequest) -> Result<HttpResponse, AppError> {
    // Signed in by hand rather than by `AuthUser`: the page's first read
    // (the timeline) rides in the session check's round trip. The query is
    // judged after the token all the same, as `AuthUser` orders them.
    let c = Credentials::of(&req, &ctx)?;
    let params = match ReadParams::extract(&req).await {
        Ok(p) => p,
        Err(bad_query) => {
            accounts::authenticate(&ctx, &c.token, c.traffic, &c.origin).await?;
            return Err(bad_query);
        }
    };
    let mut plan = None;
    let (session, first) =
        accounts::authenticate_with(&ctx, &c.token, c.traffic, &c.origin, |uid| {
            let made = page::first_read(&ctx, uid, params.cursor, params.limit);
            let read = made.read.clone();
            plan = Some(made);
            read
        })
        .await?;
    let first = plan.zip(first);
    let page = page::page_after_read(
        &ctx,
        session.uid,
        params.cursor,
        params.limit,
        &params.pres,
        first,
    )
    .await?;
    super::posts_page(&page)
}
