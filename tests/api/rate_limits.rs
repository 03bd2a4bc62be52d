//! Rate limits: 429 problem+json with Retry-After, per account and per
//! address, shared through the live store; X-Forwarded-For only from
//! trusted proxies.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_problem, password_hashes, spawn_app_with, test_settings, TestApp};
use moments::config::{Rate, RateLimits};
use moments::domain::addr::IpBlock;

fn limited(f: impl FnOnce(&mut RateLimits)) -> moments::config::Settings {
    let mut settings = test_settings();
    let mut limits = RateLimits::default();
    f(&mut limits);
    settings.rate_limits = Some(limits);
    settings
}

#[tokio::test]
async fn failed_sign_ins_lock_the_account_whatever_the_address() {
    let app = spawn_app_with(limited(|l| l.login_failures = Rate::new(3, 900))).await;
    app.user("gil").await;
    app.user("hal").await;
    let attempt = |name: &'static str, password: &'static str, ip: &'static str| {
        let app = &app;
        async move {
            app.call_with(
                Method::POST,
                "/api/v1/sessions",
                None,
                &[("x-forwarded-for", ip)],
                Some(json!({"username": name, "password": password})),
            )
            .await
        }
    };
    for ip in ["1.1.1.1", "2.2.2.2", "3.3.3.3"] {
        assert_eq!(attempt("gil", "wrong-password", ip).await.0.as_u16(), 401);
    }
    let (s, headers, body) = attempt("gil", "wrong-password", "4.4.4.4").await;
    assert_problem(&(s, body), 429, "rate_limited");
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=900).contains(&wait), "Retry-After {wait}");
    // Locked: even the right password waits, so guessing gains nothing.
    let (s, _, _) = attempt("gil", "password-123", "5.5.5.5").await;
    assert_eq!(s.as_u16(), 429);
    // Another account is not affected, and right passwords are not counted.
    for _ in 0..5 {
        assert_eq!(
            attempt("hal", "password-123", "1.1.1.1").await.0.as_u16(),
            201
        );
    }
}

#[tokio::test]
async fn writes_are_limited_per_account_and_reads_separately() {
    let app = spawn_app_with(limited(|l| l.writes = Rate::new(3, 60))).await;
    let ivy = app.user("ivy").await;
    let jo = app.user("jojojo").await;
    for i in 0..3 {
        app.text_post(&ivy, &format!("post {i}")).await;
    }
    let r = app
        .post(
            "/api/v1/posts",
            Some(&ivy.token),
            json!({"category": "TEXT", "content": "one too many"}),
        )
        .await;
    assert_problem(&r, 429, "rate_limited");
    // Nothing was written by the refused request.
    let (_, page) = app
        .get(
            &format!("/api/v1/users/{}/posts", ivy.uid),
            Some(&ivy.token),
        )
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 3);
    // Reading goes on, and another account still writes.
    assert_eq!(
        app.get("/api/v1/feed", Some(&ivy.token)).await.0.as_u16(),
        200
    );
    app.text_post(&jo, "mine").await;
}

#[tokio::test]
async fn anonymous_reads_are_limited_per_address() {
    let app = spawn_app_with(limited(|l| l.reads_per_ip = Rate::new(5, 60))).await;
    let kim = app.user("kim").await;
    let path = format!("/api/v1/users/{}", kim.uid);
    for _ in 0..5 {
        assert_eq!(app.get(&path, None).await.0.as_u16(), 200);
    }
    assert_problem(&app.get(&path, None).await, 429, "rate_limited");
}

async fn signup_from(app: &TestApp, name: &str, forwarded_for: &str) -> u16 {
    app.call_with(
        Method::POST,
        "/api/v1/users",
        None,
        &[("x-forwarded-for", forwarded_for)],
        Some(json!({"username": name, "password": "password-123"})),
    )
    .await
    .0
    .as_u16()
}

