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

/// Photos through a `kill -9`, which lands wherever the uploads of four
/// accounts are: mostly receiving or processing, rarely mid-store (the
/// sweep test in tests/api/media.rs covers a record cut mid-store every
/// time). Every acknowledged upload is there after a restart, whole, and
/// postable; no record names bytes that are not stored; no stored bytes
/// are without a record; and the sweep deletes what cut uploads left.
#[tokio::test]
async fn photos_cut_by_kill_9_leave_no_bytes_nobody_knows_of() {
    use moments::store::MediaState;
    use std::collections::BTreeSet;
    use support::multipart;

    let dir = std::env::temp_dir().join(format!("moments-photos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let client = reqwest::Client::new();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let api = format!("{base}/api/v1");
    let mut app = start(&dir, port);
    wait_ready(&client, &base, &mut app).await;
    let mut accounts = Vec::new();
    for i in 0..4 {
        accounts.push(account(&client, &api, &format!("photographer{i}")).await);
    }
    // Large enough that processing and storing take a while: the kill
    // lands inside some upload's work, not only between requests.
    let photo = moments::service::media::samples::phone_jpeg(1600, 1200, 6).unwrap();
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (first_tx, mut first_rx) = tokio::sync::mpsc::channel::<()>(64);
    let mut uploaders = Vec::new();
    for (uid, token) in accounts.clone() {
        for _ in 0..4 {
            let (client, api, token) = (client.clone(), api.clone(), token.clone());
            let (photo, acknowledged, told) =
                (photo.clone(), acknowledged.clone(), first_tx.clone());
            uploaders.push(tokio::spawn(async move {
                loop {
                    let sent = client
                        .post(format!("{api}/media"))
                        .bearer_auth(&token)
                        .header("content-type", multipart::CONTENT_TYPE)
                        .body(multipart::jpeg(photo.clone()))
                        .send()
                        .await;
                    let Ok(resp) = sent else { return };
                    if resp.status().as_u16() != 201 {
                        // Busy (503, 429): a moment, as a client would.
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        continue;
                    }
                    let Ok(media) = resp.json::<serde_json::Value>().await else {
                        return;
                    };
                    acknowledged
                        .lock()
                        .unwrap()
                        .push((uid, token.clone(), media));
                    let _ = told.try_send(());
                }
            }));
        }
    }
    drop(first_tx);
    // Eight answers, then the kill, with up to sixteen uploads under way.
    for _ in 0..8 {
        first_rx.recv().await.unwrap();
    }
    app.kill().unwrap();
    app.wait().unwrap();
    for u in uploaders {
        u.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 8);

    // Restarted: every acknowledged upload is its owner's, served whole,
    // and a post takes it.
    let mut again = start(&dir, port);
    wait_ready(&client, &base, &mut again).await;
    for (_, token, media) in &acknowledged {
        let id = media["id"].as_i64().unwrap();
        let (s, got) = call(
            &client,
            reqwest::Method::GET,
            format!("{api}/media/{id}"),
            Some(token),
            None,
        )
        .await;
        assert_eq!(s, 200, "{got}");
        for url in [&media["url"], &media["previewUrl"]] {
            let bytes = client
                .get(format!("{base}{}", url.as_str().unwrap()))
                .send()
                .await
                .unwrap()
                .error_for_status()
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let image = image::load_from_memory(&bytes).expect("a whole picture");
            assert!(image.width() > 0);
        }
    }
    let (_, token, media) = &acknowledged[0];
    let (s, post) = call(
        &client,
        reqwest::Method::POST,
        format!("{api}/posts"),
        Some(token),
        Some(json!({"category": "PICTURE", "mediaIds": [media["id"]]})),
    )
    .await;
    assert_eq!(s, 201, "{post}");
    let stopped = Command::new("kill")
        .args(["-TERM", &again.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    assert!(again.wait().unwrap().success());

    // What the directory holds, read in-process.
    let settings = moments::config::Settings {
        listen: "127.0.0.1:0".into(),
        data_dir: dir.clone(),
        ..moments::config::Settings::default()
    };
    let (docs, live) = moments::startup::connect_stores(&settings).await.unwrap();
    let records = |docs: std::sync::Arc<dyn moments::store::DocStore>| {
        let accounts = accounts.clone();
        async move {
            let mut all = Vec::new();
            for (uid, _) in &accounts {
                all.extend(docs.media_of(*uid, None, 1000).await.unwrap());
            }
            all
        }
    };
    let stored = |dir: &Path| -> BTreeSet<String> {
        let root = dir.join("media");
        let mut found = BTreeSet::new();
        let mut folders = vec![root.clone()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    let name = path.strip_prefix(&root).unwrap();
                    found.insert(name.to_string_lossy().into_owned());
                }
            }
        }
        found
    };
    let before = records(docs.clone()).await;
    let acked: BTreeSet<i64> = acknowledged
        .iter()
        .map(|(_, _, m)| m["id"].as_i64().unwrap())
        .collect();
    let mut named = BTreeSet::new();
    for r in &before {
        assert!(
            r.state != MediaState::Storing || !acked.contains(&r.id),
            "an acknowledged upload is stored"
        );
        named.extend(r.media.objects());
        if r.state == MediaState::Storing {
            // A write the kill cut short is written aside.
            named.extend(r.media.objects().map(|o| format!("{o}.writing")));
        }
    }
    let on_disk = stored(&dir);
    let unnamed: Vec<&String> = on_disk.difference(&named).collect();
    assert!(unnamed.is_empty(), "bytes no record names: {unnamed:?}");
    for r in before.iter().filter(|r| r.state != MediaState::Storing) {
        for object in r.media.objects() {
            assert!(
                on_disk.contains(&object),
                "{object} of {:?} is missing",
                r.state
            );
        }
    }

    // The sweep, a day later for the cut uploads: their records and
    // whatever bytes they stored are gone; everything else stays.
    let cut: Vec<&moments::store::MediaDoc> = before
        .iter()
        .filter(|r| r.state == MediaState::Storing)
        .collect();
    let long_ago = moments::ids::now_ms() - 25 * moments::ids::HOUR_MS;
    for r in &cut {
        docs.move_media(
            r.uid,
            &[r.id],
            MediaState::Storing,
            MediaState::Storing,
            long_ago,
        )
        .await
        .unwrap();
    }
    let app = moments::startup::Application::build_on(settings, docs.clone(), live)
        .await
        .unwrap();
    moments::service::media::sweeps::sweep_once(app.context())
        .await
        .unwrap();
    let after = records(docs.clone()).await;
    let kept: BTreeSet<i64> = before
        .iter()
        .filter(|r| r.state != MediaState::Storing)
        .map(|r| r.id)
        .collect();
    assert_eq!(after.iter().map(|r| r.id).collect::<BTreeSet<_>>(), kept);
    let named: BTreeSet<String> = after.iter().flat_map(|r| r.media.objects()).collect();
    assert_eq!(stored(&dir), named, "exactly the bytes of the records kept");
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}
