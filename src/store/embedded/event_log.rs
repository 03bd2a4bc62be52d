//! `StreamStore` in process: the accounts' event logs, the bus (a
//! broadcast channel: one instance hears itself), stream tickets and the
//! register of open streams, with the Redis adapter's rules (trimming,
//! expiry, "gone" ids), so that a stream behaves alike on both.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
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
/// budget, and lives a minute. Past it a new ticket is refused (the
/// service answers 503), never made room for by dropping someone else's.
pub const MAX_TICKETS: usize = 100_000;
/// One account's live tickets kept at most: a new one drops its oldest.
/// A client redeems a ticket at once, so eight are plenty; without it a
/// few hundred accounts, each at its write budget, could fill the table
/// for everyone.
pub const TICKETS_PER_ACCOUNT: usize = 8;

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

/// The logs by account, in uid order (so a page of `logged_accounts` is a
/// range, not a scan of every log), and by when each expires (so the
/// expired are found without a scan either).
#[derive(Default)]
struct Logs {
    by_uid: BTreeMap<i64, Log>,
    by_expiry: BTreeSet<(u64, i64)>,
}

impl Logs {
    /// The log of `uid` unless it expired (then it is forgotten).
    fn live(&mut self, uid: i64, now: u64) -> Option<&mut Log> {
        self.sweep(now);
        self.by_uid.get_mut(&uid)
    }

    /// Forgets the expired logs: each once, as it expires.
    fn sweep(&mut self, now: u64) {
        while let Some(&(at, uid)) = self.by_expiry.first() {
            if at > now {
                break;
            }
            self.by_expiry.pop_first();
            self.by_uid.remove(&uid);
        }
    }

    /// Keeps `uid`'s log until `at`.
    fn keep_until(&mut self, uid: i64, at: u64) {
        if let Some(log) = self.by_uid.get_mut(&uid) {
            self.by_expiry.remove(&(log.expires_at, uid));
            log.expires_at = at;
            self.by_expiry.insert((at, uid));
        }
    }
}

/// Live tickets by key, and by when each expires, so that the expired are
/// dropped without a scan of them all.
#[derive(Default)]
struct Tickets {
    /// Value, expiry, holder and place in the order of issue, by key.
    by_key: HashMap<String, Ticket>,
    by_expiry: BTreeSet<(u64, String)>,
    /// Each holder's live tickets, in the order they were issued.
    by_holder: HashMap<i64, BTreeSet<(u64, String)>>,
    issued: u64,
}

struct Ticket {
    value: String,
    until: u64,
    holder: i64,
    issued: u64,
}

impl Tickets {
    fn sweep(&mut self, now: u64) {
        while let Some((at, _)) = self.by_expiry.first() {
            if *at > now {
                break;
            }
            if let Some((_, key)) = self.by_expiry.pop_first() {
                self.remove(&key);
            }
        }
    }

    fn remove(&mut self, key: &str) -> Option<Ticket> {
        let ticket = self.by_key.remove(key)?;
        self.by_expiry.remove(&(ticket.until, key.to_string()));
        if let Some(held) = self.by_holder.get_mut(&ticket.holder) {
            held.remove(&(ticket.issued, key.to_string()));
            if held.is_empty() {
                self.by_holder.remove(&ticket.holder);
            }
        }
        Some(ticket)
    }

    fn insert(&mut self, holder: i64, key: &str, value: &str, until: u64) {
        self.remove(key);
        let oldest = self
            .by_holder
            .get(&holder)
            .filter(|held| held.len() >= TICKETS_PER_ACCOUNT)
            .and_then(|held| held.first().map(|(_, k)| k.clone()));
        if let Some(oldest) = oldest {
            self.remove(&oldest);
        }
        self.issued += 1;
        let issued = self.issued;
        self.by_key.insert(
            key.to_string(),
            Ticket {
                value: value.to_string(),
                until,
                holder,
                issued,
            },
        );
        self.by_expiry.insert((until, key.to_string()));
        self.by_holder
            .entry(holder)
            .or_default()
            .insert((issued, key.to_string()));
    }
}

