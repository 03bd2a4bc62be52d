//! The embedded default as a user runs it: the real binary, a data
//! directory, `kill -9`, and a restart. Every acknowledged write must be
//! there afterwards; a second process on the same directory must refuse.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::{account, call, free_port, wait_ready};

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::json;

fn start(dir: &Path, port: u16) -> Child {
    start_with(dir, port, &[])
}

fn start_with(dir: &Path, port: u16, env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_moments"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MOMENTS_DATA_DIR", dir)
        .env("MOMENTS_LISTEN", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start moments")
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9_and_a_second_process_is_refused() {
    let dir = std::env::temp_dir().join(format!("moments-durability-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let client = reqwest::Client::new();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let api = format!("{base}/api/v1");
    let mut first = start(&dir, port);
    wait_ready(&client, &base, &mut first).await;

    // A second process on the same directory refuses, saying why.
    let second = Command::new(env!("CARGO_BIN_EXE_moments"))
        .env_clear()
        .env("MOMENTS_DATA_DIR", &dir)
        .env("MOMENTS_LISTEN", format!("127.0.0.1:{}", free_port()))
        .output()
        .unwrap();
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("in use by another moments process"), "{err}");

    let post = reqwest::Method::POST;
    let (s, card) = call(
        &client,
        post.clone(),
        format!("{api}/users"),
        None,
        Some(json!({"username": "durable", "password": "password-123"})),
    )
    .await;
    assert_eq!(s, 201);
    let (_, session) = call(
        &client,
        post.clone(),
        format!("{api}/sessions"),
        None,
        Some(json!({"username": "durable", "password": "password-123"})),
    )
    .await;
    let token = session["token"].as_str().unwrap().to_string();
    let mut posts = Vec::new();
    for i in 0..5 {
        let (s, p) = call(
            &client,
            post.clone(),
            format!("{api}/posts"),
            Some(&token),
            Some(json!({"category": "TEXT", "content": format!("第{i}条 😀")})),
        )
        .await;
        assert_eq!(s, 201);
        posts.push(p["id"].as_i64().unwrap());
    }
    let (s, c) = call(
        &client,
        post.clone(),
        format!("{api}/posts/{}/comments", posts[0]),
        Some(&token),
        Some(json!({"content": "still here"})),
    )
    .await;
    assert_eq!(s, 201);
    let (s, _) = call(
        &client,
        reqwest::Method::PUT,
        format!("{api}/posts/{}/like", posts[0]),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = call(
        &client,
        reqwest::Method::DELETE,
        format!("{api}/posts/{}", posts[4]),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(s, 204);

    // No shutdown, no flush: SIGKILL right after the last acknowledgement.
    first.kill().unwrap();
    first.wait().unwrap();

    let mut again = start(&dir, port);
    wait_ready(&client, &base, &mut again).await;
    // The session was acknowledged too: the user is still signed in.
    let (s, me) = call(
        &client,
        reqwest::Method::GET,
        format!("{api}/me"),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["uid"], card["uid"]);
    let (_, page) = call(
        &client,
        reqwest::Method::GET,
        format!("{api}/users/{}/posts", card["uid"]),
        None,
        None,
    )
    .await;
    let ids: Vec<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![posts[3], posts[2], posts[1], posts[0]]);
    let (_, p) = call(
        &client,
        reqwest::Method::GET,
        format!("{api}/posts/{}", posts[0]),
        Some(&token),
        None,
    )
    .await;
    assert_eq!(p["likeCount"], 1);
    assert_eq!(p["likedByMe"], true);
    assert_eq!(p["comments"][0]["id"], c["id"]);
    again.kill().unwrap();
    again.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's promise for views: a crash loses at most the views
/// waiting in the process (`MOMENTS_VIEW_BUFFER`), a view that finds the
/// buffer full is not counted, a graceful stop writes every waiting view,
/// and a reader is counted once a day however often the process restarts.
#[tokio::test]
async fn a_crash_loses_at_most_the_views_waiting_to_be_written() {
    let dir = std::env::temp_dir().join(format!("moments-views-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let client = reqwest::Client::new();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let api = format!("{base}/api/v1");
    // Views wait an hour unless the process stops; at most 3 wait.
    let settings = [
        ("MOMENTS_VIEW_FLUSH_MS", "3600000"),
        ("MOMENTS_VIEW_BUFFER", "3"),
    ];
    let run = |dir: &Path| start_with(dir, port, &settings);
    let mut app = run(&dir);
    wait_ready(&client, &base, &mut app).await;
    let (_, author) = account(&client, &api, "viewed").await;
    let mut readers = Vec::new();
    for i in 0..7 {
        readers.push(account(&client, &api, &format!("reader{i}")).await.1);
    }
    let (s, p) = call(
        &client,
        reqwest::Method::POST,
        format!("{api}/posts"),
        Some(&author),
        Some(json!({"category": "TEXT", "content": "read me"})),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let post = format!("{api}/posts/{}", p["id"]);
    let read = |token: Option<String>| {
        let (client, post) = (client.clone(), post.clone());
        async move {
            let (s, p) = call(&client, reqwest::Method::GET, post, token.as_deref(), None).await;
            assert_eq!(s, 200, "{p}");
            p["viewCount"].as_u64().unwrap()
        }
    };
    let stop_gracefully = |app: &mut Child| {
        let killed = Command::new("kill")
            .args(["-TERM", &app.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        assert!(app.wait().unwrap().success(), "a graceful stop exits 0");
    };

    // Two readers, the author (never counted) and a graceful stop: both
    // views are written on the way out.
    read(Some(readers[0].clone())).await;
    read(Some(readers[1].clone())).await;
    read(Some(author.clone())).await;
    assert_eq!(read(None).await, 0, "nothing is written within the hour");
    stop_gracefully(&mut app);
    app = run(&dir);
    wait_ready(&client, &base, &mut app).await;
    assert_eq!(read(None).await, 2);

    // Five more readers: three views wait, two find the buffer full. Then
    // the process dies: it loses the three, as many as the buffer holds.
    for r in &readers[2..7] {
        read(Some(r.clone())).await;
    }
    app.kill().unwrap();
    app.wait().unwrap();
    app = run(&dir);
    wait_ready(&client, &base, &mut app).await;
    let after_crash = read(None).await;
    assert_eq!(
        after_crash, 2,
        "the crash lost the 3 waiting views, no more"
    );

    // Read again the same day: the lost views count now.
    for r in &readers[2..5] {
        read(Some(r.clone())).await;
    }
    stop_gracefully(&mut app);
    app = run(&dir);
    wait_ready(&client, &base, &mut app).await;
    assert_eq!(read(None).await, 5);
    // A reader already written is not counted twice the same day.
    read(Some(readers[0].clone())).await;
    stop_gracefully(&mut app);
    app = run(&dir);
    wait_ready(&client, &base, &mut app).await;
    assert_eq!(read(None).await, 5, "reader 0 once a day");
    app.kill().unwrap();
    app.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
