//! Store conformance: each MongoDB behaviour the service relies on, asserted
//! directly through the official `mongodb` driver, so that the day this runs
//! against real MongoDB (a `mongo:7` container) any difference shows up here
//! first, before it shows up as a puzzling API test failure.
//!
//! In CI and on developer machines this runs against nx-27017 (see
//! TESTING.md, "nx-27017: measured deviations").
//! Every assertion here is one both servers agree on; where nx-27017 deviates
//! the test asserts the common subset and says so in a comment.
//!
//! Each test uses its own database (`conf_<test>_<random>`) and drops it at the
//! end, best effort.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{IndexOptions, ReturnDocument};
use mongodb::{Client, Collection, Database, IndexModel};
use serde::{Deserialize, Deserializer, Serialize};

const DUPLICATE_KEY: i32 = 11000;

/// Fixed-width (16-digit) integer ids, as the service generates them: nx-27017
/// sorts an integer `_id` as text, which is only numeric order at one width.
const ID_BASE: i64 = 1_000_000_000_000_001;

fn id(i: i64) -> i64 {
    ID_BASE + i
}

async fn client() -> Client {
    let uri = std::env::var("MOMENTS_TEST_MONGODB_URI").unwrap_or_else(|_| {
        panic!(
            "MOMENTS_TEST_MONGODB_URI is not set: run scripts/test.sh, \
             which starts nx-27017 and redis-server"
        )
    });
    Client::with_uri_str(&uri)
        .await
        .unwrap_or_else(|e| panic!("cannot build a MongoDB client for {uri}: {e}"))
}

fn random_suffix() -> String {
    let mut bytes = [0u8; 6];
    getrandom::getrandom(&mut bytes).unwrap_or_else(|e| panic!("getrandom: {e}"));
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh, uniquely named database for one test. MongoDB database names are
/// limited to 63 bytes, so the test name is shortened if need be.
async fn fresh_db(test: &str) -> Database {
    let short: String = test.chars().take(40).collect();
    let name = format!("conf_{short}_{}", random_suffix());
    client().await.database(&name)
}

async fn drop_db(db: Database) {
    // Best effort: a failed drop must not hide the test's own result.
    let _ = db.drop().await;
}

async fn ids_of(coll: &Collection<Document>, filter: Document, sort: Document) -> Vec<i64> {
    let docs: Vec<Document> = match coll.find(filter.clone()).sort(sort).await {
        Ok(cursor) => cursor.try_collect().await,
        Err(e) => Err(e),
    }
    .unwrap_or_else(|e| panic!("find {filter}: {e}"));
    docs.iter()
        .map(|d| match d.get("_id") {
            Some(id) => as_i64(id),
            None => panic!("document without _id: {d}"),
        })
        .collect()
}

/// Integers come back from nx-27017 as Int32 when they fit: compare values,
/// never BSON types.
fn as_i64(b: &Bson) -> i64 {
    match b {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        other => panic!("expected an integer, got {other:?}"),
    }
}

#[tokio::test]
async fn duplicate_key_on_unique_compound_index_is_write_error_11000() {
    let db = fresh_db("dup_key_insert_one").await;
    let coll = db.collection::<Document>("reactions");
    coll.create_index(
        IndexModel::builder()
            .keys(doc! { "kind": 1, "targetId": 1, "uid": 1 })
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .await
    .unwrap();

    coll.insert_one(doc! { "_id": id(1), "kind": "like", "targetId": id(100), "uid": "u1" })
        .await
        .unwrap();

    // Same (kind, targetId, uid), different _id: rejected by the unique index.
    let err = coll
        .insert_one(doc! { "_id": id(2), "kind": "like", "targetId": id(100), "uid": "u1" })
        .await
        .expect_err("duplicate (kind, targetId, uid) must be rejected");
    match err.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(e)) => assert_eq!(e.code, DUPLICATE_KEY, "{e:?}"),
        other => panic!("expected a write error 11000, got {other:?}"),
    }

    // The index is on all three fields, not on any one of them.
    coll.insert_one(doc! { "_id": id(3), "kind": "like", "targetId": id(100), "uid": "u2" })
        .await
        .unwrap();
    coll.insert_one(doc! { "_id": id(4), "kind": "like", "targetId": id(101), "uid": "u1" })
        .await
        .unwrap();
    coll.insert_one(doc! { "_id": id(5), "kind": "comment", "targetId": id(100), "uid": "u1" })
        .await
        .unwrap();

    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 4);
    drop_db(db).await;
}

