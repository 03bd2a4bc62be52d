//! Comments and replies: a reply names the comment and the person it
//! answers, so a client shows "张三 replied to 李四".

use super::notifications::{notify, Event};
use super::read::assemble::{comment_views, visible_post};
use super::read::loader::to_json;
use super::read::paging::{fill_page, fill_page_by, keep_where};
use super::read::responses::{CommentView, Page};
use super::{insert_reserved, Context, Presentation, Viewer};
use crate::domain::comment::{CommentContent, NewCommentRequest};
use crate::domain::cursor::{Cursor, HotCursor};
use crate::error::{AppError, AppResult};
use crate::ids::timestamp_of;
use crate::store::NotificationKind;
use crate::store::{BlobKey, Changes, CommentDoc, LiveChange, Owner, ReplyRef, SetKey};

#[tracing::instrument(skip(ctx, req, pres))]
pub async fn create_comment(
    ctx: &Context,
    post_id: i64,
    author: i64,
    req: NewCommentRequest,
    pres: &Presentation,
    reserved: Option<super::idempotency::Reservation>,
) -> AppResult<CommentView> {
    let content = CommentContent::parse(&req.content)?;
    ctx.content_filters
        .refuse_matching("content", content.as_str())?;
    let post = visible_post(ctx, post_id, Some(author)).await?;
    let (reply_to, thread_id) = match req.reply_to_comment_id {
        None => (None, None),
        Some(target) => {
            // On this post or nowhere: a reply's parent is on its post.
            let parent = ctx.docs.comments_by_ids(&[(post_id, target)]).await?.pop();
            let seen = post.seen_with_comments(ctx, parent.as_slice()).await?;
            // A comment the replier may not read is not there to reply to:
            // the same answer as none, so its author is not revealed.
            match parent {
                Some(p) if p.post_id == post_id && !p.deleted && seen.shows_comment(&p) => {
                    (
                        Some(ReplyRef {
                            comment_id: p.id,
                            uid: p.author_uid,
                        }),
                        // A reply to a reply stays in its parent's thread.
                        Some(p.thread_id.unwrap_or(p.id)),
                    )
                }
                // 404, not 400: the request is well formed, the comment it
                // names is not there (for this viewer, on this post).
                _ => return Err(AppError::NotFound("reply-to comment")),
            }
        }
    };
    let content = content.into_inner();
    // An earlier try of this create stored it and failed after: what
    // follows the insert is done again, and is the same done twice.
    let earlier = |id: i64| async move {
        Ok(ctx
            .docs
            .comments_by_id_alone(&[id])
            .await?
            .pop()
            .filter(|c| c.author_uid == author && c.post_id == post_id))
    };
    let doc = insert_reserved(
        reserved,
        |id| {
            let doc = CommentDoc {
                id,
                post_id,
                author_uid: author,
                content: content.clone(),
                createtime: timestamp_of(id),
                reply_to,
                thread_id,
                likes_peak: 0,
                deleted: false,
            };
            async move {
                ctx.docs
                    .insert_comment(&doc, ctx.settings.post_id_array_cap)
                    .await
                    .map(|()| doc)
            }
        },
        earlier,
    )
    .await?;
    if doc.deleted {
        // Made by an earlier try, and deleted since: nothing to answer.
        return Err(AppError::NotFound("comment"));
    }
    let id = doc.id;
    let mut changes = vec![
        LiveChange::LwwAdd(SetKey::PostComments(post_id), id, id),
        LiveChange::PutBlob(BlobKey::CommentBody(post_id, id), to_json(&doc)?),
    ];
    if let Some(r) = reply_to {
        changes.push(LiveChange::LwwAdd(
            SetKey::CommentReplies(post_id, r.comment_id),
            id,
            id,
        ));
    }
    ctx.repair
        .apply(
            ctx.live.as_ref(),
            vec![Changes {
                owner: Owner::Post(post_id),
                expected_gen: post.gen,
                changes,
            }],
        )
        .await;
    super::stream::events::comment_added(ctx, post_id, id);
    let pres = Presentation {
        now: crate::ids::now_ms(),
        ..*pres
    };
    if let Some(r) = reply_to {
        notify(
            ctx,
            Event {
                recipient: r.uid,
                kind: NotificationKind::Reply,
                actor: author,
                post_id: Some(post_id),
                comment_id: Some(id),
                report_id: None,
                case_id: None,
                strike_id: None,
                dedupe: format!("reply:{id}"),
            },
        )
        .await;
    }
    if reply_to.map(|r| r.uid) != Some(post.body.author_uid) {
        notify(
            ctx,
            Event {
                recipient: post.body.author_uid,
                kind: NotificationKind::Comment,
                actor: author,
                post_id: Some(post_id),
                comment_id: Some(id),
                report_id: None,
                case_id: None,
                strike_id: None,
                dedupe: format!("comment:{id}"),
            },
        )
        .await;
    }
    comment_views(ctx, vec![doc], Some(author), &pres, Some(&post))
        .await?
        .pop()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a comment vanished")))
}

/// Where a page of a post's comments starts, and so in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentsFrom {
    /// Newest first, below this comment id (`None`: the first page).
    Newest(Option<i64>),
    /// Hot order (the most likes at once, then newest), below this
    /// (likes peak, id) (`None`: the first page).
    Hot(Option<(i64, i64)>),
}

