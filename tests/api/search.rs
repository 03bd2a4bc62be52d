//! Search through the API: Chinese and English words, newest first, pages
//! that fill past what a reader may not see, and the visibility rules on
//! every hit (friends-only, blocks, deletes).

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{
    assert_problem, follow, ids, spawn_app_with, test_settings, wait_until, TestApp, User,
};

fn encoded(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn search(app: &TestApp, who: &User, q: &str, extra: &str) -> (StatusCode, Value) {
    app.get(
        &format!("/api/v1/search?q={}{extra}", encoded(q)),
        Some(&who.token),
    )
    .await
}

/// The ids `who` finds for `q` on its first page.
async fn found(app: &TestApp, who: &User, q: &str) -> Vec<i64> {
    let (s, page) = search(app, who, q, "").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    ids(page["items"].as_array().unwrap())
}

/// Waits until the indexer has caught up with `post` (its author finds
/// it by `q`): indexing follows the documents a moment after the write.
async fn indexed(app: &TestApp, author: &User, q: &str, post: i64) {
    wait_until(&format!("post {post} indexed under {q}"), || async {
        found(app, author, q).await.contains(&post)
    })
    .await;
}

/// The ids the index itself holds under `word` among `author`'s posts,
/// asked past the rules: what only the indexer changes.
async fn in_index(app: &TestApp, author: &User, word: &str) -> Vec<i64> {
    let asking = moments::store::search::PostSearch {
        terms: vec![word.into()],
        circle: vec![author.uid],
        limit: 10,
        ..Default::default()
    };
    let index = app.ctx.search.index().unwrap();
    let hits = index.search_posts(&asking).await.unwrap();
    hits.iter().map(|h| h.id).collect()
}

/// Settings whose search budget the waits for the indexer cannot spend.
fn settings() -> moments::config::Settings {
    let mut settings = test_settings();
    if let Some(limits) = settings.rate_limits.as_mut() {
        limits.searches = moments::config::Rate::new(100_000, 60);
    }
    settings
}

async fn app() -> TestApp {
    spawn_app_with(settings()).await
}

#[tokio::test]
async fn posts_are_found_by_their_chinese_and_english_words() {
    let app = app().await;
    let ann = app.user("ann").await;
    let bob = app.user("bob").await;
    let lake = app.text_post(&ann, "我们今天去西湖划船").await;
    let run = app
        .text_post(&ann, "Running by the West Lake at sunset 🌅")
        .await;
    let autumn = app.text_post(&ann, "北京的秋天，天高云淡").await;
    let written = app.text_post(&ann, "週末和朋友們去頤和園劃船").await;
    indexed(&app, &ann, "秋天", autumn).await;
    indexed(&app, &ann, "颐和园", written).await;

    // Anyone finds public posts, by the words inside a sentence.
    assert_eq!(found(&app, &bob, "西湖").await, [lake]);
    assert_eq!(found(&app, &bob, "划船").await, [written, lake]);
    assert_eq!(found(&app, &bob, "SUNSETS").await, [run]);
    assert_eq!(found(&app, &bob, "lake run").await, [run]);
    assert_eq!(found(&app, &bob, "北京 秋天").await, [autumn]);
    assert!(found(&app, &bob, "上海").await.is_empty());
    assert!(found(&app, &bob, "lake 上海").await.is_empty());
    // Traditional characters and simplified ones find each other.
    assert_eq!(found(&app, &bob, "劃船").await, [written, lake]);
    assert_eq!(found(&app, &bob, "朋友們").await, [written]);

    // The expanded post, as a feed shows it, and where the words matched.
    let (_, page) = search(&app, &bob, "西湖", "&lang=en").await;
    assert_eq!(page["items"][0]["content"], "我们今天去西湖划船");
    assert_eq!(page["items"][0]["author"]["uid"], ann.uid);
    assert!(page["items"][0]["createtimeText"].is_string(), "{page}");
    assert_eq!(page["marks"][lake.to_string()], json!([[5, 7]]));
    let (_, page) = search(&app, &bob, "running sunset", "").await;
    assert_eq!(page["marks"][run.to_string()], json!([[0, 7], [28, 34]]));
}

#[tokio::test]
async fn a_reader_finds_only_what_the_rules_let_them_read() {
    let app = app().await;
    let ann = app.user("ann").await;
    let friend = app.user("friend").await;
    let follower = app.user("follower").await;
    let stranger = app.user("stranger").await;
    follow(&app, &ann, &friend).await;
    follow(&app, &friend, &ann).await;
    follow(&app, &follower, &ann).await;
    let secret = app.post_with(
        &ann,
        json!({"category": "TEXT", "content": "秘密基地 secret hideout", "visibility": "friends"}),
    )
    .await;
    let open = app.text_post(&ann, "an open hideout").await;
    // Indexed in id order: once the newer is found, the older is too.
    indexed(&app, &ann, "hideout", open).await;
    assert_eq!(found(&app, &ann, "hideout").await, [open, secret]);
    assert_eq!(found(&app, &friend, "hideout").await, [open, secret]);
    assert_eq!(found(&app, &follower, "hideout").await, [open]);
    assert_eq!(found(&app, &stranger, "hideout").await, [open]);
    assert!(found(&app, &stranger, "秘密基地").await.is_empty());

    // A block either way: the blocked finds nothing of the blocker.
    let (s, _) = app
        .put(
            &format!("/api/v1/users/{}/block", follower.uid),
            Some(&ann.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(found(&app, &follower, "hideout").await.is_empty());
    assert_eq!(found(&app, &stranger, "hideout").await, [open]);

    // A deleted post is gone from the next search.
    assert_eq!(
        app.delete(&format!("/api/v1/posts/{open}"), Some(&ann.token))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert!(found(&app, &stranger, "hideout").await.is_empty());
    assert_eq!(found(&app, &friend, "hideout").await, [secret]);
}

#[tokio::test]
async fn a_page_is_filled_past_the_hits_a_reader_may_not_see() {
    let app = app().await;
    let ann = app.user("ann").await;
    let follower = app.user("follower").await;
    follow(&app, &follower, &ann).await;
    let public = app.text_post(&ann, "needle in the open").await;
    let mut last = 0;
    for i in 0..24 {
        last = app.post_with(
            &ann,
            json!({"category": "TEXT", "content": format!("needle {i} for friends"), "visibility": "friends"}),
        )
        .await;
    }
    indexed(&app, &ann, "needle", last).await;
    // The follower's circle holds ann, so all 25 are hits; 24 are not
    // theirs to read, and the page still reaches the one that is.
    let (s, page) = search(&app, &follower, "needle", "&limit=5").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["id"], public, "{page}");
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["nextCursor"], Value::Null, "a short page is the last");

    // A cursor never points past a hit the reader may not read (its id
    // would tell when a hidden post holding the words was written): after
    // a full page it names the last post shown.
    let hidden = app
        .post_with(
            &ann,
            json!({"category": "TEXT", "content": "a private thimble", "visibility": "private"}),
        )
        .await;
    let own = app.text_post(&follower, "my own thimble").await;
    indexed(&app, &follower, "thimble", own).await;
    assert!(own > hidden);
    let (_, page) = search(&app, &follower, "thimble", "&limit=1").await;
    assert_eq!(page["items"][0]["id"], own, "{page}");
    assert_eq!(
        page["nextCursor"],
        moments::domain::cursor::Cursor::encode(own),
        "{page}"
    );
    let cursor = page["nextCursor"].as_str().unwrap().to_string();
    let (_, next) = search(
        &app,
        &follower,
        "thimble",
        &format!("&limit=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(next["items"], json!([]), "{next}");
    assert_eq!(next["nextCursor"], Value::Null);

    // Pages of public hits, newest first, each once.
    let mut posted = Vec::new();
    for i in 0..7 {
        posted.push(app.text_post(&ann, &format!("haystack {i}")).await);
    }
    indexed(&app, &ann, "haystack", *posted.last().unwrap()).await;
    let mut seen = Vec::new();
    let mut cursor = String::new();
    for _ in 0..5 {
        let (s, page) = search(
            &app,
            &follower,
            "haystack",
            &format!("&limit=3&cursor={cursor}"),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{page}");
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|p| p["id"].as_i64().unwrap()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    posted.reverse();
    assert_eq!(seen, posted);
}

#[tokio::test]
async fn filters_narrow_by_author_day_and_pictures() {
    let app = app().await;
    let ann = app.user("ann").await;
    let bob = app.user("bob").await;
    let anns = app.text_post(&ann, "coffee with friends").await;
    let bobs = app.text_post(&bob, "coffee alone").await;
    indexed(&app, &bob, "coffee", bobs).await;
    assert_eq!(found(&app, &bob, "coffee from:ann").await, [anns]);
    assert_eq!(found(&app, &bob, "from:@bob").await, [bobs]);
    assert!(found(&app, &bob, "coffee from:nobody_here")
        .await
        .is_empty());
    let today = moments::domain::calendar::civil_date(moments::ids::now_ms());
    let today = format!("{:04}-{:02}-{:02}", today.0, today.1, today.2);
    assert_eq!(
        found(&app, &bob, &format!("coffee since:{today}")).await,
        [bobs, anns]
    );
    assert!(found(&app, &bob, "coffee until:2025-01-01")
        .await
        .is_empty());
    assert!(found(&app, &bob, "coffee has:media").await.is_empty());
}

#[tokio::test]
async fn a_search_that_asks_too_much_or_nothing_is_refused() {
    let mut settings = test_settings();
    if let Some(limits) = settings.rate_limits.as_mut() {
        limits.searches = moments::config::Rate::new(12, 60);
    }
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let long = "字".repeat(201);
    let many = (0..13)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    for bad in ["", &long] {
        assert_problem(&search(&app, &ann, bad, "").await, 400, "invalid_input");
    }
    for unclear in ["   ", "🎉", &many, "x since:2026-13-01", "x has:links"] {
        let (s, p) = search(&app, &ann, unclear, "").await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{unclear:?}: {p}");
    }
    assert_problem(
        &search(&app, &ann, "x", "&type=places").await,
        400,
        "invalid_input",
    );
    assert_problem(
        &search(&app, &ann, "x", "&limit=101").await,
        400,
        "invalid_input",
    );
    let (s, _) = app.get("/api/v1/search?q=x", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // The budget: searches past it answer 429 with when to try again.
    let mut refused = None;
    for _ in 0..13 {
        let (s, body) = search(&app, &ann, "x", "").await;
        if s == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(body);
            break;
        }
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    let refused = refused.expect("the 13th search of a budget of 12 is refused");
    assert_eq!(refused["status"], 429, "{refused}");
}

/// `who`'s first page of people for `prefix`, as (uid, nickName).
async fn people(app: &TestApp, who: &User, prefix: &str) -> Vec<(i64, String)> {
    let (s, page) = app
        .get(
            &format!("/api/v1/search/users?prefix={}", encoded(prefix)),
            Some(&who.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["uid"].as_i64().unwrap(),
                c["nickName"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn set_profile(app: &TestApp, who: &User, patch: Value) {
    let (s, me) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&who.token),
            Some(patch),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{me}");
}

fn uids(found: &[(i64, String)]) -> Vec<i64> {
    found.iter().map(|(u, _)| *u).collect()
}

#[tokio::test]
async fn people_are_found_by_the_start_of_a_username_or_nickname() {
    let app = app().await;
    let me = app.user_nicknamed("reader", "读者").await;
    let san = app.user_nicknamed("zhangsan", "张三").await;
    let wei = app.user_nicknamed("zhangwei", "Zhang Wei").await;
    let zoe = app.user_nicknamed("zoe_w", "Zoë Wang").await;
    let li = app.user_nicknamed("lisi", "李四").await;
    let liu = app.user_nicknamed("andy_lau", "劉德華").await;

    // In the order of the name that matched ("zhang wei" before
    // "zhangsan"); an account both of whose names match shows once.
    assert_eq!(
        uids(&people(&app, &me, "zhang").await),
        vec![wei.uid, san.uid]
    );
    assert_eq!(uids(&people(&app, &me, "ZHANGS").await), vec![san.uid]);
    // By nickname: Chinese, accents and full-width forms folded, spaces
    // kept as one.
    assert_eq!(
        people(&app, &me, "张").await,
        vec![(san.uid, "张三".to_string())]
    );
    assert_eq!(uids(&people(&app, &me, "zhang  w").await), vec![wei.uid]);
    assert_eq!(
        uids(&people(&app, &me, "ＺＨＡＮＧ ＷＥＩ").await),
        vec![wei.uid]
    );
    assert_eq!(uids(&people(&app, &me, "zoe").await), vec![zoe.uid]);
    // Traditional and simplified characters find each other, and the card
    // shows the nickname as written.
    assert_eq!(
        people(&app, &me, "刘德").await,
        vec![(liu.uid, "劉德華".to_string())]
    );
    assert_eq!(uids(&people(&app, &me, "劉").await), vec![liu.uid]);
    assert_eq!(uids(&people(&app, &me, "張").await), vec![san.uid]);
    // The start only: 三 is inside 张三, not its start.
    assert!(people(&app, &me, "三").await.is_empty());
    // A rename moves the account at once: the old nickname finds it no more.
    set_profile(&app, &li, json!({"nickName": "王五"})).await;
    assert!(people(&app, &me, "李").await.is_empty());
    assert_eq!(uids(&people(&app, &me, "王").await), vec![li.uid]);
    // The same through the search's people kind.
    let (s, page) = app
        .get(
            &format!("/api/v1/search?type=users&q={}", encoded("王")),
            Some(&me.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["uid"], li.uid);
    assert!(page.get("marks").is_none(), "{page}");
}

#[tokio::test]
async fn people_search_pages_through_every_match_once() {
    let app = app().await;
    let me = app.user_nicknamed("pager", "Pager").await;
    let mut made = vec![me.uid];
    for i in 0..6 {
        // Every other one matches by its nickname alone.
        let (name, nick) = if i % 2 == 0 {
            (format!("pager{i}"), format!("n{i}"))
        } else {
            (format!("other{i}"), format!("Pager {i}"))
        };
        made.push(app.user_nicknamed(&name, &nick).await.uid);
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    for _ in 0..10 {
        let (s, page) = app
            .get(
                &format!("/api/v1/search/users?prefix=pager&limit=2&cursor={cursor}"),
                Some(&me.token),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{page}");
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(items.iter().map(|c| c["uid"].as_i64().unwrap()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    // A cursor made by hand is a place in the order, not an account: the
    // page after "pager 3" is what sorts after it.
    let place = format!(
        "n{}.0",
        "pager 3"
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let (s, page) = app
        .get(
            &format!("/api/v1/search/users?prefix=pager&limit=1&cursor={place}"),
            Some(&me.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["nickName"], "Pager 3", "{page}");
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "no account twice: {seen:?}");
    made.sort_unstable();
    assert_eq!(sorted, made);
}

#[tokio::test]
async fn people_search_keeps_to_who_may_find_whom() {
    let app = app().await;
    let me = app.user_nicknamed("finder", "Finder").await;
    let fan = app.user_nicknamed("finder_fan", "Fan").await;
    let shy = app.user_nicknamed("hidden_shy", "Shy").await;
    let blocker = app.user_nicknamed("hidden_blocker", "Blocker").await;
    let blocked = app.user_nicknamed("hidden_blocked", "Blocked").await;
    let gone = app.user_nicknamed("hidden_gone", "Gone").await;
    let open = app.user_nicknamed("hidden_open", "Open").await;

    // One who turned being found off: found by those who follow them.
    set_profile(&app, &shy, json!({"findable": false})).await;
    let (_, mine) = app.get("/api/v1/me", Some(&shy.token)).await;
    assert_eq!(mine["findable"], false);
    follow(&app, &fan, &shy).await;
    // Blocks, either way.
    app.put(
        &format!("/api/v1/users/{}/block", me.uid),
        Some(&blocker.token),
    )
    .await;
    app.put(
        &format!("/api/v1/users/{}/block", blocked.uid),
        Some(&me.token),
    )
    .await;
    // A deleted account.
    app.delete_account(&gone).await;

    assert_eq!(uids(&people(&app, &me, "hidden").await), vec![open.uid]);
    assert_eq!(
        uids(&people(&app, &fan, "hidden").await),
        vec![blocked.uid, blocker.uid, open.uid, shy.uid]
    );
    // Oneself, always.
    assert_eq!(uids(&people(&app, &shy, "hidden_s").await), vec![shy.uid]);
    // Nor by the exact username, but by a follower.
    let by_name = "/api/v1/users?username=hidden_shy";
    assert_eq!(app.get(by_name, Some(&me.token)).await.0.as_u16(), 404);
    assert_eq!(app.get(by_name, Some(&fan.token)).await.0.as_u16(), 200);
    assert_eq!(app.get(by_name, Some(&shy.token)).await.0.as_u16(), 200);
    // Found again once they allow it.
    set_profile(&app, &shy, json!({"findable": true})).await;
    assert_eq!(
        uids(&people(&app, &me, "hidden").await),
        vec![open.uid, shy.uid]
    );
}

#[tokio::test]
async fn public_posts_of_one_who_is_not_findable_are_found_by_followers_only() {
    let app = app().await;
    let shy = app.user("shy").await;
    let fan = app.user("fan").await;
    let stranger = app.user("stranger").await;
    follow(&app, &fan, &shy).await;
    set_profile(&app, &shy, json!({"findable": false})).await;
    let post = app.text_post(&shy, "a quiet lighthouse").await;
    indexed(&app, &fan, "lighthouse", post).await;
    assert!(found(&app, &stranger, "lighthouse").await.is_empty());
    // Allowing it indexes their posts again, for everyone to find.
    set_profile(&app, &shy, json!({"findable": true})).await;
    wait_until("the post found by a stranger", || async {
        found(&app, &stranger, "lighthouse").await == vec![post]
    })
    .await;
    // And turning it off again takes them out at once: the answer asks,
    // whatever the index still holds.
    set_profile(&app, &shy, json!({"findable": false})).await;
    assert!(found(&app, &stranger, "lighthouse").await.is_empty());
    assert_eq!(found(&app, &fan, "lighthouse").await, vec![post]);
}

#[tokio::test]
async fn a_people_search_of_no_letter_or_past_its_bounds_is_refused() {
    let app = app().await;
    let me = app.user("asker").await;
    for (path, status) in [
        ("/api/v1/search/users?prefix=%20%20", 422),
        ("/api/v1/search/users?prefix=", 400),
        ("/api/v1/search/users", 400),
        ("/api/v1/search?type=users&q=%20", 422),
        ("/api/v1/search?type=people&q=ann", 400),
        ("/api/v1/search/users?prefix=ann&limit=101", 400),
    ] {
        let (s, body) = app.get(path, Some(&me.token)).await;
        assert_eq!(s.as_u16(), status, "{path}: {body}");
        assert_eq!(body["status"], status, "{path}: {body}");
    }
    // A cursor of one kind of search given to the other.
    let (s, page) = app
        .get("/api/v1/search/users?prefix=ann&limit=1", Some(&me.token))
        .await;
    assert_eq!(s.as_u16(), 200, "{page}");
    for (path, status) in [
        ("/api/v1/search?q=ann&cursor=n616e6e.1", 422),
        ("/api/v1/search/users?prefix=ann&cursor=v1", 422),
        ("/api/v1/search?type=users&q=ann&cursor=v1", 422),
        ("/api/v1/search/users?prefix=ann&cursor=n616.1", 400),
        ("/api/v1/search/users?prefix=ann&cursor=nZZ.1", 400),
    ] {
        let (s, body) = app.get(path, Some(&me.token)).await;
        assert_eq!(s.as_u16(), status, "{path}: {body}");
    }
    let long = "a".repeat(65);
    let (s, _) = app
        .get(
            &format!("/api/v1/search/users?prefix={long}"),
            Some(&me.token),
        )
        .await;
    assert_eq!(s.as_u16(), 400);
    let (s, _) = app.get("/api/v1/search/users?prefix=ann", None).await;
    assert_eq!(s.as_u16(), 401);
}

#[tokio::test]
async fn accounts_unkeyed_or_keyed_by_an_older_folding_are_keyed_at_start_up() {
    let app = app().await;
    let me = app.user_nicknamed("elder_reader", "Reader").await;
    let elder = app.user_nicknamed("elder", "老张").await;
    let liu = app.user_nicknamed("andy_lau", "劉德華").await;
    if let Some(uri) = &app.settings.mongodb_uri {
        let users = mongodb::Client::with_uri_str(uri)
            .await
            .unwrap()
            .database(&app.settings.mongodb_db)
            .collection::<mongodb::bson::Document>("users");
        // As an account written before nicknames were keyed.
        users
            .update_one(
                mongodb::bson::doc! {"_id": elder.uid},
                mongodb::bson::doc! {"$unset": {"nickKey": "", "nickKeyVersion": ""}},
            )
            .await
            .unwrap();
        // As one keyed before traditional characters were folded.
        users
            .update_one(
                mongodb::bson::doc! {"_id": liu.uid},
                mongodb::bson::doc! {"$set": {"nickKey": "劉德華", "nickKeyVersion": 1}},
            )
            .await
            .unwrap();
        assert!(people(&app, &me, "老").await.is_empty());
        assert!(people(&app, &me, "刘").await.is_empty());
    }
    // (The embedded store's table of older keys: its own test, in
    // store/embedded/documents.)
    app.ctx.docs.apply_schemas().await.unwrap();
    assert_eq!(uids(&people(&app, &me, "老").await), vec![elder.uid]);
    assert_eq!(uids(&people(&app, &me, "刘").await), vec![liu.uid]);
    assert_eq!(uids(&people(&app, &me, "劉德").await), vec![liu.uid]);
}

#[tokio::test]
async fn an_erased_account_leaves_nothing_in_the_index() {
    let app = app().await;
    let gone = app.user("leaver").await;
    let post = app.text_post(&gone, "a farewell lantern").await;
    indexed(&app, &gone, "lantern", post).await;
    app.delete_account(&gone).await;
    wait_until("the erased account's post out of the index", || async {
        in_index(&app, &gone, "lantern").await.is_empty()
    })
    .await;
}

#[tokio::test]
async fn by_relevance_the_best_match_comes_first_and_pages_go_through_every_match_once() {
    let app = app().await;
    let ann = app.user("ann").await;
    let bob = app.user("bob").await;
    let long = app
        .text_post(
            &ann,
            "a long walk past the river, the hills, the market and a kite",
        )
        .await;
    let short = app.text_post(&ann, "kite kite").await;
    let mid = app
        .text_post(&ann, "my kite flew over the kite festival")
        .await;
    let hidden = app
        .post_with(
            &ann,
            json!({"category": "TEXT", "content": "a kite for friends", "visibility": "friends"}),
        )
        .await;
    let newest = app
        .text_post(&ann, "kites at dusk, a kite over the sea")
        .await;
    indexed(&app, &ann, "kite", newest).await;
    // One page of all: the best first, not the newest.
    let (s, page) = search(&app, &bob, "kite", "&sort=relevance&limit=10").await;
    assert_eq!(s, StatusCode::OK, "{page}");
    let all = ids(page["items"].as_array().unwrap());
    assert_eq!(all.len(), 4, "{page}");
    assert!(
        !all.contains(&hidden),
        "a friends-only post: not Bob's to see"
    );
    assert_eq!(all[0], short, "{all:?}");
    assert_eq!(*all.last().unwrap(), long, "{all:?}");
    assert!(all.contains(&mid) && all.contains(&newest));
    assert!(
        page["marks"][short.to_string()].as_array().unwrap().len() == 2,
        "{page}"
    );
    // By two: the same order, every match once.
    let mut paged = Vec::new();
    let mut cursor = String::new();
    for _ in 0..5 {
        let (s, page) = search(
            &app,
            &bob,
            "kite",
            &format!("&sort=relevance&limit=2&cursor={cursor}"),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{page}");
        paged.extend(ids(page["items"].as_array().unwrap()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    assert_eq!(paged, all);
    // A cursor of one order given to the other.
    let (_, first) = search(&app, &bob, "kite", "&limit=1").await;
    let newest_cursor = first["nextCursor"].as_str().unwrap().to_string();
    let (s, _) = search(
        &app,
        &bob,
        "kite",
        &format!("&sort=relevance&cursor={newest_cursor}"),
    )
    .await;
    assert_eq!(s.as_u16(), 422);
    let (s, _) = search(&app, &bob, "kite", "&sort=best").await;
    assert_eq!(s.as_u16(), 400);
}

#[tokio::test]
async fn a_post_deleted_elsewhere_leaves_the_index_when_it_is_read_again() {
    let app = app().await;
    let ann = app.user("ann").await;
    let post = app.text_post(&ann, "a lighthouse keeper's log").await;
    indexed(&app, &ann, "lighthouse", post).await;
    // Deleted as another instance deletes it: in the documents only, with
    // no word to this instance's index.
    assert!(app.ctx.docs.delete_post(post).await.unwrap());
    wait_until("the deleted post out of the index", || async {
        in_index(&app, &ann, "lighthous").await.is_empty()
    })
    .await;
}

/// A post whose insert lands after newer ones were indexed (its id made
/// earlier, by another instance's clock or behind a slow write) is
/// indexed when the indexer reads its settling window again, where it
/// reads each post's presence only and the new ones whole.
#[tokio::test]
async fn a_post_landing_behind_newer_ones_is_indexed_when_the_window_is_read_again() {
    let app = app().await;
    let ann = app.user("ann").await;
    let newer = app.text_post(&ann, "a harbour at dawn").await;
    indexed(&app, &ann, "harbour", newer).await;
    let made = moments::ids::now_ms() - 3_000;
    let late = moments::ids::first_id_at(made) + 7;
    assert!(late < newer);
    let post = moments::store::PostDoc::text(late, ann.uid, "a harbour at dusk", made);
    app.ctx.docs.insert_post(&post).await.unwrap();
    wait_until("the late post indexed", || async {
        in_index(&app, &ann, "dusk").await == [late]
    })
    .await;
}

/// With its engine out of reach, search answers 503 with when to try
/// again, and everything else goes on: posting, reading, the feed.
#[tokio::test]
async fn an_engine_out_of_reach_answers_503_and_nothing_else_stops() {
    let mut settings = test_settings();
    // A port nothing listens on: refused at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    settings.search.opensearch_url = Some(format!("http://127.0.0.1:{port}"));
    settings.search.opensearch_index = "moments-unreachable".into();
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let post = app.text_post(&ann, "a lantern by the door").await;
    let (s, headers, body) = app
        .call_with(
            reqwest::Method::GET,
            "/api/v1/search?q=lantern",
            Some(&ann.token),
            &[],
            None,
        )
        .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], 503, "{body}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1, "Retry-After {retry}");
    let (s, _) = app
        .get(&format!("/api/v1/posts/{post}"), Some(&ann.token))
        .await;
    assert_eq!(s, StatusCode::OK);
    // People search reads the documents, not the engine.
    assert_eq!(people(&app, &ann, "an").await.len(), 1);
}

/// OpenSearch down: searches answer 503 while posting goes on; back up,
/// the indexer catches up from the documents, and what was posted
/// meanwhile is found. (On every lane: the engine is the test's own
/// index on the node scripts/test.sh starts, reached through a proxy the
/// test cuts.)
#[tokio::test]
async fn the_engine_down_and_back_loses_no_post() {
    let url = std::env::var("MOMENTS_TEST_OPENSEARCH_URL")
        .expect("MOMENTS_TEST_OPENSEARCH_URL: run scripts/test.sh, which starts OpenSearch");
    let proxy = crate::proxy::Proxy::start(url.trim_start_matches("http://")).await;
    let mut settings = settings();
    settings.search.opensearch_url = Some(format!("http://{}", proxy.addr()));
    settings.search.opensearch_index = settings.mongodb_db.clone();
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let first = app.text_post(&ann, "a beacon on the hill").await;
    indexed(&app, &ann, "beacon", first).await;

    proxy.cut();
    let second = app
        .text_post(&ann, "another beacon, posted while it is down")
        .await;
    wait_until("searches answer 503 while the engine is down", || async {
        let (s, page) = search(&app, &ann, "beacon", "").await;
        assert!(
            s == StatusCode::OK || s == StatusCode::SERVICE_UNAVAILABLE,
            "{s}: {page}"
        );
        s == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    let (s, _) = app
        .get(&format!("/api/v1/posts/{second}"), Some(&ann.token))
        .await;
    assert_eq!(s, StatusCode::OK);

    proxy.mend().await;
    indexed(&app, &ann, "beacon", second).await;
    assert_eq!(found(&app, &ann, "beacon").await, [second, first]);
}

/// An index of the posts' name made otherwise (a cluster that creates one
/// on a first write, with its own analyser and scoring) is refused: its
/// scores would count posts. Searches answer 503 until it is rebuilt.
#[tokio::test]
async fn an_opensearch_index_made_otherwise_is_refused() {
    let url = std::env::var("MOMENTS_TEST_OPENSEARCH_URL")
        .expect("MOMENTS_TEST_OPENSEARCH_URL: run scripts/test.sh, which starts OpenSearch");
    let mut settings = settings();
    let name = settings.mongodb_db.clone();
    let made = reqwest::Client::new()
        .put(format!("{url}/{name}"))
        .json(&json!({"mappings": {"properties": {"words": {"type": "text"}}}}))
        .send()
        .await
        .unwrap();
    assert!(made.status().is_success(), "{}", made.text().await.unwrap());
    settings.search.opensearch_url = Some(url);
    settings.search.opensearch_index = name;
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let (s, page) = search(&app, &ann, "lantern", "").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{page}");
}

/// An index whose words an earlier version cut (before traditional
/// characters were folded, say) is refused too: this version's queries
/// would miss posts in it. Searches answer 503 until it is rebuilt.
#[tokio::test]
async fn an_opensearch_index_of_words_cut_otherwise_is_refused() {
    let url = std::env::var("MOMENTS_TEST_OPENSEARCH_URL")
        .expect("MOMENTS_TEST_OPENSEARCH_URL: run scripts/test.sh, which starts OpenSearch");
    let mut settings = settings();
    settings.search.opensearch_url = Some(url.clone());
    settings.search.opensearch_index = settings.mongodb_db.clone();
    let name = settings.search.opensearch_index.clone();
    let app = spawn_app_with(settings).await;
    let ann = app.user("ann").await;
    let post = app.text_post(&ann, "lantern festival").await;
    indexed(&app, &ann, "lantern", post).await;

    let marked = reqwest::Client::new()
        .put(format!("{url}/{name}/_mapping"))
        .json(&json!({"_meta": {"words_version": 1}}))
        .send()
        .await
        .unwrap();
    assert!(
        marked.status().is_success(),
        "{}",
        marked.text().await.unwrap()
    );
    // Another instance meets the index as an upgraded one would.
    let mut upgraded = self::settings();
    upgraded.search.opensearch_url = Some(url);
    upgraded.search.opensearch_index = name;
    let app = spawn_app_with(upgraded).await;
    let ann = app.user("ann").await;
    let (s, page) = search(&app, &ann, "lantern", "").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{page}");
}