pub struct MemoryStreams {
    logs: Mutex<Logs>,
    bus: broadcast::Sender<BusNote>,
    tickets: Mutex<Tickets>,
    max_tickets: usize,
    /// Per account, its open streams and when each was last renewed.
    registers: Mutex<HashMap<i64, Vec<(i64, i64)>>>,
}

impl Default for MemoryStreams {
    fn default() -> Self {
        Self::with_max_tickets(MAX_TICKETS)
    }
}

impl MemoryStreams {
    /// With room for `max_tickets` live tickets.
    pub fn with_max_tickets(max_tickets: usize) -> Self {
        Self {
            logs: Mutex::default(),
            bus: broadcast::channel(BUS_CAPACITY).0,
            tickets: Mutex::default(),
            max_tickets,
            registers: Mutex::default(),
        }
    }

    /// Forgets every log (what losing the live store does); returns how
    /// many there were.
    pub fn clear_logs(&self) -> usize {
        let mut logs = lock(&self.logs);
        let n = logs.by_uid.len();
        logs.by_uid.clear();
        logs.by_expiry.clear();
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
        logs.sweep(now);
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
        let last = log.last;
        logs.keep_until(uid, now + bounds.max_age_ms);
        Ok(last)
    }

    async fn append_events(&self, events: &[NewEvent], bounds: LogBounds) -> StoreResult<Vec<i64>> {
        let now = now();
        let mut logs = lock(&self.logs);
        logs.sweep(now);
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
        logs.sweep(now);
        Ok(uids
            .iter()
            .map(|u| {
                let has = logs.by_uid.contains_key(u);
                logs.keep_until(*u, now + bounds.max_age_ms);
                has
            })
            .collect())
    }

    async fn logged_account_count(&self) -> StoreResult<u64> {
        let mut logs = lock(&self.logs);
        logs.sweep(now());
        Ok(logs.by_uid.len() as u64)
    }

    /// The cursor is the next page's first uid plus one, pages in uid
    /// order, so an account is in one page at most; a page reads only its
    /// own range of the logs.
    async fn logged_accounts(&self, cursor: u64, count: usize) -> StoreResult<(Vec<i64>, u64)> {
        let mut logs = lock(&self.logs);
        logs.sweep(now());
        let count = count.max(1);
        let mut range = match cursor {
            0 => logs.by_uid.range(..),
            c => logs.by_uid.range((c - 1) as i64..),
        }
        .map(|(uid, _)| *uid);
        let page: Vec<i64> = range.by_ref().take(count).collect();
        let next = range.next().map_or(0, |uid| uid as u64 + 1);
        Ok((page, next))
    }

    async fn publish(&self, message: &str) -> StoreResult<()> {
        // Nobody listening is no failure: there is no stream to tell.
        let _ = self.bus.send(BusNote::Message(message.to_string()));
        Ok(())
    }

    async fn bus(&self) -> StoreResult<broadcast::Receiver<BusNote>> {
        Ok(self.bus.subscribe())
    }

    async fn put_stream_ticket(
        &self,
        holder: i64,
        ticket: &str,
        value: &str,
        ttl_ms: u64,
    ) -> StoreResult<bool> {
        let now = now();
        let mut tickets = lock(&self.tickets);
        tickets.sweep(now);
        // A holder at its own cap makes room from its own tickets.
        let makes_room = tickets.by_key.contains_key(ticket)
            || tickets
                .by_holder
                .get(&holder)
                .is_some_and(|held| held.len() >= TICKETS_PER_ACCOUNT);
        if tickets.by_key.len() >= self.max_tickets && !makes_room {
            return Ok(false);
        }
        tickets.insert(holder, ticket, value, now + ttl_ms);
        Ok(true)
    }

