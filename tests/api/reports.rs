//! Reports and the moderation queue, through the API on this backend:
//! grouping by target, snapshots that outlive the content, visibility,
//! roles, closing with the reporters told, the audit log, bounds.

use serde_json::{json, Value};

use crate::helpers::{follow, spawn_app, spawn_app_with, test_settings, wait_until, TestApp, User};

pub(crate) async fn report(app: &TestApp, who: &User, body: Value) -> (u16, Value) {
    let (s, v) = app.post("/api/v1/reports", Some(&who.token), body).await;
    (s.as_u16(), v)
}

pub(crate) async fn moderator(app: &TestApp, name: &str) -> User {
    let admin = app.admin().await;
    let m = app.user(name).await;
    let (s, v) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/admin/users/{}/role", m.uid),
            Some(&admin.token),
            Some(json!({"role": "moderator"})),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{v}");
    assert_eq!(v["role"], "moderator");
    m
}

pub(crate) async fn queue(app: &TestApp, who: &User, query: &str) -> Vec<Value> {
    let (s, v) = app
        .get(&format!("/api/v1/admin/reports{query}"), Some(&who.token))
        .await;
    assert_eq!(s.as_u16(), 200, "{v}");
    v["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn reports_of_one_target_are_one_case_with_every_reporter() {
    let app = spawn_app().await;
    let author = app.user("rpauthor").await;
    let (a, b) = (app.user("rpa").await, app.user("rpb").await);
    let post = app.text_post(&author, "买粉丝加微信").await;
    let (s, first) = report(
        &app,
        &a,
        json!({"targetType": "post", "targetId": post, "category": "spam", "comment": "广告"}),
    )
    .await;
    assert_eq!(s, 201, "{first}");
    assert_eq!(first["state"], "open");
    // Reporting again while open updates the report: 200, same id.
    let (s, again) = report(
        &app,
        &a,
        json!({"targetType": "post", "targetId": post, "category": "harassment", "comment": "改了"}),
    )
    .await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["category"], "harassment");
    let (s, _) = report(
        &app,
        &b,
        json!({"targetType": "post", "targetId": post, "category": "hate"}),
    )
    .await;
    assert_eq!(s, 201);
    let m = moderator(&app, "rpmod").await;
    let items = queue(&app, &m, "").await;
    assert_eq!(items.len(), 1, "{items:?}");
    let item = &items[0];
    assert_eq!(item["target"], json!({"kind": "post", "id": post}));
    assert_eq!(item["account"]["uid"], author.uid);
    assert_eq!(item["reporterCount"], 2);
    let mut categories: Vec<&str> = item["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    categories.sort_unstable();
    assert_eq!(categories, ["harassment", "hate", "spam"]);
    assert_eq!(item["snapshot"]["text"], "买粉丝加微信");
    assert_eq!(item["snapshot"]["authorName"], "rpauthor昵称");
    assert_eq!(item["reports"].as_array().unwrap().len(), 2);
    // Filters: by category, by account, and an empty one.
    assert_eq!(queue(&app, &m, "?category=hate").await.len(), 1);
    assert_eq!(queue(&app, &m, "?category=sexual").await.len(), 0);
    let by_account = format!("?account={}", author.uid);
    assert_eq!(queue(&app, &m, &by_account).await.len(), 1);
    let other = format!("?account={}", a.uid);
    assert_eq!(queue(&app, &m, &other).await.len(), 0);
    // An account that is not a uid, empty included, is refused rather than read as no filter.
    for bad in ["?account=", "?account=abc", "?account=0"] {
        let (s, body) = app
            .get(&format!("/api/v1/admin/reports{bad}"), Some(&m.token))
            .await;
        assert_eq!(s.as_u16(), 400, "{bad}: {body}");
        assert_eq!(body["field"], "account", "{bad}: {body}");
    }
    // The single item has every report as it stands.
    let id = item["id"].as_i64().unwrap();
    let (s, one) = app
        .get(&format!("/api/v1/admin/reports/{id}"), Some(&m.token))
        .await;
    assert_eq!(s.as_u16(), 200, "{one}");
    let comments: Vec<&str> = one["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["comment"].as_str().unwrap())
        .collect();
    assert_eq!(comments, ["改了", ""]);
    assert_eq!(one["history"], json!([]));
    // The reporter sees their own report.
    let (_, mine) = app.get("/api/v1/me/reports", Some(&a.token)).await;
    assert_eq!(mine["items"].as_array().unwrap().len(), 1);
    assert_eq!(mine["items"][0]["target"]["id"], post);
}

#[tokio::test]
async fn a_snapshot_survives_the_deletion_of_what_was_reported() {
    let app = spawn_app().await;
    let author = app.user("snauthor").await;
    let reader = app.user("snreader").await;
    let post = app.text_post(&author, "to be deleted").await;
    let comment = app.comment(&author, post, "a rude comment", None).await;
    let comment_id = comment["id"].as_i64().unwrap();
    for body in [
        json!({"targetType": "post", "targetId": post, "category": "violence"}),
        json!({"targetType": "comment", "targetId": comment_id, "category": "harassment"}),
    ] {
        assert_eq!(report(&app, &reader, body).await.0, 201);
    }
    let (s, _) = app
        .delete(&format!("/api/v1/posts/{post}"), Some(&author.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    let m = moderator(&app, "snmod").await;
    let items = queue(&app, &m, "").await;
    let text_of = |kind: &str| {
        items
            .iter()
            .find(|i| i["target"]["kind"] == kind)
            .map(|i| i["snapshot"]["text"].clone())
    };
    assert_eq!(text_of("post"), Some(json!("to be deleted")));
    assert_eq!(text_of("comment"), Some(json!("a rude comment")));
    let comment_item = items.iter().find(|i| i["target"]["kind"] == "comment");
    assert_eq!(comment_item.unwrap()["snapshot"]["postId"], post);
}

#[tokio::test]
async fn only_what_the_reporter_may_see_can_be_reported_and_never_oneself() {
    let app = spawn_app().await;
    let author = app.user("vsauthor").await;
    let stranger = app.user("vsstranger").await;
    let (s, friends_only) = app
        .post(
            "/api/v1/posts",
            Some(&author.token),
            json!({"category": "TEXT", "content": "friends", "visibility": "friends"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201);
    let hidden = friends_only["id"].as_i64().unwrap();
    let (s, v) = report(
        &app,
        &stranger,
        json!({"targetType": "post", "targetId": hidden, "category": "spam"}),
    )
    .await;
    assert_eq!(s, 404, "{v}");
    let (s, _) = report(
        &app,
        &stranger,
        json!({"targetType": "post", "targetId": 999_999_999_999_999_i64, "category": "spam"}),
    )
    .await;
    assert_eq!(s, 404);
    // A block hides the account: reporting it answers as if it did not exist.
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/block", stranger.uid),
            Some(&author.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    let (s, _) = report(
        &app,
        &stranger,
        json!({"targetType": "user", "targetId": author.uid, "category": "spam"}),
    )
    .await;
    assert_eq!(s, 404);
    let mine = app.text_post(&stranger, "my own").await;
    for body in [
        json!({"targetType": "post", "targetId": mine, "category": "spam"}),
        json!({"targetType": "user", "targetId": stranger.uid, "category": "spam"}),
    ] {
        let (s, v) = report(&app, &stranger, body).await;
        assert_eq!(s, 422, "{v}");
    }
    // A user report names only their posts the reporter may see.
    let other = app.user("vsother").await;
    let visible = app.text_post(&other, "public").await;
    let (s, v) = report(
        &app,
        &stranger,
        json!({"targetType": "user", "targetId": other.uid, "category": "spam", "postIds": [visible, mine]}),
    )
    .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "postIds", "{v}");
    let (s, v) = report(
        &app,
        &stranger,
        json!({"targetType": "user", "targetId": other.uid, "category": "spam", "postIds": [visible]}),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["postIds"], json!([visible]));
    // Nothing was filed by the refused ones.
    let (_, list) = app.get("/api/v1/me/reports", Some(&stranger.token)).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_reports_name_the_field_and_file_nothing() {
    let app = spawn_app().await;
    let author = app.user("bdauthor").await;
    let reader = app.user("bdreader").await;
    let post = app.text_post(&author, "x").await;
    for (body, field) in [
        (
            json!({"targetType": "post", "targetId": post, "category": "rude"}),
            "category",
        ),
        (
            json!({"targetType": "thread", "targetId": post, "category": "spam"}),
            "targetType",
        ),
        (
            json!({"targetType": "post", "targetId": post, "category": "spam", "comment": "长".repeat(1001)}),
            "comment",
        ),
        (
            json!({"targetType": "post", "category": "spam"}),
            "targetId",
        ),
    ] {
        let (s, v) = report(&app, &reader, body.clone()).await;
        assert_eq!(s, 400, "{body} -> {v}");
        assert_eq!(v["field"], field, "{body} -> {v}");
    }
    // Well formed, but only a report of an account names posts.
    let (s, v) = report(
        &app,
        &reader,
        json!({"targetType": "post", "targetId": post, "category": "spam", "postIds": [post]}),
    )
    .await;
    assert_eq!((s, v["field"].clone()), (422, json!("postIds")), "{v}");
    let (_, list) = app.get("/api/v1/me/reports", Some(&reader.token)).await;
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn closing_an_item_closes_every_report_and_tells_each_reporter() {
    let app = spawn_app().await;
    let author = app.user("clauthor").await;
    let (a, b) = (app.user("cla").await, app.user("clb").await);
    let post = app.text_post(&author, "borderline").await;
    for who in [&a, &b] {
        let body = json!({"targetType": "post", "targetId": post, "category": "other"});
        assert_eq!(report(&app, who, body).await.0, 201);
    }
    let m = moderator(&app, "clmod").await;
    let id = queue(&app, &m, "").await[0]["id"].as_i64().unwrap();
    let path = format!("/api/v1/admin/reports/{id}/actions");
    // Sharing needs a note to share.
    let (s, v) = app
        .post(
            &path,
            Some(&m.token),
            json!({"action": "dismiss", "shareWithReporter": true}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["field"].clone()),
        (422, json!("note")),
        "{v}"
    );
    let (s, closed) = app
        .post(
            &path,
            Some(&m.token),
            json!({"action": "dismiss", "note": "不违反社区规则", "shareWithReporter": true}),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{closed}");
    assert_eq!(closed["state"], "dismissed");
    assert_eq!(closed["closing"]["action"], "dismiss");
    for who in [&a, &b] {
        let (_, mine) = app.get("/api/v1/me/reports", Some(&who.token)).await;
        let r = &mine["items"][0];
        assert_eq!(r["state"], "dismissed", "{mine}");
        assert_eq!(r["outcome"], "不违反社区规则");
        // Told in the background, after the answer.
        let report_id = r["id"].clone();
        wait_until("the reporter is told", || {
            let (app, token, report_id) = (&app, who.token.clone(), report_id.clone());
            async move {
                let (_, n) = app.get("/api/v1/notifications", Some(&token)).await;
                n["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["kind"] == "report_closed" && n["reportId"] == report_id)
            }
        })
        .await;
    }
    // Closed once: again is a conflict, and it leaves the open queue.
    let (s, _) = app
        .post(&path, Some(&m.token), json!({"action": "dismiss"}))
        .await;
    assert_eq!(s.as_u16(), 409);
    assert!(queue(&app, &m, "").await.is_empty());
    assert_eq!(queue(&app, &m, "?state=dismissed").await.len(), 1);
    // A new report of the same target opens a new item, whose history has
    // the closed one.
    let c = app.user("clc").await;
    let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
    assert_eq!(report(&app, &c, body).await.0, 201);
    let open = queue(&app, &m, "").await;
    assert_eq!(open.len(), 1);
    let reopened = open[0]["id"].as_i64().unwrap();
    assert_ne!(reopened, id);
    let (_, one) = app
        .get(&format!("/api/v1/admin/reports/{reopened}"), Some(&m.token))
        .await;
    assert_eq!(one["history"][0]["id"], id, "{one}");
    // In bulk: the open one closes, the closed one conflicts, an unknown
    // one is missing; each answered on its own.
    let (s, results) = app
        .post(
            "/api/v1/admin/reports/actions",
            Some(&m.token),
            json!({"ids": [reopened, id, 4242], "action": "dismiss", "note": "bulk"}),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{results}");
    let status_of = |item: i64| {
        results
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == item)
            .map(|r| r["status"].as_u64().unwrap())
    };
    assert_eq!(
        (status_of(reopened), status_of(id), status_of(4242)),
        (Some(200), Some(409), Some(404))
    );
    let too_many: Vec<i64> = (1..=51).collect();
    let (s, _) = app
        .post(
            "/api/v1/admin/reports/actions",
            Some(&m.token),
            json!({"ids": too_many, "action": "dismiss"}),
        )
        .await;
    assert_eq!(s.as_u16(), 400);
    // Every close is in the audit log, with who did it; admins read it.
    let (s, _) = app.get("/api/v1/admin/audit-log", Some(&m.token)).await;
    assert_eq!(s.as_u16(), 403);
    let admin = app.admin().await;
    let (s, log) = app.get("/api/v1/admin/audit-log", Some(&admin.token)).await;
    assert_eq!(s.as_u16(), 200, "{log}");
    let closes: Vec<&Value> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "report.dismiss")
        .collect();
    assert_eq!(closes.len(), 2, "{log}");
    assert!(closes
        .iter()
        .all(|e| e["actor"] == m.uid && e["id"].is_i64()));
}

#[tokio::test]
async fn roles_decide_who_moderates_and_only_admins_set_them() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let user = app.user("rlplain").await;
    let m = moderator(&app, "rlmod").await;
    // Plain users see no queue; moderators do.
    let (s, _) = app.get("/api/v1/admin/reports", Some(&user.token)).await;
    assert_eq!(s.as_u16(), 403);
    let (s, _) = app.get("/api/v1/admin/reports", None).await;
    assert_eq!(s.as_u16(), 401);
    assert!(queue(&app, &m, "").await.is_empty());
    // A moderator is refused the device table and setting roles.
    let (s, _) = app.get("/api/v1/admin/device-models", Some(&m.token)).await;
    assert_eq!(s.as_u16(), 403);
    let set = |who: &User, uid: i64, role: &str| {
        let (token, role) = (who.token.clone(), role.to_string());
        let app = &app;
        async move {
            app.call(
                reqwest::Method::PUT,
                &format!("/api/v1/admin/users/{uid}/role"),
                Some(&token),
                Some(json!({"role": role})),
            )
            .await
            .0
            .as_u16()
        }
    };
    assert_eq!(set(&m, user.uid, "moderator").await, 403);
    assert_eq!(set(&admin, admin.uid, "user").await, 422);
    assert_eq!(set(&admin, 999_999_999_999_999, "moderator").await, 404);
    assert_eq!(set(&admin, user.uid, "overlord").await, 400);
    // Taking the role away takes the queue away.
    assert_eq!(set(&admin, m.uid, "user").await, 200);
    let (s, _) = app.get("/api/v1/admin/reports", Some(&m.token)).await;
    assert_eq!(s.as_u16(), 403);
    let (_, log) = app.get("/api/v1/admin/audit-log", Some(&admin.token)).await;
    let role_changes: Vec<&str> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "role.set")
        .map(|e| e["note"].as_str().unwrap())
        .collect();
    assert_eq!(role_changes, ["user", "moderator"], "{log}");
}

#[tokio::test]
async fn reports_have_a_daily_budget_of_their_own_which_refused_ones_do_not_spend() {
    let mut settings = test_settings();
    if let Some(limits) = settings.rate_limits.as_mut() {
        limits.reports = moments::config::Rate::new(2, 24 * 3600);
    }
    let app = spawn_app_with(settings).await;
    let reader = app.user("rtreader").await;
    // Refused reports (of nothing, of oneself) spend none of it.
    for target in [4242, reader.uid] {
        let body = json!({"targetType": "user", "targetId": target, "category": "spam"});
        let status = report(&app, &reader, body).await.0;
        assert!([404, 422].contains(&status), "{status}");
    }
    let mut statuses = Vec::new();
    for i in 0..3 {
        let author = app.user(&format!("rtauthor{i}")).await;
        follow(&app, &reader, &author).await;
        let post = app.text_post(&author, "x").await;
        let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
        statuses.push(report(&app, &reader, body).await.0);
    }
    assert_eq!(statuses, [201, 201, 429]);
    let (_, list) = app.get("/api/v1/me/reports", Some(&reader.token)).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_instance_publishes_its_contact_and_rules_which_reports_cite() {
    let app = spawn_app().await;
    let (s, v) = app.get("/api/v1/instance", None).await;
    assert_eq!(s.as_u16(), 200, "{v}");
    // No contact until an admin sets one: absent, not an empty string
    // the published schema (non-blank) would refuse.
    assert_eq!(v, json!({"name": "moments", "rules": []}));
    let admin = app.admin().await;
    let user = app.user("inuser").await;
    let info = json!({"name": "朋友圈", "contact": "mailto:abuse@example.com",
        "rules": ["不发广告", "不骚扰他人"]});
    let put = |who: &User, body: Value| {
        let token = who.token.clone();
        let app = &app;
        async move {
            let (s, v) = app
                .call(
                    reqwest::Method::PUT,
                    "/api/v1/admin/instance",
                    Some(&token),
                    Some(body),
                )
                .await;
            (s.as_u16(), v)
        }
    };
    assert_eq!(put(&user, info.clone()).await.0, 403);
    let (s, v) = put(&admin, json!({"name": " ", "contact": "x", "rules": []})).await;
    assert_eq!((s, v["field"].clone()), (400, json!("name")));
    let too_many: Vec<String> = (0..101).map(|i| format!("rule {i}")).collect();
    let (s, v) = put(
        &admin,
        json!({"name": "n", "contact": "x", "rules": too_many}),
    )
    .await;
    assert_eq!((s, v["field"].clone()), (400, json!("rules")));
    let (s, v) = put(&admin, info.clone()).await;
    assert_eq!(s, 200, "{v}");
    let (_, v) = app.get("/api/v1/instance", None).await;
    assert_eq!(v, info);
    // A contact set can be taken back (null, or left out): absent again.
    for unset in [
        json!({"name": "朋友圈", "contact": null, "rules": ["不发广告", "不骚扰他人"]}),
        json!({"name": "朋友圈", "rules": ["不发广告", "不骚扰他人"]}),
    ] {
        let (s, v) = put(&admin, unset.clone()).await;
        assert_eq!(s, 200, "{v}");
        let (_, v) = app.get("/api/v1/instance", None).await;
        assert_eq!(
            v,
            json!({"name": "朋友圈", "rules": ["不发广告", "不骚扰他人"]})
        );
        put(&admin, info.clone()).await;
    }
    // A report cites the rules by number, only those there are.
    let author = app.user("inauthor").await;
    let post = app.text_post(&author, "ad").await;
    let (s, v) = report(
        &app,
        &user,
        json!({"targetType": "post", "targetId": post, "category": "spam", "rules": [1, 3]}),
    )
    .await;
    assert_eq!((s, v["field"].clone()), (422, json!("rules[1]")), "{v}");
    let (s, v) = report(
        &app,
        &user,
        json!({"targetType": "post", "targetId": post, "category": "spam", "rules": [2, 1]}),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["rules"], json!([1, 2]));
    let (_, log) = app.get("/api/v1/admin/audit-log", Some(&admin.token)).await;
    assert_eq!(log["items"][0]["action"], "instance.set", "{log}");
    // The most the document allows, written by an encoder that escapes
    // every character (600 KB), is taken: 100 rules of 500 characters.
    let widest = json!({"name": "朋".repeat(100), "contact": "😀".repeat(200),
        "rules": (0..100).map(|i| format!("{i}{}", "😀".repeat(500 - i.to_string().len()))).collect::<Vec<_>>()});
    let (s, v, size) = app
        .call_escaped(
            reqwest::Method::PUT,
            "/api/v1/admin/instance",
            &admin.token,
            &widest,
        )
        .await;
    assert!(size > 512 * 1024, "{size} bytes");
    assert_eq!(s.as_u16(), 200, "{v}");
    let (_, v) = app.get("/api/v1/instance", None).await;
    assert_eq!(v, widest);
}

#[tokio::test]
async fn a_report_about_a_moderator_is_for_another_moderator() {
    let app = spawn_app().await;
    let m = moderator(&app, "smmod").await;
    let other = moderator(&app, "smother").await;
    let reader = app.user("smreader").await;
    let post = app.text_post(&m, "moderator's post").await;
    let body = json!({"targetType": "post", "targetId": post, "category": "other"});
    assert_eq!(report(&app, &reader, body).await.0, 201);
    // The moderator reported does not see it in the queue, nor open it.
    assert!(queue(&app, &m, "").await.is_empty());
    let items = queue(&app, &other, "").await;
    assert_eq!(items.len(), 1);
    let id = items[0]["id"].as_i64().unwrap();
    // An item of reports holds no posts a filter held.
    let (s, _) = app
        .get(
            &format!("/api/v1/admin/reports/{id}/held-posts"),
            Some(&other.token),
        )
        .await;
    assert_eq!(s.as_u16(), 404);
    let (s, _) = app
        .get(&format!("/api/v1/admin/reports/{id}"), Some(&m.token))
        .await;
    assert_eq!(s.as_u16(), 403);
    let (s, _) = app
        .post(
            &format!("/api/v1/admin/reports/{id}/actions"),
            Some(&m.token),
            json!({"action": "dismiss"}),
        )
        .await;
    assert_eq!(s.as_u16(), 403);
    assert_eq!(queue(&app, &other, "").await.len(), 1, "still open");
}

/// A snapshot of a post by account 5, for the store tests below.
fn stored_snapshot() -> moments::store::Snapshot {
    moments::store::Snapshot {
        author: 5,
        author_name: "a".into(),
        text: "t".into(),
        picture_urls: Vec::new(),
        visibility: None,
        post_id: None,
        createtime: 0,
        taken_at: 0,
        erased: false,
    }
}

/// A moderator's dismissal, having seen `held_count` held posts.
fn dismissal(held_count: Option<u64>) -> moments::store::CaseClosing {
    moments::store::CaseClosing {
        state: moments::store::CaseState::Dismissed,
        action: "dismiss".into(),
        moderator: 3,
        note: String::new(),
        shared: None,
        at: 1,
        until: None,
        held_count,
    }
}

/// The store's half of "no post is published unseen": a case of held posts
/// closes only while it holds as many as the moderator saw.
#[tokio::test]
async fn a_case_of_held_posts_closes_only_as_many_as_were_seen() {
    use moments::domain::report::TargetKind;
    use moments::store::{CaseDoc, CaseState, HeldBy, HeldPost, HeldPostDoc, ReportTarget};
    let app = spawn_app().await;
    let docs = &app.ctx.docs;
    let snapshot = stored_snapshot();
    let opened = docs
        .open_case(&CaseDoc {
            held: Some(HeldBy::by(1, "r".into())),
            ..CaseDoc::opening(
                3_000_001,
                ReportTarget {
                    kind: TargetKind::Post,
                    id: 88,
                },
                5,
                snapshot.clone(),
                0,
            )
        })
        .await
        .unwrap();
    for post_id in [88, 89] {
        let record = HeldPostDoc::new(post_id, opened.id, 5, 1);
        let shown = HeldPost {
            post_id,
            filter: 1,
            reason: "r".into(),
            snapshot: snapshot.clone(),
        };
        assert_eq!(
            docs.hold_in_case(&record, &shown).await.unwrap(),
            Some(true)
        );
    }
    for seen in [None, Some(1), Some(3)] {
        assert!(
            docs.close_case(opened.id, &dismissal(seen))
                .await
                .unwrap()
                .is_none(),
            "closed having seen {seen:?} of 2"
        );
    }
    let closed = docs
        .close_case(opened.id, &dismissal(Some(2)))
        .await
        .unwrap();
    assert_eq!(closed.map(|c| c.state), Some(CaseState::Dismissed));
}

/// The store's half of "nothing acknowledged is lost": a report never lands
/// in a case that closed, whatever the order the two arrive in.
#[tokio::test]
async fn no_report_is_filed_into_a_closed_case() {
    use moments::domain::report::{ReportCategory, TargetKind};
    use moments::store::{CaseDoc, ReportDoc, ReportTarget};
    let app = spawn_app().await;
    let docs = &app.ctx.docs;
    let target = ReportTarget {
        kind: TargetKind::Post,
        id: 77,
    };
    let snapshot = stored_snapshot();
    let case = |id: i64| CaseDoc::opening(id, target, 5, snapshot.clone(), 0);
    let report = |id: i64, case_id: i64, reporter: i64| {
        ReportDoc::new(id, reporter, target, 5, case_id, ReportCategory::Spam, 0)
    };
    let first = docs.open_case(&case(1_000_001)).await.unwrap();
    assert_eq!(first.id, 1_000_001);
    // A second opening finds the open one.
    assert_eq!(docs.open_case(&case(1_000_002)).await.unwrap().id, first.id);
    let (_, new) = docs
        .file_report(&report(2_000_001, first.id, 9))
        .await
        .unwrap()
        .unwrap();
    assert!(new);
    let closing = dismissal(None);
    assert!(docs.close_case(first.id, &closing).await.unwrap().is_some());
    assert!(docs.close_case(first.id, &closing).await.unwrap().is_none());
    // Into the closed case: nothing filed, a new one or an update alike.
    for (id, reporter) in [(2_000_002, 10), (2_000_003, 9)] {
        assert!(docs
            .file_report(&report(id, first.id, reporter))
            .await
            .unwrap()
            .is_none());
    }
    let left = docs.reports_of_case(first.id, None, 10).await.unwrap();
    assert_eq!(left.iter().map(|r| r.id).collect::<Vec<_>>(), [2_000_001]);
    // The target's next case opens fresh.
    let next = docs.open_case(&case(1_000_003)).await.unwrap();
    assert_eq!(next.id, 1_000_003);
    assert_eq!(
        docs.cases_by_ids(&[first.id]).await.unwrap()[0].reporter_count,
        1
    );
}

#[tokio::test]
async fn moderators_are_told_of_a_new_case_once() {
    let app = spawn_app().await;
    let m = moderator(&app, "tdmod").await;
    // The first reporter and the reported account are moderators too, so
    // that leaving them out is something the service does.
    let author = moderator(&app, "tdauthor").await;
    let (a, b) = (moderator(&app, "tda").await, app.user("tdb").await);
    let post = app.text_post(&author, "x").await;
    for who in [&a, &b] {
        let body = json!({"targetType": "post", "targetId": post, "category": "spam"});
        assert_eq!(report(&app, who, body).await.0, 201);
    }
    let item = queue(&app, &m, "").await[0]["id"].clone();
    let opened = |token: String| {
        let app = &app;
        async move {
            let (_, n) = app.get("/api/v1/notifications", Some(&token)).await;
            n["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|n| n["kind"] == "report_opened")
                .map(|n| n["caseId"].clone())
                .collect::<Vec<Value>>()
        }
    };
    wait_until("the moderator is told", || {
        let (opened, token) = (&opened, m.token.clone());
        async move { !opened(token).await.is_empty() }
    })
    .await;
    // One item, one notification, however many report it; the moderator
    // who reported it and the moderator it is about hear nothing of it (nor
    // does a reporter who is no moderator).
    assert_eq!(opened(m.token.clone()).await, vec![item]);
    for who in [&a, &b, &author] {
        assert!(opened(who.token.clone()).await.is_empty());
    }
}

#[tokio::test]
async fn content_filters_refuse_posts_comments_nicknames_and_labels_evasions_included() {
    let app = spawn_app().await;
    let m = moderator(&app, "cfmod").await;
    let user = app.user("cfuser").await;
    let plain = app.user("cfplain").await;
    let (s, _) = app
        .post(
            "/api/v1/admin/filters",
            Some(&plain.token),
            json!({"term": "加微信", "action": "reject", "reason": "no ads"}),
        )
        .await;
    assert_eq!(s.as_u16(), 403);
    for (body, status, field) in [
        (
            json!({"term": " .\u{200B} ", "action": "reject", "reason": "r"}),
            422,
            "term",
        ),
        (
            json!({"term": ")~", "action": "reject", "reason": "r"}),
            422,
            "term",
        ),
        (
            json!({"term": "x", "action": "hide", "reason": "r"}),
            400,
            "action",
        ),
        (
            json!({"term": "x", "action": "reject", "reason": ""}),
            400,
            "reason",
        ),
    ] {
        let (s, v) = app
            .post("/api/v1/admin/filters", Some(&m.token), body)
            .await;
        assert_eq!(
            (s.as_u16(), v["field"].clone()),
            (status, json!(field)),
            "{v}"
        );
    }
    let (s, filter) = app
        .post(
            "/api/v1/admin/filters",
            Some(&m.token),
            json!({"term": "加微信", "action": "reject", "reason": "不发广告"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{filter}");
    let refused = |status: u16, v: &Value, field: &str| {
        assert_eq!((status, v["field"].clone()), (422, json!(field)), "{v}");
        assert!(v["detail"].as_str().unwrap().contains("不发广告"), "{v}");
    };
    // A post, evasions included: spaces, zero-width, full-width forms.
    for text in ["快来加微信", "加 微 信", "加\u{200B}微信", "加﻿微信"] {
        let (s, v) = app
            .post(
                "/api/v1/posts",
                Some(&user.token),
                json!({"category": "TEXT", "content": text}),
            )
            .await;
        refused(s.as_u16(), &v, "content");
    }
    let post = app.text_post(&user, "a clean post").await;
    let (s, v) = app
        .post(
            &format!("/api/v1/posts/{post}/comments"),
            Some(&user.token),
            json!({"content": "加 微 信 吧"}),
        )
        .await;
    refused(s.as_u16(), &v, "content");
    let (s, v) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&user.token),
            Some(json!({"nickName": "加微信123"})),
        )
        .await;
    refused(s.as_u16(), &v, "nickName");
    let (s, v) = app
        .post(
            "/api/v1/users",
            None,
            json!({"username": "cfnew", "password": "password-123", "nickName": "加·微·信"}),
        )
        .await;
    refused(s.as_u16(), &v, "nickName");
    let (s, v) = app
        .post(
            "/api/v1/labels",
            Some(&user.token),
            json!({"name": "加微信群", "members": []}),
        )
        .await;
    refused(s.as_u16(), &v, "name");
    // Nothing refused was stored.
    let (_, album) = app
        .get(&format!("/api/v1/users/{}/posts", user.uid), None)
        .await;
    assert_eq!(album["items"].as_array().unwrap().len(), 1);
    // Changed and deleted, the filter stops refusing at once; both logged.
    let id = filter["id"].as_i64().unwrap();
    let (s, v) = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/admin/filters/{id}"),
            Some(&m.token),
            Some(json!({"term": "代购", "action": "reject", "reason": "不发广告"})),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{v}");
    assert!(app.text_post(&user, "加微信").await > 0);
    let (s, v) = app
        .post(
            "/api/v1/posts",
            Some(&user.token),
            json!({"category": "TEXT", "content": "海外代 购"}),
        )
        .await;
    refused(s.as_u16(), &v, "content");
    let (_, list) = app.get("/api/v1/admin/filters", Some(&m.token)).await;
    assert_eq!(list["items"][0]["term"], "代购");
    let (s, _) = app
        .delete(&format!("/api/v1/admin/filters/{id}"), Some(&m.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    let (s, _) = app
        .delete(&format!("/api/v1/admin/filters/{id}"), Some(&m.token))
        .await;
    assert_eq!(s.as_u16(), 404);
    app.text_post(&user, "海外代购").await;
    let admin = app.admin().await;
    let (_, log) = app.get("/api/v1/admin/audit-log", Some(&admin.token)).await;
    let actions: Vec<&str> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .filter(|a| a.starts_with("filter."))
        .collect();
    assert_eq!(actions, ["filter.delete", "filter.update", "filter.create"]);
}
