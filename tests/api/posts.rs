use serde_json::{json, Value};
use std::collections::BTreeSet;

use crate::helpers::{assert_problem, spawn_app, spawn_app_with, test_settings};

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn the_expanded_post_has_the_documented_shape() {
    let app = spawn_app().await;
    let wang = app.user("wangwu").await;
    let li = app.user("lisi").await;
    let urls: Vec<String> = (0..9).map(|i| format!("https://cdn/pic/{i}.jpg")).collect();
    let (s, post) = app
        .post(
            "/api/v1/posts",
            Some(&wang.token),
            json!({"category": "PICTURE", "content": "这是一个带9张图片的动态😀", "pictureUrls": urls,
                   "device": "Redmi 6", "geo": {"lat": 31.23, "lon": 121.47, "name": "上海"}}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{post}");
    let id = post["id"].as_i64().unwrap();
    let c = app.comment(&li, id, "沙发", None).await;
    app.comment(&wang, id, "谢谢", Some(c["id"].as_i64().unwrap()))
        .await;
    app.put(&format!("/api/v1/posts/{id}/like"), Some(&li.token))
        .await;

    let (s, p) = app
        .get(&format!("/api/v1/posts/{id}"), Some(&li.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(
        keys(&p),
        set(&[
            "id",
            "category",
            "content",
            "createtime",
            "device",
            "deviceModel",
            "geo",
            "visibility",
            "author",
            "pictureUrls",
            "media",
            "likeCount",
            "commentCount",
            "shareCount",
            "viewCount",
            "likedByMe",
            "comments",
            "likes",
            "serverTime"
        ])
    );
    assert_eq!(p["category"], "PICTURE");
    assert_eq!(p["pictureUrls"].as_array().unwrap().len(), 9);
    assert_eq!(p["device"], "Redmi 6", "unmapped models show raw");
    assert_eq!(p["deviceModel"], "Redmi 6");
    assert_eq!(p["geo"]["name"], "上海");
    assert_eq!(p["visibility"], "public");
    assert_eq!(
        p["author"],
        json!({"uid": wang.uid, "nickName": "wangwu昵称", "headImg": ""})
    );
    assert_eq!(
        (p["likeCount"].as_i64(), p["commentCount"].as_i64()),
        (Some(1), Some(2))
    );
    assert_eq!(p["likedByMe"], true);
    let reply = &p["comments"][0];
    assert_eq!(
        keys(reply),
        set(&[
            "id",
            "postId",
            "content",
            "createtime",
            "author",
            "replyTo",
            "likeCount",
            "commentCount",
            "likedByMe"
        ])
    );
    assert_eq!(reply["content"], "谢谢");
    assert_eq!(
        reply["replyTo"],
        json!({"commentId": c["id"], "uid": li.uid, "nickName": "lisi昵称"})
    );
    assert_eq!(
        p["comments"][1]["commentCount"], 1,
        "the first comment has one reply"
    );
    assert_eq!(p["comments"][1]["replyTo"], Value::Null);
    let like = &p["likes"][0];
    assert_eq!(keys(like), set(&["id", "postId", "createTime", "user"]));
    assert_eq!(like["user"]["uid"], li.uid);
    assert_eq!(like["postId"], id);
    assert!(p["serverTime"].as_i64().unwrap() >= p["createtime"].as_i64().unwrap());

    // Another viewer sees the same post without "liked by me".
    let (_, anon) = app.get(&format!("/api/v1/posts/{id}"), None).await;
    assert_eq!(anon["likedByMe"], false);
    assert_eq!(anon["likeCount"], 1);
}

#[tokio::test]
async fn relative_times_follow_the_readers_language() {
    let app = spawn_app().await;
    let u = app.user("timer").await;
    let id = app.text_post(&u, "现在").await;
    let (_, zh) = app.get(&format!("/api/v1/posts/{id}?lang=zh"), None).await;
    assert_eq!(zh["createtimeText"], "刚刚");
    let (_, en) = app
        .get(&format!("/api/v1/posts/{id}?lang=en&tz=%2B08:00"), None)
        .await;
    assert_eq!(en["createtimeText"], "just now");
    let (_, plain) = app.get(&format!("/api/v1/posts/{id}"), None).await;
    assert!(plain.get("createtimeText").is_none());
    assert_problem(
        &app.get(&format!("/api/v1/posts/{id}?lang=fr"), None).await,
        400,
        "invalid_input",
    );
    assert_problem(
        &app.get(&format!("/api/v1/posts/{id}?tz=mars"), None).await,
        400,
        "invalid_input",
    );
}

#[tokio::test]
async fn bad_posts_name_the_field_and_store_nothing() {
    let app = spawn_app().await;
    let u = app.user("poster").await;
    let ten: Vec<String> = (0..10).map(|i| format!("https://cdn/{i}.jpg")).collect();
    for (body, field) in [
        (
            json!({"category": "PICTURE", "pictureUrls": ten}),
            "pictureUrls",
        ),
        (
            json!({"category": "TEXT", "content": {"$gt": ""}}),
            "content",
        ),
        (
            json!({"category": "TEXT", "content": "字".repeat(5001)}),
            "content",
        ),
        (
            json!({"category": "TEXT", "content": "x", "pictureUrls": ["ftp://x/y"]}),
            "pictureUrls[0]",
        ),
        (
            json!({"category": "TEXT", "content": "x", "geo": {"lat": 100, "lon": 0}}),
            "geo.lat",
        ),
        (
            json!({"category": "TEXT", "content": "x", "visibility": "everyone"}),
            "visibility",
        ),
        (json!({"category": "MUSIC", "content": "x"}), "category"),
        (json!({"category": "TEXT", "content": 5}), "content"),
    ] {
        let r = app.post("/api/v1/posts", Some(&u.token), body).await;
        let p = assert_problem(&r, 400, "invalid_input");
        assert_eq!(p["field"], field, "{p}");
    }
    // Malformed JSON.
    let r = app
        .client
        .post(format!("{}/api/v1/posts", app.base))
        .bearer_auth(&u.token)
        .header("content-type", "application/json")
        .body("{\"category\": \"TEXT\", ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let (_, page) = app
        .get(&format!("/api/v1/users/{}/posts", u.uid), None)
        .await;
    assert_eq!(page["items"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let mut settings = test_settings();
    settings.body_limit = 4096;
    let app = spawn_app_with(settings).await;
    let u = app.user("big").await;
    let post = app.text_post(&u, "a post").await;
    let r = app
        .post(
            &format!("/api/v1/posts/{post}/comments"),
            Some(&u.token),
            json!({"content": "x".repeat(5000)}),
        )
        .await;
    assert_problem(&r, 413, "payload_too_large");
    // A post's valid bodies are larger than the limit set here; its own
    // limit still ends a body past them.
    let r = app
        .post(
            "/api/v1/posts",
            Some(&u.token),
            json!({"category": "TEXT", "content": "x".repeat(400 * 1024)}),
        )
        .await;
    assert_problem(&r, 413, "payload_too_large");
}

/// The largest post the document allows, written by an encoder that
/// escapes every character it can, is over `MOMENTS_BODY_LIMIT`'s default
/// and is taken: a valid body is never too large.
#[tokio::test]
async fn the_largest_valid_post_is_not_too_large() {
    let app = spawn_app().await;
    let u = app.user("widest").await;
    let url = |i: usize| {
        let head = format!("https://例子.com/{i}/");
        let tail = "图".repeat(2048 - head.chars().count());
        head + &tail
    };
    let body = json!({
        "category": "PICTURE",
        "content": "😀".repeat(5000),
        "pictureUrls": (0..9).map(url).collect::<Vec<_>>(),
    });
    let (s, v, size) = app
        .call_escaped(reqwest::Method::POST, "/api/v1/posts", &u.token, &body)
        .await;
    assert!(size > 64 * 1024, "{size} bytes");
    assert_eq!(s.as_u16(), 201, "{v}");
    let (_, shown) = app
        .get(&format!("/api/v1/posts/{}", v["id"]), Some(&u.token))
        .await;
    assert_eq!(shown["content"], body["content"]);
    assert_eq!(shown["pictureUrls"], body["pictureUrls"]);
}

#[tokio::test]
async fn deleting_a_post_removes_it_from_every_read_at_once() {
    let app = spawn_app().await;
    let a = app.user("author").await;
    let b = app.user("bystander").await;
    let id = app.text_post(&a, "soon gone").await;
    app.put(&format!("/api/v1/posts/{id}/like"), Some(&b.token))
        .await;
    assert_eq!(
        app.get(&format!("/api/v1/posts/{id}"), None)
            .await
            .0
            .as_u16(),
        200
    );

    assert_problem(
        &app.delete(&format!("/api/v1/posts/{id}"), Some(&b.token))
            .await,
        403,
        "forbidden",
    );
    assert_eq!(
        app.get(&format!("/api/v1/posts/{id}"), None)
            .await
            .0
            .as_u16(),
        200
    );

    assert_eq!(
        app.delete(&format!("/api/v1/posts/{id}"), Some(&a.token))
            .await
            .0
            .as_u16(),
        204
    );
    assert_problem(
        &app.get(&format!("/api/v1/posts/{id}"), None).await,
        404,
        "not_found",
    );
    assert_problem(
        &app.get(&format!("/api/v1/posts/{id}/comments"), None).await,
        404,
        "not_found",
    );
    assert_problem(
        &app.put(&format!("/api/v1/posts/{id}/like"), Some(&b.token))
            .await,
        404,
        "not_found",
    );
    let (_, page) = app
        .get(&format!("/api/v1/users/{}/posts", a.uid), None)
        .await;
    assert_eq!(page["items"], json!([]));
    // Deleting again: already done, and no longer visible.
    assert_problem(
        &app.delete(&format!("/api/v1/posts/{id}"), Some(&a.token))
            .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn a_users_posts_page_newest_first_without_duplicates_while_they_post() {
    let app = spawn_app().await;
    let u = app.user("prolific").await;
    let mut made = Vec::new();
    for i in 0..7 {
        made.push(app.text_post(&u, &format!("post {i}")).await);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/users/{}/posts?limit=3&cursor={c}", u.uid),
            None => format!("/api/v1/users/{}/posts?limit=3", u.uid),
        };
        let (s, page) = app.get(&path, None).await;
        assert_eq!(s.as_u16(), 200, "{page}");
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["id"].as_i64().unwrap()),
        );
        // New posts while paging must not shift what comes next.
        app.text_post(&u, "interloper").await;
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    made.reverse();
    assert_eq!(seen, made);
    assert_problem(
        &app.get(&format!("/api/v1/users/{}/posts?cursor=bogus", u.uid), None)
            .await,
        400,
        "invalid_input",
    );
    assert_problem(
        &app.get(&format!("/api/v1/users/{}/posts?limit=101", u.uid), None)
            .await,
        400,
        "invalid_input",
    );
}

#[tokio::test]
async fn private_posts_are_404_to_everyone_but_the_author() {
    let app = spawn_app().await;
    let a = app.user("secretive").await;
    let b = app.user("curious").await;
    let (_, post) = app
        .post(
            "/api/v1/posts",
            Some(&a.token),
            json!({"category": "TEXT", "content": "日记", "visibility": "private"}),
        )
        .await;
    let id = post["id"].as_i64().unwrap();
    assert_eq!(
        app.get(&format!("/api/v1/posts/{id}"), Some(&a.token))
            .await
            .0
            .as_u16(),
        200
    );
    assert_problem(
        &app.get(&format!("/api/v1/posts/{id}"), Some(&b.token))
            .await,
        404,
        "not_found",
    );
    assert_problem(
        &app.get(&format!("/api/v1/posts/{id}"), None).await,
        404,
        "not_found",
    );
    assert_problem(
        &app.put(&format!("/api/v1/posts/{id}/like"), Some(&b.token))
            .await,
        404,
        "not_found",
    );
    let (_, page) = app
        .get(&format!("/api/v1/users/{}/posts", a.uid), Some(&b.token))
        .await;
    assert_eq!(page["items"], json!([]));
    let (_, own) = app
        .get(&format!("/api/v1/users/{}/posts", a.uid), Some(&a.token))
        .await;
    assert_eq!(own["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn unknown_ids_and_paths_are_problem_404s() {
    let app = spawn_app().await;
    assert_problem(
        &app.get("/api/v1/posts/1000000000000001", None).await,
        404,
        "not_found",
    );
    assert_problem(
        &app.get("/api/v1/posts/not-a-number", None).await,
        404,
        "not_found",
    );
    assert_problem(
        &app.get("/api/v1/nothing-here", None).await,
        404,
        "not_found",
    );
}
