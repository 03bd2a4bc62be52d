//! `ExportDocs` on MongoDB: `exports` (sharded by uid) and the archives
//! in `export_chunks` (sharded by export), one document per chunk keyed by
//! export, attempt and number, so that a byte range is a read by `_id`.
//!
//! Not the driver's GridFS bucket: its download stream starts at byte 0
//! and cannot seek, and a `Range` request must start anywhere; a chunk
//! read by its number can. Deletes find `_id`s first and delete by them
//! (TESTING.md).

use super::*;
use crate::store::{ExportDoc, ExportDocs, ExportOutcome, ExportState};
use mongodb::bson::{Binary, Bson};

/// How long the claim that decides a start race is kept: the racers hold
/// their read for moments, and an export deleted since must not refuse
/// the next start for long.
const START_CLAIM_KEPT_MS: i64 = 60_000;

/// Chunk ids deleted per call: a 4 GiB archive is 4,096 of them.
const DELETE_BATCH: usize = 500;

fn chunk_id(export: i64, attempt: i64, n: i64) -> String {
    format!("{export}.{attempt}.{n}")
}

fn state_name(s: ExportState) -> &'static str {
    match s {
        ExportState::Queued => "queued",
        ExportState::Running => "running",
        ExportState::Ready => "ready",
        ExportState::Failed => "failed",
    }
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
        // Of starts that read the same newest export, one wins this name;
        // the next start reads a newer one, and so another name.
        let name = format!("export_start:{}:{}", export.uid, newest_seen.unwrap_or(0));
        if !self
            .claim_kept(name.clone(), crate::ids::now_ms(), START_CLAIM_KEPT_MS)
            .await?
        {
            return Ok(false);
        }
        match insert_new(&self.exports(), export, "export").await {
            Ok(()) => Ok(true),
            Err(e) => {
                self.unclaim(name).await;
                Err(e)
            }
        }
    }

    async fn exports_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<ExportDoc>> {
        newest_page(self.exports(), doc! { "uid": uid }, None, limit).await
    }

    async fn export_by_id(&self, uid: i64, id: i64) -> StoreResult<Option<ExportDoc>> {
        self.exports()
            .find_one(doc! { "_id": id, "uid": uid })
            .await
            .map_err(classify)
    }

    async fn claim_exports(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<ExportDoc>> {
        // More than there is room for, longest unclaimed first: one whose
        // claim a dead instance left half made is skipped, not retried
        // ahead of every other export for the hour its name is kept.
        let free = collect(
            self.exports()
                .find(doc! {
                    "state": { "$in": ["queued", "running"] },
                    "claimedUntil": { "$lt": now },
                })
                .sort(doc! { "claimedUntil": 1, "_id": 1 })
                .limit((limit * 4) as i64)
                .await
                .map_err(classify)?,
        )
        .await?;
        let mut claimed = Vec::with_capacity(limit);
        for e in free {
            if claimed.len() >= limit {
                break;
            }
            // One claimer per attempt: the next run is attempt + 1.
            let name = format!("export_run:{}:{}", e.id, e.attempt);
            if !self.claim(name.clone(), now).await? {
                continue;
            }
            let run = ExportDoc {
                state: ExportState::Running,
                started_at: Some(now),
                attempt: e.attempt + 1,
                claimed_until: until,
                done: 0,
                known: 0,
                ..e.clone()
            };
            let taken = self
                .exports()
                .update_one(
                    doc! { "_id": e.id, "uid": e.uid, "attempt": e.attempt, "claimedUntil": e.claimed_until },
                    doc! { "$set": {
                        "state": state_name(ExportState::Running),
                        "startedAt": now,
                        "attempt": run.attempt,
                        "claimedUntil": until,
                        "done": 0_i64,
                        "known": 0_i64,
                    } },
                )
                .await;
            match taken {
                Ok(r) if r.matched_count == 1 => claimed.push(run),
                Ok(_) => self.unclaim(name).await,
                Err(e) => {
                    self.unclaim(name).await;
                    return Err(classify(e));
                }
            }
        }
        Ok(claimed)
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
