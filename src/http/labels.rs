//! Labels: the caller's own named groups of friends.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::extract::{path_id, AuthUser, JsonBody};
use crate::domain::label::{LabelPatchRequest, NewLabelRequest};
use crate::error::AppError;
use crate::service::labels::{self, LabelView};
use crate::service::read::responses::Page;
use crate::service::Context;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/labels",
        [
            (Method::GET, web::to(list)),
            (Method::POST, web::to(create)),
        ],
    ));
    cfg.service(super::resource(
        "/labels/{id}",
        [
            (Method::PATCH, web::to(update)),
            (Method::DELETE, web::to(delete)),
        ],
    ));
}

#[utoipa::path(post, path = "/api/v1/labels", tag = "labels", request_body = NewLabelRequest,
    responses(
        (status = 201, body = LabelView),
        (status = 409, description = "the caller has a label of that name, or as many labels as one may"),
        (status = 422, description = "`members` names someone who is not the caller's friend; or the name is refused by a content filter"),
    ),
    security(("bearer" = [])))]
pub async fn create(
    ctx: web::Data<Context>,
    user: AuthUser,
    JsonBody(req): JsonBody<NewLabelRequest>,
) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Created().json(labels::create(&ctx, user.uid, req).await?))
}

#[utoipa::path(get, path = "/api/v1/labels", tag = "labels",
    responses((status = 200, body = Page<LabelView>, description = "all the caller's labels (at most 100), oldest first; nextCursor is always null")),
    security(("bearer" = [])))]
pub async fn list(ctx: web::Data<Context>, user: AuthUser) -> Result<HttpResponse, AppError> {
    Ok(HttpResponse::Ok().json(labels::list(&ctx, user.uid).await?))
}

#[utoipa::path(patch, path = "/api/v1/labels/{id}", tag = "labels", request_body = LabelPatchRequest,
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 200, body = LabelView, description = "changed; posts naming the label follow it on their next read"),
        (status = 404, description = "the caller has no such label"),
        (status = 409, description = "the caller has another label of that name"),
        (status = 422, description = "`members` adds someone who is not the caller's friend; or the name is refused by a content filter"),
    ),
    security(("bearer" = [])))]
pub async fn update(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
    JsonBody(patch): JsonBody<LabelPatchRequest>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "label")?;
    Ok(HttpResponse::Ok().json(labels::update(&ctx, user.uid, id, patch).await?))
}

#[utoipa::path(delete, path = "/api/v1/labels/{id}", tag = "labels",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 204, description = "deleted; posts naming it no longer name its members"),
        (status = 404, description = "the caller has no such label"),
    ),
    security(("bearer" = [])))]
pub async fn delete(
    ctx: web::Data<Context>,
    user: AuthUser,
    id: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let id = path_id(&id, "label")?;
    labels::delete(&ctx, user.uid, id).await?;
    Ok(HttpResponse::NoContent().finish())
}
