//! `StreamStore` on Redis: each account's log is a Redis Stream under its
//! owner's hash tag (`{u:UID}:events`), trimmed with `MAXLEN ~` and
//! `MINID ~` on every append and expiring when nothing touches it; the bus
//! is one pub/sub channel (on a Redis Cluster a PUBLISH reaches every
//! node, so listening on any one node hears all); tickets are keys taken
//! with GETDEL; the register of an account's streams is a zset beside its
//! log; the accounts that have logs are one zset (`stream:logged`, scored
//! by when each log expires), which a pulled author's fan-out walks.
//!
//! Whether a log still holds what came after an id needs no sequence of our
//! own: the id is in the log, or it is the newest one trimmed away (Redis
//! 7's `max-deleted-entry-id`). Anything else (a log lost with Redis and
//! made again, an id trimmed with others after it, an id never made) is
//! "gone".

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use redis::Value;
use tokio::sync::broadcast;

use super::conn::Batch;
use super::live::RedisLive;
use crate::store::{
    BusNote, EventId, LogBounds, LogRead, LoggedEvent, NewEvent, StoreError, StoreResult,
    StreamStore, LOG_OPENED,
};

/// How long the listener waits without hearing anything, its own pings
/// included, before it takes its connection for dead and makes another.
const SILENCE: Duration = Duration::from_secs(15);
/// How often the listener pings itself through the channel.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING: &str = "ping";

const OPEN: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XADD', KEYS[1], '*', 'k', ARGV[2], 'd', '')
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
local info = redis.call('XINFO', 'STREAM', KEYS[1])
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then return info[i + 1] end
end
return false
"#;

/// ARGV: max events, max age (ms), kind, data. The age is counted on
/// Redis's clock, the one its ids come from.
const APPEND: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'k', ARGV[3], 'd', ARGV[4])
local t = redis.call('TIME')
local oldest = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[2])
if oldest > 0 then
  redis.call('XTRIM', KEYS[1], 'MINID', '~', string.format('%d', oldest))
end
return id
"#;

/// ARGV: the id, how many. False when the id is gone.
const AFTER: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  local deleted = false
  for i = 1, #info, 2 do
    if info[i] == 'max-deleted-entry-id' then deleted = info[i + 1] end
  end
  if deleted ~= ARGV[1] then return false end
end
return redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
"#;

