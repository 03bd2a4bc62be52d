//! The moderators' console: the report queue, acting on it, the audit
//! log; for admins, roles and the service's published contact and rules;
//! and, for anyone, `GET /instance`.

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use super::extract::{path_id, query, AdminUser, JsonBody, ModeratorUser, PageParams, PageQuery};
use crate::domain::content_filter::ContentFilterRequest;
use crate::domain::instance::InstanceInfo;
use crate::domain::report::ReportCategory;
use crate::error::AppError;
use crate::service::content_filters::{self, ContentFilterView};
use crate::service::moderation::{
    self, ActionRequest, AuditEntry, BulkActionRequest, BulkResult, CaseView, HeldPostNow,
    QueueFilter, RoleRequest, RoleState,
};
use crate::service::read::responses::Page;
use crate::service::Context;
use crate::store::CaseState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/admin/reports",
        [(Method::GET, web::to(queue))],
    ));
    cfg.service(super::resource(
        "/admin/reports/actions",
        [(Method::POST, web::to(act_in_bulk))],
    ));
    cfg.service(super::resource(
        "/admin/reports/{id}",
        [(Method::GET, web::to(case))],
    ));
    cfg.service(super::resource(
        "/admin/reports/{id}/held-posts",
        [(Method::GET, web::to(held_posts))],
    ));
    cfg.service(super::resource(
        "/admin/reports/{id}/actions",
        [(Method::POST, web::to(act))],
    ));
    cfg.service(super::resource(
        "/admin/users/{uid}/role",
        [(Method::PUT, web::to(set_role))],
    ));
    cfg.service(super::resource(
        "/admin/users/{uid}/suspension",
        [(Method::DELETE, web::to(lift_suspension))],
    ));
    cfg.service(super::resource(
        "/admin/audit-log",
        [(Method::GET, web::to(audit_log))],
    ));
    cfg.service(super::resource(
        "/instance",
        [(Method::GET, web::to(instance))],
    ));
    cfg.service(super::resource(
        "/admin/instance",
        [(Method::PUT, web::to(set_instance))],
    ));
    cfg.service(super::resource(
        "/admin/filters",
        [
            (Method::GET, web::to(filters)),
            (Method::POST, web::to(create_filter)),
        ],
    ));
    cfg.service(super::resource(
        "/admin/filters/{id}",
        [
            (Method::PUT, web::to(update_filter)),
            (Method::DELETE, web::to(delete_filter)),
        ],
    ));
}

/// `?state=&category=&account=` on the queue.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// `open` (the default), `actioned` or `dismissed`.
    #[param(inline)]
    state: Option<CaseState>,
    #[param(inline)]
    category: Option<ReportCategory>,
    /// Only cases about this account's content or account.
    #[param(value_type = Option<i64>, minimum = 1)]
    account: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/admin/reports", tag = "moderation",
    params(QueueQuery, PageQuery),
    responses((status = 200, body = Page<CaseView>, description = "one case per reported target, newest first")),
    security(("bearer" = [])))]
pub async fn queue(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    req: HttpRequest,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    let q: QueueQuery = query(&req)?;
    let account = q
        .account
        .as_deref()
        .map(|a| path_id(a, "account").map_err(|_| AppError::invalid("account", "must be a uid")))
        .transpose()?;
    let filter = QueueFilter {
        state: q.state,
        category: q.category,
        account,
    };
    let items = moderation::queue(&ctx, moderator.0, filter, page.cursor, page.limit).await?;
    Ok(HttpResponse::Ok().json(items))
}

#[utoipa::path(get, path = "/api/v1/admin/reports/{id}", tag = "moderation",
    params(("id" = i64, Path, minimum = 1), PageQuery),
    responses(
        (status = 200, body = CaseView, description = "the case, a page of its reports oldest first (the next page at ?cursor=reportsCursor), and its account's earlier closed cases"),
        (status = 403, description = "a report about the caller: for another moderator"),
        (status = 404, description = "no such case"),
    ),
    security(("bearer" = [])))]
