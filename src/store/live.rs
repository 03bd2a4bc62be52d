//! The live store's vocabulary: whose keys (`Owner`), which keys
//! (`BlobKey`, `SetKey`), the batched reads and fills, the changes a write
//! makes, and the `LiveStore` port itself. Redis and the in-process store
//! implement it; `live_checks` holds what both must do alike.

use async_trait::async_trait;

use crate::store::{StoreError, StoreResult, TokenHash};

/// A table every instance keeps whole in memory, reloaded when its
/// version in the live store moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SharedTable {
    DeviceModels,
    ContentFilters,
}

impl SharedTable {
    pub const ALL: [SharedTable; 2] = [SharedTable::DeviceModels, SharedTable::ContentFilters];

    pub fn name(self) -> &'static str {
        match self {
            SharedTable::DeviceModels => "device_models",
            SharedTable::ContentFilters => "content_filters",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Whose keys these are: one post's or one user's live keys share a Redis
/// Cluster slot and one generation counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Post(i64),
    User(i64),
}

impl Owner {
    /// "p:ID" or "u:UID": how the shared repair list names an owner.
    pub fn code(self) -> String {
        match self {
            Owner::Post(p) => format!("p:{p}"),
            Owner::User(u) => format!("u:{u}"),
        }
    }

    pub fn from_code(code: &str) -> Option<Self> {
        let (kind, id) = code.split_once(':')?;
        let id: i64 = id.parse().ok()?;
        match kind {
            "p" => Some(Owner::Post(id)),
            "u" => Some(Owner::User(id)),
            _ => None,
        }
    }
}

/// A cached value: JSON text the services wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlobKey {
    PostBody(i64),
    /// (post, comment): comments are cached under their post.
    CommentBody(i64, i64),
    Card(i64),
    /// Whose cards a post's latest comments need (authors and reply
    /// targets), as a JSON list of uids: a hint that lets a read fetch those
    /// cards with the comments. Never rebuilt from the documents; a stale or
    /// missing hint costs one more round trip and is written afresh.
    CommentPeople(i64),
    /// A session, cached under its user so that signing it out is one
    /// owner's change like any other (`SessionDoc` JSON).
    Session(i64, TokenHash),
    /// A post's view count as the documents have it (a JSON number);
    /// dropped after each flush of its views, rebuilt on the next read.
    ViewCount(i64),
    /// A hint that more accounts block this user than a read takes whole
    /// (`MOMENTS_BLOCKERS_READ_WHOLE`), left by the rebuild that found so:
    /// the next ones ask about people without counting the blocks again.
    /// Never rebuilt; it lapses with the live TTL, and a user blocked by
    /// fewer since is only asked about a little longer.
    ManyBlockers(i64),
}

impl BlobKey {
    /// What kind of value this is, without whose: a label for metrics.
    pub fn kind(self) -> &'static str {
        match self {
            BlobKey::PostBody(_) => "post_body",
            BlobKey::CommentBody(..) => "comment_body",
            BlobKey::Card(_) => "card",
            BlobKey::CommentPeople(_) => "comment_people",
            BlobKey::Session(..) => "session",
            BlobKey::ViewCount(_) => "view_count",
            BlobKey::ManyBlockers(_) => "many_blockers",
        }
    }

    /// A hint: never rebuilt from the documents, so its absence is only
    /// a miss, with nothing to load.
    pub fn is_hint(self) -> bool {
        matches!(self, BlobKey::CommentPeople(_) | BlobKey::ManyBlockers(_))
    }

    pub fn owner(self) -> Owner {
        match self {
            BlobKey::PostBody(p)
            | BlobKey::CommentBody(p, _)
            | BlobKey::CommentPeople(p)
            | BlobKey::ViewCount(p) => Owner::Post(p),
            BlobKey::Card(u) | BlobKey::Session(u, _) | BlobKey::ManyBlockers(u) => Owner::User(u),
        }
    }
}

