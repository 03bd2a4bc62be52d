//! What moderators do with reports: the queue (one case per reported
//! target, newest first), each case with every report in it, the content
//! as it was first reported and the account's earlier cases; closing an
//! case, one or up to 50 at once, which closes every report in it and
//! tells each reporter (`report_closed`); roles; and the append-only audit
//! log of every moderator and admin action.
//!
//! Moderators (and admins) handle reports; only admins set roles and the
//! service's published name, contact and rules (`GET /instance`).

use serde::{Deserialize, Serialize};

use super::notifications::{notify, Event};
use super::read::assemble::load_cards;
use super::read::paging::{fill_page, keep_where};
use super::read::responses::{unknown_user, Page};
use super::staff::{audit, moderates, Role};
use super::strikes::{self, Sanction, MAX_SUSPENSION_DAYS};
use super::{with_fresh_id, Context};
use crate::domain::cursor::Cursor;
use crate::domain::media::Rendition;
use crate::domain::report::{ReportCategory, TargetKind};
use crate::error::{AppError, AppResult};
use crate::ids::{now_ms, DAY_MS};
use crate::store::{
    AppealBrief, AuditDoc, CaseClosing, CaseDoc, CaseState, HeldBy, HeldPost, HeldPostDoc,
    NotificationKind, PostBody, PostModeration, ReportDoc, ReportTarget, Snapshot, UserCard,
    BANNED,
};

/// Characters of a moderator's note, and of what the reporters are told.
pub const MAX_NOTE_CHARS: usize = 1_000;
/// Cases one call may close.
pub const MAX_BULK: usize = 50;
/// Reports a single case shows per page.
pub const REPORTS_SHOWN: usize = 50;
/// Earlier closed cases a case shows of its account.
pub const HISTORY_SHOWN: usize = 20;
/// Reports closed per store call, and reporters told per batch.
const CLOSE_BATCH: usize = 500;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RoleRequest {
    pub role: Role,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoleState {
    pub uid: i64,
    pub role: Role,
}

/// Gives an account a role. An admin cannot change their own, so that
/// the last admin cannot leave the service without one by mistake.
#[tracing::instrument(skip(ctx))]
pub async fn set_role(ctx: &Context, admin: i64, uid: i64, role: Role) -> AppResult<RoleState> {
    if uid == admin {
        return Err(AppError::unprocessable(
            "uid",
            "an admin cannot change their own role",
        ));
    }
    let user = match ctx.docs.users_by_ids(&[uid]).await?.pop() {
        Some(u) if !u.is_erased() => u,
        _ => return Err(AppError::NotFound("user")),
    };
    if Role::of(&user) != role {
        if !ctx.docs.set_roles(uid, &role.roles()).await? {
            return Err(AppError::NotFound("user"));
        }
        audit(ctx, admin, "role.set", format!("user:{uid}"), role.name()).await;
    }
    Ok(RoleState { uid, role })
}

/// A report in a case.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemReport {
    pub id: i64,
    pub reporter: UserCard,
    pub category: ReportCategory,
    pub comment: String,
    pub post_ids: Vec<i64>,
    pub rules: Vec<u32>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// How a case was closed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClosingView {
    pub action: String,
    pub moderator: i64,
    pub note: String,
    /// What the reporters were told.
    pub shared: Option<String>,
    pub at: i64,
}

/// An earlier, closed case against the same account.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PastCase {
    pub id: i64,
    pub target: ReportTarget,
    pub state: CaseState,
    pub categories: Vec<ReportCategory>,
    pub reporter_count: u64,
    pub closing: Option<ClosingView>,
}

/// A strike on the case's account, as the case shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PastStrike {
    /// Also the id of the case that recorded it.
    pub id: i64,
    pub action: String,
    pub target: ReportTarget,
    pub categories: Vec<ReportCategory>,
    pub at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    pub appealed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overturned_at: Option<i64>,
}

