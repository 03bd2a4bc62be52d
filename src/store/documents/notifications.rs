//! Notifications: who did what to whom, expiring.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::{lenient_bool, StoreResult};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotificationKind {
    Like,
    Comment,
    Reply,
    Follow,
    /// The actor's new post names the recipient (提醒谁看).
    Mention,
    /// A moderator closed the recipient's report (`reportId`); the actor
    /// is the service (uid 0), never the moderator.
    #[serde(rename = "report_closed")]
    ReportClosed,
    /// To moderators and admins: a target was reported that had no open
    /// case (`caseId`); the actor is the service (uid 0).
    #[serde(rename = "report_opened")]
    ReportOpened,
    /// A moderator recorded a strike on the recipient's account
    /// (`strikeId`): content removed, a warning, a suspension or a ban.
    /// The actor is the service (uid 0).
    Strike,
    /// A moderator decided the recipient's appeal of a strike
    /// (`strikeId`: overturned or not, `GET /me/strikes` says).
    #[serde(rename = "appeal_closed")]
    AppealClosed,
}

/// Something that happened to `uid`, done by `actor`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotificationDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    pub kind: NotificationKind,
    pub actor: i64,
    #[serde(rename = "postId")]
    pub post_id: Option<i64>,
    #[serde(rename = "commentId")]
    pub comment_id: Option<i64>,
    pub createtime: i64,
    /// The report a `report_closed` is about.
    #[serde(rename = "reportId", default, skip_serializing_if = "Option::is_none")]
    pub report_id: Option<i64>,
    /// The case a `report_opened` is about.
    #[serde(rename = "caseId", default, skip_serializing_if = "Option::is_none")]
    pub case_id: Option<i64>,
    /// The strike a `strike` or `appeal_closed` is about.
    #[serde(rename = "strikeId", default, skip_serializing_if = "Option::is_none")]
    pub strike_id: Option<i64>,
    /// One notification per recipient and event (`like:post:ID:ACTOR`).
    pub dedupe: String,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub read: bool,
}

impl NotificationDoc {
    /// An unread notification made when its id was, about nothing beyond
    /// its actor; callers set the post, comment, case or strike it names.
    pub fn new(id: i64, uid: i64, kind: NotificationKind, actor: i64) -> Self {
        Self {
            id,
            uid,
            kind,
            actor,
            post_id: None,
            comment_id: None,
            createtime: crate::ids::timestamp_of(id),
            report_id: None,
            case_id: None,
            strike_id: None,
            dedupe: String::new(),
            read: false,
        }
    }
}

/// Notifications and their read marks. Part of `DocStore`.
#[async_trait]
pub trait NotificationDocs: Send + Sync {
    /// `Ok(false)` when this event was notified already (same `dedupe`).
    async fn insert_notification(&self, n: &NotificationDoc) -> StoreResult<bool>;

    /// A recipient's notifications made at or after `since` and below
    /// `before`, newest first, `read` set for those up to their read mark.
    async fn notifications_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationDoc>>;

    /// How many of a recipient's notifications made at or after `since` are
    /// unread, counted up to `cap` at most.
    async fn unread_notifications(&self, uid: i64, since: i64, cap: u64) -> StoreResult<u64>;

    /// Moves a recipient's read mark up to `up_to`: every notification with
    /// an id at or below it is read. One write, however many there are.
    async fn mark_notifications_read(&self, uid: i64, up_to: i64) -> StoreResult<()>;

    /// Deletes up to `limit` notifications with ids below `before` (older
    /// than they are kept); how many went.
    async fn purge_notifications_before(&self, before: i64, limit: usize) -> StoreResult<u64>;

    /// Deletes up to `limit` notifications to or by `uid`; how many went.
    async fn delete_notifications_involving(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}
