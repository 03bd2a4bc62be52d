use serde_json::json;

use crate::helpers::{spawn_app, TestApp, User};

async fn inbox(app: &TestApp, who: &User) -> Vec<(String, i64)> {
    let (s, page) = app
        .get("/api/v1/notifications?lang=zh", Some(&who.token))
        .await;
    assert_eq!(s.as_u16(), 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["kind"].as_str().unwrap().to_string(),
                n["actor"]["uid"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn unread(app: &TestApp, who: &User) -> i64 {
    app.get("/api/v1/notifications/unread", Some(&who.token))
        .await
        .1["unread"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn likes_comments_replies_and_follows_notify_their_target_once() {
    let app = spawn_app().await;
    let me = app.user("famous").await;
    let fan = app.user("fan").await;
    let other = app.user("other").await;
    let post = app.text_post(&me, "notice me").await;
    // Liking, unliking and liking again: one notification.
    for m in ["PUT", "DELETE", "PUT"] {
        app.call(
            m.parse().unwrap(),
            &format!("/api/v1/posts/{post}/like"),
            Some(&fan.token),
            None,
        )
        .await;
    }
    let c = app.comment(&fan, post, "hi", None).await["id"]
        .as_i64()
        .unwrap();
    app.comment(&me, post, "own comment: no notification", None)
        .await;
    app.comment(&other, post, "re", Some(c)).await;
    app.put(&format!("/api/v1/comments/{c}/like"), Some(&me.token))
        .await;
    app.put(
        &format!("/api/v1/users/{}/follow", me.uid),
        Some(&fan.token),
    )
    .await;
    app.delete(
        &format!("/api/v1/users/{}/follow", me.uid),
        Some(&fan.token),
    )
    .await;
    app.put(
        &format!("/api/v1/users/{}/follow", me.uid),
        Some(&fan.token),
    )
    .await;
    app.put(&format!("/api/v1/posts/{post}/like"), Some(&me.token))
        .await;

    assert_eq!(
        inbox(&app, &me).await,
        vec![
            ("follow".to_string(), fan.uid),
            ("comment".to_string(), other.uid),
            ("comment".to_string(), fan.uid),
            ("like".to_string(), fan.uid),
        ]
    );
    // The fan hears of the reply to their comment and the like on it.
    assert_eq!(
        inbox(&app, &fan).await,
        vec![
            ("like".to_string(), me.uid),
            ("reply".to_string(), other.uid)
        ]
    );
    let (_, page) = app.get("/api/v1/notifications", Some(&fan.token)).await;
    let reply = &page["items"][1];
    assert_eq!(reply["post"]["content"], "notice me");
    assert_eq!(reply["comment"]["content"], "re");
    assert_eq!(reply["actor"]["nickName"], "other昵称");
    assert_eq!(reply["read"], false);
}

#[tokio::test]
async fn unread_counts_and_marking_read() {
    let app = spawn_app().await;
    let me = app.user("reader").await;
    let a = app.user("liker").await;
    let p1 = app.text_post(&me, "one").await;
    let p2 = app.text_post(&me, "two").await;
    app.put(&format!("/api/v1/posts/{p1}/like"), Some(&a.token))
        .await;
    app.put(&format!("/api/v1/posts/{p2}/like"), Some(&a.token))
        .await;
    app.comment(&a, p2, "!", None).await;
    assert_eq!(unread(&app, &me).await, 3);
    let (_, page) = app.get("/api/v1/notifications", Some(&me.token)).await;
    let middle = page["items"][1]["id"].as_i64().unwrap();
    let (s, r) = app
        .post(
            "/api/v1/notifications/read",
            Some(&me.token),
            json!({"upTo": middle}),
        )
        .await;
    assert_eq!((s.as_u16(), r["unread"].as_i64()), (200, Some(1)));
    let (_, page) = app.get("/api/v1/notifications", Some(&me.token)).await;
    let read: Vec<bool> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["read"].as_bool().unwrap())
        .collect();
    assert_eq!(read, vec![false, true, true]);
    let r = app
        .client
        .post(format!("{}/api/v1/notifications/read", app.base))
        .bearer_auth(&me.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(unread(&app, &me).await, 0);
    assert_eq!(app.get("/api/v1/notifications", None).await.0.as_u16(), 401);
}

#[tokio::test]
async fn blocked_users_do_not_notify() {
    let app = spawn_app().await;
    let me = app.user("quiet").await;
    let pest = app.user("pest").await;
    let post = app.text_post(&me, "p").await;
    app.put(
        &format!("/api/v1/users/{}/block", pest.uid),
        Some(&me.token),
    )
    .await;
    // The post is hidden from the pest: nothing to like or comment on.
    assert_eq!(
        app.put(&format!("/api/v1/posts/{post}/like"), Some(&pest.token))
            .await
            .0
            .as_u16(),
        404
    );
    assert_eq!(
        app.put(
            &format!("/api/v1/users/{}/follow", me.uid),
            Some(&pest.token)
        )
        .await
        .0
        .as_u16(),
        404
    );
    assert_eq!(inbox(&app, &me).await, Vec::<(String, i64)>::new());
}

#[tokio::test]
async fn notifications_older_than_30_days_are_gone_everywhere() {
    let app = spawn_app().await;
    let me = app.user("oldtimer").await;
    let a = app.user("longago").await;
    let now = moments::ids::now_ms();
    for (age_days, dedupe) in [(31, "old"), (29, "recent")] {
        let at = now - age_days * 24 * 3600 * 1000;
        let inserted = app
            .ctx
            .docs
            .insert_notification(&moments::store::NotificationDoc {
                dedupe: dedupe.into(),
                ..moments::store::NotificationDoc::new(
                    moments::ids::first_id_at(at) + 1,
                    me.uid,
                    moments::store::NotificationKind::Follow,
                    a.uid,
                )
            })
            .await
            .unwrap();
        assert!(inserted);
    }
    let (_, page) = app.get("/api/v1/notifications", Some(&me.token)).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(unread(&app, &me).await, 1);
    // And the sweep deletes the old one, on every backend, and nothing else.
    moments::service::jobs::expiry::sweep_once(app.ctx.docs.as_ref()).await;
    let since = now - 40 * 24 * 3600 * 1000;
    let left = app
        .ctx
        .docs
        .notifications_page(me.uid, since, None, 10)
        .await
        .unwrap();
    let kept: Vec<&str> = left.iter().map(|n| n.dedupe.as_str()).collect();
    assert_eq!(kept, vec!["recent"]);
}

#[tokio::test]
async fn marking_read_is_one_write_and_unread_counts_are_capped() {
    let app = spawn_app().await;
    let me = app.user("inbox").await;
    let a = app.user("sender").await;
    let now = moments::ids::now_ms();
    let backlog = moments::service::notifications::MAX_UNREAD + 5;
    for i in 0..backlog as i64 {
        let id = moments::ids::first_id_at(now - 60_000) + i;
        app.ctx
            .docs
            .insert_notification(&moments::store::NotificationDoc {
                dedupe: format!("n{i}"),
                ..moments::store::NotificationDoc::new(
                    id,
                    me.uid,
                    moments::store::NotificationKind::Follow,
                    a.uid,
                )
            })
            .await
            .unwrap();
    }
    assert_eq!(
        unread(&app, &me).await as u64,
        moments::service::notifications::MAX_UNREAD
    );
    let before = app.ctx.round_trips.snapshot().0;
    let (s, r) = app
        .post("/api/v1/notifications/read", Some(&me.token), json!({}))
        .await;
    assert_eq!((s.as_u16(), r["unread"].as_i64()), (200, Some(0)));
    // The mark, then the count: no walk through the backlog.
    assert!(app.ctx.round_trips.snapshot().0 - before <= 3);
    // A mark far in the future covers only what exists: the next one is unread.
    app.post(
        "/api/v1/notifications/read",
        Some(&me.token),
        json!({"upTo": i64::MAX}),
    )
    .await;
    app.put(&format!("/api/v1/users/{}/follow", me.uid), Some(&a.token))
        .await;
    assert_eq!(unread(&app, &me).await, 1);
}

#[tokio::test]
async fn blocking_someone_hides_what_they_did_before() {
    let app = spawn_app().await;
    let me = app.user("reader2").await;
    let pest = app.user("pest2").await;
    let post = app.text_post(&me, "p").await;
    app.put(&format!("/api/v1/posts/{post}/like"), Some(&pest.token))
        .await;
    assert_eq!(inbox(&app, &me).await, vec![("like".to_string(), pest.uid)]);
    app.put(
        &format!("/api/v1/users/{}/block", pest.uid),
        Some(&me.token),
    )
    .await;
    assert_eq!(inbox(&app, &me).await, Vec::<(String, i64)>::new());
}

#[tokio::test]
async fn a_notification_about_a_post_one_can_no_longer_see_quotes_nothing() {
    let app = spawn_app().await;
    let author = app.user("poster").await;
    let commenter = app.user("commenter").await;
    let liker = app.user("liker").await;
    let post = app.text_post(&author, "a secret soon").await;
    let c = app.comment(&commenter, post, "my words", None).await["id"]
        .as_i64()
        .unwrap();
    app.put(&format!("/api/v1/comments/{c}/like"), Some(&liker.token))
        .await;
    let quoted = |page: &serde_json::Value| {
        let n = &page["items"][0];
        (
            n["kind"].clone(),
            n["post"].is_null(),
            n["comment"].is_null(),
        )
    };
    let (_, page) = app
        .get("/api/v1/notifications", Some(&commenter.token))
        .await;
    assert_eq!(quoted(&page), (json!("like"), false, false), "{page}");
    // The post's author blocks the commenter: the post is gone for them,
    // and so is every quote from it.
    app.put(
        &format!("/api/v1/users/{}/block", commenter.uid),
        Some(&author.token),
    )
    .await;
    let (_, page) = app
        .get("/api/v1/notifications", Some(&commenter.token))
        .await;
    assert_eq!(quoted(&page), (json!("like"), true, true), "{page}");
}

#[tokio::test]
async fn a_quoted_reply_follows_the_friends_rule_of_today() {
    let app = spawn_app().await;
    let author = app.user("circle").await;
    let b = app.user("bestie").await;
    let c = app.user("acquaint").await;
    for (x, y) in [
        (&author, &b),
        (&b, &author),
        (&author, &c),
        (&c, &author),
        (&b, &c),
        (&c, &b),
    ] {
        app.put(&format!("/api/v1/users/{}/follow", y.uid), Some(&x.token))
            .await;
    }
    let (_, post) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "friends", "visibility": "friends"}),
        )
        .await;
    let post = post["id"].as_i64().unwrap();
    let mine = app.comment(&b, post, "b speaks", None).await["id"]
        .as_i64()
        .unwrap();
    app.comment(&c, post, "c answers b", Some(mine)).await;
    assert_eq!(quoted_reply(&app, &b).await["content"], "c answers b");
    // No longer friends: c's reply is hidden from b on the post, and so in
    // b's notification.
    app.delete(&format!("/api/v1/users/{}/follow", c.uid), Some(&b.token))
        .await;
    assert!(quoted_reply(&app, &b).await.is_null());
}

/// The comment quoted by `who`'s reply notification.
async fn quoted_reply(app: &TestApp, who: &User) -> serde_json::Value {
    let (_, page) = app.get("/api/v1/notifications", Some(&who.token)).await;
    let reply = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "reply")
        .cloned()
        .unwrap();
    reply["comment"].clone()
}

#[tokio::test]
async fn a_post_mentions_only_people_who_may_see_it_and_notifies_each_once() {
    use crate::helpers::{assert_problem, follow};
    let app = spawn_app().await;
    let zhang = app.user("zhangsan").await;
    let li = app.user("lisi").await; // a friend
    let wang = app.user("wangwu").await; // a follower
    let zhao = app.user("zhaoliu").await; // blocked by zhang
    follow(&app, &zhang, &li).await;
    follow(&app, &li, &zhang).await;
    follow(&app, &wang, &zhang).await;
    let block = format!("/api/v1/users/{}/block", zhao.uid);
    assert_eq!(app.put(&block, Some(&zhang.token)).await.0.as_u16(), 200);
    let publish = |visibility: &str, mentions: Vec<i64>| {
        app.post(
            "/api/v1/posts",
            Some(&zhang.token),
            json!({"category": "TEXT", "content": "看这里", "visibility": visibility, "mentions": mentions}),
        )
    };

    // Refused as unprocessable (well formed, naming who may not be
    // named), naming those who may not see it; nothing is published.
    let refused = publish("friends", vec![li.uid, wang.uid]).await;
    let p = assert_problem(&refused, 422, "unprocessable");
    assert_eq!(p["field"], "mentions");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains(&wang.uid.to_string()), "{detail}");
    assert!(!detail.contains(&li.uid.to_string()), "{detail}");

    let unknown = publish("public", vec![li.uid, 1_000_000_000_000_001]).await;
    let p = assert_problem(&unknown, 422, "unprocessable");
    assert_eq!(p["field"], "mentions");
    assert!(p["detail"].as_str().unwrap().contains("1000000000000001"));
    let own = publish("public", vec![zhang.uid]).await;
    assert_eq!(
        assert_problem(&own, 422, "unprocessable")["field"],
        "mentions"
    );
    // Too many is malformed, whoever they are.
    let crowd: Vec<i64> = (1..=11).collect();
    let p = assert_problem(&publish("public", crowd).await, 400, "invalid_input");
    assert_eq!(p["field"], "mentions");
    let (_, mine) = app
        .get(
            &format!("/api/v1/users/{}/posts", zhang.uid),
            Some(&zhang.token),
        )
        .await;
    assert_eq!(mine["items"], json!([]), "refused posts were not stored");
    for who in [&li, &wang, &zhao] {
        assert!(inbox(&app, who).await.iter().all(|(k, _)| k != "mention"));
    }

    // Each one mentioned, however often, hears of it once; one across a
    // block is passed over in silence (naming them would tell who blocked
    // whom).
    let (s, created) = publish("followers", vec![li.uid, wang.uid, li.uid, zhao.uid]).await;
    assert_eq!(s.as_u16(), 201, "{created}");
    for who in [&li, &wang] {
        // Newest first: the mention, then (for Li) Zhang's follow.
        let inbox = inbox(&app, who).await;
        let mentions: Vec<&(String, i64)> = inbox.iter().filter(|(k, _)| k == "mention").collect();
        assert_eq!(mentions, vec![&("mention".to_string(), zhang.uid)]);
        assert_eq!(inbox[0].0, "mention");
        let (_, page) = app.get("/api/v1/notifications", Some(&who.token)).await;
        assert_eq!(page["items"][0]["postId"], created["id"], "{page}");
    }
    assert!(inbox(&app, &zhao).await.is_empty());
}