/// A post's comments the viewer may see, newest first or in hot order
/// (the top N comments of a post, by likes), keyset-paged: neither order shows a
/// comment twice however comments and likes come and go meanwhile.
pub async fn list_comments(
    ctx: &Context,
    post_id: i64,
    viewer: Viewer,
    from: CommentsFrom,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<CommentView>> {
    let post = visible_post(ctx, post_id, viewer).await?;
    let post = &post;
    let shown = |batch: Vec<CommentDoc>, room| async move {
        let seen = post.seen_with_comments(ctx, &batch).await?;
        Ok(keep_where(batch, room, |c| seen.shows_comment(c)))
    };
    let (docs, next_cursor) =
        match from {
            CommentsFrom::Newest(before) => fill_page(
                limit,
                before,
                |before, n| async move { Ok(ctx.docs.comments_page(post_id, before, n).await?) },
                shown,
                |c| c.id,
            )
            .await?,
            CommentsFrom::Hot(after) => fill_page_by(
                limit,
                after,
                |after, n| async move { Ok(ctx.docs.hot_comments_page(post_id, after, n).await?) },
                shown,
                |c| (c.likes_peak, c.id),
                HotCursor::encode,
            )
            .await?,
        };
    Ok(Page {
        items: comment_views(ctx, docs, viewer, pres, Some(post)).await?,
        next_cursor,
        server_time: pres.now,
    })
}

/// The replies in the thread of comment `id`, oldest first, keyset-paged:
/// the replies to it and the replies to those (a client opens a comment's
/// replies from its reply count). For a comment that is itself a reply, the
/// thread it is in. Only what the viewer may see of the post is listed
/// (visibility.rs); a comment the viewer may not see has no thread to show.
pub async fn list_replies(
    ctx: &Context,
    id: i64,
    viewer: Viewer,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<CommentView>> {
    let (comment, post) = visible_comment(ctx, id, viewer).await?;
    let (post_id, thread) = (comment.post_id, comment.thread_id.unwrap_or(comment.id));
    let post = &post;
    let (docs, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |after, n| async move { Ok(ctx.docs.thread_page(post_id, thread, after, n).await?) },
        |batch: Vec<CommentDoc>, room| async move {
            let seen = post.seen_with_comments(ctx, &batch).await?;
            Ok(keep_where(batch, room, |c| seen.shows_comment(c)))
        },
        |c| c.id,
    )
    .await?;
    Ok(Page {
        items: comment_views(ctx, docs, viewer, pres, Some(post)).await?,
        next_cursor,
        server_time: pres.now,
    })
}

/// A live comment the viewer may see, with its post; 404 otherwise, the
/// same answer as for no such comment: which comments exist on posts the
/// viewer may not see is not theirs to learn.
pub async fn visible_comment(
    ctx: &Context,
    id: i64,
    viewer: Viewer,
) -> AppResult<(CommentDoc, crate::service::read::assemble::VisiblePost)> {
    let comment = live_comment(ctx, id).await?;
    let post = match visible_post(ctx, comment.post_id, viewer).await {
        Err(AppError::NotFound(_)) => return Err(AppError::NotFound("comment")),
        other => other?,
    };
    let seen = post
        .seen_with_comments(ctx, std::slice::from_ref(&comment))
        .await?;
    if !seen.shows_comment(&comment) {
        return Err(AppError::NotFound("comment"));
    }
    Ok((comment, post))
}

/// A live comment, or 404: the first step of every write on a comment.
pub async fn live_comment(ctx: &Context, id: i64) -> AppResult<CommentDoc> {
    match ctx.docs.comments_by_id_alone(&[id]).await?.pop() {
        Some(c) if !c.deleted => Ok(c),
        _ => Err(AppError::NotFound("comment")),
    }
}

/// The comment's author or the post's author may delete it. A comment's
/// author may delete it even where they no longer see its post (a block, a
/// hide); anyone else gets 404 for a comment on a post they may not see,
/// the same as for no such comment.
#[tracing::instrument(skip(ctx))]
pub async fn delete_comment(ctx: &Context, id: i64, uid: i64) -> AppResult<()> {
    let comment = live_comment(ctx, id).await?;
    if comment.author_uid == uid {
        return remove_comment(ctx, &comment).await;
    }
    let post = match visible_post(ctx, comment.post_id, Some(uid)).await {
        Err(AppError::NotFound(_)) => return Err(AppError::NotFound("comment")),
        other => other?,
    };
    if post.body.author_uid != uid {
        return Err(AppError::Forbidden(
            "only the comment's author or the post's author may delete it",
        ));
    }
    remove_comment(ctx, &comment).await
}

/// Deletes a comment and takes it out of its post's sets (last-writer-wins:
/// no ordering needed).
pub async fn remove_comment(ctx: &Context, comment: &CommentDoc) -> AppResult<()> {
    let id = comment.id;
    ctx.docs.delete_comment(comment).await?;
    let mut changes = vec![LiveChange::LwwRemove(
        SetKey::PostComments(comment.post_id),
        id,
        id,
    )];
    if let Some(r) = comment.reply_to {
        changes.push(LiveChange::LwwRemove(
            SetKey::CommentReplies(comment.post_id, r.comment_id),
            id,
            id,
        ));
    }
    ctx.repair
        .apply_unordered(ctx.live.as_ref(), Owner::Post(comment.post_id), changes)
        .await;
    super::stream::events::counts_changed(ctx, comment.post_id);
    Ok(())
}