#[tokio::test]
async fn forwarded_for_counts_only_behind_a_trusted_proxy() {
    // Untrusted: a made-up X-Forwarded-For does not buy more sign-ups.
    let app = spawn_app_with(limited(|l| l.signups_per_ip = Rate::new(2, 3600))).await;
    let mut statuses = Vec::new();
    for (name, ip) in [
        ("lee1", "9.9.9.1"),
        ("lee2", "9.9.9.2"),
        ("lee3", "9.9.9.3"),
    ] {
        statuses.push(signup_from(&app, name, ip).await);
    }
    assert_eq!(statuses, [201, 201, 429]);

    // Behind a trusted proxy (the test client's address), each client
    // address has its own budget: an office behind one address is one client.
    let mut settings = limited(|l| l.signups_per_ip = Rate::new(2, 3600));
    settings.trusted_proxies = vec![IpBlock::parse("127.0.0.1").unwrap()];
    let app = spawn_app_with(settings).await;
    let mut statuses = Vec::new();
    for (name, ip) in [
        ("mo1", "9.9.9.1"),
        ("mo2", "9.9.9.2"),
        ("mo3", "9.9.9.3"),
        ("mo4", "9.9.9.3"),
        ("mo5", "9.9.9.3"),
    ] {
        statuses.push(signup_from(&app, name, ip).await);
    }
    assert_eq!(statuses, [201, 201, 201, 201, 429]);
}

#[tokio::test]
async fn limits_can_be_turned_off() {
    let mut settings = test_settings();
    settings.rate_limits = None;
    let app = spawn_app_with(settings).await;
    app.user("ned").await;
    // Past the default of 10 failures, still only ever 401.
    for _ in 0..12 {
        let r = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"username": "ned", "password": "wrong-password"}),
            )
            .await;
        assert_problem(&r, 401, "unauthorized");
    }
    app.login("ned", "password-123").await;
}

#[tokio::test]
async fn forged_tokens_naming_an_account_do_not_spend_its_budget() {
    let app = spawn_app_with(limited(|l| l.reads = Rate::new(5, 60))).await;
    let victim = app.user("victim").await;
    let forged = format!("{}.{}", victim.uid, "f".repeat(64));
    for _ in 0..20 {
        assert_problem(
            &app.get("/api/v1/me", Some(&forged)).await,
            401,
            "unauthorized",
        );
    }
    crate::helpers::settle(&app).await;
    for _ in 0..5 {
        assert_eq!(
            app.get("/api/v1/me", Some(&victim.token)).await.0.as_u16(),
            200
        );
    }
    assert_problem(
        &app.get("/api/v1/me", Some(&victim.token)).await,
        429,
        "rate_limited",
    );
}

#[tokio::test]
async fn malformed_usernames_spend_the_address_budget_before_any_hash() {
    let app = spawn_app_with(limited(|l| l.logins_per_ip = Rate::new(2, 900))).await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        let hashes = password_hashes(&app);
        let (s, _) = app
            .post(
                "/api/v1/sessions",
                None,
                json!({"username": "!!", "password": "whatever-it-is"}),
            )
            .await;
        answers.push((s.as_u16(), password_hashes(&app) - hashes));
    }
    // Within the budget a malformed name costs the hash a wrong password
    // does (so it tells nothing); past it, 429 and no hash at all.
    assert_eq!(answers, [(401, 1), (401, 1), (429, 0)]);
}

#[tokio::test]
async fn every_forwarded_for_line_is_read() {
    let mut settings = limited(|l| l.signups_per_ip = Rate::new(2, 3600));
    settings.trusted_proxies = vec![IpBlock::parse("127.0.0.1").unwrap()];
    let app = spawn_app_with(settings).await;
    let mut statuses = Vec::new();
    for i in 0..3 {
        // The client forges a line; the proxy adds its own with the truth.
        let forged = format!("9.9.9.{i}");
        let (s, _, _) = app
            .call_with(
                Method::POST,
                "/api/v1/users",
                None,
                &[
                    ("x-forwarded-for", forged.as_str()),
                    ("x-forwarded-for", "1.2.3.4"),
                ],
                Some(json!({"username": format!("line{i}"), "password": "password-123"})),
            )
            .await;
        statuses.push(s.as_u16());
    }
    assert_eq!(statuses, [201, 201, 429]);
}

#[tokio::test]
async fn lookups_by_username_have_a_budget_of_their_own() {
    let app = spawn_app_with(limited(|l| l.user_lookups = Rate::new(2, 60))).await;
    let finder = app.user("seeker").await;
    app.user("sought").await;
    for (name, status) in [("sought", 200), ("nobody1", 404)] {
        let (s, body) = app
            .get(
                &format!("/api/v1/users?username={name}"),
                Some(&finder.token),
            )
            .await;
        assert_eq!(s.as_u16(), status, "{name}: {body}");
    }
    let over = app
        .call_with(
            Method::GET,
            "/api/v1/users?username=sought",
            Some(&finder.token),
            &[],
            None,
        )
        .await;
    assert_eq!(over.0.as_u16(), 429);
    assert!(over.1.contains_key("retry-after"));
    assert_eq!(over.2["code"], "rate_limited");
    // Other reads are not touched by it.
    let (s, _) = app.get("/api/v1/me", Some(&finder.token)).await;
    assert_eq!(s.as_u16(), 200);
}

