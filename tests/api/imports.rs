//! Imports of lists of people: Mastodon's CSV and our own, a preview that
//! names every row it cannot use, an import that applies exactly the plan
//! previewed (or nothing), idempotent on retry, within the caps and the
//! daily row budget, one at a time, each step as if done by hand, and none
//! once the account is suspended or deleted.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{
    assert_problem, every_item, follow, spawn_app, spawn_app_with, test_settings, wait_until,
    TestApp, User,
};

/// The uids of a list of users.
fn uids(items: &[Value]) -> BTreeSet<i64> {
    items.iter().map(|u| u["uid"].as_i64().unwrap()).collect()
}

async fn following(app: &TestApp, who: &User) -> BTreeSet<i64> {
    uids(
        &every_item(
            app,
            &format!("/api/v1/users/{}/following", who.uid),
            Some(&who.token),
            50,
        )
        .await,
    )
}

/// Applies an import and waits for it to end; the import as it ended.
async fn apply(app: &TestApp, who: &User, body: Value) -> Value {
    let (s, started) = app.post("/api/v1/me/imports", Some(&who.token), body).await;
    assert!(s.as_u16() == 202 || s.as_u16() == 200, "{started}");
    let path = format!("/api/v1/me/imports/{}", started["id"]);
    wait_until("the import ends", || async {
        let i = app.get(&path, Some(&who.token)).await.1;
        i["state"] == "done" || i["state"] == "failed"
    })
    .await;
    app.get(&path, Some(&who.token)).await.1
}

