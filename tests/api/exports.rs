//! Data exports: an archive holds exactly what the API shows its owner and
//! nothing private of anyone else's; one runs at a time and one a day; a
//! download resumes by range from the stored chunks, within the address's
//! read budget and a cap of downloads at once; the archive is streamed to
//! the store, never held whole; deleting the account deletes its archives.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{
    assert_problem, every_item, follow, ids, spawn_app, spawn_app_with, test_settings, wait_until,
    TestApp, User,
};

async fn friends(app: &TestApp, a: &User, b: &User) {
    follow(app, a, b).await;
    follow(app, b, a).await;
}

/// Starts an export and waits for it to end; the export as it ended.
pub(crate) async fn export(app: &TestApp, who: &User) -> Value {
    let (s, started) = app
        .post("/api/v1/me/exports", Some(&who.token), json!({}))
        .await;
    assert_eq!(s.as_u16(), 202, "{started}");
    assert_eq!(started["state"], "queued");
    let id = started["id"].as_i64().unwrap();
    let path = format!("/api/v1/me/exports/{id}");
    wait_until("the export ends", || async {
        let e = app.get(&path, Some(&who.token)).await.1;
        e["state"] == "ready" || e["state"] == "failed"
    })
    .await;
    let (s, e) = app.get(&path, Some(&who.token)).await;
    assert_eq!(s.as_u16(), 200, "{e}");
    e
}

/// Downloads the whole archive with the owner's token.
pub(crate) async fn download(app: &TestApp, who: &User, export: &Value) -> Vec<u8> {
    let url = format!("{}/api/v1/me/exports/{}/download", app.base, export["id"]);
    let resp = app
        .client
        .get(url)
        .bearer_auth(&who.token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "application/zip");
    let bytes = resp.bytes().await.unwrap().to_vec();
    assert_eq!(bytes.len() as i64, export["size"].as_i64().unwrap());
    bytes
}

/// The archive's files by name, inflated.
pub(crate) fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let archive = rawzip::ZipArchive::from_slice(bytes).expect("a zip");
    let mut files = BTreeMap::new();
    for entry in archive.entries() {
        let entry = entry.expect("an entry");
        let name = entry
            .file_path()
            .try_normalize()
            .unwrap()
            .as_ref()
            .to_string();
        let wayfinder = entry.wayfinder();
        let found = archive.get_entry(wayfinder).unwrap();
        let mut inflated = Vec::new();
        flate2::read::DeflateDecoder::new(found.data())
            .read_to_end(&mut inflated)
            .unwrap();
        let verifier = found.verifying_reader(std::io::Cursor::new(&inflated));
        let mut checked = Vec::new();
        std::io::copy(&mut { verifier }, &mut checked).expect("the CRC and size agree");
        files.insert(name, inflated);
    }
    files
}

fn json_of(files: &BTreeMap<String, Vec<u8>>, name: &str) -> Value {
    serde_json::from_slice(files.get(name).unwrap_or_else(|| panic!("no {name}")))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// (uid, username) of each row of one of the CSVs of people.
fn csv_people(files: &BTreeMap<String, Vec<u8>>, name: &str) -> BTreeSet<(i64, String)> {
    let text = String::from_utf8(files[name].clone()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("Account address,uid,since"), "{name}");
    lines
        .map(|l| {
            let cols: Vec<&str> = l.split(',').collect();
            (cols[1].parse().unwrap(), cols[0].to_string())
        })
        .collect()
}

/// `n` letters that do not compress much.
fn letters(seed: &mut u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            char::from(b'a' + ((*seed >> 59) as u8 % 26))
        })
        .collect()
}

fn uids_of(items: &[Value]) -> BTreeSet<i64> {
    items.iter().map(|u| u["uid"].as_i64().unwrap()).collect()
}

