//! Strikes and appeals: what a moderator's action does to the account it
//! is taken against, and how that account asks for it to be looked at
//! again.
//!
//! Every action but `dismiss` records a strike on the account, one per
//! case (its id is the case's, so a retried action records it once),
//! and tells the account (`strike`):
//! - `remove_content`: a post becomes its author's alone, marked
//!   `moderation: "removed"`; a comment is deleted (its author keeps the
//!   strike's snapshot of it);
//! - `warn`: nothing more;
//! - `suspend` for N days, `ban` without end: no sign-in, every session
//!   ended, and all the account's content gone from every reader while it
//!   lasts. The account has no card meanwhile, as an erased one, which is
//!   what every read already leaves out; the first read after the end
//!   finds it whole, so nothing needs undoing.
//!
//! The account sees its strikes (`GET /me/strikes`) and may appeal each
//! once within 20 days of it. An appeal is a case of its own:
//! dismissing it keeps the strike; `overturn` withdraws it, restoring a
//! removed post and lifting a suspension the strike alone held (only an
//! admin overturns a ban). An admin may also lift a suspension or ban
//! outright.

use serde::{Deserialize, Serialize};

use super::credentials::{credentials_changed, sign_out_everywhere};
use super::notifications::{notify, Event};
use super::read::loader::to_json;
use super::read::responses::Page;
use super::{with_fresh_id, Context};
use crate::domain::cursor::Cursor;
use crate::domain::report::{ReportCategory, TargetKind};
use crate::error::{AppError, AppResult};
use crate::ids::{now_ms, DAY_MS};
use crate::store::{
    AppealBrief, BlobKey, CaseDoc, CaseState, LiveChange, NotificationKind, Owner, PostBody,
    PostModeration, ReportTarget, Snapshot, StrikeAppeal, StrikeDoc, BANNED,
};

/// How long after a strike its account may appeal it.
pub const APPEAL_WINDOW_MS: i64 = 20 * DAY_MS;
pub const MAX_APPEAL_CHARS: usize = 1_000;
/// The longest suspension short of a ban.
pub const MAX_SUSPENSION_DAYS: i64 = 365;
/// An account's strikes read to work out how long it stays suspended once
/// one is overturned: more than any account collects before a ban.
const STRIKES_CONSIDERED: usize = 200;

/// What the strike does beyond being recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sanction {
    /// Remove the reported post or comment.
    pub remove: bool,
    /// Suspend the account until then (`BANNED`: without end).
    pub until: Option<i64>,
}

/// Applies the strike of closing `case` by `action`, then records it and
/// tells the account: the record last, so that a strike on record was
/// carried out. Safe to repeat (the strike's id is the case's).
pub(super) async fn strike(
    ctx: &Context,
    case: &CaseDoc,
    action: &str,
    sanction: Sanction,
    reason: Option<String>,
) -> AppResult<()> {
    if sanction.remove {
        remove_content(ctx, case.target).await?;
    }
    if let Some(until) = sanction.until {
        suspend(ctx, case.account, until).await?;
    }
    let strike = StrikeDoc {
        id: case.id,
        uid: case.account,
        action: action.to_string(),
        target: case.target,
        categories: case.categories.clone(),
        reason,
        snapshot: case.snapshot.clone(),
        until: sanction.until,
        at: case.closing.as_ref().map_or_else(now_ms, |c| c.at),
        appeal: None,
        overturned_at: None,
        lifted_at: None,
    };
    ctx.docs.insert_strike(&strike).await?;
    notify(
        ctx,
        Event {
            recipient: case.account,
            kind: NotificationKind::Strike,
            actor: 0,
            post_id: None,
            comment_id: None,
            report_id: None,
            case_id: None,
            strike_id: Some(strike.id),
            dedupe: format!("strike:{}", strike.id),
        },
    )
    .await;
    Ok(())
}

