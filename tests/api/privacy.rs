//! WeChat's privacy controls through the API: mute (不看他), hide (不让他看),
//! the album window (最近三天 / 一个月 / 半年), labels (标签) and the
//! `only` / `except` audiences (部分可见 / 不给谁看), on every read a post
//! reaches: single reads, feeds, albums, comments, likes.

use serde_json::json;

use crate::helpers::{
    assert_problem, every_item, follow, ids, settle, spawn_app, whole_feed, TestApp, User,
};

async fn friends(app: &TestApp, a: &User, b: &User) {
    follow(app, a, b).await;
    follow(app, b, a).await;
}

/// Whether `viewer` can read the post by itself (200) or is told it does
/// not exist (404).
async fn sees(app: &TestApp, viewer: &User, post: i64) -> bool {
    let (s, body) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&viewer.token))
        .await;
    match s.as_u16() {
        200 => true,
        404 => false,
        other => panic!("{other}: {body}"),
    }
}

async fn album(app: &TestApp, viewer: &User, author: &User) -> Vec<i64> {
    ids(&every_item(
        app,
        &format!("/api/v1/users/{}/posts", author.uid),
        Some(&viewer.token),
        5,
    )
    .await)
}

async fn listed(app: &TestApp, user: &User, path: &str) -> Vec<i64> {
    every_item(app, path, Some(&user.token), 2)
        .await
        .iter()
        .map(|c| c["uid"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_mute_keeps_their_posts_out_of_my_feed_and_nowhere_else() {
    let app = spawn_app().await;
    let me = app.user("muter").await;
    let loud = app.user("loud").await;
    let quiet = app.user("quiet").await;
    follow(&app, &me, &loud).await;
    follow(&app, &me, &quiet).await;
    let noise = app.text_post(&loud, "noise").await;
    let calm = app.text_post(&quiet, "calm").await;
    settle(&app).await;
    assert_eq!(whole_feed(&app, &me, 5).await, vec![calm, noise]);

    for _ in 0..2 {
        let (s, r) = app
            .put(&format!("/api/v1/users/{}/mute", loud.uid), Some(&me.token))
            .await;
        assert_eq!((s.as_u16(), r), (200, json!({"muted": true})));
    }
    assert_eq!(
        whole_feed(&app, &me, 5).await,
        vec![calm],
        "muted twice is muted once"
    );
    // Their album and the post itself stay open to me, and a new post of
    // theirs stays out of my feed too.
    assert_eq!(album(&app, &me, &loud).await, vec![noise]);
    assert!(sees(&app, &me, noise).await);
    let more = app.text_post(&loud, "more noise").await;
    settle(&app).await;
    assert_eq!(whole_feed(&app, &me, 5).await, vec![calm]);
    // Nobody else's feed changes.
    assert_eq!(whole_feed(&app, &loud, 5).await, vec![more, noise]);
    assert_eq!(listed(&app, &me, "/api/v1/me/muted").await, vec![loud.uid]);
    // Losing the live state forgets no mute.
    app.lose_live_state().await;
    assert_eq!(whole_feed(&app, &me, 5).await, vec![calm]);

    let (s, r) = app
        .delete(&format!("/api/v1/users/{}/mute", loud.uid), Some(&me.token))
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"muted": false})));
    assert_eq!(whole_feed(&app, &me, 5).await, vec![more, calm, noise]);
    assert!(listed(&app, &me, "/api/v1/me/muted").await.is_empty());

    assert_problem(
        &app.put(&format!("/api/v1/users/{}/mute", me.uid), Some(&me.token))
            .await,
        409,
        "conflict",
    );
    assert_problem(
        &app.put("/api/v1/users/4242424242424242/mute", Some(&me.token))
            .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn a_hide_keeps_every_post_of_mine_from_them_as_if_private() {
    let app = spawn_app().await;
    let me = app.user("hider").await;
    let them = app.user("nosy").await;
    let other = app.user("welcome").await;
    friends(&app, &me, &them).await;
    friends(&app, &me, &other).await;
    let public = app.text_post(&me, "public").await;
    let for_friends = app
        .post_with(
            &me,
            json!({"category": "TEXT", "content": "friends", "visibility": "friends"}),
        )
        .await;
    settle(&app).await;
    assert_eq!(whole_feed(&app, &them, 5).await, vec![for_friends, public]);

    let said = app.comment(&them, public, "before the hide", None).await["id"]
        .as_i64()
        .unwrap();
    let (s, r) = app
        .put(&format!("/api/v1/users/{}/hide", them.uid), Some(&me.token))
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"hidden": true})));
    // What they said on a post they no longer see is still theirs to delete.
    let (s, _) = app
        .delete(&format!("/api/v1/comments/{said}"), Some(&them.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    let later = app.text_post(&me, "later").await;
    settle(&app).await;
    for post in [public, for_friends, later] {
        assert!(!sees(&app, &them, post).await, "{post}");
        assert!(sees(&app, &other, post).await, "{post}");
        // Nothing on it can be reached either.
        assert_problem(
            &app.put(&format!("/api/v1/posts/{post}/like"), Some(&them.token))
                .await,
            404,
            "not_found",
        );
        assert_problem(
            &app.get(&format!("/api/v1/posts/{post}/comments"), Some(&them.token))
                .await,
            404,
            "not_found",
        );
    }
    assert!(whole_feed(&app, &them, 5).await.is_empty());
    assert!(album(&app, &them, &me).await.is_empty());
    assert_eq!(
        album(&app, &other, &me).await,
        vec![later, for_friends, public]
    );
    // Nothing else changes: they are still friends, and I still see theirs.
    let theirs = app.text_post(&them, "mine to show").await;
    assert!(sees(&app, &me, theirs).await);
    let (_, profile) = app
        .get(&format!("/api/v1/users/{}", me.uid), Some(&them.token))
        .await;
    assert_eq!(
        (
            profile["following"].as_bool(),
            profile["followedBy"].as_bool()
        ),
        (Some(true), Some(true))
    );
    assert_eq!(listed(&app, &me, "/api/v1/me/hidden").await, vec![them.uid]);
    // Only a follower can be hidden from: a stranger is blocked instead, so
    // no stranger can grow the hides every read of theirs loads.
    let stranger = app.user("nofollow").await;
    assert_problem(
        &app.put(
            &format!("/api/v1/users/{}/hide", stranger.uid),
            Some(&me.token),
        )
        .await,
        409,
        "conflict",
    );
    assert!(listed(&app, &them, "/api/v1/me/hidden").await.is_empty());

    // Shown again, the post made while hidden included.
    let (s, r) = app
        .delete(&format!("/api/v1/users/{}/hide", them.uid), Some(&me.token))
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"hidden": false})));
    settle(&app).await;
    assert_eq!(
        whole_feed(&app, &them, 5).await,
        vec![theirs, later, for_friends, public]
    );
    assert!(sees(&app, &them, later).await);
}

