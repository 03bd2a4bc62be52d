use serde_json::{json, Value};

use reqwest::Method;

use crate::helpers::{assert_problem, every_item, ids, settle, spawn_app, TestApp};

#[tokio::test]
async fn liking_twice_is_one_like_and_unliking_twice_is_fine() {
    let app = spawn_app().await;
    let a = app.user("liked").await;
    let b = app.user("liker").await;
    let post = app.text_post(&a, "like me").await;
    let path = format!("/api/v1/posts/{post}/like");
    for _ in 0..2 {
        let (s, state) = app.put(&path, Some(&b.token)).await;
        assert_eq!(s.as_u16(), 200);
        assert_eq!(state, json!({"liked": true, "likeCount": 1}));
    }
    let (_, state) = app.put(&path, Some(&a.token)).await;
    assert_eq!(state, json!({"liked": true, "likeCount": 2}));
    for _ in 0..2 {
        let (s, state) = app.delete(&path, Some(&b.token)).await;
        assert_eq!(s.as_u16(), 200);
        assert_eq!(state, json!({"liked": false, "likeCount": 1}));
    }
    let (_, p) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&b.token))
        .await;
    assert_eq!(
        (p["likeCount"].as_i64(), p["likedByMe"].as_bool()),
        (Some(1), Some(false))
    );
    assert_eq!(p["likes"][0]["user"]["uid"], a.uid);
}

#[tokio::test]
async fn eighty_concurrent_likes_by_forty_users_are_forty() {
    let app = spawn_app().await;
    let author = app.user("popular").await;
    let post = app.text_post(&author, "viral").await;
    let mut users = Vec::new();
    for i in 0..40 {
        users.push(app.user(&format!("fan{i:02}")).await);
    }
    let path = format!("/api/v1/posts/{post}/like");
    let requests = users
        .iter()
        .chain(users.iter())
        .map(|u| app.put(&path, Some(&u.token)));
    let results = futures_util::future::join_all(requests).await;
    assert!(
        results.iter().all(|(s, _)| s.as_u16() == 200),
        "{results:?}"
    );
    let (_, p) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(p["likeCount"], 40);
    assert_eq!(p["likes"].as_array().unwrap().len(), 20, "the latest 20");
    // The live count agrees with the documents after the live state is lost.
    app.lose_live_state().await;
    let (_, p) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(p["likeCount"], 40);
    let mut all = Vec::new();
    let mut cursor = String::new();
    loop {
        let (_, page) = app
            .get(
                &format!("/api/v1/posts/{post}/likes?limit=15&cursor={cursor}"),
                None,
            )
            .await;
        all.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["user"]["uid"].as_i64().unwrap()),
        );
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 40);
}

