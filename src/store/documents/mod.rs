//! The document ports: the truth, one port per aggregate, each in its own
//! file with the records that cross it. `DocStore` is all of them, plus
//! what no one aggregate owns (instance leases, full scans for the repair
//! tools). MongoDB and the embedded store implement each in a file of the
//! same name.

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

pub use account_jobs::*;
pub use accounts::*;
pub use comments::*;
pub use device_models::*;
pub use exports::*;
pub use fan_outs::*;
pub use favorites::*;
pub use idempotency::*;
pub use imports::*;
pub use labels::*;
pub use likes::*;
pub use live_repairs::*;
pub use media::*;
pub use moderation::*;
pub use notifications::*;
pub use posts::*;
pub use shares::*;
pub use social::*;
pub use views::*;

use async_trait::async_trait;

use crate::store::StoreResult;

/// The documents: the truth, one port per aggregate (accounts, posts,
/// the social graph, notifications, device models, idempotency keys,
/// unfinished fan-outs, stale live keys, data exports and imports, media)
/// and the store-wide operations here. Every method is
/// one store round trip, and every batch method takes all the ids of a page
/// at once, so a page of N items costs a constant number of calls.
#[async_trait]
pub trait DocStore:
    AccountDocs
    + PostDocs
    + CommentDocs
    + LikeDocs
    + SocialDocs
    + NotificationDocs
    + DeviceModelDocs
    + IdempotencyDocs
    + FavoriteDocs
    + LabelDocs
    + ShareDocs
    + ViewDocs
    + FanOutDocs
    + ExportDocs
    + ImportDocs
    + LiveRepairDocs
    + ModerationDocs
    + MediaDocs
    + Send
    + Sync
{
    async fn ping(&self) -> StoreResult<()>;
    /// Creates collections, validators and indexes; idempotent.
    async fn apply_schemas(&self) -> StoreResult<()>;
    /// Takes an instance id (0 to `MAX_INSTANCE`) that nobody holds, or
    /// whose lease ended before `now`, for `holder` until `until`; `None`
    /// when every one is held.
    async fn lease_instance_id(
        &self,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<u16>>;
    /// Extends `holder`'s lease of `id`; false when it was lost to another.
    async fn renew_instance_id(&self, id: u16, holder: &str, until: i64) -> StoreResult<bool>;
    /// Ids of live posts above `after`, ascending: a full scan in pages, for
    /// the repair tools.
    async fn post_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>>;
    /// Uids above `after`, ascending.
    async fn user_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>>;
    /// (live posts, users), for progress bars.
    async fn totals(&self) -> StoreResult<(u64, u64)>;
    /// Finishes the writes already submitted and releases the store: the
    /// last call of a stopping process. Calls after it fail.
    async fn close(&self) -> StoreResult<()>;
}
