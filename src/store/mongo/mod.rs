//! The MongoDB adapter of `DocStore`, on the official driver.
//!
//! Queries stay inside the subset that both MongoDB and the test stand-in
//! agree on (TESTING.md): writes address documents by `_id` or by equality,
//! sorts are on `_id` (16-digit ids, so text order is number order), joins
//! happen in the service. That is also the shard-friendly subset.

mod schemas;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::error::{Error as MongoError, ErrorKind, WriteFailure};
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection, Database};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::{
    BlockDoc, CommentDoc, DeviceModelDoc, DocStore, FollowDoc, LikeDoc, LikeKind, NotificationDoc,
    PostDoc, SessionDoc, StoreError, StoreResult, UserDoc,
};

pub struct MongoDocs {
    db: Database,
}

impl MongoDocs {
    pub async fn connect(uri: &str, db_name: &str) -> StoreResult<Self> {
        let mut opts = ClientOptions::parse(uri).await.map_err(classify)?;
        // Fail a request in seconds, not the driver's default 30 s, when the
        // server is gone: the client gets a 503 it can retry.
        opts.server_selection_timeout = Some(Duration::from_secs(5));
        opts.connect_timeout = Some(Duration::from_secs(5));
        opts.app_name = Some("moments".into());
        let client = Client::with_options(opts).map_err(classify)?;
        Ok(Self {
            db: client.database(db_name),
        })
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Deletes the one document matching `filter`: found first, then deleted
    /// by `_id` (writes address documents by `_id`, TESTING.md). True when
    /// this call deleted it.
    async fn delete_matching(&self, collection: &str, filter: Document) -> StoreResult<bool> {
        let coll = self.db.collection::<IdOnly>(collection);
        let Some(found) = coll
            .find_one(filter)
            .projection(doc! { "_id": 1 })
            .await
            .map_err(classify)?
        else {
            return Ok(false);
        };
        let r = coll
            .delete_one(doc! { "_id": found.id })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count == 1)
    }

    /// Deletes up to `limit` documents matching `filter`: their ids first,
    /// then the delete by `_id` (TESTING.md). For the expiry sweeps, which
    /// keep the promise where MongoDB's TTL monitor lags. How many went.
    async fn delete_some(
        &self,
        collection: &str,
        filter: Document,
        limit: usize,
    ) -> StoreResult<u64> {
        let cursor = self
            .db
            .collection::<IdOnly>(collection)
            .find(filter)
            .projection(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        let ids: Vec<i64> = collect(cursor).await?.into_iter().map(|d| d.id).collect();
        if ids.is_empty() {
            return Ok(0);
        }
        let r = self
            .db
            .collection::<Document>(collection)
            .delete_many(doc! { "_id": { "$in": ids } })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count)
    }

    /// `_id`s above `after` matching `filter`, ascending: a scan in pages.
    async fn ids_after(
        &self,
        collection: &str,
        mut filter: Document,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        if let Some(a) = after {
            filter.insert("_id", doc! { "$gt": a });
        }
        let cursor = self
            .db
            .collection::<IdOnly>(collection)
            .find(filter)
            .projection(doc! { "_id": 1 })
            .sort(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(cursor).await?.into_iter().map(|d| d.id).collect())
    }

    fn users(&self) -> Collection<UserDoc> {
        self.db.collection("users")
    }
    fn posts(&self) -> Collection<PostDoc> {
        self.db.collection("posts")
    }
    fn comments(&self) -> Collection<CommentDoc> {
        self.db.collection("comments")
    }
    fn likes(&self) -> Collection<LikeDoc> {
        self.db.collection("likes")
    }
    fn device_models_coll(&self) -> Collection<DeviceModelDoc> {
        self.db.collection("device_models")
    }
    fn notifications(&self) -> Collection<NotificationDoc> {
        self.db.collection("notifications")
    }
    fn follows(&self) -> Collection<FollowDoc> {
        self.db.collection("follows")
    }
    fn blocks(&self) -> Collection<BlockDoc> {
        self.db.collection("blocks")
    }
    fn sessions(&self) -> Collection<SessionDoc> {
        self.db.collection("sessions")
    }

    async fn edges_page(
        &self,
        filter: Document,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        newest_page(self.follows(), filter, before, limit).await
    }

