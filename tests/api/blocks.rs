//! Blocks are bounded and cheap to read however many strangers block one
//! user: an account blocks at most `MOMENTS_MAX_BLOCKS`; a repeated block
//! or hide writes nothing and moves nobody's live state; a hide sleeps
//! while the follow it was set on is gone; counts leave out whom the
//! viewer is blocked from; and a viewer blocked by more accounts than a read takes whole
//! sees, on every read, exactly what one blocked by few sees.

use serde_json::{json, Value};

use crate::helpers::{
    assert_problem, every_item, follow, ids, spawn_app, spawn_app_with, test_settings, TestApp,
    User,
};
use moments::store::{LiveRead, Owner, SetKey, SetRead};

async fn block(app: &TestApp, who: &User, whom: &User) -> (u16, Value) {
    let (s, b) = app
        .put(
            &format!("/api/v1/users/{}/block", whom.uid),
            Some(&who.token),
        )
        .await;
    (s.as_u16(), b)
}

/// A user's live generation, and whether their home timeline is built.
async fn live_marks(app: &TestApp, uid: i64) -> (u64, bool) {
    let read = LiveRead {
        sets: vec![SetRead {
            key: SetKey::Home(uid),
            top: 0,
            probe: None,
            below: None,
        }],
        gens: vec![Owner::User(uid)],
        ..Default::default()
    };
    let answer = app.ctx.live.read(&read).await.unwrap();
    (answer.gens[0], answer.sets[0].is_some())
}

#[tokio::test]
async fn blocks_per_account_are_capped() {
    let mut settings = test_settings();
    settings.max_blocks = 2;
    let app = spawn_app_with(settings).await;
    let me = app.user("capblocker").await;
    let others = [
        app.user("capped1").await,
        app.user("capped2").await,
        app.user("capped3").await,
    ];
    assert_eq!(block(&app, &me, &others[0]).await.0, 200);
    assert_eq!(block(&app, &me, &others[1]).await.0, 200);
    let refused = app
        .put(
            &format!("/api/v1/users/{}/block", others[2].uid),
            Some(&me.token),
        )
        .await;
    let problem = assert_problem(&refused, 409, "conflict");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("block 2 accounts"),
        "{problem}"
    );
    // Nothing was written: the third still sees the blocker.
    let (s, _) = app
        .get(&format!("/api/v1/users/{}", me.uid), Some(&others[2].token))
        .await;
    assert_eq!(s.as_u16(), 200);
    // At the cap, blocking someone already blocked is still fine, and an
    // unblock makes room.
    assert_eq!(block(&app, &me, &others[1]).await.0, 200);
    app.delete(
        &format!("/api/v1/users/{}/block", others[0].uid),
        Some(&me.token),
    )
    .await;
    assert_eq!(block(&app, &me, &others[2]).await.0, 200);
}

