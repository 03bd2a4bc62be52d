//! The Redis adapter of `LiveStore`.
//!
//! Every key of one post carries the hash tag `{p:ID}` and every key of one
//! user `{u:UID}`, so each owner's keys share a Redis Cluster slot and the
//! per-owner Lua scripts below never cross slots. A read of many owners is one
//! pipeline: one round trip whatever the page size.
//!
//! Sets are zsets holding a sentinel member "0" (score 0), so "exists and
//! empty" differs from "absent, rebuild me". Rebuilt values are written only
//! if the owner's generation counter is unchanged since before the documents
//! were read; every write bumps it. That closes the race where a rebuild
//! started before a write would store the pre-write state after it.

use async_trait::async_trait;
use futures_util::StreamExt;
use redis::Value;
use std::sync::Arc;

use super::conn::{Batch, Conn};
use crate::store::{
    BlobKey, Changes, LimitCount, LiveAnswer, LiveChange, LiveFill, LiveKey, LiveRead, LiveStore,
    Owner, SetKey, SetView, SharedTable, StoreError, StoreResult,
};

const SENTINEL: &str = "0";

/// Where an owner's absent generation starts: this instant in microseconds
/// times 1024, plus a random few. Above any generation the owner had
/// before its key expired or the store was flushed (that one started at an
/// earlier instant and moved by one per write), and apart from another
/// instance's start at the same microsecond: so no generation is ever seen
/// twice for one owner, which the near cache relies on.
fn fresh_generation() -> u64 {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    let mut noise = [0u8; 2];
    let _ = getrandom::getrandom(&mut noise);
    (micros << 10) | u64::from(u16::from_le_bytes(noise) & 0x3ff)
}
/// Generations outlive the data they guard, so a rebuild never sees a reset.
const GEN_TTL_SECS: u64 = 8 * 24 * 3600;