#[tokio::test]
async fn unordered_insert_many_with_one_duplicate_inserts_the_rest() {
    let db = fresh_db("dup_key_insert_many").await;
    let coll = db.collection::<Document>("reactions");
    coll.create_index(
        IndexModel::builder()
            .keys(doc! { "kind": 1, "targetId": 1, "uid": 1 })
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .await
    .unwrap();
    coll.insert_one(doc! { "_id": id(1), "kind": "like", "targetId": id(100), "uid": "u1" })
        .await
        .unwrap();

    let err = coll
        .insert_many(vec![
            doc! { "_id": id(2), "kind": "like", "targetId": id(100), "uid": "u2" },
            doc! { "_id": id(3), "kind": "like", "targetId": id(100), "uid": "u1" }, // duplicate
            doc! { "_id": id(4), "kind": "like", "targetId": id(100), "uid": "u3" },
            doc! { "_id": id(5), "kind": "like", "targetId": id(100), "uid": "u4" },
        ])
        .ordered(false)
        .await
        .expect_err("the duplicate must be reported");
    match err.kind.as_ref() {
        ErrorKind::InsertMany(e) => {
            let write_errors = e.write_errors.as_deref().unwrap_or_default();
            assert_eq!(write_errors.len(), 1, "{write_errors:?}");
            assert_eq!(write_errors[0].code, DUPLICATE_KEY, "{write_errors:?}");
            assert_eq!(write_errors[0].index, 1, "{write_errors:?}");
        }
        other => panic!("expected an insert-many error carrying 11000, got {other:?}"),
    }

    // Unordered: every other document went in.
    let ids = ids_of(&coll, doc! {}, doc! { "_id": 1 }).await;
    assert_eq!(ids, vec![id(1), id(2), id(4), id(5)]);
    drop_db(db).await;
}

#[tokio::test]
async fn push_each_position_0_slice_keeps_newest_n_first() {
    let db = fresh_db("push_position_slice").await;
    let coll = db.collection::<Document>("inboxes");
    coll.insert_one(doc! { "_id": "u1", "recent": [] })
        .await
        .unwrap();

    for i in 1..=5_i64 {
        let r = coll
            .update_one(
                doc! { "_id": "u1" },
                doc! { "$push": { "recent": { "$each": [i], "$position": 0, "$slice": 3 } } },
            )
            .await
            .unwrap();
        assert_eq!(r.matched_count, 1);
    }

    #[derive(Deserialize)]
    struct Inbox {
        recent: Vec<i64>,
    }
    let inbox = db
        .collection::<Inbox>("inboxes")
        .find_one(doc! { "_id": "u1" })
        .await
        .unwrap()
        .expect("inbox");
    assert_eq!(inbox.recent, vec![5, 4, 3]);

    // Several at once: $each keeps its own order at position 0.
    coll.update_one(
        doc! { "_id": "u1" },
        doc! { "$push": { "recent": { "$each": [7, 6], "$position": 0, "$slice": 3 } } },
    )
    .await
    .unwrap();
    let inbox = db
        .collection::<Inbox>("inboxes")
        .find_one(doc! { "_id": "u1" })
        .await
        .unwrap()
        .expect("inbox");
    assert_eq!(inbox.recent, vec![7, 6, 5]);
    drop_db(db).await;
}

#[derive(Deserialize)]
struct Likes {
    likes: Vec<String>,
}

async fn likes_of(db: &Database, key: &str) -> Vec<String> {
    match db
        .collection::<Likes>("posts")
        .find_one(doc! { "_id": key })
        .await
    {
        Ok(Some(post)) => post.likes,
        Ok(None) => panic!("post {key} not found"),
        Err(e) => panic!("find post {key}: {e}"),
    }
}

#[tokio::test]
async fn add_to_set_does_not_duplicate_and_pull_removes() {
    let db = fresh_db("add_to_set_pull").await;
    let coll = db.collection::<Document>("posts");
    coll.insert_one(doc! { "_id": "p1", "likes": [] })
        .await
        .unwrap();

    for uid in ["u1", "u2", "u1", "u2", "u3"] {
        coll.update_one(doc! { "_id": "p1" }, doc! { "$addToSet": { "likes": uid } })
            .await
            .unwrap();
    }
    assert_eq!(likes_of(&db, "p1").await, vec!["u1", "u2", "u3"]);

    coll.update_one(
        doc! { "_id": "p1" },
        doc! { "$addToSet": { "likes": { "$each": ["u3", "u4", "u4"] } } },
    )
    .await
    .unwrap();
    assert_eq!(likes_of(&db, "p1").await, vec!["u1", "u2", "u3", "u4"]);

    coll.update_one(doc! { "_id": "p1" }, doc! { "$pull": { "likes": "u2" } })
        .await
        .unwrap();
    assert_eq!(likes_of(&db, "p1").await, vec!["u1", "u3", "u4"]);

    // Pulling what is not there is a no-op, not an error.
    coll.update_one(doc! { "_id": "p1" }, doc! { "$pull": { "likes": "u9" } })
        .await
        .unwrap();
    assert_eq!(likes_of(&db, "p1").await, vec!["u1", "u3", "u4"]);
    drop_db(db).await;
}

#[tokio::test]
async fn concurrent_inc_by_32_tasks_is_exact() {
    let db = fresh_db("concurrent_inc").await;
    let coll = db.collection::<Document>("counters");
    coll.insert_one(doc! { "_id": "c", "n": 0_i64 })
        .await
        .unwrap();

    const TASKS: i64 = 32;
    const PER_TASK: i64 = 3;
    let tasks = (0..TASKS).map(|_| {
        let coll = coll.clone();
        tokio::spawn(async move {
            for _ in 0..PER_TASK {
                let r = coll
                    .update_one(doc! { "_id": "c" }, doc! { "$inc": { "n": 1 } })
                    .await
                    .unwrap();
                assert_eq!(r.matched_count, 1);
            }
        })
    });
    for joined in futures_util::future::join_all(tasks).await {
        joined.unwrap();
    }

    let counter = coll.find_one(doc! { "_id": "c" }).await.unwrap().unwrap();
    assert_eq!(as_i64(counter.get("n").unwrap()), TASKS * PER_TASK);
    drop_db(db).await;
}

#[tokio::test]
async fn concurrent_add_to_set_by_32_tasks_is_exact() {
    let db = fresh_db("concurrent_add_to_set").await;
    let coll = db.collection::<Document>("posts");
    coll.insert_one(doc! { "_id": "p1", "likes": [] })
        .await
        .unwrap();

    // 32 tasks, 16 distinct users, each user liking twice concurrently.
    let tasks = (0..32).map(|i| {
        let coll = coll.clone();
        tokio::spawn(async move {
            coll.update_one(
                doc! { "_id": "p1" },
                doc! { "$addToSet": { "likes": format!("u{:02}", i % 16) } },
            )
            .await
            .unwrap();
        })
    });
    for joined in futures_util::future::join_all(tasks).await {
        joined.unwrap();
    }

    let likes: BTreeSet<String> = likes_of(&db, "p1").await.into_iter().collect();
    let expected: BTreeSet<String> = (0..16).map(|i| format!("u{i:02}")).collect();
    assert_eq!(likes, expected);
    assert_eq!(likes_of(&db, "p1").await.len(), 16, "no duplicates");
    drop_db(db).await;
}

#[tokio::test]
async fn upsert_set_and_set_on_insert() {
    let db = fresh_db("upsert_set_on_insert").await;
    let coll = db.collection::<Document>("profiles");

    let first = coll
        .update_one(
            doc! { "_id": "u1" },
            doc! {
                "$set": { "name": "Ann", "visits": 1 },
                "$setOnInsert": { "createdAt": 111_i64, "bio": "" },
            },
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(first.matched_count, 0);
    assert_eq!(first.upserted_id, Some(Bson::String("u1".into())));

    let second = coll
        .update_one(
            doc! { "_id": "u1" },
            doc! {
                "$set": { "name": "Bea", "visits": 2 },
                "$setOnInsert": { "createdAt": 222_i64, "bio": "changed" },
            },
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(second.matched_count, 1);
    assert_eq!(second.upserted_id, None);

    #[derive(Deserialize, Debug, PartialEq)]
    struct Profile {
        #[serde(rename = "_id")]
        id: String,
        name: String,
        visits: i64,
        #[serde(rename = "createdAt")]
        created_at: i64,
        bio: String,
    }
    let all: Vec<Profile> = db
        .collection::<Profile>("profiles")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        all,
        vec![Profile {
            id: "u1".into(),
            name: "Bea".into(),
            visits: 2,
            created_at: 111,
            bio: String::new(),
        }]
    );

    // Upsert keyed by an equality filter on other fields: the filter's
    // equality fields are copied into the inserted document.
    let keyed = db.collection::<Document>("reactions");
    for n in [1, 2] {
        keyed
            .update_one(
                doc! { "uid": "u1", "targetId": id(7) },
                doc! { "$set": { "n": n }, "$setOnInsert": { "at": n } },
            )
            .upsert(true)
            .await
            .unwrap();
    }
    let all: Vec<Document> = keyed
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].get_str("uid").unwrap(), "u1");
    assert_eq!(as_i64(all[0].get("targetId").unwrap()), id(7));
    assert_eq!(as_i64(all[0].get("n").unwrap()), 2);
    assert_eq!(as_i64(all[0].get("at").unwrap()), 1);
    drop_db(db).await;
}