/// A case as moderators see it: one reported target (or an author's held
/// posts, or an appeal), every report of it while open.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseView {
    pub id: i64,
    pub target: ReportTarget,
    pub account: UserCard,
    pub state: CaseState,
    /// Distinct accounts that reported it.
    pub reporter_count: u64,
    pub categories: Vec<ReportCategory>,
    /// The content as it was when first reported.
    pub snapshot: Snapshot,
    pub opened_at: i64,
    /// When the latest report came.
    pub reported_at: i64,
    /// In the list, the first 20 reports as filed (their posts and rules
    /// only on the case itself); on `GET /admin/reports/{id}`, a page of
    /// them as they stand, continued by `reportsCursor`.
    pub reports: Vec<ItemReport>,
    /// Set on a single case: its next page of reports is at
    /// `?cursor=reportsCursor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reports_cursor: Option<String>,
    /// Set on a single case: the account's earlier closed cases, newest
    /// first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<PastCase>>,
    /// Set on a single case: the account's strikes, newest first (the
    /// latest 20), overturned ones marked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strikes: Option<Vec<PastStrike>>,
    pub closing: Option<ClosingView>,
    /// Set on a case of posts a content filter held: every post of the
    /// account held while it is open (`count`; the newest in `posts`).
    /// `dismiss` publishes them all; any other action removes them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldBy>,
    /// Set on an appeal of a strike: `dismiss` keeps the strike,
    /// `overturn` withdraws it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appeal: Option<AppealBrief>,
}

fn closing_view(c: &CaseClosing) -> ClosingView {
    ClosingView {
        action: c.action.clone(),
        moderator: c.moderator,
        note: c.note.clone(),
        shared: c.shared.clone(),
        at: c.at,
    }
}

/// Which cases the queue lists.
#[derive(Debug, Default, Clone, Copy)]
pub struct QueueFilter {
    /// `None`: open ones.
    pub state: Option<CaseState>,
    pub category: Option<ReportCategory>,
    pub account: Option<i64>,
}

/// Cases, newest first: open ones unless `filter.state` asks for
/// closed ones, of one category or account if asked. Cases about the
/// moderator's own content or account are for others to handle.
pub async fn queue(
    ctx: &Context,
    moderator: i64,
    filter: QueueFilter,
    cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<Page<CaseView>> {
    let state = filter.state.unwrap_or(CaseState::Open);
    let open = state == CaseState::Open;
    let (cases, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move { Ok(ctx.docs.cases_page(open, filter.account, before, n).await?) },
        |batch: Vec<CaseDoc>, room| async move {
            Ok(keep_where(batch, room, |c: &CaseDoc| {
                c.state == state
                    && c.account != moderator
                    && filter.category.is_none_or(|k| c.categories.contains(&k))
            }))
        },
        |c| c.id,
    )
    .await?;
    let items = views_of(ctx, cases, None).await?;
    Ok(Page {
        items,
        next_cursor,
        server_time: now_ms(),
    })
}

/// Cases as moderators see them: each with the reports the case keeps a
/// brief of, or, for a single case, `reports` (a page of the full ones). The
/// cards of everyone named come in one batched read.
async fn views_of(
    ctx: &Context,
    cases: Vec<CaseDoc>,
    reports: Option<Vec<ReportDoc>>,
) -> AppResult<Vec<CaseView>> {
    let mut people: Vec<i64> = cases.iter().map(|c| c.account).collect();
    for c in &cases {
        people.extend(c.first_reports.iter().map(|r| r.reporter));
    }
    for r in reports.iter().flatten() {
        people.push(r.reporter);
    }
    people.sort_unstable();
    people.dedup();
    let cards = load_cards(ctx, &people).await?;
    let card = |uid: i64| {
        cards
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| unknown_user(uid))
    };
    let full: Option<Vec<ItemReport>> = reports.map(|rs| {
        rs.into_iter()
            .map(|r| ItemReport {
                id: r.id,
                reporter: card(r.reporter),
                category: r.category,
                comment: r.comment,
                post_ids: r.post_ids,
                rules: r.rules,
                created_at: r.created_at,
                updated_at: r.updated_at,
            })
            .collect()
    });
    let mut full = full;
    Ok(cases
        .into_iter()
        .map(|c| CaseView {
            id: c.id,
            target: c.target,
            account: card(c.account),
            state: c.state,
            reporter_count: c.reporter_count,
            categories: c.categories,
            snapshot: c.snapshot,
            opened_at: c.opened_at,
            reported_at: c.reported_at,
            reports: full.take().unwrap_or_else(|| {
                c.first_reports
                    .iter()
                    .map(|r| ItemReport {
                        id: r.id,
                        reporter: card(r.reporter),
                        category: r.category,
                        comment: r.comment.clone(),
                        post_ids: Vec::new(),
                        rules: Vec::new(),
                        created_at: r.created_at,
                        updated_at: r.created_at,
                    })
                    .collect()
            }),
            reports_cursor: None,
            history: None,
            strikes: None,
            closing: c.closing.as_ref().map(closing_view),
            held: c.held,
            appeal: c.appeal,
        })
        .collect())
}

