//! The push half of the home feed: a new post offered to its author's
//! timeline and to those of the followers who were active lately and may
//! see it, in pages, in the background, registered so that a stopping
//! instance finishes or saves it (`fan_out_registry`).

use std::collections::HashSet;

use super::page::forget_timeline;

use crate::domain::post::Visibility;
use crate::error::AppResult;
use crate::ids::{now_ms, DAY_MS};
use crate::service::read::visibility::{self, PushFilter, Reach};
use crate::service::stream::events as stream;
use crate::service::Context;
use crate::store::{Changes, FanOutDoc, FilterKind, Owner, PostBody, StoreResult};

/// Followers read per page while fanning out.
pub(crate) const FAN_OUT_PAGE: usize = 10_000;

/// Pushes a new post to the timelines that should hold it, in the
/// background. The fan-out is registered in `ctx.fan_outs`, so a stopping
/// instance finishes it or saves where it got to, for any instance to
/// resume. A timeline a push may have missed is dropped (through the repair
/// list when the live store is down), so its owner's next read rebuilds it
/// with the post: a failure costs a rebuild, never a gap.
pub fn spawn_fan_out(ctx: &Context, post: &PostBody) {
    // A post held for a moderator is its author's alone, as on reads: it
    // reaches the other timelines when it is published.
    let audience = match post.moderation {
        Some(_) => Visibility::Private,
        None => post.visibility,
    };
    let plan = plan_fan_out(ctx, post.id, post.author_uid, audience);
    ctx.fan_outs.start(ctx, plan, false);
}

/// The fan-out of a post just published: nobody reached yet, the followers
/// active within the window from now.
pub fn plan_fan_out(ctx: &Context, post_id: i64, author: i64, audience: Visibility) -> FanOutDoc {
    // Anyone whose timeline may still exist (read within its one-day TTL,
    // activity recorded hourly) counts as active, whatever the setting: a
    // timeline that exists but is not pushed to would show a gap.
    let days = ctx.settings.active_days as i64;
    let window = (days * DAY_MS).max(DAY_MS + 2 * 3600 * 1000);
    FanOutDoc::new(post_id, author, audience, now_ms() - window)
}

/// Pushes a post to its author's timeline and to those of the active
/// followers who may see it now (a friends-only post to friends, a private
/// one to nobody); returns how many were offered it. Who may see it can
/// change later: reads check again.
pub async fn fan_out(
    ctx: &Context,
    post_id: i64,
    author: i64,
    audience: Visibility,
) -> AppResult<usize> {
    fan_out_in_pages(ctx, post_id, author, audience, FAN_OUT_PAGE).await
}

/// `fan_out`, reading the followers `page` at a time.
pub async fn fan_out_in_pages(
    ctx: &Context,
    post_id: i64,
    author: i64,
    audience: Visibility,
    page: usize,
) -> AppResult<usize> {
    let plan = plan_fan_out(ctx, post_id, author, audience);
    push_remaining(ctx, &plan, page, |_| {}).await
}