/// Writes a rebuilt value if the owner's generation is still ARGV[1]
/// (an empty ARGV[1] writes unconditionally: immutable values, and merges).
/// KEYS: gen, target (for "lww" also its adds and removals). ARGV: gen,
/// ttl, kind ("blob" | "field" | "set" | "lww"), then the value: blob →
/// text; field → field, text; set and lww → score, member pairs.
///
/// "lww" merges a last-writer-wins set: the documents' members (each kept
/// at its highest id), the adds recorded while the set was absent, then the
/// removals, each taking out a member at or below its id. Changes made
/// while the documents were read are so kept, in whatever order they came.
const FILL_SCRIPT: &str = r#"
if ARGV[1] ~= '' and (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then return 0 end
local kind = ARGV[3]
if kind == 'blob' then
  redis.call('SET', KEYS[2], ARGV[4], 'EX', ARGV[2])
elseif kind == 'field' then
  redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
elseif kind == 'lww' then
  redis.call('ZADD', KEYS[2], 0, '0')
  local i = 4
  while i <= #ARGV do
    local j = math.min(i + 999, #ARGV)
    redis.call('ZADD', KEYS[2], 'GT', unpack(ARGV, i, j))
    i = j + 1
  end
  local adds = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
  for p = 1, #adds, 2 do redis.call('ZADD', KEYS[2], 'GT', adds[p + 1], adds[p]) end
  redis.call('DEL', KEYS[3])
  local gone = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
  for p = 1, #gone, 2 do
    local cur = redis.call('ZSCORE', KEYS[2], gone[p])
    if cur and tonumber(cur) <= tonumber(gone[p + 1]) then redis.call('ZREM', KEYS[2], gone[p]) end
  end
  redis.call('EXPIRE', KEYS[2], ARGV[2])
else
  redis.call('DEL', KEYS[2])
  redis.call('ZADD', KEYS[2], 0, '0')
  local i = 4
  while i <= #ARGV do
    local j = math.min(i + 999, #ARGV)
    redis.call('ZADD', KEYS[2], unpack(ARGV, i, j))
    i = j + 1
  end
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
return 1
"#;

/// Applies one owner's changes after a document write, atomically.
/// KEYS: gen, then per change its key (three for a last-writer-wins change:
/// the set, its adds and its removals). ARGV: gen ttl, the generation the
/// writer read before its document write ('' if unknown), where an absent
/// generation starts (`fresh_generation`), then per change an opcode and
/// its operands. Plain set changes apply only if that generation
/// is still current; otherwise another write came in between, the order of
/// the two is unknown here, and the set is dropped to be rebuilt from the
/// documents. Last-writer-wins changes ('ladd', 'lrem') need no order: an
/// add lands unless a removal at its id or later was seen; on an absent set
/// it is recorded for the rebuild to merge; removals are remembered for ten
/// minutes, longer than any rebuild reads. 'lnew' starts an absent
/// last-writer-wins set as a rebuild would, from nothing.
const APPLY_SCRIPT: &str = r#"
local in_order = ARGV[2] ~= '' and (redis.call('GET', KEYS[1]) or '0') == ARGV[2]
redis.call('SET', KEYS[1], ARGV[3], 'NX')
redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
local a = 4
local k = 2
while k <= #KEYS do
  local op = ARGV[a]
  local width = 1
  if op == 'ladd' then
    local m, s = ARGV[a + 1], tonumber(ARGV[a + 2])
    local gone = redis.call('ZSCORE', KEYS[k + 2], m)
    if not gone or tonumber(gone) < s then
      if redis.call('EXISTS', KEYS[k]) == 1 then
        redis.call('ZADD', KEYS[k], 'GT', s, m)
      else
        redis.call('ZADD', KEYS[k + 1], 'GT', s, m)
        redis.call('EXPIRE', KEYS[k + 1], 600)
      end
    end
    width = 3
    a = a + 3
  elseif op == 'lrem' then
    local m, s = ARGV[a + 1], tonumber(ARGV[a + 2])
    for _, key in ipairs({KEYS[k], KEYS[k + 1]}) do
      local cur = redis.call('ZSCORE', key, m)
      if cur and tonumber(cur) <= s then redis.call('ZREM', key, m) end
    end
    redis.call('ZADD', KEYS[k + 2], 'GT', s, m)
    redis.call('EXPIRE', KEYS[k + 2], 600)
    width = 3
    a = a + 3
  elseif op == 'lnew' then
    if redis.call('EXISTS', KEYS[k]) == 0 then
      redis.call('ZADD', KEYS[k], 0, '0')
      local adds = redis.call('ZRANGE', KEYS[k + 1], 0, -1, 'WITHSCORES')
      for p = 1, #adds, 2 do redis.call('ZADD', KEYS[k], 'GT', adds[p + 1], adds[p]) end
      redis.call('DEL', KEYS[k + 1])
      local gone = redis.call('ZRANGE', KEYS[k + 2], 0, -1, 'WITHSCORES')
      for p = 1, #gone, 2 do
        local cur = redis.call('ZSCORE', KEYS[k], gone[p])
        if cur and tonumber(cur) <= tonumber(gone[p + 1]) then redis.call('ZREM', KEYS[k], gone[p]) end
      end
      redis.call('EXPIRE', KEYS[k], ARGV[a + 1])
    end
    width = 3
    a = a + 2
  elseif op == 'zadd' then
    if not in_order then redis.call('DEL', KEYS[k])
    elseif redis.call('EXISTS', KEYS[k]) == 1 then redis.call('ZADD', KEYS[k], ARGV[a + 1], ARGV[a + 2]) end
    a = a + 3
  elseif op == 'zrem' then
    if in_order then redis.call('ZREM', KEYS[k], ARGV[a + 1]) else redis.call('DEL', KEYS[k]) end
    a = a + 2
  elseif op == 'hset' then
    if redis.call('EXISTS', KEYS[k]) == 1 then redis.call('HSET', KEYS[k], ARGV[a + 1], ARGV[a + 2]) end
    a = a + 3
  elseif op == 'hdel' then
    redis.call('HDEL', KEYS[k], ARGV[a + 1])
    a = a + 2
  elseif op == 'set' then
    redis.call('SET', KEYS[k], ARGV[a + 1], 'EX', ARGV[a + 2])
    a = a + 3
  else
    redis.call('DEL', KEYS[k])
    a = a + 1
  end
  k = k + width
end
return 1
"#;

/// Pushes a post onto each timeline that exists; an absent one was never
/// built or has expired, and its owner's next read rebuilds it in full.
/// (EXISTS, not a probe for the sentinel: as good, since no push creates a
/// set, and about 20 ms cheaper per 100,000 timelines, measured inside
/// Redis.) KEYS: the first timeline, which routes the call to its node.
/// ARGV: post id, the size to trim to counting the sentinel or 0 for no
/// trim (trimming rides on one post in 16), then every timeline. The
/// timelines span slots, so they go as arguments, not KEYS (a cluster
/// refuses declared keys of several slots), all served by the node the call
/// runs on: the flag lets a script touch those.
const PUSH_SCRIPT: &str = r#"#!lua flags=allow-cross-slot-keys
local id, trim = ARGV[1], tonumber(ARGV[2])
for i = 3, #ARGV do
  if redis.call('EXISTS', ARGV[i]) == 1 then
    redis.call('ZADD', ARGV[i], id, id)
    if trim > 0 then redis.call('ZREMRANGEBYRANK', ARGV[i], 1, -trim) end
  end
end
return 0
"#;

/// How often a push chunk is regrouped and sent again after its node said
/// one of its timelines lives elsewhere (the slot map changed under it).
const PUSH_REGROUPS: usize = 3;

/// Moves one rate-limit counter and reads it back. The window starts with
/// its first hit and is not stretched by later ones (PEXPIRE only where none
/// is set). A refund (negative cost) never makes a counter nor takes one
/// below zero; one back at zero is deleted. KEYS: the counter. ARGV: cost,
/// window in ms. Returns the count and the milliseconds left in the window.
const LIMIT_SCRIPT: &str = r#"
if tonumber(ARGV[1]) < 0 then
  local cur = redis.call('GET', KEYS[1])
  if not cur then return {0, 0} end
  local n = math.max(tonumber(cur) + tonumber(ARGV[1]), 0)
  local left = redis.call('PTTL', KEYS[1])
  if n == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], n, 'KEEPTTL') end
  return {n, math.max(left, 0)}
end
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  left = tonumber(ARGV[2])
end
return {n, left}
"#;

/// Numbers a pulled author's post and keeps the newest notes. KEYS: the
/// sequence counter, the notes (a zset: member "number:author", so that an
/// author's notes do not replace each other, then the author and the post;
/// score the number). ARGV: the author, the post, how many notes to keep.
const NOTE_POSTED_SCRIPT: &str = r#"
local n = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], n, n .. ':' .. ARGV[1] .. ':' .. ARGV[2])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[3]) - 1)
return n
"#;