/// A case this moderator may handle: 404 if there is none, 403 if
/// it is about them.
async fn case_for(ctx: &Context, moderator: i64, case_id: i64) -> AppResult<CaseDoc> {
    let case = ctx
        .docs
        .cases_by_ids(&[case_id])
        .await?
        .pop()
        .ok_or(AppError::NotFound("case"))?;
    if case.account == moderator {
        return Err(AppError::Forbidden(
            "a report about you is for another moderator",
        ));
    }
    Ok(case)
}

/// One case with a page of its reports (oldest first, after
/// `reports_cursor`) and its account's earlier closed cases.
pub async fn case(
    ctx: &Context,
    moderator: i64,
    case_id: i64,
    reports_cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<CaseView> {
    let case = case_for(ctx, moderator, case_id).await?;
    let (page, earlier, strikes) = tokio::try_join!(
        async {
            Ok::<_, AppError>(
                ctx.docs
                    .reports_of_case(case_id, reports_cursor.map(|c| c.0), limit + 1)
                    .await?,
            )
        },
        async {
            Ok::<_, AppError>(
                ctx.docs
                    .cases_page(false, Some(case.account), None, HISTORY_SHOWN + 1)
                    .await?,
            )
        },
        async {
            Ok::<_, AppError>(
                ctx.docs
                    .strikes_of(case.account, None, HISTORY_SHOWN)
                    .await?,
            )
        },
    )?;
    let mut page = page;
    let next = (page.len() > limit).then(|| {
        page.truncate(limit);
        page.last().map(|r| Cursor::encode(r.id))
    });
    let history = earlier
        .into_iter()
        .filter(|c| c.id != case_id)
        .take(HISTORY_SHOWN)
        .map(|c| PastCase {
            id: c.id,
            target: c.target,
            state: c.state,
            categories: c.categories,
            reporter_count: c.reporter_count,
            closing: c.closing.as_ref().map(closing_view),
        })
        .collect();
    let mut one = views_of(ctx, vec![case], Some(page)).await?;
    let mut view = one.pop().ok_or(AppError::NotFound("case"))?;
    view.reports_cursor = next.flatten();
    view.history = Some(history);
    view.strikes = Some(
        strikes
            .into_iter()
            .map(|s| PastStrike {
                id: s.id,
                action: s.action,
                target: s.target,
                categories: s.categories,
                at: s.at,
                until: s.until,
                appealed: s.appeal.is_some(),
                overturned_at: s.overturned_at,
            })
            .collect(),
    );
    Ok(view)
}

/// A post a case holds, as it is now: the case keeps a copy of its newest
/// few only (`held.posts`), and an action covers them all.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldPostNow {
    pub post_id: i64,
    pub snapshot: Snapshot,
}