/// Stores a post of `author`'s made `days` ago, as an earlier version of
/// the app would have: the API only makes posts now.
async fn old_post(app: &TestApp, author: &User, days: i64) -> i64 {
    let id = moments::ids::next_id();
    let createtime = moments::ids::now_ms() - days * 24 * 3600 * 1000;
    app.ctx
        .docs
        .insert_post(&moments::store::PostDoc::text(
            id,
            author.uid,
            format!("{days} days ago"),
            createtime,
        ))
        .await
        .unwrap();
    id
}

#[tokio::test]
async fn the_album_window_limits_what_others_see_of_my_older_posts() {
    let app = spawn_app().await;
    let me = app.user("window").await;
    let friend = app.user("windowfriend").await;
    let stranger = app.user("windowstranger").await;
    friends(&app, &me, &friend).await;
    let ten_days = old_post(&app, &me, 10).await;
    let sixty_days = old_post(&app, &me, 60).await;
    let today = app.text_post(&me, "today").await;
    let (_, mine) = app.get("/api/v1/me", Some(&me.token)).await;
    assert_eq!(mine["albumWindow"], "all");

    // (window, what others see: today, 10 days, 60 days)
    for (window, shown) in [
        ("3d", [true, false, false]),
        ("1m", [true, true, false]),
        ("6m", [true, true, true]),
        ("all", [true, true, true]),
    ] {
        let (s, me_now) = app
            .call(
                reqwest::Method::PATCH,
                "/api/v1/me",
                Some(&me.token),
                Some(json!({"albumWindow": window})),
            )
            .await;
        assert_eq!((s.as_u16(), &me_now["albumWindow"]), (200, &json!(window)));
        // Albums list newest id first (the old posts were stored last).
        let mut expected: Vec<i64> = [today, ten_days, sixty_days]
            .into_iter()
            .zip(shown)
            .filter(|(_, s)| *s)
            .map(|(p, _)| p)
            .collect();
        expected.sort_unstable_by(|a, b| b.cmp(a));
        for viewer in [&friend, &stranger] {
            assert_eq!(album(&app, viewer, &me).await, expected, "{window}");
            for (post, shown) in [today, ten_days, sixty_days].into_iter().zip(shown) {
                assert_eq!(sees(&app, viewer, post).await, shown, "{window} {post}");
            }
        }
        let (s, anonymous) = app
            .get(&format!("/api/v1/users/{}/posts", me.uid), None)
            .await;
        assert_eq!(s.as_u16(), 200);
        assert_eq!(
            ids(anonymous["items"].as_array().unwrap()),
            expected,
            "{window}"
        );
        // I always see all of mine.
        assert_eq!(
            album(&app, &me, &me).await,
            vec![today, sixty_days, ten_days]
        );
        assert!(sees(&app, &me, sixty_days).await);
    }
    assert_problem(
        &app.call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&me.token),
            Some(json!({"albumWindow": "2w"})),
        )
        .await,
        400,
        "invalid_input",
    );
}