/// How long a cached session lives unread. A sign-out drops it at once;
/// this bounds how long one could outlive a sign-out whose cache drop
/// failed on an instance that then died before retrying it.
const SESSION_CACHE_SECS: u64 = 600;

/// Followers per push script call, per node: about a millisecond of Redis
/// time.
const PUSH_CHUNK: usize = 500;
/// Push script calls in flight per instance.
const PUSHES_IN_FLIGHT: usize = 8;

/// A home timeline unread for this long is dropped, and rebuilt from the
/// documents when its owner comes back.
pub const HOME_TTL_SECS: u64 = 24 * 3600;

/// Messages the bus (`event_log`) holds for a listener that is behind (see
/// `embedded::event_log`).
const BUS_CAPACITY: usize = 4096;

pub struct RedisLive {
    pub(super) conn: Conn,
    /// Fan-out pushes go on their own connection. Redis reads a client's
    /// input about 16 KiB at a time and serves other clients in between, so
    /// a read then waits behind about one push call (~1 ms) instead of
    /// every call queued ahead of it on a shared connection (measured
    /// during fan-outs to 100,000: a warm feed page's p50 went from 26 to
    /// 7 ms, its p99 from 43 to 22 ms).
    pub(super) push_conn: Conn,
    pub(super) prefix: String,
    pub(super) ttl_secs: u64,
    /// Push script calls in flight, across every fan-out of this instance
    /// bigger than one call: a burst of posts to big followings queues its
    /// calls here, not as megabytes of commands on the push connection.
    /// Pushes of one call (small followings, a rebuild's catch-up) never
    /// wait for it.
    pub(super) push_permits: Arc<tokio::sync::Semaphore>,
    /// When this instance last renewed each timeline's TTL (ms).
    pub(super) home_renewed: std::sync::Mutex<crate::hashing::IdMap<i64, i64>>,
    /// Where to listen on the bus from (`event_log`): the URL connected to.
    pub(super) url: String,
    pub(super) bus: tokio::sync::broadcast::Sender<crate::store::BusNote>,
    pub(super) bus_listening: std::sync::OnceLock<()>,
}

/// How often an instance renews the TTL of a timeline it keeps reading:
/// the day it lives unread runs late by at most this.
const HOME_TTL_RENEW_EVERY_MS: i64 = 5 * 60 * 1000;
/// Timelines whose renewal an instance remembers before it starts over.
const HOME_RENEWALS_KEPT: usize = 200_000;

/// The key of a user's home timeline (also built by `set_key`).
fn home_key(prefix: &str, uid: i64) -> String {
    format!("{prefix}{{u:{uid}}}:home")
}

fn owner_tag(owner: Owner) -> String {
    match owner {
        Owner::Post(p) => format!("{{p:{p}}}"),
        Owner::User(u) => format!("{{u:{u}}}"),
    }
}

impl RedisLive {
    /// `url` is one node's URL, or a cluster's seed nodes separated by
    /// commas.
    pub async fn connect(url: &str, prefix: &str, ttl_secs: u64) -> StoreResult<Self> {
        let conn = Conn::connect(url).await?;
        let push_conn = Conn::connect(url).await?;
        Ok(Self {
            conn,
            push_conn,
            prefix: prefix.to_string(),
            ttl_secs,
            push_permits: Arc::new(tokio::sync::Semaphore::new(PUSHES_IN_FLIGHT)),
            home_renewed: std::sync::Mutex::default(),
            url: url.to_string(),
            bus: tokio::sync::broadcast::channel(BUS_CAPACITY).0,
            bus_listening: std::sync::OnceLock::new(),
        })
    }

