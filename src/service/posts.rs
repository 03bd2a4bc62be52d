//! Publishing, reading, deleting and listing posts.

use std::collections::HashSet;

use super::assemble::{assemble_posts, assemble_visible, visible_post};
use super::loader::to_json;
use super::notifications::{notify, Event};
use super::paging::fill_page;
use super::views::{ExpandedPost, Page};
use super::{can_see, with_fresh_id, Context, Presentation, Relations, Viewer};
use crate::domain::cursor::Cursor;
use crate::domain::post::NewPost;
use crate::error::{AppError, AppResult};
use crate::store::{
    BlobKey, Changes, LiveChange, NotificationKind, Owner, PostBody, PostDoc, SetKey,
};

#[tracing::instrument(skip(ctx, post, pres))]
pub async fn create_post(
    ctx: &Context,
    author: i64,
    post: NewPost,
    pres: &Presentation,
) -> AppResult<ExpandedPost> {
    let notified = check_mentions(ctx, author, &post).await?;
    let doc = with_fresh_id(|id| {
        let doc = PostDoc {
            id,
            author_uid: author,
            category: post.category,
            content: post.content.clone(),
            picture_urls: post.picture_urls.clone(),
            device: post.device.clone(),
            geo: post.geo.clone(),
            visibility: post.visibility,
            createtime: crate::ids::timestamp_of(id),
            comments_postid: Vec::new(),
            likes_postid: Vec::new(),
            deleted: false,
        };
        async move { ctx.docs.insert_post(&doc).await.map(|()| doc) }
    })
    .await?;
    let id = doc.id;
    ctx.celebrity_cache.forget_posts_of(author);
    // A new post's live state is known without reading anything back: empty
    // sets and the body. Writing it now makes the first read warm.
    let body = PostBody::from(doc);
    super::timeline::spawn_fan_out(ctx, &body);
    ctx.repair
        .apply(
            ctx.live.as_ref(),
            vec![Changes {
                owner: Owner::Post(id),
                expected_gen: None,
                changes: vec![LiveChange::PutBlob(BlobKey::PostBody(id), to_json(&body)?)],
            }],
        )
        .await;
    // serverTime must not precede the createtime it is compared with.
    let pres = Presentation {
        now: crate::ids::now_ms(),
        ..*pres
    };
    let notified = notified.iter().map(|uid| {
        notify(
            ctx,
            Event {
                recipient: *uid,
                kind: NotificationKind::Mention,
                actor: author,
                post_id: Some(id),
                comment_id: None,
                dedupe: format!("mention:{id}:{uid}"),
            },
        )
    });
    futures_util::future::join_all(notified).await;
    let mut posts = assemble_posts(ctx, &[id], Some(author), &pres).await?;
    posts.pop().ok_or_else(|| {
        AppError::Internal(anyhow::anyhow!("a post vanished right after publishing"))
    })
}

/// Refuses the post, naming them, unless everyone it mentions exists and
/// is in its audience (visibility.rs, as each of them relates to the
/// author); answers whom to notify. Someone across a block, either way, is
/// passed over in silence: naming them would tell the author who blocked
/// them, and they would not see the post anyway.
async fn check_mentions(ctx: &Context, author: i64, post: &NewPost) -> AppResult<Vec<i64>> {
    let mentioned = &post.mentions;
    if mentioned.is_empty() {
        return Ok(Vec::new());
    }
    if mentioned.contains(&author) {
        return Err(AppError::invalid(
            "mentions",
            "a post cannot mention its author",
        ));
    }
    let (users, (followed_by_author, following_author), blocked) = tokio::try_join!(
        ctx.docs.users_by_ids(mentioned),
        ctx.docs.follow_edges(author, mentioned),
        ctx.docs.blocks_between(author, mentioned),
    )?;
    let named = |uids: Vec<i64>| {
        uids.iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let missing: Vec<i64> = mentioned
        .iter()
        .copied()
        .filter(|m| !users.iter().any(|u| u.uid == *m && !u.is_erased()))
        .collect();
    if !missing.is_empty() {
        return Err(AppError::invalid(
            "mentions",
            format!("no such users: {}", named(missing)),
        ));
    }
    let probe = PostBody {
        id: 0,
        author_uid: author,
        category: post.category,
        content: String::new(),
        picture_urls: Vec::new(),
        device: String::new(),
        geo: None,
        visibility: post.visibility,
        createtime: 0,
        deleted: false,
    };
    let unseeing: Vec<i64> = mentioned
        .iter()
        .copied()
        .filter(|m| !blocked.contains(m))
        .filter(|m| {
            let follows = following_author.contains(m);
            let rel = Relations {
                viewer: Some(*m),
                following: follows.then_some(author).into_iter().collect(),
                friends: (follows && followed_by_author.contains(m))
                    .then_some(author)
                    .into_iter()
                    .collect(),
                blocks: HashSet::new(),
            };
            !can_see(&probe, &rel)
        })
        .collect();
    if !unseeing.is_empty() {
        return Err(AppError::invalid(
            "mentions",
            format!("these users may not see the post: {}", named(unseeing)),
        ));
    }
    Ok(mentioned
        .iter()
        .copied()
        .filter(|m| !blocked.contains(m))
        .collect())
}

pub async fn get_post(
    ctx: &Context,
    id: i64,
    viewer: Viewer,
    pres: &Presentation,
) -> AppResult<ExpandedPost> {
    assemble_posts(ctx, &[id], viewer, pres)
        .await?
        .pop()
        .ok_or(AppError::NotFound("post"))
}

#[tracing::instrument(skip(ctx))]
pub async fn delete_post(ctx: &Context, id: i64, uid: i64) -> AppResult<()> {
    let body = visible_post(ctx, id, Some(uid)).await?.body;
    if body.author_uid != uid {
        return Err(AppError::Forbidden("only the author may delete a post"));
    }
    remove_post(ctx, body).await
}

/// Deletes a post and makes every read see it gone: its body becomes a
/// tombstone, its sets are dropped.
pub async fn remove_post(ctx: &Context, body: PostBody) -> AppResult<()> {
    let id = body.id;
    ctx.docs.delete_post(id).await?;
    ctx.celebrity_cache.forget_posts_of(body.author_uid);
    let tomb = PostBody {
        deleted: true,
        ..body
    };
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::Post(id),
            vec![
                LiveChange::PutBlob(BlobKey::PostBody(id), to_json(&tomb)?),
                LiveChange::Drop(crate::store::LiveKey::Set(SetKey::PostLikers(id))),
                LiveChange::Drop(crate::store::LiveKey::Set(SetKey::PostComments(id))),
            ],
        )
        .await;
    Ok(())
}

/// A user's posts, newest first, that the viewer may see.
pub async fn user_posts(
    ctx: &Context,
    author: i64,
    viewer: Viewer,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<ExpandedPost>> {
    let (items, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move { Ok(ctx.docs.post_ids_by_author(author, before, n).await?) },
        |ids, room| async move { assemble_visible(ctx, &ids, room, viewer, pres).await },
        |id| *id,
    )
    .await?;
    Ok(Page {
        items,
        next_cursor,
        server_time: pres.now,
    })
}