#[tokio::test]
async fn find_by_id_in_returns_exactly_those() {
    let db = fresh_db("find_id_in").await;
    let coll = db.collection::<Document>("moments");
    coll.insert_many((0..20).map(|i| doc! { "_id": id(i), "n": i }))
        .await
        .unwrap();

    let wanted = [id(3), id(7), id(11), id(19)];
    let missing = id(500);
    let got: BTreeSet<i64> = ids_of(
        &coll,
        doc! { "_id": { "$in": [wanted[0], wanted[1], wanted[2], wanted[3], missing] } },
        doc! {},
    )
    .await
    .into_iter()
    .collect();
    assert_eq!(got, wanted.into_iter().collect::<BTreeSet<_>>());

    // Empty $in matches nothing.
    let none = ids_of(&coll, doc! { "_id": { "$in": [] } }, doc! {}).await;
    assert!(none.is_empty(), "{none:?}");
    drop_db(db).await;
}

#[tokio::test]
async fn id_range_sorted_descending_is_numeric_order() {
    let db = fresh_db("id_range_desc").await;
    let coll = db.collection::<Document>("moments");
    // Inserted in a scrambled order so that insertion order cannot pass for a
    // sort. 7 is coprime with 30, so i*7 mod 30 visits every i once.
    coll.insert_many((0..30).map(|i| doc! { "_id": id((i * 7) % 30) }))
        .await
        .unwrap();

    // Keyset page: everything older than id(20), newest first.
    let page = ids_of(&coll, doc! { "_id": { "$lt": id(20) } }, doc! { "_id": -1 }).await;
    let expected: Vec<i64> = (0..20).rev().map(id).collect();
    assert_eq!(page, expected);

    // Same with a limit, as the feed pages.
    let limited: Vec<i64> = coll
        .find(doc! { "_id": { "$lt": id(20), "$gte": id(5) } })
        .sort(doc! { "_id": -1 })
        .limit(4)
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| as_i64(d.get("_id").unwrap()))
        .collect();
    assert_eq!(limited, vec![id(19), id(18), id(17), id(16)]);
    drop_db(db).await;
}