/// For each (who, viewer, sees the only post, sees the except post): the
/// single read, the home feed and the album agree.
async fn check(
    app: &TestApp,
    author: &User,
    (only, except): (i64, i64),
    rows: Vec<(&str, &User, bool, bool)>,
) {
    for (who, viewer, sees_only, sees_except) in rows {
        assert_eq!(sees(app, viewer, only).await, sees_only, "{who}: only");
        assert_eq!(
            sees(app, viewer, except).await,
            sees_except,
            "{who}: except"
        );
        let feed = whole_feed(app, viewer, 5).await;
        assert_eq!(feed.contains(&only), sees_only, "{who}'s feed: only");
        assert_eq!(feed.contains(&except), sees_except, "{who}'s feed: except");
        let shown = album(app, viewer, author).await;
        assert_eq!(shown.contains(&only), sees_only, "{who}'s album: only");
        assert_eq!(
            shown.contains(&except),
            sees_except,
            "{who}'s album: except"
        );
    }
}

async fn label(app: &TestApp, owner: &User, name: &str, members: &[i64]) -> i64 {
    let (s, l) = app
        .post(
            "/api/v1/labels",
            Some(&owner.token),
            json!({"name": name, "members": members}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{l}");
    assert_eq!(l["memberCount"], members.len());
    l["id"].as_i64().unwrap()
}

#[tokio::test]
async fn only_and_except_posts_follow_their_labels_as_they_are_now() {
    let app = spawn_app().await;
    let me = app.user("audience").await;
    let family = app.user("family").await;
    let named = app.user("named").await;
    let colleague = app.user("colleague").await;
    let follower = app.user("justfollows").await;
    for f in [&family, &named, &colleague] {
        friends(&app, &me, f).await;
    }
    follow(&app, &follower, &me).await;
    let fam = label(&app, &me, "家人", &[family.uid]).await;
    let only = app
        .post_with(
            &me,
            json!({"category": "TEXT", "content": "only", "visibility": "only",
               "audience": {"labels": [fam], "uids": [named.uid]}}),
        )
        .await;
    let except = app
        .post_with(
            &me,
            json!({"category": "TEXT", "content": "except", "visibility": "except",
               "audience": {"labels": [fam]}}),
        )
        .await;
    settle(&app).await;
    check(
        &app,
        &me,
        (only, except),
        vec![
            ("family", &family, true, false),
            ("named", &named, true, true),
            ("colleague", &colleague, false, true),
            ("follower", &follower, false, false),
        ],
    )
    .await;
    // The author sees both, with whom they name; nobody else sees that.
    let (_, mine) = app
        .get(&format!("/api/v1/posts/{only}"), Some(&me.token))
        .await;
    assert_eq!(mine["visibility"], "only");
    assert_eq!(
        mine["audience"],
        json!({"labels": [fam], "uids": [named.uid]})
    );
    let (_, theirs) = app
        .get(&format!("/api/v1/posts/{only}"), Some(&family.token))
        .await;
    assert!(theirs.get("audience").is_none(), "{theirs}");

    // A label change applies to the earlier posts at once.
    let (s, changed) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/api/v1/labels/{fam}"),
            Some(&me.token),
            Some(json!({"members": [family.uid, colleague.uid]})),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{changed}");
    assert_eq!(changed["members"], json!([family.uid, colleague.uid]));
    check(
        &app,
        &me,
        (only, except),
        vec![
            ("family", &family, true, false),
            ("colleague", &colleague, true, false),
        ],
    )
    .await;
    // So does its deletion: it names nobody any more.
    let (s, _) = app
        .delete(&format!("/api/v1/labels/{fam}"), Some(&me.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    check(
        &app,
        &me,
        (only, except),
        vec![
            ("family", &family, false, true),
            ("named", &named, true, true),
            ("colleague", &colleague, false, true),
        ],
    )
    .await;
    // What cannot see the post cannot reach it: comments, likes.
    assert_problem(
        &app.post(
            &format!("/api/v1/posts/{only}/comments"),
            Some(&family.token),
            json!({"content": "let me in"}),
        )
        .await,
        404,
        "not_found",
    );
    assert_problem(
        &app.put(
            &format!("/api/v1/posts/{only}/like"),
            Some(&colleague.token),
        )
        .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn labels_hold_friends_and_audiences_name_only_the_authors_labels() {
    let app = spawn_app().await;
    let me = app.user("labeller").await;
    let friend = app.user("labelfriend").await;
    let fan = app.user("labelfan").await;
    let other = app.user("otherlabeller").await;
    friends(&app, &me, &friend).await;
    follow(&app, &fan, &me).await;
    friends(&app, &other, &friend).await;

    let close = label(&app, &me, "close", &[friend.uid]).await;
    let empty = label(&app, &me, "empty", &[]).await;
    let theirs = label(&app, &other, "theirs", &[friend.uid]).await;
    let (s, mine) = app.get("/api/v1/labels", Some(&me.token)).await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(ids(mine["items"].as_array().unwrap()), vec![close, empty]);
    assert_eq!(mine["items"][0]["members"], json!([friend.uid]));

    let refused = assert_problem(
        &app.post(
            "/api/v1/labels",
            Some(&me.token),
            json!({"name": "fans", "members": [fan.uid]}),
        )
        .await,
        422,
        "unprocessable",
    );
    assert_eq!(refused["field"], "members");
    assert!(refused["detail"]
        .as_str()
        .unwrap()
        .contains(&fan.uid.to_string()));
    // Nor can a change add one, and the label keeps its members.
    let refused = assert_problem(
        &app.call(
            reqwest::Method::PATCH,
            &format!("/api/v1/labels/{close}"),
            Some(&me.token),
            Some(json!({"members": [friend.uid, fan.uid]})),
        )
        .await,
        422,
        "unprocessable",
    );
    assert_eq!(refused["field"], "members");
    let (_, mine) = app.get("/api/v1/labels", Some(&me.token)).await;
    assert_eq!(mine["items"][0]["members"], json!([friend.uid]));
    // A malformed list is still 400, whoever it names.
    let malformed = assert_problem(
        &app.post(
            "/api/v1/labels",
            Some(&me.token),
            json!({"name": "fans", "members": [0]}),
        )
        .await,
        400,
        "invalid_input",
    );
    assert_eq!(malformed["field"], "members");
    assert_problem(
        &app.post("/api/v1/labels", Some(&me.token), json!({"name": "close"}))
            .await,
        409,
        "conflict",
    );
    assert_problem(
        &app.call(
            reqwest::Method::PATCH,
            &format!("/api/v1/labels/{empty}"),
            Some(&me.token),
            Some(json!({"name": "close"})),
        )
        .await,
        409,
        "conflict",
    );
    // Another's label is not mine to change, delete or name.
    assert_problem(
        &app.call(
            reqwest::Method::PATCH,
            &format!("/api/v1/labels/{theirs}"),
            Some(&me.token),
            Some(json!({"name": "mine now"})),
        )
        .await,
        404,
        "not_found",
    );
    assert_problem(
        &app.delete(&format!("/api/v1/labels/{theirs}"), Some(&me.token))
            .await,
        404,
        "not_found",
    );
    let refused = assert_problem(
        &app.post(
            "/api/v1/posts",
            Some(&me.token),
            json!({"category": "TEXT", "content": "x", "visibility": "only",
                   "audience": {"labels": [close, theirs]}}),
        )
        .await,
        422,
        "unprocessable",
    );
    assert_eq!(refused["field"], "audience.labels");
    assert!(refused["detail"]
        .as_str()
        .unwrap()
        .contains(&theirs.to_string()));
    // A mention must be able to see the post: the fan is outside it.
    let refused = assert_problem(
        &app.post(
            "/api/v1/posts",
            Some(&me.token),
            json!({"category": "TEXT", "content": "x", "visibility": "only",
                   "audience": {"labels": [close]}, "mentions": [fan.uid, friend.uid]}),
        )
        .await,
        422,
        "unprocessable",
    );
    assert_eq!(refused["field"], "mentions");
    assert!(refused["detail"]
        .as_str()
        .unwrap()
        .contains(&fan.uid.to_string()));
    // Nothing was published by the refusals.
    assert!(album(&app, &me, &me).await.is_empty());
    let ok = app
        .post_with(
            &me,
            json!({"category": "TEXT", "content": "x", "visibility": "only",
               "audience": {"labels": [close]}, "mentions": [friend.uid]}),
        )
        .await;
    let (_, notes) = app.get("/api/v1/notifications", Some(&friend.token)).await;
    assert_eq!(notes["items"][0]["kind"], "mention");
    assert_eq!(notes["items"][0]["post"]["id"], ok);
}

/// Stores a post of `author`'s with this visibility made `days` ago (the
/// API only makes posts now).
async fn old_post_as(
    app: &TestApp,
    author: &User,
    days: i64,
    visibility: moments::domain::post::Visibility,
    audience: Option<moments::domain::post::Audience>,
) -> i64 {
    let id = moments::ids::next_id();
    let createtime = moments::ids::now_ms() - days * 24 * 3600 * 1000;
    app.ctx
        .docs
        .insert_post(&moments::store::PostDoc {
            visibility,
            audience,
            ..moments::store::PostDoc::text(id, author.uid, format!("{days} days ago"), createtime)
        })
        .await
        .unwrap();
    id
}

/// visibility.rs's matrix, through the API on this backend: each relation
/// a real account stands in, each audience a real post (recent, and ten
/// days old), under two album windows; each cell checked on the single
/// read, the album and the home feed.
#[tokio::test]
async fn the_visibility_matrix_holds_through_the_api() {
    use moments::domain::post::{Audience, Visibility};
    let app = spawn_app().await;
    let author = app.user("mxauthor").await;
    let stranger = app.user("mxstranger").await;
    let follower = app.user("mxfollower").await;
    let friend = app.user("mxfriend").await;
    let blocker = app.user("mxblocker").await;
    let blocked = app.user("mxblocked").await;
    let muter = app.user("mxmuter").await;
    let hidden = app.user("mxhidden").await;
    let in_label = app.user("mxinlabel").await;
    let named = app.user("mxnamed").await;
    let ex_friend = app.user("mxexfriend").await;
    follow(&app, &follower, &author).await;
    for f in [
        &friend, &blocker, &blocked, &muter, &hidden, &in_label, &named, &ex_friend,
    ] {
        friends(&app, &author, f).await;
    }
    let lab = label(&app, &author, "matrix", &[in_label.uid, ex_friend.uid]).await;
    // The ex-friend stays in the label, following the author: a follower
    // in a label, which names friends only.
    let (s, _) = app
        .delete(
            &format!("/api/v1/users/{}/follow", ex_friend.uid),
            Some(&author.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    for (who, whom, what) in [
        (&blocker, &author, "block"),
        (&author, &blocked, "block"),
        (&muter, &author, "mute"),
        (&author, &hidden, "hide"),
    ] {
        let (s, r) = app
            .put(
                &format!("/api/v1/users/{}/{what}", whom.uid),
                Some(&who.token),
            )
            .await;
        assert_eq!(s.as_u16(), 200, "{r}");
    }
    let audiences = [
        "public",
        "followers",
        "friends",
        "private",
        "only",
        "except",
    ];
    let audience = json!({"labels": [lab], "uids": [named.uid]});
    let mut recent = Vec::new();
    let mut old = Vec::new();
    for visibility in audiences {
        let mut body = json!({"category": "TEXT", "content": visibility, "visibility": visibility});
        let v: Visibility = serde_json::from_value(json!(visibility)).unwrap();
        let named_audience: Option<Audience> = v.names_an_audience().then(|| {
            body["audience"] = audience.clone();
            serde_json::from_value(audience.clone()).unwrap()
        });
        recent.push(app.post_with(&author, body).await);
        old.push(old_post_as(&app, &author, 10, v, named_audience).await);
    }
    settle(&app).await;
    // (who, the viewer's account, sees public, followers, friends,
    // private, only, except when recent)
    let rows: [(&str, Option<&User>, [bool; 6]); 12] = [
        ("anonymous", None, [true, false, false, false, false, false]),
        ("author", Some(&author), [true; 6]),
        (
            "stranger",
            Some(&stranger),
            [true, false, false, false, false, false],
        ),
        (
            "follower",
            Some(&follower),
            [true, true, false, false, false, false],
        ),
        (
            "friend",
            Some(&friend),
            [true, true, true, false, false, true],
        ),
        ("blocked by the viewer", Some(&blocker), [false; 6]),
        ("blocking the viewer", Some(&blocked), [false; 6]),
        (
            "muted by the viewer",
            Some(&muter),
            [true, true, true, false, false, true],
        ),
        ("hiding from the viewer", Some(&hidden), [false; 6]),
        (
            "a friend in the label",
            Some(&in_label),
            [true, true, true, false, true, false],
        ),
        (
            "a friend named",
            Some(&named),
            [true, true, true, false, true, false],
        ),
        (
            "a follower in the label",
            Some(&ex_friend),
            [true, true, false, false, false, false],
        ),
    ];
    for (window, old_shown) in [("3d", false), ("all", true)] {
        let (s, _) = app
            .call(
                reqwest::Method::PATCH,
                "/api/v1/me",
                Some(&author.token),
                Some(json!({"albumWindow": window})),
            )
            .await;
        assert_eq!(s.as_u16(), 200);
        for (who, viewer, row) in &rows {
            let token = viewer.map(|v| v.token.as_str());
            let is_author = viewer.is_some_and(|v| v.uid == author.uid);
            let mut expected_album = Vec::new();
            let mut expected_feed = Vec::new();
            for (i, shown) in row.iter().enumerate() {
                for (post, age_shown) in [(recent[i], true), (old[i], old_shown || is_author)] {
                    let expected = *shown && age_shown;
                    let (s, body) = app.get(&format!("/api/v1/posts/{post}"), token).await;
                    let case = format!("{who}, {}, window {window}, post {post}", audiences[i]);
                    assert_eq!(
                        s.as_u16(),
                        if expected { 200 } else { 404 },
                        "{case}: {body}"
                    );
                    if expected {
                        expected_album.push(post);
                        if *who != "muted by the viewer" {
                            expected_feed.push(post);
                        }
                    }
                }
            }
            expected_album.sort_unstable_by(|a, b| b.cmp(a));
            expected_feed.sort_unstable_by(|a, b| b.cmp(a));
            let album_path = format!("/api/v1/users/{}/posts", author.uid);
            let shown = ids(&every_item(&app, &album_path, token, 5).await);
            assert_eq!(shown, expected_album, "{who}'s album, window {window}");
            if let Some(v) = viewer {
                let follows = !matches!(*who, "anonymous" | "stranger")
                    && !who.starts_with("blocked")
                    && !who.starts_with("blocking");
                if follows {
                    let feed: Vec<i64> = whole_feed(&app, v, 5)
                        .await
                        .into_iter()
                        .filter(|p| recent.contains(p) || old.contains(p))
                        .collect();
                    assert_eq!(feed, expected_feed, "{who}'s feed, window {window}");
                }
            }
        }
    }
}

/// "A 回复 B" names B: where the reader may not see B (a friend of the
/// author's who is a stranger to the reader, or someone across a block),
/// the reply is hidden with B's own comment, in every list and count.
#[tokio::test]
async fn a_reply_to_someone_hidden_from_me_is_hidden_with_them() {
    let app = spawn_app().await;
    let author = app.user("replyauthor").await;
    let mine = app.user("replyfriend").await;
    let stranger = app.user("replystranger").await;
    let me = app.user("replyreader").await;
    for f in [&mine, &stranger, &me] {
        friends(&app, &author, f).await;
    }
    friends(&app, &me, &mine).await;
    let post = app
        .post_with(
            &author,
            json!({"category": "TEXT", "content": "friends", "visibility": "friends"}),
        )
        .await;
    let theirs = app.comment(&stranger, post, "stranger's", None).await["id"]
        .as_i64()
        .unwrap();
    // The author sees everyone's comment, and answers the stranger.
    let reply = app
        .comment(&author, post, "the author to the stranger", Some(theirs))
        .await["id"]
        .as_i64()
        .unwrap();
    let plain = app.comment(&mine, post, "my friend's", None).await["id"]
        .as_i64()
        .unwrap();
    let (_, read) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&me.token))
        .await;
    assert_eq!(
        ids(read["comments"].as_array().unwrap()),
        vec![plain],
        "{read}"
    );
    assert_eq!(read["commentCount"], 1);
    let listed = every_item(
        &app,
        &format!("/api/v1/posts/{post}/comments"),
        Some(&me.token),
        5,
    )
    .await;
    assert_eq!(ids(&listed), vec![plain]);
    for hidden in [theirs, reply] {
        assert_problem(
            &app.get(
                &format!("/api/v1/comments/{hidden}/replies"),
                Some(&me.token),
            )
            .await,
            404,
            "not_found",
        );
        assert_problem(
            &app.put(&format!("/api/v1/comments/{hidden}/like"), Some(&me.token))
                .await,
            404,
            "not_found",
        );
        assert_problem(
            &app.post(
                &format!("/api/v1/posts/{post}/comments"),
                Some(&me.token),
                json!({"content": "me too", "replyToCommentId": hidden}),
            )
            .await,
            404,
            "not_found",
        );
    }
    // The author sees the whole exchange; the stranger, the answer too.
    let (_, read) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&author.token))
        .await;
    assert_eq!(read["commentCount"], 3);
    let (_, read) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&stranger.token))
        .await;
    assert_eq!(
        ids(read["comments"].as_array().unwrap()),
        vec![reply, theirs]
    );

    // On a public post, across a block.
    let public = app.text_post(&author, "public").await;
    let blocked = app.comment(&stranger, public, "blocked one's", None).await["id"]
        .as_i64()
        .unwrap();
    app.comment(&mine, public, "to the blocked one", Some(blocked))
        .await;
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/block", stranger.uid),
            Some(&me.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    let (_, read) = app
        .get(&format!("/api/v1/posts/{public}"), Some(&me.token))
        .await;
    assert!(read["comments"].as_array().unwrap().is_empty(), "{read}");
    let listed = every_item(
        &app,
        &format!("/api/v1/posts/{public}/comments"),
        Some(&me.token),
        5,
    )
    .await;
    assert!(listed.is_empty(), "{listed:?}");
}