/// Whether the store holds a failed sign-in counted for this name (a
/// look that counts nothing).
async fn failures_counted(app: &TestApp, username: &str) -> i64 {
    let look = moments::store::LiveRead {
        limits: vec![moments::store::LimitCheck {
            key: format!("login_failures:name:{username}"),
            cost: 0,
            window_ms: 900_000,
            lockout_at: None,
        }],
        ..Default::default()
    };
    app.ctx.live.read(&look).await.unwrap().limits[0].count
}

#[tokio::test]
async fn a_flood_of_made_up_names_locks_nobody_out() {
    // Counter tables of 20, filled many times over by sign-ins
    // for names nobody has, each from an address of its own.
    let mut settings = limited(|l| l.login_failures = Rate::new(3, 900));
    settings.live_max_counters = 20;
    settings.trusted_proxies = vec![IpBlock::parse("127.0.0.1").unwrap()];
    let app = spawn_app_with(settings).await;
    let reader = app.user("flood_reader").await;
    app.user("flood_victim").await;
    app.user("flood_locked").await;
    let sign_in = |name: String, password: &'static str, ip: String| {
        let app = &app;
        async move {
            app.call_with(
                Method::POST,
                "/api/v1/sessions",
                None,
                &[("x-forwarded-for", &ip)],
                Some(json!({"username": name, "password": password})),
            )
            .await
            .0
            .as_u16()
        }
    };
    // An account locked before the flood stays locked through it.
    for i in 0..4 {
        sign_in(
            "flood_locked".into(),
            "wrong-password",
            format!("10.9.0.{i}"),
        )
        .await;
    }
    for i in 0..80 {
        let status = sign_in(
            format!("nobody{i}"),
            "wrong-password",
            format!("10.{}.{}.1", i / 200, i % 200),
        )
        .await;
        assert_eq!(status, 401, "made-up name {i}");
    }
    for i in [0, 41, 79] {
        assert_eq!(
            failures_counted(&app, &format!("nobody{i}")).await,
            0,
            "no failure counter for a name nobody has"
        );
    }
    // Everyone else goes on: a signed-in read, a real account's sign-in
    // from a new address, an anonymous read.
    let (s, _) = app.get("/api/v1/feed", Some(&reader.token)).await;
    assert_eq!(s.as_u16(), 200);
    assert_eq!(
        sign_in("flood_victim".into(), "password-123", "10.250.0.1".into()).await,
        201
    );
    let path = format!("/api/v1/users/{}", reader.uid);
    assert_eq!(app.get(&path, None).await.0.as_u16(), 200);
    assert_eq!(
        sign_in("flood_locked".into(), "password-123", "10.251.0.1".into()).await,
        429,
        "the flood lifted a lockout"
    );
}

#[tokio::test]
async fn fresh_addresses_do_not_push_out_an_accounts_budget() {
    // Per-address counters are keyed by what a client controls; in a table
    // of 20, forty new addresses must not evict the account's own counter
    // and so hand it a fresh budget.
    let mut settings = limited(|l| l.writes = Rate::new(5, 60));
    settings.live_max_counters = 20;
    settings.trusted_proxies = vec![IpBlock::parse("127.0.0.1").unwrap()];
    let app = spawn_app_with(settings).await;
    let kim = app.user("kim_rotates").await;
    let write = |i: usize| {
        let app = &app;
        let token = kim.token.clone();
        async move {
            app.call_with(
                Method::POST,
                "/api/v1/posts",
                Some(&token),
                &[("x-forwarded-for", &format!("10.{}.{}.7", i / 200, i % 200))],
                Some(json!({"category": "TEXT", "content": format!("post {i}")})),
            )
            .await
            .0
            .as_u16()
        }
    };
    for i in 0..5 {
        assert_eq!(write(i).await, 201, "write {i} within the budget");
    }
    for i in 5..45 {
        assert_eq!(write(i).await, 429, "write {i} from a new address");
    }
    let (_, page) = app
        .get(
            &format!("/api/v1/users/{}/posts", kim.uid),
            Some(&kim.token),
        )
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 5);
}