    /// Whether a read of `uid`'s timeline should renew its TTL, noting that
    /// it does.
    fn home_ttl_due(&self, uid: i64) -> bool {
        let now = crate::ids::now_ms();
        let Ok(mut renewed) = self.home_renewed.lock() else {
            return true;
        };
        if renewed
            .get(&uid)
            .is_some_and(|at| now - at < HOME_TTL_RENEW_EVERY_MS)
        {
            return false;
        }
        if renewed.len() >= HOME_RENEWALS_KEPT {
            renewed.clear();
        }
        renewed.insert(uid, now);
        true
    }

    fn gen_key(&self, owner: Owner) -> String {
        format!("{}{}:gen", self.prefix, owner_tag(owner))
    }

    /// The Redis key (and hash field, for comment bodies) of a blob.
    fn blob_key(&self, key: BlobKey) -> (String, Option<String>) {
        let tag = owner_tag(key.owner());
        match key {
            BlobKey::PostBody(_) => (format!("{}{tag}:body", self.prefix), None),
            BlobKey::CommentBody(_, c) => (format!("{}{tag}:cb", self.prefix), Some(c.to_string())),
            BlobKey::Card(_) => (format!("{}{tag}:card", self.prefix), None),
            BlobKey::CommentPeople(_) => (format!("{}{tag}:people", self.prefix), None),
            BlobKey::ViewCount(_) => (format!("{}{tag}:views", self.prefix), None),
            BlobKey::ManyBlockers(_) => (format!("{}{tag}:many_blockers", self.prefix), None),
            BlobKey::Session(_, hash) => {
                (format!("{}{tag}:session:{}", self.prefix, hash.hex()), None)
            }
        }
    }

    /// A last-writer-wins set's adds (recorded while it is absent) and
    /// removals: beside it, under the same hash tag.
    fn lww_keys(&self, key: SetKey) -> [String; 2] {
        let set = self.set_key(key);
        [format!("{set}:adds"), format!("{set}:gone")]
    }

    fn set_key(&self, key: SetKey) -> String {
        let tag = owner_tag(key.owner());
        match key {
            SetKey::PostLikers(_) => format!("{}{tag}:likers", self.prefix),
            SetKey::PostComments(_) => format!("{}{tag}:cids", self.prefix),
            SetKey::CommentLikers(_, c) => format!("{}{tag}:cl:{c}", self.prefix),
            SetKey::CommentReplies(_, c) => format!("{}{tag}:cr:{c}", self.prefix),
            SetKey::Following(_) => format!("{}{tag}:following", self.prefix),
            SetKey::Home(u) => home_key(&self.prefix, u),
            SetKey::Friends(_) => format!("{}{tag}:friends", self.prefix),
            SetKey::Blocking(_) => format!("{}{tag}:blocking", self.prefix),
            SetKey::BlockedBy(_) => format!("{}{tag}:blocked_by", self.prefix),
            SetKey::Muted(_) => format!("{}{tag}:muted", self.prefix),
            SetKey::HiddenBy(_) => format!("{}{tag}:hidden_by", self.prefix),
            SetKey::LabelMembers(_, l) => format!("{}{tag}:label:{l}", self.prefix),
            SetKey::PostShares(_) => format!("{}{tag}:shares", self.prefix),
        }
    }

    fn limit_key(&self, key: &str) -> String {
        format!("{}limit:{key}", self.prefix)
    }

    fn table_version_key(&self, table: SharedTable) -> String {
        format!("{}{}:version", self.prefix, table.name())
    }

    /// The pulled-authors sequence and its notes, under one hash tag (one
    /// slot) so the script that writes both stays on one node.
    fn pulled_posted_keys(&self) -> [String; 2] {
        [
            format!("{}{{pulled}}:seq", self.prefix),
            format!("{}{{pulled}}:posted", self.prefix),
        ]
    }

    /// The stream of like-array refreshes, under one hash tag (one slot).
    fn array_queue_key(&self) -> String {
        format!("{}{{like_arrays}}:queue", self.prefix)
    }

    /// Creates the queue's consumer group (and the stream) unless it exists.
    async fn ensure_array_group(&self) -> StoreResult<()> {
        let created = self
            .conn
            .query::<()>(
                redis::cmd("XGROUP")
                    .arg("CREATE")
                    .arg(self.array_queue_key())
                    .arg(ARRAY_GROUP)
                    .arg("0")
                    .arg("MKSTREAM"),
            )
            .await;
        match created {
            Err(e) if e.to_string().contains("BUSYGROUP") => Ok(()),
            other => other,
        }
    }