#[tokio::test]
async fn a_mastodon_list_is_previewed_row_by_row_and_applied_as_previewed() {
    let app = spawn_app().await;
    let me = app.user("importer").await;
    let (a, b, c) = (
        app.user("imp_a").await,
        app.user("imp_b").await,
        app.user("imp_c").await,
    );
    let (s, posted) = app
        .post(
            "/api/v1/posts",
            Some(&a.token),
            json!({"category": "TEXT", "content": "imp_a was here first"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{posted}");
    let blocker = app.user("imp_blocker").await;
    assert_eq!(
        app.put(
            &format!("/api/v1/users/{}/block", me.uid),
            Some(&blocker.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    let blocked = app.user("imp_blocked").await;
    assert_eq!(
        app.put(
            &format!("/api/v1/users/{}/block", blocked.uid),
            Some(&me.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    follow(&app, &me, &c).await;
    let csv = "Account address,Show boosts,Notify on new posts,Languages\n\
               imp_a@127.0.0.1,true,false,\n\
               Imp_B,true,false,zh\n\
               imp_c@127.0.0.1,true,false,\n\
               nobody_here@127.0.0.1,true,false,\n\
               someone@mastodon.social,true,false,\n\
               importer@127.0.0.1,true,false,\n\
               imp_blocker,true,false,\n\
               imp_blocked,true,false,\n\
               imp_a,true,false,\n\
               not a name!,true,false,\n";
    let body = json!({"kind": "following", "mode": "merge", "csv": csv});
    let (s, preview) = app
        .post("/api/v1/me/imports/preview", Some(&me.token), body.clone())
        .await;
    assert_eq!(s.as_u16(), 200, "{preview}");
    assert_eq!(
        uids(preview["add"].as_array().unwrap()),
        BTreeSet::from([a.uid, b.uid])
    );
    assert_eq!(preview["add"][0]["username"], "imp_a");
    assert_eq!(preview["remove"], json!([]));
    assert_eq!(preview["unchanged"], 1);
    let rejected: Vec<(u64, &str, &str)> = preview["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["problem"].as_str().unwrap(),
                r["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rejected,
        vec![
            (5, "no_such_user", "no such user here"),
            (
                6,
                "other_service",
                "an account of another service (mastodon.social)"
            ),
            (7, "yourself", "yourself"),
            // Who blocked the importer is no one here, to the importer, as
            // their profile is; whom it blocks is named.
            (8, "no_such_user", "no such user here"),
            (9, "block_between", "a block stands between you"),
            (10, "listed_twice", "listed already, on line 2"),
            (11, "not_a_username", "not a username"),
        ]
    );
    // The preview wrote nothing.
    assert_eq!(following(&app, &me).await, BTreeSet::from([c.uid]));

    // Applied as previewed: what the preview said, no more.
    let mut with_plan = body.clone();
    with_plan["planId"] = preview["planId"].clone();
    let done = apply(&app, &me, with_plan.clone()).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["planId"], preview["planId"]);
    assert_eq!(done["progress"], json!({"done": 2, "total": 2}));
    assert_eq!(
        following(&app, &me).await,
        BTreeSet::from([a.uid, b.uid, c.uid])
    );
    // As by hand: the followed are told, and their posts reach the feed.
    let (_, told) = app.get("/api/v1/notifications", Some(&a.token)).await;
    assert_eq!(told["items"][0]["kind"], "follow", "{told}");
    assert_eq!(told["items"][0]["actor"]["uid"], me.uid);
    let (_, feed) = app.get("/api/v1/feed?limit=50", Some(&me.token)).await;
    let authors: BTreeSet<i64> = feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["author"]["uid"].as_i64().unwrap())
        .collect();
    assert!(authors.contains(&a.uid), "{feed}");

    // A retry of the same import is that import, not a second one.
    let (s, again) = app
        .post("/api/v1/me/imports", Some(&me.token), with_plan.clone())
        .await;
    assert_eq!(s.as_u16(), 200, "{again}");
    assert_eq!(again["id"], done["id"]);
    // A plan that changed since its preview applies nothing.
    let (s, changed) = app
        .post(
            "/api/v1/me/imports",
            Some(&me.token),
            json!({"kind": "following", "mode": "overwrite", "csv": csv, "planId": preview["planId"]}),
        )
        .await;
    assert_eq!(s.as_u16(), 409, "{changed}");
    assert_eq!(
        following(&app, &me).await,
        BTreeSet::from([a.uid, b.uid, c.uid])
    );

    // The same list imported again after its follows were undone by hand
    // is a new import, not the old one answered again.
    for who in [&a, &b] {
        let (s, _) = app
            .delete(
                &format!("/api/v1/users/{}/follow", who.uid),
                Some(&me.token),
            )
            .await;
        assert_eq!(s.as_u16(), 200);
    }
    let (_, preview) = app
        .post("/api/v1/me/imports/preview", Some(&me.token), body.clone())
        .await;
    assert_eq!(
        uids(preview["add"].as_array().unwrap()),
        BTreeSet::from([a.uid, b.uid])
    );
    let mut again = body.clone();
    again["planId"] = preview["planId"].clone();
    let redone = apply(&app, &me, again).await;
    assert_ne!(redone["id"], done["id"], "{redone}");
    assert_eq!(redone["progress"], json!({"done": 2, "total": 2}));
    assert_eq!(
        following(&app, &me).await,
        BTreeSet::from([a.uid, b.uid, c.uid])
    );
}

#[tokio::test]
async fn overwrite_makes_the_list_what_the_csv_says_within_its_cap() {
    let mut settings = test_settings();
    settings.max_following = 2;
    let app = spawn_app_with(settings).await;
    let me = app.user("overwriter").await;
    let (a, b, c) = (
        app.user("ow_a").await,
        app.user("ow_b").await,
        app.user("ow_c").await,
    );
    follow(&app, &me, &a).await;
    // Ours, as an export writes it: b and c listed, a not.
    let csv =
        "Account address,uid,since\now_b,1,2026-12-01T00:00:00Z\now_c,2,2026-12-01T00:00:00Z\n";
    let body = json!({"kind": "following", "mode": "overwrite", "csv": csv});
    let (_, preview) = app
        .post("/api/v1/me/imports/preview", Some(&me.token), body.clone())
        .await;
    assert_eq!(
        uids(preview["remove"].as_array().unwrap()),
        BTreeSet::from([a.uid])
    );
    assert_eq!(
        uids(preview["add"].as_array().unwrap()),
        BTreeSet::from([b.uid, c.uid])
    );
    let done = apply(&app, &me, body).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(following(&app, &me).await, BTreeSet::from([b.uid, c.uid]));

    // Merging a third past the cap of 2: named, not added.
    let d = app.user("ow_d").await;
    let (_, preview) = app
        .post(
            "/api/v1/me/imports/preview",
            Some(&me.token),
            json!({"kind": "following", "mode": "merge", "csv": "ow_d\n"}),
        )
        .await;
    assert_eq!(preview["add"], json!([]));
    assert_eq!(
        preview["rejected"][0]["reason"],
        "over the cap of 2 on this list"
    );
    assert_eq!(preview["rejected"][0]["problem"], "over_cap");
    assert!(!following(&app, &me).await.contains(&d.uid));
}

#[tokio::test]
async fn blocks_mutes_and_hides_are_imported_and_bad_lists_change_nothing() {
    let app = spawn_app().await;
    let me = app.user("listmaker").await;
    let fan = app.user("lm_fan").await;
    let (x, y) = (app.user("lm_x").await, app.user("lm_y").await);
    follow(&app, &fan, &me).await;
    let blocks = apply(
        &app,
        &me,
        json!({"kind": "blocks", "mode": "merge", "csv": "lm_x\n"}),
    )
    .await;
    assert_eq!(blocks["state"], "done", "{blocks}");
    let (_, rel) = app
        .get(&format!("/api/v1/users/{}", x.uid), Some(&me.token))
        .await;
    assert_eq!(rel["blocking"], true, "{rel}");
    let mutes = apply(
        &app,
        &me,
        json!({"kind": "mutes", "mode": "merge", "csv": "lm_y\n"}),
    )
    .await;
    assert_eq!(mutes["state"], "done");
    let muted = every_item(&app, "/api/v1/me/muted", Some(&me.token), 10).await;
    assert_eq!(uids(&muted), BTreeSet::from([y.uid]));
    // Only a follower can be hidden from: the fan is, y is named.
    let (_, preview) = app
        .post(
            "/api/v1/me/imports/preview",
            Some(&me.token),
            json!({"kind": "hidden", "mode": "merge", "csv": "lm_fan\nlm_y\n"}),
        )
        .await;
    assert_eq!(
        uids(preview["add"].as_array().unwrap()),
        BTreeSet::from([fan.uid])
    );
    assert_eq!(preview["rejected"][0]["line"], 2);
    assert_eq!(preview["rejected"][0]["problem"], "not_a_follower");
    let hides = apply(
        &app,
        &me,
        json!({"kind": "hidden", "mode": "merge", "csv": "lm_fan\nlm_y\n"}),
    )
    .await;
    assert_eq!(hides["state"], "done");
    let hidden = every_item(&app, "/api/v1/me/hidden", Some(&me.token), 10).await;
    assert_eq!(uids(&hidden), BTreeSet::from([fan.uid]));
    // Overwritten with a list naming the fan, who stopped following since:
    // the fan stays hidden, not taken off for what would keep them off now.
    let (s, _) = app
        .delete(
            &format!("/api/v1/users/{}/follow", me.uid),
            Some(&fan.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    let (_, preview) = app
        .post(
            "/api/v1/me/imports/preview",
            Some(&me.token),
            json!({"kind": "hidden", "mode": "overwrite", "csv": "lm_fan\n"}),
        )
        .await;
    assert_eq!(preview["remove"], json!([]), "{preview}");
    assert_eq!(preview["unchanged"], 1, "{preview}");

    // Bad input changes nothing and says what is wrong.
    assert_problem(
        &app.post(
            "/api/v1/me/imports/preview",
            Some(&me.token),
            json!({"kind": "friends", "mode": "merge", "csv": ""}),
        )
        .await,
        400,
        "invalid_input",
    );
    let big = "a".repeat(people_csv_max() + 10);
    let (s, _, _) = app
        .call_with(
            Method::POST,
            "/api/v1/me/imports/preview",
            Some(&me.token),
            &[],
            Some(json!({"kind": "mutes", "mode": "merge", "csv": big})),
        )
        .await;
    assert_eq!(s.as_u16(), 413);
    let (_, list) = app.get("/api/v1/me/imports", Some(&me.token)).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
    let stranger = app.user("lm_stranger").await;
    assert_problem(
        &app.get(
            &format!("/api/v1/me/imports/{}", hides["id"]),
            Some(&stranger.token),
        )
        .await,
        404,
        "not_found",
    );
}

fn people_csv_max() -> usize {
    moments::domain::people_csv::MAX_BYTES
}

#[tokio::test]
async fn the_following_list_an_export_writes_imports_into_another_account() {
    let app = spawn_app().await;
    let old = app.user("rt_old").await;
    let new = app.user("rt_new").await;
    let (x, y) = (app.user("rt_x").await, app.user("rt_y").await);
    follow(&app, &old, &x).await;
    follow(&app, &old, &y).await;
    let done = crate::exports::export(&app, &old).await;
    assert_eq!(done["state"], "ready", "{done}");
    let files = crate::exports::unzip(&crate::exports::download(&app, &old, &done).await);
    let csv = String::from_utf8(files["following.csv"].clone()).unwrap();
    let body = json!({"kind": "following", "mode": "merge", "csv": csv});
    let (_, preview) = app
        .post("/api/v1/me/imports/preview", Some(&new.token), body.clone())
        .await;
    assert_eq!(preview["rejected"], json!([]), "{preview}");
    let imported = apply(&app, &new, body).await;
    assert_eq!(imported["state"], "done", "{imported}");
    assert_eq!(following(&app, &new).await, following(&app, &old).await);
    assert_eq!(following(&app, &new).await, BTreeSet::from([x.uid, y.uid]));
}

/// An account suspended while its import runs takes no more of its steps,
/// as it could take none by hand; the import says why it ended.
#[tokio::test]
async fn an_import_ends_when_its_account_is_suspended() {
    let mut settings = test_settings();
    settings.imports.pause_ms = 100;
    // Renewed, and the account checked, every 250 ms.
    settings.imports.claim_secs = 1;
    let app = spawn_app_with(settings).await;
    let me = app.user("suspendee").await;
    let mut csv = String::new();
    for i in 0..60 {
        app.user(&format!("sus_{i}")).await;
        csv.push_str(&format!("sus_{i}\n"));
    }
    let (s, started) = app
        .post(
            "/api/v1/me/imports",
            Some(&me.token),
            json!({"kind": "mutes", "mode": "merge", "csv": csv}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{started}");
    let id = started["id"].as_i64().unwrap();
    let reporter = app.user("sus_reporter").await;
    let body = json!({"targetType": "user", "targetId": me.uid, "category": "spam"});
    assert_eq!(crate::reports::report(&app, &reporter, body).await.0, 201);
    let m = crate::reports::moderator(&app, "sus_mod").await;
    let (s, v) = crate::strikes::act_on(
        &app,
        &m,
        json!({"kind": "user", "id": me.uid}),
        json!({"action": "suspend", "days": 1}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    // Its sessions are gone with the suspension: the documents tell.
    let ended = || async {
        app.ctx
            .docs
            .import_by_id(me.uid, id)
            .await
            .unwrap()
            .expect("the import")
    };
    wait_until("the import ends", || async {
        ended().await.state == moments::store::ImportState::Failed
    })
    .await;
    let import = ended().await;
    assert!(import.done < 60, "every step was taken: {import:?}");
    assert!(
        import
            .error
            .as_deref()
            .is_some_and(|e| e.contains("suspended")),
        "{import:?}"
    );
    let steps_then = import.done;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(ended().await.done, steps_then, "no step after it ended");
}

/// An account deleted while its import follows people takes no step after
/// the deletion: every follow it had goes with its erasure, and none is
/// written after it to be left behind, counted on whom it names.
#[tokio::test]
async fn an_import_stops_when_its_account_is_deleted_and_follows_no_one_after() {
    let mut settings = test_settings();
    settings.imports.pause_ms = 100;
    // Renewed every 2 s: many steps between two renewals.
    settings.imports.claim_secs = 600;
    let app = spawn_app_with(settings).await;
    let me = app.user("impdeleted").await;
    let mut csv = String::new();
    let mut people = Vec::new();
    for i in 0..40 {
        people.push(app.user(&format!("impdel_{i}")).await);
        csv.push_str(&format!("impdel_{i}\n"));
    }
    let (s, started) = app
        .post(
            "/api/v1/me/imports",
            Some(&me.token),
            json!({"kind": "following", "mode": "merge", "csv": csv}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{started}");
    let id = started["id"].as_i64().unwrap();
    wait_until("a few follows are made", || async {
        app.ctx
            .docs
            .import_by_id(me.uid, id)
            .await
            .unwrap()
            .is_some_and(|i| i.done >= 3)
    })
    .await;
    let (s, body) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&me.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{body}");
    wait_until("the import stops", || async {
        app.ctx.imports.running_count() == 0
    })
    .await;
    // What the erasure severed stays severed: no follow of the deleted
    // account's, and no one it named counts it as a follower.
    wait_until("no follow of the deleted account's is left", || async {
        app.ctx
            .docs
            .following_page(me.uid, None, 100)
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    for p in &people {
        let (s, them) = app
            .get(&format!("/api/v1/users/{}", p.uid), Some(&p.token))
            .await;
        assert_eq!(s.as_u16(), 200, "{them}");
        assert_eq!(them["followersCount"], 0, "{them}");
    }
    assert!(app
        .ctx
        .docs
        .imports_of(me.uid, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn imported_rows_have_a_daily_budget_previews_included() {
    let mut settings = test_settings();
    if let Some(limits) = settings.rate_limits.as_mut() {
        limits.import_rows = moments::config::Rate::new(5, 24 * 3600);
    }
    let app = spawn_app_with(settings).await;
    let me = app.user("imprationed").await;
    let mut csv = String::new();
    for i in 0..3 {
        app.user(&format!("imprat_{i}")).await;
        csv.push_str(&format!("imprat_{i}\n"));
    }
    let body = json!({"kind": "mutes", "mode": "merge", "csv": csv});
    let (s, preview) = app
        .post("/api/v1/me/imports/preview", Some(&me.token), body.clone())
        .await;
    assert_eq!(s.as_u16(), 200, "{preview}");
    // Three rows read, two left: an import of three more is refused.
    let (s, headers, problem) = app
        .call_with(
            Method::POST,
            "/api/v1/me/imports",
            Some(&me.token),
            &[],
            Some(body),
        )
        .await;
    assert_eq!(s.as_u16(), 429, "{problem}");
    assert_eq!(problem["code"], "rate_limited", "{problem}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=24 * 3600).contains(&retry), "Retry-After {retry}");
    // Nothing was imported, nor started.
    assert!(app
        .ctx
        .docs
        .imports_of(me.uid, 10)
        .await
        .unwrap()
        .is_empty());
    let (_, mutes) = app.get("/api/v1/me/muted", Some(&me.token)).await;
    assert_eq!(mutes["items"], json!([]), "{mutes}");
}

#[tokio::test]
async fn one_import_runs_at_a_time() {
    let app = spawn_app().await;
    let me = app.user("imponce").await;
    for name in ["imponce_a", "imponce_b"] {
        app.user(name).await;
    }
    // No instance claims it until the gate opens: it stays queued.
    let gate = moments::store::faults::Gate::new();
    app.ctx.faults.inject(
        "ImportDocs",
        "claim_imports",
        moments::store::faults::Fault::Hold(gate.clone()),
        1,
    );
    let (s, first) = app
        .post(
            "/api/v1/me/imports",
            Some(&me.token),
            json!({"kind": "mutes", "mode": "merge", "csv": "imponce_a\n"}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{first}");
    gate.reached().await;
    let second = json!({"kind": "blocks", "mode": "merge", "csv": "imponce_b\n"});
    let refused = app
        .post("/api/v1/me/imports", Some(&me.token), second.clone())
        .await;
    assert_problem(&refused, 409, "conflict");
    assert_eq!(app.ctx.docs.imports_of(me.uid, 10).await.unwrap().len(), 1);
    gate.open();
    let path = format!("/api/v1/me/imports/{}", first["id"]);
    wait_until("the first import ends", || async {
        app.get(&path, Some(&me.token)).await.1["state"] == "done"
    })
    .await;
    // Once it is done, the next one may start.
    let done = apply(&app, &me, second).await;
    assert_eq!(done["state"], "done", "{done}");
}

/// An import takes no step for an account it cannot read: the attempt
/// ends, as one a store failed does, and the next goes on.
#[tokio::test]
async fn an_import_takes_no_step_while_its_account_cannot_be_read() {
    use moments::store::faults::{Fault, Gate};
    let app = spawn_app().await;
    let me = app.user("impunread").await;
    app.user("impunread_a").await;
    let gate = Gate::new();
    app.ctx
        .faults
        .inject("ImportDocs", "claim_imports", Fault::Hold(gate.clone()), 1);
    let (s, started) = app
        .post(
            "/api/v1/me/imports",
            Some(&me.token),
            json!({"kind": "mutes", "mode": "merge", "csv": "impunread_a\n"}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{started}");
    gate.reached().await;
    // The run's first read of its account fails.
    app.ctx
        .faults
        .inject("AccountDocs", "users_by_ids", Fault::Fail, 1);
    gate.open();
    let path = format!("/api/v1/me/imports/{}", started["id"]);
    wait_until("the import ends", || async {
        app.get(&path, Some(&me.token)).await.1["state"] == "done"
    })
    .await;
    let imports = app.ctx.docs.imports_of(me.uid, 10).await.unwrap();
    assert_eq!(imports[0].attempt, 2, "the first attempt stopped unread");
    let (_, mutes) = app.get("/api/v1/me/muted", Some(&me.token)).await;
    assert_eq!(mutes["items"].as_array().unwrap().len(), 1, "{mutes}");
}
