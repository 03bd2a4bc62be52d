//! Likes on posts and comments. The unique (kind, target, uid) index makes
//! liking twice one like, however many requests race; the live sets are
//! keyed by uid, so replaying a change is harmless too.

use super::assemble::{load_cards, load_set, visible_post};
use super::comments::live_comment;
use super::notifications::{notify, Event};
use super::views::{unknown_user, LikeState, LikeView, Page};
use super::{Context, Presentation, Viewer};
use crate::domain::cursor::{paginate, Cursor};
use crate::error::AppResult;
use crate::ids::{next_id, timestamp_of};
use crate::store::{
    Changes, LikeDoc, LikeKind, LiveChange, LiveKey, NotificationKind, SetKey, SetRead,
};

/// Which thing is liked.
#[derive(Debug, Clone, Copy)]
pub enum LikeTarget {
    Post(i64),
    Comment(i64),
}

/// What a like is on: its kind and target, the live set that mirrors its
/// likers, the post's generation as read before the like is written, and
/// whom a new like notifies.
struct Resolved {
    kind: LikeKind,
    target_id: i64,
    set: SetKey,
    gen: Option<u64>,
    post_id: i64,
    owner: i64,
}

async fn resolve(ctx: &Context, target: LikeTarget, uid: i64) -> AppResult<Resolved> {
    Ok(match target {
        LikeTarget::Post(p) => {
            let post = visible_post(ctx, p, Some(uid)).await?;
            Resolved {
                kind: LikeKind::Post,
                target_id: p,
                set: SetKey::PostLikers(p),
                gen: post.gen,
                post_id: p,
                owner: post.body.author_uid,
            }
        }
        LikeTarget::Comment(c) => {
            let comment = live_comment(ctx, c).await?;
            let post = visible_post(ctx, comment.post_id, Some(uid)).await?;
            Resolved {
                kind: LikeKind::Comment,
                target_id: c,
                set: SetKey::CommentLikers(comment.post_id, c),
                gen: post.gen,
                post_id: comment.post_id,
                owner: comment.author_uid,
            }
        }
    })
}

/// The live change that mirrors a like write. When the write changed
/// nothing (liked twice, or unliked what was not liked), the set is dropped
/// instead: an earlier request may have written the documents and then lost
/// its live step, and a retry is how a client recovers from that.
fn mirror(set: SetKey, expected_gen: Option<u64>, change: Option<LiveChange>) -> Changes {
    Changes {
        owner: set.owner(),
        expected_gen,
        changes: vec![change.unwrap_or(LiveChange::Drop(LiveKey::Set(set)))],
    }
}

async fn state(ctx: &Context, set: SetKey, uid: i64) -> AppResult<LikeState> {
    let view = load_set(
        ctx,
        SetRead {
            key: set,
            top: 0,
            probe: Some(uid),
            below: None,
        },
    )
    .await?;
    Ok(LikeState {
        liked: view.probe_score.is_some(),
        like_count: view.count,
    })
}

#[tracing::instrument(skip(ctx))]
pub async fn like(ctx: &Context, target: LikeTarget, uid: i64) -> AppResult<LikeState> {
    let r = resolve(ctx, target, uid).await?;
    let (kind, target_id, set, gen) = (r.kind, r.target_id, r.set, r.gen);
    let id = next_id();
    let doc = LikeDoc {
        id,
        kind,
        target_id,
        uid,
        create_time: timestamp_of(id),
    };
    let added = ctx
        .docs
        .insert_like(&doc, ctx.settings.post_id_array_cap)
        .await?;
    let change = added.then_some(LiveChange::SetAdd(set, uid, id));
    ctx.repair
        .apply(ctx.live.as_ref(), vec![mirror(set, gen, change)])
        .await;
    if added {
        notify(
            ctx,
            Event {
                recipient: r.owner,
                kind: NotificationKind::Like,
                actor: uid,
                post_id: Some(r.post_id),
                comment_id: (kind == LikeKind::Comment).then_some(target_id),
                dedupe: format!("like:{}:{target_id}:{uid}", kind.as_str()),
            },
        )
        .await;
    }
    state(ctx, set, uid).await
}

#[tracing::instrument(skip(ctx))]
pub async fn unlike(ctx: &Context, target: LikeTarget, uid: i64) -> AppResult<LikeState> {
    let r = resolve(ctx, target, uid).await?;
    let (kind, target_id, set, gen) = (r.kind, r.target_id, r.set, r.gen);
    let removed = ctx.docs.delete_like(kind, target_id, uid).await?;
    let change = removed.map(|_| LiveChange::SetRemove(set, uid));
    ctx.repair
        .apply(ctx.live.as_ref(), vec![mirror(set, gen, change)])
        .await;
    state(ctx, set, uid).await
}

/// A post's likes, newest first, with the likers' cards.
pub async fn list_likes(
    ctx: &Context,
    post_id: i64,
    viewer: Viewer,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<LikeView>> {
    let post = visible_post(ctx, post_id, viewer).await?;
    let likes = ctx
        .docs
        .likes_page(LikeKind::Post, post_id, cursor.map(|c| c.0), limit + 1)
        .await?;
    let (mut likes, next_cursor) = paginate(likes, limit, |l| l.id);
    likes.retain(|l| post.shows_actor(l.uid));
    let uids: Vec<i64> = likes.iter().map(|l| l.uid).collect();
    let cards = load_cards(ctx, &uids).await?;
    let items = likes
        .into_iter()
        .map(|l| LikeView {
            id: l.id,
            post_id,
            create_time: l.create_time,
            create_time_text: pres.text(l.create_time),
            user: cards
                .get(&l.uid)
                .cloned()
                .unwrap_or_else(|| unknown_user(l.uid)),
        })
        .collect();
    Ok(Page {
        items,
        next_cursor,
        server_time: pres.now,
    })
}
