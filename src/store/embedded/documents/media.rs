//! `MediaDocs` on redb: uploaded pictures by id, with an index by owner
//! and one by state and age for the sweeps, kept in the same transaction.

use super::*;
use crate::domain::media::Focus;
use crate::store::{MediaDoc, MediaDocs, MediaState};

fn state_code(s: MediaState) -> u8 {
    match s {
        MediaState::Storing => 1,
        MediaState::Ready => 2,
        MediaState::Attached => 3,
        MediaState::Posted => 4,
    }
}

/// Writes `doc` and its index entries, replacing `old`'s.
fn put_media(txn: &WriteTransaction, old: Option<&MediaDoc>, doc: &MediaDoc) -> StoreResult<()> {
    let mut by_state = txn.open_table(MEDIA_BY_STATE).map_err(other)?;
    if let Some(old) = old {
        by_state
            .remove((state_code(old.state), old.state_since, id(old.id)))
            .map_err(other)?;
    }
    by_state
        .insert((state_code(doc.state), doc.state_since, id(doc.id)), ())
        .map_err(other)?;
    txn.open_table(MEDIA_BY_OWNER)
        .map_err(other)?
        .insert((id(doc.uid), id(doc.id)), ())
        .map_err(other)?;
    txn.open_table(MEDIA)
        .map_err(other)?
        .insert(id(doc.id), encode(doc)?.as_slice())
        .map_err(other)?;
    Ok(())
}

/// `uid`'s picture `media`, if there is one.
fn owned(txn: &WriteTransaction, uid: i64, media: i64) -> StoreResult<Option<MediaDoc>> {
    let table = txn.open_table(MEDIA).map_err(other)?;
    Ok(get_doc::<MediaDoc>(&table, id(media))?.filter(|m| m.uid == uid))
}

#[async_trait]
impl MediaDocs for EmbeddedDocs {
    async fn insert_media(&self, media: &MediaDoc) -> StoreResult<()> {
        let doc = media.clone();
        self.write(move |txn| {
            if txn
                .open_table(MEDIA)
                .map_err(other)?
                .get(id(doc.id))
                .map_err(other)?
                .is_some()
            {
                return Err(StoreError::IdTaken);
            }
            put_media(txn, None, &doc)
        })
        .await
    }

    async fn media_by_ids(&self, uid: i64, ids: &[i64]) -> StoreResult<Vec<MediaDoc>> {
        let ids = ids.to_vec();
        self.read(move |txn| {
            let all: Vec<MediaDoc> = docs_by_ids(txn, MEDIA, &ids)?;
            Ok(all.into_iter().filter(|m| m.uid == uid).collect())
        })
        .await
    }

    async fn move_media(
        &self,
        uid: i64,
        ids: &[i64],
        from: MediaState,
        to: MediaState,
        since: i64,
    ) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.write(move |txn| {
            let mut moved = 0;
            for m in &ids {
                let Some(old) = owned(txn, uid, *m)?.filter(|m| m.state == from) else {
                    continue;
                };
                let new = MediaDoc {
                    state: to,
                    state_since: since,
                    ..old.clone()
                };
                put_media(txn, Some(&old), &new)?;
                moved += 1;
            }
            Ok(moved)
        })
        .await
    }

    async fn describe_media(
        &self,
        uid: i64,
        media: i64,
        description: &str,
        focus: Option<Focus>,
    ) -> StoreResult<Option<MediaDoc>> {
        let description = description.to_string();
        self.write(move |txn| {
            let Some(old) = owned(txn, uid, media)?.filter(|m| m.state == MediaState::Ready) else {
                return Ok(None);
            };
            let mut new = old.clone();
            new.media.description = description.clone();
            new.media.focus = focus;
            put_media(txn, Some(&old), &new)?;
            Ok(Some(new))
        })
        .await
    }

    async fn attach_media(
        &self,
        uid: i64,
        ids: &[i64],
        post_id: i64,
        now: i64,
    ) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.write(move |txn| {
            let mut taken = 0;
            for m in &ids {
                let Some(old) = owned(txn, uid, *m)?.filter(|m| m.state == MediaState::Ready)
                else {
                    continue;
                };
                taken += 1;
                let new = MediaDoc {
                    state: MediaState::Attached,
                    state_since: now,
                    post_id: Some(post_id),
                    ..old.clone()
                };
                put_media(txn, Some(&old), &new)?;
            }
            Ok(taken)
        })
        .await
    }

    async fn detach_media(&self, uid: i64, ids: &[i64], post_id: i64, now: i64) -> StoreResult<()> {
        let ids = ids.to_vec();
        self.write(move |txn| {
            for m in &ids {
                let Some(old) = owned(txn, uid, *m)?
                    .filter(|m| m.state == MediaState::Attached && m.post_id == Some(post_id))
                else {
                    continue;
                };
                let new = MediaDoc {
                    state: MediaState::Ready,
                    state_since: now,
                    post_id: None,
                    ..old.clone()
                };
                put_media(txn, Some(&old), &new)?;
            }
            Ok(())
        })
        .await
    }

    async fn media_in_state_before(
        &self,
        state: MediaState,
        before: i64,
        limit: usize,
    ) -> StoreResult<Vec<MediaDoc>> {
        self.read(move |txn| {
            let code = state_code(state);
            let by_state = txn.open_table(MEDIA_BY_STATE).map_err(other)?;
            let mut ids = Vec::new();
            for entry in by_state
                .range((code, i64::MIN, 0)..(code, before, 0))
                .map_err(other)?
                .take(limit)
            {
                ids.push(entry.map_err(other)?.0.value().2 as i64);
            }
            docs_by_ids(txn, MEDIA, &ids)
        })
        .await
    }

    async fn media_of(
        &self,
        uid: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<MediaDoc>> {
        self.read(move |txn| {
            let owner = txn.open_table(MEDIA_BY_OWNER).map_err(other)?;
            let ids: Vec<i64> = oldest_after(&owner, id(uid), after, limit)?
                .into_iter()
                .map(|m| m as i64)
                .collect();
            docs_by_ids(txn, MEDIA, &ids)
        })
        .await
    }

    async fn delete_media(&self, uid: i64, ids: &[i64]) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.write(move |txn| {
            let mut deleted = 0;
            for m in &ids {
                let Some(old) = owned(txn, uid, *m)? else {
                    continue;
                };
                txn.open_table(MEDIA)
                    .map_err(other)?
                    .remove(id(old.id))
                    .map_err(other)?;
                txn.open_table(MEDIA_BY_STATE)
                    .map_err(other)?
                    .remove((state_code(old.state), old.state_since, id(old.id)))
                    .map_err(other)?;
                txn.open_table(MEDIA_BY_OWNER)
                    .map_err(other)?
                    .remove((id(uid), id(old.id)))
                    .map_err(other)?;
                deleted += 1;
            }
            Ok(deleted)
        })
        .await
    }
}
