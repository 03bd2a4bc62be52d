//! `LabelDocs` on MongoDB: labels by their owner.

use super::*;
use crate::store::{LabelDoc, LabelDocs};

impl MongoDocs {
    fn labels(&self) -> Collection<LabelDoc> {
        self.db.collection("labels")
    }
}

#[async_trait]
impl LabelDocs for MongoDocs {
    async fn insert_label(&self, label: &LabelDoc) -> StoreResult<()> {
        insert_new(&self.labels(), label, "label name").await
    }

    async fn labels_of(&self, owner: i64, limit: usize) -> StoreResult<Vec<LabelDoc>> {
        collect(
            self.labels()
                .find(doc! { "owner": owner })
                .sort(doc! { "_id": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn labels_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<LabelDoc>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let owners: Vec<i64> = ids.iter().map(|(o, _)| *o).collect();
        let labels: Vec<i64> = ids.iter().map(|(_, l)| *l).collect();
        let found = collect(
            self.labels()
                .find(doc! { "owner": { "$in": owners }, "_id": { "$in": labels } })
                .await
                .map_err(classify)?,
        )
        .await?;
        Ok(found
            .into_iter()
            .filter(|l| ids.contains(&(l.owner, l.id)))
            .collect())
    }

    async fn update_label(
        &self,
        owner: i64,
        id: i64,
        name: Option<&str>,
        members: Option<&[i64]>,
        at: i64,
    ) -> StoreResult<Option<LabelDoc>> {
        let mine = self
            .labels_of(owner, crate::domain::label::MAX_LABELS + 1)
            .await?;
        if !mine.iter().any(|l| l.id == id) {
            return Ok(None);
        }
        let mut set = doc! { "updatedAt": at };
        if let Some(n) = name {
            if mine.iter().any(|l| l.id != id && l.name == n) {
                return Err(StoreError::Duplicate("label name"));
            }
            set.insert("name", n);
        }
        if let Some(m) = members {
            set.insert("members", m.to_vec());
        }
        let updated = self
            .labels()
            .update_one(doc! { "_id": id, "owner": owner }, doc! { "$set": set })
            .await;
        if let Err(e) = updated {
            // A rename racing another to the same name: the unique index decides.
            return Err(match duplicate_of(&e) {
                Some(_) => StoreError::Duplicate("label name"),
                None => classify(e),
            });
        }
        self.labels()
            .find_one(doc! { "_id": id, "owner": owner })
            .await
            .map_err(classify)
    }

    async fn delete_label(&self, owner: i64, id: i64) -> StoreResult<bool> {
        self.delete_matching("labels", doc! { "_id": id, "owner": owner })
            .await
    }

    async fn delete_labels_of(&self, owner: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>("labels", doc! { "owner": owner }, limit)
            .await
    }
}
