//! `IdempotencyDocs` on redb: remembered `Idempotency-Key`s.

use super::*;
use crate::store::{IdempotencyDoc, IdempotencyDocs, KeyClaim};

fn put(txn: &WriteTransaction, key: &IdempotencyDoc, replacing: Option<i64>) -> StoreResult<()> {
    let mut keys = txn.open_table(IDEMPOTENCY_KEYS).map_err(other)?;
    let mut expiry = txn.open_table(IDEMPOTENCY_EXPIRY).map_err(other)?;
    if let Some(old_expiry) = replacing {
        expiry
            .remove((old_expiry, key.id.as_str()))
            .map_err(other)?;
    }
    keys.insert(key.id.as_str(), encode(key)?.as_slice())
        .map_err(other)?;
    expiry
        .insert((key.expires_at, key.id.as_str()), ())
        .map_err(other)?;
    Ok(())
}

fn get(txn: &WriteTransaction, id: &str) -> StoreResult<Option<IdempotencyDoc>> {
    let keys = txn.open_table(IDEMPOTENCY_KEYS).map_err(other)?;
    let found = keys.get(id).map_err(other)?;
    found.map(|v| decode(v.value())).transpose()
}

#[async_trait]
impl IdempotencyDocs for EmbeddedDocs {
    async fn claim_idempotency_key(
        &self,
        key: &IdempotencyDoc,
        now: i64,
        stale_before: i64,
    ) -> StoreResult<KeyClaim> {
        let key = key.clone();
        let won = |k: &IdempotencyDoc| KeyClaim::Won {
            reserved_id: k.reserved_id,
            earlier: k.earlier_ids.clone(),
        };
        self.write(move |txn| match get(txn, &key.id)? {
            None => put(txn, &key, None).map(|()| won(&key)),
            Some(existing) if existing.replaceable(&key, now, stale_before) => {
                let next = existing.succeeded_by(&key, now);
                put(txn, &next, Some(existing.expires_at)).map(|()| won(&next))
            }
            Some(existing) => Ok(KeyClaim::Held(existing)),
        })
        .await
    }

    async fn complete_idempotency_key(
        &self,
        id: &str,
        started_at: i64,
        status: u16,
        body: &str,
    ) -> StoreResult<()> {
        let (id, body) = (id.to_string(), body.to_string());
        self.write(move |txn| {
            if let Some(mut key) = get(txn, &id)?.filter(|k| k.started_at == started_at) {
                key.status = Some(status);
                key.body = Some(body.clone());
                put(txn, &key, Some(key.expires_at))?;
            }
            Ok(())
        })
        .await
    }

    async fn release_idempotency_key(&self, id: &str, started_at: i64) -> StoreResult<()> {
        let id = id.to_string();
        self.write(move |txn| {
            if let Some(mut key) =
                get(txn, &id)?.filter(|k| k.started_at == started_at && k.status.is_none())
            {
                key.released = true;
                put(txn, &key, Some(key.expires_at))?;
            }
            Ok(())
        })
        .await
    }

    async fn purge_expired_idempotency_keys(&self, now: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let expired: Vec<(i64, String)> = {
                let expiry = txn.open_table(IDEMPOTENCY_EXPIRY).map_err(other)?;
                let mut out = Vec::new();
                for entry in expiry
                    .range((i64::MIN, "")..(now, ""))
                    .map_err(other)?
                    .take(limit)
                {
                    let entry = entry.map_err(other)?;
                    let (at, id) = entry.0.value();
                    out.push((at, id.to_string()));
                }
                out
            };
            let mut keys = txn.open_table(IDEMPOTENCY_KEYS).map_err(other)?;
            let mut expiry = txn.open_table(IDEMPOTENCY_EXPIRY).map_err(other)?;
            for (at, id) in &expired {
                keys.remove(id.as_str()).map_err(other)?;
                expiry.remove((*at, id.as_str())).map_err(other)?;
            }
            Ok(expired.len() as u64)
        })
        .await
    }
}
