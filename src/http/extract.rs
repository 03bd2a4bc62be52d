//! Extractors: who is asking, the request body, and the read options.
//! A bad token is an error, never silently anonymous.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::domain::addr::{client_ip, limit_subject};
use crate::domain::cursor::{parse_limit, Cursor};
use crate::domain::lang::Lang;
use crate::domain::time_text::TzOffset;
use crate::error::AppError;
use crate::ids::now_ms;
use crate::service::accounts::{self, Authed};
use crate::service::credentials::Origin;
use crate::service::rate_limits::Traffic;
use crate::service::{Context, Presentation};

type Boxed<T> = Pin<Box<dyn Future<Output = Result<T, AppError>>>>;

fn context(req: &HttpRequest) -> Result<web::Data<Context>, AppError> {
    req.app_data::<web::Data<Context>>()
        .cloned()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("no context registered")))
}

/// `Some(token)` if an Authorization header is present; an error if it is
/// present but not a bearer token.
fn bearer(req: &HttpRequest) -> Result<Option<String>, AppError> {
    let Some(value) = req.headers().get(actix_web::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| AppError::Unauthorized("malformed Authorization header"))?;
    let token = text
        .strip_prefix("Bearer ")
        .or_else(|| text.strip_prefix("bearer "))
        .ok_or(AppError::Unauthorized("expected a Bearer token"))?
        .trim();
    Ok(Some(token.to_string()))
}

/// Where the request comes from: the client's address (through trusted
/// proxies only) and its `User-Agent`.
pub fn origin(req: &HttpRequest, ctx: &Context) -> Origin {
    // Every line, in order: a proxy may add its own line rather than
    // append to the client's, and the nearest hops are the last ones.
    // Read lossily: a proxy that merges lines may put a client's non-ASCII
    // bytes before the address it appends, and that address still counts.
    let lines: Vec<String> = req
        .headers()
        .get_all("x-forwarded-for")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    let forwarded = (!lines.is_empty()).then(|| lines.join(","));
    let ip = client_ip(
        req.peer_addr().map(|a| a.ip()),
        forwarded.as_deref(),
        &ctx.settings.trusted_proxies,
    );
    Origin {
        addr: ip.map(limit_subject),
        user_agent: req
            .headers()
            .get(actix_web::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    }
}

/// Which budget a request draws on: reads for safe methods, writes otherwise.
fn traffic(req: &HttpRequest) -> Traffic {
    if req.method().is_safe() {
        Traffic::Read
    } else {
        Traffic::Write
    }
}

/// The request's origin, for handlers that rate-limit by it.
pub struct RequestOrigin(pub Origin);

impl FromRequest for RequestOrigin {
    type Error = AppError;
    type Future = std::future::Ready<Result<Self, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(context(req).map(|ctx| RequestOrigin(origin(req, &ctx))))
    }
}

/// A signed-in user; 401 without a valid token, 429 past their budget.
pub struct AuthUser {
    pub uid: i64,
    pub session: Authed,
}

/// What signing a request in takes, read off it: the bearer token (401
/// without one), the budget it draws on, where it comes from.
pub struct Credentials {
    pub token: String,
    pub traffic: Traffic,
    pub origin: Origin,
}

impl Credentials {
    pub fn of(req: &HttpRequest, ctx: &Context) -> Result<Self, AppError> {
        let token = bearer(req)?.ok_or(AppError::Unauthorized("sign in first"))?;
        Ok(Credentials {
            token,
            traffic: traffic(req),
            origin: origin(req, ctx),
        })
    }
}

impl FromRequest for AuthUser {
    type Error = AppError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let read = context(req).and_then(|ctx| Ok((Credentials::of(req, &ctx)?, ctx)));
        Box::pin(async move {
            let (c, ctx) = read?;
            let session = accounts::authenticate(&ctx, &c.token, c.traffic, &c.origin).await?;
            Ok(AuthUser {
                uid: session.uid,
                session,
            })
        })
    }
}

/// A signed-in user or an anonymous reader; a bad token is still a 401.
pub struct MaybeAuthUser(pub Option<i64>);

impl FromRequest for MaybeAuthUser {
    type Error = AppError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let ctx = context(req);
        let token = bearer(req);
        let traffic = traffic(req);
        let origin = ctx
            .as_ref()
            .ok()
            .map(|c| origin(req, c))
            .unwrap_or_default();
        Box::pin(async move {
            let ctx = ctx?;
            match token? {
                None => {
                    accounts::limit_anonymous(&ctx, traffic, &origin).await?;
                    Ok(MaybeAuthUser(None))
                }
                Some(t) => Ok(MaybeAuthUser(Some(
                    accounts::authenticate(&ctx, &t, traffic, &origin)
                        .await?
                        .uid,
                ))),
            }
        })
    }
}

