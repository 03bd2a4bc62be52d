//! Home timelines: push, pull, rebuild, history, and what follows and
//! unfollows do to them.

use serde_json::json;

use crate::helpers::{
    follow, spawn_app, spawn_app_with, test_settings, wait_until, whole_feed, TestApp, User,
};

/// The feed once the background fan-out of what was just published has
/// landed: publishing does not wait for it, so a reader may see a new post a
/// moment later. Gives up (and shows the last answer) after 10 s.
async fn feed_becomes(app: &TestApp, viewer: &User, limit: usize, expected: &[i64]) -> Vec<i64> {
    let mut last = Vec::new();
    for _ in 0..200 {
        last = whole_feed(app, viewer, limit).await;
        if last == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    last
}

#[tokio::test]
async fn the_feed_has_own_and_followed_posts_newest_first() {
    let app = spawn_app().await;
    let me = app.user("reader").await;
    let friend = app.user("poster").await;
    let stranger = app.user("nobody").await;
    follow(&app, &me, &friend).await;
    // The first read builds the timeline; later posts are pushed into it.
    assert_eq!(whole_feed(&app, &me, 20).await, Vec::<i64>::new());
    let a = app.text_post(&friend, "one").await;
    let b = app.text_post(&me, "mine").await;
    app.text_post(&stranger, "not followed").await;
    let c = app.text_post(&friend, "two").await;
    assert_eq!(feed_becomes(&app, &me, 20, &[c, b, a]).await, vec![c, b, a]);
    let (_, page) = app.get("/api/v1/feed", Some(&me.token)).await;
    assert_eq!(
        page["items"][0]["author"]["uid"], friend.uid,
        "items are expanded posts"
    );
    assert_eq!(page["items"][0]["content"], "two");
    assert!(app.get("/api/v1/feed", None).await.0.as_u16() == 401);
}

#[tokio::test]
async fn a_returning_user_gets_a_full_first_page_in_one_request() {
    let app = spawn_app().await;
    let me = app.user("returner").await;
    let mut authors = Vec::new();
    for i in 0..5 {
        let u = app.user(&format!("busy{i}")).await;
        follow(&app, &me, &u).await;
        authors.push(u);
    }
    // Away for a month: not pushed to.
    let month_ago = moments::ids::now_ms() - 30 * 24 * 3600 * 1000;
    app.ctx.docs.touch_user(me.uid, month_ago).await.unwrap();
    let mut made = Vec::new();
    for round in 0..6 {
        for a in &authors {
            made.push(app.text_post(a, &format!("r{round}")).await);
        }
    }
    let post = made[0];
    let pushed = moments::service::feed::fan_out::fan_out(
        &app.ctx,
        post,
        authors[0].uid,
        moments::domain::post::Visibility::Public,
    )
    .await
    .unwrap();
    assert_eq!(
        pushed, 1,
        "only the author's own timeline: the follower was away"
    );
    let (s, page) = app.get("/api/v1/feed?limit=20", Some(&me.token)).await;
    assert_eq!(s.as_u16(), 200);
    let ids: Vec<i64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    made.reverse();
    assert_eq!(
        ids,
        made[..20].to_vec(),
        "a full first page, newest first, at once"
    );
}

#[tokio::test]
async fn big_accounts_are_pulled_not_pushed_and_merged_in_order() {
    let mut settings = test_settings();
    settings.pulled_author_followers = 2;
    let app = spawn_app_with(settings).await;
    let star = app.user("star").await;
    let small = app.user("small").await;
    let fans: Vec<User> =
        futures_util::future::join_all((0..3).map(|i| app.user_owned(format!("fan{i}")))).await;
    for f in &fans {
        follow(&app, f, &star).await;
    }
    follow(&app, &fans[0], &small).await;
    assert_eq!(whole_feed(&app, &fans[0], 10).await, Vec::<i64>::new());
    let s1 = app.text_post(&star, "s1").await;
    let m1 = app.text_post(&small, "m1").await;
    let s2 = app.text_post(&star, "s2").await;
    assert_eq!(
        feed_becomes(&app, &fans[0], 2, &[s2, m1, s1]).await,
        vec![s2, m1, s1]
    );
    let pushed = moments::service::feed::fan_out::fan_out(
        &app.ctx,
        s2,
        star.uid,
        moments::domain::post::Visibility::Public,
    )
    .await
    .unwrap();
    assert_eq!(
        pushed, 1,
        "three followers is over the threshold of two: no push"
    );
    assert_eq!(whole_feed(&app, &fans[0], 2).await, vec![s2, m1, s1]);
    assert_eq!(whole_feed(&app, &fans[1], 10).await, vec![s2, s1]);
}

#[tokio::test]
async fn paging_past_the_trimmed_window_goes_on_from_the_documents() {
    let mut settings = test_settings();
    settings.timeline_max = 5;
    let app = spawn_app_with(settings).await;
    let me = app.user("scroller").await;
    let author = app.user("prolific").await;
    follow(&app, &me, &author).await;
    whole_feed(&app, &me, 20).await;
    let mut made = Vec::new();
    for i in 0..12 {
        made.push(app.text_post(&author, &format!("p{i}")).await);
    }
    made.reverse();
    assert_eq!(
        feed_becomes(&app, &me, 4, &made).await,
        made,
        "history is never lost"
    );
    // And after the live state is gone, the rebuilt timeline pages the same.
    app.lose_live_state().await;
    assert_eq!(whole_feed(&app, &me, 3).await, made);
}

#[tokio::test]
async fn following_merges_in_and_unfollowing_or_blocking_takes_out_at_once() {
    let app = spawn_app().await;
    let me = app.user("chooser").await;
    let a = app.user("alpha").await;
    let b = app.user("beta").await;
    let pa = app.text_post(&a, "from a").await;
    let pb = app.text_post(&b, "from b").await;
    assert_eq!(whole_feed(&app, &me, 20).await, Vec::<i64>::new());
    follow(&app, &me, &a).await;
    assert_eq!(whole_feed(&app, &me, 20).await, vec![pa]);
    follow(&app, &me, &b).await;
    assert_eq!(whole_feed(&app, &me, 20).await, vec![pb, pa]);
    app.delete(&format!("/api/v1/users/{}/follow", a.uid), Some(&me.token))
        .await;
    assert_eq!(whole_feed(&app, &me, 20).await, vec![pb]);
    app.put(&format!("/api/v1/users/{}/block", me.uid), Some(&b.token))
        .await;
    assert_eq!(whole_feed(&app, &me, 20).await, Vec::<i64>::new());
    // A deleted post leaves every timeline at once.
    follow(&app, &me, &a).await;
    app.delete(&format!("/api/v1/posts/{pa}"), Some(&a.token))
        .await;
    assert_eq!(whole_feed(&app, &me, 20).await, Vec::<i64>::new());
}

#[tokio::test]
async fn concurrent_publishes_reach_each_timeline_once() {
    let app = spawn_app().await;
    let me = app.user("watcher").await;
    let mut authors = Vec::new();
    for i in 0..4 {
        let u = app.user(&format!("writer{i}")).await;
        follow(&app, &me, &u).await;
        authors.push(u);
    }
    whole_feed(&app, &me, 20).await;
    let app_ref = &app;
    let publishes = authors.iter().flat_map(|a| {
        (0..5).map(move |i| {
            app_ref.post(
                "/api/v1/posts",
                Some(&a.token),
                json!({"category": "TEXT", "content": format!("burst {i}")}),
            )
        })
    });
    let results = futures_util::future::join_all(publishes).await;
    let mut made: Vec<i64> = results
        .iter()
        .map(|(_, p)| p["id"].as_i64().unwrap())
        .collect();
    made.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(feed_becomes(&app, &me, 7, &made).await, made);
    // A retried push changes nothing.
    for p in &made {
        let author = results.iter().find(|(_, x)| x["id"] == *p).unwrap().1["author"]["uid"]
            .as_i64()
            .unwrap();
        moments::service::feed::fan_out::fan_out(
            &app.ctx,
            *p,
            author,
            moments::domain::post::Visibility::Public,
        )
        .await
        .unwrap();
    }
    assert_eq!(whole_feed(&app, &me, 7).await, made);
}

#[tokio::test]
async fn a_push_onto_a_timeline_never_built_does_not_hide_older_posts() {
    let app = spawn_app().await;
    let me = app.user("newcomer").await;
    let author = app.user("veteran").await;
    let old = app.text_post(&author, "before you came").await;
    follow(&app, &me, &author).await;
    // Pushed to while the follower's timeline does not exist yet.
    let new = app.text_post(&author, "after").await;
    moments::service::feed::fan_out::fan_out(
        &app.ctx,
        new,
        author.uid,
        moments::domain::post::Visibility::Public,
    )
    .await
    .unwrap();
    assert_eq!(whole_feed(&app, &me, 10).await, vec![new, old]);
}

#[tokio::test]
async fn fan_out_reads_followers_page_by_page_and_skips_the_inactive() {
    let app = spawn_app().await;
    let author = app.user("paged").await;
    let month_ago = moments::ids::now_ms() - 30 * 24 * 3600 * 1000;
    let mut active = Vec::new();
    for i in 0..7 {
        let fan = app.user(&format!("fan{i}")).await;
        follow(&app, &fan, &author).await;
        if i % 3 == 1 {
            app.ctx.docs.touch_user(fan.uid, month_ago).await.unwrap();
        } else {
            active.push(fan.uid);
        }
    }
    let since = moments::ids::now_ms() - 7 * 24 * 3600 * 1000;
    let (mut seen, mut before, mut pages) = (Vec::new(), None, 0);
    loop {
        let (page, next) = app
            .ctx
            .docs
            .active_followers(author.uid, since, before, 2)
            .await
            .unwrap();
        assert!(page.len() <= 2, "a page holds at most its limit: {page:?}");
        seen.extend(page);
        pages += 1;
        match next {
            Some(edge) => before = Some(edge),
            None => break,
        }
        assert!(pages < 10, "paging must end");
    }
    // Seven follows in pages of two: 2, 2, 2, 1, and the short one ends it.
    assert_eq!(pages, 4);
    seen.sort_unstable();
    active.sort_unstable();
    assert_eq!(seen, active, "every active follower once, no inactive one");
}

#[tokio::test]
async fn a_warm_feed_pulling_an_author_reads_no_documents_and_shows_its_new_posts_at_once() {
    let mut settings = test_settings();
    settings.pulled_author_followers = 1;
    let app = spawn_app_with(settings).await;
    let star = app.user("bigstar").await;
    let fan = app.user("bigfan").await;
    let other = app.user("otherfan").await;
    follow(&app, &fan, &star).await;
    follow(&app, &other, &star).await;
    let s1 = app.text_post(&star, "s1").await;
    // Rebuilt; then read from the built timeline, which pulls the star.
    assert_eq!(whole_feed(&app, &fan, 20).await, vec![s1]);
    // Until what the first reads rebuilt (the timeline, the session, the
    // star's posts) is written back, a read still reaches the documents.
    wait_until("a fan's read of the feed reaches no document", || async {
        let before = app.ctx.round_trips.snapshot();
        assert_eq!(whole_feed(&app, &fan, 20).await, vec![s1]);
        app.ctx.fan_outs.running() == 0 && app.ctx.round_trips.snapshot().0 == before.0
    })
    .await;

    let before = app.ctx.round_trips.snapshot();
    assert_eq!(whole_feed(&app, &fan, 20).await, vec![s1]);
    let after = app.ctx.round_trips.snapshot();
    assert_eq!(
        after.0 - before.0,
        0,
        "a warm page pulls the pulled author's posts without reading documents"
    );
    assert!(
        after.1 - before.1 <= 4,
        "{} live round trips",
        after.1 - before.1
    );

    // Never pushed (two followers is over the threshold of one), so only the
    // pull can show it: at once on the instance that published it.
    let s2 = app.text_post(&star, "s2").await;
    assert_eq!(whole_feed(&app, &fan, 20).await, vec![s2, s1]);
    assert_eq!(whole_feed(&app, &other, 1).await, vec![s2, s1]);
}

#[tokio::test]
async fn fan_out_in_pages_reaches_every_built_timeline_once() {
    let app = spawn_app().await;
    let author = app.user("pager").await;
    let mut fans = Vec::new();
    for i in 0..6 {
        let fan = app.user(&format!("pagedfan{i}")).await;
        follow(&app, &fan, &author).await;
        assert_eq!(whole_feed(&app, &fan, 20).await, Vec::<i64>::new());
        fans.push(fan);
    }
    // Stored without the publish path's own fan-out, then fanned out two
    // followers at a time: three full pages, then an empty one.
    let id = moments::ids::next_id();
    app.ctx
        .docs
        .insert_post(&moments::store::PostDoc::text(
            id,
            author.uid,
            "paged",
            moments::ids::timestamp_of(id),
        ))
        .await
        .unwrap();
    let pushed = moments::service::feed::fan_out::fan_out_in_pages(
        &app.ctx,
        id,
        author.uid,
        moments::domain::post::Visibility::Public,
        2,
    )
    .await
    .unwrap();
    assert_eq!(pushed, 1 + 6, "the author and six followers");
    for fan in &fans {
        assert_eq!(
            whole_feed(&app, fan, 20).await,
            vec![id],
            "only the push can have put it in a built timeline"
        );
    }
}
