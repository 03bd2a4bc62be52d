//! The OpenAPI 3 document, generated from the handlers' annotations and the
//! request and response types themselves, so it cannot drift from the code.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "moments", description = "WeChat-Moments / Weibo-style social circles"),
    paths(
        super::accounts::register, super::accounts::find_user, super::accounts::login, super::accounts::logout,
        super::accounts::list_sessions, super::accounts::sign_out_everywhere,
        super::accounts::sign_out_session, super::accounts::change_password,
        super::accounts::delete_account,
        super::accounts::me, super::accounts::update_me,
        super::profiles::profile, super::social::follow, super::social::unfollow,
        super::social::block, super::social::unblock, super::social::mute, super::social::unmute,
        super::social::hide, super::social::unhide, super::social::muted, super::social::hidden,
        super::labels::create, super::labels::list, super::labels::update, super::labels::delete,
        super::social::followers,
        super::social::following, super::social::friends, super::feed::feed, super::search::search, super::search::search_users,
        super::notifications::list, super::notifications::unread, super::notifications::mark_read,
        super::stream::open, super::stream::ticket, super::stream::watch,
        super::exports::start, super::exports::list, super::exports::get, super::exports::link,
        super::exports::download,
        super::imports::preview, super::imports::start, super::imports::list, super::imports::get,
        super::posts::create, super::posts::get, super::posts::delete, super::posts::album,
        super::comments::create, super::comments::list, super::comments::replies, super::comments::delete,
        super::likes::like_post, super::likes::unlike_post, super::likes::like_comment,
        super::likes::unlike_comment, super::likes::list, super::likes::liked_by_me,
        super::favorites::favorite, super::favorites::unfavorite, super::favorites::list,
        super::media::upload, super::media::get, super::media::describe, super::media::delete,
        super::shares::share, super::history::history,
        super::reports::file, super::reports::mine, super::strikes::mine, super::strikes::appeal,
        super::strikes::appeal_while_suspended,
        super::moderation::queue, super::moderation::case, super::moderation::held_posts, super::moderation::act,
        super::moderation::act_in_bulk, super::moderation::set_role, super::moderation::audit_log,
        super::moderation::lift_suspension,
        super::moderation::instance, super::moderation::set_instance,
        super::moderation::filters, super::moderation::create_filter,
        super::moderation::update_filter, super::moderation::delete_filter,
        super::device_models::list, super::device_models::upsert, super::device_models::delete, super::device_models::import, super::device_models::preview_import,
        super::live_tools::rebuild_live, super::live_tools::check_live,
    ),
    components(schemas(
        crate::service::read::responses::LikeView, crate::service::device_models::DeviceModelView,
        crate::service::notifications::NotificationView, crate::service::device_models::ImportRow,
        super::problem::Problem, super::media::UploadForm,
        crate::service::stream::connection::Ready, crate::service::stream::connection::PostNew,
        crate::service::stream::connection::PostDeleted, crate::service::stream::delivery::PostCounts,
        crate::service::stream::connection::CommentNew, crate::service::stream::connection::UnreadCount,
        crate::service::stream::connection::Reset, crate::service::stream::connection::ResetReason,
    )),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