    fn push_apply(&self, pipe: &mut Batch, batch: &Changes) {
        let (owner, changes) = (batch.owner, &batch.changes);
        let mut keys = vec![self.gen_key(owner)];
        for change in changes {
            match (change, change.key()) {
                (
                    LiveChange::LwwAdd(..) | LiveChange::LwwRemove(..) | LiveChange::Begin(_),
                    LiveKey::Set(k),
                ) => {
                    keys.push(self.set_key(k));
                    keys.extend(self.lww_keys(k));
                }
                (_, LiveKey::Set(k)) => keys.push(self.set_key(k)),
                (_, LiveKey::Blob(k)) => keys.push(self.blob_key(k).0),
            };
        }
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let cmd = pipe.eval(APPLY_SCRIPT, &keys);
        cmd.arg(GEN_TTL_SECS)
            .arg(
                batch
                    .expected_gen
                    .map(|g| g.to_string())
                    .unwrap_or_default(),
            )
            .arg(fresh_generation());
        for change in changes {
            match change {
                LiveChange::SetAdd(_, member, score) => {
                    cmd.arg("zadd").arg(*score).arg(*member);
                }
                LiveChange::SetRemove(_, member) => {
                    cmd.arg("zrem").arg(*member);
                }
                LiveChange::LwwAdd(_, member, id) => {
                    cmd.arg("ladd").arg(*member).arg(*id);
                }
                LiveChange::LwwRemove(_, member, id) => {
                    cmd.arg("lrem").arg(*member).arg(*id);
                }
                LiveChange::PutBlob(k, text) => match self.blob_key(*k).1 {
                    Some(field) => {
                        cmd.arg("hset").arg(field).arg(text);
                    }
                    None => {
                        cmd.arg("set").arg(text).arg(self.ttl_secs);
                    }
                },
                LiveChange::Drop(LiveKey::Blob(k)) => match self.blob_key(*k).1 {
                    Some(field) => {
                        cmd.arg("hdel").arg(field);
                    }
                    None => {
                        cmd.arg("del");
                    }
                },
                LiveChange::Drop(LiveKey::Set(_)) => {
                    cmd.arg("del");
                }
                LiveChange::Begin(_) => {
                    cmd.arg("lnew").arg(self.ttl_secs);
                }
            }
        }
        pipe.ignore();
    }
}

/// The consumer group every instance's applier reads the queue in.
const ARRAY_GROUP: &str = "appliers";

/// (entry id, post id) of a stream reply's entries; entries deleted since
/// they were queued (nil fields) and malformed ones are passed over.
fn stream_entries(v: &Value) -> Vec<(String, i64)> {
    let Value::Array(entries) = v else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let Value::Array(parts) = e else { return None };
            let id: String = redis::from_redis_value(parts.first()?).ok()?;
            let fields: Vec<String> = redis::from_redis_value(parts.get(1)?).ok()?;
            let post = fields
                .chunks(2)
                .find(|kv| kv.first().map(String::as_str) == Some("post"))?
                .get(1)?
                .parse()
                .ok()?;
            Some((id, post))
        })
        .collect()
}

fn parse<T: redis::FromRedisValue>(v: &Value) -> StoreResult<T> {
    redis::from_redis_value(v).map_err(|e| StoreError::Other(e.into()))
}

#[async_trait]
impl LiveStore for RedisLive {
    async fn ping(&self) -> StoreResult<()> {
        self.conn
            .query::<String>(&redis::cmd("PING"))
            .await
            .map(|_| ())
    }

