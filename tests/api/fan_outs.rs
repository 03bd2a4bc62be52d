//! Unfinished fan-outs: saved by a stopping instance, claimed by one
//! instance at a time, resumed from where they got to until every
//! follower's timeline has the post. On both backends: the in-process live
//! state outlives an app here as Redis outlives a process, so on either a
//! push that never happened is a post missing from a timeline that exists.

use std::time::Duration;

use moments::domain::post::{Category, Visibility};
use moments::ids::{next_id, now_ms};
use moments::startup::connect_stores;
use moments::store::{FanOutDoc, PostDoc};

use crate::helpers::{follow, spawn_app, test_settings, whole_feed, TestApp, User};

const DAY_MS: i64 = 24 * 3600 * 1000;

fn fan_out(post_id: i64, author: i64, resume_before: Option<i64>) -> FanOutDoc {
    FanOutDoc {
        post_id,
        author,
        visibility: Visibility::Public,
        active_since: now_ms() - DAY_MS,
        resume_before,
        saved_at: now_ms(),
        claimed_until: 0,
    }
}

/// Waits (at most 10 s) until the viewer's feed holds `post`.
async fn feed_gets(app: &TestApp, viewer: &User, post: i64) -> bool {
    for _ in 0..200 {
        if whole_feed(app, viewer, 50).await.contains(&post) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// An author and followers whose timelines exist (each read once) and so
/// get new posts only by being pushed them.
async fn author_and_followers(app: &TestApp, n: usize) -> (User, Vec<User>) {
    let author = app.user("saved_author").await;
    let mut followers = Vec::new();
    for i in 0..n {
        let f = app.user(&format!("saved_fan{i}")).await;
        follow(app, &f, &author).await;
        assert_eq!(whole_feed(app, &f, 10).await, Vec::<i64>::new());
        followers.push(f);
    }
    (author, followers)
}

#[tokio::test]
async fn a_saved_fan_out_is_claimed_by_one_caller_at_a_time() {
    let settings = test_settings();
    // The ports alone: an app's own sweep would claim what is saved here.
    let (docs, _) = connect_stores(&settings).await.unwrap();
    docs.apply_schemas().await.unwrap();
    let (post, author) = (next_id(), next_id());
    docs.save_fan_out(&fan_out(post, author, Some(42)))
        .await
        .unwrap();
    let now = now_ms();
    let (a, b) = tokio::join!(
        docs.claim_fan_outs(now, now + 1000, 10),
        docs.claim_fan_outs(now, now + 1000, 10)
    );
    let claimed: Vec<FanOutDoc> = a.unwrap().into_iter().chain(b.unwrap()).collect();
    assert_eq!(claimed.len(), 1, "two sweeps at once: one gets it");
    assert_eq!(claimed[0].post_id, post);
    assert_eq!(claimed[0].author, author);
    assert_eq!(claimed[0].resume_before, Some(42));
    assert_eq!(claimed[0].claimed_until, now + 1000);
    assert!(
        docs.claim_fan_outs(now + 999, now + 2000, 10)
            .await
            .unwrap()
            .is_empty(),
        "held while its claim lasts"
    );
    let again = docs
        .claim_fan_outs(now + 1001, now + 3000, 10)
        .await
        .unwrap();
    assert_eq!(
        again.len(),
        1,
        "a lapsed claim (its instance died) is taken again"
    );

    // A stopping instance saves how far it got, which releases the claim.
    docs.save_fan_out(&fan_out(post, author, Some(7)))
        .await
        .unwrap();
    let resumed = docs
        .claim_fan_outs(now + 1001, now + 4000, 10)
        .await
        .unwrap();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].resume_before, Some(7));

    docs.delete_fan_out(post).await.unwrap();
    assert!(docs
        .claim_fan_outs(i64::MAX / 2, i64::MAX / 2, 10)
        .await
        .unwrap()
        .is_empty());
    docs.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&settings.data_dir);
}

#[tokio::test]
async fn a_saved_fan_out_is_resumed_from_where_it_got_to() {
    let app = spawn_app().await;
    let (author, followers) = author_and_followers(&app, 4).await;
    let post = PostDoc {
        id: next_id(),
        author_uid: author.uid,
        category: Category::Text,
        content: "published just before the instance stopped".into(),
        picture_urls: vec![],
        device: String::new(),
        geo: None,
        visibility: Visibility::Public,
        createtime: now_ms(),
        comments_postid: vec![],
        likes_postid: vec![],
        deleted: false,
    };
    app.ctx.docs.insert_post(&post).await.unwrap();
    // Newest follow first, the order a fan-out pages in: the instance got
    // as far as the two newest followers, and left the two oldest.
    let edges = app
        .ctx
        .docs
        .followers_page(author.uid, None, 10)
        .await
        .unwrap();
    assert_eq!(edges[1].follower, followers[2].uid);
    app.ctx
        .docs
        .save_fan_out(&fan_out(post.id, author.uid, Some(edges[1].id)))
        .await
        .unwrap();

    // This instance's sweep may have claimed it first: either way it runs.
    moments::service::fan_outs::resume_saved(&app.ctx)
        .await
        .unwrap();
    for f in &followers[..2] {
        assert!(
            feed_gets(&app, f, post.id).await,
            "a follower the fan-out had not reached yet lacks the post"
        );
    }
    // The two it had reached were not pushed again (here, where they never
    // were pushed, their timelines show it).
    for f in &followers[2..] {
        assert!(!whole_feed(&app, f, 50).await.contains(&post.id));
    }
    let now = now_ms();
    assert!(
        app.ctx
            .docs
            .claim_fan_outs(now + 2 * DAY_MS, now + 3 * DAY_MS, 10)
            .await
            .unwrap()
            .is_empty(),
        "a fan-out that ran to its end is forgotten"
    );
}
