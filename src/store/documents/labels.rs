//! Labels: a user's named groups of friends, named as post audiences.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreResult;

/// One of `owner`'s labels (标签): a named group of their friends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabelDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub owner: i64,
    pub name: String,
    pub members: Vec<i64>,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
}

/// Users' labels. Part of `DocStore`.
#[async_trait]
pub trait LabelDocs: Send + Sync {
    /// `Duplicate("label name")` when the owner has a label of that name.
    async fn insert_label(&self, label: &LabelDoc) -> StoreResult<()>;

    /// Up to `limit` of the owner's labels, oldest first.
    async fn labels_of(&self, owner: i64, limit: usize) -> StoreResult<Vec<LabelDoc>>;

    /// Labels by `(owner, id)`: with their owner, the labels' shard key.
    async fn labels_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<LabelDoc>>;

    /// Replaces what is `Some`; the label as it is now, `None` if the owner
    /// has no such label. `Duplicate("label name")` when the owner has
    /// another label of the new name.
    async fn update_label(
        &self,
        owner: i64,
        id: i64,
        name: Option<&str>,
        members: Option<&[i64]>,
        at: i64,
    ) -> StoreResult<Option<LabelDoc>>;

    /// True when this call deleted it.
    async fn delete_label(&self, owner: i64, id: i64) -> StoreResult<bool>;

    /// Deletes up to `limit` of the owner's labels (erasing an account);
    /// how many went.
    async fn delete_labels_of(&self, owner: i64, limit: usize) -> StoreResult<u64>;
}