#[tokio::test]
async fn comment_likes_show_per_viewer_in_the_post() {
    let app = spawn_app().await;
    let a = app.user("poster").await;
    let b = app.user("commenter").await;
    let post = app.text_post(&a, "p").await;
    let c = app.comment(&b, post, "nice", None).await["id"]
        .as_i64()
        .unwrap();
    let (s, state) = app
        .put(&format!("/api/v1/comments/{c}/like"), Some(&a.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(state, json!({"liked": true, "likeCount": 1}));
    let (_, as_a) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&a.token))
        .await;
    let (_, as_b) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&b.token))
        .await;
    assert_eq!(as_a["comments"][0]["likeCount"], 1);
    assert_eq!(as_a["comments"][0]["likedByMe"], true);
    assert_eq!(as_b["comments"][0]["likedByMe"], false);
    let (_, state) = app
        .delete(&format!("/api/v1/comments/{c}/like"), Some(&a.token))
        .await;
    assert_eq!(state, json!({"liked": false, "likeCount": 0}));
    assert_problem(
        &app.put("/api/v1/comments/1000000000000001/like", Some(&a.token))
            .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn racing_likes_and_unlikes_leave_the_live_state_equal_to_the_documents() {
    let app = spawn_app().await;
    let a = app.user("target").await;
    let post = app.text_post(&a, "tap tap").await;
    let mut users = Vec::new();
    for i in 0..6 {
        users.push(app.user(&format!("tapper{i}")).await);
    }
    let path = format!("/api/v1/posts/{post}/like");
    // Every user double-taps: like and unlike race, several rounds. Each is
    // answered 200 with the state it left, which its twin may have changed
    // already.
    for _ in 0..3 {
        let requests = users.iter().flat_map(|u| {
            [
                app.call(reqwest::Method::PUT, &path, Some(&u.token), None),
                app.call(reqwest::Method::DELETE, &path, Some(&u.token), None),
            ]
        });
        let answers = futures_util::future::join_all(requests).await;
        for (s, state) in &answers {
            assert_eq!(s.as_u16(), 200, "{state}");
            assert!(state["liked"].is_boolean(), "{state}");
            assert!(state["likeCount"].as_u64().unwrap() <= 6, "{state}");
        }
    }
    // Then a last tap each, all at once: the even users like, the odd
    // ones unlike, so the end is known: three likes, by the even users,
    // and each answer is what its own request did.
    let last = users.iter().enumerate().map(|(i, u)| {
        let method = if i % 2 == 0 {
            reqwest::Method::PUT
        } else {
            reqwest::Method::DELETE
        };
        app.call(method, &path, Some(&u.token), None)
    });
    for (i, (s, state)) in futures_util::future::join_all(last)
        .await
        .iter()
        .enumerate()
    {
        assert_eq!(s.as_u16(), 200, "{state}");
        assert_eq!(state["liked"], i % 2 == 0, "{state}");
    }
    let expected: Vec<(Value, Value)> = (0..users.len())
        .map(|i| (json!(3), json!(i % 2 == 0)))
        .collect();
    let mut live = Vec::new();
    for u in &users {
        let (s, p) = app
            .get(&format!("/api/v1/posts/{post}"), Some(&u.token))
            .await;
        assert_eq!(s.as_u16(), 200, "{p}");
        live.push((p["likeCount"].clone(), p["likedByMe"].clone()));
    }
    assert_eq!(live, expected, "the live state");
    app.lose_live_state().await;
    let mut truth = Vec::new();
    for u in &users {
        let (s, p) = app
            .get(&format!("/api/v1/posts/{post}"), Some(&u.token))
            .await;
        assert_eq!(s.as_u16(), 200, "{p}");
        truth.push((p["likeCount"].clone(), p["likedByMe"].clone()));
    }
    assert_eq!(truth, expected, "the documents");
}

/// Document and live round trips of one request, once background work has
/// settled.
async fn trips(app: &TestApp, f: impl std::future::Future<Output = ()>) -> (u64, u64) {
    settle(app).await;
    let before = app.ctx.round_trips.snapshot();
    f.await;
    let after = app.ctx.round_trips.snapshot();
    (after.0 - before.0, after.1 - before.1)
}

#[tokio::test]
async fn a_repeated_like_or_unlike_writes_nothing_and_keeps_the_post_cached() {
    let app = spawn_app().await;
    let author = app.user("popular").await;
    let fan = app.user("clicker").await;
    let post = app.text_post(&author, "like me").await;
    let like = format!("/api/v1/posts/{post}/like");
    assert_eq!(app.put(&like, Some(&fan.token)).await.1["likeCount"], 1);
    for (method, liked) in [
        (Method::PUT, true),
        (Method::PUT, true),
        (Method::DELETE, false),
        (Method::DELETE, false),
    ] {
        let (docs, _) = trips(&app, async {
            let (s, state) = app
                .call(method.clone(), &like, Some(&fan.token), None)
                .await;
            assert_eq!(s.as_u16(), 200, "{state}");
            assert_eq!(state["liked"], liked, "{state}");
        })
        .await;
        // The like itself, and nothing rebuilt: the likers set stayed.
        assert_eq!(docs, 1, "{method} {liked}: {docs} document round trips");
    }
}

#[tokio::test]
async fn a_retried_like_repairs_a_live_step_that_was_lost() {
    let app = spawn_app().await;
    let author = app.user("poster2").await;
    let fan = app.user("retrier").await;
    let post = app.text_post(&author, "p").await;
    let (_, seen) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&fan.token))
        .await;
    assert_eq!(seen["likeCount"], 0);
    // A like whose document was written but whose live step never ran (the
    // instance died in between): the cached set does not know it.
    let doc = moments::store::LikeDoc::new(
        moments::ids::next_id(),
        moments::store::LikeKind::Post,
        post,
        fan.uid,
    );
    assert!(app.ctx.docs.insert_like(&doc, 100).await.unwrap());
    let (_, stale) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&fan.token))
        .await;
    assert_eq!(stale["likedByMe"], false, "the cache is stale, as set up");
    // The client retries: the answer and every read after it are right.
    let (_, state) = app
        .put(&format!("/api/v1/posts/{post}/like"), Some(&fan.token))
        .await;
    assert_eq!(
        (state["liked"].as_bool(), state["likeCount"].as_i64()),
        (Some(true), Some(1))
    );
    let (_, fixed) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&fan.token))
        .await;
    assert_eq!(
        (fixed["likedByMe"].as_bool(), fixed["likeCount"].as_i64()),
        (Some(true), Some(1))
    );
}

