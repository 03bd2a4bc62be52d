//! Every write, tried without a token, with a bad token, and (where it is
//! someone's) as the wrong user: refused, and nothing changed.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_problem, follow, spawn_app};

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
        (Method::GET, "/api/v1/sessions".to_string(), None),
        (Method::DELETE, "/api/v1/sessions".to_string(), None),
        (
            Method::DELETE,
            "/api/v1/sessions/1247009344279936".to_string(),
            None,
        ),
        (
            Method::PUT,
            "/api/v1/me/password".to_string(),
            Some(json!({"oldPassword": "password-123", "newPassword": "hijacked-password"})),
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

/// Friends-only post by `author`, friends with both `left` and `right`, who
/// are not friends with each other.
async fn friends_only_triangle(
    app: &crate::helpers::TestApp,
) -> (
    crate::helpers::User,
    crate::helpers::User,
    crate::helpers::User,
    i64,
) {
    let author = app.user("hub").await;
    let left = app.user("lefty").await;
    let right = app.user("righty").await;
    for (a, b) in [
        (&author, &left),
        (&left, &author),
        (&author, &right),
        (&right, &author),
    ] {
        follow(app, a, b).await;
    }
    let (s, post) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "friends only", "visibility": "friends"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{post}");
    (author, left, right, post["id"].as_i64().unwrap())
}

#[tokio::test]
async fn a_comment_one_may_not_read_cannot_be_replied_to_or_liked() {
    let app = spawn_app().await;
    let (author, left, right, post) = friends_only_triangle(&app).await;
    let hidden = app
        .comment(&left, post, "only our friends see this", None)
        .await["id"]
        .as_i64()
        .unwrap();
    // `right` sees the post but not `left`'s comment (WeChat's rule).
    let reply = app
        .post(
            &format!("/api/v1/posts/{post}/comments"),
            Some(&right.token),
            json!({"content": "who wrote this?", "replyToCommentId": hidden}),
        )
        .await;
    let p = assert_problem(&reply, 404, "not_found");
    assert!(!p.to_string().contains(&left.uid.to_string()), "{p}");
    assert_problem(
        &app.put(
            &format!("/api/v1/comments/{hidden}/like"),
            Some(&right.token),
        )
        .await,
        404,
        "not_found",
    );
    // The author may do both.
    app.comment(&author, post, "thanks", Some(hidden)).await;
    let (s, like) = app
        .put(
            &format!("/api/v1/comments/{hidden}/like"),
            Some(&author.token),
        )
        .await;
    assert_eq!((s.as_u16(), like["likeCount"].as_i64()), (200, Some(1)));

    // Across a block, on a public post, the same.
    let stranger = app.user("stranger").await;
    let public = app.text_post(&author, "for everyone").await;
    let theirs = app.comment(&stranger, public, "hello", None).await["id"]
        .as_i64()
        .unwrap();
    app.put(
        &format!("/api/v1/users/{}/block", stranger.uid),
        Some(&left.token),
    )
    .await;
    let reply = app
        .post(
            &format!("/api/v1/posts/{public}/comments"),
            Some(&left.token),
            json!({"content": "hm", "replyToCommentId": theirs}),
        )
        .await;
    assert_problem(&reply, 404, "not_found");
    assert_problem(
        &app.put(
            &format!("/api/v1/comments/{theirs}/like"),
            Some(&left.token),
        )
        .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn a_like_answers_the_count_the_liker_may_see() {
    let app = spawn_app().await;
    let (author, left, right, post) = friends_only_triangle(&app).await;
    let path = format!("/api/v1/posts/{post}/like");
    let (_, first) = app.put(&path, Some(&left.token)).await;
    assert_eq!(first["likeCount"], 1);
    // Two likes in all, but `left`'s is not for `right` to see.
    let (_, second) = app.put(&path, Some(&right.token)).await;
    assert_eq!(
        (second["liked"].as_bool(), second["likeCount"].as_i64()),
        (Some(true), Some(1))
    );
    let (_, seen) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&right.token))
        .await;
    assert_eq!(seen["likeCount"], second["likeCount"]);
    let (_, gone) = app.delete(&path, Some(&right.token)).await;
    assert_eq!(
        (gone["liked"].as_bool(), gone["likeCount"].as_i64()),
        (Some(false), Some(0))
    );
    let (_, all) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&author.token))
        .await;
    assert_eq!(all["likeCount"], 1);
}
