//! `DocStore` on redb: the tables, helpers and store-wide operations here,
//! one file per aggregate port (`accounts`, `posts`, `comments`, `likes`,
//! `social`, `notifications`, `fan_outs`, `exports`, `imports`, `live_repairs`, `device_models`,
//! `favorites`, `labels`, `shares`, `views`, `idempotency`, `moderation`, `media`,
//! and `account_jobs`, what exports and imports share; a test holds this
//! list to the folder).
//!
//! Documents are JSON values keyed by id; secondary indexes are tables of
//! composite keys kept in the same transaction as the document, so a crash never leaves one without the other. Every write
//! transaction commits with redb's default durability (fsync before commit
//! returns): what was acknowledged survives `kill -9`.

mod account_jobs;
mod accounts;
mod comments;
mod device_models;
mod exports;
mod fan_outs;
mod favorites;
mod idempotency;
mod imports;
mod labels;
mod likes;
mod live_repairs;
mod media;
mod moderation;
mod notifications;
mod posts;
mod shares;
mod social;
mod views;

use std::sync::Arc;

use async_trait::async_trait;
use redb::{
    ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    WriteTransaction,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::group_commit::{GroupCommit, Job};
use super::other;
use crate::store::{
    BlockDoc, CommentDoc, DeviceModelDoc, DocStore, FilterDoc, FilterKind, FollowDoc, LikeDoc,
    LikeKind, NotificationDoc, PostDoc, SessionDoc, StoreError, StoreResult, UserDoc,
};
use std::any::Any;

const USERS: TableDefinition<u64, &[u8]> = TableDefinition::new("users");
const USERNAMES: TableDefinition<&str, u64> = TableDefinition::new("users_by_username");
/// (folded nickname, uid): people search by a nickname's start. Named
/// with the folding that made its keys (`search_text::NAME_KEY_VERSION`):
/// a table of an older one is deleted at open and this one built anew.
const USERS_BY_NICK_KEY: TableDefinition<(&str, u64), ()> =
    TableDefinition::new("users_by_nick_key_2");
/// The tables of nickname keys folded by older versions.
const USERS_BY_NICK_KEY_BEFORE: [&str; 1] = ["users_by_nick_key"];
const POSTS: TableDefinition<u64, &[u8]> = TableDefinition::new("posts");
/// (author, post) of live posts.
const POSTS_BY_AUTHOR: TableDefinition<(u64, u64), ()> = TableDefinition::new("posts_by_author");
const COMMENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("comments");
/// (post, comment) of live comments.
const COMMENTS_BY_POST: TableDefinition<(u64, u64), ()> = TableDefinition::new("comments_by_post");
/// (parent comment, reply) of live replies.
const REPLIES: TableDefinition<(u64, u64), ()> = TableDefinition::new("replies");
/// (uid, favorite id) → post: a user's favorites, newest last.
const FAVORITES: TableDefinition<(u64, u64), u64> = TableDefinition::new("favorites");
/// (uid, post) → favorite id: one favorite per user and post.
const FAVORITE_OF: TableDefinition<(u64, u64), u64> = TableDefinition::new("favorite_of");
/// (thread's top-level comment, reply) of live replies in threads.
const THREADS: TableDefinition<(u64, u64), ()> = TableDefinition::new("threads");
/// (kind, target, like id) → (uid, createTime): the likes themselves.
const LIKES: TableDefinition<(u8, u64, u64), (u64, i64)> = TableDefinition::new("likes");
/// (kind, target, uid) → like id: one like per user and target.
const LIKE_OF_USER: TableDefinition<(u8, u64, u64), u64> = TableDefinition::new("likes_by_user");
const DEVICE_MODELS: TableDefinition<&str, &[u8]> = TableDefinition::new("device_models");
/// (follower, followee) → (edge id, createdAt).
const FOLLOW_PAIRS: TableDefinition<(u64, u64), (u64, i64)> = TableDefinition::new("follows");
/// (followee, edge id) → follower: followers, newest first by edge id.
const FOLLOWERS: TableDefinition<(u64, u64), u64> = TableDefinition::new("followers");
/// (follower, edge id) → followee.
const FOLLOWING: TableDefinition<(u64, u64), u64> = TableDefinition::new("following");
/// uid → (followers, following): kept in the edges' transactions, so counts
/// cost one read even for accounts with millions of followers.
const FOLLOW_COUNTS: TableDefinition<u64, (u64, u64)> = TableDefinition::new("follow_counts");
/// uid → lastActiveAt: who a new post is pushed to, without reading every
/// follower's account.
const LAST_ACTIVE: TableDefinition<u64, i64> = TableDefinition::new("last_active");
/// (recipient, notification id) → the notification.
const NOTIFICATIONS: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("notifications");
/// (recipient, event key) → notification id: one per event.
const NOTIFIED: TableDefinition<(u64, &str), u64> = TableDefinition::new("notified");
/// (recipient, notification id) of the unread ones (those above the
/// recipient's read mark are unread; this table remembers the rest).
const UNREAD: TableDefinition<(u64, u64), ()> = TableDefinition::new("unread");
/// Notification id → recipient: every notification in id order, so the
/// expired ones are found without a scan.
const NOTIFICATION_IDS: TableDefinition<u64, u64> = TableDefinition::new("notification_ids");
/// Accounts deleted whose traces are still being erased.
const ERASING: TableDefinition<u64, ()> = TableDefinition::new("accounts_being_erased");
/// (actor, notification id) → recipient: what an account caused, for
/// erasing it.
const NOTIFICATIONS_BY_ACTOR: TableDefinition<(u64, u64), u64> =
    TableDefinition::new("notifications_by_actor");
/// (author, comment id) of live comments, for erasing an account.
const COMMENTS_BY_AUTHOR: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("comments_by_author");
/// (liker, like id) → (kind, target): the likes an account gave.
const LIKES_BY_LIKER: TableDefinition<(u64, u64), (u8, u64)> =
    TableDefinition::new("likes_by_liker");
/// Recipient → the id up to which they read their notifications.
const READ_MARKS: TableDefinition<u64, u64> = TableDefinition::new("notification_read_marks");
/// Uids of the accounts with any role (moderators, admins).
const STAFF: TableDefinition<u64, ()> = TableDefinition::new("staff");
/// Session id → the session.
const SESSIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("session_docs");
/// Token hash → session id.
const SESSION_BY_HASH: TableDefinition<&str, u64> = TableDefinition::new("sessions_by_hash");
/// (uid, session id) of every session.
const SESSIONS_BY_USER: TableDefinition<(u64, u64), ()> = TableDefinition::new("sessions_by_user");
/// (expires at, session id), for the purge.
const SESSION_EXPIRY: TableDefinition<(i64, u64), ()> = TableDefinition::new("sessions_by_expiry");
/// Instance id → (holder, lease end). One process owns the file, but the
/// same lease rules as on MongoDB keep the two stores alike.
const INSTANCE_LEASES: TableDefinition<u64, (&str, i64)> = TableDefinition::new("instance_leases");
/// Where earlier versions kept raw tokens; dropped at start-up.
const LEGACY_RAW_TOKENS: TableDefinition<&str, (u64, i64)> = TableDefinition::new("sessions");
/// Idempotency record id → the record (JSON).
const IDEMPOTENCY_KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("idempotency_keys");
/// (expires at, record id), for the purge.
const IDEMPOTENCY_EXPIRY: TableDefinition<(i64, &str), ()> =
    TableDefinition::new("idempotency_keys_by_expiry");
/// (blocker, blocked) → block id.
const BLOCKS: TableDefinition<(u64, u64), u64> = TableDefinition::new("blocks");
/// (blocked, blocker) → block id: the same blocks, found from the other side.
const BLOCKED_BY: TableDefinition<(u64, u64), u64> = TableDefinition::new("blocked_by");
/// (kind, uid, other) → filter id: one filter of a kind per pair.
const FILTERS: TableDefinition<(u8, u64, u64), u64> = TableDefinition::new("filters");
/// (kind, other, uid) → filter id: the same filters, found from whom they are on.
const FILTERS_ON: TableDefinition<(u8, u64, u64), u64> = TableDefinition::new("filters_on");
/// (kind, uid, filter id) → other: a user's filters of a kind, newest last.
const FILTERS_BY_ID: TableDefinition<(u8, u64, u64), u64> = TableDefinition::new("filters_by_id");
/// Label id → the label (`LabelDoc` JSON).
const LABELS: TableDefinition<u64, &[u8]> = TableDefinition::new("labels");
/// (owner, label id) of every label.
const LABELS_BY_OWNER: TableDefinition<(u64, u64), ()> = TableDefinition::new("labels_by_owner");
/// (post, likes peak, comment) of live comments: the hot order.
const COMMENTS_BY_PEAK: TableDefinition<(u64, u64, u64), ()> =
    TableDefinition::new("comments_by_peak");
/// (kind, target) → how many likes it has, kept with the likes.
const LIKE_COUNTS: TableDefinition<(u8, u64), u64> = TableDefinition::new("like_counts");
/// Share id → the share (`ShareDoc` JSON).
const SHARES: TableDefinition<u64, &[u8]> = TableDefinition::new("shares");
/// (uid, post, platform) → share id: one share per user, post and platform.
const SHARE_OF: TableDefinition<(u64, u64, u8), u64> = TableDefinition::new("share_of");
/// (post, share id) of every share.
const SHARES_BY_POST: TableDefinition<(u64, u64), ()> = TableDefinition::new("shares_by_post");
/// (uid, share id) of every share, for erasing an account.
const SHARES_BY_USER: TableDefinition<(u64, u64), ()> = TableDefinition::new("shares_by_user");
/// View id → the view (`ViewDoc` JSON), in id order for the retention sweep.
const VIEWS: TableDefinition<u64, &[u8]> = TableDefinition::new("views");
/// (uid, post, day) → view id: one view per reader, post and day.
const VIEW_OF: TableDefinition<(u64, u64, u64), u64> = TableDefinition::new("view_of");
/// (uid, view id) of every view: a reader's history.
const VIEWS_BY_USER: TableDefinition<(u64, u64), ()> = TableDefinition::new("views_by_user");
/// Post id → its views.
const VIEW_COUNTS: TableDefinition<u64, u64> = TableDefinition::new("view_counts");
/// Post id → its unfinished fan-out (`FanOutDoc` JSON).
const FAN_OUTS: TableDefinition<u64, &[u8]> = TableDefinition::new("fan_outs");
/// Record id → stale live keys of one owner (`LiveRepairDoc` JSON): only used when
/// the live state is in a Redis that other processes share.
const LIVE_REPAIRS: TableDefinition<&str, &[u8]> = TableDefinition::new("live_repairs");

/// Media id → the picture's record (`MediaDoc` JSON).
const MEDIA: TableDefinition<u64, &[u8]> = TableDefinition::new("media");
/// (state, since, media id) of every picture: what the sweeps take, oldest
/// first.
const MEDIA_BY_STATE: TableDefinition<(u8, i64, u64), ()> = TableDefinition::new("media_by_state");
/// (owner, media id) of every picture: an account's media.
const MEDIA_BY_OWNER: TableDefinition<(u64, u64), ()> = TableDefinition::new("media_by_owner");

fn filter_code(k: FilterKind) -> u8 {
    match k {
        FilterKind::Mute => 1,
        FilterKind::Hide => 2,
    }
}

fn kind_code(k: LikeKind) -> u8 {
    match k {
        LikeKind::Post => 1,
        LikeKind::Comment => 2,
    }
}

fn id(v: i64) -> u64 {
    v.max(0) as u64
}

fn encode<T: Serialize>(v: &T) -> StoreResult<Vec<u8>> {
    serde_json::to_vec(v).map_err(other)
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> StoreResult<T> {
    serde_json::from_slice(bytes).map_err(other)
}

pub struct EmbeddedDocs {
    /// `None` once closed. Reads take their own handle, so closing waits
    /// for the last one in flight.
    db: std::sync::RwLock<Option<Arc<redb::Database>>>,
    writer: GroupCommit,
    /// How many ids a post's arrays show (`MOMENTS_POST_ID_ARRAY_CAP`).
    array_cap: usize,
}

impl EmbeddedDocs {
    pub fn new(db: Arc<redb::Database>, array_cap: usize) -> Self {
        Self {
            writer: GroupCommit::start(db.clone()),
            db: std::sync::RwLock::new(Some(db)),
            array_cap,
        }
    }

    /// Runs `f` in one write transaction on a blocking thread and commits:
    /// all or nothing, durable when this returns.
    async fn write<T: Send + 'static>(
        &self,
        f: impl Fn(&WriteTransaction) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let job: Job = Box::new(move |txn| f(txn).map(|t| Box::new(t) as Box<dyn Any + Send>));
        let out = self.writer.submit(job).await?;
        out.downcast::<T>()
            .map(|b| *b)
            .map_err(|_| other("a write answered with the wrong type"))
    }

    /// Runs `f` in a read transaction on the calling thread. Every read is
    /// bounded (a page, a capped list) and served from redb's cache or the
    /// page cache, so it costs microseconds: handing it to the blocking
    /// pool cost more than the read, in two futex wake-ups and two thread
    /// switches (measured: a third of the mix's CPU was the kernel
    /// switching threads, BENCHMARKS.md).
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&ReadTransaction) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let db = self
            .db
            .read()
            .map_err(|_| other("the database handle is poisoned"))?
            .clone()
            .ok_or_else(|| other("the store is closed"))?;
        let txn = db.begin_read().map_err(other)?;
        f(&txn)
    }
}

