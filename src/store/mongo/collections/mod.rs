//! Applies `schemas/*.json` (one validator and index list per collection) at
//! start-up: create the collection with its validator, or `collMod` an
//! existing one; create indexes by name. Running it twice changes nothing.
//! Beside it, `shard_keys` checks that each query reaches one shard.

use mongodb::bson::{doc, Document};
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};
use serde::Deserialize;
use std::time::Duration;

pub mod shard_keys;

use super::classify;
use crate::store::{StoreError, StoreResult};

/// Compiled in, so the binary never depends on where it was started from.
pub const SCHEMAS: [(&str, &str); 31] = [
    ("users", include_str!("../../../../schemas/users.json")),
    ("posts", include_str!("../../../../schemas/posts.json")),
    (
        "comments",
        include_str!("../../../../schemas/comments.json"),
    ),
    ("likes", include_str!("../../../../schemas/likes.json")),
    (
        "device_models",
        include_str!("../../../../schemas/device_models.json"),
    ),
    ("follows", include_str!("../../../../schemas/follows.json")),
    ("blocks", include_str!("../../../../schemas/blocks.json")),
    (
        "notifications",
        include_str!("../../../../schemas/notifications.json"),
    ),
    (
        "sessions",
        include_str!("../../../../schemas/sessions.json"),
    ),
    (
        "instance_leases",
        include_str!("../../../../schemas/instance_leases.json"),
    ),
    (
        "idempotency_keys",
        include_str!("../../../../schemas/idempotency_keys.json"),
    ),
    (
        "fan_outs",
        include_str!("../../../../schemas/fan_outs.json"),
    ),
    (
        "live_repairs",
        include_str!("../../../../schemas/live_repairs.json"),
    ),
    ("claims", include_str!("../../../../schemas/claims.json")),
    (
        "favorites",
        include_str!("../../../../schemas/favorites.json"),
    ),
    ("filters", include_str!("../../../../schemas/filters.json")),
    ("labels", include_str!("../../../../schemas/labels.json")),
    ("shares", include_str!("../../../../schemas/shares.json")),
    ("views", include_str!("../../../../schemas/views.json")),
    ("reports", include_str!("../../../../schemas/reports.json")),
    (
        "moderation_cases",
        include_str!("../../../../schemas/moderation_cases.json"),
    ),
    (
        "open_cases",
        include_str!("../../../../schemas/open_cases.json"),
    ),
    (
        "held_posts",
        include_str!("../../../../schemas/held_posts.json"),
    ),
    (
        "audit_log",
        include_str!("../../../../schemas/audit_log.json"),
    ),
    (
        "instance",
        include_str!("../../../../schemas/instance.json"),
    ),
    (
        "content_filters",
        include_str!("../../../../schemas/content_filters.json"),
    ),
    ("strikes", include_str!("../../../../schemas/strikes.json")),
    ("exports", include_str!("../../../../schemas/exports.json")),
    ("imports", include_str!("../../../../schemas/imports.json")),
    (
        "export_chunks",
        include_str!("../../../../schemas/export_chunks.json"),
    ),
    ("media", include_str!("../../../../schemas/media.json")),
];

#[derive(Deserialize)]
pub struct Schema {
    pub collection: String,
    pub validator: serde_json::Value,
    pub indexes: Vec<IndexSpec>,
}

#[derive(Deserialize)]
pub struct IndexSpec {
    pub name: String,
    pub keys: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub unique: bool,
    /// A TTL index: documents expire this long after the date in its key.
    #[serde(default, rename = "expireAfterSeconds")]
    pub expire_after_seconds: Option<u64>,
}

pub fn parse_all() -> Result<Vec<Schema>, String> {
    SCHEMAS
        .iter()
        .map(|(name, text)| {
            serde_json::from_str::<Schema>(text).map_err(|e| format!("schemas/{name}.json: {e}"))
        })
        .collect()
}

fn to_document(v: &serde_json::Value) -> StoreResult<Document> {
    mongodb::bson::to_document(v).map_err(|e| StoreError::Other(e.into()))
}

