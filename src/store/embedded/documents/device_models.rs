//! `DeviceModelDocs` on redb: the device-model table.

use super::*;
use crate::store::DeviceModelDocs;

#[async_trait]
impl DeviceModelDocs for EmbeddedDocs {
    async fn device_models(&self) -> StoreResult<Vec<DeviceModelDoc>> {
        self.read(|txn| {
            let table = txn.open_table(DEVICE_MODELS).map_err(other)?;
            let mut out = Vec::new();
            for entry in table.iter().map_err(other)? {
                out.push(decode(entry.map_err(other)?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    async fn upsert_device_models(&self, models: &[DeviceModelDoc]) -> StoreResult<()> {
        let models = models.to_vec();
        self.write(move |txn| {
            let mut table = txn.open_table(DEVICE_MODELS).map_err(other)?;
            for m in &models {
                table
                    .insert(m.key.as_str(), encode(m)?.as_slice())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn delete_device_model(&self, key: &str) -> StoreResult<bool> {
        let key = key.to_string();
        self.write(move |txn| {
            let mut table = txn.open_table(DEVICE_MODELS).map_err(other)?;
            let existed = table.remove(key.as_str()).map_err(other)?.is_some();
            Ok(existed)
        })
        .await
    }
}
