//! Publishing, reading, deleting and listing posts.

use super::notifications::{notify, Event};
use super::read::assemble::{assemble_posts, assemble_visible, load_cards, visible_post};
use super::read::loader::to_json;
use super::read::paging::fill_page;
use super::read::post_json::PostJson;
use super::read::responses::Page;
use super::read::visibility::{Place, RelationSets};
use super::{can_see, insert_reserved, media, Context, Presentation, Relations, Viewer};
use crate::domain::cursor::Cursor;
use crate::domain::post::NewPost;
use crate::domain::user::AlbumWindow;
use crate::error::{AppError, AppResult};
use crate::store::{
    BlobKey, CachedCard, Changes, FilterKind, LabelDoc, LiveChange, NotificationKind, Owner,
    PostBody, PostDoc, PostModeration, SetKey, StoreError,
};

#[tracing::instrument(skip(ctx, post, pres))]
pub async fn create_post(
    ctx: &Context,
    author: i64,
    post: NewPost,
    pres: &Presentation,
    reserved: Option<super::idempotency::Reservation>,
) -> AppResult<PostJson> {
    let held = ctx.content_filters.judge("content", &post.content)?;
    let labels = check_audience(ctx, author, &post).await?;
    let notified = check_mentions(ctx, author, &post, &labels).await?;
    // An earlier try of this create stored it and failed after: the rest
    // (live state, fan-out, notifications) is done again, and is the same
    // done twice.
    let earlier = |id: i64| async move {
        Ok(ctx
            .docs
            .posts_by_ids(&[id])
            .await?
            .pop()
            .filter(|p| p.author_uid == author))
    };
    // The pictures it names, checked before anything is written; an
    // earlier try of this same post may have taken them already.
    let own_tries: Vec<i64> = reserved
        .iter()
        .flat_map(|r| std::iter::once(r.id).chain(r.earlier.iter().copied()))
        .collect();
    let chosen = media::attachments::choose(ctx, author, &post.media_ids, &own_tries).await?;
    // Whether this try made it (not an earlier one, whose post may have
    // been viewed and commented on since).
    let made_here = std::sync::atomic::AtomicBool::new(false);
    let made = insert_reserved(
        reserved,
        |id| {
            let post = &post;
            let (made_here, chosen, held) = (&made_here, &chosen, &held);
            async move {
                let media = media::attachments::attach(ctx, author, chosen, id).await?;
                let doc = PostDoc {
                    id,
                    author_uid: author,
                    category: post.category,
                    content: post.content.clone(),
                    picture_urls: post.picture_urls.clone(),
                    media,
                    device: post.device.clone(),
                    geo: post.geo.clone(),
                    visibility: post.visibility,
                    audience: post.audience.clone(),
                    createtime: crate::ids::timestamp_of(id),
                    comments_postid: Vec::new(),
                    likes_postid: Vec::new(),
                    deleted: false,
                    moderation: held.as_ref().map(|_| PostModeration::Held),
                };
                if let Err(e) = ctx.docs.insert_post(&doc).await {
                    // Surely not made (its id was taken): its pictures are
                    // free for the next try, under another id. Any other
                    // error may have come after the insert did land: they
                    // stay taken, and the sweep frees them if no post
                    // with this id turns up (or a retry takes them back).
                    if matches!(e, StoreError::IdTaken | StoreError::Duplicate(_)) {
                        media::attachments::detach(ctx, author, chosen, id).await?;
                    }
                    return Err(e);
                }
                made_here.store(true, std::sync::atomic::Ordering::Relaxed);
                ctx.search.wake();
                Ok(doc)
            }
        },
        earlier,
    )
    .await;
    let doc = match made {
        Err(StoreError::Duplicate(media::attachments::TAKEN_MEANWHILE)) => {
            return Err(AppError::Conflict(
                "a picture in mediaIds was taken by another post at the same moment".into(),
            ))
        }
        other => other?,
    };
    if doc.deleted {
        // Made by an earlier try, and deleted since: no fan-out, no
        // mentions again, nothing to answer.
        return Err(AppError::NotFound("post"));
    }
    let id = doc.id;
    ctx.pulled_authors.forget_posts_of(author);
    // A new post's live state is known without reading anything back: empty
    // sets and the body. Writing it now makes the first read warm.
    let body = PostBody::from(doc);
    super::feed::fan_out::spawn_fan_out(ctx, &body);
    ctx.repair
        .apply(
            ctx.live.as_ref(),
            vec![Changes {
                owner: Owner::Post(id),
                expected_gen: None,
                changes: new_post_state(&body, made_here.into_inner())?,
            }],
        )
        .await;
    // Its author sees a held post at once; a moderator decides for the
    // rest. It tells nobody it names them.
    let held_here = body.moderation == Some(PostModeration::Held);
    if let (true, Some(held)) = (held_here, held) {
        super::moderation::hold_post(ctx, &body, held).await?;
    }
    // serverTime must not precede the createtime it is compared with.
    let pres = Presentation {
        now: crate::ids::now_ms(),
        ..*pres
    };
    let notified = notified.iter().filter(|_| !held_here).map(|uid| {
        notify(
            ctx,
            Event {
                recipient: *uid,
                kind: NotificationKind::Mention,
                actor: author,
                post_id: Some(id),
                comment_id: None,
                report_id: None,
                case_id: None,
                strike_id: None,
                dedupe: format!("mention:{id}:{uid}"),
            },
        )
    });
    futures_util::future::join_all(notified).await;
    let mut posts = assemble_posts(ctx, &[id], Some(author), &pres).await?;
    // Deleted since it was made (a retry long after, or a delete racing
    // the read-back): there is nothing to show.
    posts.pop().ok_or(AppError::NotFound("post"))
}

