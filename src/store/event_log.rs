//! The live store's part in live updates (`service::stream`): each
//! account's bounded log of events, which a reconnecting client resumes
//! from; the bus that tells every instance that something happened; the
//! single-use tickets a browser signs a stream in with; and the register of
//! each account's open streams, which bounds how many it holds. All of it
//! is derived and short-lived: losing it costs open streams a `reset`,
//! nothing else.

use std::fmt;

use async_trait::async_trait;

use crate::store::StoreResult;

/// An event's place in its account's log: Redis's stream id, "MS-SEQ"
/// (the millisecond it was appended, then a count within it). Both stores
/// make them alike, so a client's `Last-Event-ID` means the same on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventId {
    pub ms: u64,
    pub seq: u64,
}

impl EventId {
    /// An id as a client sends it back; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let (ms, seq) = text.split_once('-')?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(ms) || !digits(seq) {
            return None;
        }
        Some(EventId {
            ms: ms.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }

    /// The id after `self` for an entry appended at `now_ms`.
    pub fn next_at(self, now_ms: u64) -> Self {
        if now_ms > self.ms {
            EventId { ms: now_ms, seq: 0 }
        } else {
            EventId {
                ms: self.ms,
                seq: self.seq + 1,
            }
        }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How much of each account's log is kept: the newest `max_events`, and
/// none older than `max_age_ms`. A log goes altogether `max_age_ms` after
/// its account last held a stream open (opened one, or kept one, at each
/// heartbeat); events appended meanwhile do not keep it, so that the
/// register of accounts with logs (`logged_accounts`) and the logs
/// themselves end together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBounds {
    pub max_events: usize,
    pub max_age_ms: u64,
}

/// An event to append to one account's log: its name and its JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub uid: i64,
    pub kind: String,
    pub data: String,
}

/// An event as its log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent {
    pub id: EventId,
    pub kind: String,
    pub data: String,
}

/// The entry that opens a log (its first, when a stream finds none): read
/// past, never sent.
pub const LOG_OPENED: &str = "opened";

/// What a log holds after an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRead {
    /// Every event after the id that is still to come (at most the number
    /// asked for; ask again after the last for more).
    After(Vec<LoggedEvent>),
    /// The id is not in the log (it fell out, or the log was lost or never
    /// held it): what came after it cannot be told.
    Gone,
}

/// What an instance hears on the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusNote {
    /// A message some instance published.
    Message(String),
    /// This instance's subscription was (re)made after a loss: messages
    /// published meanwhile were not heard, so every stream reads its log
    /// again.
    Resubscribed,
}

/// What live updates keep in the live store: a part of `LiveStore`, apart
/// because it is its own aggregate.
#[async_trait]
pub trait StreamStore: Send + Sync {
    /// Makes `uid`'s log if it has none (holding one `LOG_OPENED` entry),
    /// keeps it (and its place among `logged_accounts`) `bounds.max_age_ms`
    /// longer, and returns its newest id.
    async fn open_event_log(&self, uid: i64, bounds: LogBounds) -> StoreResult<EventId>;

    /// Appends each event to its account's log, where the account has one
    /// (only accounts that opened a stream lately do), trimmed to `bounds`;
    /// returns the accounts whose logs grew.
    async fn append_events(&self, events: &[NewEvent], bounds: LogBounds) -> StoreResult<Vec<i64>>;

    /// The events after `after` in `uid`'s log, at most `max` of them.
    async fn events_after(&self, uid: i64, after: EventId, max: usize) -> StoreResult<LogRead>;

    /// Keeps each of these accounts' logs, where it has one, as
    /// `open_event_log` does (it holds a stream open); whether each has one.
    async fn keep_event_logs(&self, uids: &[i64], bounds: LogBounds) -> StoreResult<Vec<bool>>;

    /// How many accounts have a log, about (some may have just expired).
    async fn logged_account_count(&self) -> StoreResult<u64>;

    /// A page of the accounts that have a log, from `cursor` (0 to start):
    /// about `count` of them, and the cursor of the next page (0 after the
    /// last). Every account that has a log from the first page to the last
    /// is in some page; one may be in more than one (Redis's `ZSCAN`).
    async fn logged_accounts(&self, cursor: u64, count: usize) -> StoreResult<(Vec<i64>, u64)>;

    /// Sends `message` to every instance's bus, this one's included.
    async fn publish(&self, message: &str) -> StoreResult<()>;

    /// What this instance hears on the bus from now on.
    async fn bus(&self) -> StoreResult<tokio::sync::broadcast::Receiver<BusNote>>;

    /// Keeps `value` under `ticket`, issued to account `holder`, for
    /// `ttl_ms`; `false` (keeping nothing) when the store holds as many live
    /// tickets as it may. A store with a table to fill keeps at most
    /// `TICKETS_PER_ACCOUNT` of one holder's, dropping its oldest.
    async fn put_stream_ticket(
        &self,
        holder: i64,
        ticket: &str,
        value: &str,
        ttl_ms: u64,
    ) -> StoreResult<bool>;

    /// Takes what `ticket` holds, once: a second take finds nothing.
    async fn take_stream_ticket(&self, ticket: &str) -> StoreResult<Option<String>>;

