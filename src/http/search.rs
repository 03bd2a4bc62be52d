//! Search: posts found by their words, each hit one the caller may read.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::extract::{
    query, AuthUser, PresentationParams, PresentationQuery, SearchPageParams, SearchPageQuery,
};
use crate::domain::cursor::SearchCursor;
use crate::error::AppError;
use crate::service::read::post_json::page_bytes;
use crate::service::{search, Context};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource("/search", [(Method::GET, web::to(search))]))
        .service(super::resource(
            "/search/users",
            [(Method::GET, web::to(search_users))],
        ));
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
    ///
    /// With `type=users`: the start of a username or a nickname (folded
    /// as words are: case, accents, full-width forms), 422 if it holds no
    /// letter or digit.
    #[param(min_length = 1, max_length = 200)]
    q: String,
    /// What to look for: `posts` (the default) or `users`.
    #[serde(rename = "type", default)]
    #[param(rename = "type", inline)]
    kind: SearchKind,
    /// Posts: `newest` first (the default), or best match first
    /// (`relevance`: rarer words, and more of them in a shorter text, rank
    /// higher; pages go through the 500 best). People are in name order.
    #[serde(default)]
    #[param(inline)]
    sort: SearchSort,
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchSort {
    #[default]
    Newest,
    Relevance,
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    #[default]
    Posts,
    Users,
}

/// `?prefix=`: what a search box holds so far.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PrefixQuery {
    /// The start of a username or nickname, folded as words are (case,
    /// accents, full-width forms); 422 if it holds no letter or digit.
    #[param(min_length = 1, max_length = 64)]
    prefix: String,
}

/// A page of people found: their cards, in the order of the name that
/// matched.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct FoundPeoplePage {
    items: Vec<crate::store::UserCard>,
    /// Pass as `cursor` for the next page; null on the last one.
    #[schema(rename = "nextCursor")]
    next_cursor: Option<String>,
    #[schema(rename = "serverTime")]
    server_time: i64,
}

/// What a search answers: posts (`type=posts`) or people (`type=users`).
/// Any of the two, not one of them: an empty page fits both.
struct SearchAnswer;

impl utoipa::PartialSchema for SearchAnswer {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::AnyOfBuilder::new()
            .item(utoipa::openapi::Ref::from_schema_name("FoundPostsPage"))
            .item(utoipa::openapi::Ref::from_schema_name("FoundPeoplePage"))
            .into()
    }
}
impl utoipa::ToSchema for SearchAnswer {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema;
        schemas.push(("FoundPostsPage".into(), FoundPostsPage::schema()));
        FoundPostsPage::schemas(schemas);
        schemas.push(("FoundPeoplePage".into(), FoundPeoplePage::schema()));
        FoundPeoplePage::schemas(schemas);
    }
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
    params(SearchQuery, SearchPageQuery, PresentationQuery),
    responses((status = 200, body = SearchAnswer,
               description = "type=posts: posts the caller may read that hold every word, newest first: their own, those of the people they follow, and public posts of accounts that let themselves be found; type=users: the cards of accounts whose username or nickname starts with q that the caller may find"),
              (status = 422, description = "a query that asks for no word, more than 12, or a day that is not one; for people, one of no letter or digit")),
    security(("bearer" = [])))]
pub async fn search(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: actix_web::HttpRequest,
    page: SearchPageParams,
    pres: PresentationParams,
) -> Result<HttpResponse, AppError> {
    let asked: SearchQuery = query(&req)?;
    let pres = pres.0;
    if let SearchKind::Users = asked.kind {
        let after = name_cursor(page.cursor)?;
        let found =
            search::people(&ctx, user.uid, &asked.q, "q", after, page.limit, pres.now).await?;
        return Ok(HttpResponse::Ok().json(found));
    }
    let order = match (asked.sort, page.cursor) {
        (SearchSort::Newest, None) => search::PostOrder::Newest(None),
        (SearchSort::Newest, Some(SearchCursor::Post(c))) => search::PostOrder::Newest(Some(c)),
        (SearchSort::Relevance, None) => search::PostOrder::Relevance(None),
        (SearchSort::Relevance, Some(SearchCursor::Scored(c))) => {
            search::PostOrder::Relevance(Some(c))
        }
        _ => return Err(other_kind()),
    };
    let found = search::posts(&ctx, user.uid, &asked.q, order, page.limit, &pres).await?;
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

#[utoipa::path(get, path = "/api/v1/search/users", tag = "search",
    params(PrefixQuery, SearchPageQuery),
    responses((status = 200, body = FoundPeoplePage,
               description = "the cards of accounts whose username or nickname starts with the prefix that the caller may find, in that name's order: for a search box, as one types"),
              (status = 422, description = "a prefix of no letter or digit")),
    security(("bearer" = [])))]
pub async fn search_users(
    ctx: web::Data<Context>,
    user: AuthUser,
    req: actix_web::HttpRequest,
    page: SearchPageParams,
) -> Result<HttpResponse, AppError> {
    let asked: PrefixQuery = query(&req)?;
    let after = name_cursor(page.cursor)?;
    let found = search::people(
        &ctx,
        user.uid,
        &asked.prefix,
        "prefix",
        after,
        page.limit,
        crate::ids::now_ms(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(found))
}

/// A cursor of posts given to a search of people, or of one order given
/// to the other: a cursor this service issued, for another search.
fn other_kind() -> AppError {
    AppError::unprocessable("cursor", "is the cursor of another kind of search")
}

fn name_cursor(
    cursor: Option<SearchCursor>,
) -> Result<Option<crate::domain::cursor::NameCursor>, AppError> {
    match cursor {
        None => Ok(None),
        Some(SearchCursor::Name(c)) => Ok(Some(c)),
        Some(SearchCursor::Post(_) | SearchCursor::Scored(_)) => Err(other_kind()),
    }
}