pub async fn case(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    id: web::Path<String>,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "case")?;
    let case = moderation::case(&ctx, moderator.0, id, page.cursor, page.limit).await?;
    Ok(HttpResponse::Ok().json(case))
}

#[utoipa::path(get, path = "/api/v1/admin/reports/{id}/held-posts", tag = "moderation",
    params(("id" = i64, Path, minimum = 1), PageQuery),
    responses(
        (status = 200, body = Page<HeldPostNow>, description = "every post the case holds, oldest first, as it is now: an action on the case covers them all"),
        (status = 403, description = "a case about the caller: for another moderator"),
        (status = 404, description = "no such case, or it holds no posts"),
    ),
    security(("bearer" = [])))]
pub async fn held_posts(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    id: web::Path<String>,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "case")?;
    let page = moderation::held_posts(&ctx, moderator.0, id, page.cursor, page.limit).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(post, path = "/api/v1/admin/reports/{id}/actions", tag = "moderation",
    params(("id" = i64, Path, minimum = 1)), request_body = ActionRequest,
    responses(
        (status = 200, body = CaseView, description = "closed, with every report in it; each reporter is notified; the struck account too"),
        (status = 403, description = "a report about the caller: for another moderator; or a ban's appeal overturned by a moderator (an admin's call)"),
        (status = 404, description = "no such case"),
        (status = 409, description = "closed already; or, on a case of held posts, `heldCount` is not how many it holds now (more were held since the moderator looked)"),
        (status = 422, description = "an action on a case of held posts without `heldCount`, or `heldCount` on another case; `shareWithReporter` without a note to share; `days` missing for `suspend` or given for another action; an action that does not fit the case (removing an account, `overturn` on anything but an appeal, anything but `dismiss` or `overturn` on one)"),
    ),
    security(("bearer" = [])))]
pub async fn act(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    id: web::Path<String>,
    JsonBody(req): JsonBody<ActionRequest>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "case")?;
    Ok(HttpResponse::Ok().json(moderation::act(&ctx, moderator.0, id, &req).await?))
}

#[utoipa::path(post, path = "/api/v1/admin/reports/actions", tag = "moderation",
    request_body = BulkActionRequest,
    responses((status = 200, body = Vec<BulkResult>, description = "each case's answer: 200 closed, 403 about the caller, 404 no such case, 409 closed already, 422 the action does not fit it, 503 try again"),
              (status = 422, description = "`shareWithReporter` without a note to share; `days` missing for `suspend` or given for another action")),
    security(("bearer" = [])))]
pub async fn act_in_bulk(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    JsonBody(req): JsonBody<BulkActionRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(moderation::act_in_bulk(&ctx, moderator.0, &req).await?))
}

#[utoipa::path(put, path = "/api/v1/admin/users/{uid}/role", tag = "moderation",
    params(("uid" = i64, Path, minimum = 1)), request_body = RoleRequest,
    responses(
        (status = 200, body = RoleState),
        (status = 403, description = "only an admin sets roles"),
        (status = 404, description = "no such account"),
        (status = 422, description = "an admin's own role"),
    ),
    security(("bearer" = [])))]
pub async fn set_role(
    ctx: web::Data<Context>,
    admin: AdminUser,
    uid: web::Path<String>,
    JsonBody(req): JsonBody<RoleRequest>,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    Ok(HttpResponse::Ok().json(moderation::set_role(&ctx, admin.0, uid, req.role).await?))
}

#[utoipa::path(delete, path = "/api/v1/admin/users/{uid}/suspension", tag = "moderation",
    params(("uid" = i64, Path, minimum = 1)),
    responses(
        (status = 204, description = "lifted: the account may sign in, and its content is back; its strikes stand"),
        (status = 403, description = "only an admin lifts a suspension or a ban"),
        (status = 404, description = "no such account"),
        (status = 409, description = "the account is not suspended"),
    ),
    security(("bearer" = [])))]
