//! Follows, friends (mutual follows) and blocks: the following, followers
//! (fans) and friends lists. Edges live in the documents; each user's following, friends and
//! blocks sets are live state, kept in step under the same generation guards
//! as a post's sets.

use serde::Serialize;

use super::feed::page::forget_timeline;
use super::notifications::{notify, Event};
use super::read::assemble::load_cards;
use super::read::loader::Loader;
use super::read::paging::{fill_page, keep_where};
use super::read::responses::Page;
use super::read::visibility_reads::{knowing, settle_blocks};
use super::{with_fresh_id, Context, Relations, Viewer};
use crate::domain::cursor::Cursor;
use crate::error::{AppError, AppResult};
use crate::ids::timestamp_of;
use crate::store::{
    BlobKey, BlockDoc, Changes, FilterDoc, FilterKind, FollowDoc, LiveChange, LiveKey,
    NotificationKind, Owner, SetKey, SetRead, UserCard,
};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FollowState {
    pub following: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BlockState {
    pub blocked: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MuteState {
    pub muted: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HideState {
    pub hidden: bool,
}

/// Mutes, and hides, one account may set: each user's are read whole on
/// every read (the viewer's mutes; the hides of an author's fan-out).
pub const MAX_FILTERS: usize = 5000;

/// The viewer's relations and the live generations of both users, read
/// before a graph write (the generations guard the write's live changes).
struct Before {
    rel: Relations,
    me_gen: Option<u64>,
    them_gen: Option<u64>,
    /// Whether they have a card: an account neither erased nor suspended.
    them_exists: bool,
}

async fn before_write(ctx: &Context, me: i64, them: i64) -> AppResult<Before> {
    let mut loader = Loader::new(ctx);
    let mut reads = Relations::reads(ctx, Some(me));
    // Whether they blocked this user, from their own (bounded) blocks: the
    // read also brings their generation.
    let theirs = SetRead {
        key: SetKey::Blocking(them),
        top: 0,
        probe: Some(me),
        below: None,
    };
    reads.push(theirs);
    // Their card rides in the same read: an account without one (erased,
    // suspended, never made) is nobody to name.
    let loaded = loader.load(&[BlobKey::Card(them)], &reads).await?;
    let mut rel = Relations::from_loaded(Some(me), &loaded);
    let blocked_me = loaded
        .probed
        .get(&(theirs.key, me))
        .copied()
        .unwrap_or(false);
    rel.learn_blocked_by(them, blocked_me);
    let out = Before {
        rel,
        me_gen: loader.generation(Owner::User(me)),
        them_gen: loader.generation(Owner::User(them)),
        them_exists: loaded.blobs.contains_key(&BlobKey::Card(them)),
    };
    loader.finish("social_before_write");
    Ok(out)
}

/// Someone the caller may name in a graph write: not the caller, an
/// account with a card, and not one who blocked the caller. Whoever
/// blocked the caller answers exactly as a uid nobody has (404 `user`), in
/// every call that names them, so that no pair of answers tells "blocked
/// you" from "no such account" (README, Security: what a block shows).
async fn reachable(ctx: &Context, me: i64, them: i64) -> AppResult<Before> {
    if me == them {
        return Err(AppError::Conflict("that is you".into()));
    }
    let before = before_write(ctx, me, them).await?;
    if !before.them_exists || before.rel.profile_not_visible(them) {
        return Err(AppError::NotFound("user"));
    }
    Ok(before)
}

/// Nothing reaches across a block. Whom the viewer blocked they can still
/// find, so that is a conflict they can resolve (unblock first); someone
/// who blocked the viewer is not there for them at all (`reachable`).
fn refuse_own_block(rel: &Relations, them: i64) -> AppResult<()> {
    if rel.sets.blocking.contains(&them) {
        return Err(AppError::Conflict(
            "you blocked this user; unblock them first".into(),
        ));
    }
    Ok(())
}

fn drop_friends(uid: i64) -> LiveChange {
    LiveChange::Drop(LiveKey::Set(SetKey::Friends(uid)))
}

#[tracing::instrument(skip(ctx))]
pub async fn follow(ctx: &Context, me: i64, them: i64) -> AppResult<FollowState> {
    let before = reachable(ctx, me, them).await?;
    refuse_own_block(&before.rel, them)?;
    // Whom one follows is read whole on every feed and profile read: it is
    // bounded. (Two follows racing may pass the bound by one each.)
    let max = ctx.settings.max_following;
    if !before.rel.sets.following.contains(&them) && before.rel.sets.following.len() as u64 >= max {
        return Err(AppError::Conflict(format!(
            "you follow {max} accounts, the most one account may; unfollow one first"
        )));
    }
    let (added, id) = with_fresh_id(|id| {
        let edge = FollowDoc::new(id, me, them);
        async move { ctx.docs.insert_follow(&edge).await.map(|added| (added, id)) }
    })
    .await?;
    // A block that landed while this follow was in flight wins.
    if added && !ctx.docs.blocks_between(me, &[them]).await?.is_empty() {
        ctx.docs.delete_follow(me, them).await?;
        return Err(AppError::NotFound("user"));
    }
    if added {
        notify(
            ctx,
            Event {
                recipient: them,
                kind: NotificationKind::Follow,
                actor: me,
                post_id: None,
                comment_id: None,
                report_id: None,
                case_id: None,
                strike_id: None,
                dedupe: format!("follow:{me}"),
            },
        )
        .await;
    }
    let change = added.then_some(LiveChange::SetAdd(SetKey::Following(me), them, id));
    // A hide they set while this user followed them before holds again.
    let awake = if added {
        ctx.docs
            .filters_on_from(FilterKind::Hide, me, &[them])
            .await?
            .into_iter()
            .map(|h| LiveChange::SetAdd(SetKey::HiddenBy(me), them, h.id))
            .collect()
    } else {
        Vec::new()
    };
    mirror_follow(ctx, me, them, &before, change, awake, added).await;
    Ok(FollowState { following: true })
}

#[tracing::instrument(skip(ctx))]
pub async fn unfollow(ctx: &Context, me: i64, them: i64) -> AppResult<FollowState> {
    let before = reachable(ctx, me, them).await?;
    let removed = ctx.docs.delete_follow(me, them).await?;
    let change = removed.then_some(LiveChange::SetRemove(SetKey::Following(me), them));
    // A hide of theirs on this user sleeps while the follow is gone (and
    // wakes with it): the hides a reader's reads load are only those of
    // whom the reader follows, so no more than those.
    let asleep = removed
        .then_some(LiveChange::SetRemove(SetKey::HiddenBy(me), them))
        .into_iter()
        .collect();
    mirror_follow(ctx, me, them, &before, change, asleep, removed).await;
    Ok(FollowState { following: false })
}

/// The live side of a follow or unfollow: the follower's following set
/// (dropped when the write changed nothing, so a retry repairs a lost live
/// step), both users' friends, and the follower's timeline, rebuilt on read
/// from whom they follow now.
///
/// Their friends are dropped only when the edge `changed`: following
/// again, or unfollowing again, touches nobody but the follower.
async fn mirror_follow(
    ctx: &Context,
    me: i64,
    them: i64,
    before: &Before,
    change: Option<LiveChange>,
    mut also_mine: Vec<LiveChange>,
    changed: bool,
) {
    let mine = change.unwrap_or(LiveChange::Drop(LiveKey::Set(SetKey::Following(me))));
    also_mine.extend([mine, drop_friends(me), forget_timeline(me)]);
    let theirs = if changed {
        vec![drop_friends(them)]
    } else {
        Vec::new()
    };
    apply_graph_change(ctx, me, them, before, also_mine, theirs).await;
}

/// Applies each user's changes; a user with none is not touched at all
/// (not even their generation moves), so a write that changed nothing of
/// theirs costs their reads nothing.
async fn apply_graph_change(
    ctx: &Context,
    me: i64,
    them: i64,
    before: &Before,
    mine: Vec<LiveChange>,
    theirs: Vec<LiveChange>,
) {
    let changes: Vec<Changes> = [
        Changes {
            owner: Owner::User(me),
            expected_gen: before.me_gen,
            changes: mine,
        },
        Changes {
            owner: Owner::User(them),
            expected_gen: before.them_gen,
            changes: theirs,
        },
    ]
    .into_iter()
    .filter(|c| !c.changes.is_empty())
    .collect();
    if !changes.is_empty() {
        ctx.repair.apply(ctx.live.as_ref(), changes).await;
    }
}

/// Blocking removes follows both ways and hides each from the other
/// everywhere. An account blocks at most
/// `MOMENTS_MAX_BLOCKS`. Only what changed is written: blocking again
/// writes nothing and touches nobody's keys, so a loop of it makes no one
/// rebuild anything.
#[tracing::instrument(skip(ctx))]
pub async fn block(ctx: &Context, me: i64, them: i64) -> AppResult<BlockState> {
    let before = reachable(ctx, me, them).await?;
    let max = ctx.settings.max_blocks;
    if !before.rel.sets.blocking.contains(&them) && before.rel.sets.blocking.len() as u64 >= max {
        return Err(AppError::Conflict(format!(
            "you block {max} accounts, the most one account may; unblock one first"
        )));
    }
    let (added, id) = with_fresh_id(|id| {
        let block = BlockDoc::new(id, me, them);
        async move { ctx.docs.insert_block(&block).await.map(|added| (added, id)) }
    })
    .await?;
    // Deleted even when the block was there already, so that a retry
    // finishes what a failed first try left (a delete of nothing writes
    // nothing); what a follow held goes with it.
    let unfollowed = ctx.docs.delete_follow(me, them).await?;
    let unfollowed_by = ctx.docs.delete_follow(them, me).await?;
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    if added {
        mine.push(LiveChange::SetAdd(SetKey::Blocking(me), them, id));
        theirs.push(LiveChange::SetAdd(SetKey::BlockedBy(them), me, id));
    }
    // A hide either set on the other sleeps with its follow (`unfollow`).
    if unfollowed {
        mine.extend([
            LiveChange::SetRemove(SetKey::Following(me), them),
            LiveChange::SetRemove(SetKey::HiddenBy(me), them),
            forget_timeline(me),
        ]);
    }
    if unfollowed_by {
        theirs.extend([
            LiveChange::SetRemove(SetKey::Following(them), me),
            LiveChange::SetRemove(SetKey::HiddenBy(them), me),
            forget_timeline(them),
        ]);
    }
    if unfollowed && unfollowed_by {
        // They were friends.
        mine.push(drop_friends(me));
        theirs.push(drop_friends(them));
    }
    if !mine.is_empty() || !theirs.is_empty() {
        apply_graph_change(ctx, me, them, &before, mine, theirs).await;
    }
    Ok(BlockState { blocked: true })
}

#[tracing::instrument(skip(ctx))]
pub async fn unblock(ctx: &Context, me: i64, them: i64) -> AppResult<BlockState> {
    if me == them {
        return Err(AppError::Conflict("that is you".into()));
    }
    let before = before_write(ctx, me, them).await?;
    // Each direction is its own block: theirs, if any, still hides them.
    if ctx.docs.delete_block(me, them).await? {
        apply_graph_change(
            ctx,
            me,
            them,
            &before,
            vec![LiveChange::SetRemove(SetKey::Blocking(me), them)],
            vec![LiveChange::SetRemove(SetKey::BlockedBy(them), me)],
        )
        .await;
    }
    Ok(BlockState { blocked: false })
}

/// Where a filter of `kind` set by `me` on `them` lives in the live state:
/// a mute in `me`'s muted set, a hide in `them`'s hidden-by set (each is
/// read by the one whose reads it changes).
fn filter_entry(kind: FilterKind, me: i64, them: i64) -> (SetKey, i64) {
    match kind {
        FilterKind::Mute => (SetKey::Muted(me), them),
        FilterKind::Hide => (SetKey::HiddenBy(them), me),
    }
}

/// Splits one change by whose it is, for `apply_graph_change`.
fn by_owner(me: i64, changes: Vec<LiveChange>) -> (Vec<LiveChange>, Vec<LiveChange>) {
    changes.into_iter().partition(|c| match c.key() {
        LiveKey::Set(k) => k.owner() == Owner::User(me),
        LiveKey::Blob(b) => b.owner() == Owner::User(me),
    })
}

/// Sets a mute (不看他: `them`'s posts leave `me`'s home feed, their album
/// stays open) or a hide (不让他看: none of `me`'s posts are visible to
/// `them`, as if each were private). Setting one twice is setting it once.
#[tracing::instrument(skip(ctx))]
pub async fn set_filter(ctx: &Context, kind: FilterKind, me: i64, them: i64) -> AppResult<()> {
    let before = reachable(ctx, me, them).await?;
    refuse_own_block(&before.rel, them)?;
    // 不让他看 is for one's followers (WeChat: one's friends); anyone else
    // is kept out with a block. So the hides on a reader, which every read
    // of theirs loads, come only from accounts that reader chose to follow,
    // and no stranger can grow them.
    if kind == FilterKind::Hide && ctx.docs.follow_edges(me, &[them]).await?.1.is_empty() {
        return Err(AppError::Conflict(
            "they do not follow you: only a follower can be hidden from (block anyone else)".into(),
        ));
    }
    let set_already = ctx.docs.filters_set_by(kind, &[me]).await?;
    if !set_already.iter().any(|f| f.other == them) && set_already.len() >= MAX_FILTERS {
        let what = match kind {
            FilterKind::Mute => "mute",
            FilterKind::Hide => "hide your posts from",
        };
        return Err(AppError::Conflict(format!(
            "you {what} {MAX_FILTERS} accounts, the most one account may; undo one first"
        )));
    }
    let (added, id) = insert_filter(ctx, kind, me, them).await?;
    let (set, member) = filter_entry(kind, me, them);
    let change = match (added, kind) {
        (true, _) => Some(LiveChange::SetAdd(set, member, id)),
        // Nothing changed: a mute's set, the caller's own, is dropped so a
        // retry repairs a lost live step; another user's keys are left
        // alone, or anyone could make them rebuild at will.
        (false, FilterKind::Mute) => Some(LiveChange::Drop(LiveKey::Set(set))),
        (false, FilterKind::Hide) => None,
    };
    let (mine, theirs) = by_owner(me, change.into_iter().collect());
    apply_graph_change(ctx, me, them, &before, mine, theirs).await;
    Ok(())
}

/// Undoes a mute or a hide; undoing one never set is not an error. An
/// unhidden reader's timeline is rebuilt on their next read, since
/// fan-outs passed them over meanwhile.
#[tracing::instrument(skip(ctx))]
pub async fn clear_filter(ctx: &Context, kind: FilterKind, me: i64, them: i64) -> AppResult<()> {
    let before = reachable(ctx, me, them).await?;
    let removed = ctx.docs.delete_filter(kind, me, them).await?;
    let (set, member) = filter_entry(kind, me, them);
    let changes = match (removed, kind) {
        (true, FilterKind::Mute) => vec![LiveChange::SetRemove(set, member)],
        (true, FilterKind::Hide) => vec![LiveChange::SetRemove(set, member), forget_timeline(them)],
        // As in `set_filter`: only the caller's own keys are dropped.
        (false, FilterKind::Mute) => vec![LiveChange::Drop(LiveKey::Set(set))],
        (false, FilterKind::Hide) => Vec::new(),
    };
    let (mine, theirs) = by_owner(me, changes);
    apply_graph_change(ctx, me, them, &before, mine, theirs).await;
    Ok(())
}

async fn insert_filter(
    ctx: &Context,
    kind: FilterKind,
    me: i64,
    them: i64,
) -> AppResult<(bool, i64)> {
    Ok(with_fresh_id(|id| {
        let filter = FilterDoc {
            id,
            kind,
            uid: me,
            other: them,
            created_at: timestamp_of(id),
        };
        async move {
            ctx.docs
                .insert_filter(&filter)
                .await
                .map(|added| (added, id))
        }
    })
    .await?)
}

/// The accounts `me` muted, or hides posts from, newest first.
pub async fn filtered(
    ctx: &Context,
    me: i64,
    kind: FilterKind,
    cursor: Option<Cursor>,
    limit: usize,
    now: i64,
) -> AppResult<Page<UserCard>> {
    let (filters, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |b, n| async move { Ok(ctx.docs.filters_page(kind, me, b, n).await?) },
        |batch, room| async move { Ok(keep_where(batch, room, |_| true)) },
        |f| f.id,
    )
    .await?;
    let others: Vec<i64> = filters.iter().map(|f| f.other).collect();
    cards_page(ctx, &others, next_cursor, now).await
}

/// Removes everything between `a` and `b` for good (one of them is being
/// erased): follows and blocks both ways, and both users' live sets of
/// them, rebuilt on the next read.
pub async fn sever(ctx: &Context, a: i64, b: i64) -> AppResult<()> {
    for (x, y) in [(a, b), (b, a)] {
        ctx.docs.delete_follow(x, y).await?;
        ctx.docs.delete_block(x, y).await?;
    }
    let drops = |u: i64| Changes {
        owner: Owner::User(u),
        expected_gen: None,
        changes: vec![
            LiveChange::Drop(LiveKey::Set(SetKey::Following(u))),
            drop_friends(u),
            LiveChange::Drop(LiveKey::Set(SetKey::Blocking(u))),
            LiveChange::Drop(LiveKey::Set(SetKey::BlockedBy(u))),
            LiveChange::Drop(LiveKey::Set(SetKey::HiddenBy(u))),
            forget_timeline(u),
        ],
    };
    ctx.repair
        .apply(ctx.live.as_ref(), vec![drops(a), drops(b)])
        .await;
    Ok(())
}

/// A user's card, if the account exists and its profile is visible to
/// the viewer, with the viewer's relations; 404 otherwise.
pub async fn visible_user(
    ctx: &Context,
    uid: i64,
    viewer: Viewer,
) -> AppResult<(UserCard, Relations)> {
    let mut loader = Loader::new(ctx);
    let loaded = loader.load(&[], &Relations::reads(ctx, viewer)).await?;
    let mut rel = Relations::from_loaded(viewer, &loaded);
    settle_blocks(&mut loader, &mut rel, [uid]).await?;
    loader.finish("profile");
    if rel.profile_not_visible(uid) {
        return Err(AppError::NotFound("user"));
    }
    let card = load_cards(ctx, &[uid])
        .await?
        .remove(&uid)
        .ok_or(AppError::NotFound("user"))?;
    Ok((card, rel))
}

/// Which list of a user's graph to page through.
#[derive(Debug, Clone, Copy)]
pub enum Listing {
    Followers,
    Following,
    Friends,
}

/// A page of a user's followers, followees or friends (newest edge first),
/// leaving out anyone hidden from the viewer by a block.
pub async fn list(
    ctx: &Context,
    uid: i64,
    which: Listing,
    viewer: Viewer,
    cursor: Option<Cursor>,
    limit: usize,
    now: i64,
) -> AppResult<Page<UserCard>> {
    let mut loader = Loader::new(ctx);
    // Their card rides in the relations' read: a deleted account has none,
    // and its follows are gone at its 204, however long erasing them takes.
    let loaded = loader
        .load(&[BlobKey::Card(uid)], &Relations::reads(ctx, viewer))
        .await?;
    let mut rel = Relations::from_loaded(viewer, &loaded);
    settle_blocks(&mut loader, &mut rel, [uid]).await?;
    loader.finish("graph_list");
    if rel.profile_not_visible(uid) || !loaded.blobs.contains_key(&BlobKey::Card(uid)) {
        return Err(AppError::NotFound("user"));
    }
    let before = cursor.map(|c| c.0);
    let other_of = |e: &FollowDoc| {
        if e.follower == uid {
            e.followee
        } else {
            e.follower
        }
    };
    let rel = &rel;
    let visible = |batch: Vec<FollowDoc>, room| async move {
        let rel = knowing(ctx, rel, batch.iter().map(other_of)).await?;
        Ok(keep_where(batch, room, |e| !rel.blocked(other_of(e))))
    };
    let (edges, next_cursor) = match which {
        Listing::Followers => {
            fill_page(
                limit,
                before,
                |b, n| async move { Ok(ctx.docs.followers_page(uid, b, n).await?) },
                visible,
                |f| f.id,
            )
            .await?
        }
        Listing::Following => {
            fill_page(
                limit,
                before,
                |b, n| async move { Ok(ctx.docs.following_page(uid, b, n).await?) },
                visible,
                |f| f.id,
            )
            .await?
        }
        Listing::Friends => friends_page(ctx, uid, before, limit, rel).await?,
    };
    let others: Vec<i64> = edges.iter().map(other_of).collect();
    cards_page(ctx, &others, next_cursor, now).await
}

/// A page of these users' cards, in this order (an erased account's as
/// the unknown user's).
async fn cards_page(
    ctx: &Context,
    uids: &[i64],
    next_cursor: Option<String>,
    now: i64,
) -> AppResult<Page<UserCard>> {
    let cards = load_cards(ctx, uids).await?;
    // Every edge is to an account, so one without a card is an erased one
    // whose follows are still being erased: gone from lists from its
    // erasure's answer on, as its posts are (the page may come out short;
    // its cursor goes on).
    Ok(Page {
        items: uids.iter().filter_map(|u| cards.get(u).cloned()).collect(),
        next_cursor,
        server_time: now,
    })
}

/// Friends are followees who follow back: the following edges, newest
/// first, keeping the mutual ones (one query per batch of edges), filled
/// like every other page. The cursor is the last edge looked at, so no
/// friend is skipped or shown twice.
async fn friends_page(
    ctx: &Context,
    uid: i64,
    before: Option<i64>,
    limit: usize,
    rel: &Relations,
) -> AppResult<(Vec<FollowDoc>, Option<String>)> {
    fill_page(
        limit,
        before,
        |b, n| async move { Ok(ctx.docs.following_page(uid, b, n).await?) },
        |batch: Vec<FollowDoc>, room| async move {
            let ids: Vec<i64> = batch.iter().map(|e| e.followee).collect();
            let (_, back) = ctx.docs.follow_edges(uid, &ids).await?;
            let rel = knowing(ctx, rel, ids).await?;
            Ok(keep_where(batch, room, |e| {
                back.contains(&e.followee) && !rel.blocked(e.followee)
            }))
        },
        |f| f.id,
    )
    .await
}
