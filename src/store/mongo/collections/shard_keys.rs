//! Whether each query would reach one shard of a sharded cluster: the
//! check beside the store that the test suite enforces.
//!
//! Every collection's shard key is in its `schemas/` file (`shardKey`, with
//! `shardKeyWhy`). The driver reports every command it sends; a query whose
//! filter does not pin the shard key's first field (by equality or `$in`)
//! would go to every shard. Those are either listed in [`SCATTER`] with the
//! reason they may (background sweeps, deliberate trade-offs the README
//! lists), or recorded as violations. Debug builds record them, per
//! database, and the API suite fails any test whose app made one; release
//! builds do not install the check.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use mongodb::bson::{Bson, Document};
use mongodb::event::command::CommandEvent;

use super::SCHEMAS;

/// Queries that may go to every shard, by collection and the top-level
/// fields of their filter (sorted), with why. The README's "Sharding"
/// section lists the request-path ones.
pub const SCATTER: &[(&str, &[&str], &str)] = &[
    // Background work: sweeps seconds or minutes apart in bounded batches,
    // account erasure, the repair tools' scans and totals.
    ("sessions", &["expiresAt"], "the expiry sweep"),
    ("sessions", &["_id"], "the expiry sweep, deleting by id what it found"),
    ("idempotency_keys", &["expireAt"], "the expiry sweep"),
    ("idempotency_keys", &["expiresAt"], "the expiry sweep"),
    ("claims", &["expireAt"], "purging expired claims, a few per claim"),
    ("notifications", &["_id"], "the retention sweep (by id range)"),
    ("views", &["_id"], "the retention sweep (by id range)"),
    ("notifications", &["$or"], "erasing an account: notifications to or by it"),
    ("comments", &["author_uid", "deleted"], "erasing an account: its comments"),
    ("users", &[], "the repair tools' scans and totals"),
    ("users", &["_id"], "the repair tools' full scan, by uid range"),
    ("users", &["erasing"], "resuming account erasures"),
    ("users", &["roles"], "the moderators and admins a new report is told to: a handful, indexed"),
    ("posts", &["deleted"], "the repair tools' totals"),
    ("exports", &["claimedUntil", "state"], "the export job's claims, every second, on an index of the unfinished ones"),
    ("exports", &["expiresAt"], "the expiry sweep of exports"),
    ("imports", &["claimedUntil", "state"], "the import job's claims, every second, on an index of the unfinished ones"),
    ("posts", &["_id", "deleted"], "the repair tools' full scan"),
    ("posts", &["_id"], "the search indexer: posts in id order past its mark, a batch a second"),
    ("posts", &[], "the search indexer's first pass, from the first post"),
    ("media", &["state", "stateSince"], "the media sweeps: unattached pictures, attachments to check"),
    // Deliberate, on the request path.
    (
        "users",
        &["nickKey"],
        "people search by a nickname's start; users are sharded by uid",
    ),
    (
        "users",
        &["$or", "_id"],
        "once, at start-up, the accounts whose nickname is unkeyed or keyed by an older folding, in uid order",
    ),
    (
        "users",
        &["$or"],
        "the next page of a people search, by username or by nickname, from its cursor",
    ),
    (
        "users",
        &["username"],
        "sign-in and sign-up find a user by name; users are sharded by uid, which every other read has",
    ),
    (
        "posts",
        &["author_uid", "deleted"],
        "a user's posts and a timeline rebuild read by author; posts are sharded by id so that every expanded post of every page is one targeted read",
    ),
    (
        "posts",
        &["_id", "author_uid", "deleted"],
        "the next page of a user's posts or of a rebuild (by author, below an id)",
    ),
    (
        "follows",
        &["followee"],
        "a user's followers and the fan-out read edges by followee; follows are sharded by follower, which timelines and follow checks read by",
    ),
    (
        "follows",
        &["_id", "followee"],
        "the next page of a user's followers, and of the fan-out",
    ),
    (
        "likes",
        &["uid"],
        "a user's own likes, newest first (GET /me/likes, and erasing an account); likes are sharded by target so that a post's likers and like checks are one shard",
    ),
    (
        "likes",
        &["_id", "uid"],
        "the next page of GET /me/likes",
    ),
    (
        "blocks",
        &["$or"],
        "blocks between a page's authors and the viewer, either way round: one query for both directions; and erasing an account, a batch of its blocks either way",
    ),
    (
        "blocks",
        &["blocked"],
        "rebuilding who blocked a viewer, at most MOMENTS_BLOCKERS_READ_WHOLE + 1 of them; blocks are sharded by blocker, which the viewer's own blocks and every probe of a page's people read by",
    ),
    (
        "shares",
        &["uid"],
        "erasing an account: its shares (shares are sharded by post, which counting them reads by)",
    ),
    ("shares", &["_id", "uid"], "a data export's next page of the account's shares"),
    ("comments", &["_id", "author_uid", "deleted"], "a data export's next page of the account's comments"),
    (
        "filters",
        &["$or"],
        "erasing an account: the mutes and hides set by or on it",
    ),
    (
        "filters",
        &["_id"],
        "erasing an account: deleting by id the mutes and hides found set by or on it (their setters are many)",
    ),
    (
        "comments",
        &["_id"],
        "a comment found by the id alone in its own URL (DELETE /comments/{id}, GET /comments/{id}/replies), or in a like of it (erasing an account)",
    ),
    // Small collections are unsharded (schemas/: "shardKey": "unsharded").
];