/// ARGV: stream, now, stale before, max, ttl (ms). Members are stream ids,
/// which grow with time: the oldest opened sorts first (compared as
/// numbers written out, shorter first, so no precision is lost).
const REGISTER: &str = r#"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
local open = redis.call('ZRANGE', KEYS[1], 0, -1)
local over = #open - tonumber(ARGV[4])
if over <= 0 then return {} end
table.sort(open, function(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end)
local out = {}
for i = 1, over do
  redis.call('ZREM', KEYS[1], open[i])
  out[i] = open[i]
end
return out
"#;

/// How long a register outlives its last renewal.
const REGISTER_TTL_MS: u64 = 10 * 60 * 1000;

impl RedisLive {
    fn log_key(&self, uid: i64) -> String {
        format!("{}{{u:{uid}}}:events", self.prefix)
    }

    fn register_key(&self, uid: i64) -> String {
        format!("{}{{u:{uid}}}:streams", self.prefix)
    }

    fn logged_key(&self) -> String {
        format!("{}stream:logged", self.prefix)
    }

    /// Adds to `batch`, replies ignored: these accounts' logs are kept
    /// until `bounds` from now, in the register of accounts with logs too,
    /// from which the expired are dropped.
    fn keep_logged(&self, batch: &mut Batch, uids: &[i64], bounds: LogBounds) {
        let now = crate::ids::now_ms().max(0) as u64;
        let key = self.logged_key();
        let add = batch.cmd("ZADD", &key);
        for uid in uids {
            add.arg(now + bounds.max_age_ms).arg(*uid);
        }
        batch.ignore();
        batch
            .cmd("ZREMRANGEBYSCORE", &key)
            .arg("-inf")
            .arg(format!("({now}"));
        batch.ignore();
    }

    fn ticket_key(&self, ticket: &str) -> String {
        format!("{}ticket:{ticket}", self.prefix)
    }

    pub(super) fn bus_channel(&self) -> String {
        format!("{}bus", self.prefix)
    }

    /// Starts this instance's listener on the bus, once.
    fn listen(&self) {
        if self.bus_listening.set(()).is_err() {
            return;
        }
        let seeds: Vec<String> = self.url.split(',').map(|s| s.trim().to_string()).collect();
        let channel = self.bus_channel();
        let sender = self.bus.clone();
        let conn = self.conn.clone();
        tokio::spawn(async move {
            let mut at = 0;
            let mut lost = false;
            loop {
                // Nobody is listening any more: the store was dropped.
                if sender.receiver_count() == 0 && lost {
                    return;
                }
                let seed = &seeds[at % seeds.len().max(1)];
                at += 1;
                match listen_once(seed, &channel, &sender, &conn, lost).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "the live-update bus was lost; listening again");
                        lost = true;
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        });
    }
}

/// Listens on one node until the connection fails or goes silent (an
/// error), or until nobody listens here any more (`Ok`). After a loss,
/// says so once subscribed again: what was published meanwhile went
/// unheard.
async fn listen_once(
    seed: &str,
    channel: &str,
    sender: &broadcast::Sender<BusNote>,
    conn: &super::conn::Conn,
    after_loss: bool,
) -> anyhow::Result<()> {
    let client = redis::Client::open(seed)?;
    let mut pubsub =
        tokio::time::timeout(Duration::from_secs(2), client.get_async_pubsub()).await??;
    pubsub.subscribe(channel).await?;
    if after_loss {
        let _ = sender.send(BusNote::Resubscribed);
    }
    let mut messages = pubsub.into_on_message();
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut heard = tokio::time::Instant::now();
    loop {
        tokio::select! {
            msg = messages.next() => {
                let Some(msg) = msg else {
                    anyhow::bail!("the subscription ended");
                };
                heard = tokio::time::Instant::now();
                let payload: String = msg.get_payload()?;
                if payload != PING {
                    let _ = sender.send(BusNote::Message(payload));
                }
            }
            _ = ping.tick() => {
                if sender.receiver_count() == 0 {
                    return Ok(());
                }
                if heard.elapsed() > SILENCE {
                    anyhow::bail!("nothing heard for {} s, not even our own pings", SILENCE.as_secs());
                }
                let mut publish = redis::cmd("PUBLISH");
                publish.arg(channel).arg(PING);
                if let Err(e) = conn.query::<i64>(&publish).await {
                    tracing::debug!(error = %e, "could not ping the bus");
                }
            }
        }
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

fn parse_id(v: &Value) -> StoreResult<EventId> {
    text(v)
        .as_deref()
        .and_then(EventId::parse)
        .ok_or_else(|| StoreError::Other(anyhow::anyhow!("not a stream id: {v:?}")))
}

/// XRANGE's reply: [[id, [field, value, ...]], ...].
fn entries(v: &Value) -> StoreResult<Vec<LoggedEvent>> {
    let Value::Array(items) = v else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Array(parts) = item else { continue };
        let (Some(id), Some(Value::Array(fields))) = (parts.first(), parts.get(1)) else {
            continue;
        };
        let mut kind = String::new();
        let mut data = String::new();
        for pair in fields.chunks(2) {
            match (
                pair.first().and_then(text).as_deref(),
                pair.get(1).and_then(text),
            ) {
                (Some("k"), Some(v)) => kind = v,
                (Some("d"), Some(v)) => data = v,
                _ => {}
            }
        }
        out.push(LoggedEvent {
            id: parse_id(id)?,
            kind,
            data,
        });
    }
    Ok(out)
}

#[async_trait]
impl StreamStore for RedisLive {
    async fn open_event_log(&self, uid: i64, bounds: LogBounds) -> StoreResult<EventId> {
        let mut batch = Batch::new();
        batch
            .eval(OPEN, &[&self.log_key(uid)])
            .arg(bounds.max_age_ms)
            .arg(LOG_OPENED);
        self.keep_logged(&mut batch, &[uid], bounds);
        let replies = self.conn.run(batch).await?;
        parse_id(replies.first().unwrap_or(&Value::Nil))
    }

    async fn append_events(&self, events: &[NewEvent], bounds: LogBounds) -> StoreResult<Vec<i64>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let mut batch = Batch::new();
        for e in events {
            batch
                .eval(APPEND, &[&self.log_key(e.uid)])
                .arg(bounds.max_events)
                .arg(bounds.max_age_ms)
                .arg(&e.kind)
                .arg(&e.data);
        }
        let replies = self.conn.run(batch).await?;
        let mut grew = Vec::new();
        for (e, reply) in events.iter().zip(&replies) {
            if !matches!(reply, Value::Nil) && !grew.contains(&e.uid) {
                grew.push(e.uid);
            }
        }
        Ok(grew)
    }

    async fn events_after(&self, uid: i64, after: EventId, max: usize) -> StoreResult<LogRead> {
        let mut batch = Batch::new().repeatable();
        batch
            .eval(AFTER, &[&self.log_key(uid)])
            .arg(after.to_string())
            .arg(max);
        let replies = self.conn.run(batch).await?;
        match replies.first() {
            None | Some(Value::Nil) => Ok(LogRead::Gone),
            Some(v) => Ok(LogRead::After(entries(v)?)),
        }
    }

    async fn keep_event_logs(&self, uids: &[i64], bounds: LogBounds) -> StoreResult<Vec<bool>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let mut batch = Batch::new().repeatable();
        for uid in uids {
            batch
                .cmd("PEXPIRE", &self.log_key(*uid))
                .arg(bounds.max_age_ms);
        }
        let replies = self.conn.run(batch).await?;
        let kept: Vec<bool> = replies
            .iter()
            .map(|v| matches!(v, Value::Int(n) if *n > 0))
            .collect();
        let logged: Vec<i64> = uids
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(u, _)| *u)
            .collect();
        if !logged.is_empty() {
            let mut batch = Batch::new().repeatable();
            self.keep_logged(&mut batch, &logged, bounds);
            self.conn.run(batch).await?;
        }
        Ok(kept)
    }

    async fn logged_account_count(&self) -> StoreResult<u64> {
        let mut card = redis::cmd("ZCARD");
        card.arg(self.logged_key());
        self.conn.query::<u64>(&card).await
    }

    async fn logged_accounts(&self, cursor: u64, count: usize) -> StoreResult<(Vec<i64>, u64)> {
        let mut scan = redis::cmd("ZSCAN");
        scan.arg(self.logged_key())
            .arg(cursor)
            .arg("COUNT")
            .arg(count.max(1));
        let (next, pairs): (String, Vec<String>) = self.conn.query(&scan).await?;
        let now = crate::ids::now_ms() as f64;
        // Member, then score (when its log expires): an expired one is left
        // out until an open or a heartbeat drops it.
        let uids = pairs
            .chunks(2)
            .filter(|p| {
                p.get(1)
                    .and_then(|s| s.parse::<f64>().ok())
                    .is_some_and(|expires| expires > now)
            })
            .filter_map(|p| p[0].parse().ok())
            .collect();
        let next = next
            .parse()
            .map_err(|_| StoreError::Other(anyhow::anyhow!("not a ZSCAN cursor: {next}")))?;
        Ok((uids, next))
    }

    async fn publish(&self, message: &str) -> StoreResult<()> {
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(self.bus_channel()).arg(message);
        self.conn.query::<i64>(&publish).await.map(|_| ())
    }

    async fn bus(&self) -> StoreResult<broadcast::Receiver<BusNote>> {
        let receiver = self.bus.subscribe();
        self.listen();
        Ok(receiver)
    }

    /// Each ticket a key of its own, living its minute: Redis's memory
    /// (and the issuing accounts' write budgets) bound them, with no table
    /// a few accounts could fill for everyone.
    async fn put_stream_ticket(
        &self,
        _holder: i64,
        ticket: &str,
        value: &str,
        ttl_ms: u64,
    ) -> StoreResult<bool> {
        let mut set = redis::cmd("SET");
        set.arg(self.ticket_key(ticket))
            .arg(value)
            .arg("PX")
            .arg(ttl_ms.max(1));
        self.conn.query::<Value>(&set).await.map(|_| true)
    }

    async fn take_stream_ticket(&self, ticket: &str) -> StoreResult<Option<String>> {
        let mut take = redis::cmd("GETDEL");
        take.arg(self.ticket_key(ticket));
        self.conn.query::<Option<String>>(&take).await
    }

    async fn register_stream(
        &self,
        uid: i64,
        stream: i64,
        now_ms: i64,
        stale_before: i64,
        max: usize,
    ) -> StoreResult<Vec<i64>> {
        let mut batch = Batch::new();
        batch
            .eval(REGISTER, &[&self.register_key(uid)])
            .arg(stream)
            .arg(now_ms)
            .arg(stale_before)
            .arg(max)
            .arg(REGISTER_TTL_MS);
        let replies = self.conn.run(batch).await?;
        let Some(Value::Array(closed)) = replies.first() else {
            return Ok(Vec::new());
        };
        Ok(closed
            .iter()
            .filter_map(|v| text(v).and_then(|t| t.parse().ok()))
            .collect())
    }

    async fn renew_streams(&self, streams: &[(i64, i64)], now_ms: i64) -> StoreResult<()> {
        if streams.is_empty() {
            return Ok(());
        }
        let mut batch = Batch::new().repeatable();
        for (uid, stream) in streams {
            let key = self.register_key(*uid);
            batch.cmd("ZADD", &key).arg("XX").arg(now_ms).arg(*stream);
            batch.ignore();
            batch.cmd("PEXPIRE", &key).arg(REGISTER_TTL_MS);
            batch.ignore();
        }
        self.conn.run(batch).await.map(|_| ())
    }

    async fn unregister_stream(&self, uid: i64, stream: i64) -> StoreResult<()> {
        let mut rem = redis::cmd("ZREM");
        rem.arg(self.register_key(uid)).arg(stream);
        self.conn.query::<i64>(&rem).await.map(|_| ())
    }

    async fn stream_registered(&self, uid: i64, stream: i64) -> StoreResult<bool> {
        let mut score = redis::cmd("ZSCORE");
        score.arg(self.register_key(uid)).arg(stream);
        Ok(self.conn.query::<Option<String>>(&score).await?.is_some())
    }
}
