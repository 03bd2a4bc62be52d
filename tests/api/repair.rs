//! `moments check` / `moments rebuild-live` and their admin endpoints.

use moments::store::{BlobKey, Changes, LiveChange, LiveRead, Owner, SetKey, SetRead};
use serde_json::{json, Value};

use crate::helpers::{on_real_stores, spawn_app, wait_until, TestApp};

/// Puts a liker nobody has into a post's live set and a wrong name into a
/// user's live card, the kind of drift the tools exist for.
async fn corrupt(app: &TestApp, post: i64, uid: i64) {
    let gens = app
        .ctx
        .live
        .read(&LiveRead {
            gens: vec![Owner::Post(post)],
            ..Default::default()
        })
        .await
        .unwrap()
        .gens;
    app.ctx
        .live
        .apply(&[Changes {
            owner: Owner::Post(post),
            expected_gen: Some(gens[0]),
            changes: vec![LiveChange::SetAdd(
                SetKey::PostLikers(post),
                42,
                1_000_000_000_000_042,
            )],
        }])
        .await
        .unwrap();
    // Put as a write would, bumping the user's generation, so that a
    // rebuilt card still being written back (guarded by the generation it
    // was read under) cannot overwrite it.
    let card = json!({"uid": uid, "nickName": "冒名顶替", "headImg": ""}).to_string();
    app.ctx
        .live
        .apply(&[Changes {
            owner: Owner::User(uid),
            expected_gen: None,
            changes: vec![LiveChange::PutBlob(BlobKey::Card(uid), card)],
        }])
        .await
        .unwrap();
}

async fn activity(app: &TestApp) -> (i64, i64, String) {
    let a = app.user("keeper").await;
    let b = app.user("visitor").await;
    let post = app.text_post(&a, "checked").await;
    app.put(&format!("/api/v1/posts/{post}/like"), Some(&b.token))
        .await;
    let c = app.comment(&b, post, "hello", None).await["id"]
        .as_i64()
        .unwrap();
    app.comment(&a, post, "hi", Some(c)).await;
    app.put(&format!("/api/v1/comments/{c}/like"), Some(&a.token))
        .await;
    // Warm everything the tools compare, and wait for the likers set that
    // `corrupt` changes to be written back: a change to an absent set is
    // not applied (it is rebuilt whole on the next read).
    app.get(&format!("/api/v1/posts/{post}"), None).await;
    app.get(&format!("/api/v1/posts/{post}/comments"), None)
        .await;
    wait_until("the post's likers are in the live state", || async {
        let likers = SetRead {
            key: SetKey::PostLikers(post),
            top: 1,
            probe: None,
            below: None,
        };
        let read = LiveRead {
            sets: vec![likers],
            ..Default::default()
        };
        app.ctx.live.read(&read).await.unwrap().sets[0].is_some()
    })
    .await;
    (post, a.uid, b.token)
}

fn mismatches(report: &Value) -> Vec<String> {
    report["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn check_finds_drift_and_rebuild_repairs_it() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let (post, uid, _) = activity(&app).await;
    let (s, clean) = app
        .get("/api/v1/admin/live/check", Some(&admin.token))
        .await;
    assert_eq!(s.as_u16(), 200, "{clean}");
    assert_eq!(mismatches(&clean), Vec::<String>::new());
    assert_eq!(clean["posts"], 1);

    corrupt(&app, post, uid).await;
    assert_eq!(
        app.get(&format!("/api/v1/posts/{post}"), None).await.1["likeCount"],
        2,
        "the drift shows"
    );
    let (_, report) = app
        .get("/api/v1/admin/live/check", Some(&admin.token))
        .await;
    let found = mismatches(&report);
    assert!(
        found
            .iter()
            .any(|m| m.starts_with(&format!("post {post}: likers"))),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|m| m.starts_with(&format!("user {uid}: cached card"))),
        "{found:?}"
    );

    let (s, rebuilt) = app
        .call(
            reqwest::Method::POST,
            "/api/v1/admin/live/rebuild",
            Some(&admin.token),
            None,
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{rebuilt}");
    assert_eq!(rebuilt["posts"], 1);
    let (_, after) = app
        .get("/api/v1/admin/live/check", Some(&admin.token))
        .await;
    assert_eq!(mismatches(&after), Vec::<String>::new());
    let (_, p) = app.get(&format!("/api/v1/posts/{post}"), None).await;
    assert_eq!(p["likeCount"], 1);
    assert_eq!(p["author"]["nickName"], "keeper昵称");
}

fn run_tool(app: &TestApp, tool: &str) -> (i32, String) {
    let s = &app.settings;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_moments"));
    cmd.arg(tool)
        .env_clear()
        .env("MOMENTS_MONGODB_DB", &s.mongodb_db)
        .env("MOMENTS_REDIS_PREFIX", &s.redis_prefix)
        .env("MOMENTS_DATA_DIR", &s.data_dir);
    if let Some(u) = &s.mongodb_uri {
        cmd.env("MOMENTS_MONGODB_URI", u);
    }
    if let Some(u) = &s.redis_url {
        cmd.env("MOMENTS_REDIS_URL", u);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[tokio::test]
async fn the_command_line_tools_check_and_rebuild_redis() {
    let app = spawn_app().await;
    let (post, uid, _) = activity(&app).await;
    if !on_real_stores() {
        // The embedded default's live state is inside the server process.
        let (code, text) = run_tool(&app, "check");
        assert_eq!(code, 2, "{text}");
        assert!(text.contains("/api/v1/admin/live/check"), "{text}");
        return;
    }
    let (code, text) = run_tool(&app, "check");
    assert_eq!(code, 0, "{text}");
    // Three users: keeper, visitor and the bootstrapped admin.
    assert!(
        text.contains("checked 1 posts and 3 users: 0 mismatches"),
        "{text}"
    );
    corrupt(&app, post, uid).await;
    let (code, text) = run_tool(&app, "check");
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("mismatch: post {post}: likers")),
        "{text}"
    );
    let (code, text) = run_tool(&app, "rebuild-live");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("rebuilt the live state of 1 posts and 3 users"),
        "{text}"
    );
    let (code, text) = run_tool(&app, "check");
    assert_eq!(code, 0, "{text}");
}
