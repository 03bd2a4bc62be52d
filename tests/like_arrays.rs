//! A like storm's deferred array writes survive the process (README, "A
//! like storm"): on MongoDB with Redis a like leaves its post's
//! likes_postid to a batched applier fed by a Redis stream; `kill -9` with
//! likes queued and unapplied, and a restart applies them. The real binary,
//! on the stores scripts/test.sh starts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::{account, call, free_port, wait_ready};

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};
use serde_json::json;

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test.sh, which starts redis-server and nx-27017")
    })
}

fn start(port: u16, db: &str, flush_ms: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_moments"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MOMENTS_MONGODB_URI", env("MOMENTS_TEST_MONGODB_URI"))
        .env("MOMENTS_MONGODB_DB", db)
        .env("MOMENTS_REDIS_URL", env("MOMENTS_TEST_REDIS_URL"))
        .env("MOMENTS_REDIS_PREFIX", format!("{db}:"))
        .env("MOMENTS_LISTEN", format!("127.0.0.1:{port}"))
        .env("MOMENTS_RATE_LIMITS", "off")
        .env("MOMENTS_LIKE_ARRAY_FLUSH_MS", flush_ms)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        // Warnings only, and shown: a start that fails says why.
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start moments")
}

/// The post document's likes_postid, read straight from MongoDB.
async fn stored_array(db: &mongodb::Database, post: i64) -> Vec<i64> {
    let found = db
        .collection::<Document>("posts")
        .find_one(doc! { "_id": post })
        .await
        .unwrap()
        .expect("the post document");
    found
        .get_array("likes_postid")
        .map(|a| {
            a.iter()
                .filter_map(|v| match v {
                    Bson::Int64(i) => Some(*i),
                    Bson::Int32(i) => Some(i64::from(*i)),
                    Bson::Double(d) => Some(*d as i64),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn likes_queued_for_their_array_survive_kill_9() {
    let db_name = format!("likearrays{}", moments::ids::next_id());
    let mongo = mongodb::Client::with_uri_str(env("MOMENTS_TEST_MONGODB_URI"))
        .await
        .unwrap()
        .database(&db_name);
    let client = reqwest::Client::new();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let api = format!("{base}/api/v1");
    // The applier runs at start, then not for an hour: likes stay queued.
    let mut app = start(port, &db_name, "3600000");
    wait_ready(&client, &base, &mut app).await;
    let (_, author) = account(&client, &api, "arrayauthor").await;
    let mut fans = Vec::new();
    for i in 0..4 {
        fans.push(account(&client, &api, &format!("arrayfan{i}")).await.1);
    }
    let (s, p) = call(
        &client,
        reqwest::Method::POST,
        format!("{api}/posts"),
        Some(&author),
        Some(json!({"category": "TEXT", "content": "storm"})),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let post = p["id"].as_i64().unwrap();
    for fan in &fans {
        let (s, r) = call(
            &client,
            reqwest::Method::PUT,
            format!("{api}/posts/{post}/like"),
            Some(fan),
            None,
        )
        .await;
        assert_eq!(s, 200, "{r}");
    }
    let (_, likes) = call(
        &client,
        reqwest::Method::GET,
        format!("{api}/posts/{post}/likes"),
        None,
        None,
    )
    .await;
    let mut want: Vec<i64> = likes["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect();
    want.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(want.len(), 4, "every like acknowledged stands");
    assert!(
        stored_array(&mongo, post).await.is_empty(),
        "the array waits for the applier"
    );

    app.kill().unwrap();
    app.wait().unwrap();
    // A fresh port: the killed process's may not be free again yet.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut app = start(port, &db_name, "50");
    wait_ready(&client, &base, &mut app).await;
    let mut array = Vec::new();
    for _ in 0..200 {
        array = stored_array(&mongo, post).await;
        if array == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        array, want,
        "the queued refresh was applied after the restart"
    );
    app.kill().unwrap();
    app.wait().unwrap();
    let _ = mongo.drop().await;
}
