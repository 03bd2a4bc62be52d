//! `NotificationDocs` on MongoDB: notifications and their read marks.

use super::*;
use crate::store::NotificationDocs;

#[async_trait]
impl NotificationDocs for MongoDocs {
    async fn insert_notification(&self, n: &NotificationDoc) -> StoreResult<bool> {
        let mut d = mongodb::bson::to_document(n).map_err(|e| StoreError::Other(e.into()))?;
        // The TTL index reads a BSON date.
        d.insert(
            "createdAt",
            mongodb::bson::DateTime::from_millis(n.createtime),
        );
        insert_unless_duplicate(&self.db.collection::<Document>("notifications"), &d).await
    }

    async fn notifications_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationDoc>> {
        let mut range = doc! { "$gte": crate::ids::first_id_at(since) };
        if let Some(b) = before {
            range.insert("$lt", b);
        }
        let page = async {
            collect(
                self.notifications()
                    .find(doc! { "uid": uid, "_id": range })
                    .sort(doc! { "_id": -1 })
                    .limit(limit as i64)
                    .await
                    .map_err(classify)?,
            )
            .await
        };
        let (mut page, mark) = tokio::try_join!(page, self.read_mark(uid))?;
        for n in &mut page {
            n.read = n.read || n.id <= mark;
        }
        Ok(page)
    }

    async fn unread_notifications(&self, uid: i64, since: i64, cap: u64) -> StoreResult<u64> {
        let mark = self.read_mark(uid).await?;
        let after = mark.max(crate::ids::first_id_at(since) - 1);
        self.notifications()
            .count_documents(doc! { "uid": uid, "read": false, "_id": { "$gt": after } })
            .limit(cap)
            .await
            .map_err(classify)
    }

    async fn mark_notifications_read(&self, uid: i64, up_to: i64) -> StoreResult<()> {
        // Only ever forward ($max): a late or repeated request never unreads.
        self.db
            .collection::<Document>("users")
            .update_one(
                doc! { "_id": uid },
                doc! { "$max": { "notificationsReadUpTo": up_to } },
            )
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn purge_notifications_before(&self, before: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>("notifications", doc! { "_id": { "$lt": before } }, limit)
            .await
    }

    async fn delete_notifications_involving(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        let filter = doc! { "$or": [ { "uid": uid }, { "actor": uid } ] };
        self.delete_some::<i64>("notifications", filter, limit)
            .await
    }
}
