//! Moderation: reports of posts, comments and users, the cases
//! ("cases") they are grouped into, one open case per target, and the
//! append-only audit log of what moderators and admins did.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::content_filter::FilterAction;
use crate::domain::post::Visibility;
use crate::domain::report::{ReportCategory, TargetKind};
use crate::store::StoreResult;

/// The reported thing: a post, a comment (with its post, so that it can be
/// found on a sharded store), or an account.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportTarget {
    pub kind: TargetKind,
    pub id: i64,
}

impl ReportTarget {
    /// One text per target: what makes a case the open one for it.
    pub fn key(&self) -> String {
        let kind = match self.kind {
            TargetKind::Post => "post",
            TargetKind::Comment => "comment",
            TargetKind::User => "user",
            TargetKind::Appeal => "appeal",
        };
        format!("{kind}:{}", self.id)
    }
}

/// Where a report or a case stands.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CaseState {
    Open,
    Actioned,
    Dismissed,
}

/// One account's report of one target. While its case is open, a second
/// report by the same account updates this one. Whether it is open, and
/// its outcome, are its case's: closing a case writes the case alone,
/// whatever the number of reports in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReportDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub reporter: i64,
    pub target: ReportTarget,
    /// The reported account: the author of a post or comment, or the user.
    pub account: i64,
    #[serde(rename = "caseId")]
    pub case_id: i64,
    /// `"{caseId}:{reporter}"`, unique: one report per reporter and case.
    #[serde(rename = "caseReporter")]
    pub case_reporter: String,
    pub category: ReportCategory,
    pub comment: String,
    /// For a user report, posts of theirs that show why.
    #[serde(rename = "postIds", default)]
    pub post_ids: Vec<i64>,
    /// Numbers of the instance's rules the report cites.
    #[serde(default)]
    pub rules: Vec<u32>,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
}

impl ReportDoc {
    /// A report filed at `at` with no comment, posts or rules named.
    pub fn new(
        id: i64,
        reporter: i64,
        target: ReportTarget,
        account: i64,
        case_id: i64,
        category: ReportCategory,
        at: i64,
    ) -> Self {
        Self {
            id,
            reporter,
            target,
            account,
            case_id,
            case_reporter: Self::case_reporter_key(case_id, reporter),
            category,
            comment: String::new(),
            post_ids: Vec::new(),
            rules: Vec::new(),
            created_at: at,
            updated_at: at,
        }
    }

    pub fn case_reporter_key(case_id: i64, reporter: i64) -> String {
        format!("{case_id}:{reporter}")
    }
}

/// The reported content as it was when first reported, so that a
/// moderator sees it whatever happens to it since (an edit, a deletion, a
/// narrower audience). Bounded: the text is cut at `SNAPSHOT_TEXT_MAX`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The account the content is by (or the reported account).
    pub author: i64,
    pub author_name: String,
    /// The post's or comment's text; the account's nickname for a user.
    pub text: String,
    #[serde(default)]
    pub picture_urls: Vec<String>,
    /// The post's audience (a comment: its post's). Whom an `only` or
    /// `except` audience names is not kept: that is the author's to know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
    /// For a comment, its post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_id: Option<i64>,
    /// When the content was made (epoch ms).
    pub createtime: i64,
    /// When the snapshot was taken.
    pub taken_at: i64,
    /// Set once its text and pictures were erased: the reported account was
    /// deleted, or the case closed longer ago than the retention.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "crate::store::lenient_bool"
    )]
    pub erased: bool,
}

impl Snapshot {
    /// What is kept of an erased snapshot: who and when, not what.
    pub fn erase(&mut self) {
        self.text.clear();
        self.picture_urls.clear();
        self.author_name.clear();
        self.erased = true;
    }
}

/// The most characters of text a snapshot keeps.
pub const SNAPSHOT_TEXT_MAX: usize = 20_000;

/// A case: every report of one target while it is open, and what a
/// moderator decided.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub target: ReportTarget,
    pub account: i64,
    pub state: CaseState,
    /// Distinct reporters so far.
    #[serde(rename = "reporterCount", default)]
    pub reporter_count: u64,
    #[serde(default)]
    pub categories: Vec<ReportCategory>,
    /// The first `FIRST_REPORTS_KEPT` reports, as filed: what the queue
    /// list shows of each case without reading its reports.
    #[serde(rename = "firstReports", default)]
    pub first_reports: Vec<ReportBrief>,
    pub snapshot: Snapshot,
    #[serde(rename = "openedAt")]
    pub opened_at: i64,
    /// When the latest report came.
    #[serde(rename = "reportedAt")]
    pub reported_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closing: Option<CaseClosing>,
    /// Set when a content filter holds the post (no reports then):
    /// dismissing the case publishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldBy>,
    /// Set on an appeal of a strike (target `appeal:STRIKE`): dismissing
    /// it keeps the strike, `overturn` withdraws it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appeal: Option<AppealBrief>,
    /// When it closed, while what follows is not all done (the action's
    /// effects, then telling everyone it concerns): set by `close_case`,
    /// cleared by `mark_finished`, so what a stopping instance or a failing
    /// store cut short is finished by another.
    #[serde(
        rename = "unfinishedSince",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub unfinished_since: Option<i64>,
}

