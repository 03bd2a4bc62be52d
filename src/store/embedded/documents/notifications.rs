//! `NotificationDocs` on redb: notifications and their read marks.

use super::*;
use crate::store::NotificationDocs;

#[async_trait]
impl NotificationDocs for EmbeddedDocs {
    async fn insert_notification(&self, n: &NotificationDoc) -> StoreResult<bool> {
        let n = n.clone();
        self.write(move |txn| {
            let mut notified = txn.open_table(NOTIFIED).map_err(other)?;
            if notified
                .get((id(n.uid), n.dedupe.as_str()))
                .map_err(other)?
                .is_some()
            {
                return Ok(false);
            }
            notified
                .insert((id(n.uid), n.dedupe.as_str()), id(n.id))
                .map_err(other)?;
            txn.open_table(NOTIFICATIONS)
                .map_err(other)?
                .insert((id(n.uid), id(n.id)), encode(&n)?.as_slice())
                .map_err(other)?;
            txn.open_table(NOTIFICATION_IDS)
                .map_err(other)?
                .insert(id(n.id), id(n.uid))
                .map_err(other)?;
            txn.open_table(NOTIFICATIONS_BY_ACTOR)
                .map_err(other)?
                .insert((id(n.actor), id(n.id)), id(n.uid))
                .map_err(other)?;
            if !n.read {
                txn.open_table(UNREAD)
                    .map_err(other)?
                    .insert((id(n.uid), id(n.id)), ())
                    .map_err(other)?;
            }
            Ok(true)
        })
        .await
    }

    async fn notifications_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(NOTIFICATIONS).map_err(other)?;
            let unread = txn.open_table(UNREAD).map_err(other)?;
            let mark = read_mark(txn, uid)?;
            let (u, low) = (id(uid), id(crate::ids::first_id_at(since)));
            let high = before.map(id).unwrap_or(u64::MAX);
            let mut out = Vec::new();
            for entry in table
                .range((u, low)..(u, high))
                .map_err(other)?
                .rev()
                .take(limit)
            {
                let (key, value) = entry.map_err(other)?;
                let mut n: NotificationDoc = decode(value.value())?;
                n.read = key.value().1 <= mark || unread.get(key.value()).map_err(other)?.is_none();
                out.push(n);
            }
            Ok(out)
        })
        .await
    }

    async fn unread_notifications(&self, uid: i64, since: i64, cap: u64) -> StoreResult<u64> {
        self.read(move |txn| {
            let unread = txn.open_table(UNREAD).map_err(other)?;
            let mark = read_mark(txn, uid)?;
            let u = id(uid);
            let low = id(crate::ids::first_id_at(since)).max(mark.saturating_add(1));
            let mut n = 0;
            for entry in unread.range((u, low)..=(u, u64::MAX)).map_err(other)? {
                entry.map_err(other)?;
                n += 1;
                if n >= cap {
                    break;
                }
            }
            Ok(n)
        })
        .await
    }

    async fn mark_notifications_read(&self, uid: i64, up_to: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut marks = txn.open_table(READ_MARKS).map_err(other)?;
            let now = marks
                .get(id(uid))
                .map_err(other)?
                .map(|v| v.value())
                .unwrap_or(0);
            if id(up_to) > now {
                marks.insert(id(uid), id(up_to)).map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn purge_notifications_before(&self, before: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let expired: Vec<(u64, u64)> = {
                let by_id = txn.open_table(NOTIFICATION_IDS).map_err(other)?;
                let mut out = Vec::new();
                for entry in by_id.range(..id(before)).map_err(other)?.take(limit) {
                    let (nid, uid) = entry.map_err(other)?;
                    out.push((uid.value(), nid.value()));
                }
                out
            };
            remove_notifications(txn, &expired).map(|_| expired.len() as u64)
        })
        .await
    }

    async fn delete_notifications_involving(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let u = id(uid);
            let mut which = Vec::new();
            {
                let to = txn.open_table(NOTIFICATIONS).map_err(other)?;
                for entry in to.range((u, 0)..=(u, u64::MAX)).map_err(other)?.take(limit) {
                    which.push(entry.map_err(other)?.0.value());
                }
                let by = txn.open_table(NOTIFICATIONS_BY_ACTOR).map_err(other)?;
                let room = limit.saturating_sub(which.len());
                for entry in by.range((u, 0)..=(u, u64::MAX)).map_err(other)?.take(room) {
                    let (key, recipient) = entry.map_err(other)?;
                    which.push((recipient.value(), key.value().1));
                }
            }
            remove_notifications(txn, &which)
        })
        .await
    }
}