/// Which role a staff route needs.
#[derive(Clone, Copy)]
enum Role {
    Admin,
    /// A moderator or an admin.
    Moderator,
}

/// The uid of a signed-in user with `role`: 401 without a token, 403
/// without the role.
fn staff_uid(req: &HttpRequest, payload: &mut Payload, role: Role) -> Boxed<i64> {
    let ctx = context(req);
    let user = AuthUser::from_request(req, payload);
    Box::pin(async move {
        let ctx = ctx?;
        let user = user.await?;
        match role {
            Role::Admin => crate::service::staff::require_admin(&ctx, user.uid).await?,
            Role::Moderator => crate::service::staff::require_moderator(&ctx, user.uid).await?,
        }
        Ok(user.uid)
    })
}

/// A signed-in user with the admin role; 401 without a token, 403 without the role.
pub struct AdminUser(pub i64);

impl FromRequest for AdminUser {
    type Error = AppError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let uid = staff_uid(req, payload, Role::Admin);
        Box::pin(async move { Ok(AdminUser(uid.await?)) })
    }
}

/// A signed-in user with the moderator or admin role; 401 without a
/// token, 403 without either role.
pub struct ModeratorUser(pub i64);

impl FromRequest for ModeratorUser {
    type Error = AppError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let uid = staff_uid(req, payload, Role::Moderator);
        Box::pin(async move { Ok(ModeratorUser(uid.await?)) })
    }
}

/// Operations whose largest body the document calls valid is over the
/// default limit, with the limit each gets instead (the larger of it and
/// `MOMENTS_BODY_LIMIT`): a valid body is never refused as too large.
/// `openapi::tests::every_valid_body_fits_its_limit` works out each
/// operation's largest body from the document (every character written as
/// the longest escape a JSON encoder uses, 12 bytes for a `\uXXXX\uXXXX`
/// pair) and holds this table to it.
pub const LARGER_BODIES: &[(&str, &str, usize)] = &[
    // 9 picture URLs of 2,048 characters beside 5,000 of text.
    ("POST", "/api/v1/posts", 320 * 1024),
    // 100 rules of 500 characters.
    ("PUT", "/api/v1/admin/instance", 640 * 1024),
];

/// The limit on this request's body.
fn body_limit(req: &HttpRequest) -> usize {
    let configured =
        context(req).map_or(crate::config::DEFAULT_BODY_LIMIT, |c| c.settings.body_limit);
    let pattern = req.match_pattern();
    let own = LARGER_BODIES
        .iter()
        .find(|(method, path, _)| {
            req.method().as_str() == *method && pattern.as_deref() == Some(*path)
        })
        .map_or(0, |(_, _, limit)| *limit);
    configured.max(own)
}

/// The raw body, refused with 413 past its limit (`body_limit`).
pub struct Body(pub web::Bytes);

impl FromRequest for Body {
    type Error = AppError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = body_limit(req);
        let declared = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > limit) {
                return Err(AppError::PayloadTooLarge { limit });
            }
            read_body(payload, limit).await.map(Body)
        })
    }
}

/// Reads a body of at most `limit` bytes; 413 past it, without reading on.
pub async fn read_body(
    mut payload: impl futures_util::Stream<Item = Result<web::Bytes, actix_web::error::PayloadError>>
        + Unpin,
    limit: usize,
) -> Result<web::Bytes, AppError> {
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| AppError::invalid("body", e.to_string()))?;
        if body.len() + chunk.len() > limit {
            return Err(AppError::PayloadTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// A JSON body whose errors name the field (`pictureUrls[3]`, `geo.lat`),
/// so a client sending `{"content": {"$gt": ""}}` learns exactly what is wrong.
pub struct JsonBody<T>(pub T);

pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(AppError::invalid("body", "a JSON body is required"));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = inner.to_string();
        // serde reports a missing field at its parent; name the field itself.
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next());
        let syntax = inner.is_syntax() || inner.is_eof();
        let field = match (path.as_str(), missing) {
            _ if syntax => "body".to_string(),
            ("" | "." | "?", Some(name)) => name.to_string(),
            (parent, Some(name)) => format!("{parent}.{name}"),
            ("" | "." | "?", None) => "body".to_string(),
            (p, None) => p.to_string(),
        };
        let reason = if syntax {
            format!("malformed JSON: {inner}")
        } else {
            message
        };
        AppError::invalid(field, reason)
    })
}