async fn remove_content(ctx: &Context, target: ReportTarget) -> AppResult<()> {
    match target.kind {
        TargetKind::Post => {
            set_post_moderation(ctx, target.id, Some(PostModeration::Removed)).await
        }
        TargetKind::Comment => match super::comments::live_comment(ctx, target.id).await {
            Ok(comment) => super::comments::remove_comment(ctx, &comment).await,
            // Deleted since it was reported: nothing left to remove.
            Err(AppError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        },
        TargetKind::User | TargetKind::Appeal => Ok(()),
    }
}

/// Holds, removes or restores a post, in the documents and then in the
/// live body every read judges it by; a restored one is fanned out. A post
/// deleted since is left alone.
pub(super) async fn set_post_moderation(
    ctx: &Context,
    post_id: i64,
    moderation: Option<PostModeration>,
) -> AppResult<()> {
    let Some(doc) = ctx.docs.set_post_moderation(post_id, moderation).await? else {
        return Ok(());
    };
    let body = PostBody::from(doc);
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::Post(post_id),
            vec![LiveChange::PutBlob(
                BlobKey::PostBody(post_id),
                to_json(&body)?,
            )],
        )
        .await;
    // Published (a hold approved, a removal overturned): pushed to the
    // timelines a held post was kept out of. Pushing it again where it is
    // already changes nothing.
    if body.moderation.is_none() {
        super::feed::fan_out::spawn_fan_out(ctx, &body);
    } else {
        super::stream::events::post_gone(ctx, post_id);
    }
    Ok(())
}

/// Suspends the account until `until` (or longer, if it already is) and
/// ends every session of it. The suspension is written first: from then
/// on the documents give the account no card, so whatever of the rest
/// fails, no session of it is honoured once its cached card goes.
async fn suspend(ctx: &Context, uid: i64, until: i64) -> AppResult<()> {
    ctx.docs.extend_suspension(uid, until).await?;
    credentials_changed(ctx, uid).await;
    if let Err(e) = sign_out_everywhere(ctx, uid).await {
        // Dishonoured already (no card); the sessions expire or go later.
        tracing::warn!(uid, error = %e, "a suspended account's sessions are left to expire");
    }
    Ok(())
}

/// Sets the account's suspension to `until` (0: none) and drops its card,
/// so the next read makes one again from the documents.
async fn set_suspension(ctx: &Context, uid: i64, until: i64) -> AppResult<bool> {
    let found = ctx.docs.set_suspension(uid, until).await?;
    credentials_changed(ctx, uid).await;
    Ok(found)
}

/// Lifts an account's suspension or ban outright (an admin's call); its
/// strikes stand.
pub async fn lift_suspension(ctx: &Context, admin: i64, uid: i64) -> AppResult<()> {
    let user = match ctx.docs.users_by_ids(&[uid]).await?.pop() {
        Some(u) if !u.is_erased() => u,
        _ => return Err(AppError::NotFound("user")),
    };
    let now = now_ms();
    if !user.is_suspended(now) {
        return Err(AppError::Conflict("the account is not suspended".into()));
    }
    // Its strikes are marked lifted first, so that no overturn of another
    // strike later finds one of them still holding the account.
    ctx.docs.lift_strikes(uid, now).await?;
    set_suspension(ctx, uid, 0).await?;
    super::staff::audit(
        ctx,
        admin,
        "account.lift_suspension",
        format!("user:{uid}"),
        "",
    )
    .await;
    Ok(())
}

/// Withdraws a strike: the posts it removed are restored, and the
/// account's suspension is shortened to what its other standing strikes
/// say (never lengthened: a suspension an admin lifted stays lifted). The
/// mark last, so a withdrawal on record was carried out.
pub(super) async fn overturn(ctx: &Context, strike: &StrikeDoc) -> AppResult<()> {
    let now = now_ms();
    let held = ctx
        .docs
        .cases_by_ids(&[strike.id])
        .await?
        .pop()
        .filter(|c| c.held.is_some());
    if let Some(case) = &held {
        // Every post of a case of held posts was removed with it.
        each_held_post(ctx, case, |post| restore_removed(ctx, post)).await?;
    } else if strike.action == "remove_content" && strike.target.kind == TargetKind::Post {
        set_post_moderation(ctx, strike.target.id, None).await?;
    }
    if strike.until.is_some() {
        let standing = standing_until(ctx, strike, now).await?;
        let current = ctx
            .docs
            .users_by_ids(&[strike.uid])
            .await?
            .pop()
            .map_or(0, |u| u.suspended_until);
        if standing < current {
            set_suspension(ctx, strike.uid, standing).await?;
            // A suspension closed while this read is made longer by its
            // own write (which only extends) if that write came after
            // this one; if it came before, it is read here and put back.
            let again = standing_until(ctx, strike, now).await?;
            if again > standing {
                ctx.docs.extend_suspension(strike.uid, again).await?;
                credentials_changed(ctx, strike.uid).await;
            }
        }
    }
    ctx.docs.overturn_strike(strike.id, now).await?;
    Ok(())
}