/// A set of ids with scores (a Redis zset): complete or absent, never partial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetKey {
    /// member uid, score like id.
    PostLikers(i64),
    /// member and score comment id.
    PostComments(i64),
    /// (post, comment): member uid, score like id.
    CommentLikers(i64, i64),
    /// (post, comment): member and score reply id.
    CommentReplies(i64, i64),
    /// Whom a user follows: member followee, score edge id.
    Following(i64),
    /// A user's home timeline, newest `MOMENTS_TIMELINE_MAX` post ids: member
    /// and score the post id. Absent when the user was away; rebuilt on read.
    Home(i64),
    /// A user's friends (mutual follows): member friend, score 0.
    Friends(i64),
    /// Whom a user blocked: member the blocked, score block id. Bounded by
    /// `MOMENTS_MAX_BLOCKS`, so read whole.
    Blocking(i64),
    /// Who blocked a user: member the blocker, score block id. Strangers
    /// grow it, so a read takes at most `MOMENTS_BLOCKERS_READ_WHOLE` of
    /// it, and past that asks it only about the people at hand.
    BlockedBy(i64),
    /// Users whose posts a user keeps out of their home feed (不看他):
    /// member the muted, score filter id.
    Muted(i64),
    /// Users who hide their posts from a user (不让他看): member the one
    /// hiding, score filter id.
    HiddenBy(i64),
    /// (owner, label): the label's members, score 0.
    LabelMembers(i64, i64),
    /// member and score share id.
    PostShares(i64),
}

impl SetKey {
    /// Sets whose members come and go by id (a like, a comment): a member is
    /// there if its newest id was added and not removed, whatever order the
    /// changes arrive in. Changes to them never conflict, so they apply
    /// under any generation, and a rebuild merges the changes made while it
    /// read the documents instead of being thrown away: a busy post stays
    /// cached however many write to it at once.
    pub fn is_last_writer_wins(self) -> bool {
        matches!(
            self,
            SetKey::PostLikers(_)
                | SetKey::PostComments(_)
                | SetKey::CommentLikers(..)
                | SetKey::CommentReplies(..)
                | SetKey::PostShares(_)
        )
    }

    /// What kind of set this is, without whose: a label for metrics.
    pub fn kind(self) -> &'static str {
        match self {
            SetKey::PostLikers(_) => "post_likers",
            SetKey::PostComments(_) => "post_comments",
            SetKey::CommentLikers(..) => "comment_likers",
            SetKey::CommentReplies(..) => "comment_replies",
            SetKey::Following(_) => "following",
            SetKey::Home(_) => "home",
            SetKey::Friends(_) => "friends",
            SetKey::Blocking(_) => "blocking",
            SetKey::BlockedBy(_) => "blocked_by",
            SetKey::Muted(_) => "muted",
            SetKey::HiddenBy(_) => "hidden_by",
            SetKey::LabelMembers(..) => "label_members",
            SetKey::PostShares(_) => "post_shares",
        }
    }

    pub fn owner(self) -> Owner {
        match self {
            SetKey::PostLikers(p)
            | SetKey::PostComments(p)
            | SetKey::CommentLikers(p, _)
            | SetKey::CommentReplies(p, _)
            | SetKey::PostShares(p) => Owner::Post(p),
            SetKey::Following(u)
            | SetKey::Friends(u)
            | SetKey::Blocking(u)
            | SetKey::BlockedBy(u)
            | SetKey::Home(u)
            | SetKey::Muted(u)
            | SetKey::HiddenBy(u)
            | SetKey::LabelMembers(u, _) => Owner::User(u),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetRead {
    pub key: SetKey,
    /// How many of the highest-scored members to return.
    pub top: usize,
    /// A member whose score to look up (the viewer, for "liked by me").
    pub probe: Option<i64>,
    /// Only members scored below this (a keyset page of a timeline).
    pub below: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetView {
    pub count: u64,
    /// (member, score), highest score first.
    pub top: Vec<(i64, i64)>,
    pub probe_score: Option<i64>,
}

/// One rate-limit counter to move and read: a fixed window of `window_ms`
/// that starts at the first hit. Counters are not derived state; losing them
/// forgives everyone's recent requests, nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitCheck {
    /// What is counted, and whose: `login_failures:u:UID`, `reads:ip:ADDR`.
    pub key: String,
    /// Added to the counter: 1 counts a request, 0 only looks, -1 takes one
    /// back (a login that turned out right).
    pub cost: i64,
    pub window_ms: u64,
    /// A count from which the counter is a lockout (an account shut by
    /// failed sign-ins): a store short of room forgets other counters
    /// first, never this one while its window lasts.
    pub lockout_at: Option<i64>,
}

/// A counter after its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitCount {
    pub count: i64,
    /// Until the window ends.
    pub resets_in_ms: u64,
}

/// One batched read: everything comes back in one round trip.
#[derive(Debug, Default, Clone)]
pub struct LiveRead {
    pub blobs: Vec<BlobKey>,
    pub sets: Vec<SetRead>,
    pub gens: Vec<Owner>,
    /// Rate-limit counters, moved in the same round trip as the reads.
    pub limits: Vec<LimitCheck>,
}

impl LiveRead {
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
            && self.sets.is_empty()
            && self.gens.is_empty()
            && self.limits.is_empty()
    }
}

