//! Every document the service writes satisfies its collection's validator
//! in `schemas/`. Neither MongoDB-wire stand-in (nx-27017, FerretDB)
//! enforces `$jsonSchema`, and real MongoDB rejects a write that breaks one:
//! so this drives the API through each kind of write on MongoDB-wire, then
//! reads every collection back and checks each document against its
//! validator with the subset of `$jsonSchema` that `schemas/` uses.
//!
//! Needs `MOMENTS_TEST_MONGODB_URI` (scripts/test.sh sets it), like
//! tests/conformance.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/multipart.rs"]
mod multipart;

use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document};
use reqwest::Method;
use serde_json::{json, Value};

use moments::config::{Secret, Settings};
use moments::startup::Application;

const ADMIN: (&str, &str) = ("validator-admin", "validator-admin-1");

struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Value {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn user(&self, name: &str) -> (i64, String) {
        let password = format!("{name}-password-1");
        let card = self
            .call(
                Method::POST,
                "/api/v1/users",
                None,
                &[("Idempotency-Key", &format!("signup-{name}"))],
                Some(
                    json!({"username": name, "password": password, "nickName": name,
                            "headImg": format!("https://cdn.example/h/{name}.jpg")}),
                ),
            )
            .await;
        (
            card["uid"].as_i64().unwrap(),
            self.login(name, &password).await,
        )
    }

    async fn login(&self, name: &str, password: &str) -> String {
        let s = self
            .call(
                Method::POST,
                "/api/v1/sessions",
                None,
                &[],
                Some(json!({"username": name, "password": password, "device": "validators"})),
            )
            .await;
        s["token"].as_str().unwrap().to_string()
    }
}