/// Posts read per store call when an action goes over a case's held
/// posts.
const HELD_BATCH: usize = 200;

/// Every post a closed case of held posts covers: its first (the target)
/// and every one recorded in it up to the count its closing saw
/// (`CaseClosing::held_count`), page by page, each given to `each`. The
/// posts recorded past that count (held as it closed, where the store
/// could not refuse the close) are returned, covered by nothing.
pub(super) async fn each_held_post<F, Fut>(
    ctx: &Context,
    case: &CaseDoc,
    mut each: F,
) -> AppResult<Vec<i64>>
where
    F: FnMut(i64) -> Fut,
    Fut: std::future::Future<Output = AppResult<()>>,
{
    if case.target.kind == TargetKind::Post {
        each(case.target.id).await?;
    }
    let seen = case.closing.as_ref().and_then(|c| c.held_count);
    let mut uncovered = Vec::new();
    let mut after = None;
    loop {
        let page = ctx
            .docs
            .held_posts_of_case(case.id, after, HELD_BATCH)
            .await?;
        for &(post, seq) in &page {
            if post == case.target.id {
                continue;
            }
            match (seq, seen) {
                (Some(place), Some(seen)) if place > seen => uncovered.push(post),
                _ => each(post).await?,
            }
        }
        if page.len() < HELD_BATCH {
            return Ok(uncovered);
        }
        after = page.last().map(|(post, _)| *post);
    }
}

/// Restores a post an action removed, unless something else became of it.
async fn restore_removed(ctx: &Context, post_id: i64) -> AppResult<()> {
    let removed = ctx
        .docs
        .posts_by_ids(&[post_id])
        .await?
        .pop()
        .is_some_and(|p| p.moderation == Some(PostModeration::Removed));
    if removed {
        set_post_moderation(ctx, post_id, None).await?;
    }
    Ok(())
}

/// Until when the account's suspensions other than `overturned`'s hold it
/// (0: none): its standing strikes, and the cases closed with a suspension
/// or ban whose strike is not written yet. The closing is what decides a
/// suspension (its strike is recorded only after its effects), so an
/// overturn racing one reads it there and does not cut it short.
async fn standing_until(ctx: &Context, overturned: &StrikeDoc, now: i64) -> AppResult<i64> {
    let uid = overturned.uid;
    let (strikes, closed) = tokio::try_join!(
        ctx.docs.strikes_of(uid, None, STRIKES_CONSIDERED),
        ctx.docs
            .cases_page(false, Some(uid), None, STRIKES_CONSIDERED),
    )?;
    let by_strikes = strikes
        .iter()
        .filter(|s| s.id != overturned.id && s.overturned_at.is_none() && s.lifted_at.is_none())
        .filter_map(|s| s.until);
    let by_closings = closed
        .iter()
        .filter(|c| c.id != overturned.id && !strikes.iter().any(|s| s.id == c.id))
        .filter_map(|c| c.closing.as_ref().and_then(|closing| closing.until));
    Ok(by_strikes
        .chain(by_closings)
        .filter(|until| *until > now)
        .max()
        .unwrap_or(0))
}

/// The standing strike that suspends the account longest, if any: what a
/// suspended account is told it may appeal.
pub async fn holding_strike(ctx: &Context, uid: i64) -> Option<i64> {
    let now = now_ms();
    let strikes = match ctx.docs.strikes_of(uid, None, STRIKES_CONSIDERED).await {
        Ok(strikes) => strikes,
        Err(e) => {
            tracing::debug!(error = %e, uid, "the suspending strike is not named");
            return None;
        }
    };
    strikes
        .into_iter()
        .filter(|s| {
            s.overturned_at.is_none() && s.lifted_at.is_none() && s.until.is_some_and(|u| u > now)
        })
        .max_by_key(|s| s.until)
        .map(|s| s.id)
}