#[derive(Debug, Default, Clone)]
pub struct LiveAnswer {
    pub blobs: Vec<Option<String>>,
    /// `None`: absent, rebuild it from the documents.
    pub sets: Vec<Option<SetView>>,
    /// Each owner's generation; 0 when it has none (never written since
    /// it expired or the store was flushed), which vouches for no copy.
    pub gens: Vec<u64>,
    pub limits: Vec<LimitCount>,
}

/// Rebuilt state to store, each item only if its owner's generation is still
/// the one read before the documents were read (otherwise a write came in
/// between and the rebuilt value may be stale: skip it, the next read
/// rebuilds). Last-writer-wins sets are merged instead, whatever the
/// generation (`SetKey::is_last_writer_wins`).
#[derive(Debug, Default, Clone)]
pub struct LiveFill {
    pub blobs: Vec<(BlobKey, String, Option<u64>)>,
    pub sets: Vec<SetFill>,
    /// Owners whose generation read as absent (0): each is started, unless
    /// a write started it meanwhile, above every value it had before, so
    /// that later reads can keep copies under it (`service::read::near_cache`).
    pub start_gens: Vec<Owner>,
}

/// A whole set to store: its key, its (member, score) pairs, the guard generation.
pub type SetFill = (SetKey, Vec<(i64, i64)>, u64);

impl LiveFill {
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty() && self.sets.is_empty() && self.start_gens.is_empty()
    }
}

/// A change following a document write. Applied as one atomic step per owner
/// that bumps the owner's generation; set changes touch only sets that exist
/// (an absent set stays absent and is rebuilt whole).
#[derive(Debug, Clone, PartialEq)]
pub enum LiveChange {
    SetAdd(SetKey, i64, i64),
    SetRemove(SetKey, i64),
    /// For a last-writer-wins set: (member, id) was added. Kept unless the
    /// member was removed at this id or later.
    LwwAdd(SetKey, i64, i64),
    /// For a last-writer-wins set: the member's entry up to this id was
    /// removed (remembered for a while, so a late add of it stays out).
    LwwRemove(SetKey, i64, i64),
    PutBlob(BlobKey, String),
    Drop(LiveKey),
    /// A last-writer-wins set that begins now, empty (a new post's likers,
    /// comments, shares): made unless it exists, with the changes recorded
    /// while it was absent, so its first reads need no rebuild.
    Begin(SetKey),
}

/// One owner's changes after one document write. Set changes are applied
/// only if the owner's generation is still `expected_gen`, read before the
/// document write: then no other write came in between, and applying them
/// in arrival order is applying them in document order. Otherwise (or with no
/// expected generation) the sets they touch are dropped and rebuilt on the
/// next read. Blob puts and drops always apply: they carry whole values.
#[derive(Debug, Clone, PartialEq)]
pub struct Changes {
    pub owner: Owner,
    pub expected_gen: Option<u64>,
    pub changes: Vec<LiveChange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiveKey {
    Blob(BlobKey),
    Set(SetKey),
}

impl LiveKey {
    /// The key without its owner, as the shared repair list stores it:
    /// its kind, then the ids and hash beyond the owner's.
    pub fn code(self) -> String {
        match self {
            LiveKey::Blob(BlobKey::CommentBody(_, c)) => format!("b:comment_body:{c}"),
            LiveKey::Blob(BlobKey::Session(_, h)) => format!("b:session:{}", h.hex()),
            LiveKey::Blob(b) => format!("b:{}", b.kind()),
            LiveKey::Set(SetKey::CommentLikers(_, c)) => format!("s:comment_likers:{c}"),
            LiveKey::Set(SetKey::CommentReplies(_, c)) => format!("s:comment_replies:{c}"),
            LiveKey::Set(SetKey::LabelMembers(_, l)) => format!("s:label_members:{l}"),
            LiveKey::Set(k) => format!("s:{}", k.kind()),
        }
    }

