//! Applies `schemas/*.json` (one validator and index list per collection) at
//! start-up: create the collection with its validator, or `collMod` an
//! existing one; create indexes by name. Running it twice changes nothing.

use mongodb::bson::{doc, Document};
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};
use serde::Deserialize;
use std::time::Duration;

use super::classify;
use crate::store::{StoreError, StoreResult};

/// Compiled in, so the binary never depends on where it was started from.
pub const SCHEMAS: [(&str, &str); 13] = [
    ("users", include_str!("../../../schemas/users.json")),
    ("posts", include_str!("../../../schemas/posts.json")),
    ("comments", include_str!("../../../schemas/comments.json")),
    ("likes", include_str!("../../../schemas/likes.json")),
    (
        "device_models",
        include_str!("../../../schemas/device_models.json"),
    ),
    ("follows", include_str!("../../../schemas/follows.json")),
    ("blocks", include_str!("../../../schemas/blocks.json")),
    (
        "notifications",
        include_str!("../../../schemas/notifications.json"),
    ),
    ("sessions", include_str!("../../../schemas/sessions.json")),
    (
        "instance_leases",
        include_str!("../../../schemas/instance_leases.json"),
    ),
    (
        "idempotency_keys",
        include_str!("../../../schemas/idempotency_keys.json"),
    ),
    ("fan_outs", include_str!("../../../schemas/fan_outs.json")),
    (
        "live_repairs",
        include_str!("../../../schemas/live_repairs.json"),
    ),
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

pub async fn apply(db: &Database) -> StoreResult<()> {
    let schemas = parse_all().map_err(|e| StoreError::Other(anyhow::anyhow!(e)))?;
    let stand_in = is_wire_stand_in(db).await;
    let existing = db.list_collection_names().await.map_err(classify)?;
    for schema in schemas {
        let validator = to_document(&schema.validator)?;
        if existing.iter().any(|c| c == &schema.collection) {
            db.run_command(doc! { "collMod": &schema.collection, "validator": validator })
                .await
                .map_err(classify)?;
        } else if let Err(e) = db
            .run_command(doc! { "create": &schema.collection, "validator": validator.clone() })
            .await
        {
            // Another instance created it a moment ago (NamespaceExists): modify instead.
            if !matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == 48) {
                return Err(classify(e));
            }
            db.run_command(doc! { "collMod": &schema.collection, "validator": validator })
                .await
                .map_err(classify)?;
        }
        let coll = db.collection::<Document>(&schema.collection);
        for index in &schema.indexes {
            let mut keys = to_document(&serde_json::Value::Object(index.keys.clone()))?;
            if stand_in && keys.len() > 1 {
                keys.remove("_id");
            }
            let model = IndexModel::builder()
                .keys(keys)
                .options(
                    IndexOptions::builder()
                        .name(index.name.clone())
                        .unique(index.unique.then_some(true))
                        .expire_after(index.expire_after_seconds.map(Duration::from_secs))
                        .build(),
                )
                .build();
            coll.create_index(model).await.map_err(classify)?;
        }
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