/// Every post a case of held posts holds, oldest first, a page after
/// `cursor` at a time: what a moderator looks through before an action
/// that covers them all. 404 for a case that holds none.
pub async fn held_posts(
    ctx: &Context,
    moderator: i64,
    case_id: i64,
    cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<Page<HeldPostNow>> {
    let case = case_for(ctx, moderator, case_id).await?;
    if case.held.is_none() {
        return Err(AppError::NotFound("held posts"));
    }
    let mut ids: Vec<i64> = ctx
        .docs
        .held_posts_of_case(case_id, cursor.map(|c| c.0), limit + 1)
        .await?
        .into_iter()
        .map(|(post, _)| post)
        .collect();
    // A case opened before every held post was recorded holds its target.
    if ids.is_empty() && cursor.is_none() && case.target.kind == TargetKind::Post {
        ids.push(case.target.id);
    }
    let next = (ids.len() > limit).then(|| {
        ids.truncate(limit);
        ids.last().map(|id| Cursor::encode(*id))
    });
    let account = [case.account];
    let (docs, mut cards) = tokio::try_join!(
        async { Ok::<_, AppError>(ctx.docs.posts_by_ids(&ids).await?) },
        load_cards(ctx, &account),
    )?;
    let author_name = cards
        .remove(&case.account)
        .map(|c| c.nick_name)
        .unwrap_or_default();
    let now = now_ms();
    let mut docs: std::collections::HashMap<i64, _> = docs.into_iter().map(|d| (d.id, d)).collect();
    // A post its author deleted since is not among them.
    let items = ids
        .iter()
        .filter_map(|id| docs.remove(id))
        .map(|doc| {
            let post_id = doc.id;
            let body = PostBody::from(doc);
            let mut snapshot = super::reports::post_snapshot(&body, now);
            // Held, the post and its pictures are there to look at.
            snapshot.picture_urls.extend(
                body.media
                    .iter()
                    .map(|m| super::media::url_of(ctx.media.base_url(), m, Rendition::Preview)),
            );
            snapshot.author_name = author_name.clone();
            HeldPostNow { post_id, snapshot }
        })
        .collect();
    Ok(Page {
        items,
        next_cursor: next.flatten(),
        server_time: now,
    })
}

/// What a moderator does with a case. Every action but `dismiss`
/// and `overturn` records a strike on the account (`service::strikes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Nothing wrong: the reports are closed as dismissed; a held post is
    /// published; an appeal is turned down and its strike stands.
    Dismiss,
    /// The post or comment is gone from every read but its author's.
    RemoveContent,
    /// The account is told; nothing else changes.
    Warn,
    /// No sign-in, sessions ended and all content hidden for `days`.
    Suspend,
    /// Suspended until an admin lifts it.
    Ban,
    /// On an appeal: the strike is withdrawn (a ban's by an admin only).
    Overturn,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Dismiss => "dismiss",
            Action::RemoveContent => "remove_content",
            Action::Warn => "warn",
            Action::Suspend => "suspend",
            Action::Ban => "ban",
            Action::Overturn => "overturn",
        }
    }
    fn closes_as(self) -> CaseState {
        match self {
            Action::Dismiss => CaseState::Dismissed,
            _ => CaseState::Actioned,
        }
    }
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionRequest {
    pub action: Action,
    /// Why, for the audit log and the other moderators: at most 1,000
    /// characters.
    #[serde(default)]
    #[schema(schema_with = note_schema)]
    pub note: String,
    /// Tell the reporters the note as the outcome (and the struck account
    /// as the reason); otherwise they learn only that it was closed and
    /// how.
    #[serde(default)]
    pub share_with_reporter: bool,
    /// For `suspend`: 1 to 365 days.
    #[serde(default, deserialize_with = "crate::domain::optional_whole_number")]
    #[schema(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
    /// On a case of held posts: its `held.count` as the moderator saw it,
    /// which every action on one needs (422 without). The action covers
    /// every post the case holds, so it is refused (409) when more were
    /// held since.
    #[serde(default, deserialize_with = "crate::domain::optional_whole_number")]
    #[schema(value_type = Option<i64>, minimum = 1)]
    pub held_count: Option<i64>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkActionRequest {
    /// 1 to 50 cases.
    #[serde(deserialize_with = "crate::domain::id_list")]
    #[schema(value_type = Vec<i64>, min_items = 1, max_items = 50)]
    pub ids: Vec<i64>,
    #[serde(flatten)]
    pub act: ActionRequest,
    /// For each case of held posts among `ids`, its `held.count` as the
    /// moderator saw it (`heldCount` of a single action; that field is
    /// refused here).
    #[serde(default)]
    #[schema(max_items = 50)]
    pub held_counts: Vec<HeldCount>,
}

/// A case of held posts and how many it held when the moderator looked.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
pub struct HeldCount {
    #[serde(deserialize_with = "crate::domain::whole_number_field")]
    #[schema(minimum = 1)]
    pub id: i64,
    #[serde(deserialize_with = "crate::domain::whole_number_field")]
    #[schema(minimum = 1)]
    pub count: i64,
}

/// One case's answer to a bulk action.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkResult {
    pub id: i64,
    /// 200 closed, 403 a report about the caller (or a ban's appeal, for
    /// a moderator), 404 no such case, 409 closed already, 422 the action
    /// does not fit the case, 503 a store did not answer (try it again).
    pub status: u16,
}

