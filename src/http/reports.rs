//! Reports: a signed-in user reports a post, a comment or an account, and
//! follows what became of their reports.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{AuthUser, JsonBody, PageParams, PageQuery};
use crate::domain::report::{NewReport, NewReportRequest};
use crate::error::AppError;
use crate::service::read::responses::Page;
use crate::service::reports::{self, ReportView};
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/reports", [(Method::POST, web::to(file))]));
    cfg.service(super::resource(
        "/me/reports",
        [(Method::GET, web::to(mine))],
    ));
}

#[utoipa::path(post, path = "/api/v1/reports", tag = "reports", request_body = NewReportRequest,
    responses(
        (status = 201, body = ReportView, description = "filed"),
        (status = 200, body = ReportView, description = "the caller's open report of this target, updated"),
        (status = 404, description = "no such target, or the caller may not see it"),
        (status = 422, description = "the caller's own post, comment or account; or a named post that is not the reported account's"),
        (status = 429, description = "past the daily budget of reports (MOMENTS_RATE_REPORTS)"),
    ),
    security(("bearer" = [])))]
pub async fn file(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(req): JsonBody<NewReportRequest>,
) -> Result<HttpResponse, AppError> {
    let report = NewReport::parse(req)?;
    let filed = reports::file(&ctx, user.uid, report).await?;
    Ok(if filed.new {
        HttpResponse::Created().json(filed.report)
    } else {
        HttpResponse::Ok().json(filed.report)
    })
}

#[utoipa::path(get, path = "/api/v1/me/reports", tag = "reports", params(PageQuery),
    responses((status = 200, body = Page<ReportView>, description = "the caller's reports, newest first, with their state and, once closed, the outcome the moderator shared")),
    security(("bearer" = [])))]
pub async fn mine(
    ctx: web::Data<Context>,
    user: AuthUser,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(reports::mine(&ctx, user.uid, page.cursor, page.limit).await?))
}