    /// The inverse of `code`, for `owner`'s keys; `None` for a code of
    /// another owner kind, or none at all.
    pub fn from_code(owner: Owner, code: &str) -> Option<Self> {
        let mut parts = code.split(':');
        let (class, kind, rest) = (parts.next()?, parts.next()?, parts.next());
        if parts.next().is_some() {
            return None;
        }
        let sub = || rest.and_then(|r| r.parse::<i64>().ok());
        let key = match (owner, class, kind, rest.is_some()) {
            (Owner::Post(p), "b", "post_body", false) => LiveKey::Blob(BlobKey::PostBody(p)),
            (Owner::Post(p), "b", "comment_body", true) => {
                LiveKey::Blob(BlobKey::CommentBody(p, sub()?))
            }
            (Owner::Post(p), "b", "comment_people", false) => {
                LiveKey::Blob(BlobKey::CommentPeople(p))
            }
            (Owner::Post(p), "b", "view_count", false) => LiveKey::Blob(BlobKey::ViewCount(p)),
            (Owner::User(u), "b", "card", false) => LiveKey::Blob(BlobKey::Card(u)),
            (Owner::User(u), "b", "many_blockers", false) => {
                LiveKey::Blob(BlobKey::ManyBlockers(u))
            }
            (Owner::User(u), "b", "session", true) => {
                LiveKey::Blob(BlobKey::Session(u, TokenHash::from_hex(rest?)?))
            }
            (Owner::Post(p), "s", "post_likers", false) => LiveKey::Set(SetKey::PostLikers(p)),
            (Owner::Post(p), "s", "post_comments", false) => LiveKey::Set(SetKey::PostComments(p)),
            (Owner::Post(p), "s", "post_shares", false) => LiveKey::Set(SetKey::PostShares(p)),
            (Owner::Post(p), "s", "comment_likers", true) => {
                LiveKey::Set(SetKey::CommentLikers(p, sub()?))
            }
            (Owner::Post(p), "s", "comment_replies", true) => {
                LiveKey::Set(SetKey::CommentReplies(p, sub()?))
            }
            (Owner::User(u), "s", "following", false) => LiveKey::Set(SetKey::Following(u)),
            (Owner::User(u), "s", "home", false) => LiveKey::Set(SetKey::Home(u)),
            (Owner::User(u), "s", "friends", false) => LiveKey::Set(SetKey::Friends(u)),
            (Owner::User(u), "s", "blocking", false) => LiveKey::Set(SetKey::Blocking(u)),
            (Owner::User(u), "s", "blocked_by", false) => LiveKey::Set(SetKey::BlockedBy(u)),
            (Owner::User(u), "s", "muted", false) => LiveKey::Set(SetKey::Muted(u)),
            (Owner::User(u), "s", "hidden_by", false) => LiveKey::Set(SetKey::HiddenBy(u)),
            (Owner::User(u), "s", "label_members", true) => {
                LiveKey::Set(SetKey::LabelMembers(u, sub()?))
            }
            _ => return None,
        };
        Some(key)
    }
}

impl LiveChange {
    pub fn key(&self) -> LiveKey {
        match self {
            LiveChange::SetAdd(k, ..)
            | LiveChange::SetRemove(k, _)
            | LiveChange::LwwAdd(k, ..)
            | LiveChange::LwwRemove(k, ..)
            | LiveChange::Begin(k) => LiveKey::Set(*k),
            LiveChange::PutBlob(k, _) => LiveKey::Blob(*k),
            LiveChange::Drop(k) => *k,
        }
    }
}

/// Live, derived state. Losing all of it loses no data and logs nobody out
/// (sessions are documents; the live store caches them).
#[async_trait]
pub trait LiveStore: crate::store::StreamStore + Send + Sync {
    async fn ping(&self) -> StoreResult<()>;
    async fn read(&self, read: &LiveRead) -> StoreResult<LiveAnswer>;
    async fn fill(&self, fill: &LiveFill) -> StoreResult<()>;
    /// Applies changes grouped by owner, all in one round trip.
    async fn apply(&self, changes: &[Changes]) -> StoreResult<()>;
    /// Bumps the generation and deletes the keys: the fallback when `apply`
    /// failed, so that no stale value outlives a write.
    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()>;

    /// Drops every derived key, cached sessions included: what losing the
    /// live store does, on purpose. Returns how many keys were dropped.
    async fn clear_derived(&self) -> StoreResult<usize>;

    /// Adds a new post to these users' home timelines where they exist
    /// (absent ones are rebuilt on read), keeping about the newest `max`.
    /// Generations are not bumped: commutative, idempotent adds need no
    /// ordering, and a rebuild re-reads the newest posts after storing.
    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()>;