#[tokio::test]
async fn an_archive_holds_what_the_api_shows_its_owner_and_nothing_private_of_others() {
    let app = spawn_app().await;
    let me = app.user("exporter").await;
    let friend = app.user("exfriend").await;
    let other = app.user("exother").await;
    let pest = app.user("expest").await;
    friends(&app, &me, &friend).await;
    follow(&app, &me, &other).await;
    // What is the others' own: none of it may be in my archive.
    let (s, _) = app
        .call(
            Method::PATCH,
            "/api/v1/me",
            Some(&friend.token),
            Some(json!({"nickName": "FRIEND-NICKNAME-SECRET"})),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    let friends_post = app
        .post(
            "/api/v1/posts",
            Some(&friend.token),
            json!({"category": "TEXT", "content": "FRIEND-PRIVATE-POST", "visibility": "friends"}),
        )
        .await
        .1["id"]
        .as_i64()
        .unwrap();
    // Mine.
    let (s, label) = app
        .post(
            "/api/v1/labels",
            Some(&me.token),
            json!({"name": "家人", "members": [friend.uid]}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{label}");
    let label_id = label["id"].as_i64().unwrap();
    let plain = app.text_post(&me, "my first post").await;
    let (s, pictured) = app
        .post(
            "/api/v1/posts",
            Some(&me.token),
            json!({"category": "PICTURE", "content": "at the lake",
                   "pictureUrls": ["https://img.example/1.jpg", "https://img.example/2.jpg"],
                   "geo": {"lat": 30.25, "lon": 120.15, "name": "西湖"},
                   "device": "ONEPLUS A6000"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{pictured}");
    let pictured = pictured["id"].as_i64().unwrap();
    let (s, only) = app
        .post(
            "/api/v1/posts",
            Some(&me.token),
            json!({"category": "TEXT", "content": "for family", "visibility": "only",
                   "audience": {"labels": [label_id], "uids": [friend.uid]}}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{only}");
    let only = only["id"].as_i64().unwrap();
    // Others' words on my post, and mine on theirs.
    let theirs = app
        .comment(&friend, plain, "FRIEND-COMMENT-SECRET", None)
        .await;
    let my_reply = app
        .comment(&me, plain, "my reply", Some(theirs["id"].as_i64().unwrap()))
        .await;
    let my_comment = app.comment(&me, friends_post, "nice one", None).await;
    assert_eq!(
        app.put(
            &format!("/api/v1/posts/{friends_post}/like"),
            Some(&me.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    assert_eq!(
        app.put(&format!("/api/v1/posts/{plain}/like"), Some(&friend.token))
            .await
            .0
            .as_u16(),
        200
    );
    assert_eq!(
        app.put(
            &format!("/api/v1/posts/{friends_post}/favorite"),
            Some(&me.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    let (s, _) = app
        .post(
            &format!("/api/v1/posts/{friends_post}/shares"),
            Some(&me.token),
            json!({"platform": "wechat"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201);
    assert_eq!(
        app.get(&format!("/api/v1/posts/{friends_post}"), Some(&me.token))
            .await
            .0
            .as_u16(),
        200
    );
    app.ctx.post_views.flush(&app.ctx).await.unwrap();
    assert_eq!(
        app.put(
            &format!("/api/v1/users/{}/block", pest.uid),
            Some(&me.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    assert_eq!(
        app.put(
            &format!("/api/v1/users/{}/mute", other.uid),
            Some(&me.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    assert_eq!(
        app.put(
            &format!("/api/v1/users/{}/hide", friend.uid),
            Some(&me.token)
        )
        .await
        .0
        .as_u16(),
        200
    );
    let (s, report) = app
        .post(
            "/api/v1/reports",
            Some(&me.token),
            json!({"targetType": "user", "targetId": pest.uid, "category": "spam", "comment": "my words"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{report}");

    let done = export(&app, &me).await;
    assert_eq!(done["state"], "ready", "{done}");
    assert!(done["progress"]["done"].as_i64().unwrap() > 0, "{done}");
    assert_eq!(
        done["progress"]["done"], done["progress"]["known"],
        "{done}"
    );
    let bytes = download(&app, &me, &done).await;
    let files = unzip(&bytes);
    // No picture was uploaded here: nothing in media/.
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    let mut want: Vec<&str> = moments::service::exports::archive::FILES.to_vec();
    want.sort_unstable();
    assert_eq!(names, want);

    // File by file, what the API shows me.
    let (_, profile) = app.get("/api/v1/me", Some(&me.token)).await;
    assert_eq!(json_of(&files, "profile.json"), profile);

    let album = every_item(
        &app,
        &format!("/api/v1/users/{}/posts", me.uid),
        Some(&me.token),
        2,
    )
    .await;
    let archived = json_of(&files, "posts.json");
    let archived = archived.as_array().unwrap();
    assert_eq!(ids(archived), ids(&album));
    assert_eq!(ids(archived), vec![only, pictured, plain]);
    for (a, shown) in archived.iter().zip(&album) {
        for (field, api) in [
            ("likeCount", "likeCount"),
            ("commentCount", "commentCount"),
            ("shareCount", "shareCount"),
            ("content", "content"),
            ("pictureUrls", "pictureUrls"),
            ("visibility", "visibility"),
            ("category", "category"),
            ("createdAt", "createtime"),
        ] {
            assert_eq!(a[field], shown[api], "{field} of {}", a["id"]);
        }
        assert_eq!(a["place"], shown["geo"]);
        assert_eq!(a["device"]["model"], shown["deviceModel"]);
        assert_eq!(a["device"]["name"], shown["device"]);
    }
    let only_archived = &archived[0];
    assert_eq!(
        only_archived["audience"],
        json!({"labels": [{"id": label_id, "name": "家人"}],
               "users": [{"uid": friend.uid, "username": "exfriend"}]})
    );
    assert_eq!(archived[2]["likeCount"], 1);
    assert_eq!(archived[2]["commentCount"], 2);

    let comments = json_of(&files, "comments.json");
    let comments = comments.as_array().unwrap();
    assert_eq!(ids(comments), ids(&[my_comment.clone(), my_reply.clone()]));
    assert_eq!(comments[0]["postId"], friends_post);
    assert_eq!(
        comments[0]["postAuthor"],
        json!({"uid": friend.uid, "username": "exfriend"})
    );
    assert_eq!(comments[1]["replyTo"]["commentId"], theirs["id"]);
    assert_eq!(
        comments[1]["replyTo"]["author"],
        json!({"uid": friend.uid, "username": "exfriend"})
    );

    let liked = every_item(&app, "/api/v1/me/likes", Some(&me.token), 10).await;
    let likes = json_of(&files, "likes.json");
    let liked_posts: Vec<i64> = likes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["postId"].as_i64())
        .collect();
    assert_eq!(liked_posts, ids(&liked));
    let favorites = every_item(&app, "/api/v1/me/favorites", Some(&me.token), 10).await;
    let kept: Vec<i64> = json_of(&files, "favorites.json")
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["postId"].as_i64().unwrap())
        .collect();
    assert_eq!(kept, ids(&favorites));
    let shares = json_of(&files, "shares.json");
    assert_eq!(shares.as_array().unwrap().len(), 1);
    assert_eq!(shares[0]["postId"], friends_post);
    assert_eq!(shares[0]["platform"], "wechat");
    let history = every_item(&app, "/api/v1/me/history", Some(&me.token), 10).await;
    let viewed: Vec<i64> = json_of(&files, "history.json")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["postId"].as_i64().unwrap())
        .collect();
    assert_eq!(viewed, ids(&history));
    assert_eq!(viewed, vec![friends_post]);

    let following = every_item(
        &app,
        &format!("/api/v1/users/{}/following", me.uid),
        Some(&me.token),
        10,
    )
    .await;
    let archived_following = csv_people(&files, "following.csv");
    assert_eq!(
        archived_following
            .iter()
            .map(|(u, _)| *u)
            .collect::<BTreeSet<_>>(),
        uids_of(&following)
    );
    assert!(archived_following.contains(&(other.uid, "exother".to_string())));
    assert_eq!(
        csv_people(&files, "blocks.csv"),
        BTreeSet::from([(pest.uid, "expest".to_string())])
    );
    let muted = every_item(&app, "/api/v1/me/muted", Some(&me.token), 10).await;
    assert_eq!(
        csv_people(&files, "mutes.csv")
            .iter()
            .map(|(u, _)| *u)
            .collect::<BTreeSet<_>>(),
        uids_of(&muted)
    );
    let hidden = every_item(&app, "/api/v1/me/hidden", Some(&me.token), 10).await;
    assert_eq!(
        csv_people(&files, "hidden.csv")
            .iter()
            .map(|(u, _)| *u)
            .collect::<BTreeSet<_>>(),
        uids_of(&hidden)
    );
    assert_eq!(uids_of(&hidden), BTreeSet::from([friend.uid]));

    let (_, labels) = app.get("/api/v1/labels", Some(&me.token)).await;
    let archived_labels = json_of(&files, "labels.json");
    assert_eq!(
        ids(archived_labels.as_array().unwrap()),
        ids(labels["items"].as_array().unwrap())
    );
    assert_eq!(archived_labels[0]["name"], "家人");
    assert_eq!(
        archived_labels[0]["members"],
        json!([{"uid": friend.uid, "username": "exfriend"}])
    );

    let (_, sessions) = app.get("/api/v1/sessions", Some(&me.token)).await;
    let archived_sessions = json_of(&files, "sessions.json");
    assert_eq!(
        ids(archived_sessions.as_array().unwrap()),
        ids(sessions["items"].as_array().unwrap())
    );

    let reports = every_item(&app, "/api/v1/me/reports", Some(&me.token), 10).await;
    let archived_reports = json_of(&files, "reports.json");
    assert_eq!(ids(archived_reports.as_array().unwrap()), ids(&reports));

    // Nothing anyone else wrote or chose, and no secret of mine.
    for (name, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        for secret in [
            "FRIEND-NICKNAME-SECRET",
            "FRIEND-PRIVATE-POST",
            "FRIEND-COMMENT-SECRET",
            "exfriend昵称",
            "tokenHash",
            "passwordHash",
            &me.token,
        ] {
            assert!(!text.contains(secret), "{name} holds {secret}");
        }
    }
    // The album page is the posts, as a script beside it.
    let album_js = String::from_utf8(files["album.js"].clone()).unwrap();
    assert!(album_js.contains("window.momentsArchive"));
    assert!(album_js.contains("at the lake"));
}

#[tokio::test]
async fn one_export_runs_at_a_time_and_one_a_day_and_a_failed_one_frees_the_account() {
    let mut settings = test_settings();
    // Slow enough that the first is still running when the second asks.
    settings.exports.batch = 1;
    settings.exports.pause_ms = 200;
    let app = spawn_app_with(settings).await;
    let me = app.user("exlimits").await;
    for i in 0..5 {
        app.text_post(&me, &format!("post {i}")).await;
    }
    let (s, first) = app
        .post("/api/v1/me/exports", Some(&me.token), json!({}))
        .await;
    assert_eq!(s.as_u16(), 202, "{first}");
    let again = app
        .post("/api/v1/me/exports", Some(&me.token), json!({}))
        .await;
    assert_problem(&again, 409, "conflict");
    let id = first["id"].as_i64().unwrap();
    wait_until("the first export is ready", || async {
        app.get(&format!("/api/v1/me/exports/{id}"), Some(&me.token))
            .await
            .1["state"]
            == "ready"
    })
    .await;
    let (s, headers, body) = app
        .call_with(
            Method::POST,
            "/api/v1/me/exports",
            Some(&me.token),
            &[],
            Some(json!({})),
        )
        .await;
    assert_eq!(s.as_u16(), 429, "{body}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((86_000..=86_400).contains(&retry), "Retry-After {retry}");
    let (_, listed) = app.get("/api/v1/me/exports", Some(&me.token)).await;
    assert_eq!(ids(listed["items"].as_array().unwrap()), vec![id]);

    // An archive bigger than the limit fails, says why, and does not count.
    let mut settings = test_settings();
    settings.exports.max_bytes = 4000;
    let app = spawn_app_with(settings).await;
    let me = app.user("exfails").await;
    let failed = export(&app, &me).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed["error"].as_str().unwrap().contains("4000 bytes"),
        "{failed}"
    );
    assert!(failed["download"].is_null());
    let id = failed["id"].as_i64().unwrap();
    assert_problem(
        &app.get(
            &format!("/api/v1/me/exports/{id}/download"),
            Some(&me.token),
        )
        .await,
        409,
        "conflict",
    );
    // A failure frees the account; three in a day hold it.
    for _ in 0..2 {
        let again = export(&app, &me).await;
        assert_eq!(again["state"], "failed", "{again}");
    }
    let (s, headers, body) = app
        .call_with(
            Method::POST,
            "/api/v1/me/exports",
            Some(&me.token),
            &[],
            Some(json!({})),
        )
        .await;
    assert_eq!(s.as_u16(), 429, "{body}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((86_000..=86_400).contains(&retry), "Retry-After {retry}");
    // Nobody reads another's exports.
    let stranger = app.user("exstranger").await;
    assert_problem(
        &app.get(&format!("/api/v1/me/exports/{id}"), Some(&stranger.token))
            .await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn a_download_resumes_by_range_from_any_chunk_and_a_link_opens_it_without_a_token() {
    let mut settings = test_settings();
    settings.exports.chunk_bytes = 4096;
    let app = spawn_app_with(settings).await;
    let me = app.user("exranges").await;
    let mut seed = 7u64;
    for i in 0..40 {
        app.text_post(&me, &format!("post {i}: {}", letters(&mut seed, 300)))
            .await;
    }
    let done = export(&app, &me).await;
    assert_eq!(done["state"], "ready", "{done}");
    let whole = download(&app, &me, &done).await;
    let size = whole.len();
    assert!(size > 3 * 4096, "the archive spans chunks: {size}");
    let path = format!("/api/v1/me/exports/{}/download", done["id"]);
    let resp = app
        .client
        .get(format!("{}{path}", app.base))
        .bearer_auth(&me.token)
        .send()
        .await
        .unwrap();
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(resp.headers()["accept-ranges"], "bytes");
    assert_eq!(
        resp.headers()["content-length"].to_str().unwrap(),
        size.to_string()
    );
    // The ETag is the archive's SHA-256.
    use sha2::Digest;
    let sha: String = sha2::Sha256::digest(&whole)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(etag, format!("\"{sha}\""));

    let ranged = |range: String, if_range: Option<String>| {
        let mut req = app
            .client
            .get(format!("{}{path}", app.base))
            .bearer_auth(&me.token)
            .header("Range", range);
        if let Some(v) = if_range {
            req = req.header("If-Range", v);
        }
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let range = resp
                .headers()
                .get("content-range")
                .map(|v| v.to_str().unwrap().to_string());
            (status, range, resp.bytes().await.unwrap().to_vec())
        }
    };
    // Across a chunk's end, from the middle, the tail.
    for (start, end) in [(100, 5000), (4095, 4097), (0, 0), (size - 1, size - 1)] {
        let (s, range, body) = ranged(format!("bytes={start}-{end}"), None).await;
        assert_eq!(s, 206);
        assert_eq!(range.unwrap(), format!("bytes {start}-{end}/{size}"));
        assert_eq!(body, whole[start..=end]);
    }
    let (s, _, body) = ranged("bytes=8000-".into(), Some(etag.clone())).await;
    assert_eq!(s, 206);
    assert_eq!(body, whole[8000..]);
    let (s, _, body) = ranged("bytes=-10".into(), None).await;
    assert_eq!(s, 206);
    assert_eq!(body, whole[size - 10..]);
    // Another archive's ETag: the whole one.
    let (s, _, body) = ranged("bytes=8000-".into(), Some("\"another\"".into())).await;
    assert_eq!((s, body.len()), (200, size));
    let (s, range, _) = ranged(format!("bytes={size}-"), None).await;
    assert_eq!(s, 416);
    assert_eq!(range.unwrap(), format!("bytes */{size}"));

    // A link opens it without a token, until another link replaces it.
    let (s, link) = app
        .post(
            &format!("/api/v1/me/exports/{}/link", done["id"]),
            Some(&me.token),
            json!({}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{link}");
    let url = format!("{}{}", app.base, link["url"].as_str().unwrap());
    let resp = app
        .client
        .get(&url)
        .header("Range", "bytes=10-19")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 206);
    assert_eq!(resp.bytes().await.unwrap().to_vec(), whole[10..20]);
    let (s, _) = app
        .post(
            &format!("/api/v1/me/exports/{}/link", done["id"]),
            Some(&me.token),
            json!({}),
        )
        .await;
    assert_eq!(s.as_u16(), 201);
    let resp = app.client.get(&url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401, "a replaced link opens nothing");
    // Signing out everywhere ends the links too.
    let (s, link) = app
        .post(
            &format!("/api/v1/me/exports/{}/link", done["id"]),
            Some(&me.token),
            json!({}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{link}");
    let url = format!("{}{}", app.base, link["url"].as_str().unwrap());
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status().as_u16(),
        200
    );
    assert_eq!(
        app.delete("/api/v1/sessions", Some(&me.token))
            .await
            .0
            .as_u16(),
        204
    );
    assert_eq!(
        app.client.get(&url).send().await.unwrap().status().as_u16(),
        401,
        "a link outlives no sign-out"
    );
    let me = User {
        uid: me.uid,
        token: app.login("exranges", "password-123").await,
    };
    let stranger = app.user("exrangestranger").await;
    assert_problem(
        &app.get(&path, Some(&stranger.token)).await,
        404,
        "not_found",
    );
    assert_problem(&app.get(&path, None).await, 401, "unauthorized");
    assert_eq!(app.get(&path, Some(&me.token)).await.0.as_u16(), 200);
    let forged = format!("{}{path}?key={}-{}", app.base, me.uid, "ab".repeat(24));
    assert_eq!(
        app.client
            .get(forged)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        401
    );
}

#[tokio::test]
async fn an_archive_is_streamed_to_the_store_never_held_whole() {
    let mut settings = test_settings();
    // About seventy chunks for an archive of a megabyte: many, yet few
    // enough writes that a loaded FerretDB ends it well inside the wait
    // (4 KiB chunks took 11 s there on an idle machine).
    settings.exports.chunk_bytes = 16 * 1024;
    settings.exports.batch = 50;
    let app = spawn_app_with(settings).await;
    let me = app.user("exstreams").await;
    // Posts of text that does not compress, written straight to the
    // documents: many, quickly.
    let mut seed = me.uid as u64;
    let now = moments::ids::now_ms();
    for i in 0..600 {
        let text = letters(&mut seed, 1500);
        let id = moments::ids::first_id_at(now - 1_000_000 + i * 1000) + i;
        app.ctx
            .docs
            .insert_post(&moments::store::PostDoc::text(
                id,
                me.uid,
                text,
                now - 1_000_000 + i * 1000,
            ))
            .await
            .unwrap();
    }
    let done = export(&app, &me).await;
    assert_eq!(done["state"], "ready", "{done}");
    let size = done["size"].as_u64().unwrap();
    let peak = app.ctx.exports.peak_buffered() as u64;
    assert!(size > 1_000_000, "an archive of {size} bytes");
    assert!(
        peak < 128 * 1024,
        "{peak} bytes held at once, for an archive of {size}"
    );
    // The bytes alone would not tell a writer that read every post first
    // and deflated them one by one: the records held are counted too.
    let held = app.ctx.exports.peak_records_held();
    assert!(
        (1..=50).contains(&held),
        "{held} records held at once, of 600 posts read 50 at a time"
    );
    let files = unzip(&download(&app, &me, &done).await);
    assert_eq!(json_of(&files, "posts.json").as_array().unwrap().len(), 600);
}

#[tokio::test]
async fn deleting_the_account_deletes_its_archives() {
    let app = spawn_app().await;
    let me = app.user("exgone").await;
    app.text_post(&me, "soon gone").await;
    let done = export(&app, &me).await;
    assert_eq!(done["state"], "ready", "{done}");
    let id = done["id"].as_i64().unwrap();
    let stored = app
        .ctx
        .docs
        .export_by_id(me.uid, id)
        .await
        .unwrap()
        .unwrap();
    assert!(app
        .ctx
        .docs
        .export_chunk(id, stored.attempt, 0)
        .await
        .unwrap()
        .is_some());
    // An import of the account's goes with it too.
    app.user("exgonemuted").await;
    let (s, import) = app
        .post(
            "/api/v1/me/imports",
            Some(&me.token),
            json!({"kind": "mutes", "mode": "merge", "csv": "exgonemuted\n"}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{import}");
    assert_eq!(app.ctx.docs.imports_of(me.uid, 10).await.unwrap().len(), 1);
    let (s, body) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&me.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert_eq!(s.as_u16(), 204, "{body}");
    wait_until("the archive is deleted with the account", || async {
        app.ctx
            .docs
            .exports_of(me.uid, 10)
            .await
            .unwrap()
            .is_empty()
            && app
                .ctx
                .docs
                .imports_of(me.uid, 10)
                .await
                .unwrap()
                .is_empty()
            && app
                .ctx
                .docs
                .export_chunk(id, stored.attempt, 0)
                .await
                .unwrap()
                .is_none()
    })
    .await;
}

/// Starts an export and waits for it to be ready, reading the documents
/// rather than the API: the tests of the read budget keep every read of
/// the API for what they count.
async fn ready_export(app: &TestApp, who: &User) -> i64 {
    let (s, started) = app
        .post("/api/v1/me/exports", Some(&who.token), json!({}))
        .await;
    assert_eq!(s.as_u16(), 202, "{started}");
    let id = started["id"].as_i64().unwrap();
    wait_until("the export is ready", || async {
        app.ctx
            .docs
            .export_by_id(who.uid, id)
            .await
            .unwrap()
            .is_some_and(|e| e.state == moments::store::ExportState::Ready)
    })
    .await;
    id
}

/// A fresh download link's URL.
async fn link_of(app: &TestApp, who: &User, id: i64) -> String {
    let (s, link) = app
        .post(
            &format!("/api/v1/me/exports/{id}/link"),
            Some(&who.token),
            json!({}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{link}");
    link["url"].as_str().unwrap().to_string()
}

/// The status of a GET of `path` from the client address `from` (the app
/// trusts 127.0.0.1 as a proxy), with its `Retry-After`.
async fn get_from(app: &TestApp, path: &str, from: &str) -> (u16, Option<String>) {
    let (s, headers, _) = app
        .call_with(Method::GET, path, None, &[("X-Forwarded-For", from)], None)
        .await;
    let retry = headers
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (s.as_u16(), retry)
}

#[tokio::test]
async fn a_download_link_is_charged_to_its_address_before_its_key_is_read() {
    let mut settings = test_settings();
    settings.trusted_proxies = vec![moments::domain::addr::IpBlock::parse("127.0.0.1").unwrap()];
    settings.rate_limits = Some(moments::config::RateLimits {
        reads_per_ip: moments::config::Rate::new(3, 600),
        ..Default::default()
    });
    let app = spawn_app_with(settings).await;
    let me = app.user("exlinkbudget").await;
    app.text_post(&me, "something to export").await;
    let id = ready_export(&app, &me).await;
    let url = link_of(&app, &me, id).await;

    // Made-up keys, well formed: each is refused, and each is charged.
    let made_up = format!(
        "/api/v1/me/exports/{id}/download?key={}-{}",
        me.uid,
        "cd".repeat(24)
    );
    let guesser = "198.51.100.7";
    for _ in 0..3 {
        assert_eq!(get_from(&app, &made_up, guesser).await.0, 401);
    }
    let (s, retry) = get_from(&app, &made_up, guesser).await;
    assert_eq!(s, 429, "a fourth guess within the budget of three");
    assert!(retry.is_some_and(|r| r.parse::<u64>().unwrap() >= 1));
    // Charged before the key is read: the next read of an export fails,
    // and neither refusal meets it, a guess's nor the real link's (whoever
    // holds a link is held to the same budget)...
    app.ctx.faults.inject(
        "ExportDocs",
        "export_by_id",
        moments::store::faults::Fault::Fail,
        1,
    );
    assert_eq!(get_from(&app, &made_up, guesser).await.0, 429);
    assert_eq!(get_from(&app, &url, guesser).await.0, 429);
    // ...so the first request within its budget does: another address's.
    assert_eq!(get_from(&app, &url, "198.51.100.8").await.0, 503);
    assert_eq!(get_from(&app, &url, "198.51.100.8").await.0, 200);
}

#[tokio::test]
async fn downloads_of_one_export_at_once_are_capped() {
    let mut settings = test_settings();
    settings.exports.chunk_bytes = 4096;
    settings.exports.downloads = 2;
    let app = spawn_app_with(settings).await;
    let me = app.user("excapped").await;
    let mut seed = 11u64;
    for i in 0..20 {
        app.text_post(&me, &format!("post {i}: {}", letters(&mut seed, 300)))
            .await;
    }
    let id = ready_export(&app, &me).await;
    let path = format!("/api/v1/me/exports/{id}/download");
    // Two downloads held at their first chunk read: in progress.
    let gate = moments::store::faults::Gate::new();
    app.ctx.faults.inject(
        "ExportDocs",
        "export_chunk",
        moments::store::faults::Fault::Hold(gate.clone()),
        2,
    );
    let held: Vec<_> = (0..2)
        .map(|_| {
            let req = app
                .client
                .get(format!("{}{path}", app.base))
                .bearer_auth(&me.token);
            tokio::spawn(async move {
                let resp = req.send().await.unwrap();
                let status = resp.status().as_u16();
                let etag = resp.headers()["etag"].to_str().unwrap().to_string();
                (status, etag, resp.bytes().await.unwrap().to_vec())
            })
        })
        .collect();
    wait_until("two downloads are in progress", || async {
        app.ctx.exports.downloads.serving(id) == 2
    })
    .await;
    let (s, headers, body) = app
        .call_with(Method::GET, &path, Some(&me.token), &[], None)
        .await;
    assert_eq!(s.as_u16(), 429, "{}", body["code"]);
    assert_eq!(body["code"], "rate_limited", "{}", body["detail"]);
    assert!(headers.contains_key("retry-after"));
    // A link's download is one of them too.
    let url = link_of(&app, &me, id).await;
    assert_eq!(app.get(&url, None).await.0.as_u16(), 429);
    gate.open();
    for h in held {
        let (status, etag, bytes) = h.await.unwrap();
        assert_eq!(status, 200);
        use sha2::Digest;
        let sha: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(etag, format!("\"{sha}\""), "the whole archive");
    }
    // Ended downloads free their places.
    wait_until("the downloads ended", || async {
        app.ctx.exports.downloads.serving(id) == 0
    })
    .await;
    assert_eq!(app.get(&url, None).await.0.as_u16(), 200);
}

#[tokio::test]
async fn small_ranges_of_one_chunk_read_it_from_the_store_once() {
    let mut settings = test_settings();
    settings.exports.chunk_bytes = 4096;
    let app = spawn_app_with(settings).await;
    let me = app.user("excached").await;
    let mut seed = 13u64;
    for i in 0..100 {
        app.text_post(&me, &format!("post {i}: {}", letters(&mut seed, 300)))
            .await;
    }
    let done = export(&app, &me).await;
    assert_eq!(done["state"], "ready", "{done}");
    let whole = download(&app, &me, &done).await;
    assert!(
        whole.len() > 6 * 4096,
        "six chunks at least: {}",
        whole.len()
    );
    let url = format!(
        "{}{}",
        app.base,
        link_of(&app, &me, done["id"].as_i64().unwrap()).await
    );
    let range = |r: String| {
        let req = app.client.get(&url).header("Range", r);
        async move {
            let resp = req.send().await?;
            let status = resp.status().as_u16();
            Ok::<_, reqwest::Error>((status, resp.bytes().await?.to_vec()))
        }
    };
    assert_eq!(
        range("bytes=0-0".into()).await.unwrap(),
        (206, whole[..1].to_vec())
    );
    // From here on the store has no chunk to give: what is served of the
    // first chunk comes from memory.
    app.ctx.faults.inject(
        "ExportDocs",
        "export_chunk",
        moments::store::faults::Fault::Fail,
        1000,
    );
    for i in 0..20 {
        let answer = range(format!("bytes={i}-{i}")).await.unwrap();
        assert_eq!(answer, (206, whole[i..=i].to_vec()), "byte {i}");
    }
    // A chunk not served lately is read from the store, which fails: the
    // fault was armed all along.
    let answer = range("bytes=4096-4096".into()).await;
    assert!(
        answer
            .as_ref()
            .map_or(true, |(_, b)| b.as_slice() != &whole[4096..4097]),
        "the second chunk came from somewhere: {answer:?}"
    );
    app.ctx.faults.clear();
}

/// A link is as good as a session: what ends the account's sessions ends
/// it, a new password or a suspension.
#[tokio::test]
async fn a_download_link_dies_with_a_password_change_and_a_suspension() {
    let app = spawn_app().await;
    let me = app.user("exlinkdies").await;
    app.text_post(&me, "mine").await;
    let id = ready_export(&app, &me).await;
    let url = link_of(&app, &me, id).await;
    assert_eq!(app.get(&url, None).await.0.as_u16(), 200);
    let (s, body) = app
        .call(
            Method::PUT,
            "/api/v1/me/password",
            Some(&me.token),
            Some(json!({"oldPassword": "password-123", "newPassword": "a-new-password-9"})),
        )
        .await;
    assert!(s.is_success(), "{body}");
    assert_problem(&app.get(&url, None).await, 401, "unauthorized");

    let me = User {
        uid: me.uid,
        token: app.login("exlinkdies", "a-new-password-9").await,
    };
    let url = link_of(&app, &me, id).await;
    assert_eq!(app.get(&url, None).await.0.as_u16(), 200);
    let reporter = app.user("exlinkreporter").await;
    let body = json!({"targetType": "user", "targetId": me.uid, "category": "spam"});
    assert_eq!(crate::reports::report(&app, &reporter, body).await.0, 201);
    let m = crate::reports::moderator(&app, "exlinkmod").await;
    let (s, v) = crate::strikes::act_on(
        &app,
        &m,
        json!({"kind": "user", "id": me.uid}),
        json!({"action": "suspend", "days": 1}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_problem(&app.get(&url, None).await, 401, "unauthorized");
}
