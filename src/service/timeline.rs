//! Home timelines with hybrid fan-out (seed 000's feed_show_list, seed 001's
//! push model and its warning about big accounts).
//!
//! - Push: a new post goes to the author's own timeline and, in the
//!   background, to the timelines of followers active within
//!   `MOMENTS_ACTIVE_DAYS`, a chunk of followers per script call, several in
//!   flight. A push only lands on a timeline that exists and is idempotent
//!   (the post id is the member); a timeline a failed push may have missed
//!   is dropped, to be rebuilt on read. A fan-out cut short (the instance
//!   stopping, the documents failing) is saved and resumed (`fan_outs`).
//! - Pull: authors with more than `MOMENTS_CELEBRITY_FOLLOWERS` followers are
//!   never pushed; their posts are merged in at read time.
//! - Rebuild: a timeline that is absent (its owner was away, it expired a day
//!   unread, the live store was lost, or the owner followed or unfollowed
//!   someone) is rebuilt from the newest posts of the followees in the same
//!   request, so the first page is always full.
//! - History: timelines keep `MOMENTS_TIMELINE_MAX` entries; pages past that
//!   continue from the documents, so nothing is ever lost.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use super::assemble::assemble_visible;
use super::loader::Loader;
use super::near_cache::{self, NearValue};
use super::paging::fill_page;
use super::post_json::PostJson;
use super::responses::Page;
use super::visibility::{self, Place, PushFilter, Reach};
use super::{Context, Presentation};
use crate::domain::cursor::Cursor;
use crate::domain::post::Visibility;
use crate::error::AppResult;
use crate::ids::now_ms;
use crate::metrics::LiveLookups;
use crate::store::{
    Changes, FanOutDoc, FilterKind, LiveAnswer, LiveFill, LiveRead, Owner, PostBody, SetKey,
    SetRead, StoreResult,
};

const DAY_MS: i64 = 24 * 3600 * 1000;
/// Followers read per page while fanning out.
pub(crate) const FAN_OUT_PAGE: usize = 10_000;
/// How long an instance trusts a follower count when deciding push or pull.
const CELEBRITY_CACHE_MS: i64 = 60_000;
/// How long an instance trusts its copy of big accounts' newest post ids,
/// at most. Sooner than that, a big account's new post makes every
/// instance forget its copy: the publisher at once, the others when they
/// next poll the live store's notes, every [`PULLED_POLL_EVERY`]. (A deleted
/// post needs no note: its cached body is a tombstone every instance sees.)
const PULLED_POSTS_MS: i64 = 5_000;
/// How often each instance polls for big accounts' new posts.
pub const PULLED_POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// Newest post ids fetched per big account: more than any page needs.
const PULLED_POSTS_KEPT: usize = 128;

/// Per instance, what deciding push or pull and pulling need, so that a feed
/// read costs no document round trip once warm:
/// - follower counts of recently seen authors (a count per followee on every
///   read would be ruinous). An author who just crossed the threshold is
///   pulled at most a minute late, never lost: until then their posts reach
///   followers by the rebuild and history paths.
/// - big accounts' newest post ids: every follower's read pulls them, and
///   without a copy each read would be a query on the same few authors.
#[derive(Default)]
pub struct CelebrityCache {
    counts: Mutex<HashMap<i64, (u64, i64)>>,
    pulled: Mutex<HashMap<i64, PulledPosts>>,
    /// The newest note of a big account's post this instance has acted
    /// on; `None` before the first poll.
    seen_note: Mutex<Option<u64>>,
}

/// One big account's newest post ids, newest first: every post it has with
/// an id at or above `from` (`None`: every post it has), read at `at`.
struct PulledPosts {
    ids: Vec<i64>,
    from: Option<i64>,
    at: i64,
}

impl PulledPosts {
    /// Up to `want` ids below `before`, newest first, if this copy holds
    /// them all (else the page reaches past it, to older posts).
    fn page(&self, before: Option<i64>, want: usize) -> Option<Vec<i64>> {
        let below: Vec<i64> = self
            .ids
            .iter()
            .copied()
            .filter(|p| before.is_none_or(|b| *p < b))
            .take(want)
            .collect();
        (self.from.is_none() || below.len() >= want).then_some(below)
    }
}

