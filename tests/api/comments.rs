use serde_json::json;

use crate::helpers::{assert_problem, ids, spawn_app};

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

/// Every item id of a reply thread, walking its pages of `limit`.
async fn whole_thread(
    app: &crate::helpers::TestApp,
    comment: i64,
    token: Option<&str>,
    limit: usize,
) -> Vec<i64> {
    let path = format!("/api/v1/comments/{comment}/replies");
    crate::helpers::ids(&crate::helpers::every_item(app, &path, token, limit).await)
}

#[tokio::test]
async fn a_comments_reply_thread_lists_replies_to_it_and_to_them_oldest_first() {
    let app = spawn_app().await;
    let zhang = app.user("zhangsan").await;
    let li = app.user("lisi").await;
    let wang = app.user("wangwu").await;
    let post = app.text_post(&zhang, "谁来聊聊").await;
    let id = |v: serde_json::Value| v["id"].as_i64().unwrap();
    let root = id(app.comment(&li, post, "第一条", None).await);
    let other = id(app.comment(&wang, post, "另一条", None).await);
    let r1 = id(app.comment(&wang, post, "回复李四", Some(root)).await);
    let elsewhere = id(app.comment(&li, post, "回复王五", Some(other)).await);
    let r2 = id(app.comment(&zhang, post, "回复王五的回复", Some(r1)).await);
    let r3 = id(app.comment(&li, post, "再回复", Some(root)).await);
    let r4 = id(app.comment(&wang, post, "回复张三", Some(r2)).await);

    // Oldest first, nested replies in the same thread, none of another.
    for limit in [1, 2, 3, 20] {
        assert_eq!(
            whole_thread(&app, root, None, limit).await,
            vec![r1, r2, r3, r4],
            "pages of {limit}"
        );
    }
    assert_eq!(whole_thread(&app, other, None, 20).await, vec![elsewhere]);
    // A reply's thread is the one it is in.
    assert_eq!(
        whole_thread(&app, r2, Some(&li.token), 20).await,
        vec![r1, r2, r3, r4]
    );
    // In the comment shape, with whom each answers.
    let (_, page) = app
        .get(&format!("/api/v1/comments/{root}/replies?limit=2"), None)
        .await;
    assert_eq!(page["items"][0]["replyTo"]["commentId"], root);
    assert_eq!(page["items"][1]["replyTo"]["commentId"], r1);
    assert_eq!(page["items"][1]["replyTo"]["uid"], wang.uid);
    assert_eq!(page["items"][1]["author"]["uid"], zhang.uid);
    assert!(page["serverTime"].as_i64().is_some());

    // A deleted reply leaves the thread; its own replies stay in it.
    let (s, _) = app
        .delete(&format!("/api/v1/comments/{r2}"), Some(&zhang.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    assert_eq!(whole_thread(&app, root, None, 2).await, vec![r1, r3, r4]);
    // A deleted comment has no thread to show, nor does one never made.
    let (s, _) = app
        .delete(&format!("/api/v1/comments/{root}"), Some(&li.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    let gone = app
        .get(&format!("/api/v1/comments/{root}/replies"), None)
        .await;
    assert_problem(&gone, 404, "not_found");
    let never = app
        .get("/api/v1/comments/1000000000000001/replies", None)
        .await;
    assert_problem(&never, 404, "not_found");
    // Not an id: no such comment, as everywhere an id is in the path.
    let bad = app.get("/api/v1/comments/x/replies", None).await;
    assert_problem(&bad, 404, "not_found");
    let too_many = app
        .get(
            &format!("/api/v1/comments/{other}/replies?limit=100000"),
            None,
        )
        .await;
    assert_problem(&too_many, 400, "invalid_input");
}

#[tokio::test]
async fn a_reply_thread_shows_each_viewer_only_what_they_may_see() {
    use crate::helpers::follow;
    let app = spawn_app().await;
    let zhang = app.user("zhangsan").await;
    let li = app.user("lisi").await;
    let wang = app.user("wangwu").await;
    let stranger = app.user("stranger").await;
    // Li and Wang are Zhang's friends, not each other's.
    for friend in [&li, &wang] {
        follow(&app, &zhang, friend).await;
        follow(&app, friend, &zhang).await;
    }
    let (s, created) = app
        .post(
            "/api/v1/posts",
            Some(&zhang.token),
            json!({"category": "TEXT", "content": "只给朋友看", "visibility": "friends"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{created}");
    let post = created["id"].as_i64().unwrap();
    let id = |v: serde_json::Value| v["id"].as_i64().unwrap();
    let root = id(app.comment(&zhang, post, "大家好", None).await);
    let by_li = id(app.comment(&li, post, "李四回复", Some(root)).await);
    let by_wang = id(app.comment(&wang, post, "王五回复", Some(root)).await);
    let by_zhang = id(app.comment(&zhang, post, "张三回复李四", Some(by_li)).await);

    // The author sees everyone's; each friend only the author's, their own
    // and their friends' (WeChat's rule), as in the post's comments. A
    // reply names whom it answers, so Zhang's reply to Li is Li's business
    // too: Wang, a stranger to Li, sees neither.
    let all = vec![by_li, by_wang, by_zhang];
    assert_eq!(whole_thread(&app, root, Some(&zhang.token), 2).await, all);
    assert_eq!(
        whole_thread(&app, root, Some(&li.token), 2).await,
        vec![by_li, by_zhang]
    );
    assert_eq!(
        whole_thread(&app, root, Some(&wang.token), 2).await,
        vec![by_wang]
    );
    // Nobody outside the audience sees the thread, nor a thread opened
    // from a comment they may not see.
    let never = app
        .get("/api/v1/comments/1000000000000001/replies", None)
        .await;
    for token in [Some(stranger.token.as_str()), None] {
        let hidden = app
            .get(&format!("/api/v1/comments/{root}/replies"), token)
            .await;
        // Word for word the answer for no such comment.
        assert_eq!(
            assert_problem(&hidden, 404, "not_found")["detail"],
            never.1["detail"]
        );
    }
    let not_for_wang = app
        .get(
            &format!("/api/v1/comments/{by_li}/replies"),
            Some(&wang.token),
        )
        .await;
    assert_problem(&not_for_wang, 404, "not_found");
}

/// Hot comments: by the most likes each has had at once, then
/// newest; a client paging while likes come and go never sees a comment
/// twice (a comment's rank never falls, so none drops below a cursor).
#[tokio::test]
async fn hot_comments_rank_by_likes_and_page_without_duplicates() {
    let app = spawn_app().await;
    let author = app.user("hotauthor").await;
    let mut fans = Vec::new();
    for i in 0..4 {
        fans.push(app.user(&format!("hotfan{i}")).await);
    }
    let post = app.text_post(&author, "热评").await;
    let mut c = Vec::new();
    for i in 0..5 {
        c.push(
            app.comment(&author, post, &format!("c{i}"), None).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    let like = |who: usize, comment: i64, on: bool| {
        let token = fans[who].token.clone();
        let app = &app;
        async move {
            let path = format!("/api/v1/comments/{comment}/like");
            let (s, r) = if on {
                app.put(&path, Some(&token)).await
            } else {
                app.delete(&path, Some(&token)).await
            };
            assert_eq!(s.as_u16(), 200, "{r}");
        }
    };
    // c2: 3 likes, c0: 2, c4: 1, c1 and c3: none.
    for (comment, likers) in [(c[2], 3), (c[0], 2), (c[4], 1)] {
        for who in 0..likers {
            like(who, comment, true).await;
        }
    }
    let page = |cursor: String| {
        let app = &app;
        async move {
            let (s, p) = app
                .get(
                    &format!("/api/v1/posts/{post}/comments?sort=hot&limit=2&cursor={cursor}"),
                    None,
                )
                .await;
            assert_eq!(s.as_u16(), 200, "{p}");
            (
                ids(p["items"].as_array().unwrap()),
                p["nextCursor"].as_str().map(String::from),
            )
        }
    };
    let (first, next) = page(String::new()).await;
    assert_eq!(first, vec![c[2], c[0]]);
    // Meanwhile c0 loses its likes and c3 gains three.
    like(0, c[0], false).await;
    like(1, c[0], false).await;
    for who in 0..3 {
        like(who, c[3], true).await;
    }
    let mut seen = first.clone();
    let mut cursor = next;
    while let Some(at) = cursor {
        let (items, next) = page(at).await;
        seen.extend(items);
        cursor = next;
    }
    let mut distinct = seen.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        seen.len(),
        "a comment shown twice: {seen:?}"
    );
    // Below the first page's cursor, in order: c4 (1), c1 (0). c3 rose
    // above the cursor while paging, so that reader passed it.
    assert_eq!(seen, vec![c[2], c[0], c[4], c[1]]);
    // A fresh read ranks by the most likes each has had: c3 and c2 (3, the
    // newer first), c0 (2 once, none now), c4, c1.
    let (fresh, _) = page(String::new()).await;
    assert_eq!(fresh, vec![c[3], c[2]]);
    let mut all = Vec::new();
    let mut cursor = Some(String::new());
    while let Some(at) = cursor {
        let (items, next) = page(at).await;
        all.extend(items);
        cursor = next;
    }
    assert_eq!(all, vec![c[3], c[2], c[0], c[4], c[1]]);

    // A cursor goes on in its own order, whatever `sort` says.
    let (_, newest) = app
        .get(&format!("/api/v1/posts/{post}/comments?limit=1"), None)
        .await;
    assert_eq!(ids(newest["items"].as_array().unwrap()), vec![c[4]]);
    let newest_cursor = newest["nextCursor"].as_str().unwrap().to_string();
    let (_, next) = app
        .get(
            &format!("/api/v1/posts/{post}/comments?sort=hot&limit=1&cursor={newest_cursor}"),
            None,
        )
        .await;
    assert_eq!(ids(next["items"].as_array().unwrap()), vec![c[3]]);
    for bad in [
        "sort=best",
        "cursor=h1",
        "cursor=hz.",
        "sort=hot&cursor=x1.2",
    ] {
        assert_problem(
            &app.get(&format!("/api/v1/posts/{post}/comments?{bad}"), None)
                .await,
            400,
            "invalid_input",
        );
    }
}