/// Runs what is left of a fan-out, from where `plan` says it got to;
/// returns how many timelines this run offered the post. Each time every
/// follower whose follow edge id is at or above some edge has been offered
/// it, `reached(edge)` is told, so that a run stopped after that can be
/// resumed from there.
pub async fn push_remaining(
    ctx: &Context,
    plan: &FanOutDoc,
    page: usize,
    reached: impl Fn(i64),
) -> AppResult<usize> {
    let max = ctx.settings.timeline_max;
    if ctx.settings.active_days == 0 {
        return Ok(0);
    }
    let (post_id, author, audience) = (plan.post_id, plan.author, plan.visibility);
    let mut pushed = 0;
    let bounds = stream::log_bounds(ctx);
    if plan.resume_before.is_none() {
        match ctx.live.push_to_timelines(post_id, &[author], max).await {
            Ok(()) => crate::metrics::fan_out_pushed(1),
            Err(e) => missed(ctx, post_id, vec![author], &e.to_string()),
        }
        // The author's other devices hear of it too.
        let told = stream::posts_entered(post_id, author, &[author]);
        stream::log_now(ctx.live.as_ref(), &told, bounds).await;
        pushed = 1;
        if visibility::reach(audience) == Reach::AuthorOnly {
            return Ok(pushed);
        }
        let (followers, _) = ctx.docs.follow_counts(author).await?;
        if followers > ctx.settings.pulled_author_followers {
            // Pulled, not pushed: tell every instance to drop its copy.
            if let Err(e) = ctx.live.note_pulled_author_posted(author, post_id).await {
                tracing::warn!(error = %e, author, "could not announce a pulled author's post; other instances show it within their copies' 5 s");
            }
            if let Err(e) = tell_pulled_followers(ctx, plan, followers, page).await {
                tracing::warn!(error = %e, post_id, "could not tell every follower's stream of a pulled author's post; their next feed read shows it");
            }
            return Ok(pushed);
        }
    }
    let filter = push_filter(ctx, plan).await?;
    // Page by page, each page pushed while the next is read, so the
    // documents and the live store work at once and a big following never
    // sits in memory whole.
    let mut before = plan.resume_before;
    let mut pushing: Option<Push> = None;
    loop {
        let read = active_followers_page(ctx, author, plan.active_since, before, page).await;
        if let Some(previous) = pushing.take() {
            previous.settle(ctx, post_id).await;
            // The page just read starts at `before`: everyone above it is done.
            if let Some(edge) = before {
                reached(edge);
            }
        }
        let (active, next) = read?;
        let active = who_it_reaches(ctx, plan, &filter, active, Known::Followers).await?;
        pushed += active.len();
        let live = ctx.live.clone();
        let uids = active.clone();
        pushing = Some(Push {
            uids,
            // Its followers' streams hear of it once it is in their
            // timelines, so a read on `post.new` finds it there.
            task: tokio::spawn(async move {
                live.push_to_timelines(post_id, &active, max).await?;
                let told = stream::posts_entered(post_id, author, &active);
                stream::log_now(live.as_ref(), &told, bounds).await;
                Ok(())
            }),
        });
        match next {
            Some(edge) => before = Some(edge),
            None => break,
        }
    }
    if let Some(last) = pushing {
        last.settle(ctx, post_id).await;
    }
    Ok(pushed)
}

/// Whether a fan-out's candidates are known to follow its author.
#[derive(PartialEq, Eq)]
enum Known {
    Followers,
    /// Any accounts (a pulled author's fan-out walking the accounts with
    /// event logs): those who do not follow the author go too.
    Anyone,
}

/// Of `uids`, those the post reaches: followers (asked, unless `known`),
/// only friends for a friends-only post (followers the author follows
/// back), and none the push filter leaves out.
async fn who_it_reaches(
    ctx: &Context,
    plan: &FanOutDoc,
    filter: &PushFilter,
    mut uids: Vec<i64>,
    known: Known,
) -> AppResult<Vec<i64>> {
    if known == Known::Anyone && !uids.is_empty() {
        let following: HashSet<i64> = ctx
            .docs
            .followers_among(plan.author, &uids)
            .await?
            .into_iter()
            .collect();
        uids.retain(|u| following.contains(u));
    }
    if visibility::reach(plan.visibility) == Reach::Friends && !uids.is_empty() {
        // Friends are the followers the author follows back.
        let followed: HashSet<i64> = ctx
            .docs
            .follow_edges(plan.author, &uids)
            .await?
            .0
            .into_iter()
            .collect();
        uids.retain(|u| followed.contains(u));
    }
    uids.retain(|u| filter.admits(*u));
    Ok(uids)
}

/// Accounts with event logs asked about per page, walking them for a
/// pulled author's post.
const LOGGED_PAGE: usize = 1_000;

/// A pulled author's post goes into no timeline, yet it enters each
/// follower's home feed all the same (merged in as they read), so the
/// streams that a push would have told are told: those of the followers
/// with an event log (who held a stream lately), which are few beside a
/// pulled author's followers. Whichever side is smaller is walked: the
/// accounts with logs, each page asked which follow the author; or the
/// active followers, whose events are kept only where a log exists. Not
/// saved for another instance if this one stops: a stream it did not reach
/// shows the post on its next feed read. Returns how many were told.
async fn tell_pulled_followers(
    ctx: &Context,
    plan: &FanOutDoc,
    followers: u64,
    page: usize,
) -> AppResult<usize> {
    let filter = push_filter(ctx, plan).await?;
    let author = plan.author;
    let mut told = 0;
    if ctx.live.logged_account_count().await? < followers {
        crate::metrics::stream_pulled_walk("logs");
        // A page of the register may repeat an account an earlier one named.
        let mut seen = HashSet::new();
        let mut cursor = 0;
        loop {
            let (logged, next) = ctx
                .live
                .logged_accounts(cursor, page.min(LOGGED_PAGE))
                .await?;
            let fresh: Vec<i64> = logged
                .into_iter()
                .filter(|u| *u != author && seen.insert(*u))
                .collect();
            told += tell_those_reached(ctx, plan, &filter, fresh, Known::Anyone).await?;
            if next == 0 {
                return Ok(told);
            }
            cursor = next;
        }
    }
    crate::metrics::stream_pulled_walk("followers");
    let mut before = None;
    loop {
        let (active, next) =
            active_followers_page(ctx, author, plan.active_since, before, page).await?;
        told += tell_those_reached(ctx, plan, &filter, active, Known::Followers).await?;
        match next {
            Some(edge) => before = Some(edge),
            None => return Ok(told),
        }
    }
}

