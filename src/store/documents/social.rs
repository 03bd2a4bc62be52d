//! The social graph: follow edges, blocks, and the one-way filters (mute:
//! 不看他, hide: 不让他看).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// `follower` follows `followee`; friends are mutual follows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FollowDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub follower: i64,
    pub followee: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

impl FollowDoc {
    /// `follower` follows `followee` from when the id was made.
    pub fn new(id: i64, follower: i64, followee: i64) -> Self {
        Self {
            id,
            follower,
            followee,
            created_at: crate::ids::timestamp_of(id),
        }
    }
}

/// A one-way filter lighter than a block, set by `uid` on `other`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum FilterKind {
    /// 不看他: `other`'s posts leave `uid`'s home feed; their album stays open.
    Mute,
    /// 不让他看: none of `uid`'s posts are visible to `other`.
    Hide,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FilterDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub kind: FilterKind,
    /// Who set it.
    pub uid: i64,
    /// On whom.
    pub other: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// `blocker` blocked `blocked`: neither sees the other anywhere.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub blocker: i64,
    pub blocked: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

impl BlockDoc {
    /// `blocker` blocks `blocked` from when the id was made.
    pub fn new(id: i64, blocker: i64, blocked: i64) -> Self {
        Self {
            id,
            blocker,
            blocked,
            created_at: crate::ids::timestamp_of(id),
        }
    }
}

/// The social graph: follows and blocks. Part of `DocStore`.
#[async_trait]
pub trait SocialDocs: Send + Sync {
    /// `Ok(false)` when the edge exists already.
    async fn insert_follow(&self, follow: &FollowDoc) -> StoreResult<bool>;

    /// True when this call removed the edge.
    async fn delete_follow(&self, follower: i64, followee: i64) -> StoreResult<bool>;

    /// Edges into `uid` (its followers) below `before`, newest first.
    async fn followers_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>>;

    /// Edges out of `uid` (whom it follows) below `before`, newest first.
    async fn following_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>>;

    /// (followers, following) of `uid`.
    async fn follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)>;

    /// Counts `uid`'s follow edges again and keeps the counts. Where the
    /// counters move after the edge rather than with it (MongoDB, with no
    /// transaction here), an instance that dies between the two leaves them
    /// one off; a run that takes over such work puts them right with this.
    async fn recount_follows(&self, uid: i64) -> StoreResult<()>;

    /// Of `others`: those `uid` follows, and those who follow `uid`.
    async fn follow_edges(&self, uid: i64, others: &[i64]) -> StoreResult<(Vec<i64>, Vec<i64>)>;

    /// Of `others`: those who follow `uid` (the second half of
    /// `follow_edges`, in one plain query where it takes an `$or`).
    async fn followers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>>;

    /// `Ok(false)` when the block exists already.
    async fn insert_block(&self, block: &BlockDoc) -> StoreResult<bool>;

    async fn delete_block(&self, blocker: i64, blocked: i64) -> StoreResult<bool>;

    /// Of `others`: those `uid` blocked or who blocked `uid`.
    async fn blocks_between(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>>;

    /// One page of `uid`'s followers, newest follow first, below the edge
    /// id `before`: those active since `since` (epoch ms), whom a post is
    /// pushed to, and where the next page starts (`None`: this was the last).
    async fn active_followers(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<(Vec<i64>, Option<i64>)>;

    /// (uid, followers) for each of these users.
    async fn follower_counts(&self, uids: &[i64]) -> StoreResult<Vec<(i64, u64)>>;

    /// Every edge out of these users (whom they follow).
    async fn follows_from(&self, uids: &[i64]) -> StoreResult<Vec<FollowDoc>>;

    /// Every block these users made (whom they blocked): bounded by
    /// `MOMENTS_MAX_BLOCKS` each.
    async fn blocks_by(&self, blockers: &[i64]) -> StoreResult<Vec<BlockDoc>>;

    /// Up to `limit` blocks of `uid` by others, in no particular order:
    /// strangers grow these, so they are read whole only while few.
    async fn blockers_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>>;

    /// Of `others`: those who blocked `uid`.
    async fn blockers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>>;

    /// Up to `limit` blocks `uid` made or received (erasing an account).
    async fn blocks_involving(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>>;

    /// `Ok(false)` when the filter exists already.
    async fn insert_filter(&self, filter: &FilterDoc) -> StoreResult<bool>;

    /// True when this call removed it.
    async fn delete_filter(&self, kind: FilterKind, uid: i64, other: i64) -> StoreResult<bool>;

    /// Filters of a kind `uid` set, below `before`, newest first.
    async fn filters_page(
        &self,
        kind: FilterKind,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FilterDoc>>;

    /// Every filter of a kind set by these users.
    async fn filters_set_by(&self, kind: FilterKind, uids: &[i64]) -> StoreResult<Vec<FilterDoc>>;

    /// The filters of a kind set on `on` by any of `setters` (who hide
    /// from a reader, among those the reader follows).
    async fn filters_on_from(
        &self,
        kind: FilterKind,
        on: i64,
        setters: &[i64],
    ) -> StoreResult<Vec<FilterDoc>>;

    /// Deletes up to `limit` filters set by or on `uid` (erasing an
    /// account); how many went.
    async fn delete_filters_involving(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}
