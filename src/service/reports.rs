//! Reports: a user tells the moderators about a post, a comment or an
//! account. Only what the reporter may see can be reported (anything else
//! answers as if it did not exist), never oneself, within a daily budget
//! (`MOMENTS_RATE_REPORTS`). Reports of one target are grouped into one
//! moderation case while it is open, which keeps a snapshot of the
//! content as it was first reported (`moderation`). Reporting the same
//! target again while the report is open updates it.

use serde::Serialize;

use super::comments::visible_comment;
use super::rate_limits::{enforce, report_budgets};
use super::read::assemble::{load_cards, visible_bodies, visible_post};
use super::read::paging::{fill_page, keep_where};
use super::read::responses::Page;
use super::social::visible_user;
use super::{with_fresh_id, Context};
use crate::domain::cursor::Cursor;
use crate::domain::media::Media;
use crate::domain::report::{NewReport, ReportCategory, ReportedKind};
use crate::error::{AppError, AppResult};
use crate::ids::{now_ms, timestamp_of};
use crate::store::{
    CaseDoc, CaseState, LiveRead, PostBody, ReportDoc, ReportTarget, Snapshot, StoreError,
    SNAPSHOT_TEXT_MAX,
};

/// A report as its reporter sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportView {
    pub id: i64,
    pub target: ReportTarget,
    pub category: ReportCategory,
    pub comment: String,
    pub post_ids: Vec<i64>,
    pub rules: Vec<u32>,
    /// `open` until a moderator closes it: `actioned` or `dismissed`.
    pub state: CaseState,
    /// What the moderator chose to tell the reporter, once closed.
    pub outcome: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub closed_at: Option<i64>,
}

impl ReportView {
    /// A report as it stands: open, or closed with its case.
    fn of(r: ReportDoc, case: &CaseDoc) -> Self {
        let closing = case.closing.as_ref();
        ReportView {
            id: r.id,
            target: r.target,
            category: r.category,
            comment: r.comment,
            post_ids: r.post_ids,
            rules: r.rules,
            state: case.state,
            outcome: closing.and_then(|c| c.shared.clone()),
            created_at: r.created_at,
            updated_at: r.updated_at,
            closed_at: closing.map(|c| c.at),
        }
    }
}

/// What `file` answers: the report, and whether this call made it (201)
/// or updated the reporter's open one (200).
pub struct Filed {
    pub report: ReportView,
    pub new: bool,
}

fn cut(text: &str) -> String {
    text.chars().take(SNAPSHOT_TEXT_MAX).collect()
}

/// A post as a snapshot, its author's name left for the caller to fill.
pub(super) fn post_snapshot(body: &PostBody, now: i64) -> Snapshot {
    Snapshot {
        author: body.author_uid,
        author_name: String::new(),
        text: cut(&body.content),
        picture_urls: body.picture_urls.clone(),
        visibility: Some(body.visibility),
        post_id: None,
        createtime: body.createtime,
        taken_at: now,
        erased: false,
    }
}

/// The reported thing as the reporter may see it now, as a snapshot, and
/// the uploaded pictures it has (kept in the snapshot once the report is
/// known to be filed: shrinking them is the costly part).
async fn target_snapshot(
    ctx: &Context,
    reporter: i64,
    report: &NewReport,
) -> AppResult<(Snapshot, Vec<Media>)> {
    let now = now_ms();
    let mut media = Vec::new();
    let (author, mut snapshot) = match report.target_type {
        ReportedKind::Post => {
            let body = visible_post(ctx, report.target_id, Some(reporter))
                .await?
                .body;
            let snapshot = post_snapshot(&body, now);
            media = body.media;
            (body.author_uid, snapshot)
        }
        ReportedKind::Comment => {
            let (comment, post) = visible_comment(ctx, report.target_id, Some(reporter)).await?;
            let snapshot = Snapshot {
                author: comment.author_uid,
                author_name: String::new(),
                text: cut(&comment.content),
                picture_urls: Vec::new(),
                visibility: Some(post.body.visibility),
                post_id: Some(comment.post_id),
                createtime: comment.createtime,
                taken_at: now,
                erased: false,
            };
            (comment.author_uid, snapshot)
        }
        ReportedKind::User => {
            let (card, _) = visible_user(ctx, report.target_id, Some(reporter)).await?;
            let snapshot = Snapshot {
                author: card.uid,
                author_name: card.nick_name.clone(),
                text: cut(&card.nick_name),
                picture_urls: [card.head_img.clone()]
                    .into_iter()
                    .filter(|h| !h.is_empty())
                    .collect(),
                visibility: None,
                post_id: None,
                createtime: 0,
                taken_at: now,
                erased: false,
            };
            (card.uid, snapshot)
        }
    };
    if author == reporter {
        return Err(AppError::unprocessable(
            "targetId",
            "you cannot report yourself or what you made",
        ));
    }
    if snapshot.author_name.is_empty() {
        snapshot.author_name = load_cards(ctx, &[author])
            .await?
            .remove(&author)
            .map(|c| c.nick_name)
            .unwrap_or_default();
    }
    Ok((snapshot, media))
}

