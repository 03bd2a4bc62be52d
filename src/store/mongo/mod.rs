//! The MongoDB adapter of `DocStore`, on the official driver: the
//! store-wide operations and shared helpers here, one file per aggregate
//! port (`accounts`, `posts`, `comments`, `likes`, `social`,
//! `notifications`, `fan_outs`, `exports`, `imports`, `live_repairs`, `device_models`,
//! `favorites`, `labels`, `shares`, `views`, `idempotency`, `moderation`,
//! `media`),
//! beside what exports and imports share (`account_jobs`) and the claims
//! of saved work (`claims`), which several aggregates take. What the
//! collections are, apart from any aggregate, is in `collections/`: their
//! validators and indexes, applied at start-up (`collections/mod.rs`, from
//! `schemas/*.json`), and the check that each query reaches one shard
//! (`collections/shard_keys.rs`). A test holds this list to the folder.
//!
//! Queries stay inside the subset that both MongoDB and the test stand-in
//! agree on (TESTING.md): writes address documents by `_id` or by equality,
//! sorts are on `_id` (16-digit ids, so text order is number order), joins
//! happen in the service. That is also the shard-friendly subset.

mod account_jobs;
mod accounts;
mod claims;
pub mod collections;
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

use async_trait::async_trait;
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
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
    /// Whether the server honours `$push` with `$position` and `$slice`
    /// (FerretDB 1.24 ignores both), asked once: see `posts::id_array`.
    capped_push: tokio::sync::OnceCell<bool>,
}