impl CelebrityCache {
    async fn celebrities(&self, ctx: &Context, authors: &[i64]) -> AppResult<Vec<i64>> {
        let now = now_ms();
        let mut known = Vec::new();
        let mut missing = Vec::new();
        if let Ok(map) = self.counts.lock() {
            for a in authors {
                match map.get(a) {
                    Some((n, at)) if now - at < CELEBRITY_CACHE_MS => known.push((*a, *n)),
                    _ => missing.push(*a),
                }
            }
        }
        if !missing.is_empty() {
            let fresh = ctx.docs.follower_counts(&missing).await?;
            if let Ok(mut map) = self.counts.lock() {
                if map.len() > 100_000 {
                    map.clear();
                }
                for (a, n) in &fresh {
                    map.insert(*a, (*n, now));
                }
            }
            known.extend(fresh);
        }
        let threshold = ctx.settings.celebrity_followers;
        Ok(known
            .into_iter()
            .filter(|(_, n)| *n > threshold)
            .map(|(a, _)| a)
            .collect())
    }

    /// Drops this instance's copy of an author's newest posts: the author
    /// has just posted or deleted one.
    pub fn forget_posts_of(&self, author: i64) {
        if let Ok(mut pulled) = self.pulled.lock() {
            pulled.remove(&author);
        }
    }

    /// Forgets the copies of big accounts that posted since the last poll,
    /// unless the copy already holds the post (it was read after it); all of
    /// them when the notes no longer reach back that far.
    pub async fn poll(&self, live: &dyn crate::store::LiveStore) -> StoreResult<()> {
        let seen = self.seen_note.lock().map(|s| *s).unwrap_or(None);
        let (newest, authors) = live.pulled_authors_posted_after(seen.unwrap_or(0)).await?;
        match (seen, authors) {
            (Some(_), Some(notes)) => {
                if let Ok(mut pulled) = self.pulled.lock() {
                    for (author, post) in notes {
                        if pulled.get(&author).is_some_and(|c| !c.ids.contains(&post)) {
                            pulled.remove(&author);
                        }
                    }
                }
            }
            _ => {
                if let Ok(mut pulled) = self.pulled.lock() {
                    pulled.clear();
                }
            }
        }
        if let Ok(mut s) = self.seen_note.lock() {
            *s = Some(newest);
        }
        Ok(())
    }

    pub fn spawn_poller(
        self: &std::sync::Arc<Self>,
        live: std::sync::Arc<dyn crate::store::LiveStore>,
    ) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        super::spawn_every(PULLED_POLL_EVERY, move || {
            let (me, live) = (me.clone(), live.clone());
            async move {
                if let Err(e) = me.poll(live.as_ref()).await {
                    tracing::debug!(error = %e, "polling for big accounts' posts failed; retrying");
                }
            }
        })
    }

    /// The newest `want` post ids of each of these big accounts below
    /// `before` (the caller merges). Documents are read only for authors
    /// whose copy is missing or stale (all at once), and for a page deeper
    /// than the copies reach.
    async fn pulled_posts(
        &self,
        ctx: &Context,
        authors: &[i64],
        before: Option<i64>,
        want: usize,
    ) -> AppResult<Vec<i64>> {
        let now = now_ms();
        let mut out = Vec::new();
        let mut stale = Vec::new();
        let mut deeper = Vec::new();
        let mut take = |author: i64, copy: &PulledPosts| match copy.page(before, want) {
            Some(ids) => out.extend(ids),
            None => deeper.push(author),
        };
        if let Ok(pulled) = self.pulled.lock() {
            for a in authors {
                match pulled.get(a).filter(|p| now - p.at < PULLED_POSTS_MS) {
                    Some(copy) => take(*a, copy),
                    None => stale.push(*a),
                }
            }
        }
        if !stale.is_empty() {
            // One query per author, all at once: each copy is then exact,
            // and there are few big accounts behind any one reader.
            let fetched = futures_util::future::try_join_all(stale.iter().map(|a| async move {
                let ids = ctx
                    .docs
                    .post_ids_by_authors(&[*a], None, PULLED_POSTS_KEPT)
                    .await?;
                let from = (ids.len() >= PULLED_POSTS_KEPT)
                    .then(|| ids.last().copied())
                    .flatten();
                Ok::<_, crate::error::AppError>((*a, PulledPosts { ids, from, at: now }))
            }))
            .await?;
            for (a, copy) in &fetched {
                take(*a, copy);
            }
            if let Ok(mut pulled) = self.pulled.lock() {
                if pulled.len() > 10_000 {
                    pulled.clear();
                }
                pulled.extend(fetched);
            }
        }
        if !deeper.is_empty() {
            out.extend(ctx.docs.post_ids_by_authors(&deeper, before, want).await?);
        }
        Ok(out)
    }
}

