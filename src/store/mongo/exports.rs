//! `ExportDocs` on MongoDB: `exports` (sharded by uid) and the archives
//! in `export_chunks` (sharded by export), one document per chunk keyed by
//! export, attempt and number, so that a byte range is a read by `_id`.
//!
//! Not the driver's GridFS bucket: its download stream starts at byte 0
//! and cannot seek, and a `Range` request must start anywhere; a chunk
//! read by its number can. Deletes find `_id`s first and delete by them
//! (TESTING.md).

use super::*;
use crate::store::{ExportDoc, ExportDocs, ExportOutcome};
use mongodb::bson::{Binary, Bson};

/// Chunk ids deleted per call: a 4 GiB archive is 4,096 of them.
const DELETE_BATCH: usize = 500;

fn chunk_id(export: i64, attempt: i64, n: i64) -> String {
    format!("{export}.{attempt}.{n}")
}

#[derive(Deserialize)]
struct ChunkKey {
    #[serde(rename = "_id")]
    id: String,
    attempt: i64,
}

impl MongoDocs {
    fn exports(&self) -> Collection<ExportDoc> {
        self.db.collection("exports")
    }

    fn export_chunks(&self) -> Collection<Document> {
        self.db.collection("export_chunks")
    }

    /// Deletes the export's chunks for which `doomed(attempt)` holds, a
    /// batch of ids at a time.
    async fn delete_chunks(&self, export: i64, doomed: impl Fn(i64) -> bool) -> StoreResult<()> {
        let chunks = self.export_chunks();
        let mut after: Option<String> = None;
        loop {
            let mut filter = doc! { "exportId": export };
            if let Some(a) = &after {
                filter.insert("_id", doc! { "$gt": a });
            }
            let keys: Vec<ChunkKey> = collect(
                chunks
                    .clone_with_type::<ChunkKey>()
                    .find(filter)
                    .projection(doc! { "_id": 1, "attempt": 1 })
                    .sort(doc! { "_id": 1 })
                    .limit(DELETE_BATCH as i64)
                    .await
                    .map_err(classify)?,
            )
            .await?;
            let Some(last) = keys.last() else {
                return Ok(());
            };
            after = Some(last.id.clone());
            let ids: Vec<&str> = keys
                .iter()
                .filter(|k| doomed(k.attempt))
                .map(|k| k.id.as_str())
                .collect();
            if !ids.is_empty() {
                chunks
                    .delete_many(doc! { "exportId": export, "_id": { "$in": ids } })
                    .await
                    .map_err(classify)?;
            }
            if keys.len() < DELETE_BATCH {
                return Ok(());
            }
        }
    }
}

#[async_trait]
impl ExportDocs for MongoDocs {
    async fn insert_export(
        &self,
        export: &ExportDoc,
        newest_seen: Option<i64>,
    ) -> StoreResult<bool> {
        self.insert_account_job(&self.exports(), export, newest_seen)
            .await
    }

    async fn exports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ExportDoc>> {
        account_jobs::account_jobs_of(self.exports(), uid, limit).await
    }

    async fn export_by_id(&self, uid: i64, id: i64) -> StoreResult<Option<ExportDoc>> {
        account_jobs::account_job(&self.exports(), uid, id).await
    }

    async fn claim_exports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ExportDoc>> {
        self.claim_account_jobs(&self.exports(), now, until, limit)
            .await
    }