    /// Enters an open stream in its account's register, first forgetting
    /// those not renewed since `stale_before` (their instance died); returns
    /// the streams beyond the newest `max`, oldest first, taken out of the
    /// register for their instances to close.
    async fn register_stream(
        &self,
        uid: i64,
        stream: i64,
        now_ms: i64,
        stale_before: i64,
        max: usize,
    ) -> StoreResult<Vec<i64>>;

    /// Renews these (account, stream) entries that are still registered.
    async fn renew_streams(&self, streams: &[(i64, i64)], now_ms: i64) -> StoreResult<()>;

    async fn unregister_stream(&self, uid: i64, stream: i64) -> StoreResult<()>;

    /// Whether the stream is in its account's register (open somewhere).
    async fn stream_registered(&self, uid: i64, stream: i64) -> StoreResult<bool>;
}

/// Writes `impl StreamStore for $ty` handing every call to its field
/// `$field`: for live stores that keep this part elsewhere, or wrap
/// another store and change nothing of it.
#[macro_export]
macro_rules! delegate_stream_store {
    ($ty:ty, $field:ident) => {
        #[async_trait::async_trait]
        impl $crate::store::StreamStore for $ty {
            async fn open_event_log(
                &self,
                uid: i64,
                bounds: $crate::store::LogBounds,
            ) -> $crate::store::StoreResult<$crate::store::EventId> {
                self.$field.open_event_log(uid, bounds).await
            }
            async fn append_events(
                &self,
                events: &[$crate::store::NewEvent],
                bounds: $crate::store::LogBounds,
            ) -> $crate::store::StoreResult<Vec<i64>> {
                self.$field.append_events(events, bounds).await
            }
            async fn events_after(
                &self,
                uid: i64,
                after: $crate::store::EventId,
                max: usize,
            ) -> $crate::store::StoreResult<$crate::store::LogRead> {
                self.$field.events_after(uid, after, max).await
            }
            async fn keep_event_logs(
                &self,
                uids: &[i64],
                bounds: $crate::store::LogBounds,
            ) -> $crate::store::StoreResult<Vec<bool>> {
                self.$field.keep_event_logs(uids, bounds).await
            }
            async fn logged_account_count(&self) -> $crate::store::StoreResult<u64> {
                self.$field.logged_account_count().await
            }
            async fn logged_accounts(
                &self,
                cursor: u64,
                count: usize,
            ) -> $crate::store::StoreResult<(Vec<i64>, u64)> {
                self.$field.logged_accounts(cursor, count).await
            }
            async fn publish(&self, message: &str) -> $crate::store::StoreResult<()> {
                self.$field.publish(message).await
            }
            async fn bus(
                &self,
            ) -> $crate::store::StoreResult<tokio::sync::broadcast::Receiver<$crate::store::BusNote>>
            {
                self.$field.bus().await
            }
            async fn put_stream_ticket(
                &self,
                holder: i64,
                ticket: &str,
                value: &str,
                ttl_ms: u64,
            ) -> $crate::store::StoreResult<bool> {
                self.$field
                    .put_stream_ticket(holder, ticket, value, ttl_ms)
                    .await
            }
            async fn take_stream_ticket(
                &self,
                ticket: &str,
            ) -> $crate::store::StoreResult<Option<String>> {
                self.$field.take_stream_ticket(ticket).await
            }
            async fn register_stream(
                &self,
                uid: i64,
                stream: i64,
                now_ms: i64,
                stale_before: i64,
                max: usize,
            ) -> $crate::store::StoreResult<Vec<i64>> {
                self.$field
                    .register_stream(uid, stream, now_ms, stale_before, max)
                    .await
            }
            async fn renew_streams(
                &self,
                streams: &[(i64, i64)],
                now_ms: i64,
            ) -> $crate::store::StoreResult<()> {
                self.$field.renew_streams(streams, now_ms).await
            }
            async fn unregister_stream(&self, uid: i64, stream: i64) -> $crate::store::StoreResult<()> {
                self.$field.unregister_stream(uid, stream).await
            }
            async fn stream_registered(
                &self,
                uid: i64,
                stream: i64,
            ) -> $crate::store::StoreResult<bool> {
                self.$field.stream_registered(uid, stream).await
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_and_order_as_redis_orders_them() {
        let id = EventId::parse("1733259000000-7").unwrap();
        assert_eq!(id.to_string(), "1733259000000-7");
        assert!(
            EventId::parse("1733259000000-7").unwrap() < EventId::parse("1733259000001-0").unwrap()
        );
        assert!(EventId::parse("5-10").unwrap() > EventId::parse("5-9").unwrap());
        for bad in [
            "",
            "-",
            "1-",
            "-1",
            "1",
            "a-1",
            "1-1-1",
            "1 -1",
            "+1-1",
            "123456789012345678901-0",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
        let id = EventId { ms: 10, seq: 3 };
        assert_eq!(id.next_at(9), EventId { ms: 10, seq: 4 });
        assert_eq!(id.next_at(10), EventId { ms: 10, seq: 4 });
        assert_eq!(id.next_at(11), EventId { ms: 11, seq: 0 });
    }
}
