//! Sessions are documents: they survive the live store, are stored only as
//! token hashes, expire and are purged, and their owner lists and ends them.

use serde_json::json;

use sha2::{Digest, Sha256};

use crate::helpers::{
    assert_problem, password_hashes, spawn_app, test_settings, wait_until, TestApp,
};
use moments::ids::now_ms;
use moments::service::accounts::bootstrap_admin;
use moments::service::credentials::token_hash;
use moments::store::SessionDoc;

/// The session documents as the store keeps them: on MongoDB the user's
/// documents in `sessions` as the driver reads them, every field; on the
/// embedded default the whole redb file, every byte of every table.
async fn stored_documents(app: &TestApp, uid: i64) -> String {
    let Some(uri) = &app.settings.mongodb_uri else {
        let file = app
            .settings
            .data_dir
            .join(moments::store::embedded::FILE_NAME);
        return String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
    };
    let sessions = mongodb::Client::with_uri_str(uri)
        .await
        .unwrap()
        .database(&app.settings.mongodb_db)
        .collection::<mongodb::bson::Document>("sessions");
    let mut found = sessions
        .find(mongodb::bson::doc! {"uid": uid})
        .await
        .unwrap();
    let mut text = String::new();
    while found.advance().await.unwrap() {
        let doc = found.deserialize_current().unwrap();
        text.push_str(
            &mongodb::bson::Bson::Document(doc)
                .into_relaxed_extjson()
                .to_string(),
        );
    }
    assert!(!text.is_empty(), "no session document of {uid}");
    text
}

/// What the live store holds of `cached`, as text: on Redis every key under
/// the app's prefix with its value, on every node; on the embedded default,
/// whose live state is in process, the cached session as the store keeps it.
async fn live_contents(app: &TestApp, cached: &moments::store::LiveRead) -> String {
    let Some(url) = &app.settings.redis_url else {
        let blobs = app.ctx.live.read(cached).await.unwrap().blobs;
        return blobs.into_iter().flatten().collect();
    };
    let mut text = String::new();
    let cluster = url.contains(',');
    for node in url.split(',') {
        let mut conn = redis::Client::open(node)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        if cluster {
            // A replica answers reads of its master's keys.
            let _: () = redis::cmd("READONLY").query_async(&mut conn).await.unwrap();
        }
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}*", app.settings.redis_prefix))
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .unwrap();
            for key in keys {
                let kind: String = redis::cmd("TYPE")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let read = match kind.as_str() {
                    "string" => redis::cmd("GET").arg(&key).clone(),
                    "hash" => redis::cmd("HGETALL").arg(&key).clone(),
                    "zset" => redis::cmd("ZRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                        .clone(),
                    "set" => redis::cmd("SMEMBERS").arg(&key).clone(),
                    "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).clone(),
                    "stream" => redis::cmd("XRANGE").arg(&key).arg("-").arg("+").clone(),
                    _ => continue, // gone since the scan
                };
                let value: redis::Value = read.query_async(&mut conn).await.unwrap();
                text.push_str(&format!("{key} ="));
                flatten(&value, &mut text);
                text.push('\n');
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    text
}

/// A Redis reply's strings, each after a space.
fn flatten(value: &redis::Value, text: &mut String) {
    match value {
        redis::Value::BulkString(bytes) => {
            text.push(' ');
            text.push_str(&String::from_utf8_lossy(bytes));
        }
        redis::Value::Array(items) => items.iter().for_each(|v| flatten(v, text)),
        redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            flatten(k, text);
            flatten(v, text);
        }),
        other => text.push_str(&format!(" {other:?}")),
    }
}