    async fn read(&self, read: &LiveRead) -> StoreResult<LiveAnswer> {
        if read.is_empty() {
            return Ok(LiveAnswer::default());
        }
        // Reads, TTL refreshes and rate-limit charges: see `repeatable`.
        let mut pipe = Batch::new().repeatable();
        // Generations first: a value read after its owner's generation is
        // at least as new as it, which is what a copy kept under that
        // generation needs (`service::read::near_cache`). On one node, one MGET
        // for all of them; a cluster keeps each owner in a slot of its own.
        let gens_in_one = !self.conn.is_cluster() && !read.gens.is_empty();
        if gens_in_one {
            let keys: Vec<String> = read.gens.iter().map(|o| self.gen_key(*o)).collect();
            let cmd = pipe.cmd("MGET", &keys[0]);
            for k in &keys[1..] {
                cmd.arg(k);
            }
        } else {
            for owner in &read.gens {
                pipe.cmd("GET", &self.gen_key(*owner));
            }
        }
        for blob in &read.blobs {
            match self.blob_key(*blob) {
                (key, Some(field)) => pipe.cmd("HGET", &key).arg(field),
                (key, None) => pipe.cmd("GET", &key),
            };
        }
        for set in &read.sets {
            let key = self.set_key(set.key);
            pipe.cmd("ZCARD", &key);
            if let (true, Some(below)) = (set.top > 0, set.below) {
                // Scores of real members are ids, all above the sentinel's 0.
                pipe.cmd("ZREVRANGEBYSCORE", &key)
                    .arg(format!("({below}"))
                    .arg("(0")
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(set.top);
            } else if set.top > 0 {
                // One extra: the sentinel may be among them when the set is small.
                pipe.cmd("ZREVRANGE", &key)
                    .arg(0)
                    .arg(set.top)
                    .arg("WITHSCORES");
            }
            if let Some(probe) = set.probe {
                pipe.cmd("ZSCORE", &key).arg(probe);
            }
            if let SetKey::Home(uid) = set.key {
                // Only a timeline holding its sentinel was built (earlier
                // versions pushed onto absent ones, making partial sets).
                // Reading a timeline keeps it a day longer: said again at
                // most every few minutes per instance, not on every read.
                pipe.cmd("ZSCORE", &key).arg(SENTINEL);
                if self.home_ttl_due(uid) {
                    pipe.cmd("EXPIRE", &key).arg(HOME_TTL_SECS);
                    pipe.ignore();
                }
            }
        }
        for limit in &read.limits {
            pipe.eval(LIMIT_SCRIPT, &[&self.limit_key(&limit.key)])
                .arg(limit.cost)
                .arg(limit.window_ms.max(1));
        }
        let values = self.conn.run(pipe).await?;
        let mut it = values.iter();
        let mut next = || {
            it.next()
                .ok_or_else(|| StoreError::Other(anyhow::anyhow!("short pipeline reply")))
        };
        let mut answer = LiveAnswer::default();
        // An absent generation reads as 0: never written, expired, or the
        // store was flushed (`LiveFill::start_gens` starts it afresh).
        if gens_in_one {
            let gens: Vec<Option<u64>> = parse(next()?)?;
            answer.gens = gens.into_iter().map(|g| g.unwrap_or(0)).collect();
        } else {
            for _ in &read.gens {
                let g: Option<u64> = parse(next()?)?;
                answer.gens.push(g.unwrap_or(0));
            }
        }
        for _ in &read.blobs {
            answer.blobs.push(parse::<Option<String>>(next()?)?);
        }
        for set in &read.sets {
            let card: u64 = parse(next()?)?;
            let top: Vec<(String, f64)> = if set.top > 0 {
                parse(next()?)?
            } else {
                Vec::new()
            };
            let probe: Option<f64> = if set.probe.is_some() {
                parse(next()?)?
            } else {
                None
            };
            let built = match set.key {
                SetKey::Home(_) => parse::<Option<f64>>(next()?)?.is_some(),
                _ => true,
            };
            if card == 0 || !built {
                answer.sets.push(None);
                continue;
            }
            let top = top
                .into_iter()
                .filter(|(m, _)| m != SENTINEL)
                .filter_map(|(m, s)| m.parse::<i64>().ok().map(|m| (m, s as i64)))
                .take(set.top)
                .collect();
            answer.sets.push(Some(SetView {
                count: card - 1,
                top,
                probe_score: probe.map(|s| s as i64),
            }));
        }
        for _ in &read.limits {
            let (count, left): (i64, i64) = parse(next()?)?;
            answer.limits.push(LimitCount {
                count,
                resets_in_ms: left.max(0) as u64,
            });
        }
        Ok(answer)
    }

    async fn fill(&self, fill: &LiveFill) -> StoreResult<()> {
        if fill.is_empty() {
            return Ok(());
        }
        // Guarded by generation (or merged, for last-writer-wins sets): sent
        // twice, a fill writes the same thing twice.
        let mut pipe = Batch::new().repeatable();
        let fresh = fresh_generation();
        for owner in &fill.start_gens {
            pipe.cmd("SET", &self.gen_key(*owner))
                .arg(fresh)
                .arg("NX")
                .arg("EX")
                .arg(GEN_TTL_SECS);
            pipe.ignore();
        }
        for (key, text, gen) in &fill.blobs {
            let (rkey, field) = self.blob_key(*key);
            let ttl = match key {
                BlobKey::Session(..) => SESSION_CACHE_SECS.min(self.ttl_secs),
                _ => self.ttl_secs,
            };
            let cmd = pipe
                .eval(FILL_SCRIPT, &[&self.gen_key(key.owner()), &rkey])
                .arg(gen.map(|g| g.to_string()).unwrap_or_default())
                .arg(ttl);
            match field {
                Some(f) => cmd.arg("field").arg(f).arg(text),
                None => cmd.arg("blob").arg(text),
            };
            pipe.ignore();
        }
        for (key, members, gen) in &fill.sets {
            let ttl = match key {
                SetKey::Home(_) => HOME_TTL_SECS,
                _ => self.ttl_secs,
            };
            let (gen_key, set_key) = (self.gen_key(key.owner()), self.set_key(*key));
            let cmd = if key.is_last_writer_wins() {
                let [adds, gone] = self.lww_keys(*key);
                pipe.eval(FILL_SCRIPT, &[&gen_key, &set_key, &adds, &gone])
                    .arg("")
                    .arg(ttl)
                    .arg("lww")
            } else {
                pipe.eval(FILL_SCRIPT, &[&gen_key, &set_key])
                    .arg(gen.to_string())
                    .arg(ttl)
                    .arg("set")
            };
            for (member, score) in members {
                cmd.arg(*score).arg(*member);
            }
            pipe.ignore();
        }
        self.conn.run(pipe).await.map(|_| ())
    }

