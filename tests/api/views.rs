//! Views (浏览): one per signed-in reader, post and day, never the author's
//! own; written in batches; listed in the reader's history.

use serde_json::json;

use crate::helpers::{every_item, ids, spawn_app, spawn_app_with, test_settings, TestApp, User};

async fn view_count(app: &TestApp, post: i64, reader: Option<&User>) -> u64 {
    let (s, p) = app
        .get(
            &format!("/api/v1/posts/{post}"),
            reader.map(|r| r.token.as_str()),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{p}");
    p["viewCount"].as_u64().unwrap()
}

async fn listed(app: &TestApp, who: &User) -> Vec<i64> {
    ids(&every_item(app, "/api/v1/me/history", Some(&who.token), 2).await)
}

async fn flush(app: &TestApp) -> usize {
    app.ctx.post_views.flush(&app.ctx).await.unwrap()
}

#[tokio::test]
async fn views_count_once_per_reader_and_day_and_never_the_authors() {
    // No flush but this test's own: the background one (its first tick is
    // at start-up, the next an hour on) cannot write the views before the
    // reads below have seen that none is written.
    let mut settings = test_settings();
    settings.view_flush_ms = 3_600_000;
    let app = spawn_app_with(settings).await;
    let author = app.user("viewedauthor").await;
    let a = app.user("viewera").await;
    let b = app.user("viewerb").await;
    let post = app.text_post(&author, "look").await;
    for reader in [Some(&a), Some(&a), Some(&b), Some(&author), None] {
        assert_eq!(view_count(&app, post, reader).await, 0, "not written yet");
    }
    // Reading counts nothing in the documents until the flush.
    assert_eq!(
        app.ctx.docs.view_counts(&[post]).await.unwrap(),
        vec![(post, 0)]
    );
    assert_eq!(flush(&app).await, 2, "a and b, once each");
    assert_eq!(
        app.ctx.docs.view_counts(&[post]).await.unwrap(),
        vec![(post, 2)]
    );
    assert_eq!(view_count(&app, post, None).await, 2);
    // The same readers the same day, after the flush: refused by the
    // documents, counted once.
    view_count(&app, post, Some(&a)).await;
    assert_eq!(flush(&app).await, 0);
    assert_eq!(view_count(&app, post, Some(&b)).await, 2);
    assert_eq!(flush(&app).await, 0);
    // Losing the live state loses no view: counts are documents.
    app.lose_live_state().await;
    assert_eq!(view_count(&app, post, None).await, 2);
    let (_, feed) = app.get("/api/v1/feed", Some(&author.token)).await;
    assert_eq!(feed["items"][0]["viewCount"], 2);
}

#[tokio::test]
async fn the_history_lists_what_i_viewed_and_may_still_see() {
    let app = spawn_app().await;
    let author = app.user("historyauthor").await;
    let me = app.user("historyreader").await;
    let first = app.text_post(&author, "first").await;
    let second = app.text_post(&author, "second").await;
    let third = app.text_post(&author, "third").await;
    for post in [first, third, second] {
        view_count(&app, post, Some(&me)).await;
        // One flush per view, so that their order is their ids' order.
        flush(&app).await;
    }
    assert_eq!(listed(&app, &me).await, vec![second, third, first]);
    // The author's reads are not views: counted nowhere, listed nowhere.
    assert_eq!(view_count(&app, first, Some(&author)).await, 1);
    flush(&app).await;
    assert_eq!(
        app.ctx.docs.view_counts(&[first]).await.unwrap(),
        vec![(first, 1)],
        "the author's read moved the count"
    );
    assert_eq!(view_count(&app, first, Some(&author)).await, 1);
    assert!(
        listed(&app, &author).await.is_empty(),
        "the author's reads are not views"
    );
    // A post I may no longer see drops out: deleted, or hidden from me.
    let (s, _) = app
        .delete(&format!("/api/v1/posts/{third}"), Some(&author.token))
        .await;
    assert_eq!(s.as_u16(), 204);
    assert_eq!(listed(&app, &me).await, vec![second, first]);
    // Only a follower can be hidden from.
    crate::helpers::follow(&app, &me, &author).await;
    let (s, r) = app
        .put(
            &format!("/api/v1/users/{}/hide", me.uid),
            Some(&author.token),
        )
        .await;
    assert_eq!((s.as_u16(), r), (200, json!({"hidden": true})));
    assert!(listed(&app, &me).await.is_empty());
}

/// A flush that failed, however far it got, is written again by the next
/// one as the same batch: every view counted once, none lost, none twice.
#[tokio::test]
async fn a_flush_that_failed_part_way_counts_each_view_once() {
    use moments::store::faults::Fault;
    let mut settings = test_settings();
    settings.view_flush_ms = 3_600_000;
    let app = spawn_app_with(settings).await;
    let author = app.user("flushauthor").await;
    let readers = [
        app.user("flushreader1").await,
        app.user("flushreader2").await,
        app.user("flushreader3").await,
    ];
    let post = app.text_post(&author, "counted once").await;
    let count = || async { app.ctx.docs.view_counts(&[post]).await.unwrap()[0].1 };
    // Stored and counted, but the answer lost: the flush fails.
    view_count(&app, post, Some(&readers[0])).await;
    app.ctx
        .faults
        .inject("ViewDocs", "record_views", Fault::FailAfter, 1);
    assert!(app.ctx.post_views.flush(&app.ctx).await.is_err());
    // A view made meanwhile waits for a batch of its own.
    view_count(&app, post, Some(&readers[1])).await;
    assert_eq!(flush(&app).await, 2, "the batch again, then the new view");
    assert_eq!(count().await, 2);
    // Refused before anything was written: the next flush writes it all.
    view_count(&app, post, Some(&readers[2])).await;
    app.ctx
        .faults
        .inject("ViewDocs", "record_views", Fault::Fail, 1);
    assert!(app.ctx.post_views.flush(&app.ctx).await.is_err());
    assert_eq!(flush(&app).await, 1);
    assert_eq!(count().await, 3);
    assert_eq!(app.ctx.post_views.waiting(), 0);
    assert_eq!(view_count(&app, post, None).await, 3);
}