/// The strike an appeal case is about.
pub(super) async fn appealed_strike(ctx: &Context, case: &CaseDoc) -> AppResult<StrikeDoc> {
    let id = case
        .appeal
        .as_ref()
        .map(|a| a.strike_id)
        .unwrap_or(case.target.id);
    ctx.docs
        .strikes_by_ids(&[id])
        .await?
        .pop()
        .ok_or(AppError::NotFound("strike"))
}

/// Tells the account its appeal was decided.
pub(super) async fn tell_appellant(ctx: &Context, case: &CaseDoc) {
    let Some(appeal) = &case.appeal else { return };
    notify(
        ctx,
        Event {
            recipient: case.account,
            kind: NotificationKind::AppealClosed,
            actor: 0,
            post_id: None,
            comment_id: None,
            report_id: None,
            case_id: None,
            strike_id: Some(appeal.strike_id),
            dedupe: format!("appeal_closed:{}", appeal.strike_id),
        },
    )
    .await;
}

/// Where an appeal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AppealState {
    Open,
    /// The strike was withdrawn.
    Accepted,
    /// The strike stands.
    Rejected,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppealView {
    pub text: String,
    pub at: i64,
    pub state: AppealState,
}

/// A strike as its account sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrikeView {
    pub id: i64,
    /// `remove_content`, `warn`, `suspend` or `ban`.
    pub action: String,
    pub target: ReportTarget,
    pub categories: Vec<ReportCategory>,
    /// What the moderator chose to tell the account, if anything.
    pub reason: Option<String>,
    /// The content struck, as it was reported.
    pub snapshot: Snapshot,
    /// The end of a suspension; absent for a ban and for the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    pub at: i64,
    pub appeal: Option<AppealView>,
    /// Until when it may be appealed; absent once it cannot be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appealable_until: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overturned_at: Option<i64>,
    /// When an admin lifted the suspension it held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifted_at: Option<i64>,
}

/// Strikes as their account sees them: one batched read of the appeals'
/// cases to tell where each stands.
async fn views(ctx: &Context, strikes: Vec<StrikeDoc>) -> AppResult<Vec<StrikeView>> {
    let case_ids: Vec<i64> = strikes
        .iter()
        .filter_map(|s| s.appeal.as_ref().map(|a| a.case_id))
        .collect();
    let cases = ctx.docs.cases_by_ids(&case_ids).await?;
    let now = now_ms();
    Ok(strikes
        .into_iter()
        .map(|s| {
            let appeal = s.appeal.as_ref().map(|a| AppealView {
                text: a.text.clone(),
                at: a.at,
                state: if s.overturned_at.is_some() {
                    AppealState::Accepted
                } else if cases
                    .iter()
                    .any(|c| c.id == a.case_id && c.state != CaseState::Open)
                {
                    AppealState::Rejected
                } else {
                    AppealState::Open
                },
            });
            let deadline = s.at + APPEAL_WINDOW_MS;
            StrikeView {
                id: s.id,
                action: s.action,
                target: s.target,
                categories: s.categories,
                reason: s.reason,
                snapshot: s.snapshot,
                until: s.until.filter(|u| *u != BANNED),
                at: s.at,
                appealable_until: (s.appeal.is_none()
                    && s.overturned_at.is_none()
                    && now < deadline)
                    .then_some(deadline),
                appeal,
                overturned_at: s.overturned_at,
                lifted_at: s.lifted_at,
            }
        })
        .collect())
}

/// The caller's strikes, newest first.
pub async fn mine(
    ctx: &Context,
    uid: i64,
    cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<Page<StrikeView>> {
    let mut docs = ctx
        .docs
        .strikes_of(uid, cursor.map(|c| c.0), limit + 1)
        .await?;
    let next_cursor = (docs.len() > limit).then(|| {
        docs.truncate(limit);
        docs.last().map(|s| Cursor::encode(s.id))
    });
    Ok(Page {
        items: views(ctx, docs).await?,
        next_cursor: next_cursor.flatten(),
        server_time: now_ms(),
    })
}

fn appeal_text_schema() -> utoipa::openapi::Object {
    crate::domain::text_schema(MAX_APPEAL_CHARS, true, false)
}

/// An appeal by an account that cannot sign in (suspended or banned): its
/// username and password stand for the session it has not got.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuspendedAppealRequest {
    /// A name no account can have is answered as a wrong password is.
    #[schema(schema_with = crate::domain::user::username_schema)]
    pub username: String,
    #[schema(schema_with = crate::service::credentials::password_attempt_schema)]
    pub password: String,
    /// The strike (the `strikeId` the refused sign-in named).
    #[serde(deserialize_with = "crate::domain::optional_id")]
    #[schema(value_type = i64, minimum = 1)]
    pub strike_id: Option<i64>,
    #[schema(schema_with = appeal_text_schema)]
    pub text: String,
}