/// The document, built once: it is the same for the life of the process.
pub fn document() -> &'static str {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
        complete_errors(&mut doc);
        require_something_to_post(&mut doc);
        link_created_to_their_uses(&mut doc);
        describe_event_stream(&mut doc);
        describe_archive_download(&mut doc);
        serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_string())
    })
}

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The statuses any operation of a kind can answer, whatever its handler
/// says, because the extractors and the middleware answer them:
/// - 400 where there is a query or a body to get wrong (malformed; what is
///   well formed but names what is not there, 422, is the handler's to say);
/// - 401 where a bearer token is read (a bad token is never anonymous);
/// - 404 where the path names a resource (a malformed id names nothing);
/// - 413 where there is a body;
/// - 429 everywhere (the budgets), 503 everywhere (overload, a store down).
///
/// Every error is a problem document (RFC 9457), so each error response is
/// given that media type and schema here, with its headers.
fn complete_errors(doc: &mut serde_json::Value) {
    use serde_json::{json, Value};
    let problem = json!({ "application/problem+json": {
        "schema": { "$ref": "#/components/schemas/Problem" } } });
    let retry_after = json!({ "Retry-After": {
        "description": "seconds to wait before trying again",
        "schema": { "type": "integer", "minimum": 1 } } });
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        for method in METHODS {
            let Some(op) = item.get_mut(method).and_then(Value::as_object_mut) else {
                continue;
            };
            let params = op.get("parameters").and_then(Value::as_array);
            let has = |place: &str| params.is_some_and(|ps| ps.iter().any(|p| p["in"] == place));
            let (query, in_path) = (has("query"), has("path") || path.contains('{'));
            // A malformed id names nothing (404), but a text segment can be
            // malformed (400).
            let text_in_path = params.is_some_and(|ps| {
                ps.iter()
                    .any(|p| p["in"] == "path" && p["schema"]["type"] == "string")
            });
            let body = op.contains_key("requestBody");
            let bearer = op
                .get("security")
                .and_then(Value::as_array)
                .is_some_and(|reqs| reqs.iter().any(|r| r.get("bearer").is_some()));
            let implied = [
                (
                    "400",
                    query || body || text_in_path,
                    "malformed input (syntax, type, length, range, count, a required member, a cursor \
                     or header): `field` names the parameter, header or body member",
                ),
                (
                    "401",
                    bearer,
                    "no valid bearer token: missing, unknown, expired or signed out",
                ),
                ("404", in_path, "not found, or not visible to the caller"),
                ("413", body, "the body is over the size limit"),
                ("429", true, "over a rate limit"),
                ("503", true, "overloaded, or a store is unavailable"),
            ];
            let responses = op
                .entry("responses")
                .or_insert_with(|| json!({}))
                .as_object_mut();
            let Some(responses) = responses else { continue };
            for (status, applies, description) in implied {
                if applies && !responses.contains_key(status) {
                    responses.insert(status.into(), json!({ "description": description }));
                }
            }
            for (status, response) in responses.iter_mut() {
                if !(status.starts_with('4') || status.starts_with('5')) {
                    continue;
                }
                response["content"] = problem.clone();
                if status == "429" || status == "503" {
                    response["headers"] = retry_after.clone();
                }
            }
        }
    }
}

/// A post needs content that is not blank or a picture, a PICTURE post a
/// picture, and an `only` or `except` post an audience naming someone
/// (`NewPost::parse`): rules across fields, which the derive cannot say, so
/// they are added to the schema it made.
fn require_something_to_post(doc: &mut serde_json::Value) {
    use crate::domain::VISIBLE_TEXT_PATTERN;
    // A picture is a URL or an upload.
    let with_picture = serde_json::json!({ "anyOf": [
        { "required": ["pictureUrls"], "properties": { "pictureUrls": { "minItems": 1 } } },
        { "required": ["mediaIds"], "properties": { "mediaIds": { "minItems": 1 } } },
    ] });
    if let Some(schema) = doc.pointer_mut("/components/schemas/NewPostRequest") {
        schema["allOf"] = serde_json::json!([
            { "anyOf": [
                { "required": ["content"],
                  "properties": { "content": { "pattern": VISIBLE_TEXT_PATTERN } } },
                with_picture.clone(),
            ] },
            { "anyOf": [
                { "properties": { "category": { "not": { "const": "PICTURE" } } } },
                with_picture,
            ] },
            // Uploads or URLs, not both.
            { "not": { "required": ["pictureUrls", "mediaIds"],
                       "properties": { "pictureUrls": { "minItems": 1 },
                                       "mediaIds": { "minItems": 1 } } } },
            // `only` and `except` name their audience; nothing else does.
            { "anyOf": [
                { "required": ["visibility", "audience"],
                  "properties": {
                    "visibility": { "enum": ["only", "except"] },
                    "audience": { "type": "object" } } },
                { "properties": {
                    "visibility": { "enum": ["public", "followers", "friends", "private"] },
                    "audience": { "type": "null" } } },
            ] },
        ]);
    }
    // An audience names someone: a label or a uid.
    if let Some(schema) = doc.pointer_mut("/components/schemas/Audience") {
        schema["anyOf"] = serde_json::json!([
            { "required": ["labels"], "properties": { "labels": { "minItems": 1 } } },
            { "required": ["uids"], "properties": { "uids": { "minItems": 1 } } },
        ]);
    }
}

