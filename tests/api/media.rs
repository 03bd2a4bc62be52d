//! Photos: uploads processed and stored, attached to posts in order,
//! shown wherever a post is, served with the right headers, refused when
//! bad with nothing stored, and deleted with their post, their account, or
//! when no post took them. Every test runs on both media stores (files in
//! the data directory, and SeaweedFS over S3), on whichever document and
//! live stores this run is on.

use moments::service::media::samples::{has_app1, phone_jpeg};
use moments::store::MediaState;
use reqwest::{header, Method, StatusCode};
use serde_json::{json, Value};

use super::helpers::*;
use super::multipart::{field, file, form, Part, BOUNDARY, CONTENT_TYPE};

#[derive(Clone, Copy)]
pub enum Store {
    Files,
    S3,
}

fn s3_bucket() -> moments::config::S3Bucket {
    let env = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run scripts/test.sh, which starts SeaweedFS")
        })
    };
    moments::config::S3Bucket {
        endpoint: env("MOMENTS_TEST_S3_ENDPOINT"),
        bucket: env("MOMENTS_TEST_S3_BUCKET"),
        region: "us-east-1".into(),
        access_key_id: env("MOMENTS_TEST_S3_ACCESS_KEY_ID"),
        secret_access_key: env("MOMENTS_TEST_S3_SECRET_ACCESS_KEY"),
    }
}

fn settings_on(store: Store) -> moments::config::Settings {
    let mut s = test_settings();
    s.media.s3 = match store {
        Store::Files => None,
        Store::S3 => Some(s3_bucket()),
    };
    s
}

async fn app_on(store: Store) -> TestApp {
    spawn_app_with(settings_on(store)).await
}

