//! CPU cost of writing one expanded post from parts already in memory:
//! `post_json::write_post` (the post read whole for one reader: its
//! template made and filled), filling a kept template alone, and
//! `assemble::build_comment`, without any store round trip.
//!
//! The post is a realistic "heavy" one: PICTURE with 9 pictures, ~140 Chinese
//! characters of content, a device mapped through a 500-row device table,
//! 3000 likes (the latest 20 shown), 5 latest comments (one a reply), and
//! 30 user cards.
//!
//! Run: `cargo bench --bench assemble -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

use moments::domain::device_models::DisplayName;
use moments::domain::lang::Lang;
use moments::domain::post::{Category, Geo};
use moments::domain::time_text::TzOffset;
use moments::ids;
use moments::service::device_models::DeviceNames;
use moments::service::read::assemble::build_comment;
use moments::service::read::post_json::{write_post, ReaderPart};
use moments::service::read::snapshot::{CommentParts, PostParts, LATEST_COMMENTS, LATEST_LIKES};
use moments::service::Presentation;
use moments::store::{CommentDoc, PostBody, PostDoc, ReplyRef, SetView, UserCard};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

const CONTENT: &str = "周末和朋友们去了西湖边散步，天气特别好，阳光洒在湖面上波光粼粼。\
中午在楼外楼吃了西湖醋鱼和东坡肉，味道还是那么地道。下午坐船游湖，看到了三潭印月，\
晚上又去河坊街逛了逛，买了些小吃和纪念品。虽然走得很累，但是心情非常愉快，\
拍了好多照片，挑了九张分享给大家，希望下次还能再来！";

const COMMENTS: [&str; LATEST_COMMENTS] = [
    "照片拍得真好看！",
    "西湖醋鱼好吃吗？我上次去觉得有点酸😂",
    "下次带上我呀",
    "三潭印月那张构图绝了，用什么手机拍的？",
    "杭州这几天天气确实不错，羡慕",
];

/// Everything `write_post` takes, plus the `now` the presentation uses.
struct Fixture {
    parts: PostParts,
    cards: HashMap<i64, UserCard>,
    devices: DeviceNames,
    now: i64,
}

fn device_table() -> DeviceNames {
    let name = |zh: String, en: String| DisplayName { zh, en };
    let mut rows = vec![(
        "oneplus a6000".to_string(),
        name("一加 6".into(), "OnePlus 6".into()),
    )];
    let brands = [
        ("sm-g9", "三星 Galaxy S", "Samsung Galaxy S"),
        ("m20", "小米", "Xiaomi"),
        ("vog-al", "华为 P", "Huawei P"),
        ("pcam", "OPPO Reno", "OPPO Reno"),
        ("v19", "vivo X", "vivo X"),
    ];
    for i in 0..499 {
        let (prefix, zh, en) = brands[i % brands.len()];
        rows.push((
            format!("{prefix}{:04}", i * 7 + 13),
            name(format!("{zh} {}", i / 5 + 1), format!("{en} {}", i / 5 + 1)),
        ));
    }
    DeviceNames::from_rows(rows)
}

fn card(uid: i64, n: usize) -> UserCard {
    UserCard {
        uid,
        nick_name: format!("用户{n:02}·小{}", ["明", "红", "刚", "丽", "强"][n % 5]),
        head_img: format!(
            "https://cdn.example.com/avatar/{uid}/head_{n}.jpg?x-oss-process=image/resize,w_132"
        ),
    }
}