    /// A counter every instance polls to learn that a table it keeps whole
    /// in memory changed.
    async fn table_version(&self, table: SharedTable) -> StoreResult<u64>;
    async fn bump_table_version(&self, table: SharedTable) -> StoreResult<u64>;

    /// Records that a pulled author (one merged in at read time, never pushed)
    /// published `post`, under the next number of a sequence every instance
    /// polls.
    async fn note_pulled_author_posted(&self, author: i64, post: i64) -> StoreResult<()>;

    /// The sequence's newest number, and the (author, post) noted after
    /// `seq`;
    /// `None` for the authors when the kept history (the newest
    /// [`PULLED_AUTHOR_HISTORY`]) no longer reaches back to `seq`, or the
    /// sequence went backwards (the store was flushed): the caller then
    /// forgets every author.
    async fn pulled_authors_posted_after(&self, seq: u64)
        -> StoreResult<crate::store::PulledNotes>;

    /// Queues refreshes of these posts' like arrays, durably (Redis: a
    /// stream with a consumer group; the in-process store has no queue, and
    /// there a like writes its post's array at once).
    async fn queue_array_refreshes(&self, _post_ids: &[i64]) -> StoreResult<()> {
        Err(StoreError::Other(anyhow::anyhow!("no durable queue")))
    }

    /// Takes up to `max` queued refreshes for `consumer`: first those
    /// another consumer took and left unacknowledged for `reclaim_idle_ms`
    /// (it died), then new ones. Each is (entry id, post id).
    async fn take_array_refreshes(
        &self,
        _consumer: &str,
        _max: usize,
        _reclaim_idle_ms: u64,
    ) -> StoreResult<Vec<(String, i64)>> {
        Ok(Vec::new())
    }

    /// Forgets refreshes that were applied.
    async fn ack_array_refreshes(&self, _entries: &[String]) -> StoreResult<()> {
        Ok(())
    }
}

/// The newest note number, and the (author, post) noted after the number
/// asked for, if the kept notes reach back that far.
pub type PulledNotes = (u64, Option<Vec<(i64, i64)>>);

/// Notes of pulled authors' posts the live store keeps for pollers.
pub const PULLED_AUTHOR_HISTORY: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_repair_list_reads_back_every_key_it_stores() {
        let hash = TokenHash([0x5a; 32]);
        let keys = [
            LiveKey::Blob(BlobKey::PostBody(7)),
            LiveKey::Blob(BlobKey::CommentBody(7, 70)),
            LiveKey::Blob(BlobKey::CommentPeople(7)),
            LiveKey::Blob(BlobKey::ViewCount(7)),
            LiveKey::Blob(BlobKey::Card(3)),
            LiveKey::Blob(BlobKey::ManyBlockers(3)),
            LiveKey::Blob(BlobKey::Session(3, hash)),
            LiveKey::Set(SetKey::PostLikers(7)),
            LiveKey::Set(SetKey::PostComments(7)),
            LiveKey::Set(SetKey::CommentLikers(7, 70)),
            LiveKey::Set(SetKey::CommentReplies(7, 70)),
            LiveKey::Set(SetKey::Following(3)),
            LiveKey::Set(SetKey::Home(3)),
            LiveKey::Set(SetKey::Friends(3)),
            LiveKey::Set(SetKey::Blocking(3)),
            LiveKey::Set(SetKey::BlockedBy(3)),
            LiveKey::Set(SetKey::Muted(3)),
            LiveKey::Set(SetKey::HiddenBy(3)),
            LiveKey::Set(SetKey::LabelMembers(3, 30)),
            LiveKey::Set(SetKey::PostShares(7)),
        ];
        for key in keys {
            let owner = match key {
                LiveKey::Blob(b) => b.owner(),
                LiveKey::Set(s) => s.owner(),
            };
            assert_eq!(Owner::from_code(&owner.code()), Some(owner));
            assert_eq!(LiveKey::from_code(owner, &key.code()), Some(key), "{key:?}");
            // A code read for the other kind of owner names nothing.
            let other = match owner {
                Owner::Post(p) => Owner::User(p),
                Owner::User(u) => Owner::Post(u),
            };
            assert_eq!(LiveKey::from_code(other, &key.code()), None, "{key:?}");
        }
        assert_eq!(LiveKey::from_code(Owner::Post(1), "s:post_likers:9"), None);
        assert_eq!(LiveKey::from_code(Owner::User(1), "b:session:zz"), None);
        assert_eq!(Owner::from_code("q:1"), None);
    }
}