/// `POST /api/v1/media` with these parts: the status, the body, the headers.
async fn upload_parts(
    app: &TestApp,
    who: &User,
    parts: &[Part<'_>],
) -> (StatusCode, Value, header::HeaderMap) {
    let resp = app
        .client
        .post(format!("{}/api/v1/media", app.base))
        .bearer_auth(&who.token)
        .header(header::CONTENT_TYPE, CONTENT_TYPE)
        .body(form(parts))
        .send()
        .await
        .unwrap();
    let (status, headers) = (resp.status(), resp.headers().clone());
    let body = resp.json().await.unwrap_or(Value::Null);
    (status, body, headers)
}

/// A phone photo uploaded; its answer.
async fn upload(app: &TestApp, who: &User) -> Value {
    let (s, media, _) = upload_parts(
        app,
        who,
        &[file(phone_jpeg(300, 200, 6).unwrap(), "image/jpeg")],
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{media}");
    media
}

/// GET of a media URL (root-relative on the default base): status,
/// headers, bytes.
async fn fetch(
    app: &TestApp,
    url: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, header::HeaderMap, Vec<u8>) {
    let mut req = app.client.get(format!("{}{url}", app.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let (status, h) = (resp.status(), resp.headers().clone());
    (status, h, resp.bytes().await.unwrap().to_vec())
}

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap()
}

async fn post_with(app: &TestApp, who: &User, media_ids: &[i64]) -> (StatusCode, Value) {
    app.post(
        "/api/v1/posts",
        Some(&who.token),
        json!({"category": "PICTURE", "content": "西湖 at dusk", "mediaIds": media_ids}),
    )
    .await
}

/// What the documents hold of `uid`'s uploads.
async fn records_of(app: &TestApp, uid: i64) -> Vec<moments::store::MediaDoc> {
    app.ctx.docs.media_of(uid, None, 100).await.unwrap()
}

pub async fn an_upload_is_stored_upright_without_metadata(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let upload = phone_jpeg(300, 200, 6).unwrap();
    assert!(has_app1(&upload), "the fixture carries EXIF with GPS");
    let (s, media, _) = upload_parts(
        &app,
        &ann,
        &[
            file(upload.clone(), "image/jpeg"),
            field("description", "落日 over the lake"),
            field("focus", "0.5,-0.25"),
        ],
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{media}");
    assert_eq!(media["type"], "image");
    // Orientation 6 turned the 300 × 200 photo upright.
    assert_eq!(
        (media["width"].as_u64(), media["height"].as_u64()),
        (Some(200), Some(300))
    );
    assert_eq!(media["description"], "落日 over the lake");
    assert_eq!(media["focus"], json!({"x": 0.5, "y": -0.25}));
    assert!(
        media["blurhash"].as_str().is_some_and(|b| b.len() >= 6),
        "{media}"
    );
    let url = media["url"].as_str().unwrap();
    let preview = media["previewUrl"].as_str().unwrap();
    // 128 random bits name it; nothing names its owner.
    assert!(
        url.starts_with("/media/") && url.ends_with("/original.jpg"),
        "{url}"
    );
    assert!(!url.contains(&ann.uid.to_string()), "{url}");
    assert_eq!(url.split('/').nth(2).unwrap().len(), 32);

    let (s, h, original) = fetch(&app, url, &[]).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "image/jpeg");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(h["cache-control"].to_str().unwrap().contains("immutable"));
    assert_eq!(original.len() as u64, media["size"].as_u64().unwrap());
    assert!(!has_app1(&original), "the stored original keeps no EXIF");
    let decoded = image::load_from_memory(&original).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (200, 300));
    // Upright: what was the photo's left (red) is now its top.
    let top = decoded.to_rgb8().get_pixel(100, 10).0;
    assert!(top[0] > 150 && top[2] < 100, "top pixel {top:?}");

    // Revalidation and byte ranges.
    let etag = h["etag"].to_str().unwrap().to_string();
    let (s, _, body) = fetch(&app, url, &[("if-none-match", &etag)]).await;
    assert_eq!((s, body.len()), (StatusCode::NOT_MODIFIED, 0));
    let (s, h, part) = fetch(&app, url, &[("range", "bytes=10-19")]).await;
    assert_eq!(s, StatusCode::PARTIAL_CONTENT);
    assert_eq!(part, original[10..20]);
    assert_eq!(
        h["content-range"].to_str().unwrap(),
        format!("bytes 10-19/{}", original.len())
    );
    let (s, h, tail) = fetch(&app, url, &[("range", "bytes=-7")]).await;
    assert_eq!(s, StatusCode::PARTIAL_CONTENT);
    assert_eq!(tail, original[original.len() - 7..]);
    assert_eq!(
        h["content-range"].to_str().unwrap(),
        format!(
            "bytes {}-{}/{}",
            original.len() - 7,
            original.len() - 1,
            original.len()
        )
    );
    let (s, h, _) = fetch(&app, url, &[("range", "bytes=999999999-")]).await;
    assert_eq!(s, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        h["content-range"].to_str().unwrap(),
        format!("bytes */{}", original.len())
    );
    // About this request, not the object: no one may cache it as the object.
    assert!(!h.contains_key("cache-control"));
    // A range that ends before it starts is no range: the whole object.
    let (s, _, whole) = fetch(&app, url, &[("range", "bytes=5-3")]).await;
    assert_eq!((s, whole.len()), (StatusCode::OK, original.len()));
    // HEAD: the length and the headers, no bytes.
    let resp = app
        .client
        .head(format!("{}{url}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-length"].to_str().unwrap(),
        original.len().to_string()
    );
    assert_eq!(resp.headers()["etag"].to_str().unwrap(), etag);

    // The preview is held in memory after its first whole read: a range
    // of it reads the same before (from the store) and after (the copy).
    let (s, _, early) = fetch(&app, preview, &[("range", "bytes=10-19")]).await;
    assert_eq!((s, early.len()), (StatusCode::PARTIAL_CONTENT, 10));
    let (s, h, small) = fetch(&app, preview, &[]).await;
    let (_, h_held, held) = fetch(&app, preview, &[]).await;
    assert_eq!((&held, &h_held["etag"]), (&small, &h["etag"]));
    let (s_late, _, late) = fetch(&app, preview, &[("range", "bytes=10-19")]).await;
    assert_eq!(
        (s_late, &late, &early[..]),
        (
            StatusCode::PARTIAL_CONTENT,
            &small[10..20].to_vec(),
            &small[10..20]
        )
    );
    let resp = app
        .client
        .post(format!("{}{preview}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(resp.headers()["allow"], "GET, HEAD");
    assert_eq!(
        (s, &h["content-type"]),
        (StatusCode::OK, &"image/jpeg".parse().unwrap())
    );
    assert!(!has_app1(&small));
    let small = image::load_from_memory(&small).unwrap();
    assert_eq!(
        (u64::from(small.width()), u64::from(small.height())),
        (
            media["previewWidth"].as_u64().unwrap(),
            media["previewHeight"].as_u64().unwrap()
        )
    );

    // Its owner reads it back; no one else learns it exists.
    let (s, again) = app
        .get(&format!("/api/v1/media/{}", id(&media)), Some(&ann.token))
        .await;
    assert_eq!((s, &again), (StatusCode::OK, &media));
    let bob = app.user("bob").await;
    let other = app
        .get(&format!("/api/v1/media/{}", id(&media)), Some(&bob.token))
        .await;
    assert_problem(&other, 404, "not_found");
    // A URL that names nothing, or names a path, is a plain 404.
    for bad in [
        "/media/00000000000000000000000000000000/original.jpg",
        "/media/../../etc/passwd",
        &url.replace("original.jpg", "original.png"),
        &url.replace("original", "thumbnail"),
    ] {
        assert_eq!(
            fetch(&app, bad, &[]).await.0,
            StatusCode::NOT_FOUND,
            "{bad}"
        );
    }
}

pub async fn a_post_shows_its_pictures_in_order_wherever_it_appears(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let bob = app.user("bob").await;
    follow(&app, &bob, &ann).await;
    let uploads = [
        upload(&app, &ann).await,
        upload(&app, &ann).await,
        upload(&app, &ann).await,
    ];
    let order = [id(&uploads[1]), id(&uploads[0]), id(&uploads[2])];
    let (s, post) = post_with(&app, &ann, &order).await;
    assert_eq!(s, StatusCode::CREATED, "{post}");
    let shown =
        |post: &Value| -> Vec<i64> { post["media"].as_array().unwrap().iter().map(id).collect() };
    assert_eq!(shown(&post), order);
    assert_eq!(post["media"][0], uploads[1], "as uploaded: {post}");
    let post_id = id(&post);
    settle(&app).await;
    let (_, by_id) = app
        .get(&format!("/api/v1/posts/{post_id}"), Some(&bob.token))
        .await;
    assert_eq!(shown(&by_id), order);
    let (_, feed) = app.get("/api/v1/feed", Some(&bob.token)).await;
    assert_eq!(shown(&feed["items"][0]), order, "{feed}");
    let (_, album) = app
        .get(
            &format!("/api/v1/users/{}/posts", ann.uid),
            Some(&bob.token),
        )
        .await;
    assert_eq!(shown(&album["items"][0]), order, "{album}");
    // With the live state lost, the documents say the same.
    app.lose_live_state().await;
    let (_, cold) = app
        .get(&format!("/api/v1/posts/{post_id}"), Some(&bob.token))
        .await;
    assert_eq!(cold["media"], post["media"]);
    // Every picture a reader is shown can be fetched.
    for m in post["media"].as_array().unwrap() {
        for url in [&m["url"], &m["previewUrl"]] {
            assert_eq!(
                fetch(&app, url.as_str().unwrap(), &[]).await.0,
                StatusCode::OK
            );
        }
    }
    // A post's pictures stay as published: no edits, no deleting them alone.
    let edit = app
        .call(
            Method::PUT,
            &format!("/api/v1/media/{}", order[0]),
            Some(&ann.token),
            Some(json!({"description": "later"})),
        )
        .await;
    assert_problem(&edit, 409, "conflict");
    let gone = app
        .delete(&format!("/api/v1/media/{}", order[0]), Some(&ann.token))
        .await;
    assert_problem(&gone, 409, "conflict");
}

pub async fn bad_uploads_are_refused_and_store_nothing(store: Store) {
    let mut settings = settings_on(store);
    settings.media.max_bytes = 200_000;
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let jpeg = phone_jpeg(64, 48, 1).unwrap();
    let mut png = Vec::new();
    image::DynamicImage::new_rgb8(8, 8)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    // A tiny PNG whose header claims 100,000 × 100,000 pixels.
    let mut bomb = png.clone();
    bomb[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    bomb[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let cases: Vec<(Vec<Part<'_>>, u16, &str)> = vec![
        (
            vec![file(
                b"just some text, not a picture".to_vec(),
                "image/jpeg",
            )],
            422,
            "file",
        ),
        (
            vec![file(b"%PDF-1.4 not an image".to_vec(), "application/pdf")],
            422,
            "file",
        ),
        (
            vec![file(jpeg[..jpeg.len() / 2].to_vec(), "image/jpeg")],
            422,
            "file",
        ),
        (vec![file(png.clone(), "image/jpeg")], 422, "file"),
        (vec![file(bomb, "image/png")], 422, "file"),
        (vec![file(vec![0xFF; 300_000], "image/jpeg")], 413, ""),
        (vec![field("description", "no file")], 400, "file"),
        (
            vec![
                file(jpeg.clone(), "image/jpeg"),
                file(jpeg.clone(), "image/jpeg"),
            ],
            400,
            "file",
        ),
        (
            vec![file(jpeg.clone(), "image/jpeg"), field("caption", "?")],
            400,
            "caption",
        ),
        (
            vec![file(jpeg.clone(), "image/jpeg"), field("focus", "2,0")],
            400,
            "focus",
        ),
        (
            vec![
                file(jpeg.clone(), "image/jpeg"),
                field("description", &"字".repeat(1501)),
            ],
            400,
            "description",
        ),
    ];
    for (parts, status, named) in cases {
        let (s, problem, _) = upload_parts(&app, &ann, &parts).await;
        assert_eq!(s.as_u16(), status, "{problem}");
        assert_eq!(problem["status"], status, "problem+json: {problem}");
        if !named.is_empty() {
            assert_eq!(problem["field"], named, "{problem}");
        }
    }
    // Not a form at all.
    let (s, problem) = app
        .post("/api/v1/media", Some(&ann.token), json!({"file": "x"}))
        .await;
    assert_eq!(s.as_u16(), 400, "{problem}");
    // None of it was kept.
    assert!(records_of(&app, ann.uid).await.is_empty());
    // Signed out, nothing is even read.
    let anon = app
        .client
        .post(format!("{}/api/v1/media", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), StatusCode::UNAUTHORIZED);
    // And a good one still goes through.
    upload(&app, &ann).await;
    assert_eq!(records_of(&app, ann.uid).await.len(), 1);
}

pub async fn a_post_takes_only_its_authors_free_pictures_each_once(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let bob = app.user("bob").await;
    let mine = id(&upload(&app, &ann).await);
    let theirs = id(&upload(&app, &bob).await);
    let ten: Vec<i64> = (0..10).map(|i| mine + i).collect();
    for (ids, status, field) in [
        (vec![theirs], 422, "mediaIds[0]"),
        (vec![mine, 1], 422, "mediaIds[1]"),
        (ten, 400, "mediaIds"),
        (vec![mine, mine], 400, "mediaIds[1]"),
        (vec![0], 400, "mediaIds[0]"),
    ] {
        let (s, problem) = post_with(&app, &ann, &ids).await;
        assert_eq!(s.as_u16(), status, "{ids:?}: {problem}");
        assert_eq!(problem["field"], field, "{problem}");
    }
    // Nothing was published, nothing taken.
    let (_, album) = app
        .get(
            &format!("/api/v1/users/{}/posts", ann.uid),
            Some(&ann.token),
        )
        .await;
    assert!(album["items"].as_array().unwrap().is_empty(), "{album}");
    assert_eq!(records_of(&app, ann.uid).await[0].state, MediaState::Ready);
    // Taken once, it cannot be taken again.
    assert_eq!(post_with(&app, &ann, &[mine]).await.0, StatusCode::CREATED);
    let (s, problem) = post_with(&app, &ann, &[mine]).await;
    assert_eq!(s.as_u16(), 422, "{problem}");
    // Uploads or URLs, not both; and nothing is taken by the refusal.
    let fresh = id(&upload(&app, &ann).await);
    let (s, problem) = app
        .post(
            "/api/v1/posts",
            Some(&ann.token),
            json!({"category": "PICTURE", "pictureUrls": ["https://cdn.example/0.jpg"], "mediaIds": [fresh]}),
        )
        .await;
    assert_eq!(
        (s.as_u16(), &problem["field"]),
        (400, &json!("mediaIds")),
        "{problem}"
    );
    let (s, post) = post_with(&app, &ann, &[fresh]).await;
    assert_eq!(s, StatusCode::CREATED, "{post}");
}

/// `POST /posts` of these pictures under an idempotency key.
async fn publish_with_key(
    app: &TestApp,
    who: &User,
    key: &str,
    media_ids: &[i64],
) -> (StatusCode, Value) {
    let resp = app
        .client
        .post(format!("{}/api/v1/posts", app.base))
        .bearer_auth(&who.token)
        .header("Idempotency-Key", key)
        .json(&json!({"category": "PICTURE", "mediaIds": media_ids}))
        .send()
        .await
        .unwrap();
    (resp.status(), resp.json::<Value>().await.unwrap())
}

pub async fn an_idempotent_retry_publishes_its_pictures_once(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let pictures = [id(&upload(&app, &ann).await), id(&upload(&app, &ann).await)];
    let send = || publish_with_key(&app, &ann, "compose-with-photos-1", &pictures);
    let (s1, first) = send().await;
    let (s2, second) = send().await;
    assert_eq!(
        (s1, s2),
        (StatusCode::CREATED, StatusCode::CREATED),
        "{first} {second}"
    );
    assert_eq!(id(&first), id(&second));
    assert_eq!(first["media"], second["media"]);
    let (_, album) = app
        .get(
            &format!("/api/v1/users/{}/posts", ann.uid),
            Some(&ann.token),
        )
        .await;
    assert_eq!(album["items"].as_array().unwrap().len(), 1);

    // The insert lands but its answer is lost: the pictures stay taken (a
    // post may hold them), and the retry answers that post, with them.
    use moments::store::faults::Fault;
    let more = [id(&upload(&app, &ann).await), id(&upload(&app, &ann).await)];
    app.ctx
        .faults
        .inject("PostDocs", "insert_post", Fault::FailAfter, 1);
    let send = || publish_with_key(&app, &ann, "compose-with-photos-2", &more);
    let (s, lost) = send().await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{lost}");
    let held = app.ctx.docs.media_by_ids(ann.uid, &more).await.unwrap();
    assert!(
        held.iter().all(|m| m.state == MediaState::Attached),
        "kept taken: {:?}",
        held.iter().map(|m| m.state).collect::<Vec<_>>()
    );
    let (s, retried) = send().await;
    assert_eq!(s, StatusCode::CREATED, "{retried}");
    let shown: Vec<i64> = retried["media"]
        .as_array()
        .unwrap()
        .iter()
        .map(id)
        .collect();
    assert_eq!(shown, more, "the post made, with its pictures in order");
    let (_, album) = app
        .get(
            &format!("/api/v1/users/{}/posts", ann.uid),
            Some(&ann.token),
        )
        .await;
    assert_eq!(album["items"].as_array().unwrap().len(), 2, "one post more");
}

pub async fn an_upload_is_described_and_deleted_by_its_owner(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let media = upload(&app, &ann).await;
    let path = format!("/api/v1/media/{}", id(&media));
    let (s, changed) = app
        .call(
            Method::PUT,
            &path,
            Some(&ann.token),
            Some(json!({"description": "a cat", "focus": "-1,1"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{changed}");
    assert_eq!(
        (changed["description"].as_str(), &changed["focus"]),
        (Some("a cat"), &json!({"x": -1.0, "y": 1.0}))
    );
    let (_, cleared) = app
        .call(
            Method::PUT,
            &path,
            Some(&ann.token),
            Some(json!({"focus": null})),
        )
        .await;
    assert_eq!(
        (cleared["description"].as_str(), &cleared["focus"]),
        (Some("a cat"), &Value::Null)
    );
    for bad in [
        json!({"focus": "1,2"}),
        json!({"description": 5}),
        json!({"alt": "x"}),
    ] {
        let (s, p) = app
            .call(Method::PUT, &path, Some(&ann.token), Some(bad))
            .await;
        assert_eq!(s.as_u16(), 400, "{p}");
    }
    let bob = app.user("bob").await;
    assert_problem(&app.delete(&path, Some(&bob.token)).await, 404, "not_found");
    // Read once, so this instance holds a copy the delete must forget.
    let preview = media["previewUrl"].as_str().unwrap();
    assert_eq!(fetch(&app, preview, &[]).await.0, StatusCode::OK);
    assert_eq!(
        app.delete(&path, Some(&ann.token)).await.0,
        StatusCode::NO_CONTENT
    );
    assert_problem(&app.get(&path, Some(&ann.token)).await, 404, "not_found");
    for url in [&media["url"], &media["previewUrl"]] {
        assert_eq!(
            fetch(&app, url.as_str().unwrap(), &[]).await.0,
            StatusCode::NOT_FOUND
        );
    }
    assert!(records_of(&app, ann.uid).await.is_empty());
}

pub async fn pictures_go_with_their_post_and_their_account(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let on_post = upload(&app, &ann).await;
    let (_, post) = post_with(&app, &ann, &[id(&on_post)]).await;
    let preview = on_post["previewUrl"].as_str().unwrap();
    assert_eq!(
        fetch(&app, preview, &[]).await.0,
        StatusCode::OK,
        "held now"
    );
    assert_eq!(
        app.delete(&format!("/api/v1/posts/{}", id(&post)), Some(&ann.token))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    for url in [on_post["url"].as_str().unwrap(), preview] {
        assert_eq!(
            fetch(&app, url, &[]).await.0,
            StatusCode::NOT_FOUND,
            "{url}"
        );
    }
    assert!(records_of(&app, ann.uid).await.is_empty());

    let kept = upload(&app, &ann).await;
    let loose = upload(&app, &ann).await;
    post_with(&app, &ann, &[id(&kept)]).await;
    let kept_preview = kept["previewUrl"].as_str().unwrap();
    assert_eq!(fetch(&app, kept_preview, &[]).await.0, StatusCode::OK);
    let (s, _) = app
        .call(
            Method::DELETE,
            "/api/v1/me",
            Some(&ann.token),
            Some(json!({"password": "password-123"})),
        )
        .await;
    assert!(s.is_success(), "{s}");
    for url in [&kept["url"], &kept["previewUrl"], &loose["url"]] {
        let url = url.as_str().unwrap();
        assert_eq!(
            fetch(&app, url, &[]).await.0,
            StatusCode::NOT_FOUND,
            "{url}"
        );
    }
    assert!(records_of(&app, ann.uid).await.is_empty());
}

pub async fn the_sweep_deletes_what_no_post_took_and_frees_what_a_lost_post_took(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let old = upload(&app, &ann).await;
    let fresh = upload(&app, &ann).await;
    let lost = upload(&app, &ann).await;
    let cut = upload(&app, &ann).await;
    let long_ago = moments::ids::now_ms() - 25 * moments::ids::HOUR_MS;
    let docs = &app.ctx.docs;
    // Its instance died while storing it: bytes stored, never ready.
    docs.move_media(
        ann.uid,
        &[id(&cut)],
        MediaState::Ready,
        MediaState::Storing,
        long_ago,
    )
    .await
    .unwrap();
    docs.move_media(
        ann.uid,
        &[id(&old)],
        MediaState::Ready,
        MediaState::Ready,
        long_ago,
    )
    .await
    .unwrap();
    // Taken by a post that was never made (its instance died between).
    docs.attach_media(ann.uid, &[id(&lost)], 42, long_ago)
        .await
        .unwrap();
    moments::service::media::sweeps::sweep_once(&app.ctx)
        .await
        .unwrap();
    let states: std::collections::HashMap<i64, MediaState> = records_of(&app, ann.uid)
        .await
        .into_iter()
        .map(|m| (m.id, m.state))
        .collect();
    assert_eq!(states.get(&id(&old)), None, "a day unattached: deleted");
    assert_eq!(states.get(&id(&cut)), None, "cut short a day ago: deleted");
    for url in [&cut["url"], &cut["previewUrl"]] {
        let (s, _, _) = fetch(&app, url.as_str().unwrap(), &[]).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{url}");
    }
    assert_eq!(
        fetch(&app, old["previewUrl"].as_str().unwrap(), &[])
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(states.get(&id(&fresh)), Some(&MediaState::Ready));
    assert_eq!(
        states.get(&id(&lost)),
        Some(&MediaState::Ready),
        "freed again"
    );
    // A posted picture is checked once, then left alone.
    let (_, post) = post_with(&app, &ann, &[id(&fresh)]).await;
    docs.move_media(
        ann.uid,
        &[id(&fresh)],
        MediaState::Attached,
        MediaState::Attached,
        long_ago,
    )
    .await
    .unwrap();
    moments::service::media::sweeps::sweep_once(&app.ctx)
        .await
        .unwrap();
    let now = docs.media_by_ids(ann.uid, &[id(&fresh)]).await.unwrap();
    assert_eq!(
        (now[0].state, now[0].post_id),
        (MediaState::Posted, Some(id(&post)))
    );
    assert_eq!(
        fetch(&app, fresh["url"].as_str().unwrap(), &[]).await.0,
        StatusCode::OK
    );
}

pub async fn the_quota_and_the_upload_bound_answer_before_any_work(store: Store) {
    let photo = phone_jpeg(300, 200, 1).unwrap();
    let mut settings = settings_on(store);
    // Room for a few uploads of it a day.
    let budget = photo.len() * 5;
    if let Some(limits) = settings.rate_limits.as_mut() {
        limits.media_bytes = moments::config::Rate::new(budget as u32, 86_400);
    }
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let mut taken = Vec::new();
    let refused = loop {
        let (s, answer, headers) =
            upload_parts(&app, &ann, &[file(photo.clone(), "image/jpeg")]).await;
        if s != StatusCode::CREATED {
            break (s, answer, headers);
        }
        taken.push(answer);
        assert!(taken.len() <= 5, "the quota never ran out");
    };
    let (s, problem, headers) = refused;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{problem}");
    assert!(headers.contains_key("retry-after"));
    // Each upload cost what it sent or what it stored, whichever is more
    // (this small photo stores more: a preview as large as itself), and
    // the quota took exactly as many as fit.
    let (_, _, preview) = fetch(&app, taken[0]["previewUrl"].as_str().unwrap(), &[]).await;
    let stored = taken[0]["size"].as_u64().unwrap() as usize + preview.len();
    let each = stored.max(photo.len());
    assert!(
        !taken.is_empty() && taken.len() * each <= budget,
        "{} of {each}",
        taken.len()
    );
    assert!(
        (taken.len() + 1) * each > budget,
        "{} of {each}",
        taken.len()
    );
    assert_eq!(records_of(&app, ann.uid).await.len(), taken.len());
    // Every place for an upload taken: 503 with Retry-After, body unread.
    let bob = app.user("bob").await;
    let held: Vec<_> = (0..app.settings.media.uploads)
        .map(|i| app.ctx.media.admit(-1 - i as i64).unwrap())
        .collect();
    let (s, problem, headers) =
        upload_parts(&app, &bob, &[file(photo.clone(), "image/jpeg")]).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{problem}");
    assert!(headers.contains_key("retry-after"));
    drop(held);
    let (s, _, _) = upload_parts(&app, &bob, &[file(photo.clone(), "image/jpeg")]).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(records_of(&app, bob.uid).await.len(), 1);
    // One account's uploads under way take only its own places: a few
    // slow ones cannot take everyone's.
    let cy = app.user("cyd").await;
    let cys: Vec<_> = (0..app.settings.media.uploads_per_account)
        .map(|_| app.ctx.media.admit(cy.uid).unwrap())
        .collect();
    let (s, problem, headers) = upload_parts(&app, &cy, &[file(photo.clone(), "image/jpeg")]).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{problem}");
    assert!(headers.contains_key("retry-after"));
    let dee = app.user("dee").await;
    let (s, _, _) = upload_parts(&app, &dee, &[file(photo.clone(), "image/jpeg")]).await;
    assert_eq!(s, StatusCode::CREATED);
    drop(cys);
    let (s, _, _) = upload_parts(&app, &cy, &[file(photo, "image/jpeg")]).await;
    assert_eq!(s, StatusCode::CREATED);
}

pub async fn an_upload_whose_body_stops_arriving_is_refused_and_frees_its_place(store: Store) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut settings = settings_on(store);
    settings.media.receive_secs = 1;
    settings.media.uploads_per_account = 1;
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let photo = phone_jpeg(300, 200, 1).unwrap();
    let body = form(&[file(photo.clone(), "image/jpeg")]);
    // The headers and half the body, and then nothing.
    let addr = app.base.trim_start_matches("http://");
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/v1/media HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        ann.token,
        body.len()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(&body[..body.len() / 2]).await.unwrap();
    // Read until the answer's code is in, or the server hangs up.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("request_timeout") {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    // Nothing stored, and its place (the account's only one) is free.
    assert!(records_of(&app, ann.uid).await.is_empty());
    let (s, problem, _) = upload_parts(&app, &ann, &[file(photo, "image/jpeg")]).await;
    assert_eq!(s, StatusCode::CREATED, "{problem}");
}

pub async fn a_page_of_nine_picture_posts_costs_no_more_round_trips(store: Store) {
    let app = app_on(store).await;
    let reader = app.user("reader").await;
    let (plain, pictured) = (app.user("plain").await, app.user("pictured").await);
    for _ in 0..3 {
        app.text_post(&plain, "words only").await;
        let mut nine = Vec::new();
        for _ in 0..9 {
            nine.push(id(&upload(&app, &pictured).await));
        }
        assert_eq!(
            post_with(&app, &pictured, &nine).await.0,
            StatusCode::CREATED
        );
    }
    // Each page read cold (the live state lost) and then warm, counting
    // the page's own round trips (not the background's).
    let trips = |author: i64| {
        let ctx = app.ctx.clone();
        let reader = reader.uid;
        async move {
            let pres = moments::service::Presentation::default();
            let (page, trips) = moments::store::metered::count_request_trips(
                moments::service::posts::album(&ctx, author, Some(reader), None, 20, &pres),
            )
            .await;
            assert_eq!(page.unwrap().items.len(), 3);
            trips
        }
    };
    // Interleaved, so that each author's read finds this instance's
    // copies as the other's did; the last round counts.
    let mut cost = Vec::new();
    for _ in 0..3 {
        cost.clear();
        for author in [&plain, &pictured] {
            app.lose_live_state().await;
            settle(&app).await;
            let cold = trips(author.uid).await;
            cost.push((cold, trips(author.uid).await));
        }
    }
    assert_eq!(
        cost[0], cost[1],
        "plain and nine-picture pages, cold and warm"
    );
}

pub async fn the_export_carries_each_posts_originals(store: Store) {
    let app = app_on(store).await;
    let ann = app.user("ann").await;
    let a = upload(&app, &ann).await;
    let b = upload(&app, &ann).await;
    let loose = upload(&app, &ann).await;
    let (_, post) = post_with(&app, &ann, &[id(&b), id(&a)]).await;
    let done = super::exports::export(&app, &ann).await;
    assert_eq!(done["state"], "ready", "{done}");
    let files = super::exports::unzip(&super::exports::download(&app, &ann, &done).await);
    let posts: Value = serde_json::from_slice(&files["posts.json"]).unwrap();
    let archived = posts
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == post["id"])
        .unwrap();
    let named: Vec<&str> = archived["media"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        named,
        [
            format!("media/{}.jpg", id(&b)),
            format!("media/{}.jpg", id(&a))
        ]
    );
    for (m, file) in [&b, &a].iter().zip(&named) {
        let (_, _, original) = fetch(&app, m["url"].as_str().unwrap(), &[]).await;
        assert_eq!(files[*file], original, "{file}");
        assert!(!has_app1(&files[*file]));
    }
    // Only what is on a post; the offline album shows them.
    assert!(!files.contains_key(&format!("media/{}.jpg", id(&loose))));
    let album = String::from_utf8_lossy(&files["album.js"]);
    assert!(album.contains(named[0]), "album.js names the pictures");
}

pub async fn a_reported_posts_pictures_stay_in_its_snapshot_after_it_is_deleted(store: Store) {
    use base64::Engine;
    let app = app_on(store).await;
    let (ann, bob) = (app.user("ann").await, app.user("bob").await);
    let pictures = [id(&upload(&app, &ann).await), id(&upload(&app, &ann).await)];
    let (_, post) = post_with(&app, &ann, &pictures).await;
    let (s, report) = app
        .post(
            "/api/v1/reports",
            Some(&bob.token),
            json!({"targetType": "post", "targetId": id(&post), "category": "spam"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{report}");
    // The author deletes it, pictures and all, at once.
    assert_eq!(
        app.delete(&format!("/api/v1/posts/{}", id(&post)), Some(&ann.token))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert!(records_of(&app, ann.uid).await.is_empty());
    let admin = app.admin().await;
    let (s, queue) = app.get("/api/v1/admin/reports", Some(&admin.token)).await;
    assert_eq!(s, StatusCode::OK, "{queue}");
    let kept: Vec<&str> = queue["items"][0]["snapshot"]["pictureUrls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert_eq!(kept.len(), 2, "{queue}");
    for url in kept {
        let b64 = url.strip_prefix("data:image/jpeg;base64,").expect(url);
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let small = image::load_from_memory(&jpeg).unwrap();
        assert_eq!(small.width().max(small.height()), 160);
        assert!(!has_app1(&jpeg));
    }
}

/// Every test above, on each media store.
macro_rules! on_both_media_stores {
    ($($test:ident),* $(,)?) => {
        mod on_files {
            $(#[tokio::test]
            async fn $test() {
                super::$test(super::Store::Files).await
            })*
        }
        mod on_s3 {
            $(#[tokio::test]
            async fn $test() {
                super::$test(super::Store::S3).await
            })*
        }
    };
}

on_both_media_stores!(
    an_upload_is_stored_upright_without_metadata,
    a_post_shows_its_pictures_in_order_wherever_it_appears,
    bad_uploads_are_refused_and_store_nothing,
    a_post_takes_only_its_authors_free_pictures_each_once,
    an_idempotent_retry_publishes_its_pictures_once,
    an_upload_is_described_and_deleted_by_its_owner,
    pictures_go_with_their_post_and_their_account,
    the_sweep_deletes_what_no_post_took_and_frees_what_a_lost_post_took,
    the_quota_and_the_upload_bound_answer_before_any_work,
    an_upload_whose_body_stops_arriving_is_refused_and_frees_its_place,
    a_page_of_nine_picture_posts_costs_no_more_round_trips,
    the_export_carries_each_posts_originals,
    a_reported_posts_pictures_stay_in_its_snapshot_after_it_is_deleted,
);

#[tokio::test]
async fn an_object_store_that_does_not_answer_refuses_uploads_and_posts_still_read() {
    let mut settings = settings_on(Store::S3);
    if let Some(s3) = settings.media.s3.as_mut() {
        s3.endpoint = "http://127.0.0.1:9".into();
    }
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let (s, problem, headers) = upload_parts(
        &app,
        &ann,
        &[file(phone_jpeg(64, 48, 1).unwrap(), "image/jpeg")],
    )
    .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{problem}");
    assert!(headers.contains_key("retry-after"));
    let post = app.text_post(&ann, "still here").await;
    let (s, _) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&ann.token))
        .await;
    assert_eq!(s, StatusCode::OK);
    // What was recorded of the failed upload is the sweep's, not a reader's.
    assert!(records_of(&app, ann.uid)
        .await
        .iter()
        .all(|m| m.state == MediaState::Storing));
}