    async fn renew_export(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        until: i64,
        done: i64,
        known: i64,
    ) -> StoreResult<bool> {
        let r = self
            .exports()
            .update_one(
                doc! { "_id": id, "uid": uid, "attempt": attempt, "state": "running" },
                doc! { "$set": { "claimedUntil": until, "done": done, "known": known } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn put_export_chunk(
        &self,
        uid: i64,
        export: i64,
        attempt: i64,
        n: i64,
        data: &[u8],
    ) -> StoreResult<bool> {
        // Still this run's: a chunk written after the export was deleted
        // (its account erased) or taken over would be found by nothing.
        // A run that loses its export between this read and the write
        // leaves one chunk, which its own cleanup deletes.
        let running = self
            .exports()
            .clone_with_type::<Document>()
            .find_one(doc! { "_id": export, "uid": uid, "attempt": attempt, "state": "running" })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(classify)?
            .is_some();
        if !running {
            return Ok(false);
        }
        let bytes = Bson::Binary(Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Generic,
            bytes: data.to_vec(),
        });
        self.export_chunks()
            .update_one(
                doc! { "_id": chunk_id(export, attempt, n), "exportId": export },
                doc! { "$set": { "attempt": attempt, "n": n, "data": bytes } },
            )
            .upsert(true)
            .await
            .map_err(classify)?;
        Ok(true)
    }

    async fn export_chunk(
        &self,
        export: i64,
        attempt: i64,
        n: i64,
    ) -> StoreResult<Option<Vec<u8>>> {
        let found = self
            .export_chunks()
            .find_one(doc! { "_id": chunk_id(export, attempt, n), "exportId": export })
            .await
            .map_err(classify)?;
        match found {
            None => Ok(None),
            Some(d) => match d.get("data") {
                Some(Bson::Binary(b)) => Ok(Some(b.bytes.clone())),
                _ => Err(StoreError::Other(anyhow::anyhow!(
                    "export chunk {export}.{attempt}.{n} holds no bytes"
                ))),
            },
        }
    }

    async fn finish_export(
        &self,
        uid: i64,
        id: i64,
        attempt: i64,
        outcome: &ExportOutcome,
    ) -> StoreResult<bool> {
        let now = crate::ids::now_ms();
        let (set, kept) = match outcome {
            ExportOutcome::Ready {
                size,
                sha256,
                records,
                expires_at,
            } => (
                doc! {
                    "state": "ready",
                    "done": records,
                    "known": records,
                    "size": size,
                    "sha256": sha256,
                    "expiresAt": expires_at,
                    "finishedAt": now,
                    "claimedUntil": 0_i64,
                },
                Some(attempt),
            ),
            ExportOutcome::Failed { error, expires_at } => (
                doc! {
                    "state": "failed",
                    "error": error,
                    "expiresAt": expires_at,
                    "finishedAt": now,
                    "claimedUntil": 0_i64,
                },
                None,
            ),
        };
        let r = self
            .exports()
            .update_one(
                doc! { "_id": id, "uid": uid, "attempt": attempt, "state": "running" },
                doc! { "$set": set },
            )
            .await
            .map_err(classify)?;
        if r.matched_count != 1 {
            return Ok(false);
        }
        self.delete_chunks(id, |a| Some(a) != kept).await?;
        Ok(true)
    }

    async fn delete_export_attempt(&self, id: i64, attempt: i64) -> StoreResult<()> {
        self.delete_chunks(id, |a| a == attempt).await
    }

    async fn set_export_link(
        &self,
        uid: i64,
        id: i64,
        hash: &str,
        expires_at: i64,
        credential_gen: i64,
    ) -> StoreResult<bool> {
        let r = self
            .exports()
            .update_one(
                doc! { "_id": id, "uid": uid },
                doc! { "$set": { "linkHash": hash, "linkExpiresAt": expires_at, "linkGen": credential_gen } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn delete_export(&self, uid: i64, id: i64) -> StoreResult<()> {
        // The archive first: an export document left without chunks is
        // deleted again by the next try; chunks left without a document
        // would be found by nothing.
        if self.export_by_id(uid, id).await?.is_none() {
            return Ok(());
        }
        self.delete_chunks(id, |_| true).await?;
        self.exports()
            .delete_one(doc! { "_id": id, "uid": uid })
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn expired_exports(&self, now: i64, limit: usize) -> StoreResult<Vec<(i64, i64)>> {
        #[derive(Deserialize)]
        struct Owned {
            #[serde(rename = "_id")]
            id: i64,
            uid: i64,
        }
        let found: Vec<Owned> = collect(
            self.exports()
                .clone_with_type::<Owned>()
                .find(doc! { "expiresAt": { "$lt": now } })
                .projection(doc! { "_id": 1, "uid": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await?;
        Ok(found.into_iter().map(|o| (o.uid, o.id)).collect())
    }
}
