//! Search: posts found by their words, each hit one the caller may read.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::extract::{query, AuthUser, PageQuery, PresentationQuery, ReadParams};
use crate::error::AppError;
use crate::service::read::post_json::page_bytes;
use crate::service::{search, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/search", [(Method::GET, web::to(search))]));
}

/// `?q=&type=`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Words to look for, all of which a post holds (Chinese is cut into
    /// words by a dictionary; English is matched by stem, in any case),
    /// and any of `from:username`, `since:YYYY-MM-DD`, `until:YYYY-MM-DD`
    /// (UTC days, both included) and `has:media`. Words or `from:` are
    /// required, at most 12 words (422 otherwise, as for a day that is not
    /// one).
    #[param(min_length = 1, max_length = 200)]
    q: String,
    /// What to look for: `posts` (people are not searchable yet).
    #[serde(rename = "type")]
    #[param(rename = "type", inline)]
    // Read by serde alone: any other kind is refused (400) before the
    // handler runs, and posts are the one kind there is.
    #[allow(dead_code)]
    kind: Option<SearchKind>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    Posts,
}

/// A page of posts found: a feed's page, and the words that matched in
/// each post's `content`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct FoundPostsPage {
    items: Vec<crate::service::read::responses::ExpandedPost>,
    /// Pass as `cursor` for the next page; null on the last one.
    #[schema(rename = "nextCursor")]
    next_cursor: Option<String>,
    #[schema(rename = "serverTime")]
    server_time: i64,
    /// By post id (as a string), the spans of its `content` that matched,
    /// each `[start, end)` in UTF-16 code units (what JavaScript's
    /// `String.prototype.slice` takes), in order, never overlapping.
    marks: std::collections::HashMap<String, Vec<[u32; 2]>>,
}

#[utoipa::path(get, path = "/api/v1/search", tag = "search",
    params(SearchQuery, PageQuery, PresentationQuery),
    responses((status = 200, body = FoundPostsPage,
               description = "posts the caller may read that hold every word, newest first: their own, the people they follow, and public posts"),
              (status = 422, description = "a query that asks for no word, more than 12, or a day that is not one")),
    security(("bearer" = [])))]
pub async fn search(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: actix_web::HttpRequest,
    params: ReadParams,
) -> Result<HttpResponse, AppError> {
    let asked: SearchQuery = query(&req)?;
    let found = search::posts(
        &ctx,
        user.uid,
        &asked.q,
        params.cursor,
        params.limit,
        &params.pres,
    )
    .await?;
    // The page as a feed writes it, with the marks added before its end.
    let mut body = page_bytes(&found.page);
    body.pop();
    let marks: serde_json::Map<String, serde_json::Value> = found
        .marks
        .into_iter()
        .map(|(id, spans)| (id.to_string(), serde_json::json!(spans)))
        .collect();
    body.extend_from_slice(b",\"marks\":");
    body.extend_from_slice(&serde_json::to_vec(&marks).unwrap_or_else(|_| b"{}".to_vec()));
    body.push(b'}');
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}
