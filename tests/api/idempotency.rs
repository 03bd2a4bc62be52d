//! `Idempotency-Key` on the create endpoints: a retry replays the first
//! answer and makes nothing new.

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

use crate::helpers::{spawn_app, TestApp, User};

async fn post_with_key(
    app: &TestApp,
    path: &str,
    token: Option<&str>,
    key: &str,
    body: Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let (s, h, b) = app
        .call_with(
            Method::POST,
            path,
            token,
            &[("Idempotency-Key", key)],
            Some(body),
        )
        .await;
    (s.as_u16(), h, b)
}

async fn album(app: &TestApp, user: &User) -> Vec<i64> {
    let (s, page) = app
        .get(
            &format!("/api/v1/users/{}/posts", user.uid),
            Some(&user.token),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn the_same_key_and_request_replay_the_first_answer() {
    let app = spawn_app().await;
    let ann = app.user("ann").await;
    let body = json!({"category": "TEXT", "content": "once only"});
    let (s1, h1, first) =
        post_with_key(&app, "/api/v1/posts", Some(&ann.token), "k-1", body.clone()).await;
    assert_eq!(s1, 201, "{first}");
    assert!(h1.get("idempotent-replayed").is_none());
    let (s2, h2, again) =
        post_with_key(&app, "/api/v1/posts", Some(&ann.token), "\"k-1\"", body).await;
    assert_eq!(s2, 201, "{again}");
    assert_eq!(h2["idempotent-replayed"], "true");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(album(&app, &ann).await, vec![first["id"].as_i64().unwrap()]);

    // Another request under the same key is a client bug: 422, nothing made.
    let (s3, _, p) = post_with_key(
        &app,
        "/api/v1/posts",
        Some(&ann.token),
        "k-1",
        json!({"category": "TEXT", "content": "something else"}),
    )
    .await;
    assert_eq!(
        (s3, p["code"].as_str()),
        (422, Some("idempotency_key_reused")),
        "{p}"
    );
    assert_eq!(album(&app, &ann).await.len(), 1);

    // Keys are the account's own: the same key from someone else is theirs.
    let bob = app.user("bob").await;
    let (s4, _, bobs) = post_with_key(
        &app,
        "/api/v1/posts",
        Some(&bob.token),
        "k-1",
        json!({"category": "TEXT", "content": "once only"}),
    )
    .await;
    assert_eq!(s4, 201);
    assert_ne!(bobs["id"], first["id"]);

    // A malformed key is refused before anything is made.
    let (s5, _, p) = post_with_key(
        &app,
        "/api/v1/posts",
        Some(&ann.token),
        "has space",
        json!({"category": "TEXT", "content": "x"}),
    )
    .await;
    assert_eq!((s5, p["field"].as_str()), (400, Some("Idempotency-Key")));
    assert_eq!(album(&app, &ann).await.len(), 1);
}

#[tokio::test]
async fn a_failed_request_gives_its_key_back() {
    let app = spawn_app().await;
    let ann = app.user("ann").await;
    let bob = app.user("bob").await;
    // For followers, mentioning bob, who does not follow ann: refused.
    let body = json!({"category": "TEXT", "content": "for my followers",
                      "visibility": "followers", "mentions": [bob.uid]});
    let (s, _, p) =
        post_with_key(&app, "/api/v1/posts", Some(&ann.token), "k-2", body.clone()).await;
    assert_eq!((s, p["field"].as_str()), (422, Some("mentions")), "{p}");
    assert!(album(&app, &ann).await.is_empty());
    // Once bob follows, the very same request under the same key can
    // succeed: it runs again (neither 409 nor the failure replayed) and
    // makes the post.
    crate::helpers::follow(&app, &bob, &ann).await;
    let retried_at = moments::ids::now_ms();
    let (s, h, made) =
        post_with_key(&app, "/api/v1/posts", Some(&ann.token), "k-2", body.clone()).await;
    assert_eq!(s, 201, "{made}");
    assert!(h.get("idempotent-replayed").is_none(), "{h:?}");
    assert!(
        made["createtime"].as_i64().unwrap() >= retried_at,
        "dated by the try that made it, not by the first: {made}"
    );
    assert_eq!(album(&app, &ann).await, vec![made["id"].as_i64().unwrap()]);
    // And now that it succeeded, the key replays it.
    let (s, h, again) = post_with_key(&app, "/api/v1/posts", Some(&ann.token), "k-2", body).await;
    assert_eq!((s, &again["id"]), (201, &made["id"]), "{again}");
    assert_eq!(h["idempotent-replayed"], "true");
    assert_eq!(album(&app, &ann).await.len(), 1);
}

#[tokio::test]
async fn a_retry_while_the_first_runs_is_409() {
    let app = spawn_app().await;
    let ann = app.user("ann").await;
    let body = json!({"category": "TEXT", "content": "slow"});
    // The first request's claim, as it stands while that request runs.
    let raw = serde_json::to_vec(&body).unwrap();
    let claim = moments::service::idempotency::claim(
        &app.ctx,
        &format!("u{}", ann.uid),
        "k-4",
        moments::service::idempotency::fingerprint("POST", "/api/v1/posts", "", &raw),
    )
    .await
    .unwrap();
    assert!(matches!(
        claim,
        moments::service::idempotency::Claim::Run(_)
    ));
    let (s, _, p) = app
        .call_with(
            Method::POST,
            "/api/v1/posts",
            Some(&ann.token),
            &[
                ("Idempotency-Key", "k-4"),
                ("content-type", "application/json"),
            ],
            Some(body),
        )
        .await;
    assert_eq!(
        (s.as_u16(), p["code"].as_str()),
        (409, Some("conflict")),
        "{p}"
    );
    assert!(album(&app, &ann).await.is_empty());
}

/// The case the header exists for: the post is made, the answer never
/// reaches the client, the client retries.
#[tokio::test]
async fn a_create_whose_answer_was_lost_is_made_once() {
    let app = spawn_app().await;
    let ann = app.user("ann").await;
    let body = r#"{"category":"TEXT","content":"did it go through?"}"#;
    let host = app.base.trim_start_matches("http://");
    let request = format!(
        "POST /api/v1/posts HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\n\
         Idempotency-Key: lost-1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        ann.token,
        body.len()
    );
    let mut conn = tokio::net::TcpStream::connect(host).await.unwrap();
    conn.write_all(request.as_bytes()).await.unwrap();
    // Gone before the answer.
    drop(conn);
    let mut made = Vec::new();
    for _ in 0..200 {
        made = album(&app, &ann).await;
        if !made.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(made.len(), 1, "the first request made its post");
    // Its answer may still be being recorded: a retry then is 409; retry
    // again, as a client does, until it is a 201.
    let mut answer = None;
    for _ in 0..200 {
        let (s, h, p) = app
            .call_with(
                Method::POST,
                "/api/v1/posts",
                Some(&ann.token),
                &[
                    ("Idempotency-Key", "lost-1"),
                    ("content-type", "application/json"),
                ],
                Some(serde_json::from_str(body).unwrap()),
            )
            .await;
        if s.as_u16() == 409 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        }
        assert_eq!(s.as_u16(), 201, "{p}");
        assert_eq!(h["idempotent-replayed"], "true");
        answer = Some(p);
        break;
    }
    let answer = answer.expect("the retry was answered");
    assert_eq!(answer["id"].as_i64(), Some(made[0]));
    assert_eq!(album(&app, &ann).await, made, "exactly one post");
}

#[tokio::test]
async fn a_sign_up_retried_with_its_key_is_one_account() {
    let app = spawn_app().await;
    let body = json!({"username": "carla", "password": "carla-password-1"});
    let (s1, _, first) = post_with_key(&app, "/api/v1/users", None, "signup-1", body.clone()).await;
    assert_eq!(s1, 201, "{first}");
    let (s2, h2, again) = post_with_key(&app, "/api/v1/users", None, "signup-1", body).await;
    assert_eq!((s2, &again["uid"]), (201, &first["uid"]), "{again}");
    assert_eq!(h2["idempotent-replayed"], "true");
    // The password is not part of what the key remembers (no record keeps
    // even a hash of it): a retry that changed only the password is the
    // same sign-up, and is answered as the first was.
    let (s4, _, same) = post_with_key(
        &app,
        "/api/v1/users",
        None,
        "signup-1",
        json!({"username": "carla", "password": "another-password-2"}),
    )
    .await;
    assert_eq!((s4, &same["uid"]), (201, &first["uid"]), "{same}");
    // Without the key the same sign-up is what it always was: taken.
    let (s3, p) = app
        .post(
            "/api/v1/users",
            None,
            json!({"username": "carla", "password": "carla-password-1"}),
        )
        .await;
    assert_eq!(s3.as_u16(), 409, "{p}");
}

/// The port's rules, on whichever documents store the suite runs on.
#[tokio::test]
async fn the_documents_keep_claims_by_their_rules() {
    use moments::store::{IdempotencyDoc, KeyClaim};
    let app = spawn_app().await;
    let docs = &app.ctx.docs;
    // Real times: the app's expiry sweep runs alongside and would purge
    // keys dated in 1970.
    let t0 = moments::ids::now_ms();
    // Each claim brings an id of its own.
    let key = |started_at: i64| {
        IdempotencyDoc::new(
            format!("test:{}", app.settings.redis_prefix),
            "f".repeat(64),
            started_at,
            started_at + 1_000,
            started_at,
        )
    };
    let won = |reserved_id, earlier: &[i64]| KeyClaim::Won {
        reserved_id,
        earlier: earlier.to_vec(),
    };
    let claim = |k: IdempotencyDoc, now: i64, stale_before: i64| async move {
        docs.claim_idempotency_key(&k, now, stale_before)
            .await
            .unwrap()
    };
    let held_since = |c: KeyClaim| match c {
        KeyClaim::Held(k) => Some(k.started_at),
        KeyClaim::Won { .. } => None,
    };
    assert_eq!(claim(key(t0 + 100), t0 + 100, t0).await, won(t0 + 100, &[]));
    // Taken, unfinished, not stale: the first claim answers.
    assert_eq!(
        held_since(claim(key(t0 + 200), t0 + 200, t0 + 50).await),
        Some(t0 + 100)
    );
    // Released by its claimant, the same request takes it over under an id
    // of its own, told where the first one may have made its thing; a
    // different request may not.
    docs.release_idempotency_key(&key(t0).id, t0 + 100)
        .await
        .unwrap();
    let other = IdempotencyDoc {
        fingerprint: "e".repeat(64),
        ..key(t0 + 150)
    };
    assert_eq!(held_since(claim(other, t0 + 150, t0).await), Some(t0 + 100));
    assert_eq!(
        claim(key(t0 + 160), t0 + 160, t0).await,
        won(t0 + 160, &[t0 + 100])
    );
    // A release by anyone but the claimant changes nothing.
    docs.release_idempotency_key(&key(t0).id, t0 + 999)
        .await
        .unwrap();
    assert_eq!(
        held_since(claim(key(t0 + 170), t0 + 170, t0).await),
        Some(t0 + 160)
    );
    docs.complete_idempotency_key(&key(t0).id, t0 + 160, 201, "{\"id\":1}")
        .await
        .unwrap();
    let KeyClaim::Held(done) = claim(key(t0 + 300), t0 + 300, t0 + 250).await else {
        panic!("a finished claim is held");
    };
    assert_eq!(
        (done.status, done.body.as_deref()),
        (Some(201), Some("{\"id\":1}"))
    );
    // Finished claims are not released, and are not stale: only expiry
    // ends them, and then the earlier tries go with them.
    docs.release_idempotency_key(&key(t0).id, t0 + 160)
        .await
        .unwrap();
    assert!(held_since(claim(key(t0 + 400), t0 + 400, t0 + 400).await).is_some());
    assert_eq!(
        claim(key(t0 + 2_000), t0 + 2_000, t0).await,
        won(t0 + 2_000, &[])
    );
    // An unfinished claim older than `stale_before` is taken over, its
    // try kept to look at.
    assert_eq!(
        claim(key(t0 + 2_100), t0 + 2_100, t0 + 2_050).await,
        won(t0 + 2_100, &[t0 + 2_000])
    );
    // Tries are bounded: past MAX_TRIES failed ones, the key is held until
    // it expires.
    let mut at = t0 + 2_100;
    for _ in 2..IdempotencyDoc::MAX_TRIES {
        docs.release_idempotency_key(&key(t0).id, at).await.unwrap();
        at += 1;
        assert!(matches!(claim(key(at), at, t0).await, KeyClaim::Won { .. }));
    }
    docs.release_idempotency_key(&key(t0).id, at).await.unwrap();
    assert_eq!(held_since(claim(key(at + 1), at + 1, t0).await), Some(at));
    // Purged once expired.
    assert!(
        docs.purge_expired_idempotency_keys(t0 + 100_000, 100)
            .await
            .unwrap()
            >= 1
    );
    assert_eq!(
        claim(key(t0 + 2_300), t0 + 2_300, t0).await,
        won(t0 + 2_300, &[])
    );
}

/// Replays and reused keys are sign-ups too: they are charged to the
/// address's budget before the key is looked at.
#[tokio::test]
async fn replayed_sign_ups_still_spend_the_address_budget() {
    let mut settings = crate::helpers::test_settings();
    settings.rate_limits = Some(moments::config::RateLimits {
        signups_per_ip: moments::config::Rate::new(2, 3600),
        ..Default::default()
    });
    let app = crate::helpers::spawn_app_with(settings).await;
    let body = json!({"username": "dora", "password": "dora-password-1"});
    for _ in 0..2 {
        let (s, _, b) = post_with_key(&app, "/api/v1/users", None, "signup-2", body.clone()).await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, _, b) = post_with_key(&app, "/api/v1/users", None, "signup-2", body).await;
    assert_eq!((s, b["code"].as_str()), (429, Some("rate_limited")), "{b}");
}

/// A create whose insert landed but whose answer failed (the store's reply
/// lost in a failover) keeps its key's reservation: the retry answers the
/// thing made, and there is one of it.
#[tokio::test]
async fn a_create_that_failed_after_its_insert_is_answered_by_the_retry() {
    use moments::store::faults::Fault;
    let app = spawn_app().await;
    let ann = app.user("ann").await;
    let body = json!({"category": "TEXT", "content": "made, answer lost"});
    app.ctx
        .faults
        .inject("PostDocs", "insert_post", Fault::FailAfter, 1);
    let publish = || {
        post_with_key(
            &app,
            "/api/v1/posts",
            Some(&ann.token),
            "k-after",
            body.clone(),
        )
    };
    let (s, _, first) = publish().await;
    assert_eq!(
        (s, first["code"].as_str()),
        (503, Some("store_unavailable")),
        "{first}"
    );
    let made = album(&app, &ann).await;
    assert_eq!(made.len(), 1, "the insert landed");
    let (s, h, retried) = publish().await;
    assert_eq!(s, 201, "{retried}");
    assert!(
        h.get("idempotent-replayed").is_none(),
        "run again, not replayed"
    );
    assert_eq!(
        retried["id"].as_i64(),
        Some(made[0]),
        "the retry answers the post made"
    );
    assert_eq!(album(&app, &ann).await, made, "exactly one post");
    // Recorded now: a third try replays it.
    let (s, h, again) = publish().await;
    assert_eq!((s, again["id"].as_i64()), (201, Some(made[0])));
    assert_eq!(h["idempotent-replayed"], "true");

    // The same for a comment...
    let post = made[0];
    let path = format!("/api/v1/posts/{post}/comments");
    app.ctx
        .faults
        .inject("CommentDocs", "insert_comment", Fault::FailAfter, 1);
    let comment = json!({"content": "one comment"});
    let (s, _, _) = post_with_key(&app, &path, Some(&ann.token), "c-after", comment.clone()).await;
    assert_eq!(s, 503);
    let (s, _, retried) = post_with_key(&app, &path, Some(&ann.token), "c-after", comment).await;
    assert_eq!(s, 201, "{retried}");
    let (_, page) = app.get(&path, Some(&ann.token)).await;
    let ids: Vec<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![retried["id"].as_i64().unwrap()],
        "exactly one comment"
    );

    // ...and a sign-up, whose retry would otherwise be "username taken".
    app.ctx
        .faults
        .inject("AccountDocs", "insert_user", Fault::FailAfter, 1);
    let signup = json!({"username": "bea_after", "password": "password-123"});
    let (s, _, _) = post_with_key(&app, "/api/v1/users", None, "u-after", signup.clone()).await;
    assert_eq!(s, 503);
    let (s, _, card) = post_with_key(&app, "/api/v1/users", None, "u-after", signup).await;
    assert_eq!(s, 201, "{card}");
    let bea = app.login("bea_after", "password-123").await;
    let (_, me) = app.get("/api/v1/me", Some(&bea)).await;
    assert_eq!(me["uid"], card["uid"]);
}