#[tokio::test]
async fn sort_on_indexed_non_id_field_ascending_and_descending() {
    let db = fresh_db("sort_indexed_field").await;
    let coll = db.collection::<Document>("moments");
    coll.create_index(IndexModel::builder().keys(doc! { "rank": 1 }).build())
        .await
        .unwrap();

    // Integers of different widths (and one beyond 32 bits), so that a
    // text-wise comparison would give a different order.
    let ranks: [i64; 7] = [12, 3, 100, 5_000_000_000, 20, 7, 1000];
    coll.insert_many(
        ranks
            .iter()
            .enumerate()
            .map(|(i, r)| doc! { "_id": id(i as i64), "rank": *r }),
    )
    .await
    .unwrap();

    let read = |sort: Document| {
        let coll = coll.clone();
        async move {
            coll.find(doc! {})
                .sort(sort)
                .await
                .unwrap()
                .try_collect::<Vec<Document>>()
                .await
                .unwrap()
                .iter()
                .map(|d| as_i64(d.get("rank").unwrap()))
                .collect::<Vec<i64>>()
        }
    };

    let mut ascending = ranks.to_vec();
    ascending.sort_unstable();
    assert_eq!(read(doc! { "rank": 1 }).await, ascending);

    let descending: Vec<i64> = ascending.iter().rev().copied().collect();
    assert_eq!(read(doc! { "rank": -1 }).await, descending);
    drop_db(db).await;
}