/// OpenAPI links from the answers that name a resource to the operations on
/// it, so clients and stateful checkers (schemathesis) can follow them:
/// a comment just made can be liked and deleted, a listed session signed out.
fn link_created_to_their_uses(doc: &mut serde_json::Value) {
    let links = [
        (
            "/api/v1/posts/{id}/comments",
            "post",
            "201",
            "$response.body#/id",
            [
                ("DeleteComment", "/api/v1/comments/{id}", "delete"),
                ("LikeComment", "/api/v1/comments/{id}/like", "put"),
                ("UnlikeComment", "/api/v1/comments/{id}/like", "delete"),
                ("RepliesOfComment", "/api/v1/comments/{id}/replies", "get"),
            ]
            .as_slice(),
        ),
        (
            "/api/v1/labels",
            "post",
            "201",
            "$response.body#/id",
            [
                ("RenameLabel", "/api/v1/labels/{id}", "patch"),
                ("DeleteLabel", "/api/v1/labels/{id}", "delete"),
            ]
            .as_slice(),
        ),
        (
            "/api/v1/sessions",
            "get",
            "200",
            "$response.body#/items/0/id",
            [("SignOutSession", "/api/v1/sessions/{id}", "delete")].as_slice(),
        ),
    ];
    for (path, method, status, value, targets) in links {
        let pointer = format!(
            "/paths/{}/{method}/responses/{status}",
            escape_pointer(path)
        );
        let Some(response) = doc.pointer_mut(&pointer) else {
            continue;
        };
        for (name, target, target_method) in targets {
            response["links"][*name] = serde_json::json!({
                "operationRef": format!("#/paths/{}/{target_method}", escape_pointer(target)),
                "parameters": { "id": value },
            });
        }
    }
}

/// `GET /stream`'s events, one schema each (as OpenAPI 3.2 describes
/// `text/event-stream`, and schemathesis checks it): an event named for
/// its data's schema, whose `data` is a string of JSON. The derive can
/// say neither. Its `Last-Event-ID` header, optional, is a string when
/// sent, never `null`.
/// The archive download's bodies are bytes (a zip, or the range asked
/// for), with the headers a resuming client reads.
fn describe_archive_download(doc: &mut serde_json::Value) {
    use serde_json::json;
    let op = format!(
        "/paths/{}/get/responses",
        escape_pointer("/api/v1/me/exports/{id}/download")
    );
    let header =
        |description: &str| json!({ "description": description, "schema": { "type": "string" } });
    for status in ["200", "206"] {
        let Some(response) = doc.pointer_mut(&format!("{op}/{status}")) else {
            continue;
        };
        response["content"] = json!({ "application/zip": {
            "schema": { "type": "string", "format": "binary" } } });
        let headers = response
            .as_object_mut()
            .map(|r| r.entry("headers").or_insert_with(|| json!({})));
        if let Some(headers) = headers {
            headers["ETag"] =
                header("the archive's SHA-256, quoted: the If-Range a resumed download sends");
            headers["Accept-Ranges"] = header("bytes");
            headers["Content-Length"] = json!({ "description": "bytes in this answer",
                "schema": { "type": "integer", "minimum": 0 } });
            if status == "206" {
                headers["Content-Range"] = header("bytes FIRST-LAST/SIZE");
            }
        }
    }
}

