//! `StreamStore` in process: the accounts' event logs, the bus (a
//! broadcast channel: one instance hears itself), stream tickets and the
//! register of open streams, with the Redis adapter's rules (trimming,
//! expiry, "gone" ids), so that a stream behaves alike on both.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::ids::now_ms;
use crate::store::{
    BusNote, EventId, LogBounds, LogRead, LoggedEvent, NewEvent, StoreResult, StreamStore,
    LOG_OPENED,
};

/// Messages the bus holds for a listener that is behind; past it the
/// listener hears that it lagged (`service::stream` then has every stream
/// read its log again).
const BUS_CAPACITY: usize = 4096;
/// Tickets kept at most: each is a signed-in account's, under its write
/// budget, and lives a minute.
const MAX_TICKETS: usize = 100_000;
/// How many opens or appends between two sweeps of expired logs.
const SWEEP_EVERY: u64 = 1024;

struct Log {
    entries: VecDeque<(LoggedEvent, u64)>,
    last: EventId,
    /// The newest id trimmed away: an id at it still resumes.
    max_deleted: Option<EventId>,
    expires_at: u64,
}

impl Log {
    fn trim(&mut self, bounds: LogBounds, now: u64) {
        let oldest_kept = now.saturating_sub(bounds.max_age_ms);
        while let Some((e, at)) = self.entries.front() {
            if self.entries.len() <= bounds.max_events && *at >= oldest_kept {
                break;
            }
            self.max_deleted = Some(e.id);
            self.entries.pop_front();
        }
    }
}

#[derive(Default)]
struct Logs {
    by_uid: HashMap<i64, Log>,
    calls: u64,
}

impl Logs {
    /// The log of `uid` unless it expired (then it is forgotten).
    fn live(&mut self, uid: i64, now: u64) -> Option<&mut Log> {
        if self.by_uid.get(&uid).is_some_and(|l| l.expires_at <= now) {
            self.by_uid.remove(&uid);
        }
        self.by_uid.get_mut(&uid)
    }

    fn sweep_now_and_then(&mut self, now: u64) {
        self.calls += 1;
        if self.calls % SWEEP_EVERY == 0 {
            self.by_uid.retain(|_, l| l.expires_at > now);
        }
    }
}

pub struct MemoryStreams {
    logs: Mutex<Logs>,
    bus: broadcast::Sender<BusNote>,
    tickets: Mutex<HashMap<String, (String, u64)>>,
    /// Per account, its open streams and when each was last renewed.
    registers: Mutex<HashMap<i64, Vec<(i64, i64)>>>,
}

impl Default for MemoryStreams {
    fn default() -> Self {
        Self {
            logs: Mutex::default(),
            bus: broadcast::channel(BUS_CAPACITY).0,
            tickets: Mutex::default(),
            registers: Mutex::default(),
        }
    }
}