fn note_schema() -> utoipa::openapi::Object {
    crate::domain::text_schema(MAX_NOTE_CHARS, false, false)
}

fn checked_note(act: &ActionRequest) -> AppResult<String> {
    let note = crate::domain::parse_text("note", &act.note, MAX_NOTE_CHARS, false)?;
    if act.share_with_reporter && note.is_empty() {
        return Err(AppError::unprocessable(
            "note",
            "a note is needed to share one with the reporters",
        ));
    }
    match (act.action, act.days) {
        (Action::Suspend, Some(d)) if (1..=MAX_SUSPENSION_DAYS).contains(&d) => {}
        (Action::Suspend, Some(_)) => {
            return Err(AppError::invalid(
                "days",
                format!("1 to {MAX_SUSPENSION_DAYS} days"),
            ))
        }
        (Action::Suspend, None) => {
            return Err(AppError::unprocessable(
                "days",
                "a suspension needs its days",
            ))
        }
        (_, Some(_)) => {
            return Err(AppError::unprocessable(
                "days",
                "only a suspension has days",
            ))
        }
        (_, None) => {}
    }
    Ok(note)
}

/// The held posts an action on `case` covers: all it holds, which must be
/// as many as the moderator saw (`held_count`). `None` for a case that
/// holds none.
fn held_covered(seen: Option<i64>, case: &CaseDoc) -> AppResult<Option<u64>> {
    if seen.is_some_and(|n| n < 1) {
        return Err(AppError::invalid("heldCount", "a count of at least 1"));
    }
    let Some(held) = &case.held else {
        return match seen {
            Some(_) => Err(AppError::unprocessable(
                "heldCount",
                "only a case of held posts has a count of them",
            )),
            None => Ok(None),
        };
    };
    match seen {
        None => Err(AppError::unprocessable(
            "heldCount",
            "an action on a case of held posts covers every post it holds: send heldCount, how many you saw",
        )),
        Some(seen) if u64::try_from(seen).ok() != Some(held.count) => {
            Err(AppError::Conflict(format!(
                "the case holds {} posts now, not {seen}: look at it again",
                held.count
            )))
        }
        _ => Ok(Some(held.count)),
    }
}

/// 422 when the action does not fit the case: removing an account, or
/// anything but `dismiss` and `overturn` on an appeal, and `overturn` on
/// anything else.
fn fits(action: Action, case: &CaseDoc) -> AppResult<()> {
    let appeal = case.target.kind == TargetKind::Appeal;
    let refused = match action {
        Action::Dismiss => None,
        Action::Overturn if !appeal => Some("only an appeal is overturned"),
        Action::Overturn => None,
        _ if appeal => Some("an appeal is dismissed or overturned"),
        Action::RemoveContent if case.target.kind == TargetKind::User => {
            Some("an account is warned, suspended or banned, not removed")
        }
        _ => None,
    };
    match refused {
        Some(why) => Err(AppError::unprocessable("action", why)),
        None => Ok(()),
    }
}

/// Closes one case: every report in it, the reporters told.
#[tracing::instrument(skip(ctx, act))]
pub async fn act(
    ctx: &Context,
    moderator: i64,
    case_id: i64,
    act: &ActionRequest,
) -> AppResult<CaseView> {
    let note = checked_note(act)?;
    close(ctx, moderator, case_id, act, act.held_count, &note).await?;
    case(ctx, moderator, case_id, None, REPORTS_SHOWN).await
}

/// Closes up to 50 cases alike, each answered on its own.
pub async fn act_in_bulk(
    ctx: &Context,
    moderator: i64,
    req: &BulkActionRequest,
) -> AppResult<Vec<BulkResult>> {
    if req.ids.is_empty() || req.ids.len() > MAX_BULK {
        return Err(AppError::invalid("ids", format!("1 to {MAX_BULK} cases")));
    }
    if req.held_counts.len() > MAX_BULK {
        return Err(AppError::invalid(
            "heldCounts",
            format!("at most {MAX_BULK}, one per case"),
        ));
    }
    if let Some(i) = req.held_counts.iter().position(|h| h.id < 1 || h.count < 1) {
        return Err(AppError::invalid(
            format!("heldCounts[{i}]"),
            "a case's id and a count of at least 1",
        ));
    }
    if req.act.held_count.is_some() {
        return Err(AppError::unprocessable(
            "heldCount",
            "in a bulk action each case's count is in heldCounts",
        ));
    }
    let note = checked_note(&req.act)?;
    let mut ids = req.ids.clone();
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let seen = req.held_counts.iter().find(|h| h.id == id).map(|h| h.count);
        let status = match close(ctx, moderator, id, &req.act, seen, &note).await {
            Ok(()) => 200,
            Err(AppError::NotFound(_)) => 404,
            Err(AppError::Conflict(_)) => 409,
            Err(AppError::Forbidden(_)) => 403,
            Err(AppError::Unprocessable { .. }) => 422,
            // Those before it are closed: say which were not, and why.
            Err(e) => {
                tracing::warn!(error = %e, id, "a bulk action could not close a case");
                503
            }
        };
        out.push(BulkResult { id, status });
    }
    Ok(out)
}