/// A body that must be a JSON object: serde would also read a struct from
/// an array of its fields in order, which no client means.
pub fn parse_json_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(AppError::invalid("body", "a JSON object is required"));
    }
    parse_json(bytes)
}

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = AppError;
    type Future = Boxed<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = Body::from_request(req, payload);
        Box::pin(async move {
            let Body(bytes) = body.await?;
            parse_json_object(&bytes).map(JsonBody)
        })
    }
}

fn pattern_schema(pattern: &str) -> utoipa::openapi::Object {
    crate::domain::StringSchema {
        pattern: Some(pattern.into()),
        ..Default::default()
    }
    .build()
}
fn cursor_schema() -> utoipa::openapi::Object {
    pattern_schema(crate::domain::cursor::CURSOR_PATTERN)
}
fn limit_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .minimum(Some(1))
        .maximum(Some(crate::domain::cursor::MAX_LIMIT as u32))
        .default(Some(crate::domain::cursor::DEFAULT_LIMIT.into()))
        .build()
}
fn lang_schema() -> utoipa::openapi::Object {
    pattern_schema(crate::domain::lang::LANG_PATTERN)
}
fn tz_schema() -> utoipa::openapi::Object {
    pattern_schema(crate::domain::time_text::TZ_PATTERN)
}

fn search_cursor_schema() -> utoipa::openapi::Object {
    pattern_schema(crate::domain::cursor::SEARCH_CURSOR_PATTERN)
}

/// `?cursor=&limit=` on a search: posts page by id, people by name.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchPageQuery {
    /// The previous page's `nextCursor`; absent or empty for the first page.
    #[param(schema_with = search_cursor_schema)]
    cursor: Option<String>,
    /// Items per page, 1 to 100.
    #[param(schema_with = limit_schema)]
    limit: Option<String>,
}

/// A search's page (`SearchPageQuery`).
pub struct SearchPageParams {
    pub cursor: Option<crate::domain::cursor::SearchCursor>,
    pub limit: usize,
}

impl FromRequest for SearchPageParams {
    type Error = AppError;
    type Future = std::future::Ready<Result<Self, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready((|| {
            let page: SearchPageQuery = query(req)?;
            Ok(SearchPageParams {
                cursor: page
                    .cursor
                    .as_deref()
                    .filter(|c| !c.is_empty())
                    .map(crate::domain::cursor::SearchCursor::parse)
                    .transpose()?,
                limit: parse_limit(page.limit.as_deref())?,
            })
        })())
    }
}

/// `?cursor=&limit=` on every list.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// The previous page's `nextCursor`; absent or empty for the first page.
    #[param(schema_with = cursor_schema)]
    cursor: Option<String>,
    /// Items per page, 1 to 100.
    #[param(schema_with = limit_schema)]
    limit: Option<String>,
}

fn comments_cursor_schema() -> utoipa::openapi::Object {
    pattern_schema(crate::domain::cursor::COMMENTS_CURSOR_PATTERN)
}

/// The order of a post's comments.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommentSort {
    /// Newest first (the default).
    Newest,
    /// By the most likes each has had at once, then newest.
    Hot,
}

/// `?sort=&cursor=&limit=` on a post's comments.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CommentsQuery {
    /// `newest` (the default) or `hot`, for the first page: a cursor goes
    /// on in the order it came from.
    #[param(inline)]
    sort: Option<CommentSort>,
    /// The previous page's `nextCursor`; absent or empty for the first page.
    #[param(schema_with = comments_cursor_schema)]
    cursor: Option<String>,
    /// Items per page, 1 to 100.
    #[param(schema_with = limit_schema)]
    limit: Option<String>,
}

/// A page of a post's comments (`CommentsQuery`) and how to show it.
pub struct CommentsParams {
    pub from: crate::service::comments::CommentsFrom,
    pub limit: usize,
    pub pres: Presentation,
}

impl CommentsParams {
    fn parse(req: &HttpRequest) -> Result<Self, AppError> {
        use crate::domain::cursor::HotCursor;
        use crate::service::comments::CommentsFrom;
        let q: CommentsQuery = query(req)?;
        // A cursor goes on in the order it came from; `sort` picks the
        // order of a first page.
        let from = match (q.cursor.as_deref().filter(|c| !c.is_empty()), q.sort) {
            (Some(c), _) if c.starts_with('h') => {
                let at = HotCursor::parse(c)?;
                CommentsFrom::Hot(Some((at.peak, at.id)))
            }
            (Some(c), _) => CommentsFrom::Newest(Some(Cursor::parse(c)?.0)),
            (None, Some(CommentSort::Hot)) => CommentsFrom::Hot(None),
            (None, _) => CommentsFrom::Newest(None),
        };
        Ok(CommentsParams {
            from,
            limit: parse_limit(q.limit.as_deref())?,
            pres: query::<PresentationQuery>(req)?.parse()?,
        })
    }
}