impl MemoryStreams {
    /// Forgets every log (what losing the live store does); returns how
    /// many there were.
    pub fn clear_logs(&self) -> usize {
        let mut logs = lock(&self.logs);
        let n = logs.by_uid.len();
        logs.by_uid.clear();
        n
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now() -> u64 {
    now_ms().max(0) as u64
}

#[async_trait]
impl StreamStore for MemoryStreams {
    async fn open_event_log(&self, uid: i64, bounds: LogBounds) -> StoreResult<EventId> {
        let now = now();
        let mut logs = lock(&self.logs);
        logs.sweep_now_and_then(now);
        logs.live(uid, now);
        let log = logs.by_uid.entry(uid).or_insert_with(|| {
            let id = EventId::default().next_at(now);
            let opened = LoggedEvent {
                id,
                kind: LOG_OPENED.into(),
                data: String::new(),
            };
            Log {
                entries: VecDeque::from([(opened, now)]),
                last: id,
                max_deleted: None,
                expires_at: 0,
            }
        });
        log.expires_at = now + bounds.max_age_ms;
        Ok(log.last)
    }

    async fn append_events(&self, events: &[NewEvent], bounds: LogBounds) -> StoreResult<Vec<i64>> {
        let now = now();
        let mut logs = lock(&self.logs);
        logs.sweep_now_and_then(now);
        let mut grew = Vec::new();
        for e in events {
            let Some(log) = logs.live(e.uid, now) else {
                continue;
            };
            let id = log.last.next_at(now);
            log.last = id;
            log.entries.push_back((
                LoggedEvent {
                    id,
                    kind: e.kind.clone(),
                    data: e.data.clone(),
                },
                now,
            ));
            log.trim(bounds, now);
            if !grew.contains(&e.uid) {
                grew.push(e.uid);
            }
        }
        Ok(grew)
    }

    async fn events_after(&self, uid: i64, after: EventId, max: usize) -> StoreResult<LogRead> {
        let now = now();
        let mut logs = lock(&self.logs);
        let Some(log) = logs.live(uid, now) else {
            return Ok(LogRead::Gone);
        };
        let held = log.entries.iter().any(|(e, _)| e.id == after);
        if !held && log.max_deleted != Some(after) {
            return Ok(LogRead::Gone);
        }
        Ok(LogRead::After(
            log.entries
                .iter()
                .filter(|(e, _)| e.id > after)
                .take(max)
                .map(|(e, _)| e.clone())
                .collect(),
        ))
    }

    async fn keep_event_logs(&self, uids: &[i64], bounds: LogBounds) -> StoreResult<Vec<bool>> {
        let now = now();
        let mut logs = lock(&self.logs);
        Ok(uids
            .iter()
            .map(|u| match logs.live(*u, now) {
                Some(log) => {
                    log.expires_at = now + bounds.max_age_ms;
                    true
                }
                None => false,
            })
            .collect())
    }

    async fn logged_account_count(&self) -> StoreResult<u64> {
        Ok(lock(&self.logs).by_uid.len() as u64)
    }

    /// The cursor is the page's first uid plus one, pages in uid order, so
    /// an account is in one page at most.
    async fn logged_accounts(&self, cursor: u64, count: usize) -> StoreResult<(Vec<i64>, u64)> {
        let now = now();
        let logs = lock(&self.logs);
        let from = cursor.saturating_sub(1) as i64;
        let mut after: Vec<i64> = logs
            .by_uid
            .iter()
            .filter(|(uid, log)| (cursor == 0 || **uid >= from) && log.expires_at > now)
            .map(|(uid, _)| *uid)
            .collect();
        let count = count.max(1);
        if after.len() <= count {
            after.sort_unstable();
            return Ok((after, 0));
        }
        // The `count` smallest, without sorting every one.
        after.select_nth_unstable(count);
        let next = after[count];
        after.truncate(count);
        after.sort_unstable();
        Ok((after, next as u64 + 1))
    }

    async fn publish(&self, message: &str) -> StoreResult<()> {
        // Nobody listening is no failure: there is no stream to tell.
        let _ = self.bus.send(BusNote::Message(message.to_string()));
        Ok(())
    }

    async fn bus(&self) -> StoreResult<broadcast::Receiver<BusNote>> {
        Ok(self.bus.subscribe())
    }

    async fn put_stream_ticket(&self, ticket: &str, value: &str, ttl_ms: u64) -> StoreResult<()> {
        let now = now();
        let mut tickets = lock(&self.tickets);
        if tickets.len() >= MAX_TICKETS {
            tickets.retain(|_, (_, until)| *until > now);
        }
        if tickets.len() >= MAX_TICKETS {
            // Still full of live tickets: the one nearest its end goes.
            if let Some(first) = tickets
                .iter()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(k, _)| k.clone())
            {
                tickets.remove(&first);
            }
        }
        tickets.insert(ticket.to_string(), (value.to_string(), now + ttl_ms));
        Ok(())
    }

    async fn take_stream_ticket(&self, ticket: &str) -> StoreResult<Option<String>> {
        let now = now();
        Ok(lock(&self.tickets)
            .remove(ticket)
            .filter(|(_, until)| *until > now)
            .map(|(value, _)| value))
    }

    async fn register_stream(
        &self,
        uid: i64,
        stream: i64,
        now_ms: i64,
        stale_before: i64,
        max: usize,
    ) -> StoreResult<Vec<i64>> {
        let mut registers = lock(&self.registers);
        let open = registers.entry(uid).or_default();
        open.retain(|(_, renewed)| *renewed >= stale_before);
        open.push((stream, now_ms));
        open.sort_unstable();
        let over = open.len().saturating_sub(max);
        Ok(open.drain(..over).map(|(s, _)| s).collect())
    }

    async fn renew_streams(&self, streams: &[(i64, i64)], now_ms: i64) -> StoreResult<()> {
        let mut registers = lock(&self.registers);
        for (uid, stream) in streams {
            if let Some(open) = registers.get_mut(uid) {
                for entry in open.iter_mut().filter(|(s, _)| s == stream) {
                    entry.1 = now_ms;
                }
            }
        }
        Ok(())
    }

    async fn unregister_stream(&self, uid: i64, stream: i64) -> StoreResult<()> {
        let mut registers = lock(&self.registers);
        if let Some(open) = registers.get_mut(&uid) {
            open.retain(|(s, _)| *s != stream);
            if open.is_empty() {
                registers.remove(&uid);
            }
        }
        Ok(())
    }

    async fn stream_registered(&self, uid: i64, stream: i64) -> StoreResult<bool> {
        Ok(lock(&self.registers)
            .get(&uid)
            .is_some_and(|open| open.iter().any(|(s, _)| *s == stream)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: LogBounds = LogBounds {
        max_events: 3,
        max_age_ms: 60_000,
    };

    fn event(uid: i64, n: u32) -> NewEvent {
        NewEvent {
            uid,
            kind: "unread".into(),
            data: format!("{{\"n\":{n}}}"),
        }
    }

    #[tokio::test]
    async fn a_log_resumes_after_any_id_it_holds_and_says_gone_past_its_bounds() {
        let s = MemoryStreams::default();
        // No log, no appends: an account nobody streams for keeps nothing.
        assert_eq!(
            s.append_events(&[event(1, 0)], BOUNDS).await.unwrap(),
            Vec::<i64>::new()
        );
        let opened = s.open_event_log(1, BOUNDS).await.unwrap();
        assert_eq!(
            s.append_events(&[event(1, 1), event(1, 2)], BOUNDS)
                .await
                .unwrap(),
            vec![1]
        );
        let LogRead::After(after) = s.events_after(1, opened, 10).await.unwrap() else {
            panic!("the opening id is in the log");
        };
        assert_eq!(
            after.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["{\"n\":1}", "{\"n\":2}"]
        );
        assert!(after[0].id > opened && after[1].id > after[0].id);
        // Two more: the log keeps three, so the opening entry and the first
        // event fall out. The first event's id still resumes (nothing after
        // it was lost); the opening id does not.
        s.append_events(&[event(1, 3), event(1, 4)], BOUNDS)
            .await
            .unwrap();
        assert_eq!(s.events_after(1, opened, 10).await.unwrap(), LogRead::Gone);
        let LogRead::After(rest) = s.events_after(1, after[0].id, 10).await.unwrap() else {
            panic!("the newest id trimmed still resumes");
        };
        assert_eq!(rest.len(), 3);
        // An id the log never made is gone, not an empty resume.
        let made_up = EventId {
            ms: opened.ms + 1_000_000,
            seq: 0,
        };
        assert_eq!(s.events_after(1, made_up, 10).await.unwrap(), LogRead::Gone);
        assert_eq!(
            s.keep_event_logs(&[1, 2], BOUNDS).await.unwrap(),
            vec![true, false]
        );
    }

    #[tokio::test]
    async fn logged_accounts_page_through_every_account_once() {
        let s = MemoryStreams::default();
        for uid in (1..=25).rev() {
            s.open_event_log(uid, BOUNDS).await.unwrap();
        }
        assert_eq!(s.logged_account_count().await.unwrap(), 25);
        let (mut seen, mut cursor) = (Vec::new(), 0);
        loop {
            let (page, next) = s.logged_accounts(cursor, 10).await.unwrap();
            assert!(page.len() <= 10);
            seen.extend(page);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen, (1..=25).collect::<Vec<_>>());
    }
}