#[tokio::test]
async fn cursor_with_small_batches_returns_every_document() {
    let db = fresh_db("cursor_batches").await;
    let coll = db.collection::<Document>("moments");
    coll.insert_many((0..250).map(|i| doc! { "_id": id(i), "body": format!("m{i}") }))
        .await
        .unwrap();

    let docs: Vec<Document> = coll
        .find(doc! {})
        .batch_size(7)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(docs.len(), 250);
    let distinct: BTreeSet<i64> = docs.iter().map(|d| as_i64(d.get("_id").unwrap())).collect();
    assert_eq!(distinct, (0..250).map(id).collect::<BTreeSet<_>>());
    drop_db(db).await;
}

#[tokio::test]
async fn dotted_path_in_matches_nested_fields() {
    let db = fresh_db("dotted_path_in").await;
    let coll = db.collection::<Document>("comments");
    coll.insert_many(vec![
        doc! { "_id": id(1), "body": "top-level" },
        doc! { "_id": id(2), "replyTo": { "commentId": id(1), "uid": "u1" } },
        doc! { "_id": id(3), "replyTo": { "commentId": id(2), "uid": "u2" } },
        doc! { "_id": id(4), "replyTo": { "commentId": id(1), "uid": "u3" } },
        doc! { "_id": id(5), "replyTo": { "commentId": id(9), "uid": "u1" } },
        // Same value at the top level must not match the dotted path.
        doc! { "_id": id(6), "commentId": id(1) },
    ])
    .await
    .unwrap();

    let got = ids_of(
        &coll,
        doc! { "replyTo.commentId": { "$in": [id(1), id(2)] } },
        doc! { "_id": 1 },
    )
    .await;
    assert_eq!(got, vec![id(2), id(3), id(4)]);

    let got = ids_of(&coll, doc! { "replyTo.uid": "u1" }, doc! { "_id": 1 }).await;
    assert_eq!(got, vec![id(2), id(5)]);
    drop_db(db).await;
}

/// How the service must read a boolean that may have been written with
/// `$set`: nx-27017 stores it as 0/1 (TESTING.md), real MongoDB as a boolean.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match Bson::deserialize(d)? {
        Bson::Boolean(b) => Ok(b),
        Bson::Int32(v) => Ok(v != 0),
        Bson::Int64(v) => Ok(v != 0),
        other => Err(serde::de::Error::custom(format!(
            "expected a boolean, got {other:?}"
        ))),
    }
}

#[tokio::test]
async fn deleted_false_filter_and_set_boolean_read_back() {
    let db = fresh_db("deleted_flag").await;
    let coll = db.collection::<Document>("moments");
    coll.insert_many((0..5).map(|i| doc! { "_id": id(i), "deleted": false }))
        .await
        .unwrap();
    coll.update_one(doc! { "_id": id(2) }, doc! { "$set": { "deleted": true } })
        .await
        .unwrap();

    let live = ids_of(&coll, doc! { "deleted": false }, doc! { "_id": 1 }).await;
    assert_eq!(live, vec![id(0), id(1), id(3), id(4)]);
    let gone = ids_of(&coll, doc! { "deleted": true }, doc! { "_id": 1 }).await;
    assert_eq!(gone, vec![id(2)]);

    // The raw stored value of a `$set` boolean. Real MongoDB: Boolean(true).
    // nx-27017 deviation: Int32(1) (or Int64(1)). Both are truthy; a typed
    // struct must therefore read it through a lenient deserializer.
    let raw = coll
        .find_one(doc! { "_id": id(2) })
        .await
        .unwrap()
        .expect("the soft-deleted moment is still stored");
    let stored = raw.get("deleted").expect("deleted field");
    assert!(
        matches!(
            stored,
            Bson::Boolean(true) | Bson::Int32(1) | Bson::Int64(1)
        ),
        "a $set true must be stored as a truthy value, got {stored:?}"
    );

    #[derive(Deserialize)]
    struct Moment {
        #[serde(deserialize_with = "lenient_bool")]
        deleted: bool,
    }
    let typed = db.collection::<Moment>("moments");
    let m = typed
        .find_one(doc! { "_id": id(2) })
        .await
        .unwrap()
        .unwrap();
    assert!(m.deleted);
    let m = typed
        .find_one(doc! { "_id": id(3) })
        .await
        .unwrap()
        .unwrap();
    assert!(!m.deleted);

    // Restored with `$set: false`: matched by `{deleted: false}` again.
    coll.update_one(doc! { "_id": id(2) }, doc! { "$set": { "deleted": false } })
        .await
        .unwrap();
    let live = ids_of(&coll, doc! { "deleted": false }, doc! { "_id": 1 }).await;
    assert_eq!(live, (0..5).map(id).collect::<Vec<_>>());
    let m = typed
        .find_one(doc! { "_id": id(2) })
        .await
        .unwrap()
        .unwrap();
    assert!(!m.deleted);
    drop_db(db).await;
}