/// Pushes a new post to the timelines that should hold it, in the
/// background. The fan-out is registered in `ctx.fan_outs`, so a stopping
/// instance finishes it or saves where it got to, for any instance to
/// resume. A timeline a push may have missed is dropped (through the repair
/// list when the live store is down), so its owner's next read rebuilds it
/// with the post: a failure costs a rebuild, never a gap.
pub fn spawn_fan_out(ctx: &Context, post: &PostBody) {
    let plan = plan_fan_out(ctx, post.id, post.author_uid, post.visibility);
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
    FanOutDoc {
        post_id,
        author,
        visibility: audience,
        active_since: now_ms() - window,
        resume_before: None,
        saved_at: 0,
        claimed_until: 0,
    }
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
    if plan.resume_before.is_none() {
        match ctx.live.push_to_timelines(post_id, &[author], max).await {
            Ok(()) => crate::metrics::fan_out_pushed(1),
            Err(e) => missed(ctx, post_id, vec![author], &e.to_string()),
        }
        pushed = 1;
        if visibility::reach(audience) == Reach::AuthorOnly {
            return Ok(pushed);
        }
        let (followers, _) = ctx.docs.follow_counts(author).await?;
        if followers > ctx.settings.celebrity_followers {
            // Pulled, not pushed: tell every instance to drop its copy.
            if let Err(e) = ctx.live.note_pulled_author_posted(author, post_id).await {
                tracing::warn!(error = %e, author, "could not announce a big account's post; other instances show it within their copies' 5 s");
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
        let (mut active, next) = read?;
        if visibility::reach(audience) == Reach::Friends && !active.is_empty() {
            // Friends are the followers the author follows back.
            active = ctx.docs.follow_edges(author, &active).await?.0;
        }
        active.retain(|uid| filter.admits(*uid));
        pushed += active.len();
        let live = ctx.live.clone();
        let uids = active.clone();
        pushing = Some(Push {
            uids,
            task: tokio::spawn(async move { live.push_to_timelines(post_id, &active, max).await }),
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

/// The viewer's home timeline, newest first, as expanded posts: a full page
/// of what the viewer may see now (an entry pushed before an unfriending or
/// a block is passed over, and the page reads on past it).
pub async fn home(
    ctx: &Context,
    viewer: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<PostJson>> {
    home_after_read(ctx, viewer, cursor, limit, pres, None).await
}

/// The live read a page of `viewer`'s home feed starts with, for a caller
/// to send along with one of its own (`accounts::authenticate_with`): then
/// a warm page costs no round trip of its own for its ids.
pub fn first_home_read(
    ctx: &Context,
    viewer: i64,
    cursor: Option<Cursor>,
    limit: usize,
) -> HomeRead {
    home_read(ctx, viewer, cursor.map(|c| c.0), limit + 1)
}

/// `home`, its first read already made (`first_home_read`): `None` if it
/// could not be.
pub async fn home_after_read(
    ctx: &Context,
    viewer: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
    first: Option<(HomeRead, LiveAnswer)>,
) -> AppResult<Page<PostJson>> {
    let mut first = first;
    let (items, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| {
            let made = first
                .take()
                .filter(|(plan, _)| plan.before == before && plan.want == n);
            async move {
                match made {
                    Some((plan, answer)) => home_ids_from(ctx, viewer, plan, Ok(answer)).await,
                    None => home_ids(ctx, viewer, before, n).await,
                }
            }
        },
        |ids, room| async move {
            assemble_visible(ctx, &ids, room, Some(viewer), pres, Place::HomeFeed).await
        },
        |id| *id,
    )
    .await?;
    Ok(Page {
        items,
        next_cursor,
        server_time: pres.now,
    })
}

/// The first live read of a page of home-feed ids: the timeline, the
/// viewer's generation, and whom the viewer follows unless this instance
/// keeps a copy (which the generation then vouches for).
pub struct HomeRead {
    pub read: LiveRead,
    following_copy: Option<(u64, crate::store::SetView)>,
    before: Option<i64>,
    want: usize,
}

/// What the read whom the viewer follows is.
fn following_read(viewer: i64) -> SetRead {
    SetRead {
        key: SetKey::Following(viewer),
        top: usize::MAX >> 24,
        probe: None,
        below: None,
    }
}

fn home_read(ctx: &Context, viewer: i64, before: Option<i64>, want: usize) -> HomeRead {
    let limit = want.saturating_sub(1).max(1);
    let following = following_read(viewer);
    // Whom the viewer follows, from this instance's copy when the viewer's
    // generation, read with the timeline, says it is current.
    let following_copy = near_copy_of(ctx, following);
    let mut read = LiveRead {
        sets: vec![SetRead {
            key: SetKey::Home(viewer),
            top: limit + 1,
            probe: None,
            below: before,
        }],
        gens: vec![Owner::User(viewer)],
        ..Default::default()
    };
    if following_copy.is_none() {
        read.sets.push(following);
    }
    HomeRead {
        read,
        following_copy,
        before,
        want,
    }
}

/// Up to `want` ids of the viewer's timeline below `before`, newest first
/// (fewer only where it ends): from the cached timeline, rebuilt here if it
/// is absent, continued from the documents past its cached part, with big
/// accounts' posts pulled in.
async fn home_ids(
    ctx: &Context,
    viewer: i64,
    before: Option<i64>,
    want: usize,
) -> AppResult<Vec<i64>> {
    let plan = home_read(ctx, viewer, before, want);
    // The timeline is read directly (an absent one is rebuilt here, from the
    // followees, never as an empty set); the followees through the loader.
    let answer = ctx.live.read(&plan.read).await;
    home_ids_from(ctx, viewer, plan, answer).await
}

/// `home_ids` from its first read's answer.
async fn home_ids_from(
    ctx: &Context,
    viewer: i64,
    plan: HomeRead,
    answer: crate::store::StoreResult<LiveAnswer>,
) -> AppResult<Vec<i64>> {
    let HomeRead {
        following_copy,
        before,
        want,
        ..
    } = plan;
    let limit = want.saturating_sub(1).max(1);
    let max = ctx.settings.timeline_max;
    let mut loader = Loader::new(ctx);
    let home_key = SetKey::Home(viewer);
    let following_read = following_read(viewer);
    // A viewer whose last live update failed (an unfollow, say) may have a
    // stale timeline and following set until the repair task drops them:
    // build from the documents and store nothing, as the loader does.
    let answer = match answer {
        Ok(_) if ctx.repair.is_pending(Owner::User(viewer)) => None,
        Ok(a) => Some(a),
        Err(e) => {
            tracing::warn!(error = %e, "live read failed; building the timeline from the documents");
            None
        }
    };
    let (cached, gen) = match &answer {
        Some(a) => (a.sets.first().cloned().flatten(), a.gens.first().copied()),
        None => (None, None),
    };
    // The followees' misses and rebuilds are the loader's to count.
    let mut lookups = LiveLookups::default();
    if answer.is_some() {
        match &cached {
            Some(_) => lookups.hit(home_key.kind()),
            None => lookups.miss(home_key.kind()),
        }
    }
    let from_copy = match (&following_copy, gen, &answer) {
        (Some((g, copy)), Some(now), Some(_)) if *g == now => {
            lookups.near_hit(following_read.key.kind());
            Some(copy.clone())
        }
        _ => None,
    };
    let read_along = answer
        .as_ref()
        .filter(|_| following_copy.is_none())
        .and_then(|a| a.sets.get(1).cloned().flatten());
    let following = match (from_copy, read_along) {
        (Some(copy), _) => copy,
        (None, Some(view)) => {
            lookups.hit(following_read.key.kind());
            if let Some(g) = gen.filter(|g| *g != 0) {
                ctx.near.put(
                    Owner::User(viewer),
                    g,
                    NearValue::Set(following_read.key, std::sync::Arc::new(view.clone())),
                );
            }
            view
        }
        (None, None) => {
            let loaded = loader.load(&[], &[following_read]).await?;
            loaded
                .sets
                .get(&SetKey::Following(viewer))
                .cloned()
                .unwrap_or_default()
        }
    };
    let mut authors: Vec<i64> = following.top.iter().map(|(u, _)| *u).collect();
    authors.push(viewer);

    let mut ids: BTreeSet<i64> = BTreeSet::new();
    match cached.filter(|_| ctx.settings.active_days > 0) {
        Some(view) => {
            ids.extend(view.top.iter().map(|(p, _)| *p));
            // A full timeline may have trimmed older entries: go on from the
            // documents once the cached part of this page runs out.
            if view.top.len() <= limit && view.count as usize >= max {
                let from = view.top.last().map(|(p, _)| *p).or(before);
                ids.extend(
                    ctx.docs
                        .post_ids_by_authors(&authors, from, limit + 1)
                        .await?,
                );
            }
            // Authors too big to push are pulled.
            let pulled = ctx.celebrity_cache.celebrities(ctx, &authors).await?;
            if !pulled.is_empty() {
                ids.extend(
                    ctx.celebrity_cache
                        .pulled_posts(ctx, &pulled, before, limit + 1)
                        .await?,
                );
            }
        }
        None => {
            lookups.rebuilt(home_key.kind());
            let mut newest = ctx.docs.post_ids_by_authors(&authors, None, max).await?;
            if let (Some(g), true) = (gen, ctx.settings.active_days > 0) {
                let fill = LiveFill {
                    sets: vec![(home_key, newest.iter().map(|p| (*p, *p)).collect(), g)],
                    ..Default::default()
                };
                match ctx.live.fill(&fill).await {
                    Ok(()) => {
                        // A post published while this was rebuilding may
                        // have been pushed before the timeline existed (and
                        // so skipped): read once more and add what is newer.
                        // By set difference, not "newer than the newest
                        // seen": ids are taken before posts are stored.
                        let seen: std::collections::HashSet<i64> = newest.iter().copied().collect();
                        let again = ctx.docs.post_ids_by_authors(&authors, None, max).await?;
                        let newer: Vec<i64> =
                            again.into_iter().filter(|p| !seen.contains(p)).collect();
                        for p in &newer {
                            ctx.live.push_to_timelines(*p, &[viewer], max).await?;
                        }
                        newest.extend(newer);
                        newest.sort_unstable_by(|a, b| b.cmp(a));
                    }
                    Err(e) => tracing::warn!(error = %e, "could not store a rebuilt timeline"),
                }
            }
            ids.extend(
                newest
                    .iter()
                    .copied()
                    .filter(|p| before.is_none_or(|b| *p < b)),
            );
            if newest.len() >= max && ids.len() <= limit {
                let from = ids.iter().next().copied().or(before);
                ids.extend(
                    ctx.docs
                        .post_ids_by_authors(&authors, from, limit + 1)
                        .await?,
                );
            }
        }
    }
    let newest_first: Vec<i64> = ids
        .into_iter()
        .rev()
        .filter(|p| before.is_none_or(|b| *p < b))
        .take(want)
        .collect();
    lookups.record();
    loader.finish("home_timeline");
    Ok(newest_first)
}

/// This instance's copy of a whole set and the generation it was read at,
/// unless its owner awaits repair.
fn near_copy_of(ctx: &Context, read: SetRead) -> Option<(u64, crate::store::SetView)> {
    if ctx.repair.is_pending(read.key.owner()) {
        return None;
    }
    let copies = ctx.near.get(read.key.owner())?;
    let view = near_cache::view_from_copy(copies.set(read.key)?, read.top, None)?;
    Some((copies.generation, view))
}

/// Drops a user's timeline so the next read rebuilds it from whom they follow
/// now: how following merges someone in and unfollowing or blocking takes
/// them out, at once.
pub fn forget_timeline(uid: i64) -> crate::store::LiveChange {
    crate::store::LiveChange::Drop(crate::store::LiveKey::Set(SetKey::Home(uid)))
}
