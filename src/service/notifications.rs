//! Notifications (the message list): a like,
//! comment, reply or follow tells its target, never oneself, once per event
//! (liking, unliking and liking again notifies once). They expire after 30
//! days: a filter at read on every backend hides them at once, and a sweep
//! (`service::jobs::expiry`; on MongoDB also a TTL index) deletes them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::read::assemble::load_cards;
use super::read::loader::{from_json, Loader};
use super::read::paging::{fill_page, keep_where};
use super::read::responses::{unknown_user, Page};
use super::{can_see, read::visibility_reads, with_fresh_id, Context, Presentation, Relations};
use crate::domain::cursor::Cursor;
use crate::error::AppResult;
use crate::store::{BlobKey, NotificationDoc, NotificationKind, PostBody, UserCard};

pub const KEEP_MS: i64 = 30 * 24 * 3600 * 1000;

/// What happened, to whom, by whom.
pub struct Event {
    pub recipient: i64,
    pub kind: NotificationKind,
    pub actor: i64,
    pub post_id: Option<i64>,
    pub comment_id: Option<i64>,
    pub report_id: Option<i64>,
    pub case_id: Option<i64>,
    pub strike_id: Option<i64>,
    /// Names the event, so a repeat of it is not notified again.
    pub dedupe: String,
}

