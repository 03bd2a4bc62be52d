//! Likes on posts and comments. The unique (kind, target, uid) index makes
//! liking twice one like, however many requests race; the live sets are
//! keyed by uid, so replaying a change is harmless too.

use super::comments::live_comment;
use super::jobs::like_arrays;
use super::notifications::{notify, Event};
use super::read::assemble::{
    assemble_posts, comment_views, load_cards, page_of_named_posts, visible_post, VisiblePost,
};
use super::read::paging::{fill_page, keep_where};
use super::read::post_json::PostJson;
use super::read::responses::{unknown_user, LikeState, LikeView, Page};
use super::{with_fresh_id, Context, Presentation, Viewer};
use crate::domain::cursor::Cursor;
use crate::error::{AppError, AppResult};
use crate::store::{CommentDoc, LikeDoc, LikeKind, LiveChange, LiveKey, NotificationKind, SetKey};

/// Which thing is liked.
#[derive(Debug, Clone, Copy)]
pub enum LikeTarget {
    Post(i64),
    Comment(i64),
}

/// What a like is on: its kind and target, the live set that mirrors its
/// likers, the post as the liker sees it (with its generation as read before
/// the like is written), and whom a new like notifies.
struct Resolved {
    kind: LikeKind,
    target_id: i64,
    set: SetKey,
    post: VisiblePost,
    comment: Option<CommentDoc>,
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
                owner: post.body.author_uid,
                post,
                comment: None,
            }
        }
        LikeTarget::Comment(c) => {
            let comment = live_comment(ctx, c).await?;
            // On a post the liker may not see, the same answer as none.
            let post = match visible_post(ctx, comment.post_id, Some(uid)).await {
                Err(AppError::NotFound(_)) => return Err(AppError::NotFound("comment")),
                other => other?,
            };
            // A comment the liker may not read (across a block, or outside
            // WeChat's friends rule) is not there for them to like either.
            let seen = post
                .seen_with_comments(ctx, std::slice::from_ref(&comment))
                .await?;
            if !seen.shows_comment(&comment) {
                return Err(AppError::NotFound("comment"));
            }
            Resolved {
                kind: LikeKind::Comment,
                target_id: c,
                set: SetKey::CommentLikers(comment.post_id, c),
                owner: comment.author_uid,
                post,
                comment: Some(comment),
            }
        }
    })
}

/// Mirrors a like write in the likers set: an add or removal by like id,
/// which needs no ordering against other likes (the set is last-writer-wins).
async fn mirror(ctx: &Context, set: SetKey, change: LiveChange) {
    ctx.repair
        .apply_unordered(ctx.live.as_ref(), set.owner(), vec![change])
        .await;
}

/// The like as the liker sees it afterwards, read as any read would (the
/// count they may see, not the raw total). A repeated like or unlike wrote
/// nothing and costs only this read; if the live set disagrees with the
/// documents (an earlier request's live step was lost), it is dropped and
/// read again: a retry is how a client recovers from that.
async fn settled_state(ctx: &Context, r: Resolved, uid: i64, liked: bool) -> AppResult<LikeState> {
    let seen = state(ctx, &r, uid).await?;
    if seen.liked == liked {
        return Ok(seen);
    }
    tracing::info!(?r.set, uid, "likers set disagreed with the documents; dropping it");
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            r.set.owner(),
            vec![LiveChange::Drop(LiveKey::Set(r.set))],
        )
        .await;
    state(ctx, &r, uid).await
}

async fn state(ctx: &Context, r: &Resolved, uid: i64) -> AppResult<LikeState> {
    let pres = Presentation {
        now: crate::ids::now_ms(),
        ..Presentation::default()
    };
    let (liked, like_count) = match &r.comment {
        None => {
            let post = assemble_posts(ctx, &[r.target_id], Some(uid), &pres)
                .await?
                .pop()
                .ok_or(AppError::NotFound("post"))?;
            post.like_state()
        }
        Some(comment) => {
            let view = comment_views(ctx, vec![comment.clone()], Some(uid), &pres, Some(&r.post))
                .await?
                .pop()
                .ok_or(AppError::NotFound("comment"))?;
            (view.liked_by_me, view.like_count)
        }
    };
    Ok(LikeState { liked, like_count })
}