/// The comment on a query that only a server which cannot be sharded ever
/// receives (FerretDB's fallbacks), so the check lets it pass.
pub const NEVER_ON_A_SHARDED_CLUSTER: &str = "moments: only sent to an unsharded server";

/// Violations recorded per database (tests use one database each).
fn violations() -> &'static Mutex<HashMap<String, Vec<String>>> {
    static V: OnceLock<Mutex<HashMap<String, Vec<String>>>> = OnceLock::new();
    V.get_or_init(Mutex::default)
}

/// Queries this process sent to `db` that would not target one shard.
pub fn violations_in(db: &str) -> Vec<String> {
    violations()
        .lock()
        .map(|v| v.get(db).cloned().unwrap_or_default())
        .unwrap_or_default()
}

/// Each collection's shard key fields, from `schemas/`.
fn shard_keys() -> &'static HashMap<String, Vec<String>> {
    static K: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    K.get_or_init(|| {
        SCHEMAS
            .iter()
            .filter_map(|(name, text)| {
                let v: serde_json::Value = serde_json::from_str(text).ok()?;
                // "unsharded" collections live on one shard: nothing to check.
                let key = v.get("shardKey")?.as_object()?;
                Some((name.to_string(), key.keys().cloned().collect()))
            })
            .collect()
    })
}

/// The driver's command callback: checks every query's filter.
pub fn check(event: CommandEvent) {
    let CommandEvent::Started(started) = event else {
        return;
    };
    if started.command.get_str("comment") == Ok(NEVER_ON_A_SHARDED_CLUSTER) {
        return;
    }
    let name = started.command_name.as_str();
    let Ok(collection) = started.command.get_str(name) else {
        return;
    };
    let filters: Vec<Document> = match name {
        "find" => started
            .command
            .get_document("filter")
            .cloned()
            .into_iter()
            .collect(),
        "count" | "distinct" | "findAndModify" => started
            .command
            .get_document("query")
            .cloned()
            .into_iter()
            .collect(),
        "update" | "delete" => {
            let list = if name == "update" {
                "updates"
            } else {
                "deletes"
            };
            started
                .command
                .get_array(list)
                .map(|a| {
                    a.iter()
                        .filter_map(|u| u.as_document()?.get_document("q").ok().cloned())
                        .collect()
                })
                .unwrap_or_default()
        }
        "aggregate" => started
            .command
            .get_array("pipeline")
            .ok()
            .and_then(|p| p.first())
            .and_then(|stage| stage.as_document()?.get_document("$match").ok().cloned())
            .into_iter()
            .collect(),
        _ => return,
    };
    for filter in filters {
        if let Some(problem) = judge(collection, &filter) {
            tracing::warn!(db = %started.db, "{problem}");
            if let Ok(mut v) = violations().lock() {
                v.entry(started.db.clone()).or_default().push(problem);
            }
        }
    }
}

/// Why this query would reach every shard, if it would and is not allowed.
pub fn judge(collection: &str, filter: &Document) -> Option<String> {
    let key = shard_keys().get(collection)?;
    let first = key.first()?;
    if pins(filter, first) {
        return None;
    }
    let mut fields: Vec<&str> = filter.keys().map(String::as_str).collect();
    fields.sort_unstable();
    let allowed = SCATTER
        .iter()
        .any(|(c, f, _)| *c == collection && *f == fields.as_slice());
    (!allowed).then(|| {
        format!(
            "a query on {collection} without its shard key {first} would reach every shard \
             (filter fields {fields:?}): {filter}"
        )
    })
}

/// Whether `filter` fixes `field` to one value or a list of values.
fn pins(filter: &Document, field: &str) -> bool {
    if let Some(v) = filter.get(field) {
        return match v {
            Bson::Document(d) => d.keys().all(|op| op == "$eq" || op == "$in"),
            _ => true,
        };
    }
    // Every branch of an $and pinning it is enough for one; every branch
    // of an $or must.
    let branches = |op: &str| {
        filter.get_array(op).ok().map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .map(|d| pins(d, field))
                .collect::<Vec<bool>>()
        })
    };
    branches("$and").is_some_and(|b| b.iter().any(|p| *p))
        || branches("$or").is_some_and(|b| !b.is_empty() && b.iter().all(|p| *p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn a_query_targets_one_shard_only_when_it_pins_the_key() {
        assert_eq!(judge("comments", &doc! { "postId": 5 }), None);
        assert_eq!(
            judge("comments", &doc! { "postId": { "$in": [1, 2] } }),
            None
        );
        assert!(judge("comments", &doc! { "postId": { "$gt": 5 } }).is_some());
        assert!(judge("comments", &doc! { "authorUid": 5 }).is_some());
        assert_eq!(
            judge("comments", &doc! { "$and": [{ "postId": 5 }, { "x": 1 }] }),
            None
        );
        // Allowed, with its reason, in SCATTER.
        assert_eq!(judge("users", &doc! { "username": "ann" }), None);
    }

    #[test]
    fn every_collection_names_its_shard_key_and_why() {
        for (name, text) in SCHEMAS {
            let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
            let key = v.get("shardKey");
            assert!(
                key.and_then(|k| k.as_object())
                    .is_some_and(|k| !k.is_empty())
                    || key.and_then(|k| k.as_str()) == Some("unsharded"),
                "schemas/{name}.json has no shardKey"
            );
            assert!(
                v.get("shardKeyWhy")
                    .and_then(|w| w.as_str())
                    .is_some_and(|w| w.len() > 20),
                "schemas/{name}.json does not say why its shard key is what it is"
            );
        }
    }
}
