//! Moderators' actions and what they do, through the API on this backend:
//! content removed from every read but its author's, suspensions and bans
//! (no sign-in, content gone, back when lifted), strikes the account sees,
//! appeals in the queue, and posts a filter holds until approved.

use moments::ids::DAY_MS;
use serde_json::{json, Value};

use crate::helpers::{assert_problem, follow, spawn_app, wait_until, whole_feed, TestApp, User};
use crate::reports::{moderator, queue, report};

/// Closes the one open case about `target` with `body`.
pub(crate) async fn act_on(app: &TestApp, m: &User, target: Value, body: Value) -> (u16, Value) {
    let items = queue(app, m, "").await;
    let item = items
        .iter()
        .find(|i| i["target"] == target)
        .unwrap_or_else(|| panic!("no open item about {target}: {items:?}"));
    let id = item["id"].as_i64().unwrap();
    let (s, v) = app
        .post(
            &format!("/api/v1/admin/reports/{id}/actions"),
            Some(&m.token),
            body,
        )
        .await;
    (s.as_u16(), v)
}

async fn strikes(app: &TestApp, who: &User) -> Vec<Value> {
    let (s, v) = app.get("/api/v1/me/strikes", Some(&who.token)).await;
    assert_eq!(s.as_u16(), 200, "{v}");
    v["items"].as_array().unwrap().clone()
}

async fn notified(app: &TestApp, who: &User, kind: &'static str, strike: i64) {
    wait_until(kind, || {
        let (app, token) = (app, who.token.clone());
        async move {
            let (_, n) = app.get("/api/v1/notifications", Some(&token)).await;
            n["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["kind"] == kind && n["strikeId"] == strike)
        }
    })
    .await;
}

async fn post_status(app: &TestApp, who: &User, post: i64) -> (u16, Value) {
    let (s, v) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&who.token))
        .await;
    (s.as_u16(), v)
}