#[tracing::instrument(skip(ctx))]
pub async fn like(ctx: &Context, target: LikeTarget, uid: i64) -> AppResult<LikeState> {
    let r = resolve(ctx, target, uid).await?;
    let (kind, target_id, set) = (r.kind, r.target_id, r.set);
    // A post's like array is written in batches where there is a queue
    // (like_arrays): the like document alone is written here.
    let queued = ctx.like_arrays_queued && kind == LikeKind::Post;
    let (added, id) = with_fresh_id(|id| {
        let doc = LikeDoc::new(id, kind, target_id, uid);
        async move {
            let added = if queued {
                ctx.docs.insert_like_only(&doc).await
            } else {
                ctx.docs
                    .insert_like(&doc, ctx.settings.post_id_array_cap)
                    .await
            };
            added.map(|added| (added, id))
        }
    })
    .await?;
    if added && queued {
        like_arrays::refresh_later(ctx, target_id).await?;
    }
    if added {
        mirror(ctx, set, LiveChange::LwwAdd(set, uid, id)).await;
        if kind == LikeKind::Post {
            super::stream::events::counts_changed(ctx, target_id);
        }
        if kind == LikeKind::Comment {
            // The like stands whatever this does; a peak left low only
            // ranks the comment lower in the hot order until its next like.
            if let Err(e) = ctx.docs.raise_likes_peak(r.post.body.id, target_id).await {
                tracing::warn!(error = %e, comment = target_id, "could not raise a comment's likes peak");
            }
        }
        notify(
            ctx,
            Event {
                recipient: r.owner,
                kind: NotificationKind::Like,
                actor: uid,
                post_id: Some(r.post.body.id),
                comment_id: (kind == LikeKind::Comment).then_some(target_id),
                report_id: None,
                case_id: None,
                strike_id: None,
                dedupe: format!("like:{}:{target_id}:{uid}", kind.as_str()),
            },
        )
        .await;
    }
    settled_state(ctx, r, uid, true).await
}

#[tracing::instrument(skip(ctx))]
pub async fn unlike(ctx: &Context, target: LikeTarget, uid: i64) -> AppResult<LikeState> {
    let r = resolve(ctx, target, uid).await?;
    let (kind, target_id, set) = (r.kind, r.target_id, r.set);
    let queued = ctx.like_arrays_queued && kind == LikeKind::Post;
    let removed = if queued {
        ctx.docs.delete_like_only(kind, target_id, uid).await?
    } else {
        ctx.docs.delete_like(kind, target_id, uid).await?
    };
    if let Some(like) = removed {
        if queued {
            like_arrays::refresh_later(ctx, target_id).await?;
        }
        mirror(ctx, set, LiveChange::LwwRemove(set, uid, like.id)).await;
        if kind == LikeKind::Post {
            super::stream::events::counts_changed(ctx, target_id);
        }
    }
    settled_state(ctx, r, uid, false).await
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
    let post = &post;
    let (likes, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move {
            Ok(ctx
                .docs
                .likes_page(LikeKind::Post, post_id, before, n)
                .await?)
        },
        |batch: Vec<LikeDoc>, room| async move {
            let seen = post.seen_with(ctx, batch.iter().map(|l| l.uid)).await?;
            Ok(keep_where(batch, room, |l| seen.shows_actor(l.uid)))
        },
        |l| l.id,
    )
    .await?;
    let uids: Vec<i64> = likes.iter().map(|l| l.uid).collect();
    let cards = load_cards(ctx, &uids).await?;
    // A liker without a card (suspended, or deleted and not yet erased)
    // is not shown meanwhile.
    let items = likes
        .into_iter()
        .filter(|l| cards.contains_key(&l.uid))
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

/// The posts `uid` liked, newest like first (我的点赞记录), each
/// expanded for them. A post deleted since, or one they may no longer see
/// (visibility.rs: a block, a changed friendship), drops out; likes of
/// comments are not listed here.
pub async fn liked_posts(
    ctx: &Context,
    uid: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<PostJson>> {
    page_of_named_posts(
        ctx,
        uid,
        cursor,
        limit,
        pres,
        |before, n| async move { Ok(ctx.docs.likes_by_user(uid, before, n).await?) },
        |l: &LikeDoc| (l.kind == LikeKind::Post).then_some(l.target_id),
        |l: &LikeDoc| l.id,
    )
    .await
}