async fn close(
    ctx: &Context,
    moderator: i64,
    case_id: i64,
    act: &ActionRequest,
    held_seen: Option<i64>,
    note: &str,
) -> AppResult<()> {
    let case = case_for(ctx, moderator, case_id).await?;
    if case.state != CaseState::Open {
        return Err(AppError::Conflict("this case is closed already".into()));
    }
    fits(act.action, &case)?;
    let held_count = held_covered(held_seen, &case)?;
    authorize(ctx, moderator, &case, act.action).await?;
    let at = now_ms();
    let closing = CaseClosing {
        held_count,
        state: act.action.closes_as(),
        action: act.action.name().into(),
        moderator,
        note: note.to_string(),
        shared: act.share_with_reporter.then(|| note.to_string()),
        at,
        until: match act.action {
            Action::Suspend => {
                let days = act.days.unwrap_or(1);
                Some(at.saturating_add(days.saturating_mul(DAY_MS)))
            }
            Action::Ban => Some(BANNED),
            _ => None,
        },
    };
    // The case is claimed first, in one write that only an open case takes:
    // of two moderators acting at once, one acts and the other is told 409,
    // and what the case says was done is what is done. The effects follow,
    // each safe to repeat; any a failure leaves undone, the sweep finishes
    // (`finish_unfinished`) from what the closing recorded.
    // The store closes it only while it holds `held_count` posts, so that
    // a post held between the read above and the close is not covered by
    // an action no one took on it.
    let Some(closed) = ctx.docs.close_case(case.id, &closing).await? else {
        return Err(AppError::Conflict(
            "this case is closed already, or holds posts held since: look at it again".into(),
        ));
    };
    audit(
        ctx,
        moderator,
        &format!("report.{}", act.action.name()),
        format!("case:{case_id}"),
        note,
    )
    .await;
    carry_out(ctx, &closed).await?;
    // In the background: a case may hold many reports, and the answer
    // should not wait on a notification each. Each reporter's report shows
    // as closed at once (`GET /me/reports`).
    let ctx = ctx.clone();
    tokio::spawn(async move { tell_everyone(&ctx, &closed).await });
    Ok(())
}

/// 403 for what only an admin does: overturning a ban, suspending or
/// banning a moderator or admin (or two moderators could shut each other
/// out).
async fn authorize(ctx: &Context, moderator: i64, case: &CaseDoc, action: Action) -> AppResult<()> {
    let admin_only = match action {
        Action::Overturn => {
            let strike = strikes::appealed_strike(ctx, case).await?;
            (strike.action == Action::Ban.name()).then_some("only an admin overturns a ban")
        }
        Action::Suspend | Action::Ban => ctx
            .docs
            .users_by_ids(&[case.account])
            .await?
            .pop()
            .is_some_and(|u| moderates(&u))
            .then_some("only an admin suspends or bans a moderator or admin"),
        _ => None,
    };
    match admin_only {
        Some(why) => super::staff::require_admin(ctx, moderator)
            .await
            .map_err(|_| AppError::Forbidden(why)),
        None => Ok(()),
    }
}