fn get_doc<T: DeserializeOwned>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    key: u64,
) -> StoreResult<Option<T>> {
    match table.get(key).map_err(other)? {
        Some(v) => decode(v.value()).map(Some),
        None => Ok(None),
    }
}

fn docs_by_ids<T: DeserializeOwned>(
    txn: &ReadTransaction,
    def: TableDefinition<u64, &'static [u8]>,
    ids: &[i64],
) -> StoreResult<Vec<T>> {
    let table = txn.open_table(def).map_err(other)?;
    let mut out = Vec::with_capacity(ids.len());
    for i in ids {
        if let Some(d) = get_doc(&table, id(*i))? {
            out.push(d);
        }
    }
    Ok(out)
}

/// Second halves of `(first, second)` keys below `before`, newest first.
fn newest_below(
    table: &impl ReadableTable<(u64, u64), ()>,
    first: u64,
    before: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<u64>> {
    let upper = before.map(id).unwrap_or(u64::MAX);
    let range = table.range((first, 0)..(first, upper)).map_err(other)?;
    let mut out = Vec::new();
    for entry in range.rev() {
        if out.len() >= limit {
            break;
        }
        out.push(entry.map_err(other)?.0.value().1);
    }
    Ok(out)
}

/// Second halves of `(first, second)` keys above `after`, oldest first.
fn oldest_after(
    table: &impl ReadableTable<(u64, u64), ()>,
    first: u64,
    after: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<u64>> {
    let low = after.map_or(0, |a| id(a).saturating_add(1));
    let mut out = Vec::new();
    for entry in table
        .range((first, low)..=(first, u64::MAX))
        .map_err(other)?
        .take(limit)
    {
        out.push(entry.map_err(other)?.0.value().1);
    }
    Ok(out)
}

fn all_under(table: &impl ReadableTable<(u64, u64), ()>, first: u64) -> StoreResult<Vec<u64>> {
    let mut out = Vec::new();
    for entry in table.range((first, 0)..=(first, u64::MAX)).map_err(other)? {
        out.push(entry.map_err(other)?.0.value().1);
    }
    Ok(out)
}

/// Adds `followers` and `following` to two users' counts (-1 or +1).
fn adjust_counts(
    txn: &WriteTransaction,
    follower: u64,
    followee: u64,
    delta: i64,
) -> StoreResult<()> {
    let mut counts = txn.open_table(FOLLOW_COUNTS).map_err(other)?;
    let step = |n: u64| n.saturating_add_signed(delta);
    let (a_followers, a_following) = counts
        .get(follower)
        .map_err(other)?
        .map(|v| v.value())
        .unwrap_or((0, 0));
    counts
        .insert(follower, (a_followers, step(a_following)))
        .map_err(other)?;
    let (b_followers, b_following) = counts
        .get(followee)
        .map_err(other)?
        .map(|v| v.value())
        .unwrap_or((0, 0));
    counts
        .insert(followee, (step(b_followers), b_following))
        .map_err(other)?;
    Ok(())
}

/// Removes these notifications ((recipient, id) pairs) with every entry
/// that points at them; how many there were.
fn remove_notifications(txn: &WriteTransaction, which: &[(u64, u64)]) -> StoreResult<u64> {
    let mut table = txn.open_table(NOTIFICATIONS).map_err(other)?;
    let mut by_id = txn.open_table(NOTIFICATION_IDS).map_err(other)?;
    let mut by_actor = txn.open_table(NOTIFICATIONS_BY_ACTOR).map_err(other)?;
    let mut notified = txn.open_table(NOTIFIED).map_err(other)?;
    let mut unread = txn.open_table(UNREAD).map_err(other)?;
    let mut removed = 0;
    for (uid, nid) in which {
        by_id.remove(*nid).map_err(other)?;
        unread.remove((*uid, *nid)).map_err(other)?;
        let Some(doc) = table.remove((*uid, *nid)).map_err(other)? else {
            continue;
        };
        let n: NotificationDoc = decode(doc.value())?;
        drop(doc);
        removed += 1;
        by_actor.remove((id(n.actor), *nid)).map_err(other)?;
        // The event may be notified again once its notice is gone, as on
        // MongoDB, where the TTL index takes the whole document.
        let same = notified
            .get((*uid, n.dedupe.as_str()))
            .map_err(other)?
            .is_some_and(|v| v.value() == *nid);
        if same {
            notified.remove((*uid, n.dedupe.as_str())).map_err(other)?;
        }
    }
    Ok(removed)
}

/// Up to which id `uid` has read their notifications (0: none).
fn read_mark(txn: &ReadTransaction, uid: i64) -> StoreResult<u64> {
    Ok(txn
        .open_table(READ_MARKS)
        .map_err(other)?
        .get(id(uid))
        .map_err(other)?
        .map(|v| v.value())
        .unwrap_or(0))
}

/// Deletes these sessions with their index entries (only `owner`'s, when
/// given); how many there were.
fn delete_sessions_in(txn: &WriteTransaction, owner: Option<i64>, ids: &[i64]) -> StoreResult<u64> {
    let mut sessions = txn.open_table(SESSIONS).map_err(other)?;
    let mut by_hash = txn.open_table(SESSION_BY_HASH).map_err(other)?;
    let mut by_user = txn.open_table(SESSIONS_BY_USER).map_err(other)?;
    let mut expiry = txn.open_table(SESSION_EXPIRY).map_err(other)?;
    let mut deleted = 0;
    for sid in ids {
        let Some(s) = get_doc::<SessionDoc>(&sessions, id(*sid))? else {
            continue;
        };
        if owner.is_some_and(|o| o != s.uid) {
            continue;
        }
        sessions.remove(id(s.id)).map_err(other)?;
        by_hash.remove(s.token_hash.as_str()).map_err(other)?;
        by_user.remove((id(s.uid), id(s.id))).map_err(other)?;
        expiry.remove((s.expires_at, id(s.id))).map_err(other)?;
        deleted += 1;
    }
    Ok(deleted)
}

fn edge_page(
    txn: &ReadTransaction,
    def: TableDefinition<(u64, u64), u64>,
    uid: i64,
    before: Option<i64>,
    limit: usize,
    inbound: bool,
) -> StoreResult<Vec<FollowDoc>> {
    let table = txn.open_table(def).map_err(other)?;
    let upper = before.map(id).unwrap_or(u64::MAX);
    let mut out = Vec::new();
    for entry in table
        .range((id(uid), 0)..(id(uid), upper))
        .map_err(other)?
        .rev()
        .take(limit)
    {
        let (key, other_uid) = entry.map_err(other)?;
        let edge = key.value().1 as i64;
        let other_uid = other_uid.value() as i64;
        let (follower, followee) = if inbound {
            (other_uid, uid)
        } else {
            (uid, other_uid)
        };
        out.push(FollowDoc {
            id: edge,
            follower,
            followee,
            created_at: crate::ids::timestamp_of(edge),
        });
    }
    Ok(out)
}

/// A post with its id arrays. They are not stored in the post's value but
/// read from the comment and like indexes, newest first, up to `cap`: the
/// same arrays MongoDB keeps, without rewriting a viral post's value (10,000
/// ids) on every comment and like.
fn with_arrays(txn: &ReadTransaction, mut post: PostDoc, cap: usize) -> StoreResult<PostDoc> {
    let p = id(post.id);
    let comments = txn.open_table(COMMENTS_BY_POST).map_err(other)?;
    post.comments_postid = Vec::new();
    for entry in comments
        .range((p, 0)..=(p, u64::MAX))
        .map_err(other)?
        .rev()
        .take(cap)
    {
        post.comments_postid
            .push(entry.map_err(other)?.0.value().1 as i64);
    }
    let likes = txn.open_table(LIKES).map_err(other)?;
    let k = kind_code(LikeKind::Post);
    post.likes_postid = Vec::new();
    for entry in likes
        .range((k, p, 0)..=(k, p, u64::MAX))
        .map_err(other)?
        .rev()
        .take(cap)
    {
        post.likes_postid
            .push(entry.map_err(other)?.0.value().2 as i64);
    }
    Ok(post)
}

#[async_trait]
impl DocStore for EmbeddedDocs {
    async fn ping(&self) -> StoreResult<()> {
        self.read(|_| Ok(())).await
    }

    async fn apply_schemas(&self) -> StoreResult<()> {
        self.write(|txn| {
            txn.open_table(USERS).map_err(other)?;
            txn.open_table(USERNAMES).map_err(other)?;
            txn.open_table(POSTS).map_err(other)?;
            txn.open_table(POSTS_BY_AUTHOR).map_err(other)?;
            txn.open_table(COMMENTS).map_err(other)?;
            txn.open_table(COMMENTS_BY_POST).map_err(other)?;
            txn.open_table(REPLIES).map_err(other)?;
            txn.open_table(THREADS).map_err(other)?;
            txn.open_table(FAVORITES).map_err(other)?;
            txn.open_table(FAVORITE_OF).map_err(other)?;
            txn.open_table(LIKES).map_err(other)?;
            txn.open_table(LIKE_OF_USER).map_err(other)?;
            txn.open_table(DEVICE_MODELS).map_err(other)?;
            txn.open_table(FOLLOW_PAIRS).map_err(other)?;
            txn.open_table(FOLLOWERS).map_err(other)?;
            txn.open_table(FOLLOWING).map_err(other)?;
            txn.open_table(FOLLOW_COUNTS).map_err(other)?;
            txn.open_table(BLOCKS).map_err(other)?;
            txn.open_table(BLOCKED_BY).map_err(other)?;
            txn.open_table(FILTERS).map_err(other)?;
            txn.open_table(FILTERS_ON).map_err(other)?;
            txn.open_table(FILTERS_BY_ID).map_err(other)?;
            moderation::create_tables(txn)?;
            txn.open_table(STAFF).map_err(other)?;
            txn.open_table(LABELS).map_err(other)?;
            txn.open_table(LABELS_BY_OWNER).map_err(other)?;
            txn.open_table(SHARES).map_err(other)?;
            txn.open_table(SHARE_OF).map_err(other)?;
            txn.open_table(SHARES_BY_POST).map_err(other)?;
            txn.open_table(SHARES_BY_USER).map_err(other)?;
            txn.open_table(VIEWS).map_err(other)?;
            txn.open_table(VIEW_OF).map_err(other)?;
            txn.open_table(VIEWS_BY_USER).map_err(other)?;
            txn.open_table(VIEW_COUNTS).map_err(other)?;
            txn.open_table(LAST_ACTIVE).map_err(other)?;
            txn.open_table(NOTIFICATIONS).map_err(other)?;
            txn.open_table(NOTIFIED).map_err(other)?;
            txn.open_table(UNREAD).map_err(other)?;
            txn.open_table(SESSIONS).map_err(other)?;
            txn.open_table(SESSION_BY_HASH).map_err(other)?;
            txn.open_table(SESSIONS_BY_USER).map_err(other)?;
            txn.open_table(SESSION_EXPIRY).map_err(other)?;
            txn.open_table(INSTANCE_LEASES).map_err(other)?;
            txn.open_table(IDEMPOTENCY_KEYS).map_err(other)?;
            txn.open_table(IDEMPOTENCY_EXPIRY).map_err(other)?;
            txn.open_table(READ_MARKS).map_err(other)?;
            txn.open_table(ERASING).map_err(other)?;
            txn.open_table(FAN_OUTS).map_err(other)?;
            exports::open_tables(txn)?;
            imports::open_tables(txn)?;
            txn.open_table(LIVE_REPAIRS).map_err(other)?;
            txn.open_table(MEDIA).map_err(other)?;
            txn.open_table(MEDIA_BY_STATE).map_err(other)?;
            txn.open_table(MEDIA_BY_OWNER).map_err(other)?;
            // Notifications from before the id index: indexed once.
            let mut by_id = txn.open_table(NOTIFICATION_IDS).map_err(other)?;
            if by_id.is_empty().map_err(other)? {
                let all = txn.open_table(NOTIFICATIONS).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let (uid, nid) = entry.map_err(other)?.0.value();
                    by_id.insert(nid, uid).map_err(other)?;
                }
            }
            // Indexes newer than the data they cover: built once from it.
            for older in USERS_BY_NICK_KEY_BEFORE {
                let table: TableDefinition<(&str, u64), ()> = TableDefinition::new(older);
                txn.delete_table(table).map_err(other)?;
            }
            let mut by_nick = txn.open_table(USERS_BY_NICK_KEY).map_err(other)?;
            if by_nick.is_empty().map_err(other)? {
                let all = txn.open_table(USERS).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let u: UserDoc = decode(entry.map_err(other)?.1.value())?;
                    if !u.is_erased() {
                        let key = crate::domain::search_text::name_key(&u.nick_name);
                        by_nick
                            .insert((key.as_str(), id(u.uid)), ())
                            .map_err(other)?;
                    }
                }
            }
            let mut by_actor = txn.open_table(NOTIFICATIONS_BY_ACTOR).map_err(other)?;
            if by_actor.is_empty().map_err(other)? {
                let all = txn.open_table(NOTIFICATIONS).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let (key, value) = entry.map_err(other)?;
                    let (uid, nid) = key.value();
                    let n: NotificationDoc = decode(value.value())?;
                    by_actor.insert((id(n.actor), nid), uid).map_err(other)?;
                }
            }
            let mut by_author = txn.open_table(COMMENTS_BY_AUTHOR).map_err(other)?;
            if by_author.is_empty().map_err(other)? {
                let all = txn.open_table(COMMENTS).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let c: CommentDoc = decode(entry.map_err(other)?.1.value())?;
                    if !c.deleted {
                        by_author
                            .insert((id(c.author_uid), id(c.id)), ())
                            .map_err(other)?;
                    }
                }
            }
            let mut by_peak = txn.open_table(COMMENTS_BY_PEAK).map_err(other)?;
            if by_peak.is_empty().map_err(other)? {
                let all = txn.open_table(COMMENTS).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let c: CommentDoc = decode(entry.map_err(other)?.1.value())?;
                    if !c.deleted {
                        by_peak
                            .insert((id(c.post_id), id(c.likes_peak), id(c.id)), ())
                            .map_err(other)?;
                    }
                }
            }
            let mut counts = txn.open_table(LIKE_COUNTS).map_err(other)?;
            if counts.is_empty().map_err(other)? {
                let all = txn.open_table(LIKES).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let (kind, target, _) = entry.map_err(other)?.0.value();
                    let n = counts
                        .get((kind, target))
                        .map_err(other)?
                        .map_or(0, |v| v.value());
                    counts.insert((kind, target), n + 1).map_err(other)?;
                }
            }
            let mut by_liker = txn.open_table(LIKES_BY_LIKER).map_err(other)?;
            if by_liker.is_empty().map_err(other)? {
                let all = txn.open_table(LIKES).map_err(other)?;
                for entry in all.iter().map_err(other)? {
                    let (key, value) = entry.map_err(other)?;
                    let (kind, target, like) = key.value();
                    by_liker
                        .insert((value.value().0, like), (kind, target))
                        .map_err(other)?;
                }
            }
            // Raw tokens must not outlive the upgrade that stopped storing them.
            txn.delete_table(LEGACY_RAW_TOKENS).map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn post_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let table = txn.open_table(POSTS).map_err(other)?;
            let start = after.map(|a| id(a) + 1).unwrap_or(0);
            let mut out = Vec::new();
            for entry in table.range(start..).map_err(other)? {
                if out.len() >= limit {
                    break;
                }
                let (_, v) = entry.map_err(other)?;
                let post: PostDoc = decode(v.value())?;
                if !post.deleted {
                    out.push(post.id);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn user_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let table = txn.open_table(USERS).map_err(other)?;
            let start = after.map(|a| id(a) + 1).unwrap_or(0);
            let mut out = Vec::new();
            for entry in table.range(start..).map_err(other)?.take(limit) {
                out.push(entry.map_err(other)?.0.value() as i64);
            }
            Ok(out)
        })
        .await
    }

    async fn totals(&self) -> StoreResult<(u64, u64)> {
        self.read(|txn| {
            let posts = txn
                .open_table(POSTS_BY_AUTHOR)
                .map_err(other)?
                .len()
                .map_err(other)?;
            let users = txn.open_table(USERS).map_err(other)?.len().map_err(other)?;
            Ok((posts, users))
        })
        .await
    }

    async fn lease_instance_id(
        &self,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<u16>> {
        let holder = holder.to_string();
        self.write(move |txn| {
            let mut leases = txn.open_table(INSTANCE_LEASES).map_err(other)?;
            for id in 0..=crate::ids::MAX_INSTANCE {
                let free = match leases.get(u64::from(id)).map_err(other)? {
                    None => true,
                    Some(v) => v.value().1 < now,
                };
                if free {
                    leases
                        .insert(u64::from(id), (holder.as_str(), until))
                        .map_err(other)?;
                    return Ok(Some(id));
                }
            }
            Ok(None)
        })
        .await
    }

    async fn renew_instance_id(&self, id: u16, holder: &str, until: i64) -> StoreResult<bool> {
        let holder = holder.to_string();
        self.write(move |txn| {
            let mut leases = txn.open_table(INSTANCE_LEASES).map_err(other)?;
            let mine = leases
                .get(u64::from(id))
                .map_err(other)?
                .is_some_and(|v| v.value().0 == holder);
            if mine {
                leases
                    .insert(u64::from(id), (holder.as_str(), until))
                    .map_err(other)?;
            }
            Ok(mine)
        })
        .await
    }

    async fn close(&self) -> StoreResult<()> {
        self.writer.close().await;
        let taken = self
            .db
            .write()
            .map_err(|_| other("the database handle is poisoned"))?
            .take();
        let Some(db) = taken else {
            return Ok(());
        };
        // Closing persists the allocator state, so the next start opens the
        // file without a repair pass; a read still in flight holds it a
        // moment longer.
        tokio::task::spawn_blocking(move || {
            let mut db = db;
            for _ in 0..300 {
                match Arc::try_unwrap(db) {
                    Ok(only) => return only.close().map_err(other),
                    Err(shared) => db = shared,
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            tracing::warn!("a read still holds the embedded store; it closes when that read ends");
            Ok(())
        })
        .await
        .map_err(other)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ReplyRef;
    use crate::store::{AccountDocs, CommentDocs, LikeDocs, PostDocs};
    use redb::TableHandle;

    fn temp_store(cap: usize) -> (EmbeddedDocs, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("moments-docs-{}", crate::ids::next_id()));
        let db = super::super::open(&dir, 1 << 20).unwrap();
        (EmbeddedDocs::new(db, cap), dir)
    }

    fn post(id: i64) -> PostDoc {
        PostDoc::text(id, 7, "x", 0)
    }

    fn comment(id: i64, post_id: i64, reply_to: Option<i64>) -> CommentDoc {
        CommentDoc {
            reply_to: reply_to.map(|c| ReplyRef {
                comment_id: c,
                uid: 8,
            }),
            thread_id: reply_to,
            ..CommentDoc::text(id, post_id, 8, "c", 0)
        }
    }

    #[tokio::test]
    async fn id_arrays_follow_the_comments_and_likes_newest_first_capped() {
        let (docs, dir) = temp_store(2);
        docs.apply_schemas().await.unwrap();
        let p = 1_000_000_000_000_100;
        docs.insert_post(&post(p)).await.unwrap();
        for c in 1..=3 {
            docs.insert_comment(&comment(p + c, p, None), 2)
                .await
                .unwrap();
        }
        for (i, uid) in [31, 32].iter().enumerate() {
            let like = LikeDoc {
                id: p + 10 + i as i64,
                kind: LikeKind::Post,
                target_id: p,
                uid: *uid,
                create_time: 0,
            };
            assert!(docs.insert_like(&like, 2).await.unwrap());
            assert!(
                !docs.insert_like(&like, 2).await.unwrap(),
                "liking twice is one like"
            );
        }
        docs.delete_comment(&comment(p + 3, p, None)).await.unwrap();
        let got = docs.posts_by_ids(&[p]).await.unwrap().pop().unwrap();
        assert_eq!(got.comments_postid, vec![p + 2, p + 1]);
        assert_eq!(got.likes_postid, vec![p + 11, p + 10]);
        assert_eq!(
            docs.delete_like(LikeKind::Post, p, 31)
                .await
                .unwrap()
                .map(|l| l.id),
            Some(p + 10)
        );
        let got = docs.posts_by_ids(&[p]).await.unwrap().pop().unwrap();
        assert_eq!(got.likes_postid, vec![p + 11]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_write_in_a_shared_commit_leaves_the_others_alone() {
        let (docs, dir) = temp_store(10);
        docs.apply_schemas().await.unwrap();
        let docs = std::sync::Arc::new(docs);
        // 60 concurrent registrations, 20 of them for a name already taken:
        // they share commits, and the failures must not undo the rest.
        let writes = (0..60).map(|i| {
            let docs = docs.clone();
            async move {
                let name = if i % 3 == 0 {
                    "taken".to_string()
                } else {
                    format!("user{i}")
                };
                let user = UserDoc::new(1_000_000_000_001_000 + i, name, String::new(), 0);
                docs.insert_user(&user).await
            }
        });
        let results = futures_util::future::join_all(writes).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let dup = results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::Duplicate(_))))
            .count();
        assert_eq!(
            (ok, dup),
            (41, 19),
            "40 distinct names and the first of the 20 'taken'"
        );
        let ids: Vec<i64> = (0..60).map(|i| 1_000_000_000_001_000 + i).collect();
        assert_eq!(docs.users_by_ids(&ids).await.unwrap().len(), 41);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_commits_the_queued_writes_and_leaves_nothing_to_repair() {
        use futures_util::FutureExt;
        let (docs, dir) = temp_store(10);
        docs.apply_schemas().await.unwrap();
        let p = 1_000_000_000_000_300;
        let posts: Vec<PostDoc> = (0..40).map(|i| post(p + i)).collect();
        // Each write polled once is submitted, and waits for its commit.
        let mut writes: Vec<_> = posts.iter().map(|d| docs.insert_post(d).boxed()).collect();
        let mut cx = std::task::Context::from_waker(futures_util::task::noop_waker_ref());
        for w in &mut writes {
            assert!(w.poll_unpin(&mut cx).is_pending());
        }
        docs.close().await.unwrap();
        for w in writes {
            w.await.unwrap();
        }
        assert!(
            docs.insert_post(&post(p + 99)).await.is_err(),
            "a write after closing fails"
        );
        assert!(docs.posts_by_ids(&[p]).await.is_err(), "and so does a read");
        // As at the end of a process: nothing dropped, the file as close left it.
        std::mem::forget(docs);

        let repaired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = repaired.clone();
        let db = redb::Builder::new()
            .set_repair_callback(move |_| flag.store(true, std::sync::atomic::Ordering::SeqCst))
            .create(dir.join(super::super::FILE_NAME))
            .unwrap();
        assert!(
            !repaired.load(std::sync::atomic::Ordering::SeqCst),
            "closed cleanly: nothing to repair"
        );
        let docs = EmbeddedDocs::new(Arc::new(db), 10);
        let ids: Vec<i64> = posts.iter().map(|d| d.id).collect();
        assert_eq!(docs.posts_by_ids(&ids).await.unwrap().len(), 40);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn usernames_are_unique_and_pages_are_keyset() {
        let (docs, dir) = temp_store(10);
        docs.apply_schemas().await.unwrap();
        let p = 1_000_000_000_000_200;
        for i in 0..5 {
            docs.insert_post(&post(p + i)).await.unwrap();
        }
        assert!(docs.delete_post(p + 4).await.unwrap());
        assert!(!docs.delete_post(p + 4).await.unwrap());
        assert_eq!(
            docs.post_ids_by_author(7, None, 2).await.unwrap(),
            vec![p + 3, p + 2]
        );
        assert_eq!(
            docs.post_ids_by_author(7, Some(p + 2), 10).await.unwrap(),
            vec![p + 1, p]
        );
        assert_eq!(
            docs.post_ids_after(Some(p + 1), 10).await.unwrap(),
            vec![p + 2, p + 3]
        );
        assert!(matches!(
            docs.insert_post(&post(p)).await,
            Err(StoreError::IdTaken)
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn nickname_keys_of_an_older_folding_are_made_again_at_open() {
        use crate::domain::search_text::{name_key, NAME_KEY_VERSION};
        use crate::store::NameKey;
        assert_eq!(
            USERS_BY_NICK_KEY.name(),
            format!("users_by_nick_key_{NAME_KEY_VERSION}"),
            "a new folding needs a table of its own"
        );
        let (docs, dir) = temp_store(10);
        docs.apply_schemas().await.unwrap();
        let uid = 1_000_000_000_000_300;
        let mut user = UserDoc::new(uid, "andy", String::new(), 0);
        user.nick_name = "劉德華".into();
        docs.insert_user(&user).await.unwrap();
        // As a store of the version before: the name keyed as written, in
        // the older table, and no table of this version.
        docs.write(move |txn| {
            txn.delete_table(USERS_BY_NICK_KEY).map_err(other)?;
            let older: TableDefinition<(&str, u64), ()> =
                TableDefinition::new(USERS_BY_NICK_KEY_BEFORE[0]);
            txn.open_table(older)
                .map_err(other)?
                .insert(("劉德華", id(uid)), ())
                .map_err(other)?;
            Ok(())
        })
        .await
        .unwrap();
        docs.apply_schemas().await.unwrap();
        for prefix in ["刘", "劉德", "刘德华"] {
            let found = docs
                .users_by_name_prefix(NameKey::NickName, &name_key(prefix), None, 10)
                .await
                .unwrap();
            assert_eq!(
                found.iter().map(|u| u.uid).collect::<Vec<_>>(),
                vec![uid],
                "{prefix}"
            );
        }
        let tables = docs
            .read(|txn| {
                Ok(txn
                    .list_tables()
                    .map_err(other)?
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>())
            })
            .await
            .unwrap();
        assert!(
            !tables.iter().any(|t| t == USERS_BY_NICK_KEY_BEFORE[0]),
            "{tables:?}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_header_names_every_file_here() {
        crate::store::assert_header_names_every_file(include_str!("mod.rs"), "embedded/documents");
    }
}
