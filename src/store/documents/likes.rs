//! Likes of posts and comments: the like document, and the port that
//! stores likes and keeps each post's newest liker ids.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum LikeKind {
    Post,
    Comment,
}

impl LikeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LikeKind::Post => "post",
            LikeKind::Comment => "comment",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LikeDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub kind: LikeKind,
    #[serde(rename = "targetId")]
    pub target_id: i64,
    pub uid: i64,
    #[serde(rename = "createTime")]
    pub create_time: i64,
}

impl LikeDoc {
    /// A like made when its id was: the time is the one the id carries.
    pub fn new(id: i64, kind: LikeKind, target_id: i64, uid: i64) -> Self {
        Self {
            id,
            kind,
            target_id,
            uid,
            create_time: crate::ids::timestamp_of(id),
        }
    }
}

/// Likes of posts and comments. Part of `DocStore`.
#[async_trait]
pub trait LikeDocs: Send + Sync {
    /// Up to `limit` of the likes a user gave below `before`, newest first,
    /// of posts and comments alike.
    async fn likes_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>>;

    /// Inserts the like, and for a post records its id in `likes_postid`.
    /// `Ok(false)` when this user already liked it: liking twice is one like.
    async fn insert_like(&self, like: &LikeDoc, cap: usize) -> StoreResult<bool>;

    /// `insert_like` without the post's `likes_postid`: the like document
    /// alone, the array left to `refresh_like_array` (a like storm's
    /// arrays are written in batches, not once per like).
    async fn insert_like_only(&self, like: &LikeDoc) -> StoreResult<bool>;

    /// `delete_like` without the post's `likes_postid`, likewise.
    async fn delete_like_only(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>>;

    /// Writes the post's `likes_postid` afresh from its likes (the newest
    /// `cap`), and `read_at` (epoch ms) as when that was. It reads the
    /// likes again after writing, and writes again until they agree, so of
    /// two refreshes racing on one post the array ends as the likes are.
    async fn refresh_like_array(&self, post_id: i64, cap: usize, read_at: i64) -> StoreResult<()>;

    /// Removes the like if there is one, returning it.
    async fn delete_like(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>>;

    /// Every like of these targets.
    async fn likes_of_targets(
        &self,
        kind: LikeKind,
        target_ids: &[i64],
    ) -> StoreResult<Vec<LikeDoc>>;

    async fn likes_page(
        &self,
        kind: LikeKind,
        target_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>>;
}