/// What a closed case's action does beyond closing it, from what its
/// closing recorded: every step safe to repeat, so the sweep may finish
/// what a failure cut short.
async fn carry_out(ctx: &Context, case: &CaseDoc) -> AppResult<()> {
    let Some(closing) = &case.closing else {
        return Ok(());
    };
    // A deleted account's content stayed in the case only while it was
    // open; nothing is done to an account that is gone.
    let account_gone = ctx
        .docs
        .users_by_ids(&[case.account])
        .await?
        .pop()
        .is_none_or(|u| u.is_erased());
    if account_gone {
        ctx.docs
            .erase_snapshots(Some(case.account), i64::MAX, CLOSE_BATCH)
            .await?;
        return Ok(());
    }
    // Content a filter held is published by a dismissal, and removed by
    // any action that finds fault: all of it, not only what the case shows.
    let held = case.held.is_some();
    match closing.action.as_str() {
        "dismiss" if held => {
            let uncovered =
                strikes::each_held_post(ctx, case, |post| release_hold(ctx, post)).await?;
            hold_again(ctx, case, uncovered).await
        }
        "dismiss" => Ok(()),
        "overturn" => {
            let strike = strikes::appealed_strike(ctx, case).await?;
            strikes::overturn(ctx, &strike).await
        }
        action => {
            if held {
                let uncovered =
                    strikes::each_held_post(ctx, case, |post| remove_held(ctx, post)).await?;
                hold_again(ctx, case, uncovered).await?;
            }
            let sanction = Sanction {
                remove: !held && action == Action::RemoveContent.name(),
                until: closing.until,
            };
            strikes::strike(ctx, case, action, sanction, closing.shared.clone()).await
        }
    }
}

/// Tells everyone a closed case concerns, then marks it finished. Each
/// notification is one per recipient and case, so telling twice (this and
/// the sweep at once) tells once.
async fn tell_everyone(ctx: &Context, case: &CaseDoc) {
    strikes::tell_appellant(ctx, case).await;
    if !tell_reporters(ctx, case.id).await {
        return;
    }
    if let Err(e) = ctx.docs.mark_finished(case.id).await {
        tracing::debug!(error = %e, case_id = case.id, "the sweep will finish it again");
    }
}

/// How long a closed case's own request has to finish it before the sweep
/// does.
pub const FINISH_GRACE_MS: i64 = 60_000;

/// Finishes cases closed over `grace_ms` ago and not marked finished: their
/// effects (again: each is safe to repeat), then the telling. An instance
/// stopped halfway, or a store failed.
pub async fn finish_unfinished(ctx: &Context, grace_ms: i64) -> AppResult<()> {
    let unfinished = ctx
        .docs
        .unfinished_cases(now_ms() - grace_ms, CLOSE_BATCH)
        .await?;
    for case in ctx.docs.cases_by_ids(&unfinished).await? {
        match carry_out(ctx, &case).await {
            Ok(()) => tell_everyone(ctx, &case).await,
            Err(e) => {
                tracing::warn!(error = %e, case_id = case.id, "a closed case's action is still not done")
            }
        }
    }
    Ok(())
}

/// Holds the posts a closed case recorded but its action did not cover in
/// the author's next case, where a moderator sees them: they were held as
/// it closed, after the moderator looked.
async fn hold_again(ctx: &Context, case: &CaseDoc, posts: Vec<i64>) -> AppResult<()> {
    let Some(by) = &case.held else {
        return Ok(());
    };
    for doc in ctx.docs.posts_by_ids(&posts).await? {
        if doc.moderation != Some(PostModeration::Held) {
            continue;
        }
        tracing::info!(
            post = doc.id,
            case_id = case.id,
            "a post held as its case closed is held in the next"
        );
        ctx.docs.forget_held_post(doc.id).await?;
        let body = PostBody::from(doc);
        hold_post(ctx, &body, HeldBy::by(by.filter, by.reason.clone())).await?;
    }
    Ok(())
}

/// Publishes a post a filter held, unless something else became of it.
async fn release_hold(ctx: &Context, post_id: i64) -> AppResult<()> {
    let still_held = ctx
        .docs
        .posts_by_ids(&[post_id])
        .await?
        .pop()
        .is_some_and(|p| p.moderation == Some(PostModeration::Held));
    if still_held {
        strikes::set_post_moderation(ctx, post_id, None).await?;
    }
    Ok(())
}