    async fn take_stream_ticket(&self, ticket: &str) -> StoreResult<Option<String>> {
        let now = now();
        let mut tickets = lock(&self.tickets);
        let taken = tickets.remove(ticket);
        Ok(taken.filter(|t| t.until > now).map(|t| t.value))
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

    #[tokio::test]
    async fn a_full_ticket_table_refuses_a_new_ticket_and_keeps_everyone_elses() {
        let s = MemoryStreams::with_max_tickets(3);
        for (holder, t) in [(1, "a"), (2, "b"), (3, "c")] {
            assert!(s.put_stream_ticket(holder, t, t, 60_000).await.unwrap());
        }
        assert!(
            !s.put_stream_ticket(4, "d", "d", 60_000).await.unwrap(),
            "full of live tickets: refused"
        );
        for t in ["a", "b", "c"] {
            assert_eq!(
                s.take_stream_ticket(t).await.unwrap().as_deref(),
                Some(t),
                "nobody's ticket was dropped for it"
            );
        }
        assert_eq!(s.take_stream_ticket("d").await.unwrap(), None);
        // Taken and expired tickets make room.
        assert!(s.put_stream_ticket(5, "e", "e", 60_000).await.unwrap());
        for t in ["f", "g"] {
            assert!(s.put_stream_ticket(6, t, t, 0).await.unwrap());
        }
        assert!(s.put_stream_ticket(7, "h", "h", 60_000).await.unwrap());
        assert_eq!(s.take_stream_ticket("f").await.unwrap(), None, "expired");
        assert_eq!(
            s.take_stream_ticket("e").await.unwrap().as_deref(),
            Some("e")
        );
    }

    /// One account's tickets past its cap drop its own oldest, so that no
    /// few accounts fill the table: everyone else still gets theirs.
    #[tokio::test]
    async fn an_account_holds_a_few_tickets_at_most_its_oldest_dropped() {
        let s = MemoryStreams::with_max_tickets(TICKETS_PER_ACCOUNT + 1);
        let mine: Vec<String> = (0..TICKETS_PER_ACCOUNT * 3)
            .map(|i| format!("m{i}"))
            .collect();
        for t in &mine {
            assert!(s.put_stream_ticket(1, t, t, 60_000).await.unwrap(), "{t}");
        }
        assert!(
            s.put_stream_ticket(2, "theirs", "theirs", 60_000)
                .await
                .unwrap(),
            "room for another account's"
        );
        let (dropped, kept) = mine.split_at(mine.len() - TICKETS_PER_ACCOUNT);
        for t in dropped {
            assert_eq!(s.take_stream_ticket(t).await.unwrap(), None, "{t}");
        }
        for t in kept {
            assert_eq!(
                s.take_stream_ticket(t).await.unwrap().as_deref(),
                Some(t.as_str())
            );
        }
        assert_eq!(
            s.take_stream_ticket("theirs").await.unwrap().as_deref(),
            Some("theirs")
        );
    }

    #[tokio::test]
    async fn an_expired_log_leaves_the_pages_and_the_count() {
        let s = MemoryStreams::default();
        let gone = LogBounds {
            max_events: 3,
            max_age_ms: 0,
        };
        for uid in 1..=4 {
            s.open_event_log(uid, if uid % 2 == 0 { gone } else { BOUNDS })
                .await
                .unwrap();
        }
        assert_eq!(s.logged_account_count().await.unwrap(), 2);
        assert_eq!(s.logged_accounts(0, 10).await.unwrap(), (vec![1, 3], 0));
        assert_eq!(s.logged_accounts(0, 1).await.unwrap(), (vec![1], 4));
        assert_eq!(s.logged_accounts(4, 1).await.unwrap(), (vec![3], 0));
        assert_eq!(
            s.keep_event_logs(&[1, 2], BOUNDS).await.unwrap(),
            vec![true, false]
        );
        // Kept with no time left, it goes too.
        s.keep_event_logs(&[1], gone).await.unwrap();
        assert_eq!(s.logged_accounts(0, 10).await.unwrap(), (vec![3], 0));
        assert_eq!(
            s.events_after(1, EventId::default(), 1).await.unwrap(),
            LogRead::Gone
        );
    }
}
