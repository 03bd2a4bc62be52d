//! `IdempotencyDocs` on MongoDB: remembered `Idempotency-Key`s.

use super::*;
use crate::store::{IdempotencyDoc, IdempotencyDocs, KeyClaim};

impl MongoDocs {
    fn idempotency_keys(&self) -> Collection<Document> {
        self.db.collection("idempotency_keys")
    }
}

fn to_stored(key: &IdempotencyDoc) -> StoreResult<Document> {
    let mut d = mongodb::bson::to_document(key).map_err(|e| StoreError::Other(e.into()))?;
    // The TTL index that forgets keys reads a BSON date.
    d.insert(
        "expireAt",
        mongodb::bson::DateTime::from_millis(key.expires_at),
    );
    Ok(d)
}

#[async_trait]
impl IdempotencyDocs for MongoDocs {
    async fn claim_idempotency_key(
        &self,
        key: &IdempotencyDoc,
        now: i64,
        stale_before: i64,
    ) -> StoreResult<KeyClaim> {
        match self.idempotency_keys().insert_one(to_stored(key)?).await {
            Ok(_) => {
                return Ok(KeyClaim::Won {
                    reserved_id: key.reserved_id,
                    earlier: key.earlier_ids.clone(),
                })
            }
            Err(e) if duplicate_of(&e).is_some() => {}
            Err(e) => return Err(classify(e)),
        }
        let Some(existing) = self
            .idempotency_keys()
            .find_one(doc! { "_id": &key.id })
            .await
            .map_err(classify)?
        else {
            // Purged between the two calls: this claim may take its place.
            return self.claim_idempotency_key(key, now, stale_before).await;
        };
        let existing: IdempotencyDoc =
            mongodb::bson::from_document(existing).map_err(|e| StoreError::Other(e.into()))?;
        if !existing.replaceable(key, now, stale_before) {
            return Ok(KeyClaim::Held(existing));
        }
        let next = existing.succeeded_by(key, now);
        // Only if nobody replaced it first: the claim on the one it
        // replaces is named by that one's start, so two retries cannot both
        // take it.
        let claim = format!("idempotency:{}:{}", key.id, existing.started_at);
        if !self.claim(claim.clone(), now).await? {
            return Ok(KeyClaim::Held(existing));
        }
        let replaced = self
            .idempotency_keys()
            .replace_one(
                doc! { "_id": &key.id, "startedAt": existing.started_at },
                to_stored(&next)?,
            )
            .await;
        match replaced {
            Ok(r) if r.matched_count == 1 => Ok(KeyClaim::Won {
                reserved_id: next.reserved_id,
                earlier: next.earlier_ids.clone(),
            }),
            Ok(_) => {
                self.unclaim(claim).await;
                Ok(KeyClaim::Held(existing))
            }
            Err(e) => {
                self.unclaim(claim).await;
                Err(classify(e))
            }
        }
    }

    async fn complete_idempotency_key(
        &self,
        id: &str,
        started_at: i64,
        status: u16,
        body: &str,
    ) -> StoreResult<()> {
        self.idempotency_keys()
            .update_one(
                doc! { "_id": id, "startedAt": started_at },
                doc! { "$set": { "status": i32::from(status), "body": body } },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn release_idempotency_key(&self, id: &str, started_at: i64) -> StoreResult<()> {
        self.idempotency_keys()
            .update_one(
                doc! { "_id": id, "startedAt": started_at, "status": { "$exists": false } },
                doc! { "$set": { "released": true } },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn purge_expired_idempotency_keys(&self, now: i64, limit: usize) -> StoreResult<u64> {
        // By the TTL index's field, so the sweep reads an index, not the
        // collection (the TTL monitor deletes them too, in its own time).
        let before = mongodb::bson::DateTime::from_millis(now);
        self.delete_some::<String>(
            "idempotency_keys",
            doc! { "expireAt": { "$lt": before } },
            limit,
        )
        .await
    }
}