/// Appeals a strike of an account that cannot sign in, checked as a
/// sign-in is (and counted against the same budgets). A signed-in account
/// appeals through `appeal`.
pub async fn appeal_while_suspended(
    ctx: &Context,
    req: SuspendedAppealRequest,
    origin: &crate::service::credentials::Origin,
) -> AppResult<StrikeView> {
    let strike_id = match req.strike_id {
        Some(id) if id > 0 => id,
        _ => return Err(AppError::invalid("strikeId", "must be a positive id")),
    };
    let user = super::credentials::check_password(ctx, &req.username, req.password, origin).await?;
    if !user.is_suspended(now_ms()) {
        return Err(AppError::unprocessable(
            "username",
            "this account may sign in: it appeals from its strikes (POST /me/strikes/{id}/appeal)",
        ));
    }
    appeal(ctx, user.uid, strike_id, AppealRequest { text: req.text }).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct AppealRequest {
    /// Why the strike should be withdrawn: 1 to 1,000 characters.
    #[schema(schema_with = appeal_text_schema)]
    pub text: String,
}

/// Appeals one of the caller's strikes: once, within 20 days. The appeal
/// lands in the moderation queue, and the moderators are told.
#[tracing::instrument(skip(ctx, req))]
pub async fn appeal(
    ctx: &Context,
    uid: i64,
    strike_id: i64,
    req: AppealRequest,
) -> AppResult<StrikeView> {
    let text = crate::domain::parse_text("text", &req.text, MAX_APPEAL_CHARS, true)?;
    let strike = ctx
        .docs
        .strikes_by_ids(&[strike_id])
        .await?
        .pop()
        .filter(|s| s.uid == uid)
        .ok_or(AppError::NotFound("strike"))?;
    if strike.appeal.is_some() {
        return Err(AppError::Conflict(
            "this strike was appealed already".into(),
        ));
    }
    if strike.overturned_at.is_some() {
        return Err(AppError::Conflict(
            "this strike was withdrawn already".into(),
        ));
    }
    let now = now_ms();
    if now >= strike.at + APPEAL_WINDOW_MS {
        return Err(AppError::unprocessable(
            "strike",
            "a strike may be appealed within 20 days of it",
        ));
    }
    let brief = AppealBrief {
        strike_id,
        text: text.clone(),
        action: strike.action.clone(),
        at: now,
    };
    // The case first, then the mark on the strike: a failure between
    // leaves a case that a retry finds (one open case per strike), never
    // a strike marked appealed with nothing in the queue.
    let case = with_fresh_id(|id| {
        let target = ReportTarget {
            kind: TargetKind::Appeal,
            id: strike_id,
        };
        let case = CaseDoc {
            categories: strike.categories.clone(),
            appeal: Some(brief.clone()),
            ..CaseDoc::opening(id, target, uid, strike.snapshot.clone(), now)
        };
        async move { ctx.docs.open_case(&case).await }
    })
    .await?;
    let marked = ctx
        .docs
        .record_appeal(
            strike_id,
            &StrikeAppeal {
                text,
                at: now,
                case_id: case.id,
            },
        )
        .await?;
    if !marked {
        return Err(AppError::Conflict(
            "this strike was appealed already".into(),
        ));
    }
    let staff_ctx = ctx.clone();
    tokio::spawn(async move {
        super::staff::tell_staff(&staff_ctx, case.id, uid, uid).await;
    });
    let fresh = ctx.docs.strikes_by_ids(&[strike_id]).await?;
    views(ctx, fresh)
        .await?
        .pop()
        .ok_or(AppError::NotFound("strike"))
}
