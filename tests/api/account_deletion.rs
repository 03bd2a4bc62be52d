//! Deleting an account: from the answer on, nothing it did shows in any
//! other user's read, its sessions are gone, and its name is free.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_problem, follow, settle, spawn_app, whole_feed, TestApp, User};

async fn ids_in(app: &TestApp, path: &str, who: &User, field: &str) -> Vec<i64> {
    let (s, page) = app.get(path, Some(&who.token)).await;
    assert_eq!(s.as_u16(), 200, "{path}: {page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let v: &Value = field.split('.').fold(i, |v, k| &v[k]);
            v.as_i64().unwrap()
        })
        .collect()
}

/// Deletes `who`'s account (204) with the background erasure held at its
/// first step, the account's posts; the gate lets it go on.
async fn deleted_with_erasure_held(
    app: &TestApp,
    who: &User,
) -> std::sync::Arc<moments::store::faults::Gate> {
    use moments::store::faults::{Fault, Gate};
    let gate = Gate::new();
    app.ctx.faults.inject(
        "PostDocs",
        "post_ids_by_author",
        Fault::Hold(gate.clone()),
        1,
    );
    let (s, body) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&who.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{body}");
    gate.reached().await;
    gate
}

#[tokio::test]
async fn a_deleted_account_is_gone_from_every_read_of_everyone_else() {
    let app = spawn_app().await;
    let gone = app.user("leaving").await;
    let bea = app.user("staying").await;
    let cal = app.user("watching").await;
    for (a, b) in [(&gone, &bea), (&bea, &gone), (&cal, &gone), (&cal, &bea)] {
        follow(&app, a, b).await;
    }
    let theirs = app.text_post(&gone, "soon gone").await;
    let hers = app.text_post(&bea, "stays").await;
    app.comment(&bea, theirs, "on their post", None).await;
    let her_comment = app.comment(&bea, hers, "her own", None).await["id"]
        .as_i64()
        .unwrap();
    let their_comment = app
        .comment(&gone, hers, "their words", Some(her_comment))
        .await["id"]
        .as_i64()
        .unwrap();
    app.put(&format!("/api/v1/posts/{hers}/like"), Some(&gone.token))
        .await;
    app.put(
        &format!("/api/v1/comments/{her_comment}/like"),
        Some(&gone.token),
    )
    .await;
    settle(&app).await;
    // Everyone's reads, warm, before.
    let (_, post) = app
        .get(&format!("/api/v1/posts/{hers}"), Some(&bea.token))
        .await;
    assert_eq!(
        (post["likeCount"].as_i64(), post["commentCount"].as_i64()),
        (Some(1), Some(2))
    );
    assert!(whole_feed(&app, &cal, 20).await.contains(&theirs));

    // A wrong password changes nothing.
    let wrong = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&gone.token),
            Some(json!({"password": "not-it-at-all"})),
        )
        .await;
    assert_problem(&wrong, 403, "forbidden");
    assert_eq!(
        app.get("/api/v1/me", Some(&gone.token)).await.0.as_u16(),
        200
    );

    let (s, body) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&gone.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{body}");

    // Signed out, and no way back in.
    assert_problem(
        &app.get("/api/v1/me", Some(&gone.token)).await,
        401,
        "unauthorized",
    );
    let again = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "leaving", "password": "password-123"}),
        )
        .await;
    assert_problem(&again, 401, "unauthorized");
    // Its posts, comments and likes, counts included.
    assert_problem(
        &app.get(&format!("/api/v1/posts/{theirs}"), Some(&bea.token))
            .await,
        404,
        "not_found",
    );
    let (_, post) = app
        .get(&format!("/api/v1/posts/{hers}"), Some(&bea.token))
        .await;
    assert_eq!(
        (post["likeCount"].as_i64(), post["commentCount"].as_i64()),
        (Some(0), Some(1)),
        "{post}"
    );
    assert_eq!(post["comments"][0]["id"], her_comment);
    assert_eq!(post["comments"][0]["likeCount"], 0);
    assert_eq!(post["comments"][0]["commentCount"], 0);
    assert!(
        ids_in(&app, &format!("/api/v1/posts/{hers}/comments"), &bea, "id")
            .await
            .iter()
            .all(|c| *c != their_comment)
    );
    assert!(ids_in(
        &app,
        &format!("/api/v1/posts/{hers}/likes"),
        &bea,
        "user.uid"
    )
    .await
    .is_empty());
    // Its follows, on every list and timeline.
    assert!(!whole_feed(&app, &cal, 20).await.contains(&theirs));
    for (who, list) in [
        (&bea, "followers"),
        (&bea, "following"),
        (&bea, "friends"),
        (&cal, "following"),
    ] {
        let uids = ids_in(
            &app,
            &format!("/api/v1/users/{}/{list}", who.uid),
            who,
            "uid",
        )
        .await;
        assert!(!uids.contains(&gone.uid), "{list} of {}: {uids:?}", who.uid);
    }
    let (_, profile) = app
        .get(&format!("/api/v1/users/{}", bea.uid), Some(&bea.token))
        .await;
    assert_eq!(
        (
            profile["followersCount"].as_i64(),
            profile["followingCount"].as_i64()
        ),
        (Some(1), Some(0))
    );
    assert_problem(
        &app.get(&format!("/api/v1/users/{}", gone.uid), Some(&bea.token))
            .await,
        404,
        "not_found",
    );
    // The notifications it caused.
    let actors = ids_in(&app, "/api/v1/notifications", &bea, "actor.uid").await;
    assert!(!actors.contains(&gone.uid), "{actors:?}");
    // And its name is free.
    app.user("leaving").await;
}