#[tokio::test]
async fn removed_content_is_gone_from_every_read_but_its_authors_and_is_a_strike() {
    let app = spawn_app().await;
    let author = app.user("rmauthor").await;
    let reader = app.user("rmreader").await;
    follow(&app, &reader, &author).await;
    let post = app.text_post(&author, "违规内容").await;
    let kept = app.text_post(&author, "a fine post").await;
    let on_kept = app.comment(&author, kept, "a rude comment", None).await;
    let comment = on_kept["id"].as_i64().unwrap();
    assert!(whole_feed(&app, &reader, 10).await.contains(&post));
    let body = json!({"targetType": "post", "targetId": post, "category": "hate"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let body = json!({"targetType": "comment", "targetId": comment, "category": "harassment"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let m = moderator(&app, "rmmod").await;
    let (s, closed) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": post}),
        json!({"action": "remove_content", "note": "仇恨言论", "shareWithReporter": true}),
    )
    .await;
    assert_eq!(s, 200, "{closed}");
    assert_eq!(closed["state"], "actioned");
    // Gone for the reader: by id, in the feed, in the album.
    assert_eq!(post_status(&app, &reader, post).await.0, 404);
    assert!(!whole_feed(&app, &reader, 10).await.contains(&post));
    let (_, album) = app
        .get(
            &format!("/api/v1/users/{}/posts", author.uid),
            Some(&reader.token),
        )
        .await;
    let shown: Vec<i64> = album["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(shown, [kept], "{album}");
    // Its author still has it, marked.
    let (s, own) = post_status(&app, &author, post).await;
    assert_eq!(
        (s, own["moderation"].clone()),
        (200, json!("removed")),
        "{own}"
    );
    // A strike, with what was struck and why (shared), and its notice.
    let struck = strikes(&app, &author).await;
    assert_eq!(struck.len(), 1, "{struck:?}");
    assert_eq!(struck[0]["action"], "remove_content");
    assert_eq!(struck[0]["snapshot"]["text"], "违规内容");
    assert_eq!(struck[0]["reason"], "仇恨言论");
    assert!(struck[0]["appealableUntil"].as_i64().unwrap() > struck[0]["at"].as_i64().unwrap());
    notified(&app, &author, "strike", struck[0]["id"].as_i64().unwrap()).await;
    // A removed comment leaves the lists and the count, for everyone.
    let (s, _) = act_on(
        &app,
        &m,
        json!({"kind": "comment", "id": comment}),
        json!({"action": "remove_content"}),
    )
    .await;
    assert_eq!(s, 200);
    for who in [&reader, &author] {
        let (_, p) = post_status(&app, who, kept).await;
        assert_eq!(p["commentCount"], 0, "{p}");
        assert_eq!(p["comments"], json!([]), "{p}");
    }
    let struck = strikes(&app, &author).await;
    assert_eq!(struck.len(), 2);
    assert_eq!(struck[0]["snapshot"]["text"], "a rude comment");
    // Nobody else has strikes.
    assert!(strikes(&app, &reader).await.is_empty());
}

#[tokio::test]
async fn a_suspended_account_cannot_sign_in_and_its_content_is_gone_until_lifted() {
    let app = spawn_app().await;
    let author = app.user("spauthor").await;
    let reader = app.user("spreader").await;
    follow(&app, &reader, &author).await;
    let post = app.text_post(&author, "still mine").await;
    let on_other = app.text_post(&reader, "the reader's post").await;
    app.comment(&author, on_other, "the suspended one's comment", None)
        .await;
    let (s, _) = app
        .put(
            &format!("/api/v1/posts/{on_other}/like"),
            Some(&author.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    // What the reader sees of the author on their own post: the comment,
    // the like, the notifications of both.
    let traces = || async {
        let (_, comments) = app
            .get(
                &format!("/api/v1/posts/{on_other}/comments"),
                Some(&reader.token),
            )
            .await;
        let (_, likes) = app
            .get(
                &format!("/api/v1/posts/{on_other}/likes"),
                Some(&reader.token),
            )
            .await;
        let (_, notes) = app.get("/api/v1/notifications", Some(&reader.token)).await;
        let by_author = |v: &Value, at: &str| {
            v["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i[at]["uid"] == author.uid)
                .count()
        };
        (
            by_author(&comments, "author"),
            by_author(&likes, "user"),
            by_author(&notes, "actor"),
        )
    };
    assert_eq!(traces().await, (1, 1, 2));
    let body = json!({"targetType": "user", "targetId": author.uid, "category": "spam"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let m = moderator(&app, "spmod").await;
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "user", "id": author.uid}),
        json!({"action": "suspend", "days": 3}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    // Sessions ended; signing in says until when, to whoever knows the
    // password only.
    let (s, _) = app.get("/api/v1/me", Some(&author.token)).await;
    assert_eq!(s.as_u16(), 401);
    let refused = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "spauthor", "password": "password-123"}),
        )
        .await;
    let problem = assert_problem(&refused, 403, "account_suspended");
    assert!(
        problem["detail"].as_str().unwrap().contains("until"),
        "{problem}"
    );
    let left = problem["until"].as_i64().unwrap() - moments::ids::now_ms();
    assert!((2 * DAY_MS..=3 * DAY_MS).contains(&left), "{problem}");
    let wrong = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "spauthor", "password": "not-the-password"}),
        )
        .await;
    assert_eq!(wrong.0.as_u16(), 401);
    // Everything of theirs is gone from every reader.
    assert_eq!(post_status(&app, &reader, post).await.0, 404);
    assert!(!whole_feed(&app, &reader, 10).await.contains(&post));
    let (s, _) = app
        .get(
            &format!("/api/v1/users/{}", author.uid),
            Some(&reader.token),
        )
        .await;
    assert_eq!(s.as_u16(), 404);
    let (_, p) = post_status(&app, &reader, on_other).await;
    assert_eq!(p["comments"], json!([]), "{p}");
    assert_eq!(traces().await, (0, 0, 0));
    // Only an admin lifts it; then all of it is back.
    let path = format!("/api/v1/admin/users/{}/suspension", author.uid);
    assert_eq!(app.delete(&path, Some(&m.token)).await.0.as_u16(), 403);
    let admin = app.admin().await;
    assert_eq!(app.delete(&path, Some(&admin.token)).await.0.as_u16(), 204);
    assert_eq!(app.delete(&path, Some(&admin.token)).await.0.as_u16(), 409);
    let token = app.login("spauthor", "password-123").await;
    let (s, _) = app.get("/api/v1/me", Some(&token)).await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(post_status(&app, &reader, post).await.0, 200);
    assert!(whole_feed(&app, &reader, 10).await.contains(&post));
    let (_, p) = post_status(&app, &reader, on_other).await;
    assert_eq!(p["comments"][0]["content"], "the suspended one's comment");
    assert_eq!(traces().await, (1, 1, 2));
    // The strike stands, with its end.
    let author = User { token, ..author };
    let struck = strikes(&app, &author).await;
    assert_eq!(struck[0]["action"], "suspend");
    let length = struck[0]["until"].as_i64().unwrap() - struck[0]["at"].as_i64().unwrap();
    assert_eq!(length, 3 * DAY_MS, "counted from when the item closed");
    assert!(struck[0]["liftedAt"].is_i64(), "{:?}", struck[0]);
    // A ban: signing in says so; the audit log has both.
    let body = json!({"targetType": "user", "targetId": author.uid, "category": "spam"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let (s, _) = act_on(
        &app,
        &m,
        json!({"kind": "user", "id": author.uid}),
        json!({"action": "ban", "note": "repeat"}),
    )
    .await;
    assert_eq!(s, 200);
    let refused = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "spauthor", "password": "password-123"}),
        )
        .await;
    let problem = assert_problem(&refused, 403, "account_suspended");
    assert!(
        problem["detail"].as_str().unwrap().contains("banned"),
        "{problem}"
    );
    assert!(problem.get("until").is_none(), "{problem}");
    // Banned, it cannot sign in to appeal: it appeals with its password,
    // the strike the refusal named.
    let ban = problem["strikeId"].as_i64().unwrap();
    let appeal = |password: &str, strike: i64| {
        let body = json!({"username": "spauthor", "password": password,
            "strikeId": strike, "text": "我没有发广告"});
        let app = &app;
        async move {
            let (s, v) = app.post("/api/v1/appeals", None, body).await;
            (s.as_u16(), v)
        }
    };
    assert_eq!(appeal("not-the-password", ban).await.0, 401);
    let (s, v) = appeal("password-123", ban).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(
        (v["action"].clone(), v["appeal"]["state"].clone()),
        (json!("ban"), json!("open"))
    );
    assert_eq!(appeal("password-123", ban).await.0, 409);
    let (s, v) = app
        .post(
            "/api/v1/appeals",
            None,
            json!({"username": "spreader", "password": "password-123", "strikeId": ban, "text": "x"}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["field"].clone()),
        (422, json!("username")),
        "{v}"
    );
    // A ban's appeal is an admin's to overturn; then the account is back.
    let target = json!({"kind": "appeal", "id": ban});
    let (s, _) = act_on(&app, &m, target.clone(), json!({"action": "overturn"})).await;
    assert_eq!(s, 403);
    let (s, v) = act_on(&app, &admin, target, json!({"action": "overturn"})).await;
    assert_eq!(s, 200, "{v}");
    app.login("spauthor", "password-123").await;
    let (_, log) = app.get("/api/v1/admin/audit-log", Some(&admin.token)).await;
    let actions: Vec<&str> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for expected in ["report.suspend", "account.lift_suspension", "report.ban"] {
        assert!(actions.contains(&expected), "{expected}: {actions:?}");
    }
}

#[tokio::test]
async fn an_appeal_is_a_case_and_overturning_it_withdraws_the_strike() {
    let app = spawn_app().await;
    let author = app.user("apauthor").await;
    let reader = app.user("apreader").await;
    let removed = app.text_post(&author, "removed, then restored").await;
    let warned = app.text_post(&author, "warned for").await;
    let m = moderator(&app, "apmod").await;
    for (post, action) in [(removed, "remove_content"), (warned, "warn")] {
        let body = json!({"targetType": "post", "targetId": post, "category": "other"});
        assert_eq!(report(&app, &reader, body).await.0, 201);
        let (s, v) = act_on(
            &app,
            &m,
            json!({"kind": "post", "id": post}),
            json!({"action": action}),
        )
        .await;
        assert_eq!(s, 200, "{v}");
    }
    assert_eq!(post_status(&app, &reader, removed).await.0, 404);
    // The warning changes nothing but the strike.
    assert_eq!(post_status(&app, &reader, warned).await.0, 200);
    let struck = strikes(&app, &author).await;
    let id_of = |action: &str| {
        struck.iter().find(|s| s["action"] == action).unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    let (removal, warning) = (id_of("remove_content"), id_of("warn"));
    // Only one's own strikes, once each, with something to say.
    let appeal = |who: &User, strike: i64, text: &str| {
        let (app, token, text) = (&app, who.token.clone(), text.to_string());
        async move {
            let (s, v) = app
                .post(
                    &format!("/api/v1/me/strikes/{strike}/appeal"),
                    Some(&token),
                    json!({"text": text}),
                )
                .await;
            (s.as_u16(), v)
        }
    };
    assert_eq!(appeal(&reader, removal, "not mine").await.0, 404);
    assert_eq!(appeal(&author, removal, "").await.0, 400);
    let (s, v) = appeal(&author, removal, "那是引用，不是我的观点").await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["appeal"]["state"], "open");
    assert!(v.get("appealableUntil").is_none(), "{v}");
    assert_eq!(appeal(&author, removal, "again").await.0, 409);
    let (s, _) = appeal(&author, warning, "the warning too").await;
    assert_eq!(s, 201);
    // In the queue, as appeals: only dismissing or overturning fits.
    let target = json!({"kind": "appeal", "id": removal});
    let items = queue(&app, &m, "").await;
    let item = items.iter().find(|i| i["target"] == target).unwrap();
    assert_eq!(item["appeal"]["text"], "那是引用，不是我的观点");
    assert_eq!(item["appeal"]["action"], "remove_content");
    assert_eq!(item["snapshot"]["text"], "removed, then restored");
    assert_eq!(item["account"]["uid"], author.uid);
    // The item itself carries the account's strikes, and its closed items.
    let (_, one) = app
        .get(
            &format!("/api/v1/admin/reports/{}", item["id"]),
            Some(&m.token),
        )
        .await;
    let mut shown: Vec<(i64, bool)> = one["strikes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_i64().unwrap(), s["appealed"].as_bool().unwrap()))
        .collect();
    shown.sort_unstable();
    let mut expected = vec![(removal, true), (warning, true)];
    expected.sort_unstable();
    assert_eq!(shown, expected, "{one}");
    assert_eq!(one["history"].as_array().unwrap().len(), 2, "{one}");
    let (s, v) = act_on(&app, &m, target.clone(), json!({"action": "warn"})).await;
    assert_eq!((s, v["field"].clone()), (422, json!("action")), "{v}");
    let (s, v) = act_on(&app, &m, target, json!({"action": "overturn"})).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "appeal", "id": warning}),
        json!({"action": "dismiss"}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    // The removal is withdrawn and the post back; the warning stands.
    assert_eq!(post_status(&app, &reader, removed).await.0, 200);
    let (_, own) = post_status(&app, &author, removed).await;
    assert!(own.get("moderation").is_none(), "{own}");
    let struck = strikes(&app, &author).await;
    let by_id = |id: i64| struck.iter().find(|s| s["id"] == id).unwrap().clone();
    assert_eq!(by_id(removal)["appeal"]["state"], "accepted");
    assert!(by_id(removal)["overturnedAt"].is_i64());
    assert_eq!(by_id(warning)["appeal"]["state"], "rejected");
    assert!(by_id(warning).get("overturnedAt").is_none());
    notified(&app, &author, "appeal_closed", removal).await;
    notified(&app, &author, "appeal_closed", warning).await;
}

#[tokio::test]
async fn a_held_post_is_its_authors_alone_until_a_moderator_approves_it() {
    let app = spawn_app().await;
    let m = moderator(&app, "hdmod").await;
    let author = app.user("hdauthor").await;
    let reader = app.user("hdreader").await;
    follow(&app, &reader, &author).await;
    let (s, filter) = app
        .post(
            "/api/v1/admin/filters",
            Some(&m.token),
            json!({"term": "代购", "action": "hold", "reason": "待审核"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{filter}");
    // Caught through an evasion, published to its author alone.
    let (s, held) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "海外 代 购，私聊"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{held}");
    assert_eq!(held["moderation"], "held");
    let post = held["id"].as_i64().unwrap();
    assert_eq!(post_status(&app, &reader, post).await.0, 404);
    assert!(!whole_feed(&app, &reader, 10).await.contains(&post));
    assert!(whole_feed(&app, &author, 10).await.contains(&post));
    // A hold filter refuses what cannot be held.
    let (s, v) = app
        .post(
            &format!("/api/v1/posts/{post}/comments"),
            Some(&author.token),
            json!({"content": "代购"}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["field"].clone()),
        (422, json!("content")),
        "{v}"
    );
    // In the queue with the filter that held it; approving publishes it.
    let target = json!({"kind": "post", "id": post});
    let items = queue(&app, &m, "").await;
    let item = items.iter().find(|i| i["target"] == target).unwrap();
    assert_eq!(item["held"]["reason"], "待审核");
    assert_eq!(item["reporterCount"], 0);
    let (s, v) = act_on(
        &app,
        &m,
        target,
        json!({"action": "dismiss", "heldCount": 1}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(post_status(&app, &reader, post).await.0, 200);
    assert!(whole_feed(&app, &reader, 10).await.contains(&post));
    let (_, own) = post_status(&app, &author, post).await;
    assert!(own.get("moderation").is_none(), "{own}");
    // Approving is no strike.
    assert!(strikes(&app, &author).await.is_empty());
    // Another held post, removed: a strike, and never published.
    let (_, second) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "代购 again"}),
        )
        .await;
    let second = second["id"].as_i64().unwrap();
    let (s, _) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": second}),
        json!({"action": "warn", "heldCount": 1}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(post_status(&app, &reader, second).await.0, 404);
    let (_, own) = post_status(&app, &author, second).await;
    assert_eq!(own["moderation"], "removed", "{own}");
    assert_eq!(strikes(&app, &author).await.len(), 1);
}

#[tokio::test]
async fn actions_that_do_not_fit_the_item_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let author = app.user("fitauthor").await;
    let reader = app.user("fitreader").await;
    let body = json!({"targetType": "user", "targetId": author.uid, "category": "spam"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let m = moderator(&app, "fitmod").await;
    let target = json!({"kind": "user", "id": author.uid});
    for (body, status, field) in [
        (json!({"action": "remove_content"}), 422, "action"),
        (json!({"action": "overturn"}), 422, "action"),
        (json!({"action": "suspend"}), 422, "days"),
        (json!({"action": "warn", "days": 2}), 422, "days"),
        (json!({"action": "suspend", "days": 366}), 400, "days"),
        (json!({"action": "suspend", "days": 0}), 400, "days"),
    ] {
        let (s, v) = act_on(&app, &m, target.clone(), body.clone()).await;
        assert_eq!(
            (s, v["field"].clone()),
            (status, json!(field)),
            "{body}: {v}"
        );
    }
    // Still open, no strike, and the account untouched.
    assert_eq!(queue(&app, &m, "").await.len(), 1);
    assert!(strikes(&app, &author).await.is_empty());
    let (s, _) = app.get("/api/v1/me", Some(&author.token)).await;
    assert_eq!(s.as_u16(), 200);
}

#[tokio::test]
async fn snapshots_are_erased_with_the_deleted_account_once_closed_and_after_the_retention() {
    let app = spawn_app().await;
    let m = moderator(&app, "ermod").await;
    let reader = app.user("erreader").await;
    let gone = app.user("ergone").await;
    let stays = app.user("erstays").await;
    let closed_first = app.text_post(&gone, "closed before the deletion").await;
    let open_at_deletion = app.text_post(&gone, "open at the deletion").await;
    let other = app.text_post(&stays, "another account's").await;
    let left_open = app.text_post(&stays, "left open").await;
    for post in [closed_first, open_at_deletion, other, left_open] {
        let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
        assert_eq!(report(&app, &reader, body).await.0, 201);
    }
    let (s, _) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": closed_first}),
        json!({"action": "remove_content"}),
    )
    .await;
    assert_eq!(s, 200);
    app.delete_account(&gone).await;
    let snapshot_of = |state: &'static str, post: i64| {
        let (app, m) = (&app, &m);
        async move {
            let items = queue(app, m, &format!("?state={state}")).await;
            items
                .iter()
                .find(|i| i["target"]["id"] == post)
                .unwrap_or_else(|| panic!("no {state} item of {post}: {items:?}"))["snapshot"]
                .clone()
        }
    };
    // The closed item's snapshot is erased with the account: who and when
    // stay, what was reported goes.
    wait_until(
        "the deleted account's closed snapshot is erased",
        || async { snapshot_of("actioned", closed_first).await["erased"] == true },
    )
    .await;
    let erased = snapshot_of("actioned", closed_first).await;
    assert_eq!(
        (erased["text"].clone(), erased["author"].clone()),
        (json!(""), json!(gone.uid))
    );
    // The open one keeps it for the moderator to act on, until it closes.
    let open = snapshot_of("open", open_at_deletion).await;
    assert_eq!(open["text"], "open at the deletion");
    let (s, _) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": open_at_deletion}),
        json!({"action": "dismiss"}),
    )
    .await;
    assert_eq!(s, 200);
    let closed = snapshot_of("dismissed", open_at_deletion).await;
    assert_eq!(
        (closed["erased"].clone(), closed["text"].clone()),
        (json!(true), json!(""))
    );
    // Another account's is untouched, until its closed item outlives the
    // retention (here: none).
    let (s, _) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": other}),
        json!({"action": "dismiss"}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        snapshot_of("dismissed", other).await["text"],
        "another account's"
    );
    moments::service::jobs::expiry::erase_old_snapshots(app.ctx.docs.as_ref(), 1).await;
    assert_eq!(
        snapshot_of("dismissed", other).await["text"],
        "another account's"
    );
    moments::service::jobs::expiry::erase_old_snapshots(app.ctx.docs.as_ref(), 0).await;
    assert_eq!(snapshot_of("dismissed", other).await["erased"], true);
    // An open item keeps its snapshot whatever its age: the retention
    // counts only once it is closed.
    let open = snapshot_of("open", left_open).await;
    assert_eq!(
        (open["text"].clone(), open.get("erased")),
        (json!("left open"), None)
    );
}

#[tokio::test]
async fn only_an_admin_suspends_a_moderator() {
    let app = spawn_app().await;
    let m = moderator(&app, "stmod").await;
    let other = moderator(&app, "stother").await;
    let reader = app.user("streader").await;
    let body = json!({"targetType": "user", "targetId": other.uid, "category": "other"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let target = json!({"kind": "user", "id": other.uid});
    for body in [
        json!({"action": "suspend", "days": 1}),
        json!({"action": "ban"}),
    ] {
        let (s, v) = act_on(&app, &m, target.clone(), body).await;
        assert_eq!(s, 403, "{v}");
    }
    let (s, _) = app.get("/api/v1/me", Some(&other.token)).await;
    assert_eq!(s.as_u16(), 200, "the moderator is still signed in");
    // A warning is any moderator's to give.
    let (s, v) = act_on(&app, &m, target.clone(), json!({"action": "warn"})).await;
    assert_eq!(s, 200, "{v}");
    // An admin may suspend one.
    let body = json!({"targetType": "user", "targetId": other.uid, "category": "other"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let admin = app.admin().await;
    let (s, v) = act_on(
        &app,
        &admin,
        target,
        json!({"action": "suspend", "days": 1}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let (s, _) = app.get("/api/v1/me", Some(&other.token)).await;
    assert_eq!(s.as_u16(), 401);
}

#[tokio::test]
async fn an_action_a_failure_cut_short_is_finished_by_the_sweep() {
    use moments::store::faults::Fault;
    let app = spawn_app().await;
    let author = app.user("cutauthor").await;
    let reader = app.user("cutreader").await;
    let post = app.text_post(&author, "cut short").await;
    let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    let m = moderator(&app, "cutmod").await;
    // The strike's record fails: the item is claimed, the post removed,
    // and the moderator told to look again.
    app.ctx
        .faults
        .inject("ModerationDocs", "insert_strike", Fault::Fail, 1);
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": post}),
        json!({"action": "remove_content", "note": "spam", "shareWithReporter": true}),
    )
    .await;
    assert_eq!(s, 503, "{v}");
    assert!(strikes(&app, &author).await.is_empty());
    assert!(queue(&app, &m, "").await.is_empty(), "the item was claimed");
    // The sweep finishes it: the strike recorded, everyone told.
    moments::service::moderation::finish_unfinished(&app.ctx, 0)
        .await
        .unwrap();
    let struck = strikes(&app, &author).await;
    assert_eq!(struck.len(), 1, "{struck:?}");
    assert_eq!(struck[0]["reason"], "spam");
    notified(&app, &author, "strike", struck[0]["id"].as_i64().unwrap()).await;
    wait_until("the reporter is told", || async {
        let (_, n) = app.get("/api/v1/notifications", Some(&reader.token)).await;
        n["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "report_closed")
    })
    .await;
    assert_eq!(post_status(&app, &reader, post).await.0, 404);
    // Finished once: the sweep leaves it alone from then on.
    assert!(app
        .ctx
        .docs
        .unfinished_cases(i64::MAX, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_deleted_reporters_words_go_and_their_report_stays() {
    let app = spawn_app().await;
    let m = moderator(&app, "wdmod").await;
    let author = app.user("wdauthor").await;
    let leaving = app.user("wdleaving").await;
    let staying = app.user("wdstaying").await;
    let post = app.text_post(&author, "reported twice").await;
    for (who, said) in [(&leaving, "我的理由"), (&staying, "另一个理由")] {
        let body =
            json!({"targetType": "post", "targetId": post, "category": "spam", "comment": said});
        assert_eq!(report(&app, who, body).await.0, 201);
    }
    let (s, v) = app
        .call(
            reqwest::Method::DELETE,
            "/api/v1/me",
            Some(&leaving.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{v}");
    let comments_by = |item: &Value, uid: i64| -> Vec<String> {
        item["reports"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["reporter"]["uid"] == uid)
            .map(|r| r["comment"].as_str().unwrap().to_string())
            .collect()
    };
    wait_until("the deleted reporter's words are erased", || async {
        let items = queue(&app, &m, "").await;
        comments_by(&items[0], leaving.uid) == [""]
    })
    .await;
    let items = queue(&app, &m, "").await;
    assert_eq!(items[0]["reporterCount"], 2, "the report still counts");
    assert_eq!(comments_by(&items[0], staying.uid), ["另一个理由"]);
    let (_, one) = app
        .get(
            &format!("/api/v1/admin/reports/{}", items[0]["id"]),
            Some(&m.token),
        )
        .await;
    assert_eq!(comments_by(&one, leaving.uid), [""], "{one}");
    assert_eq!(comments_by(&one, staying.uid), ["另一个理由"], "{one}");
}

/// The `report_opened` notifications `who` has, by item.
async fn told_of(app: &TestApp, who: &User) -> Vec<Value> {
    let (_, n) = app.get("/api/v1/notifications", Some(&who.token)).await;
    n["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "report_opened")
        .map(|n| n["caseId"].clone())
        .collect()
}

#[tokio::test]
async fn an_authors_held_posts_are_one_item_whose_every_action_covers_them_all() {
    let app = spawn_app().await;
    let m = moderator(&app, "hfmod").await;
    let other = moderator(&app, "hfother").await;
    let author = app.user("hfauthor").await;
    let reader = app.user("hfreader").await;
    follow(&app, &reader, &author).await;
    let (s, filter) = app
        .post(
            "/api/v1/admin/filters",
            Some(&m.token),
            json!({"term": "代购", "action": "hold", "reason": "待审核"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{filter}");
    // More posts than the item shows: every action must reach them all.
    let flood = |n: usize, round: &'static str| {
        let (app, token) = (&app, author.token.clone());
        async move {
            let mut ids = Vec::new();
            for i in 0..n {
                let (s, v) = app
                    .post(
                        "/api/v1/posts",
                        Some(&token),
                        json!({"category": "TEXT", "content": format!("代购 {round} {i}")}),
                    )
                    .await;
                assert_eq!((s.as_u16(), v["moderation"].clone()), (201, json!("held")));
                ids.push(v["id"].as_i64().unwrap());
            }
            ids
        }
    };
    let first = flood(8, "first").await;
    let items = queue(&app, &m, "").await;
    assert_eq!(items.len(), 1, "one item, however many posts: {items:?}");
    let item = &items[0];
    assert_eq!(item["held"]["count"], 8, "{item}");
    assert_eq!(item["held"]["reason"], "待审核");
    let shown: Vec<i64> = item["held"]["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["postId"].as_i64().unwrap())
        .collect();
    let newest: Vec<i64> = first.iter().rev().take(5).copied().collect();
    assert_eq!(shown, newest, "the newest few, newest first");
    assert_eq!(item["held"]["posts"][0]["snapshot"]["text"], "代购 first 7");
    // Each moderator is told once, of the one item.
    for who in [&m, &other] {
        wait_until("the moderator is told", || async {
            !told_of(&app, who).await.is_empty()
        })
        .await;
        assert_eq!(told_of(&app, who).await, vec![item["id"].clone()]);
    }
    // A comment with the term is refused, saying neither term nor filter.
    let clean = app.text_post(&reader, "a clean post").await;
    let (s, v) = app
        .post(
            &format!("/api/v1/posts/{clean}/comments"),
            Some(&author.token),
            json!({"content": "代购"}),
        )
        .await;
    assert_eq!((s.as_u16(), v["field"].clone()), (422, json!("content")));
    let said = v.to_string();
    assert!(
        !said.contains("待审核")
            && !said.contains("代购")
            && !said.contains(&filter["id"].to_string()),
        "{v}"
    );
    // Every one of them, oldest first, page by page: what a moderator
    // looks through before an action that covers them all.
    let id = item["id"].as_i64().unwrap();
    let mut listed = Vec::new();
    let mut cursor = String::new();
    loop {
        let (s, page) = app
            .get(
                &format!("/api/v1/admin/reports/{id}/held-posts?limit=3{cursor}"),
                Some(&m.token),
            )
            .await;
        assert_eq!(s.as_u16(), 200, "{page}");
        for p in page["items"].as_array().unwrap() {
            listed.push(p["postId"].as_i64().unwrap());
            assert_eq!(p["snapshot"]["author"], author.uid, "{p}");
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(listed, first, "all eight, oldest first");
    // Dismissing publishes every one of them, so it says how many the
    // moderator saw; a post held after they looked refuses it.
    for post in &first {
        assert_eq!(post_status(&app, &reader, *post).await.0, 404);
    }
    let dismiss = |body: Value| {
        let (app, token) = (&app, m.token.clone());
        async move {
            let (s, v) = app
                .post(
                    &format!("/api/v1/admin/reports/{id}/actions"),
                    Some(&token),
                    body,
                )
                .await;
            (s.as_u16(), v)
        }
    };
    let (s, v) = dismiss(json!({"action": "dismiss"})).await;
    assert_eq!((s, v["field"].clone()), (422, json!("heldCount")), "{v}");
    let late = flood(1, "late").await;
    let (s, v) = dismiss(json!({"action": "dismiss", "heldCount": 8})).await;
    assert_eq!(s, 409, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("9 posts"), "{v}");
    // Nor does a bulk action cover more than was seen.
    let (s, v) = app
        .post(
            "/api/v1/admin/reports/actions",
            Some(&m.token),
            json!({"ids": [id], "action": "dismiss", "heldCounts": [{"id": id, "count": 8}]}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v.clone()),
        (200, json!([{"id": id, "status": 409}]))
    );
    let (s, v) = app
        .post(
            "/api/v1/admin/reports/actions",
            Some(&m.token),
            json!({"ids": [id], "action": "dismiss", "heldCount": 9}),
        )
        .await;
    assert_eq!((s.as_u16(), v["field"].clone()), (422, json!("heldCount")));
    for post in first.iter().chain(&late) {
        assert_eq!(post_status(&app, &reader, *post).await.0, 404, "{post}");
    }
    let (s, v) = dismiss(json!({"action": "dismiss", "heldCount": 9})).await;
    assert_eq!(s, 200, "{v}");
    for post in first.iter().chain(&late) {
        assert_eq!(post_status(&app, &reader, *post).await.0, 200, "{post}");
    }
    let (s, _) = app
        .get(
            &format!("/api/v1/admin/reports/{id}/held-posts"),
            Some(&m.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "a closed item still lists what it held");
    // The next held posts are a new item; removing it removes them all,
    // one strike for the item; overturning that restores them all.
    let second = flood(7, "second").await;
    let items = queue(&app, &m, "").await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["held"]["count"], 7);
    // Removing covers them all too, so it also says how many were seen.
    let target = json!({"kind": "post", "id": second[0]});
    let (s, v) = act_on(
        &app,
        &m,
        target.clone(),
        json!({"action": "remove_content"}),
    )
    .await;
    assert_eq!((s, v["field"].clone()), (422, json!("heldCount")), "{v}");
    let (s, v) = act_on(
        &app,
        &m,
        target,
        json!({"action": "remove_content", "heldCount": 7}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    for post in &second {
        assert_eq!(post_status(&app, &reader, *post).await.0, 404);
        let (_, own) = post_status(&app, &author, *post).await;
        assert_eq!(own["moderation"], "removed", "{own}");
    }
    let struck = strikes(&app, &author).await;
    assert_eq!(struck.len(), 1, "{struck:?}");
    let strike = struck[0]["id"].as_i64().unwrap();
    let (s, v) = app
        .post(
            &format!("/api/v1/me/strikes/{strike}/appeal"),
            Some(&author.token),
            json!({"text": "引用而已"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{v}");
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "appeal", "id": strike}),
        json!({"action": "overturn"}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    for post in &second {
        assert_eq!(post_status(&app, &reader, *post).await.0, 200, "{post}");
    }
    // Two items of held posts in all, each told once.
    wait_until("the second item is told", || async {
        told_of(&app, &other).await.len() >= 2
    })
    .await;
    assert_eq!(
        told_of(&app, &other).await.len(),
        3,
        "two items and an appeal"
    );
}

#[tokio::test]
async fn an_overturn_racing_a_suspensions_strike_leaves_that_suspension_whole() {
    use moments::store::faults::{Fault, Gate};
    let app = spawn_app().await;
    let author = app.user("orauthor").await;
    let reader = app.user("orreader").await;
    let post = app.text_post(&author, "reported as well").await;
    for body in [
        json!({"targetType": "post", "targetId": post, "category": "spam"}),
        json!({"targetType": "user", "targetId": author.uid, "category": "spam"}),
    ] {
        assert_eq!(report(&app, &reader, body).await.0, 201);
    }
    let m = moderator(&app, "ormod").await;
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "user", "id": author.uid}),
        json!({"action": "suspend", "days": 1}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let sign_in = || {
        app.post(
            "/api/v1/sessions",
            None,
            json!({"username": "orauthor", "password": "password-123"}),
        )
    };
    let refused = sign_in().await;
    let short = assert_problem(&refused, 403, "account_suspended")["strikeId"]
        .as_i64()
        .unwrap();
    let (s, v) = app
        .post(
            "/api/v1/appeals",
            None,
            json!({"username": "orauthor", "password": "password-123",
                "strikeId": short, "text": "一天也不该"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{v}");
    // A 30-day suspension closes, and its strike is held before it is
    // written while the one-day strike's appeal is upheld.
    let gate = Gate::new();
    app.ctx.faults.inject(
        "ModerationDocs",
        "insert_strike",
        Fault::Hold(gate.clone()),
        1,
    );
    let long = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": post}),
        json!({"action": "suspend", "days": 30}),
    );
    let overturn_meanwhile = async {
        gate.reached().await;
        let (s, v) = act_on(
            &app,
            &m,
            json!({"kind": "appeal", "id": short}),
            json!({"action": "overturn"}),
        )
        .await;
        assert_eq!(s, 200, "{v}");
        let refused = sign_in().await;
        gate.open();
        refused
    };
    let ((s, v), refused) = tokio::join!(long, overturn_meanwhile);
    assert_eq!(s, 200, "{v}");
    // The closed suspension held the account throughout, for its 30 days.
    let problem = assert_problem(&refused, 403, "account_suspended");
    let left = problem["until"].as_i64().unwrap() - moments::ids::now_ms();
    assert!(left > 29 * DAY_MS, "{problem}");
    let problem = assert_problem(&sign_in().await, 403, "account_suspended");
    assert!(problem["until"].as_i64().unwrap() - moments::ids::now_ms() > 29 * DAY_MS);
}

#[tokio::test]
async fn of_two_moderators_closing_one_case_at_once_one_closes_it() {
    let app = spawn_app().await;
    let author = app.user("twauthor").await;
    let reader = app.user("twreader").await;
    let (m, other) = (
        moderator(&app, "twmod").await,
        moderator(&app, "twother").await,
    );
    // Rounds, as a race is won by chance: each a new item, closed by both
    // at once with different actions.
    let rounds = 8;
    for round in 0..rounds {
        let post = app.text_post(&author, &format!("round {round}")).await;
        let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
        assert_eq!(report(&app, &reader, body).await.0, 201);
        let item = queue(&app, &m, "")
            .await
            .into_iter()
            .find(|i| i["target"]["id"] == post)
            .unwrap();
        let path = format!("/api/v1/admin/reports/{}/actions", item["id"]);
        let (removal, dismissal) = tokio::join!(
            app.post(&path, Some(&m.token), json!({"action": "remove_content"})),
            app.post(&path, Some(&other.token), json!({"action": "dismiss"})),
        );
        let mut statuses = [removal.0.as_u16(), dismissal.0.as_u16()];
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            [200, 409],
            "round {round}: {removal:?} {dismissal:?}"
        );
        // What the item says was done is what was done.
        let removed = removal.0.as_u16() == 200;
        let (s, _) = post_status(&app, &reader, post).await;
        assert_eq!(s, if removed { 404 } else { 200 }, "round {round}");
    }
    // One strike per removal, one audit entry per item.
    let admin = app.admin().await;
    let (_, log) = app
        .get("/api/v1/admin/audit-log?limit=100", Some(&admin.token))
        .await;
    let closed = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("report."))
        .count();
    assert_eq!(closed, rounds);
    let (s, v) = app
        .get("/api/v1/me/strikes?limit=100", Some(&author.token))
        .await;
    assert_eq!(s.as_u16(), 200);
    let removals = queue(&app, &m, "?state=actioned&limit=100").await.len();
    assert_eq!(v["items"].as_array().unwrap().len(), removals, "{v}");
}

/// The value of `moments_moderation_oldest_open_seconds` on a scrape.
async fn oldest_open_seconds(app: &TestApp, admin: &User) -> f64 {
    let (s, _, body) = app
        .call_with(
            reqwest::Method::GET,
            "/metrics",
            Some(&admin.token),
            &[],
            None,
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{body}");
    let text = body.as_str().expect("a text scrape").to_string();
    text.lines()
        .find_map(|l| l.strip_prefix("moments_moderation_oldest_open_seconds "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no gauge in {text}"))
}

#[tokio::test]
async fn the_spawned_jobs_finish_cut_short_items_erase_old_snapshots_and_gauge_the_queue() {
    use moments::store::faults::Fault;
    use moments::store::{CaseDoc, ReportTarget, Snapshot};
    let mut settings = crate::helpers::test_settings();
    settings.sweep_ms = 100;
    settings.queue_age_ms = 100;
    settings.moderation_retention_days = 1;
    // It asks again and again until the jobs have run.
    settings.rate_limits = None;
    let app = crate::helpers::spawn_app_with(settings).await;
    let author = app.user("jbauthor").await;
    let reader = app.user("jbreader").await;
    let m = moderator(&app, "jbmod").await;
    let admin = app.admin().await;
    // An item opened three days ago (the store is written directly: no
    // request opens one in the past).
    let old_post = app.text_post(&author, "reported long ago").await;
    let opened = moments::ids::now_ms() - 3 * DAY_MS;
    let case = CaseDoc::opening(
        moments::ids::first_id_at(opened),
        ReportTarget {
            kind: moments::domain::report::TargetKind::Post,
            id: old_post,
        },
        author.uid,
        Snapshot {
            author: author.uid,
            author_name: "jbauthor".into(),
            text: "reported long ago".into(),
            picture_urls: Vec::new(),
            visibility: None,
            post_id: None,
            createtime: opened,
            taken_at: opened,
            erased: false,
        },
        opened,
    );
    app.ctx.docs.open_case(&case).await.unwrap();
    // The gauge says how long it has waited, from the job alone (every app
    // of this binary shares the gauge, so it waits to see its own value).
    wait_until("the gauge shows the item three days old", || async {
        oldest_open_seconds(&app, &admin).await >= (3 * DAY_MS / 1000 - 60) as f64
    })
    .await;
    // An action cut short (its strike's record failed) is finished by the
    // spawned sweep, with nobody calling it.
    let post = app.text_post(&author, "cut short").await;
    let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    app.ctx
        .faults
        .inject("ModerationDocs", "insert_strike", Fault::Fail, 1);
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": post}),
        json!({"action": "remove_content"}),
    )
    .await;
    assert_eq!(s, 503, "{v}");
    wait_until("the sweep records the strike", || async {
        strikes(&app, &author).await.len() == 1
    })
    .await;
    // Closed, the old item leaves the gauge, and its snapshot, past the
    // retention, is erased by the sweep; the newer closed one's is not.
    let (s, v) = act_on(
        &app,
        &m,
        json!({"kind": "post", "id": old_post}),
        json!({"action": "dismiss"}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    wait_until("the gauge forgets the closed item", || async {
        oldest_open_seconds(&app, &admin).await < DAY_MS as f64 / 1000.0
    })
    .await;
    wait_until("the old snapshot is erased", || async {
        let items = queue(&app, &m, "?state=dismissed").await;
        items
            .iter()
            .any(|i| i["target"]["id"] == old_post && i["snapshot"]["erased"] == true)
    })
    .await;
    let items = queue(&app, &m, "?state=actioned").await;
    let recent = items.iter().find(|i| i["target"]["id"] == post).unwrap();
    assert_eq!(recent["snapshot"]["text"], "cut short", "{recent}");
}