impl CaseDoc {
    /// What makes a case the open one: its target's key, or, for posts a
    /// filter held, their author's, so that one case holds them all.
    pub fn open_key(&self) -> String {
        match self.held {
            Some(_) => format!("held:{}", self.account),
            None => self.target.key(),
        }
    }

    /// A new open case of `target`, with no report in it yet.
    pub fn opening(
        id: i64,
        target: ReportTarget,
        account: i64,
        snapshot: Snapshot,
        now: i64,
    ) -> Self {
        CaseDoc {
            id,
            target,
            account,
            state: CaseState::Open,
            reporter_count: 0,
            categories: Vec::new(),
            first_reports: Vec::new(),
            snapshot,
            opened_at: now,
            reported_at: now,
            closing: None,
            held: None,
            appeal: None,
            unfinished_since: None,
        }
    }
}

/// The `hold` filter that a post matched. On a case, the filter that
/// held its first post, and every post of the author it holds: one open
/// case per author, however many of their posts a filter holds, so that
/// a flood of held posts is one case and one notification to the staff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HeldBy {
    /// The filter's id.
    pub filter: i64,
    /// Its public reason.
    pub reason: String,
    /// How many of the author's posts the case holds. Every action on the
    /// case applies to all of them: `dismiss` publishes them, any other
    /// action removes them.
    #[serde(default = "one")]
    pub count: u64,
    /// The newest of them (at most 5), newest first.
    #[serde(default)]
    pub posts: Vec<HeldPost>,
}

fn one() -> u64 {
    1
}

impl CaseDoc {
    /// Whether `closing` covers what the case holds: every held post of it
    /// (`CaseClosing::held_count`), or none for a case that holds none.
    pub fn closed_as_seen(&self, closing: &CaseClosing) -> bool {
        self.held.as_ref().map(|h| h.count) == closing.held_count
    }
}

impl HeldBy {
    /// What a filter's match says, before any case holds the post.
    pub fn by(filter: i64, reason: String) -> Self {
        HeldBy {
            filter,
            reason,
            count: 0,
            posts: Vec::new(),
        }
    }
}

/// A held post as its case shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldPost {
    pub post_id: i64,
    /// The filter that held it, and its public reason.
    pub filter: i64,
    pub reason: String,
    pub snapshot: Snapshot,
}

/// How many of its newest held posts a case keeps a copy of; the rest are
/// found by `held_posts_of_case`.
pub const HELD_SHOWN: usize = 5;

/// A post in the case that holds it: what every action on the case finds
/// the posts it covers by, beyond the few the case shows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HeldPostDoc {
    #[serde(rename = "_id")]
    pub post_id: i64,
    #[serde(rename = "caseId")]
    pub case_id: i64,
    pub author: i64,
    #[serde(rename = "heldAt")]
    pub held_at: i64,
    /// Its place in the case's count when it was held (the first is 1):
    /// an action covers the posts up to the count the moderator saw, so a
    /// post counted after a close that did not see it (FerretDB applies an
    /// update without checking its filter again) is not covered. `None`
    /// where the store records a post and counts it in one write (and on
    /// records from before it was kept): covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

impl HeldPostDoc {
    /// A post held in `case_id`, its place in the case's count not yet
    /// known.
    pub fn new(post_id: i64, case_id: i64, author: i64, held_at: i64) -> Self {
        Self {
            post_id,
            case_id,
            author,
            held_at,
            seq: None,
        }
    }
}

/// The newest held posts a case shows once `post` joins them.
pub fn with_newest(mut shown: Vec<HeldPost>, post: HeldPost) -> Vec<HeldPost> {
    shown.retain(|p| p.post_id != post.post_id);
    shown.insert(0, post);
    shown.truncate(HELD_SHOWN);
    shown
}

/// An appeal as its case shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppealBrief {
    pub strike_id: i64,
    /// What the struck account said.
    pub text: String,
    /// The action appealed (`remove_content`, `warn`, `suspend`, `ban`).
    pub action: String,
    pub at: i64,
}

