//! `LabelDocs` on redb: labels by their owner.

use super::*;
use crate::store::{LabelDoc, LabelDocs};

/// The owner's labels, oldest first.
fn owned(txn: &impl LabelTables, owner: i64) -> StoreResult<Vec<LabelDoc>> {
    txn.labels_of(owner)
}

/// Read access to the label tables from a read or a write transaction.
trait LabelTables {
    fn labels_of(&self, owner: i64) -> StoreResult<Vec<LabelDoc>>;
}

macro_rules! label_tables {
    ($txn:ty) => {
        impl LabelTables for $txn {
            fn labels_of(&self, owner: i64) -> StoreResult<Vec<LabelDoc>> {
                let ids = {
                    let by_owner = self.open_table(LABELS_BY_OWNER).map_err(other)?;
                    let mut ids = Vec::new();
                    for entry in by_owner
                        .range((id(owner), 0)..=(id(owner), u64::MAX))
                        .map_err(other)?
                    {
                        ids.push(entry.map_err(other)?.0.value().1);
                    }
                    ids
                };
                let labels = self.open_table(LABELS).map_err(other)?;
                let mut out = Vec::with_capacity(ids.len());
                for l in ids {
                    if let Some(doc) = get_doc::<LabelDoc>(&labels, l)? {
                        out.push(doc);
                    }
                }
                Ok(out)
            }
        }
    };
}
label_tables!(ReadTransaction);
label_tables!(WriteTransaction);

#[async_trait]
impl LabelDocs for EmbeddedDocs {
    async fn insert_label(&self, label: &LabelDoc) -> StoreResult<()> {
        let l = label.clone();
        self.write(move |txn| {
            if owned(txn, l.owner)?.iter().any(|o| o.name == l.name) {
                return Err(StoreError::Duplicate("label name"));
            }
            let mut labels = txn.open_table(LABELS).map_err(other)?;
            if labels.get(id(l.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            labels
                .insert(id(l.id), encode(&l)?.as_slice())
                .map_err(other)?;
            txn.open_table(LABELS_BY_OWNER)
                .map_err(other)?
                .insert((id(l.owner), id(l.id)), ())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn labels_of(&self, owner: i64, limit: usize) -> StoreResult<Vec<LabelDoc>> {
        self.read(move |txn| {
            let mut all = owned(txn, owner)?;
            all.truncate(limit);
            Ok(all)
        })
        .await
    }

    async fn labels_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<LabelDoc>> {
        let ids = ids.to_vec();
        self.read(move |txn| {
            let labels = txn.open_table(LABELS).map_err(other)?;
            let mut out = Vec::new();
            for (owner, l) in ids {
                if let Some(doc) = get_doc::<LabelDoc>(&labels, id(l))? {
                    if doc.owner == owner {
                        out.push(doc);
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn update_label(
        &self,
        owner: i64,
        label: i64,
        name: Option<&str>,
        members: Option<&[i64]>,
        at: i64,
    ) -> StoreResult<Option<LabelDoc>> {
        let name = name.map(String::from);
        let members = members.map(<[i64]>::to_vec);
        self.write(move |txn| {
            let mine = owned(txn, owner)?;
            let Some(mut doc) = mine.iter().find(|l| l.id == label).cloned() else {
                return Ok(None);
            };
            if let Some(n) = &name {
                if mine.iter().any(|o| o.id != label && &o.name == n) {
                    return Err(StoreError::Duplicate("label name"));
                }
                doc.name = n.clone();
            }
            if let Some(m) = &members {
                doc.members = m.clone();
            }
            doc.updated_at = at;
            txn.open_table(LABELS)
                .map_err(other)?
                .insert(id(label), encode(&doc)?.as_slice())
                .map_err(other)?;
            Ok(Some(doc))
        })
        .await
    }

    async fn delete_label(&self, owner: i64, label: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let removed = txn
                .open_table(LABELS_BY_OWNER)
                .map_err(other)?
                .remove((id(owner), id(label)))
                .map_err(other)?
                .is_some();
            if removed {
                txn.open_table(LABELS)
                    .map_err(other)?
                    .remove(id(label))
                    .map_err(other)?;
            }
            Ok(removed)
        })
        .await
    }

    async fn delete_labels_of(&self, owner: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let mut doomed = owned(txn, owner)?;
            doomed.truncate(limit);
            let mut labels = txn.open_table(LABELS).map_err(other)?;
            let mut by_owner = txn.open_table(LABELS_BY_OWNER).map_err(other)?;
            for l in &doomed {
                labels.remove(id(l.id)).map_err(other)?;
                by_owner.remove((id(owner), id(l.id))).map_err(other)?;
            }
            Ok(doomed.len() as u64)
        })
        .await
    }
}