/// Every post id of the caller's liked posts, walking pages of `limit`.
async fn whole_liked(app: &TestApp, token: &str, limit: usize) -> Vec<i64> {
    let posts = every_item(app, "/api/v1/me/likes", Some(token), limit).await;
    for p in &posts {
        assert_eq!(p["likedByMe"], true, "{p}");
    }
    ids(&posts)
}

#[tokio::test]
async fn my_likes_list_the_posts_i_liked_and_may_still_see_newest_first() {
    let app = spawn_app().await;
    let me = app.user("liker").await;
    let a = app.user("author_a").await;
    let b = app.user("author_b").await;
    let posts = [
        app.text_post(&a, "one").await,
        app.text_post(&b, "two").await,
        app.text_post(&a, "three").await,
        app.text_post(&b, "four").await,
        app.text_post(&a, "five").await,
    ];
    // Liked in this order, with a comment like in between (not listed).
    let comment = app.comment(&a, posts[0], "a comment", None).await["id"]
        .as_i64()
        .unwrap();
    for (i, p) in [posts[2], posts[0], posts[4], posts[1], posts[3]]
        .iter()
        .enumerate()
    {
        let (s, _) = app
            .put(&format!("/api/v1/posts/{p}/like"), Some(&me.token))
            .await;
        assert_eq!(s.as_u16(), 200);
        if i == 2 {
            let (s, _) = app
                .put(&format!("/api/v1/comments/{comment}/like"), Some(&me.token))
                .await;
            assert_eq!(s.as_u16(), 200);
        }
    }
    let newest_first = vec![posts[3], posts[1], posts[4], posts[0], posts[2]];
    for limit in [1, 2, 5, 20] {
        assert_eq!(whole_liked(&app, &me.token, limit).await, newest_first);
    }

    // Unliked, deleted, or no longer visible (its author blocked me): gone.
    let (s, _) = app
        .delete(&format!("/api/v1/posts/{}/like", posts[1]), Some(&me.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    let (s, _) = app
        .delete(&format!("/api/v1/posts/{}", posts[4]), Some(&a.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    let (s, _) = app
        .put(&format!("/api/v1/users/{}/block", me.uid), Some(&b.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    for limit in [1, 3] {
        assert_eq!(
            whole_liked(&app, &me.token, limit).await,
            vec![posts[0], posts[2]]
        );
    }
    // Mine only, and only mine to read.
    assert!(whole_liked(&app, &a.token, 20).await.is_empty());
    let anonymous = app.get("/api/v1/me/likes", None).await;
    assert_problem(&anonymous, 401, "unauthorized");
}

/// Every post id of the caller's favorites, walking pages of `limit`.
async fn whole_favorites(app: &TestApp, token: &str, limit: usize) -> Vec<i64> {
    ids(&every_item(app, "/api/v1/me/favorites", Some(token), limit).await)
}

#[tokio::test]
async fn favorites_are_kept_once_listed_newest_first_and_drop_what_i_may_not_see() {
    let app = spawn_app().await;
    let me = app.user("keeper").await;
    let a = app.user("author_a").await;
    let b = app.user("author_b").await;
    let posts = [
        app.text_post(&a, "one").await,
        app.text_post(&b, "two").await,
        app.text_post(&a, "three").await,
        app.text_post(&b, "four").await,
    ];
    for p in [posts[1], posts[3], posts[0], posts[2], posts[0]] {
        let (s, state) = app
            .put(&format!("/api/v1/posts/{p}/favorite"), Some(&me.token))
            .await;
        assert_eq!(s.as_u16(), 200, "{state}");
        assert_eq!(state["favorited"], true);
    }
    // Kept twice is kept once, at the first time.
    for limit in [1, 3, 20] {
        assert_eq!(
            whole_favorites(&app, &me.token, limit).await,
            vec![posts[2], posts[0], posts[3], posts[1]]
        );
    }
    // Expanded for me, like any post I read.
    let (_, page) = app
        .get("/api/v1/me/favorites?limit=1", Some(&me.token))
        .await;
    assert_eq!(page["items"][0]["author"]["uid"], a.uid);
    assert_eq!(page["items"][0]["content"], "three");

    // Dropped, deleted, or no longer visible (its author blocked me): gone;
    // unblocked, it is back.
    let (s, state) = app
        .delete(
            &format!("/api/v1/posts/{}/favorite", posts[3]),
            Some(&me.token),
        )
        .await;
    assert_eq!(
        (s.as_u16(), state["favorited"].as_bool()),
        (200, Some(false))
    );
    let (s, _) = app
        .delete(
            &format!("/api/v1/posts/{}/favorite", posts[3]),
            Some(&me.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "dropping one not kept is fine");
    let (s, _) = app
        .delete(&format!("/api/v1/posts/{}", posts[0]), Some(&a.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    let block = format!("/api/v1/users/{}/block", me.uid);
    assert_eq!(app.put(&block, Some(&b.token)).await.0.as_u16(), 200);
    assert_eq!(whole_favorites(&app, &me.token, 1).await, vec![posts[2]]);
    assert_eq!(app.delete(&block, Some(&b.token)).await.0.as_u16(), 200);
    assert_eq!(
        whole_favorites(&app, &me.token, 1).await,
        vec![posts[2], posts[1]]
    );

    // Only a post I may see can be kept; nobody else sees my favorites.
    let (s, created) = app
        .post(
            "/api/v1/posts",
            Some(&a.token),
            json!({"category": "TEXT", "content": "mine alone", "visibility": "private"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{created}");
    let private = created["id"].as_i64().unwrap();
    let refused = app
        .put(
            &format!("/api/v1/posts/{private}/favorite"),
            Some(&me.token),
        )
        .await;
    assert_problem(&refused, 404, "not_found");
    assert!(whole_favorites(&app, &a.token, 20).await.is_empty());
    let anonymous = app.get("/api/v1/me/favorites", None).await;
    assert_problem(&anonymous, 401, "unauthorized");
    let anonymous = app
        .put(&format!("/api/v1/posts/{}/favorite", posts[2]), None)
        .await;
    assert_problem(&anonymous, 401, "unauthorized");
}

/// A like storm on one post: every like stands at once, and the post
/// document's likes_postid comes to hold them all, newest first, whatever
/// the backend writes it with (at once; from the like index; or in batches
/// from the Redis queue, service/jobs/like_arrays.rs).
#[tokio::test]
async fn a_like_storm_ends_with_every_like_in_the_post_document() {
    let app = crate::helpers::spawn_app().await;
    let author = app.user("stormed").await;
    let post = app.text_post(&author, "viral").await;
    let fans: Vec<_> =
        futures_util::future::join_all((0..12).map(|i| app.user_owned(format!("stormfan{i}"))))
            .await;
    let path = format!("/api/v1/posts/{post}/like");
    let liked =
        futures_util::future::join_all(fans.iter().map(|f| app.put(&path, Some(&f.token)))).await;
    assert!(liked.iter().all(|(s, _)| s.as_u16() == 200), "{liked:?}");
    for f in &fans[..2] {
        let (s, _) = app
            .delete(&format!("/api/v1/posts/{post}/like"), Some(&f.token))
            .await;
        assert_eq!(s.as_u16(), 200);
    }
    let (_, likes) = app
        .get(&format!("/api/v1/posts/{post}/likes?limit=100"), None)
        .await;
    let mut want: Vec<i64> = crate::helpers::ids(likes["items"].as_array().unwrap());
    want.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(want.len(), 10);
    // The array may trail the likes by a batch: wait for it, boundedly.
    let mut array = Vec::new();
    for _ in 0..100 {
        array = app.ctx.docs.posts_by_ids(&[post]).await.unwrap()[0]
            .likes_postid
            .clone();
        if array == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(array, want, "the post document's likes_postid");
}