#[tokio::test]
async fn sessions_survive_the_loss_of_the_live_store_and_keep_no_token() {
    let app = spawn_app().await;
    let ann = app.user("ann").await;
    assert_eq!(
        app.get("/api/v1/me", Some(&ann.token)).await.0.as_u16(),
        200
    );
    // The session was cached on that read; now the live store is lost.
    app.lose_live_state().await;
    let (s, me) = app.get("/api/v1/me", Some(&ann.token)).await;
    assert_eq!(
        s.as_u16(),
        200,
        "a lost cache must not sign anyone out: {me}"
    );
    assert_eq!(me["uid"], ann.uid);
    // What the stores hold is the token's SHA-256, never the token nor its
    // secret: in the documents as stored, and in the live store once the
    // session is cached again.
    let sha256: String = Sha256::digest(ann.token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let secret = ann.token.split('.').nth(1).unwrap();
    let stored = app.ctx.docs.sessions_of_user(ann.uid, 10).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].token_hash, sha256);
    let documents = stored_documents(&app, ann.uid).await;
    assert!(documents.contains(&sha256), "{documents}");
    assert!(
        !documents.contains(secret),
        "the token is stored: {documents}"
    );
    let cached = moments::store::LiveRead {
        blobs: vec![moments::store::BlobKey::Session(
            ann.uid,
            token_hash(&ann.token),
        )],
        ..Default::default()
    };
    wait_until("the session is cached again", || async {
        app.ctx.live.read(&cached).await.unwrap().blobs[0].is_some()
    })
    .await;
    let live = live_contents(&app, &cached).await;
    assert!(live.contains(&sha256), "{live}");
    assert!(
        !live.contains(secret),
        "the token is in the live store: {live}"
    );
    // A token that differs in one character is nobody's.
    let mut forged = ann.token.clone();
    let last = if forged.ends_with('0') { "1" } else { "0" };
    forged.replace_range(forged.len() - 1.., last);
    assert_problem(
        &app.get("/api/v1/me", Some(&forged)).await,
        401,
        "unauthorized",
    );
}