#[tokio::test]
async fn a_repeated_block_or_hide_touches_nobody_s_live_state() {
    let app = spawn_app().await;
    let me = app.user("rep_blocker").await;
    let victim = app.user("rep_victim").await;
    let follower = app.user("rep_follower").await;
    follow(&app, &follower, &me).await;
    assert_eq!(block(&app, &me, &victim).await.0, 200);
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/hide", follower.uid),
            Some(&me.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    // Both read their feeds, so their timelines are built.
    for u in [&victim, &follower] {
        assert_eq!(
            app.get("/api/v1/feed", Some(&u.token)).await.0.as_u16(),
            200
        );
    }
    crate::helpers::settle(&app).await;
    let before = [
        live_marks(&app, victim.uid).await,
        live_marks(&app, follower.uid).await,
        live_marks(&app, me.uid).await,
    ];
    assert!(before[..2].iter().all(|(_, built)| *built), "{before:?}");
    for _ in 0..3 {
        assert_eq!(block(&app, &me, &victim).await.0, 200);
        let (s, _) = app
            .put(
                &format!("/api/v1/users/{}/hide", follower.uid),
                Some(&me.token),
            )
            .await;
        assert_eq!(s.as_u16(), 200);
        // Following again moves only the follower's own state, nobody
        // else's.
        follow(&app, &follower, &me).await;
    }
    // The victim and the blocker are untouched; the follower's own state
    // moved by their own follows alone (one change each), the hide on them
    // repeated moved nothing of theirs.
    let after = [
        live_marks(&app, victim.uid).await,
        live_marks(&app, follower.uid).await,
        live_marks(&app, me.uid).await,
    ];
    assert_eq!(
        [after[0], after[2]],
        [before[0], before[2]],
        "their generations moved or timelines were dropped"
    );
    assert_eq!(after[1].0, before[1].0 + 3, "{after:?}");
    // The block holds all the same.
    assert_problem(
        &app.get(&format!("/api/v1/users/{}", me.uid), Some(&victim.token))
            .await,
        404,
        "not_found",
    );
}

async fn hidden_list(app: &TestApp, who: &User) -> Vec<i64> {
    every_item(app, "/api/v1/me/hidden", Some(&who.token), 20)
        .await
        .iter()
        .map(|u| u["uid"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_hide_sleeps_while_its_follow_is_gone_and_holds_when_it_comes_back() {
    let app = spawn_app().await;
    let author = app.user("hide_author").await;
    let reader = app.user("hide_reader").await;
    let stranger = app.user("hide_stranger").await;
    follow(&app, &reader, &author).await;
    follow(&app, &author, &reader).await;
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/hide", reader.uid),
            Some(&author.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    let public = app.text_post(&author, "not for the hidden").await;
    let (s, p) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "for friends", "visibility": "friends"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{p}");
    let for_friends = p["id"].as_i64().unwrap();
    let status = |post: i64| {
        let app = &app;
        let token = reader.token.clone();
        async move {
            app.get(&format!("/api/v1/posts/{post}"), Some(&token))
                .await
                .0
                .as_u16()
        }
    };
    assert_eq!(
        (status(public).await, status(for_friends).await),
        (404, 404)
    );
    // Unfollowed: the hide sleeps (the reader's reads load only the hides
    // of whom they follow), and the reader is a stranger like any other.
    app.delete(
        &format!("/api/v1/users/{}/follow", author.uid),
        Some(&reader.token),
    )
    .await;
    assert_eq!(hidden_list(&app, &author).await, vec![reader.uid]);
    assert_eq!(
        (status(public).await, status(for_friends).await),
        (200, 404)
    );
    // Writes judge it as reads do: a public post may mention them.
    let (s, p) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "see this", "mentions": [reader.uid]}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{p}");
    assert_eq!(status(p["id"].as_i64().unwrap()).await, 200);
    // Followed again: it holds again, friends or not.
    follow(&app, &reader, &author).await;
    assert_eq!(
        (status(public).await, status(for_friends).await),
        (404, 404)
    );
    // From the documents too, once the live state is lost.
    app.lose_live_state().await;
    assert_eq!(
        (status(public).await, status(for_friends).await),
        (404, 404)
    );
    // Only a follower can be hidden from.
    let refused = app
        .put(
            &format!("/api/v1/users/{}/hide", stranger.uid),
            Some(&author.token),
        )
        .await;
    assert_problem(&refused, 409, "conflict");
}

/// Likes and comments of people the viewer blocked (or is blocked by) are
/// left out of every count the viewer sees, on public and followers-only
/// posts as on posts for friends.
#[tokio::test]
async fn counts_leave_out_people_blocked_either_way() {
    let app = spawn_app().await;
    let author = app.user("count_author").await;
    let viewer = app.user("count_viewer").await;
    let blocked = app.user("count_blocked").await;
    let blocker = app.user("count_blocker").await;
    let friend = app.user("count_other").await;
    for who in [&viewer, &blocked, &blocker, &friend] {
        follow(&app, who, &author).await;
    }
    for visibility in ["public", "followers"] {
        let (s, p) = app
            .post(
                "/api/v1/posts",
                Some(&author.token),
                json!({"category": "TEXT", "content": visibility, "visibility": visibility}),
            )
            .await;
        assert_eq!(s.as_u16(), 201, "{p}");
        let post = p["id"].as_i64().unwrap();
        let seen = app.comment(&friend, post, "seen", None).await;
        let seen_id = seen["id"].as_i64().unwrap();
        for who in [&blocked, &blocker] {
            app.put(&format!("/api/v1/posts/{post}/like"), Some(&who.token))
                .await;
            app.put(
                &format!("/api/v1/comments/{seen_id}/like"),
                Some(&who.token),
            )
            .await;
            app.comment(who, post, "unseen", None).await;
            app.comment(who, post, "unseen reply", Some(seen_id)).await;
        }
        app.put(&format!("/api/v1/posts/{post}/like"), Some(&friend.token))
            .await;
        if visibility == "public" {
            assert_eq!(block(&app, &viewer, &blocked).await.0, 200);
            assert_eq!(block(&app, &blocker, &viewer).await.0, 200);
            // The blocker no longer follows the author? It still does:
            // blocks are between the two of them only.
        }
        let (_, read) = app
            .get(&format!("/api/v1/posts/{post}"), Some(&viewer.token))
            .await;
        assert_eq!(read["likeCount"], 1, "{visibility}: {read}");
        assert_eq!(read["commentCount"], 1, "{visibility}: {read}");
        assert_eq!(ids(read["comments"].as_array().unwrap()), vec![seen_id]);
        let shown = &read["comments"][0];
        assert_eq!(
            (shown["likeCount"].as_i64(), shown["commentCount"].as_i64()),
            (Some(0), Some(0)),
            "{shown}"
        );
        // The same numbers in the comment list and the reply thread.
        let (_, comments) = app
            .get(
                &format!("/api/v1/posts/{post}/comments"),
                Some(&viewer.token),
            )
            .await;
        assert_eq!(ids(comments["items"].as_array().unwrap()), vec![seen_id]);
        assert_eq!(comments["items"][0]["likeCount"], 0, "{comments}");
        assert_eq!(comments["items"][0]["commentCount"], 0, "{comments}");
        let (_, replies) = app
            .get(
                &format!("/api/v1/comments/{seen_id}/replies"),
                Some(&viewer.token),
            )
            .await;
        assert!(replies["items"].as_array().unwrap().is_empty(), "{replies}");
        // A like answers the count the liker may see.
        let (_, liked) = app
            .put(&format!("/api/v1/posts/{post}/like"), Some(&viewer.token))
            .await;
        assert_eq!(
            liked,
            json!({"liked": true, "likeCount": 2}),
            "{visibility}"
        );
        // Someone blocked by nobody sees every one of them.
        let (_, all) = app
            .get(&format!("/api/v1/posts/{post}"), Some(&friend.token))
            .await;
        assert_eq!(
            (all["likeCount"].as_i64(), all["commentCount"].as_i64()),
            (Some(4), Some(5)),
            "{all}"
        );
    }
}

/// Everything a reader sees through the API of the author `a`'s posts and
/// of the blockers', as ids and numbers: what must be the same whether
/// the reader's blockers are read whole or asked about.
async fn what_the_reader_sees(app: &TestApp, reader: &User, a: &User, blockers: &[User]) -> Value {
    let get = |path: String| async move {
        let (s, v) = app.get(&path, Some(&reader.token)).await;
        (s.as_u16(), v)
    };
    let feed = ids(&every_item(app, "/api/v1/feed", Some(&reader.token), 2).await);
    let album = ids(&every_item(
        app,
        &format!("/api/v1/users/{}/posts", a.uid),
        Some(&reader.token),
        2,
    )
    .await);
    let post = album[0];
    let (_, expanded) = get(format!("/api/v1/posts/{post}")).await;
    let comments = every_item(
        app,
        &format!("/api/v1/posts/{post}/comments"),
        Some(&reader.token),
        2,
    )
    .await;
    let first_comment = comments.last().map(|c| c["id"].as_i64().unwrap()).unwrap();
    let replies = ids(&every_item(
        app,
        &format!("/api/v1/comments/{first_comment}/replies"),
        Some(&reader.token),
        2,
    )
    .await);
    let likes: Vec<i64> = every_item(
        app,
        &format!("/api/v1/posts/{post}/likes"),
        Some(&reader.token),
        2,
    )
    .await
    .iter()
    .map(|l| l["user"]["uid"].as_i64().unwrap())
    .collect();
    let followers: Vec<i64> = every_item(
        app,
        &format!("/api/v1/users/{}/followers", a.uid),
        Some(&reader.token),
        2,
    )
    .await
    .iter()
    .map(|u| u["uid"].as_i64().unwrap())
    .collect();
    let my_likes = ids(&every_item(app, "/api/v1/me/likes", Some(&reader.token), 2).await);
    let mut of_blockers = Vec::new();
    for b in blockers {
        let (profile, _) = get(format!("/api/v1/users/{}", b.uid)).await;
        let (_, their_album) = get(format!("/api/v1/users/{}/posts", b.uid)).await;
        let (their_followers, _) = get(format!("/api/v1/users/{}/followers", b.uid)).await;
        let album_posts = their_album["items"].as_array().map_or(0, |i| i.len());
        of_blockers.push(json!([profile, album_posts, their_followers]));
    }
    let (_, notifications) = get("/api/v1/notifications".into()).await;
    let notified: Vec<i64> = notifications["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["actor"]["uid"].as_i64().unwrap())
        .collect();
    json!({
        "feed": feed,
        "album": album,
        "likeCount": expanded["likeCount"],
        "commentCount": expanded["commentCount"],
        "likes": expanded["likes"].as_array().unwrap().iter().map(|l| l["user"]["uid"].clone()).collect::<Vec<_>>(),
        "comments": ids(expanded["comments"].as_array().unwrap()),
        "commentCounts": comments.iter().map(|c| json!([c["id"], c["likeCount"], c["commentCount"]])).collect::<Vec<_>>(),
        "replies": replies,
        "likers": likes,
        "followers": followers,
        "myLikes": my_likes,
        "blockers": of_blockers,
        "notified": notified,
    })
}

/// A reader blocked by more accounts than a read takes whole
/// (`MOMENTS_BLOCKERS_READ_WHOLE`, 2 here) sees, on every read, exactly
/// what a reader blocked by few sees: nothing of the blockers, everything
/// else; from the live state and, once it is lost, from the documents.
#[tokio::test]
async fn a_reader_blocked_by_many_sees_what_one_blocked_by_few_sees() {
    let mut settings = test_settings();
    settings.blockers_read_whole = 2;
    let app = spawn_app_with(settings).await;
    let a = app.user("many_author").await;
    let fine = app.user("many_fine").await;
    let blockers = [
        app.user("many_b1").await,
        app.user("many_b2").await,
        app.user("many_b3").await,
        app.user("many_b4").await,
    ];
    let readers = [app.user("many_reader").await, app.user("few_reader").await];
    for r in &readers {
        follow(&app, r, &a).await;
    }
    follow(&app, &fine, &a).await;
    for b in &blockers {
        follow(&app, b, &a).await;
    }
    // The readers' own posts, which blockers liked before blocking (their
    // notifications stay, not shown).
    let own: Vec<i64> = {
        let mut v = Vec::new();
        for r in &readers {
            v.push(app.text_post(r, "mine").await);
        }
        v
    };
    for b in &blockers {
        for p in &own {
            app.put(&format!("/api/v1/posts/{p}/like"), Some(&b.token))
                .await;
        }
    }
    for i in 0..3 {
        let post = app.text_post(&a, &format!("a's post {i}")).await;
        let first = app.comment(&fine, post, "fine", None).await;
        let first = first["id"].as_i64().unwrap();
        app.put(&format!("/api/v1/posts/{post}/like"), Some(&fine.token))
            .await;
        for b in &blockers {
            app.put(&format!("/api/v1/posts/{post}/like"), Some(&b.token))
                .await;
            app.put(&format!("/api/v1/comments/{first}/like"), Some(&b.token))
                .await;
            app.comment(b, post, "blocker's", None).await;
            app.comment(b, post, "blocker's reply", Some(first)).await;
        }
        for r in &readers {
            app.put(&format!("/api/v1/posts/{post}/like"), Some(&r.token))
                .await;
        }
    }
    for b in &blockers {
        app.text_post(b, "blocker's own").await;
    }
    // Every blocker blocks the first reader; only one blocks the second.
    for b in &blockers {
        assert_eq!(block(&app, b, &readers[0]).await.0, 200);
    }
    assert_eq!(block(&app, &blockers[0], &readers[1]).await.0, 200);
    let blocker_uids: Vec<Value> = blockers.iter().map(|b| json!(b.uid)).collect();
    for round in ["live", "documents"] {
        // Read whole: blocked by one, who is gone from everything; the
        // other three are everywhere.
        let few = what_the_reader_sees(&app, &readers[1], &a, &blockers).await;
        assert_eq!(
            (&few["likeCount"], &few["commentCount"]),
            (&json!(6), &json!(7)),
            "{round}: {few}"
        );
        assert_eq!(
            few["replies"].as_array().unwrap().len(),
            3,
            "{round}: {few}"
        );
        assert_eq!(
            few["followers"].as_array().unwrap().len(),
            6,
            "{round}: {few}"
        );
        assert_eq!(few["blockers"][0], json!([404, 0, 404]), "{round}: {few}");
        assert_eq!(few["blockers"][1], json!([200, 1, 200]), "{round}: {few}");
        assert!(
            !few["likers"].as_array().unwrap().contains(&blocker_uids[0]),
            "{round}: {few}"
        );
        // Asked about: blocked by all four, of whom two are read whole and
        // the rest asked about, person by person. None of them shows.
        let many = what_the_reader_sees(&app, &readers[0], &a, &blockers).await;
        for key in ["likes", "likers", "followers", "notified"] {
            let shown = many[key].as_array().unwrap();
            assert!(
                shown.iter().all(|u| !blocker_uids.contains(u)),
                "{round}: {key}: {many}"
            );
        }
        // a's three posts and the reader's own in the feed; fine's like
        // and both readers' on the post; fine's comment alone, unliked and
        // unanswered; fine and both readers among a's followers.
        let lengths = [
            ("feed", 4),
            ("album", 3),
            ("myLikes", 3),
            ("likers", 3),
            ("likes", 3),
            ("comments", 1),
            ("replies", 0),
            ("followers", 3),
            ("notified", 0),
        ];
        let got: Vec<(&str, usize)> = lengths
            .iter()
            .map(|(key, _)| (*key, many[*key].as_array().unwrap().len()))
            .collect();
        assert_eq!(got, lengths, "{round}: {many}");
        for b in many["blockers"].as_array().unwrap() {
            assert_eq!(b, &json!([404, 0, 404]), "{round}: {many}");
        }
        assert_eq!(
            (&many["likeCount"], &many["commentCount"]),
            (&json!(3), &json!(1)),
            "{round}: {many}"
        );
        assert_eq!(
            many["commentCounts"][0],
            json!([many["comments"][0], 0, 0]),
            "{round}: {many}"
        );
        // Nor can they find their way to each other.
        for b in &blockers {
            let (s, _) = app
                .put(
                    &format!("/api/v1/users/{}/follow", b.uid),
                    Some(&readers[0].token),
                )
                .await;
            assert_eq!(s.as_u16(), 404, "{round}");
        }
        app.lose_live_state().await;
    }
}

/// Of a reader blocked by more than are read whole, the blocks are counted
/// once: later reads ask about the people on the page (in the live state
/// or by the blockers' own shard) and never read the reader's blocks
/// again, however often the blocked-by set is missing.
#[tokio::test]
async fn the_blocks_of_a_reader_blocked_by_many_are_counted_once() {
    use moments::store::faults::Fault;
    let mut settings = test_settings();
    settings.blockers_read_whole = 2;
    let app = spawn_app_with(settings).await;
    let author = app.user("counted_author").await;
    let reader = app.user("counted_reader").await;
    let mut blockers = Vec::new();
    for i in 0..3 {
        blockers.push(app.user(&format!("counted_b{i}")).await);
    }
    follow(&app, &reader, &author).await;
    let post = app.text_post(&author, "liked by blockers").await;
    for b in &blockers {
        app.put(&format!("/api/v1/posts/{post}/like"), Some(&b.token))
            .await;
        assert_eq!(block(&app, b, &reader).await.0, 200);
    }
    let likes = || async {
        let (s, feed) = app.get("/api/v1/feed", Some(&reader.token)).await;
        assert_eq!(s.as_u16(), 200, "{feed}");
        feed["items"][0]["likeCount"].as_i64()
    };
    // The blocks went to the documents only: the first read counts them.
    app.lose_live_state().await;
    assert_eq!(likes().await, Some(0));
    crate::helpers::settle(&app).await;
    app.ctx
        .faults
        .inject("SocialDocs", "blockers_of", Fault::Fail, usize::MAX);
    for _ in 0..3 {
        assert_eq!(likes().await, Some(0), "the blockers' likes stay out");
    }
}

/// Who a call names, as the caller knows them.
struct Named {
    uid: i64,
    username: String,
    /// A post of theirs (public), and a comment of theirs on a public post
    /// anyone may read.
    post: i64,
    comment: i64,
}

/// One call that names an account (in its path, query or body), with
/// `{uid}`, `{username}`, `{post}` and `{comment}` standing for the named.
struct Naming {
    method: reqwest::Method,
    path: &'static str,
    body: Option<&'static str>,
}

fn filled(text: &str, who: &Named, open_post: i64) -> String {
    text.replace("{uid}", &who.uid.to_string())
        .replace("{username}", &who.username)
        .replace("{post}", &who.post.to_string())
        .replace("{comment}", &who.comment.to_string())
        .replace("{open_post}", &open_post.to_string())
}

/// An answer with the named account's own ids and name (which differ by
/// subject) and what differs by request (its id, the clock) taken out.
fn as_seen(answer: (reqwest::StatusCode, Value), who: &Named) -> (u16, Value) {
    let (status, mut body) = answer;
    if let Some(o) = body.as_object_mut() {
        o.remove("instance");
        o.remove("serverTime");
        // A hash of the plan, so of the uids it names.
        o.remove("planId");
    }
    // Stand-ins that read the same as a number or inside a string.
    let text = body
        .to_string()
        .replace(&who.uid.to_string(), "111")
        .replace(&who.post.to_string(), "222")
        .replace(&who.comment.to_string(), "333")
        .replace(&who.username, "someone");
    (status.as_u16(), serde_json::from_str(&text).unwrap())
}

/// A post of theirs and a comment of theirs on a post anyone may read,
/// left before the account is made what a test needs.
async fn leave_traces(app: &TestApp, who: User, open_post: i64) -> (User, i64, i64) {
    let post = app.text_post(&who, "mine").await;
    let comment = app.comment(&who, open_post, "a word", None).await;
    (who, post, comment["id"].as_i64().unwrap())
}

/// Someone who blocked the caller is, to the caller, no account at all:
/// every call that names an account (the `{uid}` routes, a lookup by
/// username, reports, labels, mentions, audiences, imports) and every call
/// that names something of theirs (a post, a comment) answers exactly as
/// for an account nobody has, and as for one erased, so that no pair of
/// answers tells "blocked you" from "no such account" (README, Security:
/// what a block shows). A control account that did not block the caller
/// shows each row where existence shows at all.
#[tokio::test]
async fn a_blocker_answers_every_call_as_no_such_account_does() {
    let app = spawn_app().await;
    let me = app.user("bs_me").await;
    let control_user = app.user("bs_control").await;
    let opener = app.user("bs_opener").await;
    let open_post = app.text_post(&opener, "anyone may comment here").await;
    let traces = |u: User| leave_traces(&app, u, open_post);
    let blocker_user = app.user("bs_blocker").await;
    let blocker_user = traces(blocker_user).await;
    let (bp, bc) = (blocker_user.1, blocker_user.2);
    let blocker_user = blocker_user.0;
    assert_eq!(block(&app, &blocker_user, &me).await.0, 200);
    let erased_user = app.user("bs_erased").await;
    let (erased_user, ep, ec) = traces(erased_user).await;
    let (s, v) = app
        .call(
            reqwest::Method::DELETE,
            "/api/v1/me",
            Some(&erased_user.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{v}");
    let (control_user, cp, cc) = traces(control_user).await;
    let blocker = Named {
        uid: blocker_user.uid,
        username: "bs_blocker".into(),
        post: bp,
        comment: bc,
    };
    let erased = Named {
        uid: erased_user.uid,
        username: "bs_erased".into(),
        post: ep,
        comment: ec,
    };
    // Ids of the shape the service makes, that nothing has.
    let nobody = Named {
        uid: blocker.uid + 977,
        username: "bs_nobody".into(),
        post: bp + 977,
        comment: bc + 977,
    };
    let control = Named {
        uid: control_user.uid,
        username: "bs_control".into(),
        post: cp,
        comment: cc,
    };
    use reqwest::Method as M;
    let row =
        |method: M, path: &'static str, body: Option<&'static str>| Naming { method, path, body };
    let table = [
        row(M::GET, "/api/v1/users/{uid}", None),
        row(M::GET, "/api/v1/users/{uid}/posts", None),
        row(M::GET, "/api/v1/users/{uid}/followers", None),
        row(M::GET, "/api/v1/users/{uid}/following", None),
        row(M::GET, "/api/v1/users/{uid}/friends", None),
        row(M::GET, "/api/v1/users?username={username}", None),
        row(M::PUT, "/api/v1/users/{uid}/follow", None),
        row(M::DELETE, "/api/v1/users/{uid}/follow", None),
        row(M::PUT, "/api/v1/users/{uid}/mute", None),
        row(M::DELETE, "/api/v1/users/{uid}/mute", None),
        row(M::PUT, "/api/v1/users/{uid}/hide", None),
        row(M::DELETE, "/api/v1/users/{uid}/hide", None),
        row(M::PUT, "/api/v1/users/{uid}/block", None),
        row(M::DELETE, "/api/v1/users/{uid}/block", None),
        row(
            M::POST,
            "/api/v1/reports",
            Some(r#"{"targetType": "user", "targetId": {uid}, "category": "spam"}"#),
        ),
        row(
            M::POST,
            "/api/v1/labels",
            Some(r#"{"name": "l-{username}", "members": [{uid}]}"#),
        ),
        row(
            M::POST,
            "/api/v1/posts",
            Some(r#"{"category": "TEXT", "content": "hi", "mentions": [{uid}]}"#),
        ),
        row(
            M::POST,
            "/api/v1/me/imports/preview",
            Some(r#"{"kind": "following", "mode": "merge", "csv": "{username}\n"}"#),
        ),
        row(
            M::POST,
            "/api/v1/me/imports/preview",
            Some(r#"{"kind": "blocks", "mode": "merge", "csv": "{username}\n"}"#),
        ),
        row(M::GET, "/api/v1/posts/{post}", None),
        row(M::GET, "/api/v1/posts/{post}/comments", None),
        row(M::GET, "/api/v1/posts/{post}/likes", None),
        row(M::PUT, "/api/v1/posts/{post}/like", None),
        row(M::DELETE, "/api/v1/posts/{post}/like", None),
        row(M::PUT, "/api/v1/posts/{post}/favorite", None),
        row(M::DELETE, "/api/v1/posts/{post}/favorite", None),
        row(
            M::POST,
            "/api/v1/posts/{post}/shares",
            Some(r#"{"platform": "wechat"}"#),
        ),
        row(
            M::POST,
            "/api/v1/posts/{post}/comments",
            Some(r#"{"content": "hello"}"#),
        ),
        row(
            M::POST,
            "/api/v1/reports",
            Some(r#"{"targetType": "post", "targetId": {post}, "category": "spam"}"#),
        ),
        row(
            M::POST,
            "/api/v1/posts/{open_post}/comments",
            Some(r#"{"content": "re", "replyToCommentId": {comment}}"#),
        ),
        row(M::PUT, "/api/v1/comments/{comment}/like", None),
        row(M::DELETE, "/api/v1/comments/{comment}/like", None),
        row(M::GET, "/api/v1/comments/{comment}/replies", None),
        row(
            M::POST,
            "/api/v1/reports",
            Some(r#"{"targetType": "comment", "targetId": {comment}, "category": "spam"}"#),
        ),
    ];
    let ask = |naming: &Naming, who: &Named| {
        let path = filled(naming.path, who, open_post);
        let body = naming
            .body
            .map(|b| serde_json::from_str::<Value>(&filled(b, who, open_post)).unwrap());
        let method = naming.method.clone();
        let token = me.token.clone();
        let app = &app;
        async move { app.call(method, &path, Some(&token), body).await }
    };
    let mut shown_by_control = 0;
    for naming in &table {
        let what = format!("{} {}", naming.method, naming.path);
        let as_nobody = as_seen(ask(naming, &nobody).await, &nobody);
        assert!(as_nobody.0 < 500, "{what}: {as_nobody:?}");
        for who in [&blocker, &erased] {
            let answer = as_seen(ask(naming, who).await, who);
            assert_eq!(
                answer, as_nobody,
                "{what} tells {} from an account nobody has",
                who.username
            );
        }
        if as_seen(ask(naming, &control).await, &control) != as_nobody {
            shown_by_control += 1;
        }
    }
    // Most rows do tell an account that is there from one that is not:
    // the check above is about something.
    assert!(shown_by_control >= 25, "{shown_by_control}");
    // And nothing reached the blocker: no follow, no report of theirs seen.
    let (_, profile) = app
        .get(
            &format!("/api/v1/users/{}", blocker.uid),
            Some(&opener.token),
        )
        .await;
    assert_eq!(profile["followersCount"], 0, "{profile}");
}

/// An album page that finds nothing the viewer may see goes on with a
/// cursor when its bounded search stopped short (a stranger before 31
/// friends-only posts, at one a page, reads 30), but an album that can
/// show the viewer nothing at all (its author blocked them) ends at once,
/// as the album of a uid nobody has does: otherwise the cursor would tell
/// a prolific blocker from no account.
#[tokio::test]
async fn an_album_closed_by_a_block_ends_as_no_accounts_does() {
    let app = spawn_app().await;
    let author = app.user("ab_author").await;
    let me = app.user("ab_me").await;
    for i in 0..31 {
        let (s, v) = app
            .post(
                "/api/v1/posts",
                Some(&author.token),
                json!({"category": "TEXT", "content": format!("for friends {i}"), "visibility": "friends"}),
            )
            .await;
        assert_eq!(s.as_u16(), 201, "{v}");
    }
    let page = |uid: i64| {
        let app = &app;
        let token = me.token.clone();
        async move {
            let (s, v) = app
                .get(&format!("/api/v1/users/{uid}/posts?limit=1"), Some(&token))
                .await;
            assert_eq!(s.as_u16(), 200, "{v}");
            assert_eq!(v["items"], json!([]), "{v}");
            v["nextCursor"].clone()
        }
    };
    assert!(
        page(author.uid).await.is_string(),
        "a stopped search goes on"
    );
    assert_eq!(page(author.uid + 977).await, Value::Null);
    assert_eq!(block(&app, &author, &me).await.0, 200);
    assert_eq!(page(author.uid).await, Value::Null);
}