/// Logs `post.new` for those of `uids` the post reaches; how many.
async fn tell_those_reached(
    ctx: &Context,
    plan: &FanOutDoc,
    filter: &PushFilter,
    uids: Vec<i64>,
    known: Known,
) -> AppResult<usize> {
    let reach = who_it_reaches(ctx, plan, filter, uids, known).await?;
    let told = stream::posts_entered(plan.post_id, plan.author, &reach);
    stream::log_now(ctx.live.as_ref(), &told, stream::log_bounds(ctx)).await;
    Ok(reach.len())
}

/// Whom, of those `reach` names, the fan-out leaves out: those the author
/// hides posts from, and those an `only` or `except` audience leaves out,
/// with its labels as they are now.
async fn push_filter(ctx: &Context, plan: &FanOutDoc) -> AppResult<PushFilter> {
    let hidden = ctx
        .docs
        .filters_set_by(FilterKind::Hide, &[plan.author])
        .await?
        .into_iter()
        .map(|f| f.other)
        .collect();
    let mut filter = PushFilter {
        hidden,
        named: None,
    };
    if !plan.visibility.names_an_audience() {
        return Ok(filter);
    }
    let audience = ctx
        .docs
        .posts_by_ids(&[plan.post_id])
        .await?
        .pop()
        .and_then(|p| p.audience)
        .unwrap_or_default();
    let keys: Vec<(i64, i64)> = audience.labels.iter().map(|l| (plan.author, *l)).collect();
    let mut named: HashSet<i64> = audience.uids.iter().copied().collect();
    for label in ctx.docs.labels_by_ids(&keys).await? {
        named.extend(label.members);
    }
    filter.named = Some((plan.visibility == Visibility::Only, named));
    Ok(filter)
}

/// One page of a fan-out's push, running.
struct Push {
    uids: Vec<i64>,
    task: tokio::task::JoinHandle<StoreResult<()>>,
}

impl Push {
    async fn settle(self, ctx: &Context, post_id: i64) {
        let error = match self.task.await {
            Ok(Ok(())) => {
                crate::metrics::fan_out_pushed(self.uids.len());
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        missed(ctx, post_id, self.uids, &error);
    }
}

/// Some of these timelines may lack the post: have them dropped, now or
/// when the live store answers again, and read from the documents until then.
fn missed(ctx: &Context, post_id: i64, uids: Vec<i64>, error: &str) {
    crate::metrics::fan_out_missed(uids.len());
    tracing::warn!(
        post_id,
        timelines = uids.len(),
        error,
        "push failed; those timelines will be rebuilt"
    );
    ctx.repair.defer(
        uids.into_iter()
            .map(|uid| Changes {
                owner: Owner::User(uid),
                expected_gen: None,
                changes: vec![forget_timeline(uid)],
            })
            .collect(),
    );
}

/// A page of active followers, tried three times: a page that cannot be
/// read leaves its followers and every later one unreached.
async fn active_followers_page(
    ctx: &Context,
    author: i64,
    since: i64,
    before: Option<i64>,
    page: usize,
) -> AppResult<(Vec<i64>, Option<i64>)> {
    let mut tries = 0;
    loop {
        match ctx.docs.active_followers(author, since, before, page).await {
            Ok(found) => return Ok(found),
            Err(e) if tries < 2 => {
                tries += 1;
                tracing::debug!(error = %e, tries, "retrying a page of followers");
                tokio::time::sleep(std::time::Duration::from_millis(100 * tries)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}
