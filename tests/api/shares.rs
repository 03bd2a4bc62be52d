//! Shares (分享): recorded per reader, post and platform, counted on the
//! expanded post, refused where the post cannot be seen.

use serde_json::json;

use crate::helpers::{assert_problem, spawn_app};

#[tokio::test]
async fn shares_are_counted_once_per_reader_and_platform() {
    let app = spawn_app().await;
    let author = app.user("shared").await;
    let a = app.user("sharer1").await;
    let b = app.user("sharer2").await;
    let post = app.text_post(&author, "pass it on").await;
    let path = format!("/api/v1/posts/{post}/shares");
    let mut expected = 0;
    for (who, platform, new) in [
        (&a, "wechat", true),
        (&a, "wechat", false),
        (&a, "weibo", true),
        (&b, "link", true),
        (&author, "moments", true),
    ] {
        expected += u64::from(new);
        let (s, r) = app
            .post(&path, Some(&who.token), json!({"platform": platform}))
            .await;
        assert_eq!(s.as_u16(), 201, "{r}");
        assert_eq!(r, json!({"platform": platform, "shareCount": expected}));
    }
    let (_, read) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&b.token))
        .await;
    assert_eq!(read["shareCount"], 4);
    // Rebuilt from the documents alike.
    app.lose_live_state().await;
    let (_, read) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(read["shareCount"], 4);
    let (_, feed) = app.get("/api/v1/feed", Some(&author.token)).await;
    assert_eq!(feed["items"][0]["shareCount"], 4);

    let bad = assert_problem(
        &app.post(&path, Some(&a.token), json!({"platform": "myspace"}))
            .await,
        400,
        "invalid_input",
    );
    assert_eq!(bad["field"], "platform");
    assert_problem(
        &app.post(&path, None, json!({"platform": "qq"})).await,
        401,
        "unauthorized",
    );
    // A sharer who deletes their account takes their share with them.
    let (s, _) = app
        .call(
            reqwest::Method::DELETE,
            "/api/v1/me",
            Some(&b.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204);
    let (_, read) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&a.token))
        .await;
    assert_eq!(read["shareCount"], 3);
    // A post the reader may not see cannot be shared, and says nothing.
    let (_, hidden) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "mine", "visibility": "private"}),
        )
        .await;
    let hidden = hidden["id"].as_i64().unwrap();
    assert_problem(
        &app.post(
            &format!("/api/v1/posts/{hidden}/shares"),
            Some(&a.token),
            json!({"platform": "qq"}),
        )
        .await,
        404,
        "not_found",
    );
    let (s, _) = app
        .delete(&format!("/api/v1/posts/{post}"), Some(&author.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    assert_problem(
        &app.post(&path, Some(&a.token), json!({"platform": "qq"}))
            .await,
        404,
        "not_found",
    );
}