/// Puts a post that a `hold` filter matched in the queue (it is stored
/// already, held: its author's alone): in its author's one open case of
/// held posts, so that however many a filter holds, the staff see one
/// case and are told once, when it opens. Safe to repeat: a post is held
/// in one case.
pub async fn hold_post(ctx: &Context, body: &PostBody, held: HeldBy) -> AppResult<()> {
    let now = now_ms();
    let mut snapshot = super::reports::post_snapshot(body, now);
    snapshot
        .picture_urls
        .extend(super::media::evidence::keep(ctx, &body.media).await);
    snapshot.author_name = load_cards(ctx, &[body.author_uid])
        .await?
        .remove(&body.author_uid)
        .map(|c| c.nick_name)
        .unwrap_or_default();
    let author = body.author_uid;
    let shown = HeldPost {
        post_id: body.id,
        filter: held.filter,
        reason: held.reason.clone(),
        snapshot: snapshot.clone(),
    };
    // A case can close between being found open and the post landing in
    // it; the post is then held in the author's next case, as a report is.
    for _ in 0..3 {
        let tried = std::sync::Mutex::new(Vec::new());
        let case = with_fresh_id(|id| {
            if let Ok(mut t) = tried.lock() {
                t.push(id);
            }
            let target = ReportTarget {
                kind: TargetKind::Post,
                id: body.id,
            };
            let case = CaseDoc {
                held: Some(held.clone()),
                ..CaseDoc::opening(id, target, author, snapshot.clone(), now)
            };
            async move { ctx.docs.open_case(&case).await }
        })
        .await?;
        let record = HeldPostDoc::new(body.id, case.id, author, now);
        let Some(new) = ctx.docs.hold_in_case(&record, &shown).await? else {
            continue;
        };
        let opened_here = tried.lock().is_ok_and(|t| t.contains(&case.id));
        if opened_here && new {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                super::staff::tell_staff(&ctx, case.id, author, author).await;
            });
        }
        return Ok(());
    }
    Err(AppError::Overloaded(
        "the author's case of held posts closed as posts were held",
    ))
}

/// Removes a post a filter held, unless something else became of it.
async fn remove_held(ctx: &Context, post_id: i64) -> AppResult<()> {
    let still_held = ctx
        .docs
        .posts_by_ids(&[post_id])
        .await?
        .pop()
        .is_some_and(|p| p.moderation == Some(PostModeration::Held));
    if still_held {
        strikes::set_post_moderation(ctx, post_id, Some(PostModeration::Removed)).await?;
    }
    Ok(())
}

/// A `report_closed` to each reporter of a closed case, page by page;
/// false when a page could not be read.
async fn tell_reporters(ctx: &Context, case_id: i64) -> bool {
    let mut after = None;
    loop {
        let page = match ctx.docs.reports_of_case(case_id, after, CLOSE_BATCH).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = %e, case_id, "could not tell every reporter");
                return false;
            }
        };
        for r in &page {
            notify(
                ctx,
                Event {
                    recipient: r.reporter,
                    kind: NotificationKind::ReportClosed,
                    actor: 0,
                    post_id: None,
                    comment_id: None,
                    report_id: Some(r.id),
                    case_id: None,
                    strike_id: None,
                    dedupe: format!("report_closed:{}", r.id),
                },
            )
            .await;
        }
        if page.len() < CLOSE_BATCH {
            return true;
        }
        after = page.last().map(|r| r.id);
    }
}

/// One entry of the audit log as admins read it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: i64,
    /// Who did it (an admin or a moderator).
    pub actor: i64,
    /// `report.dismiss`, `report.ban`, `role.set`, `filter.create`, …
    pub action: String,
    /// What it was done to (`case:ID`, `user:UID`, `filter:ID`).
    pub subject: String,
    pub note: String,
    pub at: i64,
}

impl From<AuditDoc> for AuditEntry {
    fn from(e: AuditDoc) -> Self {
        AuditEntry {
            id: e.id,
            actor: e.actor,
            action: e.action,
            subject: e.subject,
            note: e.note,
            at: e.at,
        }
    }
}

/// The audit log, newest first.
pub async fn audit_log(
    ctx: &Context,
    cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<Page<AuditEntry>> {
    let (items, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move { Ok(ctx.docs.audit_page(before, n).await?) },
        |batch: Vec<AuditDoc>, room| async move { Ok(keep_where(batch, room, |_| true)) },
        |e| e.id,
    )
    .await?;
    Ok(Page {
        items: items.into_iter().map(AuditEntry::from).collect(),
        next_cursor,
        server_time: now_ms(),
    })
}