    /// Up to which id a recipient has read their notifications (0: none).
    async fn read_mark(&self, uid: i64) -> StoreResult<i64> {
        #[derive(Deserialize)]
        struct Mark {
            #[serde(rename = "notificationsReadUpTo", default)]
            up_to: Option<i64>,
        }
        let mark = self
            .db
            .collection::<Mark>("users")
            .find_one(doc! { "_id": uid })
            .projection(doc! { "notificationsReadUpTo": 1 })
            .await
            .map_err(classify)?;
        Ok(mark.and_then(|m| m.up_to).unwrap_or(0))
    }

    /// Moves both users' follow counters after an edge was written. Only
    /// counters that exist move: one an account does not have yet is
    /// counted from the edges on its first read (`backfill_follow_counts`).
    /// Like the id arrays, a failure here is logged, not returned: the edge
    /// is the record.
    async fn count_follow(&self, follower: i64, followee: i64, delta: i32) {
        let users = self.db.collection::<Document>("users");
        let (a, b) = tokio::join!(
            users.update_one(
                doc! { "_id": follower, "followingCount": { "$exists": true } },
                doc! { "$inc": { "followingCount": delta } },
            ),
            users.update_one(
                doc! { "_id": followee, "followersCount": { "$exists": true } },
                doc! { "$inc": { "followersCount": delta } },
            ),
        );
        for r in [a, b] {
            if let Err(e) = r {
                tracing::warn!(follower, followee, error = %e, "could not move a follow counter");
            }
        }
    }

    /// Counts an account's edges once and keeps the counts on its document,
    /// for accounts made before the counters were.
    async fn backfill_follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)> {
        let (followers, following) = tokio::try_join!(
            async {
                self.follows()
                    .count_documents(doc! { "followee": uid })
                    .await
            },
            async {
                self.follows()
                    .count_documents(doc! { "follower": uid })
                    .await
            },
        )
        .map_err(classify)?;
        self.db
            .collection::<Document>("users")
            .update_one(
                doc! { "_id": uid },
                doc! { "$set": { "followersCount": followers as i64, "followingCount": following as i64 } },
            )
            .await
            .map_err(classify)?;
        Ok((followers, following))
    }
}

/// Server error codes that mean "not now, try again": the server is
/// stepping down or starting up, the node is no primary, the network failed
/// inside the cluster, or the write lost a race it can retry (MongoDB's
/// error_codes.yml).
const TRANSIENT_CODES: [i32; 16] = [
    6,     // HostUnreachable
    7,     // HostNotFound
    24,    // LockTimeout
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    112,   // WriteConflict
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
    64,    // WriteConcernFailed
    50,    // MaxTimeMSExpired
];

/// Sorts the driver's errors into what the service can act on: anything a
/// retry a moment later may cure is `Unavailable` (503 with Retry-After).
pub(crate) fn classify(e: MongoError) -> StoreError {
    let transient_code = |code: i32| TRANSIENT_CODES.contains(&code);
    let transient = match &*e.kind {
        ErrorKind::ServerSelection { .. }
        | ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::DnsResolve { .. } => true,
        ErrorKind::Command(c) => transient_code(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => transient_code(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => transient_code(w.code),
        _ => false,
    };
    if transient
        || e.contains_label("RetryableWriteError")
        || e.contains_label("TransientTransactionError")
    {
        StoreError::Unavailable(e.into())
    } else {
        StoreError::Other(e.into())
    }
}

/// Which unique key a duplicate-key error (11000) is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicateOf {
    /// `_id`: a generated id that is taken, which must never be read as
    /// "this exists already".
    Id,
    /// Another unique index: the thing exists already.
    Key,
}

/// Reads which index a duplicate-key error names: MongoDB gives a
/// `keyPattern` and says `index: _id_`; the wire stand-in says
/// `UNIQUE constraint failed: coll._id`.
pub fn duplicate_of(e: &MongoError) -> Option<DuplicateOf> {
    let (message, details) = match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == 11000 => {
            (w.message.as_str(), w.details.as_ref())
        }
        ErrorKind::Command(c) if c.code == 11000 => (c.message.as_str(), None),
        ErrorKind::InsertMany(m) => {
            let w = m.write_errors.as_ref()?.iter().find(|w| w.code == 11000)?;
            (w.message.as_str(), w.details.as_ref())
        }
        _ => return None,
    };
    let by_pattern = details
        .and_then(|d| d.get_document("keyPattern").ok())
        .map(|k| k.keys().map(String::as_str).eq(["_id"]));
    let on_id = by_pattern.unwrap_or_else(|| {
        message.contains("index: _id_ ") || message.trim_end().ends_with("._id")
    });
    Some(if on_id {
        DuplicateOf::Id
    } else {
        DuplicateOf::Key
    })
}

