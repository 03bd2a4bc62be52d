//! Every write, tried without a token, with a bad token, and (where it is
//! someone's) as the wrong user: refused, and nothing changed.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_problem, spawn_app};

#[tokio::test]
async fn every_write_needs_a_valid_token() {
    let app = spawn_app().await;
    let a = app.user("owner").await;
    let post = app.text_post(&a, "p").await;
    let c = app.comment(&a, post, "c", None).await["id"]
        .as_i64()
        .unwrap();
    let writes = [
        (
            Method::POST,
            "/api/v1/posts".to_string(),
            Some(json!({"category": "TEXT", "content": "x"})),
        ),
        (Method::DELETE, format!("/api/v1/posts/{post}"), None),
        (
            Method::POST,
            format!("/api/v1/posts/{post}/comments"),
            Some(json!({"content": "x"})),
        ),
        (Method::DELETE, format!("/api/v1/comments/{c}"), None),
        (Method::PUT, format!("/api/v1/posts/{post}/like"), None),
        (Method::DELETE, format!("/api/v1/posts/{post}/like"), None),
        (Method::PUT, format!("/api/v1/comments/{c}/like"), None),
        (Method::DELETE, format!("/api/v1/comments/{c}/like"), None),
        (
            Method::PATCH,
            "/api/v1/me".to_string(),
            Some(json!({"nickName": "hacked"})),
        ),
        (Method::DELETE, "/api/v1/sessions/current".to_string(), None),
        (
            Method::POST,
            "/api/v1/notifications/read".to_string(),
            Some(json!({})),
        ),
        (Method::PUT, format!("/api/v1/users/{}/follow", a.uid), None),
        (
            Method::DELETE,
            format!("/api/v1/users/{}/follow", a.uid),
            None,
        ),
        (Method::PUT, format!("/api/v1/users/{}/block", a.uid), None),
        (
            Method::DELETE,
            format!("/api/v1/users/{}/block", a.uid),
            None,
        ),
        (
            Method::PUT,
            "/api/v1/admin/device-models/x".to_string(),
            Some(json!({"displayName": {"zh": "x", "en": "x"}})),
        ),
        (
            Method::DELETE,
            "/api/v1/admin/device-models/x".to_string(),
            None,
        ),
        (
            Method::POST,
            "/api/v1/admin/device-models/import".to_string(),
            Some(json!([])),
        ),
    ];
    for (method, path, body) in &writes {
        for token in [None, Some("not-a-token")] {
            let r = app.call(method.clone(), path, token, body.clone()).await;
            assert_problem(&r, 401, "unauthorized");
        }
    }
    let (_, p) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(
        (p["likeCount"].as_i64(), p["commentCount"].as_i64()),
        (Some(0), Some(1))
    );
    let (_, me) = app.get("/api/v1/me", Some(&a.token)).await;
    assert_eq!(me["nickName"], "owner昵称");
}

#[tokio::test]
async fn admin_writes_need_the_admin_role() {
    let app = spawn_app().await;
    let u = app.user("plain").await;
    let body = json!({"displayName": {"zh": "一加 6", "en": "OnePlus 6"}});
    let r = app
        .call(
            Method::PUT,
            "/api/v1/admin/device-models/ONEPLUS%20A6000",
            Some(&u.token),
            Some(body),
        )
        .await;
    assert_problem(&r, 403, "forbidden");
    assert_problem(
        &app.get("/api/v1/admin/device-models", Some(&u.token)).await,
        403,
        "forbidden",
    );
    assert_problem(
        &app.call(
            Method::POST,
            "/api/v1/admin/device-models/import",
            Some(&u.token),
            Some(json!([])),
        )
        .await,
        403,
        "forbidden",
    );
    let admin = app.admin().await;
    let (_, list) = app
        .get("/api/v1/admin/device-models", Some(&admin.token))
        .await;
    assert_eq!(list["items"], json!([]));
}