impl FromRequest for CommentsParams {
    type Error = AppError;
    type Future = std::future::Ready<Result<Self, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(CommentsParams::parse(req))
    }
}

/// `?lang=&tz=` on every answer that shows posts, comments or likes.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PresentationQuery {
    /// Adds `createtimeText` ("5分钟前", "5 min ago") in this language.
    #[param(schema_with = lang_schema)]
    lang: Option<String>,
    /// The reader's UTC offset for dates older than a day; +08:00 when absent.
    #[param(schema_with = tz_schema)]
    tz: Option<String>,
}

pub(crate) fn query<T: DeserializeOwned>(req: &HttpRequest) -> Result<T, AppError> {
    web::Query::<T>::from_query(req.query_string())
        .map(|q| q.into_inner())
        .map_err(|e| AppError::invalid("query", e.to_string()))
}

impl PresentationQuery {
    fn parse(self) -> Result<Presentation, AppError> {
        let given = |v: Option<String>| v.filter(|v| !v.is_empty());
        Ok(Presentation {
            lang: given(self.lang).as_deref().map(Lang::parse).transpose()?,
            tz: given(self.tz)
                .as_deref()
                .map(TzOffset::parse)
                .transpose()?
                .unwrap_or_default(),
            now: now_ms(),
        })
    }
}

/// A list's page (`PageQuery`).
pub struct PageParams {
    pub cursor: Option<Cursor>,
    pub limit: usize,
}

impl PageParams {
    fn parse(req: &HttpRequest) -> Result<Self, AppError> {
        let page: PageQuery = query(req)?;
        Ok(PageParams {
            cursor: page
                .cursor
                .as_deref()
                .filter(|c| !c.is_empty())
                .map(Cursor::parse)
                .transpose()?,
            limit: parse_limit(page.limit.as_deref())?,
        })
    }
}

impl FromRequest for PageParams {
    type Error = AppError;
    type Future = std::future::Ready<Result<Self, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(PageParams::parse(req))
    }
}

/// A list's page (`PageQuery`) and how to show it (`PresentationQuery`).
pub struct ReadParams {
    pub cursor: Option<Cursor>,
    pub limit: usize,
    pub pres: Presentation,
}

impl FromRequest for ReadParams {
    type Error = AppError;
    type Future = std::future::Ready<Result<Self, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready((|| {
            let page = PageParams::parse(req)?;
            Ok(ReadParams {
                cursor: page.cursor,
                limit: page.limit,
                pres: query::<PresentationQuery>(req)?.parse()?,
            })
        })())
    }
}

/// How to show a single post or comment (`PresentationQuery`).
pub struct PresentationParams(pub Presentation);

impl FromRequest for PresentationParams {
    type Error = AppError;
    type Future = std::future::Ready<Result<Self, AppError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(
            query::<PresentationQuery>(req).and_then(|q| q.parse().map(PresentationParams)),
        )
    }
}

/// An id in a path: anything that is not one cannot name a resource, so 404.
pub fn path_id(raw: &str, what: &'static str) -> Result<i64, AppError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(AppError::NotFound(what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::post::NewPostRequest;

    fn field_of(json: &str) -> String {
        match parse_json::<NewPostRequest>(json.as_bytes()) {
            Err(AppError::InvalidInput { field, .. }) => field,
            Ok(_) => panic!("accepted {json}"),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn json_errors_name_the_field() {
        assert_eq!(
            field_of(r#"{"category":"TEXT","content":{"$gt":""}}"#),
            "content"
        );
        assert_eq!(
            field_of(r#"{"category":"TEXT","content":"x","pictureUrls":["a",3]}"#),
            "pictureUrls[1]"
        );
        assert_eq!(
            field_of(r#"{"category":"TEXT","geo":{"lat":"north","lon":1}}"#),
            "geo.lat"
        );
        assert_eq!(field_of(r#"{"category":"SOUND"}"#), "category");
        assert_eq!(field_of(r#"{"category":"TEXT","#), "body");
        assert_eq!(field_of(""), "body");
        assert_eq!(field_of(r#"{"content":"x"}"#), "category");
        assert_eq!(
            field_of(r#"{"category":"TEXT","geo":{"lat":1}}"#),
            "geo.lon"
        );
    }

    #[test]
    fn non_numeric_path_ids_are_not_found() {
        assert!(path_id("123", "post").is_ok());
        for bad in ["abc", "-1", "0", "1e5", "99999999999999999999"] {
            assert!(
                matches!(path_id(bad, "post"), Err(AppError::NotFound(_))),
                "{bad}"
            );
        }
    }
}
