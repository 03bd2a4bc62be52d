use serde_json::json;

use crate::helpers::{assert_problem, spawn_app};

#[tokio::test]
async fn replies_name_whom_they_answer_and_must_stay_on_their_post() {
    let app = spawn_app().await;
    let zhang = app.user("zhangsan").await;
    let li = app.user("lisi").await;
    let p1 = app.text_post(&zhang, "one").await;
    let p2 = app.text_post(&zhang, "two").await;
    let c = app.comment(&li, p1, "李四的留言 😀", None).await;
    assert_eq!(c["author"]["uid"], li.uid);
    assert_eq!(c["replyTo"], serde_json::Value::Null);
    assert_eq!(
        (c["likeCount"].as_i64(), c["commentCount"].as_i64()),
        (Some(0), Some(0))
    );
    let cid = c["id"].as_i64().unwrap();

    let r = app.comment(&zhang, p1, "张三回复李四", Some(cid)).await;
    assert_eq!(
        r["replyTo"],
        json!({"commentId": cid, "uid": li.uid, "nickName": "lisi昵称"})
    );

    let wrong = app
        .post(
            &format!("/api/v1/posts/{p2}/comments"),
            Some(&zhang.token),
            json!({"content": "x", "replyToCommentId": cid}),
        )
        .await;
    // Not on this post: as if it did not exist.
    assert_problem(&wrong, 404, "not_found");
    let blank = app
        .post(
            &format!("/api/v1/posts/{p1}/comments"),
            Some(&zhang.token),
            json!({"content": "   "}),
        )
        .await;
    assert_eq!(
        assert_problem(&blank, 400, "invalid_input")["field"],
        "content"
    );
    let long = app
        .post(
            &format!("/api/v1/posts/{p1}/comments"),
            Some(&zhang.token),
            json!({"content": "字".repeat(2001)}),
        )
        .await;
    assert_problem(&long, 400, "invalid_input");
    let (_, list) = app.get(&format!("/api/v1/posts/{p2}/comments"), None).await;
    assert_eq!(list["items"], json!([]), "refused comments were not stored");
}

#[tokio::test]
async fn comment_pages_have_no_duplicates_or_gaps_while_others_comment() {
    let app = spawn_app().await;
    let a = app.user("host").await;
    let b = app.user("guest").await;
    let post = app.text_post(&a, "talk to me").await;
    let mut made = Vec::new();
    for i in 0..9 {
        made.push(
            app.comment(&b, post, &format!("c{i}"), None).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (s, page) = app
            .get(
                &format!("/api/v1/posts/{post}/comments?limit=4&cursor={cursor}"),
                None,
            )
            .await;
        assert_eq!(s.as_u16(), 200, "{page}");
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_i64().unwrap()),
        );
        app.comment(&a, post, "meanwhile", None).await;
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    made.reverse();
    assert_eq!(seen, made);
    let (_, p) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(
        p["commentCount"],
        9 + 3,
        "9 comments and one 'meanwhile' per page"
    );
    let latest: Vec<&str> = p["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["content"].as_str().unwrap())
        .collect();
    assert_eq!(latest, ["meanwhile", "meanwhile", "meanwhile", "c8", "c7"]);
}

#[tokio::test]
async fn comments_are_deleted_by_their_author_or_the_posts_author_only() {
    let app = spawn_app().await;
    let owner = app.user("owner").await;
    let writer = app.user("writer").await;
    let other = app.user("other").await;
    let post = app.text_post(&owner, "mine").await;
    let c1 = app.comment(&writer, post, "first", None).await["id"]
        .as_i64()
        .unwrap();
    let c2 = app.comment(&writer, post, "second", None).await["id"]
        .as_i64()
        .unwrap();
    let reply = app.comment(&other, post, "re", Some(c1)).await["id"]
        .as_i64()
        .unwrap();

    assert_problem(
        &app.delete(&format!("/api/v1/comments/{c1}"), Some(&other.token))
            .await,
        403,
        "forbidden",
    );
    assert_eq!(
        app.delete(&format!("/api/v1/comments/{c1}"), Some(&writer.token))
            .await
            .0
            .as_u16(),
        204
    );
    assert_eq!(
        app.delete(&format!("/api/v1/comments/{c2}"), Some(&owner.token))
            .await
            .0
            .as_u16(),
        204
    );
    assert_problem(
        &app.delete(&format!("/api/v1/comments/{c2}"), Some(&owner.token))
            .await,
        404,
        "not_found",
    );

    let (_, p) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(p["commentCount"], 1);
    assert_eq!(p["comments"][0]["id"], reply);
    let (_, list) = app
        .get(&format!("/api/v1/posts/{post}/comments"), None)
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    // The reply to a deleted comment stays and still says whom it answered.
    assert_eq!(list["items"][0]["replyTo"]["commentId"], c1);
}

#[tokio::test]
async fn a_comment_page_narrows_counts_from_a_bounded_window() {
    let app = spawn_app().await;
    let author = app.user("threader").await;
    let reader = app.user("narrower").await;
    let friend = app.user("kindreply").await;
    let spammer = app.user("spamreply").await;
    let post = app.text_post(&author, "a busy thread").await;
    let top = app.comment(&author, post, "start here", None).await["id"]
        .as_i64()
        .unwrap();
    app.comment(&friend, post, "kind words", Some(top)).await;
    for i in 0..10 {
        app.comment(&spammer, post, &format!("spam {i}"), Some(top))
            .await;
    }
    app.put(
        &format!("/api/v1/users/{}/block", spammer.uid),
        Some(&reader.token),
    )
    .await;
    let count = || async {
        let (_, page) = app
            .get(
                &format!("/api/v1/posts/{post}/comments?limit=100"),
                Some(&reader.token),
            )
            .await;
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == top)
            .map(|c| c["commentCount"].as_i64().unwrap())
            .unwrap()
    };
    // Within the window (the newest 100 replies), exact: only the kind one.
    assert_eq!(count().await, 1);
    // Past it, only the newest 100 replies are looked at: the hidden ones
    // among them are taken off the total (106 - 100), older ones counted.
    for i in 10..105 {
        app.comment(&spammer, post, &format!("spam {i}"), Some(top))
            .await;
    }
    assert_eq!(count().await, 6);
}
