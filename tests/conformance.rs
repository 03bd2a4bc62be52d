//! Store conformance: each MongoDB behaviour the service relies on, asserted
//! directly through the official `mongodb` driver, so that the day this runs
//! against real MongoDB (a `mongo:7` container) any difference shows up here
//! first, before it shows up as a puzzling API test failure.
//!
//! The test command runs it on nx-27017 and on FerretDB 1.24 (see
//! TESTING.md, "nx-27017: measured deviations", and docs/FERRETDB.md).
//! Every assertion here is one all of them and MongoDB agree on; where a
//! server deviates the service uses a formulation that holds on all, and
//! the test asserts that formulation. What no longer appears here is what
//! the service no longer relies on: `$push` with `$position`/`$slice`, and
//! conditional updates or `$addToSet` deciding races (FerretDB applies
//! neither atomically).
//!
//! Each test uses its own database (`conf_<test>_<random>`) and drops it at the
//! end, best effort.

use std::collections::BTreeSet;

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

/// The adapter itself on a fresh database, its schemas applied: for the
/// formulations the service uses, asserted through the code that uses them.
async fn fresh_docs(test: &str) -> moments::store::mongo::MongoDocs {
    use moments::store::DocStore;
    let uri = std::env::var("MOMENTS_TEST_MONGODB_URI").unwrap_or_default();
    let name = fresh_db(test).await.name().to_string();
    let docs = moments::store::mongo::MongoDocs::connect(&uri, &name)
        .await
        .unwrap_or_else(|e| panic!("cannot connect the adapter to {uri}: {e}"));
    docs.apply_schemas()
        .await
        .unwrap_or_else(|e| panic!("cannot apply the schemas: {e}"));
    docs
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
async fn a_duplicate_id_is_told_apart_from_a_duplicate_unique_key() {
    // MongoDB names the index in its error, nx-27017 the column, FerretDB
    // neither: `insert_checked` reads the error where it can and looks the
    // attempted `_id` up where it cannot.
    use moments::store::mongo::{insert_checked, DuplicateOf};
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
    let first = doc! { "_id": id(1), "follower": 1, "followee": 2 };
    assert_eq!(insert_checked(&coll, &first).await.unwrap(), Ok(()));
    // A taken id: must never be read as "this follow exists".
    let same_id = doc! { "_id": id(1), "follower": 3, "followee": 4 };
    assert_eq!(
        insert_checked(&coll, &same_id).await.unwrap(),
        Err(DuplicateOf::Id)
    );
    // The same edge under a new id: it exists already.
    let same_edge = doc! { "_id": id(2), "follower": 1, "followee": 2 };
    assert_eq!(
        insert_checked(&coll, &same_edge).await.unwrap(),
        Err(DuplicateOf::Key)
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    drop_db(db).await;
}

#[tokio::test]
async fn follow_counts_are_kept_on_the_user_and_backfilled_once() {
    use moments::store::{AccountDocs, FollowDoc, SocialDocs, UserDoc};
    let docs = fresh_docs("counts").await;
    let user = |uid: i64| UserDoc::new(uid, format!("u{uid}"), String::new(), 0);
    let (a, b, c) = (id(1), id(2), id(3));
    for u in [a, b] {
        docs.insert_user(&user(u)).await.unwrap();
    }
    let edge = |n: i64, follower, followee| FollowDoc::new(id(100 + n), follower, followee);
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
async fn of_concurrent_inserts_of_one_id_exactly_one_succeeds() {
    // The claim every race is decided by (a saved fan-out, an expired
    // instance lease, a stale idempotency key): the one write that is
    // atomic on every server here.
    let db = fresh_db("claim_by_insert").await;
    let coll = db.collection::<Document>("claims");
    let attempts = (0..32_i64).map(|i| {
        let coll = coll.clone();
        async move {
            match coll
                .insert_one(doc! { "_id": "fan_out:1:2:0", "by": i })
                .await
            {
                Ok(_) => true,
                Err(e) => {
                    assert!(
                        matches!(&*e.kind, ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == DUPLICATE_KEY),
                        "{e:?}"
                    );
                    false
                }
            }
        }
    });
    let won = futures_util::future::join_all(attempts)
        .await
        .into_iter()
        .filter(|w| *w)
        .count();
    assert_eq!(won, 1);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    drop_db(db).await;
}

#[tokio::test]
async fn a_saved_fan_out_is_claimed_by_exactly_one_of_concurrent_sweeps() {
    use moments::domain::post::Visibility;

    use moments::store::{FanOutDoc, FanOutDocs};
    let docs = fresh_docs("fan_out_claim").await;
    let saved = FanOutDoc {
        resume_before: Some(id(9)),
        saved_at: moments::ids::now_ms(),
        ..FanOutDoc::new(id(1), id(2), Visibility::Public, 0)
    };
    docs.save_fan_out(&saved).await.unwrap();
    // The real time: the claims' records expire an hour after it, and
    // nx-27017 runs TTL indexes at once.
    let now = moments::ids::now_ms();
    let sweeps = (0..16).map(|_| docs.claim_fan_outs(now, now + 60_000, 10));
    let claimed: Vec<FanOutDoc> = futures_util::future::join_all(sweeps)
        .await
        .into_iter()
        .flat_map(|r| r.unwrap())
        .collect();
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].resume_before, Some(id(9)));
    // Held until the claim lapses...
    assert!(docs
        .claim_fan_outs(now + 1, now + 2, 10)
        .await
        .unwrap()
        .is_empty());
    // ...then taken again, by one.
    let later = now + 120_000;
    let sweeps = (0..8).map(|_| docs.claim_fan_outs(later, later + 60_000, 10));
    let again: usize = futures_util::future::join_all(sweeps)
        .await
        .into_iter()
        .map(|r| r.unwrap().len())
        .sum();
    assert_eq!(again, 1);
    drop_db(docs.database().clone()).await;
}

#[tokio::test]
async fn expired_sessions_are_purged_by_the_sweep_on_every_server() {
    // MongoDB's TTL monitor deletes expired sessions within a minute or so,
    // nx-27017's at once; FerretDB has no TTL indexes (the schema falls back
    // to a plain index of the same name). The expiry sweep's filtered delete
    // is what holds on all three.

    use moments::store::{AccountDocs, DocStore, SessionDoc};
    let docs = fresh_docs("ttl").await;
    // Applying twice changes nothing and fails nowhere.
    docs.apply_schemas().await.unwrap();
    let sessions = docs.database().collection::<Document>("sessions");
    let indexes: Vec<IndexModel> = sessions
        .list_indexes()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(
        indexes
            .iter()
            .any(|i| i.keys.contains_key("expireAt") || i.keys.contains_key("expiresAt")),
        "the expiry index: {indexes:?}"
    );
    let now = moments::ids::now_ms();
    for (n, expires) in [(1, now - 1), (2, now - 1000), (3, now + 3_600_000)] {
        docs.insert_session(&SessionDoc::new(
            id(n),
            id(100),
            format!("{n:064}"),
            0,
            expires,
        ))
        .await
        .unwrap();
    }
    // A TTL monitor may have taken some already.
    assert!(docs.purge_expired_sessions(now, 10).await.unwrap() <= 2);
    let left: Vec<i64> = ids_of(&sessions, doc! {}, doc! { "_id": 1 }).await;
    assert_eq!(left, vec![id(3)]);
    drop_db(docs.database().clone()).await;
}

#[tokio::test]
async fn a_posts_id_arrays_hold_its_newest_ids_first_capped() {
    // MongoDB and nx-27017 keep them with `$push`'s `$position` and
    // `$slice`; FerretDB ignores both, and there the adapter rewrites the
    // array from the collection it mirrors. Either way, this is what a
    // post's document carries.

    use moments::store::{CommentDoc, CommentDocs, LikeDoc, LikeDocs, LikeKind, PostDocs};
    let docs = fresh_docs("id_arrays").await;
    let post = id(1);
    docs.insert_post(&text_post(post)).await.unwrap();
    const CAP: usize = 3;
    let comment = |n: i64| CommentDoc::text(id(100 + n), post, id(2), format!("c{n}"), 0);
    for n in 1..=5 {
        docs.insert_comment(&comment(n), CAP).await.unwrap();
    }
    for n in 1..=4 {
        let like = LikeDoc::new(id(200 + n), LikeKind::Post, post, id(300 + n));
        assert!(docs.insert_like(&like, CAP).await.unwrap());
    }
    let stored = || async { docs.posts_by_ids(&[post]).await.unwrap().pop().unwrap() };
    let p = stored().await;
    assert_eq!(p.comments_postid, vec![id(105), id(104), id(103)]);
    assert_eq!(p.likes_postid, vec![id(204), id(203), id(202)]);
    // A delete takes its id out; the next write fills the array again.
    assert!(docs.delete_comment(&comment(4)).await.unwrap());
    assert!(docs
        .delete_like(LikeKind::Post, post, id(303))
        .await
        .unwrap()
        .is_some());
    let p = stored().await;
    assert_eq!(p.comments_postid, vec![id(105), id(103)]);
    assert_eq!(p.likes_postid, vec![id(204), id(202)]);
    docs.insert_comment(&comment(6), CAP).await.unwrap();
    assert_eq!(stored().await.comments_postid[0], id(106));
    assert_eq!(stored().await.comments_postid.len(), CAP);
    drop_db(docs.database().clone()).await;
}

#[tokio::test]
async fn hot_comments_rank_by_their_likes_peak_which_never_falls() {
    // The hot order: an update raising `likesPeak` guarded by `$lt` or
    // `$exists: false` in an `$or`, and a page sorted on two fields
    // descending below a (peak, id) key, through the adapter.
    use moments::store::{CommentDoc, CommentDocs, LikeDoc, LikeDocs, LikeKind};
    let docs = fresh_docs("hot_comments").await;
    let post = id(1);
    let comment = |n: i64| CommentDoc::text(id(100 + n), post, id(2), format!("c{n}"), 0);
    for n in 1..=4 {
        docs.insert_comment(&comment(n), 10).await.unwrap();
    }
    let like = |n: i64, uid: i64| {
        LikeDoc::new(
            id(1000 + 10 * n + uid),
            LikeKind::Comment,
            id(100 + n),
            id(500 + uid),
        )
    };
    // c2: two likes, c3: one.
    for (n, uid) in [(2, 1), (2, 2), (3, 1)] {
        assert!(docs.insert_like(&like(n, uid), 10).await.unwrap());
        docs.raise_likes_peak(post, id(100 + n)).await.unwrap();
    }
    let page = |after: Option<(i64, i64)>| {
        let docs = &docs;
        async move {
            docs.hot_comments_page(post, after, 10)
                .await
                .unwrap()
                .iter()
                .map(|c| (c.likes_peak, c.id))
                .collect::<Vec<_>>()
        }
    };
    let all = page(None).await;
    assert_eq!(
        all,
        vec![(2, id(102)), (1, id(103)), (0, id(104)), (0, id(101))]
    );
    // Below a key, exclusive of it.
    assert_eq!(page(Some((1, id(103)))).await, all[2..].to_vec());
    assert_eq!(page(Some((0, id(104)))).await, all[3..].to_vec());
    // An unlike leaves the peak where it was.
    assert!(docs
        .delete_like(LikeKind::Comment, id(102), id(501))
        .await
        .unwrap()
        .is_some());
    docs.raise_likes_peak(post, id(102)).await.unwrap();
    assert_eq!(page(None).await, all);
    drop_db(docs.database().clone()).await;
}

#[tokio::test]
async fn views_are_stored_once_per_reader_post_and_day() {
    use moments::store::{PostDocs, ViewDoc, ViewDocs};
    let docs = fresh_docs("views").await;
    // Counts are kept on the posts.
    for post in [10, 11] {
        docs.insert_post(&text_post(id(post))).await.unwrap();
    }
    let view = |n: i64, uid: i64, post: i64, day: i64| {
        ViewDoc::new(id(100 + n), id(uid), id(post), day, 0)
    };
    let first = [view(1, 1, 10, 5), view(2, 2, 10, 5), view(3, 1, 11, 5)];
    assert_eq!(docs.record_views(id(900), &first).await.unwrap(), 3);
    // Again the same reader, post and day (new ids): refused; another day,
    // and a new reader, stored; the rest of the batch goes in around them.
    let second = [
        view(4, 1, 10, 5),
        view(5, 1, 10, 6),
        view(6, 2, 10, 5),
        view(7, 3, 10, 5),
    ];
    assert_eq!(docs.record_views(id(901), &second).await.unwrap(), 2);
    // The same batch again, as a retry after a failure sends it: nothing
    // is stored or counted twice.
    assert_eq!(docs.record_views(id(901), &second).await.unwrap(), 2);
    let mut counts = docs.view_counts(&[id(10), id(11), id(12)]).await.unwrap();
    counts.sort_unstable();
    assert_eq!(counts, vec![(id(10), 4), (id(11), 1), (id(12), 0)]);
    // A retry of a batch whose views were stored but whose counts were
    // not (a failure between the two steps): counted then, once.
    let third = [view(8, 4, 10, 5), view(9, 4, 11, 5)];
    docs.database()
        .collection::<ViewDoc>("views")
        .insert_many(&third)
        .await
        .unwrap();
    assert_eq!(docs.record_views(id(902), &third).await.unwrap(), 2);
    assert_eq!(docs.record_views(id(902), &third).await.unwrap(), 2);
    let mut counts = docs.view_counts(&[id(10), id(11)]).await.unwrap();
    counts.sort_unstable();
    assert_eq!(counts, vec![(id(10), 5), (id(11), 2)]);
    drop_db(docs.database().clone()).await;
}

/// A live public text post by `id(2)`, with empty id arrays.
fn text_post(post: i64) -> moments::store::PostDoc {
    moments::store::PostDoc::text(post, id(2), "a post", 0)
}