/// nx-27017, the MongoDB-wire server tests run on (TESTING.md), accepts a
/// compound index that names `_id` but then fails every insert into that
/// collection. On it, such indexes are created without `_id`; on MongoDB
/// they are created as written (`_id` last lets a keyset page walk the index).
async fn is_wire_stand_in(db: &Database) -> bool {
    match db.run_command(doc! { "buildInfo": 1 }).await {
        Ok(info) => info
            .get_str("process")
            .is_ok_and(|p| p.starts_with("nx_27017")),
        Err(_) => false,
    }
}

fn has_code(e: &mongodb::error::Error, code: i32) -> bool {
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == code)
}

/// Another instance created the collection a moment ago.
fn namespace_exists(e: &mongodb::error::Error) -> bool {
    has_code(e, 48)
}

/// NotImplemented: FerretDB 1.24 implements neither `$jsonSchema`
/// validators nor TTL indexes (docs/FERRETDB.md).
fn not_implemented(e: &mongodb::error::Error) -> bool {
    has_code(e, 238)
}

/// Sets a collection's validator, creating the collection if it is missing.
/// On a server without validators the collection is made without one: the
/// typed documents stay the enforcement there, and `tests/validators.rs`
/// checks what the suite writes against `schemas/`. False on such a server.
async fn apply_validator(
    db: &Database,
    collection: &str,
    validator: Document,
    exists: bool,
) -> StoreResult<bool> {
    let modify = || db.run_command(doc! { "collMod": collection, "validator": validator.clone() });
    let result = if exists {
        modify().await
    } else {
        match db
            .run_command(doc! { "create": collection, "validator": validator.clone() })
            .await
        {
            Err(e) if namespace_exists(&e) => modify().await,
            Err(e) if not_implemented(&e) => {
                return match db.run_command(doc! { "create": collection }).await {
                    Err(e) if !namespace_exists(&e) => Err(classify(e)),
                    _ => Ok(false),
                };
            }
            other => other,
        }
    };
    match result {
        Ok(_) => Ok(true),
        Err(e) if not_implemented(&e) => Ok(false),
        Err(e) => Err(classify(e)),
    }
}

pub async fn apply(db: &Database) -> StoreResult<()> {
    let schemas = parse_all().map_err(|e| StoreError::Other(anyhow::anyhow!(e)))?;
    let stand_in = is_wire_stand_in(db).await;
    let existing = db.list_collection_names().await.map_err(classify)?;
    let mut enforced = true;
    for schema in schemas {
        let validator = to_document(&schema.validator)?;
        let exists = existing.iter().any(|c| c == &schema.collection);
        enforced &= apply_validator(db, &schema.collection, validator, exists).await?;
        let coll = db.collection::<Document>(&schema.collection);
        for index in &schema.indexes {
            let mut keys = to_document(&serde_json::Value::Object(index.keys.clone()))?;
            if stand_in && keys.len() > 1 {
                keys.remove("_id");
            }
            let model = |expire_after: Option<Duration>| {
                IndexModel::builder()
                    .keys(keys.clone())
                    .options(
                        IndexOptions::builder()
                            .name(index.name.clone())
                            .unique(index.unique.then_some(true))
                            .expire_after(expire_after)
                            .build(),
                    )
                    .build()
            };
            let ttl = index.expire_after_seconds.map(Duration::from_secs);
            match coll.create_index(model(ttl)).await {
                Ok(_) => {}
                // Without TTL indexes the index is still made, plain: every
                // expiring collection is also purged by a filtered delete
                // and filtered on read, as MongoDB's TTL monitor lags up to
                // a minute anyway.
                Err(e) if ttl.is_some() && not_implemented(&e) => {
                    coll.create_index(model(None)).await.map_err(classify)?;
                }
                Err(e) => return Err(classify(e)),
            }
        }
    }
    if !enforced {
        tracing::warn!(
            "this MongoDB-wire server has no $jsonSchema validators: documents are checked by their types only"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_file_parses_and_names_its_collection() {
        let schemas = parse_all().unwrap();
        for ((name, _), schema) in SCHEMAS.iter().zip(&schemas) {
            assert_eq!(*name, schema.collection);
            assert!(schema.validator.get("$jsonSchema").is_some(), "{name}");
        }
        let likes = schemas.iter().find(|s| s.collection == "likes").unwrap();
        assert!(
            likes.indexes.iter().any(|i| i.unique),
            "likes need the one-like-per-user index"
        );
    }
}