fn describe_event_stream(doc: &mut serde_json::Value) {
    use serde_json::json;
    let events: Vec<serde_json::Value> = super::stream::EVENTS
        .iter()
        .map(|(name, schema)| {
            json!({
                "type": "object",
                "required": ["event", "data", "id"],
                "properties": {
                    "event": { "const": name },
                    "id": { "type": "string", "pattern": "^[0-9]+-[0-9]+$" },
                    "retry": { "type": "integer", "minimum": 0 },
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": { "$ref": format!("#/components/schemas/{schema}") },
                    },
                },
            })
        })
        .collect();
    let op = format!("/paths/{}/get", escape_pointer("/api/v1/stream"));
    let content = format!("{op}/responses/200/content/text~1event-stream/schema");
    if let Some(schema) = doc.pointer_mut(&content) {
        *schema = json!({ "oneOf": events });
    }
    if let Some(params) = doc
        .pointer_mut(&format!("{op}/parameters"))
        .and_then(serde_json::Value::as_array_mut)
    {
        for p in params.iter_mut().filter(|p| p["in"] == "header") {
            if let Some(t) = p.pointer_mut("/schema/type") {
                *t = json!("string");
            }
        }
    }
}

/// A JSON pointer's escaping of one key (RFC 6901).
fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use std::collections::BTreeMap;

    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// utoipa keys components by the type's bare name, and a second type of
    /// the same name silently replaces the first: every operation naming
    /// either is then documented with one of them (two `ImportPreview`s did
    /// this, and the contract check caught it only by chance).
    #[test]
    fn every_schema_has_a_name_of_its_own() {
        let derive = regex::Regex::new(
            r"derive\([^)]*ToSchema[^)]*\)\]((?:\s*(?:#\[[^\]]*\]|//[^\n]*))*)\s*pub (?:struct|enum) (\w+)",
        )
        .unwrap();
        let renamed = regex::Regex::new(r"\bas\s*=\s*([\w:]+)").unwrap();
        let mut files = Vec::new();
        rust_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for m in derive.captures_iter(&text) {
                let name = renamed
                    .captures(&m[1])
                    .map_or(m[2].to_string(), |r| r[1].to_string());
                owners
                    .entry(name)
                    .or_default()
                    .push(file.display().to_string());
            }
        }
        assert!(
            owners.len() > 50,
            "found only {} schemas: is the scan still right?",
            owners.len()
        );
        let shared: Vec<_> = owners.iter().filter(|(_, files)| files.len() > 1).collect();
        assert!(shared.is_empty(), "schemas of one name: {shared:?}");
    }

    /// The most bytes a body the document calls valid can take: each
    /// character as the longest escape a JSON encoder writes (an ASCII-only
    /// encoder's `\\uXXXX\\uXXXX` pair, 12 bytes), each number 24. `None`
    /// for a string or list the document leaves unbounded.
    fn largest_body(doc: &Value, schema: &Value, at: &str, unbounded: &mut Vec<String>) -> u64 {
        let schema = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap(),
            None => schema,
        };
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values
                .iter()
                .map(|v| v.to_string().len() as u64)
                .max()
                .unwrap_or(0);
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(t)) => vec![t],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if schema.get("properties").is_some() => vec!["object"],
            // A combination of schemas (every part applies, or one of
            // them): as large as all its parts together, which is more
            // than any body can be.
            _ => {
                let parts = ["allOf", "anyOf", "oneOf"]
                    .iter()
                    .filter_map(|k| schema.get(*k).and_then(Value::as_array))
                    .flatten();
                return parts
                    .map(|part| largest_body(doc, part, at, unbounded))
                    .sum();
            }
        };
        let mut most = 0;
        for kind in types {
            let size = match kind {
                "null" => 4,
                "boolean" => 5,
                "integer" | "number" => 24,
                "string" => match schema.get("maxLength").and_then(Value::as_u64) {
                    Some(chars) => chars * 12 + 2,
                    None => {
                        unbounded.push(at.to_string());
                        0
                    }
                },
                "array" => {
                    let item = largest_body(doc, &schema["items"], &format!("{at}[]"), unbounded);
                    match schema.get("maxItems").and_then(Value::as_u64) {
                        Some(count) => count * (item + 1) + 2,
                        None => {
                            unbounded.push(at.to_string());
                            0
                        }
                    }
                }
                "object" => {
                    let properties = schema.get("properties").and_then(Value::as_object);
                    2 + properties
                        .into_iter()
                        .flatten()
                        .map(|(name, value)| {
                            name.len() as u64
                                + 4
                                + largest_body(doc, value, &format!("{at}.{name}"), unbounded)
                        })
                        .sum::<u64>()
                }
                other => panic!("{at}: a schema of type {other}"),
            };
            most = most.max(size);
        }
        most
    }

    /// A body the document calls valid is never refused as too large: each
    /// operation's largest valid body fits the default limit or the one
    /// `LARGER_BODIES` gives it, and that table names only operations that
    /// need it. A hundred rules of 500 Chinese characters, sent by an
    /// encoder that escapes them, were refused (413) before it.
    #[test]
    fn every_valid_body_fits_its_limit() {
        use crate::http::extract::LARGER_BODIES;
        let doc: Value = serde_json::from_str(super::document()).unwrap();
        // These read their own, larger limits: a list's cap is on the bytes
        // of its rows, which a schema cannot state.
        let own_limits = [
            "POST /api/v1/admin/device-models/import",
            "POST /api/v1/admin/device-models/import/preview",
            "POST /api/v1/me/imports",
            "POST /api/v1/me/imports/preview",
            // A picture: MOMENTS_MEDIA_MAX_BYTES, in a form, not JSON.
            "POST /api/v1/media",
        ];
        // A sign-in's device name is cut to 100 characters, not refused.
        let unbounded_allowed = ["POST /api/v1/sessions .device"];
        let default = crate::config::DEFAULT_BODY_LIMIT as u64;
        let mut checked = 0;
        let mut problems = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in super::METHODS {
                let Some(body) = item.get(method).and_then(|op| op.get("requestBody")) else {
                    continue;
                };
                let operation = format!("{} {path}", method.to_uppercase());
                if own_limits.contains(&operation.as_str()) {
                    continue;
                }
                let schema = &body["content"]["application/json"]["schema"];
                assert!(schema.is_object(), "{operation}: no JSON body schema");
                let mut unbounded = Vec::new();
                let largest = largest_body(&doc, schema, "", &mut unbounded);
                for field in unbounded {
                    let named = format!("{operation} {field}");
                    if !unbounded_allowed.contains(&named.as_str()) {
                        problems.push(format!("{named}: no maxLength or maxItems"));
                    }
                }
                let own = LARGER_BODIES
                    .iter()
                    .find(|(m, p, _)| m.eq_ignore_ascii_case(method) && p == path)
                    .map(|(_, _, limit)| *limit as u64);
                match own {
                    None if largest > default => problems.push(format!(
                        "{operation}: a valid body reaches {largest} bytes, over the default {default}"
                    )),
                    Some(limit) if largest > limit => problems.push(format!(
                        "{operation}: a valid body reaches {largest} bytes, over its {limit}"
                    )),
                    Some(_) if largest <= default => problems.push(format!(
                        "{operation}: needs no limit of its own ({largest} bytes at most)"
                    )),
                    _ => {}
                }
                checked += 1;
            }
        }
        assert!(
            checked > 20,
            "only {checked} bodies checked: is the walk right?"
        );
        for (method, path, _) in LARGER_BODIES {
            let op = doc["paths"][path][method.to_lowercase()].get("requestBody");
            assert!(
                op.is_some(),
                "{method} {path} in LARGER_BODIES takes no body"
            );
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
