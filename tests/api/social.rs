use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_problem, spawn_app, TestApp, User};

async fn follow(app: &TestApp, who: &User, whom: &User) {
    let (s, r) = app
        .put(
            &format!("/api/v1/users/{}/follow", whom.uid),
            Some(&who.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert_eq!(r, json!({"following": true}));
}

fn uids(page: &serde_json::Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["uid"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn following_is_idempotent_and_counted_and_listed() {
    let app = spawn_app().await;
    let a = app.user("alice").await;
    let b = app.user("bob").await;
    let c = app.user("carol").await;
    follow(&app, &a, &b).await;
    follow(&app, &a, &b).await;
    follow(&app, &c, &b).await;
    follow(&app, &b, &a).await;
    let (_, pb) = app
        .get(&format!("/api/v1/users/{}", b.uid), Some(&a.token))
        .await;
    assert_eq!(
        (pb["followersCount"].as_i64(), pb["followingCount"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (pb["following"].as_bool(), pb["followedBy"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(pb["nickName"], "bob昵称");
    let (_, followers) = app
        .get(&format!("/api/v1/users/{}/followers?limit=1", b.uid), None)
        .await;
    assert_eq!(uids(&followers), vec![c.uid], "newest follower first");
    let next = followers["nextCursor"].as_str().unwrap();
    let (_, rest) = app
        .get(
            &format!("/api/v1/users/{}/followers?limit=1&cursor={next}", b.uid),
            None,
        )
        .await;
    assert_eq!(uids(&rest), vec![a.uid]);
    assert_eq!(rest["nextCursor"], serde_json::Value::Null);
    let (_, friends) = app
        .get(&format!("/api/v1/users/{}/friends", b.uid), None)
        .await;
    assert_eq!(
        uids(&friends),
        vec![a.uid],
        "carol follows bob but bob does not follow her"
    );

    let (s, r) = app
        .delete(&format!("/api/v1/users/{}/follow", b.uid), Some(&a.token))
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"following": false})));
    let (s, _) = app
        .delete(&format!("/api/v1/users/{}/follow", b.uid), Some(&a.token))
        .await;
    assert_eq!(s.as_u16(), 200, "unfollowing twice is fine");
    let (_, friends) = app
        .get(&format!("/api/v1/users/{}/friends", b.uid), None)
        .await;
    assert_eq!(uids(&friends), Vec::<i64>::new());
    let (_, following) = app
        .get(&format!("/api/v1/users/{}/following", a.uid), None)
        .await;
    assert_eq!(uids(&following), Vec::<i64>::new());

    let r = app
        .put(&format!("/api/v1/users/{}/follow", a.uid), Some(&a.token))
        .await;
    assert_problem(&r, 409, "conflict");
    assert_problem(
        &app.put("/api/v1/users/1000000000000001/follow", Some(&a.token))
            .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn friends_pages_walk_every_mutual_follow_once() {
    let app = spawn_app().await;
    let me = app.user("center").await;
    let mut mutual = Vec::new();
    for i in 0..7 {
        let u = app.user(&format!("ring{i}")).await;
        follow(&app, &me, &u).await;
        if i % 2 == 0 {
            follow(&app, &u, &me).await;
            mutual.push(u.uid);
        }
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let (s, page) = app
            .get(
                &format!("/api/v1/users/{}/friends?limit=2&cursor={cursor}", me.uid),
                None,
            )
            .await;
        assert_eq!(s.as_u16(), 200, "{page}");
        seen.extend(uids(&page));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    mutual.reverse();
    assert_eq!(seen, mutual);
}

/// Who sees which audience: author, friend, follower, stranger, blocked, anonymous.
#[tokio::test]
async fn the_visibility_matrix() {
    let app = spawn_app().await;
    let author = app.user("author").await;
    let friend = app.user("friend").await;
    let follower = app.user("follower").await;
    let stranger = app.user("stranger").await;
    let blocked = app.user("blocked").await;
    follow(&app, &friend, &author).await;
    follow(&app, &author, &friend).await;
    follow(&app, &follower, &author).await;
    follow(&app, &blocked, &author).await;
    app.put(
        &format!("/api/v1/users/{}/block", blocked.uid),
        Some(&author.token),
    )
    .await;

    let mut posts = Vec::new();
    for v in ["public", "followers", "friends", "private"] {
        let (_, p) = app
            .post(
                "/api/v1/posts",
                Some(&author.token),
                json!({"category": "TEXT", "content": v, "visibility": v}),
            )
            .await;
        posts.push(p["id"].as_i64().unwrap());
    }
    let viewers: [(&str, Option<&str>, [bool; 4]); 6] = [
        ("author", Some(&author.token), [true, true, true, true]),
        ("friend", Some(&friend.token), [true, true, true, false]),
        (
            "follower",
            Some(&follower.token),
            [true, true, false, false],
        ),
        (
            "stranger",
            Some(&stranger.token),
            [true, false, false, false],
        ),
        (
            "blocked",
            Some(&blocked.token),
            [false, false, false, false],
        ),
        ("anonymous", None, [true, false, false, false]),
    ];
    for (name, token, expected) in viewers {
        let mut seen = [false; 4];
        for (i, p) in posts.iter().enumerate() {
            let (s, _) = app.get(&format!("/api/v1/posts/{p}"), token).await;
            assert!(s.as_u16() == 200 || s.as_u16() == 404, "{name}: {s}");
            seen[i] = s.as_u16() == 200;
        }
        assert_eq!(
            seen, expected,
            "{name} sees public/followers/friends/private"
        );
        // The author's list agrees with the single reads.
        let (_, list) = app
            .get(&format!("/api/v1/users/{}/posts", author.uid), token)
            .await;
        let listed = list["items"].as_array().map(|a| a.len()).unwrap_or(0);
        assert_eq!(
            listed,
            expected.iter().filter(|x| **x).count(),
            "{name}'s list"
        );
    }
    // The same after the live state is lost and rebuilt from the documents.
    app.lose_live_state().await;
    let (s, _) = app
        .get(&format!("/api/v1/posts/{}", posts[2]), Some(&friend.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    let (s, _) = app
        .get(
            &format!("/api/v1/posts/{}", posts[2]),
            Some(&follower.token),
        )
        .await;
    assert_eq!(s.as_u16(), 404);
}

#[tokio::test]
async fn following_and_unfollowing_change_what_is_visible_at_once() {
    let app = spawn_app().await;
    let a = app.user("writer").await;
    let b = app.user("reader").await;
    let (_, p) = app
        .post(
            "/api/v1/posts",
            Some(&a.token),
            json!({"category": "TEXT", "content": "fans only", "visibility": "followers"}),
        )
        .await;
    let path = format!("/api/v1/posts/{}", p["id"]);
    assert_eq!(app.get(&path, Some(&b.token)).await.0.as_u16(), 404);
    follow(&app, &b, &a).await;
    assert_eq!(app.get(&path, Some(&b.token)).await.0.as_u16(), 200);
    app.delete(&format!("/api/v1/users/{}/follow", a.uid), Some(&b.token))
        .await;
    assert_eq!(app.get(&path, Some(&b.token)).await.0.as_u16(), 404);
}

#[tokio::test]
async fn blocking_cuts_follows_both_ways_and_hides_each_from_the_other() {
    let app = spawn_app().await;
    let a = app.user("blocker").await;
    let b = app.user("pest").await;
    follow(&app, &a, &b).await;
    follow(&app, &b, &a).await;
    let post = app.text_post(&a, "public but not for pests").await;
    let c = app.comment(&b, post, "pest was here", None).await;
    let pest_post = app.text_post(&b, "the pest's own").await;
    app.put(&format!("/api/v1/posts/{post}/like"), Some(&b.token))
        .await;

    let (s, r) = app
        .put(&format!("/api/v1/users/{}/block", b.uid), Some(&a.token))
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"blocked": true})));
    let (_, pa) = app.get(&format!("/api/v1/users/{}", a.uid), None).await;
    assert_eq!(
        (pa["followersCount"].as_i64(), pa["followingCount"].as_i64()),
        (Some(0), Some(0))
    );
    // b no longer sees a, a's post, or a's profile.
    assert_problem(
        &app.get(&format!("/api/v1/posts/{post}"), Some(&b.token))
            .await,
        404,
        "not_found",
    );
    assert_problem(
        &app.get(&format!("/api/v1/users/{}", a.uid), Some(&b.token))
            .await,
        404,
        "not_found",
    );
    assert_problem(
        &app.put(&format!("/api/v1/users/{}/follow", a.uid), Some(&b.token))
            .await,
        404,
        "not_found",
    );
    // a still finds b's profile, marked blocked, to undo it; not b's posts.
    let (s, pb) = app
        .get(&format!("/api/v1/users/{}", b.uid), Some(&a.token))
        .await;
    assert_eq!(
        (
            s.as_u16(),
            &pb["blocking"],
            &pb["following"],
            &pb["followedBy"]
        ),
        (200, &json!(true), &json!(false), &json!(false)),
        "{pb}"
    );
    let (s, album) = app
        .get(&format!("/api/v1/users/{}/posts", b.uid), Some(&a.token))
        .await;
    let shown = album["items"].as_array().map_or(0, |i| i.len());
    assert!(s.as_u16() == 404 || shown == 0, "{s} {album}");
    assert_problem(
        &app.get(&format!("/api/v1/posts/{pest_post}"), Some(&a.token))
            .await,
        404,
        "not_found",
    );
    let (s, _) = app
        .get(
            &format!("/api/v1/users/{}/followers", b.uid),
            Some(&a.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    // b blocking back does not open a's profile to b.
    app.put(&format!("/api/v1/users/{}/block", a.uid), Some(&b.token))
        .await;
    for path in ["", "/followers"] {
        assert_problem(
            &app.get(&format!("/api/v1/users/{}{path}", a.uid), Some(&b.token))
                .await,
            404,
            "not_found",
        );
    }
    app.delete(&format!("/api/v1/users/{}/block", a.uid), Some(&b.token))
        .await;
    // Nor follows or mutes b without undoing the block first.
    for action in ["follow", "mute"] {
        assert_problem(
            &app.put(&format!("/api/v1/users/{}/{action}", b.uid), Some(&a.token))
                .await,
            409,
            "conflict",
        );
    }
    // a no longer sees b's comment or like on a's own post.
    let (_, p) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&a.token))
        .await;
    assert!(
        p["comments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["id"] != c["id"]),
        "{p}"
    );
    assert!(
        p["likes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["user"]["uid"] != b.uid),
        "{p}"
    );
    // Others still see everything.
    let (_, anon) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(anon["comments"][0]["id"], c["id"]);

    let (s, r) = app
        .delete(&format!("/api/v1/users/{}/block", b.uid), Some(&a.token))
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"blocked": false})));
    let (_, pb) = app
        .get(&format!("/api/v1/users/{}", b.uid), Some(&a.token))
        .await;
    assert_eq!(pb["blocking"], json!(false), "{pb}");
    assert_eq!(
        app.get(&format!("/api/v1/posts/{post}"), Some(&b.token))
            .await
            .0
            .as_u16(),
        200
    );
    let r = app
        .call(
            Method::PUT,
            &format!("/api/v1/users/{}/block", a.uid),
            Some(&a.token),
            None,
        )
        .await;
    assert_problem(&r, 409, "conflict");
}

async fn befriend(app: &TestApp, a: &User, b: &User) {
    follow(app, a, b).await;
    follow(app, b, a).await;
}

/// WeChat's rule for friends-only posts: each viewer sees the likes and
/// comments of their own friends (and their own), and the counts follow.
#[tokio::test]
async fn friends_only_posts_show_each_viewer_their_friends_interactions() {
    let app = spawn_app().await;
    let a = app.user("author").await;
    let b = app.user("bfriend").await;
    let c = app.user("cfriend").await;
    let d = app.user("dfriend").await;
    befriend(&app, &a, &b).await;
    befriend(&app, &a, &c).await;
    befriend(&app, &a, &d).await;
    befriend(&app, &b, &c).await;
    // d may reply to c only as c's friend: replying needs reading.
    befriend(&app, &c, &d).await;
    let (_, post) = app
        .post(
            "/api/v1/posts",
            Some(&a.token),
            json!({"category": "TEXT", "content": "朋友可见", "visibility": "friends"}),
        )
        .await;
    let p = post["id"].as_i64().unwrap();
    for u in [&b, &c, &d] {
        app.put(&format!("/api/v1/posts/{p}/like"), Some(&u.token))
            .await;
    }
    let cc = app.comment(&c, p, "from c", None).await["id"]
        .as_i64()
        .unwrap();
    let dr = app.comment(&d, p, "d replies to c", Some(cc)).await["id"]
        .as_i64()
        .unwrap();

    let view = |v: serde_json::Value| {
        let likers: Vec<i64> = v["likes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["user"]["uid"].as_i64().unwrap())
            .collect();
        let comments: Vec<i64> = v["comments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_i64().unwrap())
            .collect();
        (
            v["likeCount"].as_i64().unwrap(),
            likers,
            v["commentCount"].as_i64().unwrap(),
            comments,
            v,
        )
    };
    let (likes, likers, count, comments, _) = view(
        app.get(&format!("/api/v1/posts/{p}"), Some(&a.token))
            .await
            .1,
    );
    assert_eq!(
        (likes, likers.len(), count, comments),
        (3, 3, 2, vec![dr, cc]),
        "the author sees everything"
    );

    let (likes, mut likers, count, comments, raw) = view(
        app.get(&format!("/api/v1/posts/{p}"), Some(&b.token))
            .await
            .1,
    );
    likers.sort_unstable();
    let mut expected = vec![b.uid, c.uid];
    expected.sort_unstable();
    assert_eq!(
        (likes, likers, count, comments),
        (2, expected, 1, vec![cc]),
        "b sees b and c, not d"
    );
    assert_eq!(
        raw["comments"][0]["commentCount"], 0,
        "d's reply is hidden from b"
    );

    let (likes, mut likers, count, comments, _) = view(
        app.get(&format!("/api/v1/posts/{p}"), Some(&d.token))
            .await
            .1,
    );
    likers.sort_unstable();
    let mut expected = vec![c.uid, d.uid];
    expected.sort_unstable();
    assert_eq!(
        (likes, likers, count, comments),
        (2, expected, 2, vec![dr, cc]),
        "d sees c and d, not b"
    );

    let (_, list) = app
        .get(&format!("/api/v1/posts/{p}/comments"), Some(&b.token))
        .await;
    let ids: Vec<i64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![cc]);
    assert_eq!(
        list["items"][0]["commentCount"], 0,
        "the list counts d's reply as hidden from b too"
    );
    let (_, list) = app
        .get(&format!("/api/v1/posts/{p}/likes"), Some(&d.token))
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn follows_per_account_are_capped() {
    let mut settings = crate::helpers::test_settings();
    settings.max_following = 2;
    let app = crate::helpers::spawn_app_with(settings).await;
    let fan = app.user("collector").await;
    let stars: Vec<User> =
        futures_util::future::join_all((0..3).map(|i| app.user_owned(format!("star{i}")))).await;
    follow(&app, &fan, &stars[0]).await;
    follow(&app, &fan, &stars[1]).await;
    let third = app
        .put(
            &format!("/api/v1/users/{}/follow", stars[2].uid),
            Some(&fan.token),
        )
        .await;
    assert_problem(&third, 409, "conflict");
    // Following again one already followed is fine; after an unfollow, room.
    follow(&app, &fan, &stars[1]).await;
    app.delete(
        &format!("/api/v1/users/{}/follow", stars[0].uid),
        Some(&fan.token),
    )
    .await;
    follow(&app, &fan, &stars[2]).await;
    let (_, page) = app
        .get(
            &format!("/api/v1/users/{}/following", fan.uid),
            Some(&fan.token),
        )
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn people_are_found_by_their_exact_username_only() {
    let app = spawn_app().await;
    let finder = app.user("finder").await;
    let found = app.user("Found.One").await;
    let (s, p) = app
        .get("/api/v1/users?username=found.one", Some(&finder.token))
        .await;
    assert_eq!(s.as_u16(), 200, "{p}");
    assert_eq!(p["uid"], found.uid);
    assert_eq!(p["nickName"], "Found.One昵称");
    assert_eq!(p["following"], false);
    follow(&app, &finder, &found).await;
    let (_, p) = app
        .get("/api/v1/users?username=FOUND.ONE", Some(&finder.token))
        .await;
    assert_eq!(p["following"], true);

    // No prefix search, no listing, no anonymous lookups.
    assert_problem(
        &app.get("/api/v1/users?username=found", Some(&finder.token))
            .await,
        404,
        "not_found",
    );
    let bad = app
        .get("/api/v1/users?username=no%20spaces", Some(&finder.token))
        .await;
    assert_eq!(
        assert_problem(&bad, 400, "invalid_input")["field"],
        "username"
    );
    assert_problem(
        &app.get("/api/v1/users", Some(&finder.token)).await,
        400,
        "invalid_input",
    );
    assert_problem(
        &app.get("/api/v1/users?username=found.one", None).await,
        401,
        "unauthorized",
    );
    // Someone who blocked the caller is not there for them.
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/block", finder.uid),
            Some(&found.token),
        )
        .await;
    assert!(s.is_success());
    assert_problem(
        &app.get("/api/v1/users?username=found.one", Some(&finder.token))
            .await,
        404,
        "not_found",
    );
}