#[tokio::test]
async fn signed_in_devices_are_listed_and_signed_out_one_at_a_time() {
    let app = spawn_app().await;
    let bo = app.user("bobobo").await;
    let phone = app.login_on("bobobo", "password-123", "iPhone 15").await;
    let (s, page) = app.get("/api/v1/sessions", Some(&phone)).await;
    assert_eq!(s.as_u16(), 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{page}");
    assert_eq!(items[0]["device"], "iPhone 15");
    assert_eq!(items[0]["current"], true);
    assert_eq!(items[1]["current"], false);
    assert!(items[1]["lastSeenAt"].as_i64().unwrap() >= items[1]["createdAt"].as_i64().unwrap());
    let first_id = items[1]["id"].as_i64().unwrap();

    // Someone else cannot end it, nor learn it exists.
    let eve = app.user("eveeveeve").await;
    assert_problem(
        &app.delete(&format!("/api/v1/sessions/{first_id}"), Some(&eve.token))
            .await,
        404,
        "not_found",
    );
    assert_eq!(app.get("/api/v1/me", Some(&bo.token)).await.0.as_u16(), 200);

    let (s, _) = app
        .delete(&format!("/api/v1/sessions/{first_id}"), Some(&phone))
        .await;
    assert_eq!(s.as_u16(), 204);
    assert_problem(
        &app.get("/api/v1/me", Some(&bo.token)).await,
        401,
        "unauthorized",
    );
    assert_eq!(app.get("/api/v1/me", Some(&phone)).await.0.as_u16(), 200);
    let (_, page) = app.get("/api/v1/sessions", Some(&phone)).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn signing_out_everywhere_ends_every_session() {
    let app = spawn_app().await;
    let cy = app.user("cycycy").await;
    let tablet = app.login_on("cycycy", "password-123", "iPad").await;
    // Both cached before the sign-out, so the cache must be dropped too.
    assert_eq!(app.get("/api/v1/me", Some(&cy.token)).await.0.as_u16(), 200);
    assert_eq!(app.get("/api/v1/me", Some(&tablet)).await.0.as_u16(), 200);
    let (s, _) = app.delete("/api/v1/sessions", Some(&tablet)).await;
    assert_eq!(s.as_u16(), 204);
    for t in [&cy.token, &tablet] {
        assert_problem(&app.get("/api/v1/me", Some(t)).await, 401, "unauthorized");
    }
    assert!(app
        .ctx
        .docs
        .sessions_of_user(cy.uid, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_password_change_signs_out_every_other_session() {
    let app = spawn_app().await;
    let di = app.user("dididi").await;
    let laptop = app.login_on("dididi", "password-123", "laptop").await;
    let put = |token: String, body: serde_json::Value| {
        let app = &app;
        async move {
            app.call(
                reqwest::Method::PUT,
                "/api/v1/me/password",
                Some(&token),
                Some(body),
            )
            .await
        }
    };
    let wrong = put(
        laptop.clone(),
        json!({"oldPassword": "not-my-password", "newPassword": "a-new-password-9"}),
    )
    .await;
    assert_problem(&wrong, 403, "forbidden");
    let short = put(
        laptop.clone(),
        json!({"oldPassword": "password-123", "newPassword": "short"}),
    )
    .await;
    assert_eq!(
        assert_problem(&short, 400, "invalid_input")["field"],
        "newPassword"
    );
    // Nothing changed so far.
    assert_eq!(app.get("/api/v1/me", Some(&di.token)).await.0.as_u16(), 200);

    let (s, body) = put(
        laptop.clone(),
        json!({"oldPassword": "password-123", "newPassword": "a-new-password-9"}),
    )
    .await;
    assert_eq!(s.as_u16(), 204, "{body}");
    assert_problem(
        &app.get("/api/v1/me", Some(&di.token)).await,
        401,
        "unauthorized",
    );
    assert_eq!(app.get("/api/v1/me", Some(&laptop)).await.0.as_u16(), 200);
    let old = app
        .post(
            "/api/v1/sessions",
            None,
            json!({"username": "dididi", "password": "password-123"}),
        )
        .await;
    assert_problem(&old, 401, "unauthorized");
    app.login("dididi", "a-new-password-9").await;
}

#[tokio::test]
async fn expired_sessions_are_refused_and_purged() {
    let app = spawn_app().await;
    let ed = app.user("ededed").await;
    let token = format!("{}.{}", ed.uid, "ab".repeat(32));
    let now = now_ms();
    let expired = SessionDoc {
        device: "old phone".into(),
        ..SessionDoc::new(
            moments::ids::next_id(),
            ed.uid,
            token_hash(&token).hex(),
            now - 40 * 86_400_000,
            now - 1000,
        )
    };
    app.ctx.docs.insert_session(&expired).await.unwrap();
    assert_problem(
        &app.get("/api/v1/me", Some(&token)).await,
        401,
        "unauthorized",
    );
    let (_, page) = app.get("/api/v1/sessions", Some(&ed.token)).await;
    assert_eq!(
        page["items"].as_array().unwrap().len(),
        1,
        "expired ones are not listed"
    );

    // MongoDB's TTL index may have got there first; on the embedded store
    // only this sweep removes it.
    let purged = app
        .ctx
        .docs
        .purge_expired_sessions(now_ms(), 100)
        .await
        .unwrap();
    assert!(purged <= 1);
    let left = app.ctx.docs.sessions_of_user(ed.uid, 10).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_ne!(left[0].id, expired.id);
    assert_eq!(app.get("/api/v1/me", Some(&ed.token)).await.0.as_u16(), 200);
}

#[tokio::test]
async fn passwords_longer_than_128_characters_are_refused_before_hashing() {
    let app = spawn_app().await;
    app.user("fay").await;
    let long = "p".repeat(129);
    for (path, username) in [
        ("/api/v1/users", "fay2"),
        ("/api/v1/sessions", "fay"),
        ("/api/v1/sessions", "nobody-by-this-name"),
    ] {
        let hashes = password_hashes(&app);
        let r = app
            .post(path, None, json!({"username": username, "password": long}))
            .await;
        assert_eq!(
            assert_problem(&r, 400, "invalid_input")["field"],
            "password",
            "{path}"
        );
        assert_eq!(password_hashes(&app), hashes, "{path} {username}: hashed");
    }
}

#[tokio::test]
async fn the_admin_bootstrap_never_promotes_an_existing_account() {
    let app = spawn_app().await;
    let squatter = app.user("future-admin").await;
    let err = bootstrap_admin(&app.ctx, "future-admin", "password-456")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("MOMENTS_ADMIN_USERNAME"), "{err}");
    let (_, me) = app.get("/api/v1/me", Some(&squatter.token)).await;
    assert_eq!(me["roles"], json!([]));
    // And a start-up configured so fails, naming the variable (built on the
    // same stores, as a second instance would be).
    let mut settings = test_settings();
    settings.admin = Some((
        "future-admin".into(),
        moments::config::Secret::new("password-456"),
    ));
    let built = moments::startup::Application::build_on(
        settings,
        app.ctx.docs.clone(),
        app.ctx.live.clone(),
    )
    .await;
    let message = format!("{:#}", built.err().expect("start-up must fail"));
    assert!(message.contains("MOMENTS_ADMIN_USERNAME"), "{message}");
}

#[tokio::test]
async fn a_password_change_signs_out_every_other_session_however_many() {
    let app = spawn_app().await;
    let gus = app.user("manydevices").await;
    let now = now_ms();
    let mut tokens = Vec::new();
    for i in 0..120 {
        let token = format!("{}.{:064x}", gus.uid, i + 1);
        let s = SessionDoc {
            device: format!("device {i}"),
            ..SessionDoc::new(
                moments::ids::next_id(),
                gus.uid,
                token_hash(&token).hex(),
                now,
                now + 86_400_000,
            )
        };
        app.ctx.docs.insert_session(&s).await.unwrap();
        tokens.push(token);
    }
    let keep = app.login("manydevices", "password-123").await;
    let (s, body) = app
        .call(
            reqwest::Method::PUT,
            "/api/v1/me/password",
            Some(&keep),
            Some(json!({"oldPassword": "password-123", "newPassword": "a-new-password-7"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{body}");
    for t in tokens.iter().chain([&gus.token]) {
        assert_problem(&app.get("/api/v1/me", Some(t)).await, 401, "unauthorized");
    }
    assert_eq!(app.get("/api/v1/me", Some(&keep)).await.0.as_u16(), 200);
    assert_eq!(
        app.ctx
            .docs
            .sessions_of_user(gus.uid, 200)
            .await
            .unwrap()
            .len(),
        1
    );
}

/// What ends an account's sessions while a sign-in with the old password
/// is held between its password check and its session's insert.
#[derive(Debug, Clone, Copy)]
enum CredentialChange {
    Password,
    SignOutEverywhere,
    Deletion,
}

/// Holds a sign-in right before it stores its session, makes `change`
/// from another session, then lets the sign-in finish: the token it
/// answers must not sign anyone in.
async fn sign_in_racing(change: CredentialChange) {
    use moments::store::faults::{Fault, Gate};
    let app = spawn_app().await;
    let name = format!("race{}", now_ms() % 100_000);
    let me = app.user(&name).await;
    let gate = Gate::new();
    app.ctx.faults.inject(
        "AccountDocs",
        "insert_session",
        Fault::Hold(gate.clone()),
        1,
    );
    let sign_in = app.post(
        "/api/v1/sessions",
        None,
        json!({"username": name, "password": "password-123"}),
    );
    let change_meanwhile = async {
        gate.reached().await;
        let (s, body) = match change {
            CredentialChange::Password => {
                app.call(
                    reqwest::Method::PUT,
                    "/api/v1/me/password",
                    Some(&me.token),
                    Some(json!({"oldPassword": "password-123", "newPassword": "a-new-password-9"})),
                )
                .await
            }
            CredentialChange::SignOutEverywhere => {
                app.delete("/api/v1/sessions", Some(&me.token)).await
            }
            CredentialChange::Deletion => {
                app.call(
                    reqwest::Method::DELETE,
                    "/api/v1/me",
                    Some(&me.token),
                    Some(json!({"password": "password-123"})),
                )
                .await
            }
        };
        assert_eq!(s.as_u16(), 204, "{change:?}: {body}");
        gate.open();
    };
    let ((s, session), ()) = tokio::join!(sign_in, change_meanwhile);
    assert_eq!(
        s.as_u16(),
        201,
        "{change:?}: the held sign-in ends: {session}"
    );
    let raced = session["token"].as_str().unwrap();
    for _ in 0..2 {
        // Twice: the first refusal must not have cached anything.
        assert_problem(
            &app.get("/api/v1/me", Some(raced)).await,
            401,
            "unauthorized",
        );
    }
    match change {
        CredentialChange::Password => {
            // The session that made the change goes on; the new password works.
            assert_eq!(app.get("/api/v1/me", Some(&me.token)).await.0.as_u16(), 200);
            let fresh = app.login(&name, "a-new-password-9").await;
            let (s, listed) = app.get("/api/v1/sessions", Some(&fresh)).await;
            assert_eq!(s.as_u16(), 200);
            assert_eq!(
                listed["items"].as_array().unwrap().len(),
                2,
                "the raced session is not listed: {listed}"
            );
        }
        CredentialChange::SignOutEverywhere => {
            assert_problem(
                &app.get("/api/v1/me", Some(&me.token)).await,
                401,
                "unauthorized",
            );
            app.login(&name, "password-123").await;
        }
        CredentialChange::Deletion => {
            assert_problem(
                &app.get("/api/v1/me", Some(&me.token)).await,
                401,
                "unauthorized",
            );
        }
    }
}

#[tokio::test]
async fn a_sign_in_racing_a_password_change_opens_no_session() {
    sign_in_racing(CredentialChange::Password).await;
}

#[tokio::test]
async fn a_sign_in_racing_a_sign_out_everywhere_opens_no_session() {
    sign_in_racing(CredentialChange::SignOutEverywhere).await;
}

#[tokio::test]
async fn a_sign_in_racing_the_account_s_deletion_opens_no_session() {
    sign_in_racing(CredentialChange::Deletion).await;
}

/// A session already in the cache is not honoured after a change of
/// credentials, even when signing its document out fails: the change is
/// what ends it, checked against the account's card on every request.
#[tokio::test]
async fn a_cached_session_ends_with_a_change_of_credentials_whatever_signing_out_does() {
    use moments::store::faults::Fault;
    let app = spawn_app().await;
    for change in ["password", "everywhere", "deletion"] {
        let name = format!("cached_{change}");
        let me = app.user(&name).await;
        let other = app.login(&name, "password-123").await;
        // Both cached by their use.
        for t in [&me.token, &other] {
            assert_eq!(app.get("/api/v1/me", Some(t)).await.0.as_u16(), 200);
        }
        crate::helpers::settle(&app).await;
        app.ctx
            .faults
            .inject("AccountDocs", "sessions_of_user", Fault::Fail, usize::MAX);
        let (s, body) = match change {
            "password" => {
                app.call(
                    reqwest::Method::PUT,
                    "/api/v1/me/password",
                    Some(&me.token),
                    Some(json!({"oldPassword": "password-123", "newPassword": "a-new-password-9"})),
                )
                .await
            }
            "everywhere" => app.delete("/api/v1/sessions", Some(&me.token)).await,
            _ => {
                app.call(
                    reqwest::Method::DELETE,
                    "/api/v1/me",
                    Some(&me.token),
                    Some(json!({"password": "password-123"})),
                )
                .await
            }
        };
        assert_eq!(s.as_u16(), 204, "{change}: {body}");
        assert_problem(
            &app.get("/api/v1/feed", Some(&other)).await,
            401,
            "unauthorized",
        );
        // Also once the card is cached again (anyone's read of the
        // profile), with the new credentials in it.
        app.get(&format!("/api/v1/users/{}", me.uid), None).await;
        crate::helpers::settle(&app).await;
        assert_problem(
            &app.get("/api/v1/feed", Some(&other)).await,
            401,
            "unauthorized",
        );
        let kept = app.get("/api/v1/me", Some(&me.token)).await.0.as_u16();
        assert_eq!(
            kept,
            if change == "password" { 200 } else { 401 },
            "{change}"
        );
        app.ctx.faults.clear();
    }
}

/// Two password changes made with the same old password at once, as when
/// the owner takes an account back from someone who learnt the password:
/// the first to land wins, the other is refused (409) and its session
/// ends, whichever finished checking first.
#[tokio::test]
async fn of_two_password_changes_at_once_the_first_wins() {
    use moments::store::faults::{Fault, Gate};
    let app = spawn_app().await;
    let name = format!("taken{}", now_ms() % 100_000);
    let owner = app.user(&name).await;
    let sign_in = |password: &'static str| {
        app.post(
            "/api/v1/sessions",
            None,
            json!({"username": name, "password": password}),
        )
    };
    let (s, other) = sign_in("password-123").await;
    assert_eq!(s.as_u16(), 201, "{other}");
    let intruder = other["token"].as_str().unwrap().to_string();
    // The intruder's change has checked the old password and hashed the
    // new one; it is held before it writes anything.
    let gate = Gate::new();
    app.ctx.faults.inject(
        "AccountDocs",
        "set_session_credential_gen",
        Fault::Hold(gate.clone()),
        1,
    );
    let change = |token: String, new: &'static str| {
        let app = &app;
        async move {
            app.call(
                reqwest::Method::PUT,
                "/api/v1/me/password",
                Some(&token),
                Some(json!({"oldPassword": "password-123", "newPassword": new})),
            )
            .await
        }
    };
    let intruders = change(intruder.clone(), "intruder-pass-1");
    let owners = async {
        gate.reached().await;
        let (s, body) = change(owner.token.clone(), "owner-pass-22").await;
        assert_eq!(s.as_u16(), 204, "{body}");
        gate.open();
    };
    let (refused, ()) = tokio::join!(intruders, owners);
    assert_problem(&refused, 409, "conflict");
    assert_eq!(sign_in("owner-pass-22").await.0.as_u16(), 201);
    assert_eq!(sign_in("intruder-pass-1").await.0.as_u16(), 401);
    assert_problem(
        &app.get("/api/v1/me", Some(&intruder)).await,
        401,
        "unauthorized",
    );
    assert_eq!(
        app.get("/api/v1/me", Some(&owner.token)).await.0.as_u16(),
        200
    );
}