/// How many reports a case keeps a brief of.
pub const FIRST_REPORTS_KEPT: usize = 20;

/// A report as its case keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReportBrief {
    pub id: i64,
    pub reporter: i64,
    pub category: ReportCategory,
    pub comment: String,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

impl From<&ReportDoc> for ReportBrief {
    fn from(r: &ReportDoc) -> Self {
        ReportBrief {
            id: r.id,
            reporter: r.reporter,
            category: r.category,
            comment: r.comment.clone(),
            created_at: r.created_at,
        }
    }
}

/// What closed a case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseClosing {
    pub state: CaseState,
    pub action: String,
    pub moderator: i64,
    pub note: String,
    /// What the reporters are told; `None`: only that it was closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<String>,
    pub at: i64,
    /// For `suspend` and `ban`: until when (`BANNED`: without end), fixed
    /// when the case closes, so finishing it later suspends as long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    /// On a case of held posts: how many it held when the moderator acted,
    /// all of which the action covers. The case closes only while it holds
    /// exactly these.
    #[serde(default, rename = "heldCount", skip_serializing_if = "Option::is_none")]
    pub held_count: Option<u64>,
}

/// A strike: a moderator's action (`remove_content`, `warn`, `suspend`,
/// `ban`) recorded on the account it was taken against. One per case, so
/// its id is the case's: recording it again is recording the same strike.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StrikeDoc {
    /// The case's id.
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    pub action: String,
    /// What was reported (a post, a comment, the account).
    pub target: ReportTarget,
    pub categories: Vec<ReportCategory>,
    /// What the account is told of why, if the moderator shared it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The content as it was reported, so that its author sees what was
    /// struck even after it is removed.
    pub snapshot: Snapshot,
    /// Until when a `suspend` lasted; `BANNED` for a ban.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    pub at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appeal: Option<StrikeAppeal>,
    /// When it was withdrawn (an appeal upheld), if it was.
    #[serde(
        rename = "overturnedAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub overturned_at: Option<i64>,
    /// When an admin lifted the suspension it held, if one did: it holds
    /// the account no longer, whatever becomes of its other strikes.
    #[serde(rename = "liftedAt", default, skip_serializing_if = "Option::is_none")]
    pub lifted_at: Option<i64>,
}

/// An account's appeal of a strike: at most one per strike.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StrikeAppeal {
    pub text: String,
    pub at: i64,
    /// The case it is in.
    #[serde(rename = "caseId")]
    pub case_id: i64,
}

/// One entry of the audit log: who did what to what, when, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub actor: i64,
    /// `report.dismiss`, `role.set`, …
    pub action: String,
    /// What it was done to (`case:ID`, `user:UID`).
    pub subject: String,
    pub note: String,
    pub at: i64,
}

/// What the admin set of the service's name, contact and rules
/// (`domain::instance::InstanceInfo`), as stored: one document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InstanceDoc {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub contact: String,
    #[serde(default)]
    pub rules: Vec<String>,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
}

impl InstanceDoc {
    /// The one document's id.
    pub const ID: &'static str = "instance";
}

/// A content filter as stored (`domain::content_filter`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContentFilterDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub term: String,
    pub action: FilterAction,
    pub reason: String,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
    #[serde(rename = "updatedBy")]
    pub updated_by: i64,
}

/// Reports, cases, the audit log, the instance's rules and the content
/// filters. Part of `DocStore`.
#[async_trait]
pub trait ModerationDocs: Send + Sync {
    /// The open case of `case.target`: an existing one, else `case` itself,
    /// made the open one. Idempotent: a case whose claim was recorded but
    /// whose document was not is written on the next call.
    async fn open_case(&self, case: &CaseDoc) -> StoreResult<CaseDoc>;

    /// Files `report` in its case, if the case is still open: inserted, or,
    /// when this reporter already has one in that case, that one updated
    /// (category, comment, posts, rules, time). The case's reporter count,
    /// categories, latest time and first reports follow. Returns the report
    /// as stored and whether it is new; `None` when the case closed
    /// meanwhile, and nothing is filed (the caller opens a new case).
    async fn file_report(&self, report: &ReportDoc) -> StoreResult<Option<(ReportDoc, bool)>>;

    async fn cases_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<CaseDoc>>;