#[tokio::test]
async fn an_erasure_cut_short_is_finished_by_the_sweep() {
    let app = spawn_app().await;
    let gone = app.user("cutshort").await;
    let bea = app.user("bystand").await;
    let post = app.text_post(&bea, "liked by the leaver").await;
    app.put(&format!("/api/v1/posts/{post}/like"), Some(&gone.token))
        .await;
    // As if the instance stopped right after the tombstone was written.
    assert!(app.ctx.docs.erase_user(gone.uid).await.unwrap());
    assert_eq!(
        app.ctx.docs.accounts_being_erased(10).await.unwrap(),
        vec![gone.uid]
    );
    let (_, seen) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&bea.token))
        .await;
    assert_eq!(seen["likeCount"], 1, "not erased yet");
    assert_eq!(
        moments::service::erasure::resume_unfinished(&app.ctx)
            .await
            .unwrap(),
        1
    );
    let (_, seen) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&bea.token))
        .await;
    assert_eq!(seen["likeCount"], 0, "{seen}");
    assert!(app
        .ctx
        .docs
        .accounts_being_erased(10)
        .await
        .unwrap()
        .is_empty());
}

/// The answer to `DELETE /me` is the moment its posts stop being
/// readable, however much of the account is left to erase: here all of it
/// is (nothing erased in the request, the background erasure held at its
/// first step), and none of it shows.
#[tokio::test]
async fn posts_left_to_erase_are_gone_from_reads_at_once() {
    let mut settings = crate::helpers::test_settings();
    settings.erase_in_request = 0;
    let app = crate::helpers::spawn_app_with(settings).await;
    let gone = app.user("erasing_slowly").await;
    let fan = app.user("erasing_fan").await;
    follow(&app, &fan, &gone).await;
    let mut posts = Vec::new();
    for i in 0..3 {
        posts.push(app.text_post(&gone, &format!("left behind {i}")).await);
    }
    let theirs = posts[0];
    let mine = app.text_post(&fan, "mine").await;
    app.comment(&gone, mine, "their comment", None).await;
    app.put(&format!("/api/v1/posts/{mine}/like"), Some(&gone.token))
        .await;
    app.put(&format!("/api/v1/posts/{theirs}/like"), Some(&fan.token))
        .await;
    assert_eq!(whole_feed(&app, &fan, 20).await.len(), 4);
    let gate = deleted_with_erasure_held(&app, &gone).await;
    assert_eq!(
        app.ctx.docs.posts_by_ids(&posts).await.unwrap().len(),
        3,
        "still in the documents"
    );
    for post in &posts {
        for reader in [Some(fan.token.as_str()), None] {
            assert_problem(
                &app.get(&format!("/api/v1/posts/{post}"), reader).await,
                404,
                "not_found",
            );
        }
    }
    // Nor can anything be done on them, or read off them; nor are its
    // follows listed, though their documents are still there.
    for path in [
        format!("/api/v1/posts/{theirs}/comments"),
        format!("/api/v1/posts/{theirs}/likes"),
        format!("/api/v1/users/{}/following", gone.uid),
        format!("/api/v1/users/{}/followers", gone.uid),
    ] {
        assert_problem(&app.get(&path, Some(&fan.token)).await, 404, "not_found");
    }
    assert_problem(
        &app.post(
            &format!("/api/v1/posts/{theirs}/comments"),
            Some(&fan.token),
            json!({"content": "too late"}),
        )
        .await,
        404,
        "not_found",
    );
    assert_problem(
        &app.put(&format!("/api/v1/posts/{theirs}/like"), Some(&fan.token))
            .await,
        404,
        "not_found",
    );
    assert_eq!(whole_feed(&app, &fan, 20).await, vec![mine]);
    assert!(ids_in(&app, "/api/v1/me/likes", &fan, "id")
        .await
        .is_empty());
    assert!(ids_in(
        &app,
        &format!("/api/v1/users/{}/posts", gone.uid),
        &fan,
        "id"
    )
    .await
    .is_empty());
    // What they did on others' posts is not shown there either.
    let (_, post) = app
        .get(&format!("/api/v1/posts/{mine}"), Some(&fan.token))
        .await;
    assert!(post["comments"].as_array().unwrap().is_empty(), "{post}");
    assert!(post["likes"].as_array().unwrap().is_empty(), "{post}");
    // Nor is it in the lists of whom others follow, though its follow
    // documents are still there.
    assert_eq!(
        app.ctx
            .docs
            .follow_edges(fan.uid, &[gone.uid])
            .await
            .unwrap()
            .0,
        vec![gone.uid]
    );
    assert!(ids_in(
        &app,
        &format!("/api/v1/users/{}/following", fan.uid),
        &fan,
        "uid"
    )
    .await
    .is_empty());
    // Let go, the erasure finishes, and the counts follow.
    gate.open();
    crate::helpers::wait_until("the erasure to finish", || async {
        app.ctx
            .docs
            .accounts_being_erased(10)
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    assert!(app
        .ctx
        .docs
        .posts_by_ids(&posts)
        .await
        .unwrap()
        .iter()
        .all(|p| p.deleted));
    let (_, post) = app
        .get(&format!("/api/v1/posts/{mine}"), Some(&fan.token))
        .await;
    assert_eq!(
        (post["likeCount"].as_i64(), post["commentCount"].as_i64()),
        (Some(0), Some(0)),
        "{post}"
    );
}

/// Rebuilding the live state (the recovery after losing Redis) while a
/// deleted account's posts are still being erased must not bring the
/// account back: no card is made for it, and one found is dropped.
#[tokio::test]
async fn a_rebuild_of_the_live_state_brings_no_deleted_account_back() {
    use moments::store::{BlobKey, LiveFill, LiveRead};
    let mut settings = crate::helpers::test_settings();
    settings.erase_in_request = 0;
    let app = crate::helpers::spawn_app_with(settings).await;
    let admin = app.admin().await;
    let gone = app.user("rebuilt_gone").await;
    let fan = app.user("rebuilt_fan").await;
    follow(&app, &fan, &gone).await;
    let post = app.text_post(&gone, "left to erase").await;
    let profile = format!("/api/v1/users/{}", gone.uid);
    assert_eq!(app.get(&profile, Some(&fan.token)).await.0.as_u16(), 200);
    let card_key = BlobKey::Card(gone.uid);
    let cached = |app: &TestApp| {
        let ctx = app.ctx.clone();
        async move {
            let read = LiveRead {
                blobs: vec![card_key],
                ..Default::default()
            };
            ctx.live.read(&read).await.unwrap().blobs[0].clone()
        }
    };
    let card = cached(&app)
        .await
        .expect("the profile read cached the card");
    let gate = deleted_with_erasure_held(&app, &gone).await;
    let rebuild = || {
        app.call(
            Method::POST,
            "/api/v1/admin/live/rebuild",
            Some(&admin.token),
            None,
        )
    };
    let gone_everywhere = || async {
        assert_eq!(cached(&app).await, None, "a card for the erased account");
        assert_problem(&app.get(&profile, Some(&fan.token)).await, 404, "not_found");
        assert_problem(
            &app.get(&format!("/api/v1/posts/{post}"), Some(&fan.token))
                .await,
            404,
            "not_found",
        );
        assert_problem(
            &app.put(&format!("{profile}/follow"), Some(&admin.token))
                .await,
            404,
            "not_found",
        );
    };
    let (s, report) = rebuild().await;
    assert_eq!(s.as_u16(), 200, "{report}");
    gone_everywhere().await;
    // A card left over from before (as a Redis restored from a snapshot
    // would hold): the check names it, and a rebuild drops it.
    app.ctx
        .live
        .fill(&LiveFill {
            blobs: vec![(card_key, card, None)],
            ..Default::default()
        })
        .await
        .unwrap();
    let (_, report) = app
        .get("/api/v1/admin/live/check", Some(&admin.token))
        .await;
    let line = format!(
        "user {}: erased or suspended, yet a card is cached",
        gone.uid
    );
    assert!(
        report["mismatches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == &Value::String(line.clone())),
        "{report}"
    );
    assert_eq!(rebuild().await.0.as_u16(), 200);
    gone_everywhere().await;
    gate.open();
}

/// `gone`'s password change, with the account erased while the change is
/// held at its `AccountDocs` call `op`; the change's answer.
async fn password_change_erased_at(
    app: &TestApp,
    gone: &crate::helpers::User,
    op: &'static str,
) -> (reqwest::StatusCode, Value) {
    use moments::store::faults::{Fault, Gate};
    let gate = Gate::new();
    app.ctx
        .faults
        .inject("AccountDocs", op, Fault::Hold(gate.clone()), 1);
    let change = app.call(
        Method::PUT,
        "/api/v1/me/password",
        Some(&gone.token),
        Some(json!({"oldPassword": "password-123", "newPassword": "password-456"})),
    );
    let erase = async {
        gate.reached().await;
        assert!(app.ctx.docs.erase_user(gone.uid).await.unwrap());
        gate.open();
    };
    let (answer, ()) = tokio::join!(change, erase);
    answer
}

/// A password change that passed its session check just before the account
/// was erased finds a tombstone, with no password to check: the account is
/// gone (401), not a failure of the service.
#[tokio::test]
async fn a_password_change_racing_the_deletion_finds_the_account_gone() {
    let app = spawn_app().await;
    let gone = app.user("racing_gone").await;
    // Warm: the session and the card are cached, so the next request's
    // session check reads no account document.
    for path in [format!("/api/v1/users/{}", gone.uid), "/api/v1/me".into()] {
        assert_eq!(app.get(&path, Some(&gone.token)).await.0.as_u16(), 200);
    }
    let answer = password_change_erased_at(&app, &gone, "users_by_ids").await;
    assert_problem(&answer, 401, "unauthorized");
}

/// One that had checked the old password before the erasure, and writes
/// after it, writes nothing onto the tombstone (409: the account moved on).
#[tokio::test]
async fn a_password_change_checked_before_the_deletion_writes_nothing_after_it() {
    let app = spawn_app().await;
    let gone = app.user("racing_late").await;
    let answer = password_change_erased_at(&app, &gone, "set_session_credential_gen").await;
    assert_problem(&answer, 409, "conflict");
    let tomb = app.ctx.docs.users_by_ids(&[gone.uid]).await.unwrap();
    assert!(tomb[0].is_erased());
    assert_eq!(
        tomb[0].password_hash, "",
        "a hash written onto the tombstone"
    );
}