/// A new post's live state: everything a read of it asks for, so that no
/// first read rebuilds it from the documents. Nobody has liked, commented
/// on or shared it yet; nor viewed it, when this request `made` it (a
/// retry of an earlier try's may have been viewed since).
fn new_post_state(body: &PostBody, made: bool) -> AppResult<Vec<LiveChange>> {
    let id = body.id;
    let mut changes = vec![
        LiveChange::PutBlob(BlobKey::PostBody(id), to_json(body)?),
        LiveChange::Begin(SetKey::PostLikers(id)),
        LiveChange::Begin(SetKey::PostComments(id)),
        LiveChange::Begin(SetKey::PostShares(id)),
    ];
    if made {
        changes.push(LiveChange::PutBlob(BlobKey::ViewCount(id), "0".into()));
        changes.push(LiveChange::PutBlob(BlobKey::CommentPeople(id), "[]".into()));
    }
    Ok(changes)
}

/// The labels an `only` or `except` post names, which must be its
/// author's: 422 naming those that are not.
async fn check_audience(ctx: &Context, author: i64, post: &NewPost) -> AppResult<Vec<LabelDoc>> {
    let Some(audience) = &post.audience else {
        return Ok(Vec::new());
    };
    if audience.labels.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<(i64, i64)> = audience.labels.iter().map(|l| (author, *l)).collect();
    let found = ctx.docs.labels_by_ids(&keys).await?;
    let unknown: Vec<String> = audience
        .labels
        .iter()
        .filter(|l| !found.iter().any(|f| f.id == **l))
        .map(|l| l.to_string())
        .collect();
    if !unknown.is_empty() {
        return Err(AppError::unprocessable(
            "audience.labels",
            format!("no such labels of yours: {}", unknown.join(", ")),
        ));
    }
    Ok(found)
}