    /// Cases below `before`, newest first: open ones only, or closed ones
    /// only (`open`), of one account if `account` is given.
    async fn cases_page(
        &self,
        open: bool,
        account: Option<i64>,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CaseDoc>>;

    /// Up to `limit` reports of a case, oldest first, above `after`.
    async fn reports_of_case(
        &self,
        case_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ReportDoc>>;

    /// A reporter's reports below `before`, newest first.
    async fn reports_by_reporter(
        &self,
        reporter: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ReportDoc>>;

    /// Records a held post in its case (`held.case_id`), if the case is
    /// still open: its count grows by one and `shown` leads its newest
    /// held posts. `Some(false)` when the post was recorded already (and
    /// nothing changes); `None` when the case closed meanwhile, and nothing
    /// is recorded (the caller opens a new case).
    async fn hold_in_case(&self, held: &HeldPostDoc, shown: &HeldPost)
        -> StoreResult<Option<bool>>;

    /// Up to `limit` posts held in a case, ascending by id, above
    /// `after`: each with its place in the count (`HeldPostDoc::seq`).
    async fn held_posts_of_case(
        &self,
        case_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<(i64, Option<u64>)>>;

    /// Forgets that a post is held in its case, so that it can be held in
    /// another (one an action did not cover).
    async fn forget_held_post(&self, post_id: i64) -> StoreResult<()>;

    /// Closes an open case (and so every report in it), unfinished since
    /// `closing.at`; `None` when it was not open (closed already, or
    /// no such case), or holds other than `closing.held_count` held posts,
    /// and nothing changes.
    async fn close_case(&self, case_id: i64, closing: &CaseClosing)
        -> StoreResult<Option<CaseDoc>>;

    /// Up to `limit` closed cases unfinished since before `before`.
    async fn unfinished_cases(&self, before: i64, limit: usize) -> StoreResult<Vec<i64>>;

    /// A closed case's action took effect and everyone it concerns was
    /// told.
    async fn mark_finished(&self, case_id: i64) -> StoreResult<()>;

    /// Appends an entry to the audit log, which nothing edits or deletes.
    async fn append_audit(&self, entry: &AuditDoc) -> StoreResult<()>;

    /// The case open the longest, for the metric an operator watches the
    /// response window by.
    async fn oldest_open_case(&self) -> StoreResult<Option<CaseDoc>>;

    /// The audit log below `before`, newest first.
    async fn audit_page(&self, before: Option<i64>, limit: usize) -> StoreResult<Vec<AuditDoc>>;

    /// The instance's name, contact and rules, if an admin set them.
    async fn instance_info(&self) -> StoreResult<Option<InstanceDoc>>;

    async fn set_instance_info(&self, info: &InstanceDoc) -> StoreResult<()>;

    /// Every content filter, by id (at most `MAX_FILTERS`: each instance
    /// keeps them all).
    async fn content_filters(&self) -> StoreResult<Vec<ContentFilterDoc>>;

    async fn insert_content_filter(&self, filter: &ContentFilterDoc) -> StoreResult<()>;

    /// Replaces a filter; false when there is no such filter.
    async fn update_content_filter(&self, filter: &ContentFilterDoc) -> StoreResult<bool>;

    /// True when this call deleted it.
    async fn delete_content_filter(&self, id: i64) -> StoreResult<bool>;

    /// Records a strike; recording one with the same id again changes
    /// nothing (a retried action).
    async fn insert_strike(&self, strike: &StrikeDoc) -> StoreResult<()>;

    async fn strikes_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<StrikeDoc>>;

    /// An account's strikes below `before`, newest first.
    async fn strikes_of(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<StrikeDoc>>;

    /// Records the appeal of a strike that has none; false when it has
    /// one already (or there is no such strike), and nothing changes.
    async fn record_appeal(&self, strike_id: i64, appeal: &StrikeAppeal) -> StoreResult<bool>;

    /// Marks a strike overturned; false when it was already, or there is
    /// no such strike.
    async fn overturn_strike(&self, strike_id: i64, at: i64) -> StoreResult<bool>;

    /// Blanks what a report said (its comment, and the brief its case
    /// keeps of it): its reporter's account was deleted. Who reported, and
    /// how, stay for the case.
    async fn erase_report_comment(&self, report: &ReportDoc) -> StoreResult<()>;

    /// Marks lifted, at `at`, every strike of the account whose suspension
    /// lasts past `at` and is not lifted yet.
    async fn lift_strikes(&self, uid: i64, at: i64) -> StoreResult<()>;

    /// Erases (`Snapshot::erase`, and an appeal's text) the snapshots of up
    /// to `limit` closed cases below id `before`, of `account` if given,
    /// not erased yet; how many it erased.
    async fn erase_snapshots(
        &self,
        account: Option<i64>,
        before: i64,
        limit: usize,
    ) -> StoreResult<u64>;

    /// Deletes up to `limit` of an account's strikes; how many.
    async fn delete_strikes_of(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}
