//! `MediaDocs` on MongoDB: uploaded pictures, sharded by owner. Every
//! state move is an update conditional on the state it leaves.

use super::*;
use crate::domain::media::Focus;
use crate::store::{MediaDoc, MediaDocs, MediaState};

fn state(s: MediaState) -> StoreResult<mongodb::bson::Bson> {
    mongodb::bson::to_bson(&s).map_err(|e| StoreError::Other(e.into()))
}

impl MongoDocs {
    fn media(&self) -> Collection<MediaDoc> {
        self.db.collection("media")
    }
}

#[async_trait]
impl MediaDocs for MongoDocs {
    async fn insert_media(&self, media: &MediaDoc) -> StoreResult<()> {
        insert_new(&self.media(), media, "media").await
    }

    async fn media_by_ids(&self, uid: i64, ids: &[i64]) -> StoreResult<Vec<MediaDoc>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        collect(
            self.media()
                .find(doc! { "uid": uid, "_id": { "$in": ids } })
                .await
                .map_err(classify)?,
        )
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
        if ids.is_empty() {
            return Ok(0);
        }
        let r = self
            .media()
            .update_many(
                doc! { "uid": uid, "_id": { "$in": ids }, "state": state(from)? },
                doc! { "$set": { "state": state(to)?, "stateSince": since } },
            )
            .await
            .map_err(classify)?;
        Ok(r.modified_count)
    }

    async fn describe_media(
        &self,
        uid: i64,
        id: i64,
        description: &str,
        focus: Option<Focus>,
    ) -> StoreResult<Option<MediaDoc>> {
        let focus = mongodb::bson::to_bson(&focus).map_err(|e| StoreError::Other(e.into()))?;
        self.media()
            .find_one_and_update(
                doc! { "_id": id, "uid": uid, "state": state(MediaState::Ready)? },
                doc! { "$set": { "media.description": description, "media.focus": focus } },
            )
            .return_document(mongodb::options::ReturnDocument::After)
            .await
            .map_err(classify)
    }

    async fn attach_media(
        &self,
        uid: i64,
        ids: &[i64],
        post_id: i64,
        now: i64,
    ) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let r = self
            .media()
            .update_many(
                doc! { "uid": uid, "_id": { "$in": ids }, "state": state(MediaState::Ready)? },
                doc! { "$set": {
                    "state": state(MediaState::Attached)?,
                    "stateSince": now,
                    "postId": post_id,
                } },
            )
            .await
            .map_err(classify)?;
        Ok(r.modified_count)
    }

    async fn detach_media(&self, uid: i64, ids: &[i64], post_id: i64, now: i64) -> StoreResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.media()
            .update_many(
                doc! {
                    "uid": uid,
                    "_id": { "$in": ids },
                    "state": state(MediaState::Attached)?,
                    "postId": post_id,
                },
                doc! {
                    "$set": { "state": state(MediaState::Ready)?, "stateSince": now },
                    "$unset": { "postId": "" },
                },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn media_in_state_before(
        &self,
        state_now: MediaState,
        before: i64,
        limit: usize,
    ) -> StoreResult<Vec<MediaDoc>> {
        collect(
            self.media()
                .find(doc! { "state": state(state_now)?, "stateSince": { "$lt": before } })
                .sort(doc! { "stateSince": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn media_of(
        &self,
        uid: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<MediaDoc>> {
        let mut filter = doc! { "uid": uid };
        if let Some(a) = after {
            filter.insert("_id", doc! { "$gt": a });
        }
        collect(
            self.media()
                .find(filter)
                .sort(doc! { "_id": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn delete_media(&self, uid: i64, ids: &[i64]) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let r = self
            .media()
            .delete_many(doc! { "uid": uid, "_id": { "$in": ids } })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count)
    }
}