/// Refuses the post, naming them, unless everyone it mentions exists and
/// is in its audience (visibility.rs, as each of them relates to the
/// author); answers whom to notify. Someone across a block, either way, is
/// passed over in silence: naming them would tell the author who blocked
/// them, and they would not see the post anyway.
async fn check_mentions(
    ctx: &Context,
    author: i64,
    post: &NewPost,
    labels: &[LabelDoc],
) -> AppResult<Vec<i64>> {
    let mentioned = &post.mentions;
    if mentioned.is_empty() {
        return Ok(Vec::new());
    }
    if mentioned.contains(&author) {
        return Err(AppError::unprocessable(
            "mentions",
            "a post cannot mention its author",
        ));
    }
    let author_only = [author];
    let store_reads = async {
        Ok::<_, AppError>(tokio::try_join!(
            ctx.docs.follow_edges(author, mentioned),
            ctx.docs.blocks_between(author, mentioned),
            ctx.docs.blockers_among(author, mentioned),
            ctx.docs.filters_set_by(FilterKind::Hide, &author_only),
        )?)
    };
    let (cards, ((followed_by_author, following_author), blocked, blockers, hides)) =
        tokio::try_join!(load_cards(ctx, mentioned), store_reads)?;
    let named = |uids: Vec<i64>| {
        uids.iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Someone who blocked the author, or who is suspended, is named as no
    // such user, as their profile answers: no mention tells either apart
    // from a uid nobody has (README, Security: what a block shows).
    let missing: Vec<i64> = mentioned
        .iter()
        .copied()
        .filter(|m| !cards.contains_key(m) || blockers.contains(m))
        .collect();
    if !missing.is_empty() {
        return Err(AppError::unprocessable(
            "mentions",
            format!("no such users: {}", named(missing)),
        ));
    }
    let probe = PostBody::from(PostDoc {
        category: post.category,
        visibility: post.visibility,
        audience: post.audience.clone(),
        ..PostDoc::text(0, author, "", crate::ids::now_ms())
    });
    let unseeing: Vec<i64> = mentioned
        .iter()
        .copied()
        .filter(|m| !blocked.contains(m))
        .filter(|m| {
            let follows = following_author.contains(m);
            let sets = RelationSets {
                following: follows.then_some(author).into_iter().collect(),
                friends: (follows && followed_by_author.contains(m))
                    .then_some(author)
                    .into_iter()
                    .collect(),
                // A hide sleeps while its follow is gone, as on reads.
                hidden_by: (follows && hides.iter().any(|h| h.other == *m))
                    .then_some(author)
                    .into_iter()
                    .collect(),
                ..RelationSets::default()
            };
            let mut rel = Relations {
                viewer: Some(*m),
                sets: std::sync::Arc::new(sets),
                ..Relations::default()
            };
            rel.authors.now = probe.createtime;
            for label in labels {
                rel.authors
                    .labels
                    .insert((author, label.id), label.members.contains(m));
            }
            !can_see(&probe, &rel)
        })
        .collect();
    if !unseeing.is_empty() {
        return Err(AppError::unprocessable(
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

/// One post, expanded for the viewer; a signed-in reader's read of
/// someone else's post is counted as their view of it (`post_views`).
pub async fn get_post(
    ctx: &Context,
    id: i64,
    viewer: Viewer,
    pres: &Presentation,
) -> AppResult<PostJson> {
    let post = assemble_posts(ctx, &[id], viewer, pres)
        .await?
        .pop()
        .ok_or(AppError::NotFound("post"))?;
    if let Some(reader) = viewer.filter(|v| *v != post.author) {
        ctx.post_views.record(id, reader, pres.now);
    }
    Ok(post)
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
    media::sweeps::check_soon(ctx, body.author_uid, &body.media).await?;
    ctx.docs.delete_post(id).await?;
    ctx.search.forget(id);
    ctx.pulled_authors.forget_posts_of(body.author_uid);
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
    super::stream::events::post_gone(ctx, id);
    // Its pictures go with it; a failure here leaves them to the sweep,
    // which `check_soon` pointed at them.
    if let Err(e) = media::attachments::delete_stored(ctx, tomb.author_uid, &tomb.media).await {
        tracing::warn!(post = id, error = %e, "could not delete a deleted post's pictures yet");
    }
    Ok(())
}

/// A user's album: their posts, newest first, that the viewer may see.
/// Past the author's album window the album ends for everyone but the
/// author: the window is read once a page reaches posts old enough for it
/// to matter, and older ids are not read at all (a post's id carries its
/// time).
pub async fn album(
    ctx: &Context,
    author: i64,
    viewer: Viewer,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<PostJson>> {
    let window_start: tokio::sync::OnceCell<Option<i64>> = tokio::sync::OnceCell::new();
    let window_start = &window_start;
    let (items, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move {
            let mut ids = ctx.docs.post_ids_by_author(author, before, n).await?;
            let oldest = ids.last().map(|p| crate::ids::timestamp_of(*p));
            let now = crate::ids::now_ms();
            let old = oldest.is_some_and(|t| t < now - AlbumWindow::NARROWEST_MS);
            if old && viewer != Some(author) {
                let start = window_start
                    .get_or_try_init(|| async {
                        let cards = album_window_of(ctx, author).await?;
                        Ok::<_, AppError>(cards.and_then(|w| w.span_ms()).map(|span| now - span))
                    })
                    .await?;
                if let Some(start) = *start {
                    ids.retain(|p| crate::ids::timestamp_of(*p) >= start);
                }
            }
            Ok(ids)
        },
        |ids, room| async move {
            assemble_visible(ctx, &ids, room, viewer, pres, Place::Elsewhere).await
        },
        |id| *id,
    )
    .await?;
    // An empty page that goes on would tell an album shown to nobody (an
    // author who blocked the viewer, or one suspended) from a uid nobody
    // has, whose album ends at once: such an album ends here too. Only an
    // empty page with a cursor pays for the question.
    let ends_here =
        next_cursor.is_some() && items.is_empty() && !album_open_to(ctx, author, viewer).await?;
    let next_cursor = if ends_here { None } else { next_cursor };
    Ok(Page {
        items,
        next_cursor,
        server_time: pres.now,
    })
}

/// Whether the author has a card and, for a signed-in viewer, did not
/// block them: whether their album can show the viewer anything.
async fn album_open_to(ctx: &Context, author: i64, viewer: Viewer) -> AppResult<bool> {
    if load_cards(ctx, &[author]).await?.is_empty() {
        return Ok(false);
    }
    Ok(match viewer {
        Some(v) if v != author => ctx.docs.blockers_among(v, &[author]).await?.is_empty(),
        _ => true,
    })
}

/// The author's album window, from their cached card.
async fn album_window_of(ctx: &Context, author: i64) -> AppResult<Option<AlbumWindow>> {
    let mut loader = super::read::loader::Loader::new(ctx);
    let loaded = loader.load(&[BlobKey::Card(author)], &[]).await?;
    loader.finish("album_window");
    loaded
        .blobs
        .get(&BlobKey::Card(author))
        .map(|text| super::read::loader::from_json::<CachedCard>(text).map(|c| c.album_window))
        .transpose()
}