/// Every kind of write the API makes, so that every collection holds each
/// shape of document it can hold.
async fn write_everything(c: &Client) {
    let admin = c.login(ADMIN.0, ADMIN.1).await;
    c.call(
        Method::PUT,
        "/api/v1/admin/device-models/ONEPLUS%20A6000",
        Some(&admin),
        &[],
        Some(json!({"displayName": {"zh": "一加 6", "en": "OnePlus 6"}, "brand": "OnePlus"})),
    )
    .await;
    let (ann_uid, ann) = c.user("ann").await;
    let (bob_uid, bob) = c.user("bob").await;
    let (cat_uid, cat) = c.user("cat").await;
    // A photo uploaded and posted: the media collection's records.
    use multipart::{field, file, form, CONTENT_TYPE};
    let photo = moments::service::media::samples::phone_jpeg(64, 48, 6).unwrap();
    let uploaded = c
        .http
        .post(format!("{}/api/v1/media", c.base))
        .bearer_auth(&ann)
        .header("content-type", CONTENT_TYPE)
        .body(form(&[
            file(photo, "image/jpeg"),
            field("description", "湖"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), reqwest::StatusCode::CREATED);
    let media: Value = uploaded.json().await.unwrap();
    c.call(
        Method::POST,
        "/api/v1/posts",
        Some(&ann),
        &[],
        Some(json!({"category": "PICTURE", "content": "湖", "mediaIds": [media["id"]]})),
    )
    .await;
    c.call(
        Method::PATCH,
        "/api/v1/me",
        Some(&ann),
        &[],
        Some(json!({"nickName": "安", "headImg": ""})),
    )
    .await;
    for (who, whom) in [(&bob, ann_uid), (&ann, bob_uid), (&cat, ann_uid)] {
        c.call(
            Method::PUT,
            &format!("/api/v1/users/{whom}/follow"),
            Some(who),
            &[],
            None,
        )
        .await;
    }
    let post = c
        .call(
            Method::POST,
            "/api/v1/posts",
            Some(&ann),
            &[("Idempotency-Key", "post-1")],
            Some(json!({"category": "PICTURE", "content": "九张图",
                        "pictureUrls": (0..9).map(|i| format!("https://cdn.example/p/{i}.jpg")).collect::<Vec<_>>(),
                        "device": "ONEPLUS A6000", "geo": {"lat": 31.2, "lon": 121.5, "name": "上海"},
                        "visibility": "friends"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let plain = c
        .call(
            Method::POST,
            "/api/v1/posts",
            Some(&ann),
            &[],
            Some(json!({"category": "TEXT", "content": "hello"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let comment = c
        .call(
            Method::POST,
            &format!("/api/v1/posts/{post}/comments"),
            Some(&bob),
            &[("Idempotency-Key", "comment-1")],
            Some(json!({"content": "好看"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let reply = c
        .call(
            Method::POST,
            &format!("/api/v1/posts/{post}/comments"),
            Some(&ann),
            &[],
            Some(json!({"content": "谢谢", "replyToCommentId": comment})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    c.call(
        Method::PUT,
        &format!("/api/v1/posts/{post}/favorite"),
        Some(&bob),
        &[],
        None,
    )
    .await;
    c.call(
        Method::PUT,
        &format!("/api/v1/posts/{post}/like"),
        Some(&bob),
        &[],
        None,
    )
    .await;
    c.call(
        Method::PUT,
        &format!("/api/v1/comments/{comment}/like"),
        Some(&ann),
        &[],
        None,
    )
    .await;
    c.call(
        Method::PUT,
        &format!("/api/v1/posts/{plain}/like"),
        Some(&cat),
        &[],
        None,
    )
    .await;
    c.call(
        Method::DELETE,
        &format!("/api/v1/posts/{plain}/like"),
        Some(&cat),
        &[],
        None,
    )
    .await;
    c.call(
        Method::DELETE,
        &format!("/api/v1/comments/{reply}"),
        Some(&ann),
        &[],
        None,
    )
    .await;
    c.call(
        Method::POST,
        "/api/v1/notifications/read",
        Some(&ann),
        &[],
        None,
    )
    .await;
    c.call(
        Method::PUT,
        &format!("/api/v1/users/{cat_uid}/block"),
        Some(&bob),
        &[],
        None,
    )
    .await;
    // The privacy controls: an album window, a label, an only post naming
    // it, a mute and a hide.
    c.call(
        Method::PATCH,
        "/api/v1/me",
        Some(&ann),
        &[],
        Some(json!({"albumWindow": "1m"})),
    )
    .await;
    let label = c
        .call(
            Method::POST,
            "/api/v1/labels",
            Some(&ann),
            &[],
            Some(json!({"name": "同事", "members": [bob_uid]})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    c.call(
        Method::PATCH,
        &format!("/api/v1/labels/{label}"),
        Some(&ann),
        &[],
        Some(json!({"name": "老同事"})),
    )
    .await;
    c.call(
        Method::POST,
        "/api/v1/posts",
        Some(&ann),
        &[],
        Some(
            json!({"category": "TEXT", "content": "only them", "visibility": "only",
                    "audience": {"labels": [label], "uids": [bob_uid]}}),
        ),
    )
    .await;
    c.call(
        Method::POST,
        &format!("/api/v1/posts/{post}/shares"),
        Some(&bob),
        &[],
        Some(json!({"platform": "wechat"})),
    )
    .await;
    c.call(
        Method::POST,
        "/api/v1/admin/filters",
        Some(&admin),
        &[],
        Some(json!({"term": "代购", "action": "reject", "reason": "不发广告"})),
    )
    .await;
    // The instance's rules; reports (an open one citing a rule, and one a
    // moderator closes with a shared note), a role, and the audit log.
    c.call(
        Method::PUT,
        "/api/v1/admin/instance",
        Some(&admin),
        &[],
        Some(json!({"name": "朋友圈", "contact": "abuse@example.com", "rules": ["不发广告"]})),
    )
    .await;
    c.call(
        Method::POST,
        "/api/v1/reports",
        Some(&bob),
        &[],
        Some(json!({"targetType": "post", "targetId": post, "category": "spam", "comment": "广告", "rules": [1]})),
    )
    .await;
    c.call(
        Method::POST,
        "/api/v1/reports",
        Some(&cat),
        &[],
        Some(json!({"targetType": "user", "targetId": ann_uid, "category": "harassment", "postIds": [plain]})),
    )
    .await;
    c.call(
        Method::PUT,
        &format!("/api/v1/admin/users/{cat_uid}/role"),
        Some(&admin),
        &[],
        Some(json!({"role": "moderator"})),
    )
    .await;
    let queue = c
        .call(
            Method::GET,
            &format!("/api/v1/admin/reports?account={ann_uid}"),
            Some(&admin),
            &[],
            None,
        )
        .await;
    let user_item = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["target"]["kind"] == "user")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    c.call(
        Method::POST,
        &format!("/api/v1/admin/reports/{user_item}/actions"),
        Some(&admin),
        &[],
        Some(json!({"action": "dismiss", "note": "不违反规则", "shareWithReporter": true})),
    )
    .await;
    // The post's item removed (a strike, the post marked), appealed (the
    // strike's appeal, an appeal item) and overturned (the mark unset).
    let post_item = queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["target"]["kind"] == "post")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    c.call(
        Method::POST,
        &format!("/api/v1/admin/reports/{post_item}/actions"),
        Some(&admin),
        &[],
        Some(json!({"action": "remove_content", "note": "广告", "shareWithReporter": true})),
    )
    .await;
    c.call(
        Method::POST,
        &format!("/api/v1/me/strikes/{post_item}/appeal"),
        Some(&ann),
        &[],
        Some(json!({"text": "不是广告"})),
    )
    .await;
    let appeals = c
        .call(
            Method::GET,
            &format!("/api/v1/admin/reports?account={ann_uid}"),
            Some(&admin),
            &[],
            None,
        )
        .await;
    let appeal_item = appeals["items"][0]["id"].as_i64().unwrap();
    c.call(
        Method::POST,
        &format!("/api/v1/admin/reports/{appeal_item}/actions"),
        Some(&admin),
        &[],
        Some(json!({"action": "overturn"})),
    )
    .await;
    // A held post and its item, and a suspension.
    c.call(
        Method::POST,
        "/api/v1/admin/filters",
        Some(&admin),
        &[],
        Some(json!({"term": "审核", "action": "hold", "reason": "待审核"})),
    )
    .await;
    c.call(
        Method::POST,
        "/api/v1/posts",
        Some(&bob),
        &[],
        Some(json!({"category": "TEXT", "content": "请审核"})),
    )
    .await;
    let (eve_uid, _) = c.user("eve").await;
    c.call(
        Method::POST,
        "/api/v1/reports",
        Some(&bob),
        &[],
        Some(json!({"targetType": "user", "targetId": eve_uid, "category": "spam"})),
    )
    .await;
    let eve_item = c
        .call(
            Method::GET,
            &format!("/api/v1/admin/reports?account={eve_uid}"),
            Some(&admin),
            &[],
            None,
        )
        .await["items"][0]["id"]
        .as_i64()
        .unwrap();
    c.call(
        Method::POST,
        &format!("/api/v1/admin/reports/{eve_item}/actions"),
        Some(&admin),
        &[],
        Some(json!({"action": "suspend", "days": 7})),
    )
    .await;
    // Lifted by an admin: the strike marked lifted.
    c.call(
        Method::DELETE,
        &format!("/api/v1/admin/users/{eve_uid}/suspension"),
        Some(&admin),
        &[],
        None,
    )
    .await;
    // A view, written when the app stops.
    c.call(
        Method::GET,
        &format!("/api/v1/posts/{post}"),
        Some(&bob),
        &[],
        None,
    )
    .await;
    for what in ["mute", "hide"] {
        c.call(
            Method::PUT,
            &format!("/api/v1/users/{cat_uid}/{what}"),
            Some(&ann),
            &[],
            None,
        )
        .await;
    }
    c.call(
        Method::DELETE,
        &format!("/api/v1/posts/{plain}"),
        Some(&ann),
        &[],
        None,
    )
    .await;
    c.call(
        Method::PUT,
        "/api/v1/me/password",
        Some(&cat),
        &[],
        Some(json!({"oldPassword": "cat-password-1", "newPassword": "cat-password-2"})),
    )
    .await;
    // A data export, ready with its archive and a download link, and an
    // import applied: both written by their jobs, waited for here.
    let export = c
        .call(
            Method::POST,
            "/api/v1/me/exports",
            Some(&ann),
            &[],
            Some(json!({})),
        )
        .await;
    let import = c
        .call(
            Method::POST,
            "/api/v1/me/imports",
            Some(&ann),
            &[],
            Some(json!({"kind": "mutes", "mode": "merge", "csv": "bob\ncat\n"})),
        )
        .await;
    for (path, done) in [
        (format!("/api/v1/me/exports/{}", export["id"]), "ready"),
        (format!("/api/v1/me/imports/{}", import["id"]), "done"),
    ] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while c.call(Method::GET, &path, Some(&ann), &[], None).await["state"] != done {
            assert!(std::time::Instant::now() < deadline, "{path} never {done}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    c.call(
        Method::POST,
        &format!("/api/v1/me/exports/{}/link", export["id"]),
        Some(&ann),
        &[],
        Some(json!({})),
    )
    .await;
    // Account deletion rewrites the user (erased name, mark) and erases
    // its traces.
    let (_, dan) = c.user("dan").await;
    c.call(
        Method::PUT,
        &format!("/api/v1/users/{ann_uid}/follow"),
        Some(&dan),
        &[],
        None,
    )
    .await;
    c.call(
        Method::DELETE,
        "/api/v1/me",
        Some(&dan),
        &[],
        Some(json!({"password": "dan-password-1"})),
    )
    .await;
}

/// nx-27017 stores what `$set` writes as a bool as 0/1 and a date as a
/// string (TESTING.md); on it those count as what they stand for, and
/// everywhere else they do not.
struct Reading {
    on_nx: bool,
}

fn kind_of(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_) => "number",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::Binary(_) => "binData",
        _ => "other",
    }
}

fn as_f64(v: &Bson) -> Option<f64> {
    match v {
        Bson::Double(d) => Some(*d),
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        _ => None,
    }
}

/// The `$jsonSchema` keywords `schemas/` uses; any other keyword fails the
/// test, so a validator cannot outgrow this check unnoticed.
fn check(schema: &Value, v: &Bson, at: &str, reading: &Reading, errors: &mut Vec<String>) {
    let known = [
        "bsonType",
        "required",
        "properties",
        "items",
        "minLength",
        "maxLength",
        "enum",
        "minimum",
        "maximum",
        "maxItems",
        "description",
    ];
    for key in schema.as_object().unwrap().keys() {
        assert!(
            known.contains(&key.as_str()),
            "{at}: keyword {key} is not checked here"
        );
    }
    if let Some(t) = schema.get("bsonType") {
        let allowed: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => panic!("{at}: bsonType {t}"),
        };
        let stands_for = match v {
            Bson::Int32(0 | 1) | Bson::Int64(0 | 1) if reading.on_nx => Some("bool"),
            Bson::String(_) if reading.on_nx => Some("date"),
            _ => None,
        };
        if !allowed.contains(&kind_of(v)) && !stands_for.is_some_and(|k| allowed.contains(&k)) {
            errors.push(format!("{at}: {} is not {allowed:?}", kind_of(v)));
            return;
        }
    }
    if let (Some(Value::Array(required)), Bson::Document(d)) = (schema.get("required"), v) {
        for r in required.iter().filter_map(Value::as_str) {
            if !d.contains_key(r) {
                errors.push(format!("{at}: {r} is required"));
            }
        }
    }
    if let (Some(Value::Object(props)), Bson::Document(d)) = (schema.get("properties"), v) {
        for (name, sub) in props {
            if let Some(field) = d.get(name) {
                check(sub, field, &format!("{at}.{name}"), reading, errors);
            }
        }
    }
    if let Bson::Array(items) = v {
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if items.len() as u64 > max {
                errors.push(format!("{at}: {} items, at most {max}", items.len()));
            }
        }
        if let Some(sub) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(sub, item, &format!("{at}[{i}]"), reading, errors);
            }
        }
    }
    if let Bson::String(s) = v {
        let n = s.chars().count() as u64;
        if schema
            .get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| n < m)
        {
            errors.push(format!("{at}: {n} characters, under minLength"));
        }
        if schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| n > m)
        {
            errors.push(format!("{at}: {n} characters, over maxLength"));
        }
    }
    if let Some(Value::Array(choices)) = schema.get("enum") {
        let as_json: Value = v.clone().into_relaxed_extjson();
        if !choices.contains(&as_json) {
            errors.push(format!("{at}: {as_json} is not one of {choices:?}"));
        }
    }
    if let Some(n) = as_f64(v) {
        if schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n < m)
        {
            errors.push(format!("{at}: {n} under minimum"));
        }
        if schema
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n > m)
        {
            errors.push(format!("{at}: {n} over maximum"));
        }
    }
}

#[tokio::test]
async fn every_document_written_satisfies_its_collections_validator() {
    let uri = std::env::var("MOMENTS_TEST_MONGODB_URI").unwrap_or_else(|_| {
        panic!("MOMENTS_TEST_MONGODB_URI is not set: run scripts/test.sh, which starts nx-27017")
    });
    let mut suffix = [0u8; 6];
    getrandom::getrandom(&mut suffix).unwrap();
    let db_name: String = std::iter::once("validators_".to_string())
        .chain(suffix.iter().map(|b| format!("{b:02x}")))
        .collect();
    let settings = Settings {
        listen: "127.0.0.1:0".into(),
        mongodb_uri: Some(uri.clone()),
        mongodb_db: db_name.clone(),
        admin: Some((ADMIN.0.into(), Secret::new(ADMIN.1))),
        workers: Some(1),
        rate_limits: None,
        data_dir: std::env::temp_dir().join(&db_name),
        ..Settings::default()
    };
    moments::telemetry::init("warn");
    let app = Application::build(settings).await.expect("build app");
    let client = Client {
        base: format!("http://127.0.0.1:{}", app.port()),
        http: reqwest::Client::new(),
    };
    let stopper = app.stopper();
    let running = tokio::spawn(app.run_until_stopped());
    write_everything(&client).await;
    stopper.stop();
    running.await.unwrap().unwrap();
    // Stale live keys are saved only when Redis fails under a write
    // (tests/two_instances.rs cuts it); saved here through the adapter, once
    // the app (whose repair task would drop them) has stopped, with keys of
    // every shape, so their documents are checked too.
    {
        use moments::store::{BlobKey, LiveKey, LiveRepairDocs, Owner, SetKey, TokenHash};
        moments::store::mongo::MongoDocs::connect(&uri, &db_name)
            .await
            .unwrap()
            .save_live_repairs(
                &[
                    (
                        Owner::Post(9),
                        vec![
                            LiveKey::Blob(BlobKey::CommentBody(9, 10)),
                            LiveKey::Set(SetKey::CommentReplies(9, 10)),
                        ],
                    ),
                    (
                        Owner::User(7),
                        vec![
                            LiveKey::Blob(BlobKey::Session(7, TokenHash([0xab; 32]))),
                            LiveKey::Set(SetKey::Home(7)),
                        ],
                    ),
                ],
                1,
                moments::ids::now_ms(),
            )
            .await
            .unwrap();
        // A saved fan-out (written when a shutdown or a store failure cuts
        // one short, tests/api/fan_outs.rs), and the claim of it that an
        // instance's sweep makes.
        use moments::store::{FanOutDoc, FanOutDocs};
        let docs = moments::store::mongo::MongoDocs::connect(&uri, &db_name)
            .await
            .unwrap();
        let now = moments::ids::now_ms();
        docs.save_fan_out(&FanOutDoc {
            resume_before: Some(moments::ids::next_id()),
            saved_at: now,
            ..FanOutDoc::new(
                moments::ids::next_id(),
                7,
                moments::domain::post::Visibility::Friends,
                now - 1000,
            )
        })
        .await
        .unwrap();
        assert_eq!(
            docs.claim_fan_outs(now + 1, now + 60_000, 10)
                .await
                .unwrap()
                .len(),
            1
        );
    }

    let db = mongodb::Client::with_uri_str(&uri)
        .await
        .unwrap()
        .database(&db_name);
    let info = db
        .client()
        .database("admin")
        .run_command(mongodb::bson::doc! { "buildInfo": 1 })
        .await
        .unwrap();
    let reading = Reading {
        on_nx: info
            .get_str("process")
            .is_ok_and(|p| p.starts_with("nx_27017")),
    };
    let mut errors = Vec::new();
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas")).unwrap() {
        let path = entry.unwrap().path();
        let spec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let collection = spec["collection"].as_str().unwrap().to_string();
        let schema = &spec["validator"]["$jsonSchema"];
        let docs: Vec<Document> = db
            .collection::<Document>(&collection)
            .find(mongodb::bson::doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        for d in &docs {
            check(
                schema,
                &Bson::Document(d.clone()),
                &collection,
                &reading,
                &mut errors,
            );
        }
        checked.push((collection, docs.len()));
    }
    let _ = db.drop().await;
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(&db_name));
    assert!(
        errors.is_empty(),
        "documents that break their validator:\n{}",
        errors.join("\n")
    );
    // Each collection was written, or the check proved nothing about it.
    for (collection, n) in &checked {
        assert!(*n > 0, "nothing was written to {collection}: {checked:?}");
    }
    assert!(checked.len() >= 15, "{checked:?}");
}