pub async fn lift_suspension(
    ctx: web::Data<Context>,
    admin: AdminUser,
    uid: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let uid = path_id(&uid, "user")?;
    crate::service::strikes::lift_suspension(&ctx, admin.0, uid).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/api/v1/admin/audit-log", tag = "moderation", params(PageQuery),
    responses((status = 200, body = Page<AuditEntry>, description = "every moderator and admin action, newest first (admins only: it holds every moderator's notes and the role changes)")),
    security(("bearer" = [])))]
pub async fn audit_log(
    ctx: web::Data<Context>,
    _admin: AdminUser,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(moderation::audit_log(&ctx, page.cursor, page.limit).await?))
}

#[utoipa::path(get, path = "/api/v1/instance", tag = "moderation",
    responses((status = 200, body = InstanceInfo, description = "the service's name, how to reach whoever runs it, and its numbered rules")),
    security((), ("bearer" = [])))]
pub async fn instance(ctx: web::Data<Context>) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(crate::service::instance::instance(&ctx).await?))
}

#[utoipa::path(put, path = "/api/v1/admin/instance", tag = "moderation", request_body = InstanceInfo,
    responses((status = 200, body = InstanceInfo, description = "set; every change is in the audit log")),
    security(("bearer" = [])))]
pub async fn set_instance(
    ctx: web::Data<Context>,
    admin: AdminUser,
    JsonBody(req): JsonBody<InstanceInfo>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(crate::service::instance::set_instance(&ctx, admin.0, req).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/filters", tag = "moderation", params(PageQuery),
    responses((status = 200, body = Page<ContentFilterView>, description = "the content filters, newest first")),
    security(("bearer" = [])))]
pub async fn filters(
    ctx: web::Data<Context>,
    _moderator: ModeratorUser,
    page: PageParams,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(content_filters::list(&ctx, page.cursor, page.limit).await?))
}

#[utoipa::path(post, path = "/api/v1/admin/filters", tag = "moderation", request_body = ContentFilterRequest,
    responses(
        (status = 201, body = ContentFilterView, description = "in force on every instance within MOMENTS_DEVICE_REFRESH_MS, on this one at once"),
        (status = 409, description = "there are 10,000 filters already"),
        (status = 422, description = "a term with no letter or digit once spaces, punctuation and invisible characters are left out"),
    ),
    security(("bearer" = [])))]
pub async fn create_filter(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    JsonBody(req): JsonBody<ContentFilterRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(content_filters::create(&ctx, moderator.0, req).await?))
}

#[utoipa::path(put, path = "/api/v1/admin/filters/{id}", tag = "moderation",
    params(("id" = i64, Path, minimum = 1)), request_body = ContentFilterRequest,
    responses((status = 200, body = ContentFilterView), (status = 404, description = "no such filter"),
        (status = 422, description = "a term with no letter or digit once spaces, punctuation and invisible characters are left out")),
    security(("bearer" = [])))]
pub async fn update_filter(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    id: web::Path<String>,
    JsonBody(req): JsonBody<ContentFilterRequest>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "filter")?;
    Ok(HttpResponse::Ok().json(content_filters::update(&ctx, moderator.0, id, req).await?))
}

#[utoipa::path(delete, path = "/api/v1/admin/filters/{id}", tag = "moderation",
    params(("id" = i64, Path, minimum = 1)),
    responses((status = 204, description = "deleted"), (status = 404, description = "no such filter")),
    security(("bearer" = [])))]
pub async fn delete_filter(
    ctx: web::Data<Context>,
    moderator: ModeratorUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "filter")?;
    content_filters::delete(&ctx, moderator.0, id).await?;
    Ok(HttpResponse::NoContent().finish())
}
