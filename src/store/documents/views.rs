//! Views: one record per reader, post and day.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// A reader's view of a post on one day (浏览): one per reader,
/// post and day, kept `post_views::HISTORY_MS` for the reader's history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ViewDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    /// Days since the epoch (UTC) of the view.
    pub day: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

impl ViewDoc {
    pub fn new(id: i64, uid: i64, post_id: i64, day: i64, created_at: i64) -> Self {
        Self {
            id,
            uid,
            post_id,
            day,
            created_at,
        }
    }
}

/// Views and each post's view count. Part of `DocStore`. Written in
/// batches by `post_views`, never on a read's path.
#[async_trait]
pub trait ViewDocs: Send + Sync {
    /// Stores one batch of views, `batch` its id (fresh per batch, from
    /// the instance that flushes it), and adds each one stored to its
    /// post's count, once: a call with the same batch again (a retry after
    /// any failure, however far the first call got) stores and counts
    /// nothing twice. A view whose reader, post and day another batch
    /// stored is left out, and not counted. Returns how many of the batch's
    /// views are stored, by this call or an earlier one.
    async fn record_views(&self, batch: i64, views: &[ViewDoc]) -> StoreResult<usize>;

    /// `(post_id, views)` of these posts (0 for none).
    async fn view_counts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, u64)>>;

    /// A reader's views made at or after `since` and below `before`,
    /// newest first.
    async fn views_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ViewDoc>>;

    /// Deletes up to `limit` views with ids below `before`; how many went.
    async fn purge_views_before(&self, before: i64, limit: usize) -> StoreResult<u64>;

    /// Deletes up to `limit` of a reader's views (erasing an account).
    async fn delete_views_of(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}
