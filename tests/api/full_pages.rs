//! A page is short only at the end: every filtered list reads on past what
//! the viewer may not see (Mastodon's empty-home-feed bug, #5398).

use serde_json::{json, Value};

use crate::helpers::{follow, settle, spawn_app, whole_feed, TestApp, User};

async fn post_as(app: &TestApp, who: &User, content: &str, visibility: &str) -> i64 {
    let (s, post) = app
        .post(
            "/api/v1/posts",
            Some(&who.token),
            json!({"category": "TEXT", "content": content, "visibility": visibility}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{post}");
    post["id"].as_i64().unwrap()
}

/// 25 posts for `hidden`, one public, 25 more for `hidden`: the feed.
async fn buried_public_post(app: &TestApp, author: &User, hidden: &str) -> i64 {
    for i in 0..25 {
        post_as(app, author, &format!("early {i}"), hidden).await;
    }
    let public = post_as(app, author, "for everyone", "public").await;
    for i in 0..25 {
        post_as(app, author, &format!("late {i}"), hidden).await;
    }
    public
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect()
}

/// The first page of `path` for `who`, and the live and document round
/// trips it cost.
async fn first_page(app: &TestApp, path: &str, who: &User) -> (Value, (u64, u64)) {
    settle(app).await;
    let before = app.ctx.round_trips.snapshot();
    let (s, page) = app.get(path, Some(&who.token)).await;
    assert_eq!(s.as_u16(), 200, "{page}");
    let after = app.ctx.round_trips.snapshot();
    (page, (after.0 - before.0, after.1 - before.1))
}

#[tokio::test]
async fn a_feed_page_reads_on_past_posts_the_reader_may_not_see() {
    let app = spawn_app().await;
    let reader = app.user("reader").await;
    let author = app.user("writer").await;
    follow(&app, &reader, &author).await;
    // Built before the posts, so they are pushed (or not) one by one.
    assert!(whole_feed(&app, &reader, 20).await.is_empty());
    let public = buried_public_post(&app, &author, "friends").await;
    let (page, _) = first_page(&app, "/api/v1/feed?limit=20", &reader).await;
    assert_eq!(ids(&page), vec![public], "{page}");
    assert!(page["nextCursor"].is_null(), "{page}");
    // Pushed only where visible, the timeline holds just the public post:
    // once warm, the page is the usual two live round trips (the session
    // with the timeline, then the generations that vouch for this
    // instance's copies of the rest).
    let (page, (docs, live)) = first_page(&app, "/api/v1/feed?limit=20", &reader).await;
    assert_eq!(ids(&page), vec![public]);
    assert_eq!((live, docs), (2, 0), "live and document round trips");

    // The same posts rebuilt from the documents (the timeline lost) are all
    // candidates: the page reads on, in a few batched rounds.
    app.lose_live_state().await;
    let (page, (docs, live)) = first_page(&app, "/api/v1/feed?limit=20", &reader).await;
    assert_eq!(ids(&page), vec![public], "{page}");
    assert!(page["nextCursor"].is_null());
    // Two rounds (21 candidates, then the last 30), each a constant number
    // of batched reads: about a dozen per cold round (the session, the
    // reader's relations, the rebuild, one query per kind of miss), never
    // one per post. Where this instance kept copies of the posts and
    // people (`near_cache`), each round first learns they are outdated: a
    // round trip more, each.
    assert!(live <= 16, "{live} live round trips");
    assert!(docs <= 30, "{docs} document round trips");
}

#[tokio::test]
async fn a_feed_page_stays_full_after_an_unfriending_or_a_block() {
    let app = spawn_app().await;
    let reader = app.user("reader2").await;
    let friend = app.user("exfriend").await;
    let other = app.user("bystander").await;
    for (a, b) in [(&reader, &friend), (&friend, &reader), (&reader, &other)] {
        follow(&app, a, b).await;
    }
    assert!(whole_feed(&app, &reader, 20).await.is_empty());
    let old = post_as(&app, &other, "older, public", "public").await;
    for i in 0..30 {
        post_as(&app, &friend, &format!("for friends {i}"), "friends").await;
    }
    settle(&app).await;
    assert_eq!(whole_feed(&app, &reader, 20).await.len(), 31);
    // No longer friends: the pushed posts stay in the reader's timeline,
    // and the page reads past them to the visible one.
    app.delete(
        &format!("/api/v1/users/{}/follow", reader.uid),
        Some(&friend.token),
    )
    .await;
    let (page, _) = first_page(&app, "/api/v1/feed?limit=20", &reader).await;
    assert_eq!(ids(&page), vec![old], "{page}");
    assert!(page["nextCursor"].is_null());

    // A block made after the pushes: the blocked author's posts are gone
    // from every page, which still fill.
    let loud = app.user("loud").await;
    follow(&app, &reader, &loud).await;
    assert!(!whole_feed(&app, &reader, 20).await.is_empty());
    for i in 0..25 {
        post_as(&app, &loud, &format!("loud {i}"), "public").await;
    }
    let fresh = post_as(&app, &other, "newer, public", "public").await;
    settle(&app).await;
    app.put(
        &format!("/api/v1/users/{}/block", reader.uid),
        Some(&loud.token),
    )
    .await;
    let (page, _) = first_page(&app, "/api/v1/feed?limit=1", &reader).await;
    assert_eq!(ids(&page), vec![fresh]);
    assert_eq!(whole_feed(&app, &reader, 1).await, vec![fresh, old]);
}

#[tokio::test]
async fn an_album_page_reads_on_past_posts_the_reader_may_not_see() {
    let app = spawn_app().await;
    let reader = app.user("visitor").await;
    let author = app.user("albumist").await;
    follow(&app, &reader, &author).await;
    let public = buried_public_post(&app, &author, "friends").await;
    let path = format!("/api/v1/users/{}/posts?limit=20", author.uid);
    let (page, _) = first_page(&app, &path, &reader).await;
    assert_eq!(ids(&page), vec![public], "{page}");
    assert!(page["nextCursor"].is_null());
    // The author sees every one, 20 to a page.
    let (page, _) = first_page(&app, &path, &author).await;
    assert_eq!(ids(&page).len(), 20);
    assert!(page["nextCursor"].is_string());
}

#[tokio::test]
async fn a_comment_page_reads_on_past_comments_across_a_block() {
    let app = spawn_app().await;
    let author = app.user("host").await;
    let pest = app.user("pest").await;
    let guest = app.user("guest").await;
    let reader = app.user("reader3").await;
    let post = app.text_post(&author, "discuss").await;
    for i in 0..25 {
        app.comment(&pest, post, &format!("noise {i}"), None).await;
    }
    let kept = app.comment(&guest, post, "worth reading", None).await["id"]
        .as_i64()
        .unwrap();
    for i in 0..25 {
        app.comment(&pest, post, &format!("more noise {i}"), None)
            .await;
    }
    app.put(
        &format!("/api/v1/users/{}/block", pest.uid),
        Some(&reader.token),
    )
    .await;
    let path = format!("/api/v1/posts/{post}/comments?limit=20");
    let (page, _) = first_page(&app, &path, &reader).await;
    assert_eq!(ids(&page), vec![kept], "{page}");
    assert!(page["nextCursor"].is_null());
    // Likes, likewise (the blocked one's the newest).
    for u in [&guest, &pest] {
        app.put(&format!("/api/v1/posts/{post}/like"), Some(&u.token))
            .await;
    }
    let (page, _) = first_page(
        &app,
        &format!("/api/v1/posts/{post}/likes?limit=2"),
        &reader,
    )
    .await;
    let likers: Vec<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["user"]["uid"].as_i64().unwrap())
        .collect();
    assert_eq!(likers, vec![guest.uid], "{page}");
    assert!(page["nextCursor"].is_null());
}

#[tokio::test]
async fn a_warm_feed_page_of_a_hundred_commented_posts_reads_no_documents() {
    let app = spawn_app().await;
    let reader = app.user("reader").await;
    let author = app.user("writer").await;
    let commenter = app.user("talker").await;
    follow(&app, &reader, &author).await;
    assert!(whole_feed(&app, &reader, 20).await.is_empty());
    for i in 0..100 {
        let p = post_as(&app, &author, &format!("post {i}"), "public").await;
        app.comment(&commenter, p, "hi", None).await;
    }
    // As a reader does: the whole page, then the top of it again, then the
    // whole page: what the first read rebuilt serves the third.
    let path = "/api/v1/feed?limit=100";
    first_page(&app, path, &reader).await;
    let (_, (docs, live)) = first_page(&app, "/api/v1/feed?limit=20", &reader).await;
    assert_eq!(
        (live, docs),
        (2, 0),
        "the top 20: live and document round trips"
    );
    let (page, (docs, live)) = first_page(&app, path, &reader).await;
    assert_eq!(ids(&page).len(), 100);
    assert_eq!((live, docs), (2, 0), "live and document round trips");
}
