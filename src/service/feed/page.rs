//! Reading the home feed: a page from the viewer's home timeline, rebuilt
//! from the followees' newest posts when it is absent, merged with the
//! pulled authors' posts, continued from the documents past the
//! timeline's end.

use std::collections::BTreeSet;

use crate::domain::cursor::Cursor;
use crate::error::AppResult;
use crate::metrics::LiveLookups;
use crate::service::read::assemble::assemble_visible;
use crate::service::read::loader::Loader;
use crate::service::read::near_cache::{self, NearValue};
use crate::service::read::paging::fill_page;
use crate::service::read::post_json::PostJson;
use crate::service::read::responses::Page;
use crate::service::read::visibility::Place;
use crate::service::{Context, Presentation};
use crate::store::{LiveAnswer, LiveFill, LiveRead, Owner, SetKey, SetRead};

/// A page of the viewer's home feed, newest first, as expanded posts: a
/// full page of what the viewer may see now (an entry pushed before an
/// unfriending or a block is passed over, and the page reads on past it).
pub async fn feed_page(
    ctx: &Context,
    viewer: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<PostJson>> {
    page_after_read(ctx, viewer, cursor, limit, pres, None).await
}

/// The live read a page of `viewer`'s home feed starts with, for a caller
/// to send along with one of its own (`accounts::authenticate_with`): then
/// a warm page costs no round trip of its own for its ids.
pub fn first_read(ctx: &Context, viewer: i64, cursor: Option<Cursor>, limit: usize) -> FeedRead {
    feed_read(ctx, viewer, cursor.map(|c| c.0), limit + 1)
}

/// `feed_page`, its first read already made (`first_read`): `None` if it
/// could not be.
pub async fn page_after_read(
    ctx: &Context,
    viewer: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
    first: Option<(FeedRead, LiveAnswer)>,
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
                    Some((plan, answer)) => feed_ids_from(ctx, viewer, plan, Ok(answer)).await,
                    None => feed_ids(ctx, viewer, before, n).await,
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
pub struct FeedRead {
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

fn feed_read(ctx: &Context, viewer: i64, before: Option<i64>, want: usize) -> FeedRead {
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
    FeedRead {
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
async fn feed_ids(
    ctx: &Context,
    viewer: i64,
    before: Option<i64>,
    want: usize,
) -> AppResult<Vec<i64>> {
    let plan = feed_read(ctx, viewer, before, want);
    // The timeline is read directly (an absent one is rebuilt here, from the
    // followees, never as an empty set); the followees through the loader.
    let answer = ctx.live.read(&plan.read).await;
    feed_ids_from(ctx, viewer, plan, answer).await
}

/// `feed_ids` from its first read's answer.
async fn feed_ids_from(
    ctx: &Context,
    viewer: i64,
    plan: FeedRead,
    answer: crate::store::StoreResult<LiveAnswer>,
) -> AppResult<Vec<i64>> {
    let FeedRead {
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
            let pulled = ctx.pulled_authors.pulled_among(ctx, &authors).await?;
            if !pulled.is_empty() {
                ids.extend(
                    ctx.pulled_authors
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