#[tokio::test]
async fn find_one_and_update_returns_the_document() {
    let db = fresh_db("find_one_and_update").await;
    let coll = db.collection::<Document>("counters");
    coll.insert_one(doc! { "_id": "seq", "n": 10 })
        .await
        .unwrap();

    let after = coll
        .find_one_and_update(doc! { "_id": "seq" }, doc! { "$inc": { "n": 1 } })
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .expect("matched document");
    assert_eq!(after.get_str("_id").unwrap(), "seq");
    assert_eq!(as_i64(after.get("n").unwrap()), 11);

    let before = coll
        .find_one_and_update(doc! { "_id": "seq" }, doc! { "$inc": { "n": 1 } })
        .return_document(ReturnDocument::Before)
        .await
        .unwrap()
        .expect("matched document");
    assert_eq!(as_i64(before.get("n").unwrap()), 11);

    let none = coll
        .find_one_and_update(doc! { "_id": "nope" }, doc! { "$inc": { "n": 1 } })
        .await
        .unwrap();
    assert!(none.is_none(), "{none:?}");

    let now = coll.find_one(doc! { "_id": "seq" }).await.unwrap().unwrap();
    assert_eq!(as_i64(now.get("n").unwrap()), 12);
    drop_db(db).await;
}

#[tokio::test]
async fn delete_one_by_id_removes_exactly_one() {
    let db = fresh_db("delete_one_by_id").await;
    let coll = db.collection::<Document>("moments");
    coll.insert_many((0..5).map(|i| doc! { "_id": id(i), "author": "u1" }))
        .await
        .unwrap();

    let r = coll.delete_one(doc! { "_id": id(2) }).await.unwrap();
    assert_eq!(r.deleted_count, 1);
    let r = coll.delete_one(doc! { "_id": id(2) }).await.unwrap();
    assert_eq!(r.deleted_count, 0);

    let left = ids_of(&coll, doc! {}, doc! { "_id": 1 }).await;
    assert_eq!(left, vec![id(0), id(1), id(3), id(4)]);
    drop_db(db).await;
}

#[tokio::test]
async fn count_documents_with_equality_filter() {
    let db = fresh_db("count_documents").await;
    let coll = db.collection::<Document>("moments");
    coll.insert_many((0..10).map(|i| {
        doc! { "_id": id(i), "author": if i % 3 == 0 { "u1" } else { "u2" } }
    }))
    .await
    .unwrap();

    assert_eq!(
        coll.count_documents(doc! { "author": "u1" }).await.unwrap(),
        4
    );
    assert_eq!(
        coll.count_documents(doc! { "author": "u2" }).await.unwrap(),
        6
    );
    assert_eq!(
        coll.count_documents(doc! { "author": "u3" }).await.unwrap(),
        0
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 10);
    drop_db(db).await;
}

#[tokio::test]
async fn grouped_count_by_field_with_in_match() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Count {
        #[serde(rename = "_id")]
        key: i64,
        n: i64,
    }
    let db = fresh_db("grouped_count").await;
    let coll = db.collection::<Document>("follows");
    let (a, b, c) = (id(100), id(200), id(300));
    let followees = [a, a, a, b, b, b, b, b, c];
    coll.insert_many(followees.iter().enumerate().map(
        |(i, f)| doc! { "_id": id(i as i64), "follower": id(1000 + i as i64), "followee": *f },
    ))
    .await
    .unwrap();

    let pipeline = [
        doc! { "$match": { "followee": { "$in": [a, b, id(999)] } } },
        doc! { "$group": { "_id": "$followee", "n": { "$sum": 1 } } },
    ];
    let mut counts: Vec<Count> = coll
        .aggregate(pipeline)
        .with_type::<Count>()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    counts.sort_by_key(|c| c.key);
    // The group key comes back as the integer it was (a `$project` would
    // make it a string on nx-27017); keys with nothing matched are absent.
    assert_eq!(counts, vec![Count { key: a, n: 3 }, Count { key: b, n: 5 }]);
    drop_db(db).await;
}