fn fixture() -> Fixture {
    // 30 users: the author, 20 likers, 5 commenters, 4 more (one replied to).
    let uids: Vec<i64> = (0..30).map(|_| ids::next_id()).collect();
    let cards: HashMap<i64, UserCard> = uids
        .iter()
        .enumerate()
        .map(|(n, &uid)| (uid, card(uid, n)))
        .collect();
    let author = uids[0];
    let likers = &uids[1..=LATEST_LIKES];
    let commenters = &uids[LATEST_LIKES + 1..LATEST_LIKES + 1 + LATEST_COMMENTS];

    let post_id = ids::next_id();
    let created = ids::timestamp_of(post_id);
    // The reader looks three hours after posting, so the post and its likes
    // read "3小时前" and the comments span several of the text rules.
    let now = created + 3 * HOUR;

    let body = PostBody::from(PostDoc {
        category: Category::Picture,
        picture_urls: (0..9)
            .map(|i| format!("https://cdn.example.com/moments/{author}/{post_id}/{i}.jpg"))
            .collect(),
        device: "ONEPLUS A6000".to_string(),
        geo: Some(Geo {
            lat: 30.2489,
            lon: 120.1485,
            name: Some("杭州·西湖风景区".to_string()),
        }),
        ..PostDoc::text(post_id, author, CONTENT, created)
    });

    // Latest likes, newest first: (uid, like id).
    let mut top: Vec<(i64, i64)> = likers.iter().map(|&u| (u, ids::next_id())).collect();
    top.reverse();
    let post_likers = SetView {
        count: 3000,
        top,
        probe_score: Some(ids::next_id()),
    };

    // Latest comments, newest first; the second replies to an earlier one.
    let ages = [2 * MINUTE, 25 * MINUTE, 70 * MINUTE, 2 * HOUR, 170 * MINUTE];
    let mut comments: Vec<CommentParts> = commenters
        .iter()
        .zip(ages)
        .zip(COMMENTS)
        .map(|((&uid, age), text)| CommentParts {
            doc: CommentDoc::text(ids::next_id(), post_id, uid, text.to_string(), now - age),
            likers: SetView {
                count: 12,
                top: Vec::new(),
                probe_score: None,
            },
            replies: SetView {
                count: 2,
                top: Vec::new(),
                probe_score: None,
            },
        })
        .collect();
    let replied = &comments[3].doc;
    let reply_to = ReplyRef {
        comment_id: replied.id,
        uid: replied.author_uid,
    };
    comments[1].doc.reply_to = Some(reply_to);
    comments[1].likers.probe_score = Some(ids::next_id());

    Fixture {
        parts: PostParts {
            body,
            likers: post_likers,
            comment_count: 57,
            share_count: 12,
            view_count: 345,
            comments,
        },
        cards,
        devices: device_table(),
        now,
    }
}

fn presentation(f: &Fixture, lang: Option<Lang>) -> Presentation {
    Presentation {
        lang,
        tz: TzOffset::default(),
        now: f.now,
    }
}

fn reader<'a>(
    f: &'a Fixture,
    pres: &'a Presentation,
    comments_liked: &'a [bool],
) -> ReaderPart<'a> {
    ReaderPart {
        pres,
        devices: &f.devices,
        is_author: false,
        liked: f.parts.likers.probe_score.is_some(),
        comments_liked,
    }
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    let plain = presentation(&f, None);
    let zh = presentation(&f, Some(Lang::Zh));
    let comments_liked: Vec<bool> = f
        .parts
        .comments
        .iter()
        .map(|c| c.likers.probe_score.is_some())
        .collect();

    // Sanity: the fixture exercises what it claims to.
    let sample: serde_json::Value = serde_json::from_slice(&write_post(
        &f.parts,
        &f.cards,
        "/media",
        &reader(&f, &zh, &comments_liked),
    ))
    .expect("an expanded post is JSON");
    assert_eq!(sample["device"], "一加 6");
    assert_eq!(sample["pictureUrls"].as_array().map(Vec::len), Some(9));
    assert_eq!(sample["likes"].as_array().map(Vec::len), Some(LATEST_LIKES));
    assert_eq!(
        sample["comments"].as_array().map(Vec::len),
        Some(LATEST_COMMENTS)
    );
    assert_eq!(
        sample["comments"][1]["replyTo"]["uid"],
        f.parts.comments[3].doc.author_uid
    );
    assert_eq!(sample["createtimeText"], "3小时前");

    let mut g = c.benchmark_group("write_post");
    g.bench_function("zh_no_text", |b| {
        let r = reader(&f, &plain, &comments_liked);
        b.iter(|| {
            write_post(
                black_box(&f.parts),
                black_box(&f.cards),
                "/media",
                black_box(&r),
            )
        })
    });
    g.bench_function("with_createtime_text", |b| {
        let r = reader(&f, &zh, &comments_liked);
        b.iter(|| {
            write_post(
                black_box(&f.parts),
                black_box(&f.cards),
                "/media",
                black_box(&r),
            )
        })
    });
    g.finish();

    let reply = &f.parts.comments[1];
    c.bench_function("build_comment/reply_with_text", |b| {
        b.iter(|| build_comment(black_box(reply), black_box(&f.cards), black_box(&zh)))
    });
}

criterion_group!(assemble, benches);
criterion_main!(assemble);