/// A failed insert as the service sees it: a taken generated id, the
/// unique key `what` existing already, or a store failure.
fn insert_error(e: MongoError, what: &'static str) -> StoreError {
    match duplicate_of(&e) {
        Some(DuplicateOf::Id) => StoreError::IdTaken,
        Some(DuplicateOf::Key) => StoreError::Duplicate(what),
        None => classify(e),
    }
}

fn below(filter: &mut Document, before: Option<i64>) {
    if let Some(b) = before {
        filter.insert("_id", doc! { "$lt": b });
    }
}

/// A keyset page: documents matching `filter` below `before`, newest first.
async fn newest_page<T: DeserializeOwned + Send + Sync>(
    coll: Collection<T>,
    mut filter: Document,
    before: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<T>> {
    below(&mut filter, before);
    collect(
        coll.find(filter)
            .sort(doc! { "_id": -1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?,
    )
    .await
}

async fn collect<T: DeserializeOwned + Send + Sync>(
    cursor: mongodb::Cursor<T>,
) -> StoreResult<Vec<T>> {
    cursor.try_collect().await.map_err(classify)
}

/// Inserts `doc`; `Ok(false)` when a unique index already holds its key:
/// doing again what is done is not an error.
async fn insert_unless_duplicate<T: Serialize + Send + Sync>(
    coll: &Collection<T>,
    doc: &T,
) -> StoreResult<bool> {
    match coll.insert_one(doc).await {
        Ok(_) => Ok(true),
        Err(e) => match duplicate_of(&e) {
            Some(DuplicateOf::Key) => Ok(false),
            Some(DuplicateOf::Id) => Err(StoreError::IdTaken),
            None => Err(classify(e)),
        },
    }
}

/// Documents by `_id`, one query for the whole batch.
async fn by_ids<T: DeserializeOwned + Send + Sync>(
    coll: Collection<T>,
    ids: &[i64],
) -> StoreResult<Vec<T>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    collect(
        coll.find(doc! { "_id": { "$in": ids } })
            .await
            .map_err(classify)?,
    )
    .await
}

/// The id arrays on a post mirror the `comments` and `likes` collections,
/// which are the record (counts are rebuilt from them). A failure to update
/// an array after the record was written is logged, not returned: returning
/// it would report a write as failed that happened, and skip its live update.
fn array_update_result(r: Result<mongodb::results::UpdateResult, MongoError>, post_id: i64) {
    if let Err(e) = r {
        tracing::warn!(post_id, error = %e, "could not update a post's id array; the collections stay the record");
    }
}

/// A user's follow counters; absent on accounts older than them.
#[derive(Deserialize)]
struct FollowCounts {
    #[serde(rename = "followersCount", default)]
    followers: Option<i64>,
    #[serde(rename = "followingCount", default)]
    following: Option<i64>,
}

#[derive(Deserialize)]
struct IdOnly {
    #[serde(rename = "_id")]
    id: i64,
}

#[derive(Deserialize)]
struct CommentPostPair {
    #[serde(rename = "_id")]
    id: i64,
    #[serde(rename = "postId")]
    post_id: i64,
}

#[derive(Deserialize)]
struct ReplyPair {
    #[serde(rename = "_id")]
    id: i64,
    #[serde(rename = "replyTo")]
    reply_to: Option<super::ReplyRef>,
}

#[async_trait]
impl DocStore for MongoDocs {
    async fn ping(&self) -> StoreResult<()> {
        self.db
            .run_command(doc! { "ping": 1 })
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn apply_schemas(&self) -> StoreResult<()> {
        schemas::apply(&self.db).await
    }

    async fn insert_user(&self, user: &UserDoc) -> StoreResult<()> {
        let mut d = mongodb::bson::to_document(user).map_err(|e| StoreError::Other(e.into()))?;
        // Counted from the start; see `count_follow`.
        d.insert("followersCount", 0_i64);
        d.insert("followingCount", 0_i64);
        match self.db.collection::<Document>("users").insert_one(d).await {
            Ok(_) => Ok(()),
            Err(e) => Err(insert_error(e, "username")),
        }
    }

    async fn user_by_username(&self, username: &str) -> StoreResult<Option<UserDoc>> {
        self.users()
            .find_one(doc! { "username": username })
            .await
            .map_err(classify)
    }

    async fn users_by_ids(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>> {
        by_ids(self.users(), uids).await
    }

    async fn update_profile(
        &self,
        uid: i64,
        nick_name: Option<&str>,
        head_img: Option<&str>,
    ) -> StoreResult<Option<UserDoc>> {
        let mut set = Document::new();
        if let Some(n) = nick_name {
            set.insert("nickName", n);
        }
        if let Some(h) = head_img {
            set.insert("headImg", h);
        }
        if !set.is_empty() {
            self.users()
                .update_one(doc! { "_id": uid }, doc! { "$set": set })
                .await
                .map_err(classify)?;
        }
        self.users()
            .find_one(doc! { "_id": uid })
            .await
            .map_err(classify)
    }

    async fn set_password_hash(&self, uid: i64, password_hash: &str) -> StoreResult<()> {
        self.users()
            .update_one(
                doc! { "_id": uid },
                doc! { "$set": { "passwordHash": password_hash } },
            )
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn insert_session(&self, session: &SessionDoc) -> StoreResult<()> {
        let mut d = mongodb::bson::to_document(session).map_err(|e| StoreError::Other(e.into()))?;
        // The TTL index that purges expired sessions reads a BSON date.
        d.insert(
            "expireAt",
            mongodb::bson::DateTime::from_millis(session.expires_at),
        );
        match self
            .db
            .collection::<Document>("sessions")
            .insert_one(d)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(insert_error(e, "session")),
        }
    }

    async fn session_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<SessionDoc>> {
        self.sessions()
            .find_one(doc! { "tokenHash": token_hash })
            .await
            .map_err(classify)
    }

    async fn sessions_of_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<SessionDoc>> {
        newest_page(self.sessions(), doc! { "uid": uid }, None, limit).await
    }

    async fn delete_sessions(&self, uid: i64, ids: &[i64]) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        // By `_id` (TESTING.md); `uid` too, so nobody deletes another's.
        let r = self
            .sessions()
            .delete_many(doc! { "_id": { "$in": ids }, "uid": uid })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count)
    }

    async fn touch_session(&self, id: i64, at: i64) -> StoreResult<()> {
        self.sessions()
            .update_one(doc! { "_id": id }, doc! { "$set": { "lastSeenAt": at } })
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn purge_expired_sessions(&self, now: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some("sessions", doc! { "expiresAt": { "$lt": now } }, limit)
            .await
    }

    async fn touch_user(&self, uid: i64, at: i64) -> StoreResult<()> {
        self.users()
            .update_one(doc! { "_id": uid }, doc! { "$set": { "lastActiveAt": at } })
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        match self.posts().insert_one(post).await {
            Ok(_) => Ok(()),
            Err(e) => Err(insert_error(e, "post")),
        }
    }

    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>> {
        by_ids(self.posts(), ids).await
    }

    async fn delete_post(&self, id: i64) -> StoreResult<bool> {
        let r = self
            .posts()
            .update_one(
                doc! { "_id": id, "deleted": false },
                doc! { "$set": { "deleted": true } },
            )
            .await
            .map_err(classify)?;
        Ok(r.modified_count == 1)
    }

    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        self.post_ids_by_authors(&[uid], before, limit).await
    }

    async fn insert_comment(&self, comment: &CommentDoc, cap: usize) -> StoreResult<()> {
        match self.comments().insert_one(comment).await {
            Ok(_) => {}
            Err(e) => return Err(insert_error(e, "comment")),
        }
        let pushed = self
            .posts()
            .update_one(
                doc! { "_id": comment.post_id },
                doc! { "$push": { "comments_postid": {
                "$each": [comment.id], "$position": 0, "$slice": cap as i64 } } },
            )
            .await;
        array_update_result(pushed, comment.post_id);
        Ok(())
    }

    async fn comments_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<CommentDoc>> {
        by_ids(self.comments(), ids).await
    }

    async fn delete_comment(&self, comment: &CommentDoc) -> StoreResult<bool> {
        let r = self
            .comments()
            .update_one(
                doc! { "_id": comment.id, "deleted": false },
                doc! { "$set": { "deleted": true } },
            )
            .await
            .map_err(classify)?;
        let pulled = self
            .posts()
            .update_one(
                doc! { "_id": comment.post_id },
                doc! { "$pull": { "comments_postid": comment.id } },
            )
            .await;
        array_update_result(pulled, comment.post_id);
        Ok(r.modified_count == 1)
    }

    async fn comments_page(
        &self,
        post_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>> {
        let filter = doc! { "postId": post_id, "deleted": false };
        newest_page(self.comments(), filter, before, limit).await
    }

    async fn comment_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if post_ids.is_empty() {
            return Ok(Vec::new());
        }
        let cursor = self
            .db
            .collection::<CommentPostPair>("comments")
            .find(doc! { "postId": { "$in": post_ids }, "deleted": false })
            .projection(doc! { "_id": 1, "postId": 1 })
            .await
            .map_err(classify)?;
        Ok(collect(cursor)
            .await?
            .into_iter()
            .map(|c| (c.post_id, c.id))
            .collect())
    }

    async fn reply_ids_of_comments(&self, comment_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        if comment_ids.is_empty() {
            return Ok(Vec::new());
        }
        let cursor = self
            .db
            .collection::<ReplyPair>("comments")
            .find(doc! { "replyTo.commentId": { "$in": comment_ids }, "deleted": false })
            .projection(doc! { "_id": 1, "replyTo": 1 })
            .await
            .map_err(classify)?;
        Ok(collect(cursor)
            .await?
            .into_iter()
            .filter_map(|r| r.reply_to.map(|t| (t.comment_id, r.id)))
            .collect())
    }

    async fn insert_like(&self, like: &LikeDoc, cap: usize) -> StoreResult<bool> {
        if !insert_unless_duplicate(&self.likes(), like).await? {
            return Ok(false);
        }
        if like.kind == LikeKind::Post {
            let pushed = self
                .posts()
                .update_one(
                    doc! { "_id": like.target_id },
                    doc! { "$push": { "likes_postid": {
                    "$each": [like.id], "$position": 0, "$slice": cap as i64 } } },
                )
                .await;
            array_update_result(pushed, like.target_id);
        }
        Ok(true)
    }

    async fn delete_like(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>> {
        let Some(like) = self
            .likes()
            .find_one(doc! { "kind": kind.as_str(), "targetId": target_id, "uid": uid })
            .await
            .map_err(classify)?
        else {
            return Ok(None);
        };
        let r = self
            .likes()
            .delete_one(doc! { "_id": like.id })
            .await
            .map_err(classify)?;
        if r.deleted_count == 0 {
            // A concurrent unlike got there first; it also did the $pull.
            return Ok(None);
        }
        if kind == LikeKind::Post {
            let pulled = self
                .posts()
                .update_one(
                    doc! { "_id": target_id },
                    doc! { "$pull": { "likes_postid": like.id } },
                )
                .await;
            array_update_result(pulled, target_id);
        }
        Ok(Some(like))
    }

    async fn likes_of_targets(
        &self,
        kind: LikeKind,
        target_ids: &[i64],
    ) -> StoreResult<Vec<LikeDoc>> {
        if target_ids.is_empty() {
            return Ok(Vec::new());
        }
        collect(
            self.likes()
                .find(doc! { "kind": kind.as_str(), "targetId": { "$in": target_ids } })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn likes_page(
        &self,
        kind: LikeKind,
        target_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>> {
        let filter = doc! { "kind": kind.as_str(), "targetId": target_id };
        newest_page(self.likes(), filter, before, limit).await
    }

    async fn insert_follow(&self, follow: &FollowDoc) -> StoreResult<bool> {
        let added = insert_unless_duplicate(&self.follows(), follow).await?;
        if added {
            self.count_follow(follow.follower, follow.followee, 1).await;
        }
        Ok(added)
    }

    async fn delete_follow(&self, follower: i64, followee: i64) -> StoreResult<bool> {
        let removed = self
            .delete_matching(
                "follows",
                doc! { "follower": follower, "followee": followee },
            )
            .await?;
        if removed {
            self.count_follow(follower, followee, -1).await;
        }
        Ok(removed)
    }

    async fn followers_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.edges_page(doc! { "followee": uid }, before, limit)
            .await
    }

    async fn following_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.edges_page(doc! { "follower": uid }, before, limit)
            .await
    }

    async fn follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)> {
        let counted = self
            .db
            .collection::<FollowCounts>("users")
            .find_one(doc! { "_id": uid })
            .projection(doc! { "followersCount": 1, "followingCount": 1 })
            .await
            .map_err(classify)?;
        if let Some(FollowCounts {
            followers: Some(followers),
            following: Some(following),
            ..
        }) = counted
        {
            return Ok((followers.max(0) as u64, following.max(0) as u64));
        }
        self.backfill_follow_counts(uid).await
    }

    async fn follow_edges(&self, uid: i64, others: &[i64]) -> StoreResult<(Vec<i64>, Vec<i64>)> {
        if others.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let filter = doc! { "$or": [
            { "follower": uid, "followee": { "$in": others } },
            { "followee": uid, "follower": { "$in": others } },
        ] };
        let edges = collect(self.follows().find(filter).await.map_err(classify)?).await?;
        let mut out = (Vec::new(), Vec::new());
        for e in edges {
            if e.follower == uid {
                out.0.push(e.followee);
            }
            if e.followee == uid {
                out.1.push(e.follower);
            }
        }
        Ok(out)
    }

    async fn insert_block(&self, block: &BlockDoc) -> StoreResult<bool> {
        insert_unless_duplicate(&self.blocks(), block).await
    }

    async fn delete_block(&self, blocker: i64, blocked: i64) -> StoreResult<bool> {
        self.delete_matching("blocks", doc! { "blocker": blocker, "blocked": blocked })
            .await
    }

    async fn blocks_between(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        if others.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "$or": [
            { "blocker": uid, "blocked": { "$in": others } },
            { "blocked": uid, "blocker": { "$in": others } },
        ] };
        let edges = collect(self.blocks().find(filter).await.map_err(classify)?).await?;
        let mut out: Vec<i64> = edges
            .into_iter()
            .map(|b| {
                if b.blocker == uid {
                    b.blocked
                } else {
                    b.blocker
                }
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        if authors.is_empty() {
            return Ok(Vec::new());
        }
        let mut filter = doc! { "author_uid": { "$in": authors }, "deleted": false };
        below(&mut filter, before);
        let cursor = self
            .db
            .collection::<IdOnly>("posts")
            .find(filter)
            .projection(doc! { "_id": 1 })
            .sort(doc! { "_id": -1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(cursor).await?.into_iter().map(|d| d.id).collect())
    }

    async fn active_followers(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<(Vec<i64>, Option<i64>)> {
        let edges = self
            .edges_page(doc! { "followee": uid }, before, limit)
            .await?;
        let next = edges.last().map(|e| e.id).filter(|_| edges.len() == limit);
        if edges.is_empty() {
            return Ok((Vec::new(), None));
        }
        let followers: Vec<i64> = edges.iter().map(|e| e.follower).collect();
        let cursor = self
            .db
            .collection::<IdOnly>("users")
            .find(doc! { "_id": { "$in": followers }, "lastActiveAt": { "$gte": since } })
            .projection(doc! { "_id": 1 })
            .batch_size(limit.clamp(1, 10_000) as u32)
            .await
            .map_err(classify)?;
        let active = collect(cursor).await?.into_iter().map(|d| d.id).collect();
        Ok((active, next))
    }

    async fn follower_counts(&self, uids: &[i64]) -> StoreResult<Vec<(i64, u64)>> {
        // One grouped count for every author, not a count each: a feed read
        // with 200 followees would otherwise cost 200 queries.
        #[derive(Deserialize)]
        struct Count {
            #[serde(rename = "_id")]
            uid: i64,
            n: i64,
        }
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let pipeline = [
            doc! { "$match": { "followee": { "$in": uids } } },
            doc! { "$group": { "_id": "$followee", "n": { "$sum": 1 } } },
        ];
        let cursor = self
            .follows()
            .aggregate(pipeline)
            .with_type::<Count>()
            .await
            .map_err(classify)?;
        let counted: std::collections::HashMap<i64, u64> = collect(cursor)
            .await?
            .into_iter()
            .map(|c| (c.uid, c.n.max(0) as u64))
            .collect();
        Ok(uids
            .iter()
            .map(|u| (*u, counted.get(u).copied().unwrap_or(0)))
            .collect())
    }

    async fn follows_from(&self, uids: &[i64]) -> StoreResult<Vec<FollowDoc>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        collect(
            self.follows()
                .find(doc! { "follower": { "$in": uids } })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn blocks_involving(&self, uids: &[i64]) -> StoreResult<Vec<BlockDoc>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let filter =
            doc! { "$or": [ { "blocker": { "$in": uids } }, { "blocked": { "$in": uids } } ] };
        collect(self.blocks().find(filter).await.map_err(classify)?).await
    }

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
        self.delete_some("notifications", doc! { "_id": { "$lt": before } }, limit)
            .await
    }

    async fn post_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>> {
        self.ids_after("posts", doc! { "deleted": false }, after, limit)
            .await
    }

    async fn user_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>> {
        self.ids_after("users", doc! {}, after, limit).await
    }

    async fn totals(&self) -> StoreResult<(u64, u64)> {
        let posts = self
            .posts()
            .count_documents(doc! { "deleted": false })
            .await
            .map_err(classify)?;
        let users = self
            .users()
            .count_documents(doc! {})
            .await
            .map_err(classify)?;
        Ok((posts, users))
    }

    async fn lease_instance_id(
        &self,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<u16>> {
        let leases = self.db.collection::<Document>("instance_leases");
        for id in 0..=crate::ids::MAX_INSTANCE {
            let lease = doc! { "_id": i32::from(id), "holder": holder, "expiresAt": until };
            match leases.insert_one(lease).await {
                Ok(_) => return Ok(Some(id)),
                Err(e) if duplicate_of(&e).is_some() => {}
                Err(e) => return Err(classify(e)),
            }
            // Held: take it over only if its lease has ended, in one
            // conditional write, so two instances never both win it.
            let taken = leases
                .update_one(
                    doc! { "_id": i32::from(id), "expiresAt": { "$lt": now } },
                    doc! { "$set": { "holder": holder, "expiresAt": until } },
                )
                .await
                .map_err(classify)?;
            if taken.modified_count == 1 {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    async fn renew_instance_id(&self, id: u16, holder: &str, until: i64) -> StoreResult<bool> {
        let r = self
            .db
            .collection::<Document>("instance_leases")
            .update_one(
                doc! { "_id": i32::from(id), "holder": holder },
                doc! { "$set": { "expiresAt": until } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn device_models(&self) -> StoreResult<Vec<DeviceModelDoc>> {
        collect(
            self.device_models_coll()
                .find(doc! {})
                .sort(doc! { "_id": 1 })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn upsert_device_models(&self, models: &[DeviceModelDoc]) -> StoreResult<()> {
        // One upsert per model, a few in flight at once: `bulkWrite` across a
        // client needs MongoDB 8, and imports are rare and small.
        for chunk in models.chunks(16) {
            let writes = chunk.iter().map(|m| async move {
                self.device_models_coll()
                    .update_one(
                        doc! { "_id": &m.key },
                        doc! { "$set": {
                            "displayName": { "zh": &m.display_name.zh, "en": &m.display_name.en },
                            "brand": &m.brand,
                            "updatedAt": m.updated_at,
                            "updatedBy": m.updated_by,
                        } },
                    )
                    .upsert(true)
                    .await
                    .map_err(classify)
            });
            futures_util::future::try_join_all(writes).await?;
        }
        Ok(())
    }

    async fn delete_device_model(&self, key: &str) -> StoreResult<bool> {
        let r = self
            .device_models_coll()
            .delete_one(doc! { "_id": key })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count == 1)
    }
}