#[tokio::test]
async fn small_i64_deserializes_into_i64_field() {
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Counts {
        #[serde(rename = "_id")]
        id: i64,
        small: i64,
        negative: i64,
        big: i64,
    }

    let db = fresh_db("small_i64").await;
    let coll = db.collection::<Counts>("counts");
    let written = Counts {
        id: id(1),
        small: 42,
        negative: -7,
        big: 5_000_000_000,
    };
    coll.insert_one(&written).await.unwrap();

    // nx-27017 returns integers that fit 32 bits as Int32 (real MongoDB keeps
    // the Int64 that was written); a typed i64 field must accept either.
    let read = coll
        .find_one(doc! { "_id": id(1) })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(read, written);

    let raw = db
        .collection::<Document>("counts")
        .find_one(doc! { "_id": id(1) })
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(raw.get("small"), Some(Bson::Int32(42) | Bson::Int64(42))),
        "{raw:?}"
    );
    assert_eq!(raw.get("big"), Some(&Bson::Int64(5_000_000_000)));
    drop_db(db).await;
}

#[tokio::test]
async fn ttl_index_can_be_created() {
    let db = fresh_db("ttl_index").await;
    let coll = db.collection::<Document>("sessions");
    coll.create_index(
        IndexModel::builder()
            .keys(doc! { "expiresAt": 1 })
            .options(
                IndexOptions::builder()
                    .expire_after(Duration::from_secs(3600))
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();

    // Identify the index by its keys, not its name: nx-27017 ignores the
    // requested (or default, `expiresAt_1`) name and lists its own
    // (`idx_sessions_expiresAt`); real MongoDB lists the requested name.
    let indexes: Vec<IndexModel> = coll
        .list_indexes()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let ttl = indexes
        .iter()
        .find(|i| i.keys == doc! { "expiresAt": 1 })
        .unwrap_or_else(|| panic!("TTL index not listed: {indexes:?}"));
    let expire_after = ttl.options.as_ref().and_then(|o| o.expire_after);
    assert_eq!(expire_after, Some(Duration::from_secs(3600)), "{ttl:?}");
    drop_db(db).await;
}

#[tokio::test]
async fn a_duplicate_id_is_told_apart_from_a_duplicate_unique_key() {
    use moments::store::mongo::{duplicate_of, DuplicateOf};
    let db = fresh_db("dup_id_or_key").await;
    let coll = db.collection::<Document>("follows");
    coll.create_index(
        IndexModel::builder()
            .keys(doc! { "follower": 1, "followee": 1 })
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .await
    .unwrap();
    coll.insert_one(doc! { "_id": id(1), "follower": 1, "followee": 2 })
        .await
        .unwrap();
    // A taken id: must never be read as "this follow exists".
    let same_id = coll
        .insert_one(doc! { "_id": id(1), "follower": 3, "followee": 4 })
        .await
        .expect_err("a taken _id must be rejected");
    assert_eq!(duplicate_of(&same_id), Some(DuplicateOf::Id), "{same_id:?}");
    // The same edge under a new id: it exists already.
    let same_edge = coll
        .insert_one(doc! { "_id": id(2), "follower": 1, "followee": 2 })
        .await
        .expect_err("a duplicate edge must be rejected");
    assert_eq!(
        duplicate_of(&same_edge),
        Some(DuplicateOf::Key),
        "{same_edge:?}"
    );
    drop_db(db).await;
}

#[tokio::test]
async fn follow_counts_are_kept_on_the_user_and_backfilled_once() {
    use moments::store::mongo::MongoDocs;
    use moments::store::{AccountDocs, DocStore, FollowDoc, SocialDocs, UserDoc};
    let name = format!("conf_counts_{}", random_suffix());
    let uri = std::env::var("MOMENTS_TEST_MONGODB_URI").unwrap();
    let docs = MongoDocs::connect(&uri, &name).await.unwrap();
    docs.apply_schemas().await.unwrap();
    let user = |uid: i64| UserDoc {
        uid,
        username: format!("u{uid}"),
        nick_name: "n".into(),
        head_img: String::new(),
        password_hash: String::new(),
        roles: vec![],
        created_at: 0,
        last_active_at: 0,
    };
    let (a, b, c) = (id(1), id(2), id(3));
    for u in [a, b] {
        docs.insert_user(&user(u)).await.unwrap();
    }
    let edge = |n: i64, follower, followee| FollowDoc {
        id: id(100 + n),
        follower,
        followee,
        created_at: 0,
    };
    assert!(docs.insert_follow(&edge(1, a, b)).await.unwrap());
    assert!(
        !docs.insert_follow(&edge(2, a, b)).await.unwrap(),
        "one edge"
    );
    assert_eq!(docs.follow_counts(b).await.unwrap(), (1, 0));
    assert_eq!(docs.follow_counts(a).await.unwrap(), (0, 1));
    let raw = docs.database().collection::<Document>("users");
    let stored = raw.find_one(doc! { "_id": b }).await.unwrap().unwrap();
    assert_eq!(as_i64(stored.get("followersCount").unwrap()), 1, "{stored}");
    assert!(docs.delete_follow(a, b).await.unwrap());
    assert_eq!(docs.follow_counts(b).await.unwrap(), (0, 0));

    // An account from before the counters: counted once, then kept.
    let mut old = mongodb::bson::to_document(&user(c)).unwrap();
    old.remove("followersCount");
    raw.insert_one(old).await.unwrap();
    docs.database()
        .collection::<Document>("follows")
        .insert_one(doc! { "_id": id(200), "follower": a, "followee": c, "createdAt": 0 })
        .await
        .unwrap();
    assert_eq!(docs.follow_counts(c).await.unwrap(), (1, 0));
    let stored = raw.find_one(doc! { "_id": c }).await.unwrap().unwrap();
    assert_eq!(as_i64(stored.get("followersCount").unwrap()), 1, "{stored}");
    assert!(docs.insert_follow(&edge(3, b, c)).await.unwrap());
    assert_eq!(docs.follow_counts(c).await.unwrap(), (2, 0));
    drop_db(docs.database().clone()).await;
}

#[tokio::test]
async fn max_only_ever_raises_a_field() {
    let db = fresh_db("max_raises").await;
    let coll = db.collection::<Document>("users");
    coll.insert_one(doc! { "_id": id(1) }).await.unwrap();
    for (offer, expect) in [(id(50), id(50)), (id(40), id(50)), (id(60), id(60))] {
        coll.update_one(doc! { "_id": id(1) }, doc! { "$max": { "mark": offer } })
            .await
            .unwrap();
        let d = coll.find_one(doc! { "_id": id(1) }).await.unwrap().unwrap();
        assert_eq!(
            as_i64(d.get("mark").unwrap()),
            expect,
            "after offering {offer}"
        );
    }
    drop_db(db).await;
}

#[tokio::test]
async fn a_conditional_update_is_won_by_exactly_one_of_concurrent_claimers() {
    // The instance-id lease and the claim of a saved fan-out both rest on
    // this: of many `update_one(_id, field < now)` at once, one modifies.
    let db = fresh_db("conditional_claim").await;
    let coll = db.collection::<Document>("fan_outs");
    coll.insert_one(doc! { "_id": id(1), "claimedUntil": 0, "resumeBefore": Bson::Null })
        .await
        .unwrap();
    let now = 1_700_000_000_000_i64;
    let claims = (0..16_i64).map(|i| {
        let coll = coll.clone();
        async move {
            coll.update_one(
                doc! { "_id": id(1), "claimedUntil": { "$lt": now } },
                doc! { "$set": { "claimedUntil": now + 60_000 + i } },
            )
            .await
            .unwrap()
            .modified_count
        }
    });
    let won: u64 = futures_util::future::join_all(claims).await.iter().sum();
    assert_eq!(won, 1);
    // Held until it lapses, then taken again.
    let held = coll
        .find(doc! { "claimedUntil": { "$lt": now + 1 } })
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap();
    assert!(held.is_empty(), "{held:?}");
    let lapsed = coll
        .update_one(
            doc! { "_id": id(1), "claimedUntil": { "$lt": now + 120_000 } },
            doc! { "$set": { "claimedUntil": now + 180_000 } },
        )
        .await
        .unwrap();
    assert_eq!(lapsed.modified_count, 1);
    let d = coll.find_one(doc! { "_id": id(1) }).await.unwrap().unwrap();
    assert_eq!(d.get("resumeBefore"), Some(&Bson::Null), "{d}");
    drop_db(db).await;
}
