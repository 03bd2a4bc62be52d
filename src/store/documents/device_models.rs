//! The table of raw device models and their display names.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::device_models::DisplayName;
use crate::store::StoreResult;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceModelDoc {
    #[serde(rename = "_id")]
    pub key: String,
    #[serde(rename = "displayName")]
    pub display_name: DisplayName,
    #[serde(default)]
    pub brand: String,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
    #[serde(rename = "updatedBy")]
    pub updated_by: i64,
}

/// The device-model table. Part of `DocStore`.
#[async_trait]
pub trait DeviceModelDocs: Send + Sync {
    async fn device_models(&self) -> StoreResult<Vec<DeviceModelDoc>>;

    async fn upsert_device_models(&self, models: &[DeviceModelDoc]) -> StoreResult<()>;

    async fn delete_device_model(&self, key: &str) -> StoreResult<bool>;
}