    async fn apply(&self, changes: &[Changes]) -> StoreResult<()> {
        let mut pipe = Batch::new().replicated();
        for batch in changes {
            self.push_apply(&mut pipe, batch);
        }
        self.conn.run(pipe).await.map(|_| ())
    }

    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()> {
        let batch = Changes {
            owner,
            expected_gen: None,
            changes: keys.iter().map(|k| LiveChange::Drop(*k)).collect(),
        };
        let mut pipe = Batch::new().replicated();
        self.push_apply(&mut pipe, &batch);
        self.conn.run(pipe).await.map(|_| ())
    }

    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()> {
        // One script call per chunk of one node's followers, a few in
        // flight, so building the next overlaps Redis running the last.
        // Chunks are kept small enough that a call holds Redis for about a
        // millisecond.
        let trim = if crate::ids::timestamp_of(post_id) % 16 == 0 {
            max + 1
        } else {
            0
        };
        let keys: Vec<String> = uids.iter().map(|u| home_key(&self.prefix, *u)).collect();
        let chunks: Vec<Vec<String>> = self
            .push_conn
            .group_by_node(keys, false)
            .await?
            .into_iter()
            .flat_map(|group| {
                group
                    .chunks(PUSH_CHUNK)
                    .map(<[String]>::to_vec)
                    .collect::<Vec<_>>()
            })
            .collect();
        let big = chunks.len() > 1;
        let mut in_flight = futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|chunk| self.push_chunk(post_id, trim, chunk, big)),
        )
        .buffer_unordered(PUSHES_IN_FLIGHT);
        while let Some(result) = in_flight.next().await {
            result?;
        }
        Ok(())
    }

    async fn clear_derived(&self) -> StoreResult<usize> {
        // Derived keys, cached sessions among them, all start with an
        // owner's hash tag; rate-limit counters and the device counter do
        // not. SCAN, not KEYS: never block a live server. SCAN sees one
        // node's keys, so it runs on every master.
        let mut dropped = 0;
        for node in self.conn.nodes() {
            for tag in ["{p:*", "{u:*"] {
                let pattern = format!("{}{tag}", self.prefix);
                let mut cursor: u64 = 0;
                loop {
                    let mut scan = redis::cmd("SCAN");
                    scan.arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000);
                    let (next, keys): (u64, Vec<String>) = self.conn.query_on(&node, &scan).await?;
                    // Generations go too, as they would with the store:
                    // the next read starts each one afresh, above every
                    // value it had (`fresh_generation`), so a rebuild that
                    // read one before cannot match after, and no instance's
                    // near-cache copy is served past the loss.
                    if !keys.is_empty() {
                        dropped += keys.len();
                        // One key per DEL: keys of different owners may
                        // live in different slots.
                        let mut pipe = Batch::new();
                        for k in keys {
                            pipe.cmd("DEL", &k);
                            pipe.ignore();
                        }
                        self.conn.run(pipe).await?;
                    }
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
            }
        }
        Ok(dropped)
    }

    async fn table_version(&self, table: SharedTable) -> StoreResult<u64> {
        self.conn
            .query::<Option<u64>>(redis::cmd("GET").arg(self.table_version_key(table)))
            .await
            .map(|v| v.unwrap_or(0))
    }

    async fn note_pulled_author_posted(&self, author: i64, post: i64) -> StoreResult<()> {
        let [seq, notes] = self.pulled_posted_keys();
        let mut pipe = Batch::new().replicated();
        pipe.eval(NOTE_POSTED_SCRIPT, &[&seq, &notes])
            .arg(author)
            .arg(post)
            .arg(crate::store::PULLED_AUTHOR_HISTORY);
        pipe.ignore();
        self.conn.run(pipe).await.map(|_| ())
    }

    async fn pulled_authors_posted_after(
        &self,
        seq: u64,
    ) -> StoreResult<crate::store::PulledNotes> {
        let [seq_key, notes] = self.pulled_posted_keys();
        let mut pipe = Batch::new();
        pipe.cmd("GET", &seq_key);
        // From the note numbered `seq` itself: seeing it proves the notes
        // reach back far enough.
        pipe.cmd("ZRANGEBYSCORE", &notes)
            .arg(seq)
            .arg("+inf")
            .arg("WITHSCORES");
        let values = self.conn.run(pipe).await?;
        let newest: Option<u64> = parse(values.first().unwrap_or(&Value::Nil))?;
        let found: Vec<(String, u64)> = parse(values.get(1).unwrap_or(&Value::Nil))?;
        let notes: std::collections::VecDeque<(u64, (i64, i64))> = found
            .into_iter()
            .filter_map(|(member, n)| {
                let mut parts = member.split(':').skip(1);
                let author = parts.next()?.parse().ok()?;
                let post = parts.next()?.parse().ok()?;
                Some((n, (author, post)))
            })
            .collect();
        let newest = newest.unwrap_or(0);
        Ok((
            newest,
            crate::store::embedded::live::pulled_after(newest, &notes, seq),
        ))
    }

    async fn queue_array_refreshes(&self, post_ids: &[i64]) -> StoreResult<()> {
        if post_ids.is_empty() {
            return Ok(());
        }
        // Replicated like every live write that must outlive a failover:
        // an entry lost with a master would leave its array stale.
        let mut pipe = Batch::new().replicated();
        let key = self.array_queue_key();
        for post in post_ids {
            pipe.cmd("XADD", &key).arg("*").arg("post").arg(*post);
            pipe.ignore();
        }
        self.conn.run(pipe).await.map(|_| ())
    }

    async fn take_array_refreshes(
        &self,
        consumer: &str,
        max: usize,
        reclaim_idle_ms: u64,
    ) -> StoreResult<Vec<(String, i64)>> {
        self.ensure_array_group().await?;
        let key = self.array_queue_key();
        // What a consumer took and never acknowledged (it died, or its
        // write failed) first, then what nobody took yet.
        let claimed: Value = self
            .conn
            .query(
                redis::cmd("XAUTOCLAIM")
                    .arg(&key)
                    .arg(ARRAY_GROUP)
                    .arg(consumer)
                    .arg(reclaim_idle_ms)
                    .arg("0-0")
                    .arg("COUNT")
                    .arg(max),
            )
            .await?;
        let mut out = match &claimed {
            Value::Array(parts) => parts.get(1).map(stream_entries).unwrap_or_default(),
            _ => Vec::new(),
        };
        if out.len() < max {
            let read: Value = self
                .conn
                .query(
                    redis::cmd("XREADGROUP")
                        .arg("GROUP")
                        .arg(ARRAY_GROUP)
                        .arg(consumer)
                        .arg("COUNT")
                        .arg(max - out.len())
                        .arg("STREAMS")
                        .arg(&key)
                        .arg(">"),
                )
                .await?;
            // [[key, [entries]]], or nil when there is nothing new.
            if let Value::Array(streams) = &read {
                for stream in streams {
                    if let Value::Array(pair) = stream {
                        if let Some(entries) = pair.get(1) {
                            out.extend(stream_entries(entries));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    async fn ack_array_refreshes(&self, entries: &[String]) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let key = self.array_queue_key();
        let mut pipe = Batch::new();
        let ack = pipe.cmd("XACK", &key).arg(ARRAY_GROUP);
        for e in entries {
            ack.arg(e);
        }
        pipe.ignore();
        // Applied entries are of no use to anyone: the stream stays small.
        let del = pipe.cmd("XDEL", &key);
        for e in entries {
            del.arg(e);
        }
        pipe.ignore();
        self.conn.run(pipe).await.map(|_| ())
    }

    async fn bump_table_version(&self, table: SharedTable) -> StoreResult<u64> {
        // A fresh time-ordered id, not INCR: after a flush INCR would start
        // over at 1 and an instance that had seen 1 would miss the change.
        let version = crate::ids::next_id() as u64;
        self.conn
            .query::<()>(
                redis::cmd("SET")
                    .arg(self.table_version_key(table))
                    .arg(version),
            )
            .await?;
        Ok(version)
    }
}

impl RedisLive {
    /// One push script call over timelines of one node. `queued` calls (a
    /// fan-out of more than one) wait for a permit; one call alone never
    /// does. A node that says a timeline is not its own (the slot map moved
    /// since the grouping) has run nothing: the chunk is regrouped on a
    /// fresh map and sent again.
    async fn push_chunk(
        &self,
        post_id: i64,
        trim: usize,
        chunk: Vec<String>,
        queued: bool,
    ) -> StoreResult<()> {
        let _permit = if queued {
            Some(
                self.push_permits
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|e| StoreError::Other(e.into()))?,
            )
        } else {
            None
        };
        let mut groups = vec![chunk];
        for attempt in 0..=PUSH_REGROUPS {
            let mut misplaced = Vec::new();
            for group in groups {
                let Some(first) = group.first() else {
                    continue;
                };
                let mut pipe = Batch::new().replicated();
                pipe.eval(PUSH_SCRIPT, &[first])
                    .arg(post_id)
                    .arg(trim)
                    .arg(&group);
                pipe.ignore();
                match self.push_conn.run(pipe).await {
                    Ok(_) => {}
                    Err(e) if attempt < PUSH_REGROUPS && is_non_local_key(&e) => {
                        misplaced.extend(group)
                    }
                    Err(e) => return Err(e),
                }
            }
            if misplaced.is_empty() {
                return Ok(());
            }
            groups = self.push_conn.group_by_node(misplaced, true).await?;
        }
        Ok(())
    }
}

/// Whether a script failed for touching a key its node does not serve.
/// Redis checks each key before its command runs, and fails the script at
/// the first such key; the pushes before it are repeated by the retry, which
/// is harmless (a push is a ZADD of the same member and score).
fn is_non_local_key(e: &StoreError) -> bool {
    e.to_string().contains("non local key")
}
