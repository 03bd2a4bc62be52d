//! Media: each uploaded picture's record, from its upload to the post it
//! is attached to, and the port that stores them. The bytes are in the
//! media store (`store::media`); this is what describes them.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::media::{Focus, Media};
use crate::store::StoreResult;

/// Where an upload is in its life. Every move is a conditional write from
/// one state to the next, so two requests (or a request and a sweep) never
/// both take the same picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaState {
    /// Recorded before its bytes are stored: an instance that dies now
    /// leaves a record the unattached sweep finds, never bytes nobody knows
    /// of.
    Storing,
    /// Stored, answered to its owner, not yet on a post.
    Ready,
    /// Taken by a post being published; the sweep checks, once, that the
    /// post was made, and frees the picture again if it was not.
    Attached,
    /// On a post that exists (or existed: a deleted post takes its media
    /// with it).
    Posted,
}

/// One uploaded picture.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MediaDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    /// Its owner: who uploaded it.
    pub uid: i64,
    pub state: MediaState,
    /// When it entered its state (epoch ms): what the sweeps go by.
    #[serde(rename = "stateSince")]
    pub state_since: i64,
    #[serde(rename = "postId", default, skip_serializing_if = "Option::is_none")]
    pub post_id: Option<i64>,
    /// What a post shows of it.
    pub media: Media,
}

impl MediaDoc {
    /// A new upload's record, before its bytes are stored.
    pub fn storing(uid: i64, media: Media, now: i64) -> Self {
        MediaDoc {
            id: media.id,
            uid,
            state: MediaState::Storing,
            state_since: now,
            post_id: None,
            media,
        }
    }
}

/// Uploaded pictures. Part of `DocStore`. Every method but the sweeps'
/// names the owner, which is the shard key.
#[async_trait]
pub trait MediaDocs: Send + Sync {
    async fn insert_media(&self, media: &MediaDoc) -> StoreResult<()>;

    /// Those of `ids` that are `uid`'s, in any state, in no set order.
    async fn media_by_ids(&self, uid: i64, ids: &[i64]) -> StoreResult<Vec<MediaDoc>>;

    /// Moves those of `uid`'s `ids` that are in state `from` to `to`, as
    /// of `since`; how many it moved.
    async fn move_media(
        &self,
        uid: i64,
        ids: &[i64],
        from: MediaState,
        to: MediaState,
        since: i64,
    ) -> StoreResult<u64>;

    /// Sets the alt text and focus of `uid`'s `ready` picture `id`; the
    /// record as it is now, `None` when there is no such ready picture.
    async fn describe_media(
        &self,
        uid: i64,
        id: i64,
        description: &str,
        focus: Option<Focus>,
    ) -> StoreResult<Option<MediaDoc>>;

    /// Attaches those of `uid`'s `ids` that are `ready` to `post_id`; how
    /// many it took (fewer than the caller saw ready: another took some).
    async fn attach_media(&self, uid: i64, ids: &[i64], post_id: i64, now: i64)
        -> StoreResult<u64>;

    /// Frees those of `uid`'s `ids` that are attached to `post_id` (a post
    /// that was not made): ready again, on no post.
    async fn detach_media(&self, uid: i64, ids: &[i64], post_id: i64, now: i64) -> StoreResult<()>;

    /// Up to `limit` pictures in `state` since before `before`, oldest
    /// first: what the sweeps take.
    async fn media_in_state_before(
        &self,
        state: MediaState,
        before: i64,
        limit: usize,
    ) -> StoreResult<Vec<MediaDoc>>;

    /// Up to `limit` of `uid`'s pictures above `after`, by id: an account's
    /// media, for its export and its erasure.
    async fn media_of(
        &self,
        uid: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<MediaDoc>>;

    /// Deletes the records of `uid`'s `ids` (their bytes already gone);
    /// how many there were.
    async fn delete_media(&self, uid: i64, ids: &[i64]) -> StoreResult<u64>;
}
