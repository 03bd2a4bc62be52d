//! Seeding helpers shared by the benchmark examples (each example includes
//! this file with `#[path]`, so it is not an example of its own).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use moments::config::Settings;
use moments::ids::{next_id, now_ms, timestamp_of};
use moments::startup::Application;
use moments::store::{FollowDoc, PostDoc, UserDoc};

pub fn user(uid: i64) -> UserDoc {
    UserDoc {
        nick_name: format!("用户{uid}"),
        ..UserDoc::new(uid, format!("u{uid}"), String::new(), now_ms())
    }
}

pub fn post(author: i64) -> PostDoc {
    let id = next_id();
    PostDoc::text(id, author, "一条动态", timestamp_of(id))
}

pub async fn follow(app: &Application, follower: i64, followee: i64) {
    app.context()
        .docs
        .insert_follow(&FollowDoc::new(next_id(), follower, followee))
        .await
        .unwrap();
}

pub fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The p-th percentile (0 to 100) of these durations, in ms.
pub fn percentile(sorted: &[std::time::Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p / 100.0).round() as usize;
    ms(sorted[i])
}

/// Settings for an in-process bench: the environment's, with documents on
/// the embedded store in a temp dir of its own (returned, to remove after),
/// a Redis prefix of its own, no admin; and what the live state runs on.
pub fn bench_settings(tag: &str) -> (Settings, std::path::PathBuf, &'static str) {
    let dir = std::env::temp_dir().join(format!("moments-{tag}-{}", std::process::id()));
    let mut settings = Settings::from_env().unwrap();
    settings.listen = "127.0.0.1:0".into();
    settings.mongodb_uri = None;
    settings.data_dir = dir.clone();
    settings.redis_prefix = format!("{tag}{}:", std::process::id());
    settings.admin = None;
    let backend = if settings.redis_url.is_some() {
        "Redis"
    } else {
        "in-process"
    };
    (settings, dir, backend)
}

/// Signs up `name` over HTTP and signs it in: its uid and bearer token.
pub async fn account(client: &reqwest::Client, base: &str, name: &str) -> (i64, String) {
    let card: serde_json::Value = client
        .post(format!("{base}/api/v1/users"))
        .json(
            &serde_json::json!({"username": name, "password": "password-123", "nickName": "bench"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session: serde_json::Value = client
        .post(format!("{base}/api/v1/sessions"))
        .json(&serde_json::json!({"username": name, "password": "password-123"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        card["uid"].as_i64().unwrap(),
        session["token"].as_str().unwrap().to_string(),
    )
}