/// A follow notification from `actor` to `me`, written straight to the
/// documents (as `notify` would), `ago_ms` old.
async fn backdated_follow(app: &TestApp, me: &User, actor: i64, id: i64, dedupe: String) {
    app.ctx
        .docs
        .insert_notification(&moments::store::NotificationDoc {
            dedupe,
            ..moments::store::NotificationDoc::new(
                id,
                me.uid,
                moments::store::NotificationKind::Follow,
                actor,
            )
        })
        .await
        .unwrap();
}

/// The badge (and the stream's `unread`) counts what the list shows: not
/// what someone who blocked the reader since did, nor what a suspended
/// account did; and a backlog of hidden ones costs the count a bounded
/// read, however long it is.
#[tokio::test]
async fn the_unread_count_counts_only_what_the_list_shows() {
    use moments::service::notifications::{UNREAD_BATCH, UNREAD_SCAN};
    let app = spawn_app().await;
    let me = app.user("badge").await;
    let (pest, rogue, fan) = (
        app.user("badge_pest").await,
        app.user("badge_rogue").await,
        app.user("badge_fan").await,
    );
    let post = app.text_post(&me, "like me").await;
    for who in [&pest, &rogue, &fan] {
        app.put(&format!("/api/v1/posts/{post}/like"), Some(&who.token))
            .await;
    }
    assert_eq!(inbox(&app, &me).await.len(), 3);
    assert_eq!(unread(&app, &me).await, 3);
    let mut stream = crate::sse::open(
        &app.client,
        &format!("{}/api/v1/stream", app.base),
        Some(&me.token),
        None,
    )
    .await
    .map_err(|e| e.0)
    .expect("a stream");
    stream.until("ready", |_| true).await;

    // The pest blocks me; the rogue is suspended.
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/block", me.uid),
            Some(&pest.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    let reporter = app.user("badge_reporter").await;
    let body = json!({"targetType": "user", "targetId": rogue.uid, "category": "spam"});
    assert_eq!(crate::reports::report(&app, &reporter, body).await.0, 201);
    let m = crate::reports::moderator(&app, "badge_mod").await;
    let (s, v) = crate::strikes::act_on(
        &app,
        &m,
        json!({"kind": "user", "id": rogue.uid}),
        json!({"action": "suspend", "days": 1}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(inbox(&app, &me).await, vec![("like".to_string(), fan.uid)]);
    assert_eq!(
        unread(&app, &me).await,
        1,
        "the badge counts what the list shows"
    );
    // The stream's count is the same one.
    let other = app.user("badge_other").await;
    app.put(&format!("/api/v1/posts/{post}/like"), Some(&other.token))
        .await;
    let (n, _) = stream
        .until("notification", |d| d["actor"]["uid"] == other.uid)
        .await;
    let count = stream.expect("unread").await;
    assert_eq!(count.id, n.id);
    assert_eq!(count.data, json!({"unread": 2}));
    assert_eq!(inbox(&app, &me).await.len(), 2);

    // A long backlog of the pest's, older than what shows: the count reads
    // a bounded run of it, not all of it.
    let start = moments::ids::first_id_at(moments::ids::now_ms() - 3_600_000);
    for i in 0..(2 * UNREAD_SCAN) as i64 {
        backdated_follow(&app, &me, pest.uid, start + i, format!("b{i}")).await;
    }
    assert_eq!(unread(&app, &me).await, 2);
    // Counted on the count's own task: the instance's background work
    // (sweeps, the search indexer, the stream) reads the same stores.
    let (count, (reads, _)) = moments::store::metered::count_request_trips(
        moments::service::notifications::unread(&app.ctx, me.uid, moments::ids::now_ms()),
    )
    .await;
    assert_eq!(count.map_err(|e| e.to_string()).unwrap().unread, 2);
    // The count, the pages of the bounded run, and at most one read each
    // for the reader's relations, whether the actors blocked the reader and
    // their cards, where the cache does not hold them: the pest is judged
    // once, not once a page, and never a page per 400 of the backlog.
    let bound = (UNREAD_SCAN / UNREAD_BATCH) as u32 + 4;
    assert!(reads <= bound, "{reads} document reads, over {bound}");
}