impl MongoDocs {
    pub async fn connect(uri: &str, db_name: &str) -> StoreResult<Self> {
        let mut opts = ClientOptions::parse(uri).await.map_err(classify)?;
        // Fail a request in seconds, not the driver's default 30 s, when the
        // server is gone: the client gets a 503 it can retry.
        opts.server_selection_timeout = Some(Duration::from_secs(5));
        opts.connect_timeout = Some(Duration::from_secs(5));
        opts.app_name = Some("moments".into());
        // Debug builds (the tests) check every query against the shard keys.
        #[cfg(debug_assertions)]
        {
            opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
                collections::shard_keys::check,
            ));
        }
        let client = Client::with_options(opts).map_err(classify)?;
        Ok(Self {
            db: client.database(db_name),
            capped_push: tokio::sync::OnceCell::new(),
        })
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Deletes the one document matching `filter`: found first, then deleted
    /// by `_id` (writes address documents by `_id`, TESTING.md) and the same
    /// filter, which carries the collection's shard key. True when this
    /// call deleted it.
    async fn delete_matching(&self, collection: &str, filter: Document) -> StoreResult<bool> {
        let coll = self.db.collection::<IdOnly>(collection);
        let Some(found) = coll
            .find_one(filter.clone())
            .projection(doc! { "_id": 1 })
            .await
            .map_err(classify)?
        else {
            return Ok(false);
        };
        let mut by_id = filter;
        by_id.insert("_id", found.id);
        let r = coll.delete_one(by_id).await.map_err(classify)?;
        Ok(r.deleted_count == 1)
    }

    /// Deletes up to `limit` documents matching `filter`: their ids first,
    /// then the delete by `_id` (TESTING.md). For the expiry sweeps, which
    /// keep the promise where MongoDB's TTL monitor lags. How many went.
    async fn delete_some<Id>(
        &self,
        collection: &str,
        filter: Document,
        limit: usize,
    ) -> StoreResult<u64>
    where
        Id: DeserializeOwned + Into<mongodb::bson::Bson> + Send + Sync + Unpin,
    {
        let cursor = self
            .db
            .collection::<IdOnly<Id>>(collection)
            .find(filter)
            .projection(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        let ids: Vec<mongodb::bson::Bson> = collect(cursor)
            .await?
            .into_iter()
            .map(|d| d.id.into())
            .collect();
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

    /// Keys the accounts whose nickname has no key yet (made before
    /// people search) or one folded by an older version
    /// (`nickKeyVersion` below `search_text::NAME_KEY_VERSION`, or none):
    /// at start-up, in uid order, a few hundred accounts a read and their
    /// writes sixteen at a time. A write is for the nickname that was read:
    /// an account renamed meanwhile keeps the key its rename wrote (or, by
    /// an instance of an older version, is keyed at the next start). One
    /// that cannot be read as an account is left as it is, and said. The
    /// `nick_key_version` index (`schemas/users.json`) keeps this read to
    /// the accounts it finds, so a start with every account keyed costs
    /// an empty read, not a pass over every account.
    async fn key_nicknames(&self) -> StoreResult<()> {
        use crate::domain::search_text::{name_key, NAME_KEY_VERSION};
        use futures_util::stream::{StreamExt, TryStreamExt};
        const BATCH: i64 = 500;
        let version = i64::from(NAME_KEY_VERSION);
        let users = self.db.collection::<Document>("users");
        let mut after = i64::MIN;
        loop {
            let page: Vec<Document> = users
                .find(doc! {
                    "$or": [
                        { "nickKeyVersion": { "$exists": false } },
                        { "nickKeyVersion": { "$lt": version } },
                    ],
                    "_id": { "$gt": after },
                })
                .projection(doc! { "_id": 1, "nickName": 1 })
                .sort(doc! { "_id": 1 })
                .limit(BATCH)
                .await
                .map_err(classify)?
                .try_collect()
                .await
                .map_err(classify)?;
            // A uid as any MongoDB-wire server keeps a number.
            let uid_of = |d: &Document| match d.get("_id") {
                Some(Bson::Int64(n)) => Some(*n),
                Some(Bson::Int32(n)) => Some(i64::from(*n)),
                Some(Bson::Double(n)) => Some(*n as i64),
                _ => None,
            };
            let Some(last) = page.last().and_then(uid_of) else {
                return Ok(());
            };
            let mut named: Vec<(i64, String)> = Vec::with_capacity(page.len());
            for d in &page {
                match (uid_of(d), d.get_str("nickName")) {
                    (Some(uid), Ok(nick)) => named.push((uid, nick.to_string())),
                    _ => {
                        tracing::warn!(account = ?d.get("_id"), "an account without a readable nickname keeps no nickname key")
                    }
                }
            }
            let writes = named.into_iter().map(|(uid, nick)| {
                let users = users.clone();
                async move {
                    users
                        .update_one(
                            doc! { "_id": uid, "nickName": &nick },
                            doc! { "$set": { "nickKey": name_key(&nick), "nickKeyVersion": version } },
                        )
                        .await
                }
            });
            futures_util::stream::iter(writes)
                .buffer_unordered(16)
                .try_collect::<Vec<_>>()
                .await
                .map_err(classify)?;
            if (page.len() as i64) < BATCH {
                return Ok(());
            }
            after = last;
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
    /// The error names no index (FerretDB 1.24): `insert_checked` looks the
    /// attempted `_id` up to tell.
    Unnamed,
}

/// Reads which index a duplicate-key error names: MongoDB gives a
/// `keyPattern` and says `index: _id_`; the wire stand-in says
/// `UNIQUE constraint failed: coll._id`; FerretDB names none.
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
    if by_pattern.is_none()
        && !message.contains("index: ")
        && !message.contains("UNIQUE constraint failed")
    {
        return Some(DuplicateOf::Unnamed);
    }
    let on_id = by_pattern.unwrap_or_else(|| {
        message.contains("index: _id_ ") || message.trim_end().ends_with("._id")
    });
    Some(if on_id {
        DuplicateOf::Id
    } else {
        DuplicateOf::Key
    })
}

/// Inserts `doc`. `Ok(Err(Id))`: its `_id` is taken; `Ok(Err(Key))`:
/// another unique index holds its key. Where the server's error does not
/// say which, the attempted `_id` is looked up: found means the id.
pub async fn insert_checked<T: Serialize + Send + Sync>(
    coll: &Collection<T>,
    doc: &T,
) -> StoreResult<Result<(), DuplicateOf>> {
    let e = match coll.insert_one(doc).await {
        Ok(_) => return Ok(Ok(())),
        Err(e) => e,
    };
    match duplicate_of(&e) {
        None => Err(classify(e)),
        Some(DuplicateOf::Unnamed) => {
            let attempted = mongodb::bson::to_document(doc)
                .map_err(|e| StoreError::Other(e.into()))?
                .get("_id")
                .cloned()
                .ok_or_else(|| {
                    StoreError::Other(anyhow::anyhow!("inserted a document without _id"))
                })?;
            // Only a server that names no index asks this (FerretDB,
            // which shards nothing); MongoDB's error says which.
            let taken = coll
                .clone_with_type::<Document>()
                .find_one(doc! { "_id": attempted })
                .projection(doc! { "_id": 1 })
                .comment(mongodb::bson::Bson::String(
                    collections::shard_keys::NEVER_ON_A_SHARDED_CLUSTER.into(),
                ))
                .await
                .map_err(classify)?
                .is_some();
            Ok(Err(if taken {
                DuplicateOf::Id
            } else {
                DuplicateOf::Key
            }))
        }
        Some(which) => Ok(Err(which)),
    }
}

/// Inserts `doc`: a taken generated id, the unique key `what` existing
/// already, or a store failure are the errors.
async fn insert_new<T: Serialize + Send + Sync>(
    coll: &Collection<T>,
    doc: &T,
    what: &'static str,
) -> StoreResult<()> {
    match insert_checked(coll, doc).await? {
        Ok(()) => Ok(()),
        Err(DuplicateOf::Key) => Err(StoreError::Duplicate(what)),
        Err(_) => Err(StoreError::IdTaken),
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
    match insert_checked(coll, doc).await? {
        Ok(()) => Ok(true),
        Err(DuplicateOf::Key) => Ok(false),
        Err(_) => Err(StoreError::IdTaken),
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
fn array_update_result<T>(r: Result<T, MongoError>, post_id: i64) {
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
struct IdOnly<Id = i64> {
    #[serde(rename = "_id")]
    id: Id,
}

#[derive(Deserialize)]
struct PostIdPair {
    #[serde(rename = "_id")]
    id: i64,
    #[serde(rename = "postId")]
    post_id: i64,
}

/// `(postId, _id)` of the documents of `collection` matching `filter`
/// (which names the posts): what rebuilding a post's set of comment or
/// share ids reads.
async fn ids_by_post(
    db: &Database,
    collection: &str,
    filter: Document,
) -> StoreResult<Vec<(i64, i64)>> {
    let cursor = db
        .collection::<PostIdPair>(collection)
        .find(filter)
        .projection(doc! { "_id": 1, "postId": 1 })
        .await
        .map_err(classify)?;
    Ok(collect(cursor)
        .await?
        .into_iter()
        .map(|c| (c.post_id, c.id))
        .collect())
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
        collections::apply(&self.db).await?;
        self.key_nicknames().await
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
            // Held: take it over only if its lease has ended, and only if
            // this instance wins the claim on that ended lease, so two
            // instances never both take it.
            let Some(held) = leases
                .find_one(doc! { "_id": i32::from(id) })
                .await
                .map_err(classify)?
            else {
                continue;
            };
            let (Ok(was_holder), Ok(ended)) = (held.get_str("holder"), held.get_i64("expiresAt"))
            else {
                continue;
            };
            let claim = format!("lease:{id}:{was_holder}:{ended}");
            if ended >= now || !self.claim(claim.clone(), now).await? {
                continue;
            }
            // Still the lease that was seen ended: on MongoDB this update is
            // atomic, so a renewal that landed since wins (the claim alone
            // decides only between takers).
            let taken = leases
                .update_one(
                    doc! { "_id": i32::from(id), "holder": was_holder, "expiresAt": ended },
                    doc! { "$set": { "holder": holder, "expiresAt": until } },
                )
                .await;
            match taken {
                Ok(r) if r.matched_count == 1 => return Ok(Some(id)),
                Ok(_) => self.unclaim(claim).await,
                Err(e) => {
                    self.unclaim(claim).await;
                    return Err(classify(e));
                }
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

    async fn close(&self) -> StoreResult<()> {
        // Nothing to flush: every write was acknowledged by the server
        // before it was answered.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::error::CommandError;

    #[test]
    fn the_header_names_every_file_here() {
        crate::store::assert_header_names_every_file(include_str!("mod.rs"), "mongo");
    }

    fn command_error(code: i32, name: &str) -> MongoError {
        let e: CommandError = mongodb::bson::from_document(
            doc! { "code": code, "codeName": name, "errmsg": format!("injected {name}") },
        )
        .unwrap();
        MongoError::from(ErrorKind::Command(e))
    }

    #[test]
    fn what_a_retry_may_cure_is_unavailable_and_the_rest_is_not() {
        for (code, name) in [
            (10107, "NotWritablePrimary"),
            (13435, "NotPrimaryNoSecondaryOk"),
            (11602, "InterruptedDueToReplStateChange"),
            (189, "PrimarySteppedDown"),
            (112, "WriteConflict"),
            (91, "ShutdownInProgress"),
            (6, "HostUnreachable"),
            (89, "NetworkTimeout"),
        ] {
            assert!(
                matches!(
                    classify(command_error(code, name)),
                    StoreError::Unavailable(_)
                ),
                "{name}"
            );
        }
        let io = MongoError::from(ErrorKind::Io(std::sync::Arc::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        ))));
        assert!(matches!(classify(io), StoreError::Unavailable(_)));
        // A bad query is not cured by waiting: the caller sees it as it is.
        assert!(matches!(
            classify(command_error(2, "BadValue")),
            StoreError::Other(_)
        ));
    }
}
