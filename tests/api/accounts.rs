use serde_json::json;

use crate::helpers::{assert_problem, spawn_app, ADMIN};

#[tokio::test]
async fn register_login_profile_and_logout() {
    let app = spawn_app().await;
    let (s, card) = app
        .post(
            "/api/v1/users",
            None,
            json!({"username": "Alice", "password": "password-123", "nickName": "爱丽丝😀", "headImg": "https://cdn/a.jpg"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{card}");
    assert_eq!(card["nickName"], "爱丽丝😀");
    let uid = card["uid"].as_i64().unwrap();
    assert_eq!(uid.to_string().len(), 16);

    let (s, session) = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "alice", "password": "password-123"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201);
    let token = session["token"].as_str().unwrap();
    assert_eq!(session["user"]["uid"], uid);
    assert!(
        session["expiresAt"].as_i64().unwrap()
            > session["user"]["uid"].as_i64().unwrap() / 1_000_000
    );

    let (s, me) = app.get("/api/v1/me", Some(token)).await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(me["username"], "alice");
    assert!(me.get("passwordHash").is_none(), "hash leaked: {me}");

    let (s, me) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(token),
            Some(json!({"nickName": "Alice W"})),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(me["nickName"], "Alice W");
    assert_eq!(me["headImg"], "https://cdn/a.jpg");
    let (_, other) = app.get(&format!("/api/v1/users/{uid}"), None).await;
    assert_eq!(other["nickName"], "Alice W");

    let (s, _) = app.delete("/api/v1/sessions/current", Some(token)).await;
    assert_eq!(s.as_u16(), 204);
    assert_problem(
        &app.get("/api/v1/me", Some(token)).await,
        401,
        "unauthorized",
    );
}

#[tokio::test]
async fn duplicate_usernames_conflict_case_insensitively() {
    let app = spawn_app().await;
    app.user("bob").await;
    let r = app
        .post(
            "/api/v1/users",
            None,
            json!({"username": "BOB", "password": "password-123"}),
        )
        .await;
    assert_problem(&r, 409, "conflict");
}

#[tokio::test]
async fn wrong_passwords_and_unknown_users_are_the_same_401() {
    let app = spawn_app().await;
    app.user("carol").await;
    let wrong = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "carol", "password": "not-her-password"}),
        )
        .await;
    let unknown = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "nobody", "password": "whatever-123"}),
        )
        .await;
    assert_problem(&wrong, 401, "unauthorized");
    assert_problem(&unknown, 401, "unauthorized");
    assert_eq!(wrong.1["detail"], unknown.1["detail"]);
}

#[tokio::test]
async fn bad_registrations_name_the_field_and_create_nothing() {
    let app = spawn_app().await;
    for (body, field) in [
        (
            json!({"username": "ab", "password": "password-123"}),
            "username",
        ),
        (json!({"username": "dave", "password": "short"}), "password"),
        (
            json!({"username": {"$gt": ""}, "password": "password-123"}),
            "username",
        ),
        (
            json!({"username": "dave", "password": "password-123", "headImg": "javascript:x"}),
            "headImg",
        ),
        (json!({"password": "password-123"}), "username"),
    ] {
        let r = app.post("/api/v1/users", None, body).await;
        let p = assert_problem(&r, 400, "invalid_input");
        assert_eq!(p["field"], field, "{p}");
    }
    let r = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "dave", "password": "password-123"}),
        )
        .await;
    assert_problem(&r, 401, "unauthorized");
}

#[tokio::test]
async fn bad_tokens_are_401_never_anonymous() {
    let app = spawn_app().await;
    let alice = app.user("alice").await;
    let post = app.text_post(&alice, "public").await;
    // Anonymous reading of a public post is fine...
    assert_eq!(
        app.get(&format!("/api/v1/posts/{post}"), None)
            .await
            .0
            .as_u16(),
        200
    );
    // ...but a bad token is an error, not a silent downgrade.
    let r = app
        .get(&format!("/api/v1/posts/{post}"), Some("deadbeef"))
        .await;
    assert_problem(&r, 401, "unauthorized");
    let r = app
        .client
        .get(format!("{}/api/v1/me", app.base))
        .header("Authorization", "Basic abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
}

#[tokio::test]
async fn the_admin_bootstrap_is_idempotent() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    // What every later start-up (or another instance) does again.
    for _ in 0..2 {
        let uid = moments::service::accounts::bootstrap_admin(&app.ctx, ADMIN.0, ADMIN.1)
            .await
            .unwrap();
        assert_eq!(uid, admin.uid);
    }
    let (_, me) = app.get("/api/v1/me", Some(&admin.token)).await;
    assert_eq!(me["roles"], json!(["admin"]));
    assert_eq!(me["username"], ADMIN.0);
    // A changed password is applied on the next start-up, and signs out
    // whoever held the old one.
    moments::service::accounts::bootstrap_admin(&app.ctx, ADMIN.0, "a-new-password-2")
        .await
        .unwrap();
    assert_problem(
        &app.get("/api/v1/me", Some(&admin.token)).await,
        401,
        "unauthorized",
    );
    app.login(ADMIN.0, "a-new-password-2").await;
}