/// Records the notification. Never fails the write it follows: a lost
/// notification is logged, the like or comment stands.
pub async fn notify(ctx: &Context, event: Event) {
    if event.recipient == event.actor {
        return;
    }
    let result: crate::store::StoreResult<bool> = async {
        // The service itself (uid 0) is nobody to block.
        if event.actor != 0
            && !ctx
                .docs
                .blocks_between(event.recipient, &[event.actor])
                .await?
                .is_empty()
        {
            return Ok(false);
        }
        let (added, id) = with_fresh_id(|id| {
            let n = NotificationDoc {
                post_id: event.post_id,
                comment_id: event.comment_id,
                report_id: event.report_id,
                case_id: event.case_id,
                strike_id: event.strike_id,
                dedupe: event.dedupe.clone(),
                ..NotificationDoc::new(id, event.recipient, event.kind, event.actor)
            };
            async move {
                ctx.docs
                    .insert_notification(&n)
                    .await
                    .map(|added| (added, id))
            }
        })
        .await?;
        if added {
            super::stream::events::notified(ctx, event.recipient, id);
        }
        Ok(added)
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not record a notification");
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostSnippet {
    pub id: i64,
    /// The first 100 characters.
    pub content: String,
    pub picture_url: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentSnippet {
    pub id: i64,
    pub content: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationView {
    pub id: i64,
    pub kind: NotificationKind,
    pub actor: UserCard,
    pub post_id: Option<i64>,
    pub comment_id: Option<i64>,
    /// The closed report, for `report_closed` (`GET /me/reports` has it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_id: Option<i64>,
    /// The case, for `report_opened` (`GET /admin/reports/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case_id: Option<i64>,
    /// The strike, for `strike` and `appeal_closed` (`GET /me/strikes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strike_id: Option<i64>,
    /// Null when the post is gone.
    pub post: Option<PostSnippet>,
    /// Null when the comment is gone.
    pub comment: Option<CommentSnippet>,
    pub createtime: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub createtime_text: Option<String>,
    pub read: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Unread {
    pub unread: u64,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarkRead {
    /// Marks notifications up to this id read; all of them when absent.
    #[serde(default, deserialize_with = "crate::domain::optional_id")]
    pub up_to: Option<i64>,
}

fn snippet(text: &str) -> String {
    text.chars().take(100).collect()
}

/// A recipient's notifications, newest first, with the actor's card and the
/// post and comment they concern.
pub async fn list(
    ctx: &Context,
    uid: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<NotificationView>> {
    let since = pres.now - KEEP_MS;
    // Read with today's relations: someone blocked since is not shown (and
    // the page reads on past them), and a post the recipient may no longer
    // see is not quoted.
    let mut loader = Loader::new(ctx);
    let related = loader.load(&[], &Relations::reads(ctx, Some(uid))).await?;
    let relations = Relations::from_loaded(Some(uid), &related);
    let rel = &relations;
    let judged = &JudgedActors::default();
    let (docs, next_cursor) = fill_page(
        limit,
        cursor.map(|c| c.0),
        |before, n| async move { Ok(ctx.docs.notifications_page(uid, since, before, n).await?) },
        |batch: Vec<NotificationDoc>, room| async move {
            let shown = shown_ids(ctx, rel, judged, &batch).await?;
            Ok(keep_where(batch, room, |n: &NotificationDoc| {
                shown.contains(&n.id)
            }))
        },
        |n| n.id,
    )
    .await?;
    let items = expand(ctx, docs, loader, relations, pres).await?;
    Ok(Page {
        items,
        next_cursor,
        server_time: pres.now,
    })
}

/// One of `uid`'s notifications, expanded as `list` shows it; `None` when
/// it is gone, expired, or its actor is one `list` would leave out.
pub async fn one(
    ctx: &Context,
    uid: i64,
    id: i64,
    pres: &Presentation,
) -> AppResult<Option<NotificationView>> {
    let since = pres.now - KEEP_MS;
    let mut loader = Loader::new(ctx);
    let reads = Relations::reads(ctx, Some(uid));
    let (found, related) = tokio::try_join!(
        async {
            Ok(ctx
                .docs
                .notifications_page(uid, since, Some(id.saturating_add(1)), 1)
                .await?)
        },
        loader.load(&[], &reads),
    )?;
    let relations = Relations::from_loaded(Some(uid), &related);
    let docs: Vec<NotificationDoc> = found.into_iter().filter(|n| n.id == id).collect();
    let rel = visibility_reads::knowing(ctx, &relations, docs.iter().map(|n| n.actor)).await?;
    if docs.iter().any(|n| rel.blocked(n.actor)) {
        loader.finish("notification");
        return Ok(None);
    }
    let relations = rel.into_owned();
    Ok(expand(ctx, docs, loader, relations, pres).await?.pop())
}

/// Notifications as the recipient sees them: the actor's card, and the post
/// and comment they concern where the recipient may still see them.
async fn expand(
    ctx: &Context,
    docs: Vec<NotificationDoc>,
    mut loader: Loader<'_>,
    mut relations: Relations,
    pres: &Presentation,
) -> AppResult<Vec<NotificationView>> {
    let actors: Vec<i64> = docs.iter().map(|n| n.actor).collect();
    let post_keys: Vec<BlobKey> = docs
        .iter()
        .filter_map(|n| n.post_id.map(BlobKey::PostBody))
        .collect();
    let comment_ids: Vec<(i64, i64)> = docs
        .iter()
        .filter_map(|n| Some((n.post_id?, n.comment_id?)))
        .collect();
    let (cards, loaded, comments) = tokio::try_join!(
        load_cards(ctx, &actors),
        loader.load(&post_keys, &[]),
        async { Ok(ctx.docs.comments_by_ids(&comment_ids).await?) },
    )?;
    let mut posts: HashMap<i64, PostBody> = HashMap::new();
    for (key, text) in &loaded.blobs {
        if let BlobKey::PostBody(_) = key {
            let p: PostBody = from_json(text)?;
            posts.insert(p.id, p);
        }
    }
    let commenters: Vec<i64> = comments.iter().map(|c| c.author_uid).collect();
    visibility_reads::read_author_rules(
        &mut loader,
        &mut relations,
        posts.values(),
        commenters,
        true,
    )
    .await?;
    loader.finish("notifications");
    let rel = &relations;
    posts.retain(|_, p| can_see(p, rel));
    // A comment is quoted only where the recipient would see it on its post.
    let comments: HashMap<i64, CommentSnippet> = comments
        .into_iter()
        .filter(|c| !c.deleted)
        .filter(|c| {
            posts
                .get(&c.post_id)
                .is_some_and(|p| super::shows_actor(p, rel, c.author_uid))
        })
        .map(|c| {
            (
                c.id,
                CommentSnippet {
                    id: c.id,
                    content: snippet(&c.content),
                },
            )
        })
        .collect();
    let mut comments = comments;
    // An actor without a card (suspended, or deleted and not yet erased)
    // did nothing anyone sees meanwhile.
    let items: Vec<NotificationView> = docs
        .into_iter()
        .filter(|n| n.actor == 0 || cards.contains_key(&n.actor))
        .map(|n| NotificationView {
            id: n.id,
            kind: n.kind,
            actor: cards
                .get(&n.actor)
                .cloned()
                .unwrap_or_else(|| unknown_user(n.actor)),
            post_id: n.post_id,
            comment_id: n.comment_id,
            report_id: n.report_id,
            case_id: n.case_id,
            strike_id: n.strike_id,
            post: n.post_id.and_then(|p| posts.get(&p)).map(|p| PostSnippet {
                id: p.id,
                content: snippet(&p.content),
                picture_url: p.picture_urls.first().cloned(),
            }),
            // Quoted only while the post it is on may be seen.
            comment: n
                .post_id
                .filter(|p| posts.contains_key(p))
                .and(n.comment_id)
                .and_then(|c| comments.remove(&c)),
            createtime: n.createtime,
            createtime_text: pres.text(n.createtime),
            read: n.read,
        })
        .collect();
    Ok(items)
}

/// Whether each actor met so far is one the list shows, so that a page or
/// a count reading on through a backlog of the same few actors asks about
/// each of them once, not once a batch. Locked only between reads.
#[derive(Default)]
struct JudgedActors(std::sync::Mutex<HashMap<i64, bool>>);

impl JudgedActors {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, bool>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The ids of those of `batch` the list shows: none across a block either
/// way, none by an actor without a card (suspended, or deleted and not yet
/// erased), who did nothing anyone sees meanwhile. The list and the unread
/// count both ask this, so the badge counts what the list shows.
async fn shown_ids(
    ctx: &Context,
    rel: &Relations,
    judged: &JudgedActors,
    batch: &[NotificationDoc],
) -> AppResult<std::collections::HashSet<i64>> {
    let mut actors: Vec<i64> = {
        let known = judged.lock();
        batch
            .iter()
            .map(|n| n.actor)
            .filter(|a| *a != 0 && !known.contains_key(a))
            .collect()
    };
    actors.sort_unstable();
    actors.dedup();
    if !actors.is_empty() {
        let (rel, cards) = tokio::try_join!(
            visibility_reads::knowing(ctx, rel, actors.iter().copied()),
            load_cards(ctx, &actors),
        )?;
        let mut known = judged.lock();
        for a in actors {
            known.insert(a, !rel.blocked(a) && cards.contains_key(&a));
        }
    }
    let known = judged.lock();
    Ok(batch
        .iter()
        .filter(|n| n.actor == 0 || known.get(&n.actor) == Some(&true))
        .map(|n| n.id)
        .collect())
}

/// Unread counts stop here: a badge shows "999+", and counting a backlog
/// strangers can grow is bounded work.
pub const MAX_UNREAD: u64 = 999;
/// Unread notifications read at most, newest first, to count those the
/// list shows. Anyone can add to the backlog and then leave it hidden (a
/// block, a suspension), so the count's work stops here, not at the
/// backlog's end; past it the badge counts what the newest of them show,
/// as a page of the list reads a bounded run before it comes back short.
pub const UNREAD_SCAN: usize = 2_000;
pub const UNREAD_BATCH: usize = 400;

pub async fn unread(ctx: &Context, uid: i64, now: i64) -> AppResult<Unread> {
    let since = now - KEEP_MS;
    // Nothing unread, the usual case, costs the one count it always did.
    let stored = ctx
        .docs
        .unread_notifications(uid, since, MAX_UNREAD)
        .await?;
    if stored == 0 {
        return Ok(Unread { unread: 0 });
    }
    // Fewer than the cap: that many documents hold every unread one.
    let mut left = if stored < MAX_UNREAD {
        stored as usize
    } else {
        UNREAD_SCAN
    }
    .min(UNREAD_SCAN);
    let mut loader = Loader::new(ctx);
    let related = loader.load(&[], &Relations::reads(ctx, Some(uid))).await?;
    loader.finish("unread");
    let relations = Relations::from_loaded(Some(uid), &related);
    let judged = JudgedActors::default();
    let (mut counted, mut before) = (0u64, None);
    while left > 0 {
        let n = left.min(UNREAD_BATCH);
        let batch = ctx.docs.notifications_page(uid, since, before, n).await?;
        left -= n;
        before = batch.last().map(|b| b.id);
        // Newest first: past the read mark, every one is read.
        let ended = batch.len() < n || batch.iter().any(|b| b.read);
        let unread: Vec<NotificationDoc> = batch.into_iter().filter(|b| !b.read).collect();
        counted += shown_ids(ctx, &relations, &judged, &unread).await?.len() as u64;
        if ended || counted >= MAX_UNREAD {
            break;
        }
    }
    Ok(Unread {
        unread: counted.min(MAX_UNREAD),
    })
}

/// Marks read every notification up to `upTo` (all, without it): one
/// write of the recipient's read mark, however many there are. A mark past
/// now is brought back to now, so that it cannot cover notifications yet
/// to come.
pub async fn mark_read(ctx: &Context, uid: i64, req: MarkRead, now: i64) -> AppResult<Unread> {
    let latest = crate::ids::next_id();
    let up_to = req.up_to.map_or(latest, |u| u.min(latest));
    ctx.docs.mark_notifications_read(uid, up_to).await?;
    super::stream::events::unread_changed(ctx, uid);
    unread(ctx, uid, now).await
}