/// Files a report, or updates the reporter's open one of the same target.
#[tracing::instrument(skip(ctx, report))]
pub async fn file(ctx: &Context, reporter: i64, report: NewReport) -> AppResult<Filed> {
    let budgets = report_budgets(ctx.settings.rate_limits.as_ref(), reporter);
    enforce(ctx, &budgets).await?;
    let filed = file_within_budget(ctx, reporter, report).await;
    // A refused report files nothing, and so spends nothing of the budget.
    if let Err(
        AppError::NotFound(_)
        | AppError::Unprocessable { .. }
        | AppError::InvalidInput { .. }
        | AppError::Conflict(_),
    ) = &filed
    {
        let refund = LiveRead {
            limits: crate::service::rate_limits::refunds(&budgets),
            ..Default::default()
        };
        if let Err(e) = ctx.live.read(&refund).await {
            tracing::debug!(error = %e, "a refused report stays counted");
        }
    }
    filed
}

async fn file_within_budget(ctx: &Context, reporter: i64, report: NewReport) -> AppResult<Filed> {
    if let Some(&highest) = report.rules.iter().max() {
        let known = super::instance::instance(ctx).await?.rules.len();
        if highest as usize > known {
            let at = report.rules.iter().position(|r| *r == highest).unwrap_or(0);
            return Err(AppError::unprocessable(
                format!("rules[{at}]"),
                format!("the service has {known} rules (GET /instance)"),
            ));
        }
    }
    let (mut snapshot, media) = target_snapshot(ctx, reporter, &report).await?;
    let account = snapshot.author;
    if !report.post_ids.is_empty() {
        let visible = visible_bodies(ctx, &report.post_ids, Some(reporter)).await?;
        if let Some(bad) = report
            .post_ids
            .iter()
            .find(|p| visible.get(p).is_none_or(|b| b.author_uid != account))
        {
            return Err(AppError::unprocessable(
                "postIds",
                format!("post {bad} is not one of the reported account's that you may see"),
            ));
        }
    }
    snapshot
        .picture_urls
        .extend(super::media::evidence::keep(ctx, &media).await);
    let target = ReportTarget {
        kind: report.target_type.into(),
        id: report.target_id,
    };
    let now = now_ms();
    // A case can close between being found open and the report landing in
    // it; the report is then filed in the target's next case. Three tries:
    // a case closes once, and a new one is not closed that fast twice.
    for _ in 0..3 {
        let tried = std::sync::Mutex::new(Vec::new());
        let case = with_fresh_id(|id| {
            if let Ok(mut t) = tried.lock() {
                t.push(id);
            }
            let case = CaseDoc::opening(id, target, account, snapshot.clone(), now);
            async move { ctx.docs.open_case(&case).await }
        })
        .await?;
        let filed = with_fresh_id(|id| {
            let doc = ReportDoc {
                comment: report.comment.clone(),
                post_ids: report.post_ids.clone(),
                rules: report.rules.clone(),
                created_at: timestamp_of(id),
                ..ReportDoc::new(id, reporter, target, account, case.id, report.category, now)
            };
            async move { ctx.docs.file_report(&doc).await }
        })
        .await
        .map_err(|e| match e {
            StoreError::Duplicate(_) => AppError::Conflict("report filed twice at once".into()),
            other => other.into(),
        })?;
        if let Some((stored, new)) = filed {
            let opened_here = tried.lock().is_ok_and(|t| t.contains(&case.id));
            if opened_here && new {
                let ctx = ctx.clone();
                let (case_id, account) = (case.id, case.account);
                tokio::spawn(async move {
                    super::staff::tell_staff(&ctx, case_id, account, reporter).await
                });
            }
            return Ok(Filed {
                report: ReportView::of(stored, &case),
                new,
            });
        }
    }
    Err(AppError::Overloaded(
        "reports of a target closed as they were filed",
    ))
}
/// The reporter's reports, newest first, with their state and outcome.
pub async fn mine(
    ctx: &Context,
    reporter: i64,
    cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<Page<ReportView>> {
    let (docs, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move { Ok(ctx.docs.reports_by_reporter(reporter, before, n).await?) },
        |batch: Vec<ReportDoc>, room| async move { Ok(keep_where(batch, room, |_| true)) },
        |r| r.id,
    )
    .await?;
    // Each report's state is its case's: one batched read for the page.
    let mut case_ids: Vec<i64> = docs.iter().map(|r| r.case_id).collect();
    case_ids.sort_unstable();
    case_ids.dedup();
    let cases: std::collections::HashMap<i64, CaseDoc> = ctx
        .docs
        .cases_by_ids(&case_ids)
        .await?
        .into_iter()
        .map(|c| (c.id, c))
        .collect();
    Ok(Page {
        items: docs
            .into_iter()
            .filter_map(|r| {
                let case = cases.get(&r.case_id)?;
                Some(ReportView::of(r, case))
            })
            .collect(),
        next_cursor,
        server_time: now_ms(),
    })
}
