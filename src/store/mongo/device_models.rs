//! `DeviceModelDocs` on MongoDB: the device-model table.

use super::*;
use crate::store::DeviceModelDocs;

#[async_trait]
impl DeviceModelDocs for MongoDocs {
    async fn device_models(&self) -> StoreResult<Vec<DeviceModelDoc>> {
        collect(
            self.device_models_coll()
                .find(doc! {})
                .sort(doc! { "_id": 1 })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn upsert_device_models(&self, models: &[DeviceModelDoc]) -> StoreResult<()> {
        // One upsert per model, a few in flight at once: `bulkWrite` across a
        // client needs MongoDB 8, and imports are rare and small.
        for chunk in models.chunks(16) {
            let writes = chunk.iter().map(|m| async move {
                self.device_models_coll()
                    .update_one(
                        doc! { "_id": &m.key },
                        doc! { "$set": {
                            "displayName": { "zh": &m.display_name.zh, "en": &m.display_name.en },
                            "brand": &m.brand,
                            "updatedAt": m.updated_at,
                            "updatedBy": m.updated_by,
                        } },
                    )
                    .upsert(true)
                    .await
                    .map_err(classify)
            });
            futures_util::future::try_join_all(writes).await?;
        }
        Ok(())
    }

    async fn delete_device_model(&self, key: &str) -> StoreResult<bool> {
        let r = self
            .device_models_coll()
            .delete_one(doc! { "_id": key })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count == 1)
    }
}
