//! The main read: posts expanded per viewer (`responses::ExpandedPost`) in a constant
//! number of round trips. Three batched live reads at most (posts; their
//! comments, counts and the cards already known; the cards of comment
//! authors and reply targets), whatever the page size, with batched document
//! queries only for what the live store lacks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::loader::{from_json, Loaded, Loader};
use super::paging::Kept;
use super::post_json::{write_post, PostJson, ReaderPart};
use super::responses::{unknown_user, CommentView, ReplyToView};
use super::snapshot::{
    CommentParts, PostParts, PostSnapshot, PostTemplate, LATEST_COMMENTS, LATEST_LIKES,
};
use super::visibility::{self, Place, Sight};
use super::visibility_reads;
use crate::error::AppResult;
use crate::hashing::{IdMap, IdSet};
use crate::service::{can_see, Context, Presentation, Relations, Viewer};
use crate::store::{BlobKey, CommentDoc, Owner, PostBody, SetKey, SetRead, SetView, UserCard};

fn card(cards: &HashMap<i64, UserCard>, uid: i64) -> UserCard {
    cards
        .get(&uid)
        .cloned()
        .unwrap_or_else(|| unknown_user(uid))
}

/// Pure assembly of one comment: no I/O (benchmarked in `benches/`).
pub fn build_comment(
    parts: &CommentParts,
    cards: &HashMap<i64, UserCard>,
    pres: &Presentation,
) -> CommentView {
    let c = &parts.doc;
    CommentView {
        id: c.id,
        post_id: c.post_id,
        content: c.content.clone(),
        createtime: c.createtime,
        createtime_text: pres.text(c.createtime),
        author: card(cards, c.author_uid),
        reply_to: c.reply_to.map(|r| ReplyToView {
            comment_id: r.comment_id,
            uid: r.uid,
            nick_name: card(cards, r.uid).nick_name,
        }),
        like_count: parts.likers.count,
        comment_count: parts.replies.count,
        liked_by_me: parts.likers.probe_score.is_some(),
    }
}

fn cards_of(loaded: &Loaded, into: &mut HashMap<i64, UserCard>) -> AppResult<()> {
    for (key, text) in &loaded.blobs {
        if let BlobKey::Card(_) = key {
            let c: UserCard = from_json(text)?;
            into.insert(c.uid, c);
        }
    }
    Ok(())
}

/// The view count the documents hold for `post`, as loaded.
fn view_count(loaded: &Loaded, post: i64) -> u64 {
    loaded
        .blobs
        .get(&BlobKey::ViewCount(post))
        .and_then(|text| text.parse().ok())
        .unwrap_or(0)
}

/// How many of a set's newest members are read to narrow its count to what
/// one viewer may see (WeChat's friends rule, blocks): bounded work however
/// big the set grows.
const NARROW_WINDOW: usize = 100;

/// A set's count narrowed to what the viewer may see, from its newest
/// members: exact whenever the set fits the window; past it, the hidden
/// members among the newest are taken off the total, and older ones are
/// counted as they are.
fn narrowed_count(total: u64, newest: &[(i64, i64)], shown: impl Fn(i64) -> bool) -> u64 {
    let hidden = newest.iter().filter(|(m, _)| !shown(*m)).count() as u64;
    total.saturating_sub(hidden)
}

fn comment_sets(post: i64, comment: i64, viewer: Viewer, likers_top: usize) -> [SetRead; 2] {
    [
        SetRead {
            key: SetKey::CommentLikers(post, comment),
            top: likers_top,
            probe: viewer,
            below: None,
        },
        SetRead {
            key: SetKey::CommentReplies(post, comment),
            top: 0,
            probe: None,
            below: None,
        },
    ]
}

fn card_keys(uids: impl IntoIterator<Item = i64>, known: &HashSet<i64>) -> Vec<BlobKey> {
    let mut v: Vec<i64> = uids.into_iter().filter(|u| !known.contains(u)).collect();
    v.sort_unstable();
    v.dedup();
    v.into_iter().map(BlobKey::Card).collect()
}

/// Expands the posts with these ids, in this order, leaving out those that
/// do not exist, are deleted, or that the viewer may not see.
pub async fn assemble_posts(
    ctx: &Context,
    post_ids: &[i64],
    viewer: Viewer,
    pres: &Presentation,
) -> AppResult<Vec<PostJson>> {
    Ok(
        assemble_visible(ctx, post_ids, usize::MAX, viewer, pres, Place::Elsewhere)
            .await?
            .items,
    )
}

/// `fill_page`'s `keep` for a page of records that each may name a post
/// (a like, a favorite): those posts the viewer may see, expanded, with
/// what was looked at counted in records, so the next page starts right
/// after the last record used.
///
/// The posts' bodies and the viewer's relations are read first, and only
/// the posts the viewer may see are expanded: a list can hold many posts
/// deleted since (whose likes and comments are never cached again), and
/// expanding those would read all of their likes on every page.
pub async fn keep_visible_posts<T>(
    ctx: &Context,
    records: &[T],
    post_of: impl Fn(&T) -> Option<i64>,
    room: usize,
    viewer: Viewer,
    pres: &Presentation,
) -> AppResult<Kept<PostJson>> {
    let named: Vec<(usize, i64)> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| post_of(r).map(|p| (i, p)))
        .collect();
    let ids: Vec<i64> = named.iter().map(|(_, p)| *p).collect();
    let visible = visible_bodies(ctx, &ids, viewer).await?;
    let shown = |p: i64| visible.contains_key(&p);
    let (at, posts): (Vec<usize>, Vec<i64>) = named.into_iter().filter(|(_, p)| shown(*p)).unzip();
    let kept = assemble_visible(ctx, &posts, room, viewer, pres, Place::Elsewhere).await?;
    let looked_at = if kept.looked_at >= posts.len() {
        records.len()
    } else {
        kept.looked_at.checked_sub(1).map_or(0, |i| at[i] + 1)
    };
    Ok(Kept {
        items: kept.items,
        looked_at,
        more: kept.more,
    })
}

/// The bodies of those of `post_ids` that exist and the viewer may see, by
/// id: one batched live read, and the authors' rules and cards. Every
/// author's card is read (`read_author_rules`'s `every_card`), as
/// `visible_post` reads it: nothing here loads the cards to leave out a
/// suspended or erased author's posts, however recent.
pub async fn visible_bodies(
    ctx: &Context,
    post_ids: &[i64],
    viewer: Viewer,
) -> AppResult<HashMap<i64, PostBody>> {
    visible_bodies_at(ctx, post_ids, viewer, Place::Elsewhere).await
}

/// `visible_bodies`, of posts shown at `place` (the home feed leaves out
/// muted authors).
pub async fn visible_bodies_at(
    ctx: &Context,
    post_ids: &[i64],
    viewer: Viewer,
    place: Place,
) -> AppResult<HashMap<i64, PostBody>> {
    let mut loader = Loader::new(ctx);
    let bodies: Vec<BlobKey> = post_ids.iter().map(|p| BlobKey::PostBody(*p)).collect();
    let loaded = loader.load(&bodies, &Relations::reads(ctx, viewer)).await?;
    let mut rel = Relations::from_loaded(viewer, &loaded);
    let mut parsed: HashMap<i64, PostBody> = loaded
        .blobs
        .iter()
        .filter_map(|(key, text)| match key {
            BlobKey::PostBody(p) => from_json::<PostBody>(text).ok().map(|b| (*p, b)),
            _ => None,
        })
        .collect();
    visibility_reads::read_author_rules(&mut loader, &mut rel, parsed.values(), [], true).await?;
    loader.finish("visible_bodies");
    parsed.retain(|_, body| visibility::sight_at(body, &rel, place).is_shown());
    Ok(parsed)
}

/// A page of the posts a reader's own records name (likes, favorites,
/// views), newest record first: those the reader may still see, expanded
/// for them, filled past the ones they may not (`fill_page`).
#[allow(clippy::too_many_arguments)]
pub async fn page_of_named_posts<T, R, RF>(
    ctx: &Context,
    reader: i64,
    cursor: Option<crate::domain::cursor::Cursor>,
    limit: usize,
    pres: &Presentation,
    read: R,
    post_of: impl Fn(&T) -> Option<i64> + Copy,
    id_of: impl Fn(&T) -> i64,
) -> AppResult<super::responses::Page<PostJson>>
where
    R: FnMut(Option<i64>, usize) -> RF,
    RF: std::future::Future<Output = AppResult<Vec<T>>>,
{
    let (items, next_cursor) = super::paging::fill_page(
        limit,
        cursor.map(|c| c.0),
        read,
        |records: Vec<T>, room| async move {
            keep_visible_posts(ctx, &records, post_of, room, Some(reader), pres).await
        },
        id_of,
    )
    .await?;
    Ok(super::responses::Page {
        items,
        next_cursor,
        server_time: pres.now,
    })
}

/// `viewer`'s score in a set (`None`: not a member), if the members kept
/// are all of them.
fn probe_kept(view: &SetView, viewer: i64) -> Option<Option<i64>> {
    (view.top.len() as u64 >= view.count).then(|| {
        view.top
            .iter()
            .find(|(m, _)| *m == viewer)
            .map(|(_, score)| *score)
    })
}

/// `viewer`'s score in `key`, from the members kept where they are all of
/// them, else as the first round asked the live store.
fn probe_of(kept: &SetView, key: SetKey, viewer: Viewer, first: &Loaded) -> Option<i64> {
    let v = viewer?;
    match probe_kept(kept, v) {
        Some(score) => score,
        None => first.sets.get(&key).and_then(|view| view.probe_score),
    }
}

/// The snapshot's template, made now if it has none or the one it has
/// shows a card that changed since (then the snapshot is kept again with
/// the new one, for the next reads); `None` when someone on the post has
/// no card (an erased account, whose part only a built post leaves out).
fn template_of<'s>(
    snap: &'s PostSnapshot,
    cards: &HashMap<i64, UserCard>,
    media_base: &str,
    generation_of: impl Fn(i64) -> Option<u64> + Copy,
) -> Option<(std::borrow::Cow<'s, PostTemplate>, Option<PostSnapshot>)> {
    use std::borrow::Cow;
    if let Some(t) = snap.template.get() {
        if t.stands(generation_of) {
            return Some((Cow::Borrowed(t), None));
        }
    }
    let made = PostTemplate::make(snap, cards, media_base, generation_of)?;
    if snap.template.get().is_none() {
        return match snap.template.set(made) {
            Ok(()) => snap.template.get().map(|t| (Cow::Borrowed(t), None)),
            // Another read made one at the same moment.
            Err(made) => Some((Cow::Owned(made), None)),
        };
    }
    // It had an outdated one: the snapshot is kept again, with the new.
    let again = PostSnapshot {
        template: std::sync::OnceLock::from(made.clone()),
        ..snap.clone()
    };
    Some((Cow::Owned(made), Some(again)))
}

/// A post's body as a page has it: read in this request, or the one its
/// snapshot holds (not copied: most posts of a warm page are written from
/// their template and need no body of their own).
// A page holds a few dozen of these at most: boxing the body would cost an
// allocation per post read to save bytes no one counts.
#[allow(clippy::large_enum_variant)]
enum Body {
    Read(PostBody),
    Kept(Arc<PostSnapshot>),
}

impl std::ops::Deref for Body {
    type Target = PostBody;
    fn deref(&self) -> &PostBody {
        match self {
            Body::Read(b) => b,
            Body::Kept(snap) => &snap.body,
        }
    }
}

impl Body {
    fn into_owned(self) -> PostBody {
        match self {
            Body::Read(b) => b,
            Body::Kept(snap) => snap.body.clone(),
        }
    }
}

/// A candidate post of a page, as far as the first round read it.
struct Candidate {
    body: Body,
    likers: SetView,
    comment_ids: SetView,
    share_count: u64,
    view_count: u64,
    /// Its snapshot, while it still stands for the post for this viewer
    /// (dropped where what the viewer may see must be narrowed).
    snapshot: Option<Arc<PostSnapshot>>,
}

/// The reads of a page's first round for one post without a snapshot.
fn first_round_reads(p: i64, viewer: Viewer, blobs: &mut Vec<BlobKey>, sets: &mut Vec<SetRead>) {
    blobs.extend([
        BlobKey::PostBody(p),
        BlobKey::CommentPeople(p),
        BlobKey::ViewCount(p),
    ]);
    sets.extend([
        SetRead {
            key: SetKey::PostLikers(p),
            top: LATEST_LIKES,
            probe: viewer,
            below: None,
        },
        SetRead {
            key: SetKey::PostComments(p),
            top: LATEST_COMMENTS,
            probe: None,
            below: None,
        },
        SetRead {
            key: SetKey::PostShares(p),
            top: 0,
            probe: None,
            below: None,
        },
    ]);
}

/// What the live store must answer for a snapshot to serve `viewer`: the
/// likes it cannot tell from the likers it keeps.
fn snapshot_probes(p: i64, snap: &PostSnapshot, viewer: Viewer, sets: &mut Vec<SetRead>) {
    let Some(v) = viewer else { return };
    if probe_kept(&snap.likers, v).is_none() {
        sets.push(SetRead {
            key: SetKey::PostLikers(p),
            top: 0,
            probe: Some(v),
            below: None,
        });
    }
    for c in &snap.comments {
        if probe_kept(&c.likers, v).is_none() {
            sets.push(SetRead {
                key: SetKey::CommentLikers(p, c.doc.id),
                top: 0,
                probe: Some(v),
                below: None,
            });
        }
    }
}

/// The snapshots this instance keeps of these posts, whatever their
/// generations (the first round checks those).
fn kept_snapshots(ctx: &Context, post_ids: &[i64]) -> IdMap<i64, (u64, Arc<PostSnapshot>)> {
    let mut out = IdMap::default();
    if !ctx.near.is_on() {
        return out;
    }
    for p in post_ids {
        let kept = ctx.near.with(Owner::Post(*p), |copies| {
            copies
                .snapshot()
                .map(|snap| (copies.generation, snap.clone()))
        });
        if let Some(kept) = kept.flatten() {
            out.insert(*p, kept);
        }
    }
    out
}

/// `assemble_posts` for at most `room` of these candidates: the first ones
/// the viewer may see, found in the same first batched read that loads them
/// (so a page's filling costs no round trip of its own).
///
/// Posts this instance keeps a snapshot of cost only their generation in
/// the first round (and the people on them, theirs: their cards are kept
/// too), unless the viewer may see only part of what is on them; a
/// snapshot found outdated costs its post the first round's reads in a
/// round of their own.
pub async fn assemble_visible(
    ctx: &Context,
    post_ids: &[i64],
    room: usize,
    viewer: Viewer,
    pres: &Presentation,
    place: Place,
) -> AppResult<Kept<PostJson>> {
    let mut loader = Loader::new(ctx);
    let kept = kept_snapshots(ctx, post_ids);
    loader.expect(kept.iter().flat_map(|(p, (_, snap))| {
        std::iter::once(Owner::Post(*p)).chain(snap.people.iter().map(|u| Owner::User(*u)))
    }));

    // Round 1: bodies, likers, comment ids, whose cards the comments need,
    // and the viewer's relations; of posts with a snapshot, only what the
    // snapshot cannot tell this viewer.
    let mut blobs: Vec<BlobKey> = Vec::new();
    let mut sets: Vec<SetRead> = Relations::reads(ctx, viewer);
    for p in post_ids {
        match kept.get(p) {
            Some((_, snap)) => snapshot_probes(*p, snap, viewer, &mut sets),
            None => first_round_reads(*p, viewer, &mut blobs, &mut sets),
        }
    }
    // A snapshot found outdated costs its post the first round's reads,
    // in the round trip that reads again what the loader's own copies were
    // too old for.
    let first = loader
        .load_then(&blobs, &sets, |loader| {
            let (mut blobs, mut sets) = (Vec::new(), Vec::new());
            for (p, (g, _)) in &kept {
                if !loader.vouches_for(Owner::Post(*p), *g) {
                    first_round_reads(*p, viewer, &mut blobs, &mut sets);
                }
            }
            (blobs, sets)
        })
        .await?;
    let snapshots: IdMap<i64, Arc<PostSnapshot>> = kept
        .into_iter()
        .filter(|(p, (g, _))| loader.vouches_for(Owner::Post(*p), *g))
        .map(|(p, (_, snap))| (p, snap))
        .collect();
    let mut first = first;
    let mut rel = Relations::from_loaded(viewer, &first);
    let mut bodies: IdMap<i64, Body> = IdMap::default();
    for p in post_ids {
        if let Some(snap) = snapshots.get(p) {
            bodies.insert(*p, Body::Kept(snap.clone()));
            continue;
        }
        let Some(text) = first.blobs.get(&BlobKey::PostBody(*p)) else {
            // Unknown ids must not leave empty sets behind in the live store.
            loader.discard_fills(Owner::Post(*p));
            continue;
        };
        let body: PostBody = from_json(text)?;
        if body.deleted {
            loader.discard_fills(Owner::Post(*p));
        }
        bodies.insert(*p, Body::Read(body));
    }
    // Round 1b, only for older posts or labelled audiences (or a viewer
    // blocked by too many to read whole): what decides them beyond the
    // viewer's own sets.
    let shown_people: Vec<i64> = post_ids
        .iter()
        .flat_map(|p| {
            if let Some(snap) = snapshots.get(p) {
                return snap.people.clone();
            }
            let likers = first
                .sets
                .get(&SetKey::PostLikers(*p))
                .map(|v| v.top.iter().map(|(u, _)| *u).collect::<Vec<_>>())
                .unwrap_or_default();
            let hinted = first
                .blobs
                .get(&BlobKey::CommentPeople(*p))
                .and_then(|t| serde_json::from_str::<Vec<i64>>(t).ok())
                .unwrap_or_default();
            likers.into_iter().chain(hinted).collect()
        })
        .collect();
    visibility_reads::read_author_rules(
        &mut loader,
        &mut rel,
        bodies.values().map(|b| &**b),
        shown_people,
        false,
    )
    .await?;
    let mut posts: Vec<Candidate> = Vec::new();
    for p in post_ids {
        let Some(body) = bodies.remove(p) else {
            continue;
        };
        if !visibility::sight_at(&body, &rel, place).is_shown() {
            continue;
        }
        let candidate = match snapshots.get(p) {
            Some(snap) => {
                let mut likers = snap.likers.clone();
                likers.top.truncate(LATEST_LIKES);
                likers.probe_score = probe_of(&snap.likers, SetKey::PostLikers(*p), viewer, &first);
                Candidate {
                    body,
                    likers,
                    comment_ids: snap.comment_ids.clone(),
                    share_count: snap.share_count,
                    view_count: snap.view_count,
                    snapshot: Some(snap.clone()),
                }
            }
            None => Candidate {
                body,
                likers: first
                    .sets
                    .remove(&SetKey::PostLikers(*p))
                    .unwrap_or_default(),
                comment_ids: first
                    .sets
                    .remove(&SetKey::PostComments(*p))
                    .unwrap_or_default(),
                share_count: first
                    .sets
                    .remove(&SetKey::PostShares(*p))
                    .map_or(0, |v| v.count),
                view_count: view_count(&first, *p),
                snapshot: None,
            },
        };
        posts.push(candidate);
    }
    for c in posts.iter_mut() {
        // Hidden across a block: not in the latest likes shown either.
        c.likers.top.retain(|(uid, _)| !rel.blocked(*uid));
    }
    let mut looked_at = post_ids.len();
    let more_visible = posts.len() > room;
    if more_visible {
        posts.truncate(room);
        let last = posts.last().map(|c| c.body.id);
        looked_at = post_ids
            .iter()
            .position(|p| Some(*p) == last)
            .map_or(0, |i| i + 1);
    }

    // Posts where the viewer may not see some of the likes and comments
    // (visibility.rs: a post for friends, or anyone blocked either way),
    // whose counts follow what is shown, narrowed from the newest. Their
    // snapshots stand for what everyone sees, so they are set aside.
    let sights: IdMap<i64, Sight> = posts
        .iter()
        .map(|c| (c.body.id, visibility::sight(&c.body, &rel)))
        .collect();
    let narrowed: IdSet<i64> = sights
        .iter()
        .filter(|(_, s)| s.may_hide_some(&rel))
        .map(|(p, _)| *p)
        .collect();
    for c in posts.iter_mut() {
        if narrowed.contains(&c.body.id) {
            c.snapshot = None;
        }
    }
    // Replies among a narrowed post's newest comments the viewer may not
    // see, by the comment they reply to.
    let mut unseen_replies: HashMap<i64, u64> = HashMap::new();
    if !narrowed.is_empty() {
        let whole: Vec<SetRead> = narrowed
            .iter()
            .flat_map(|p| {
                [
                    SetRead {
                        key: SetKey::PostLikers(*p),
                        top: NARROW_WINDOW,
                        probe: viewer,
                        below: None,
                    },
                    SetRead {
                        key: SetKey::PostComments(*p),
                        top: NARROW_WINDOW,
                        probe: None,
                        below: None,
                    },
                ]
            })
            .collect();
        let mut everything = loader.load(&[], &whole).await?;
        let all_comments: Vec<BlobKey> = narrowed
            .iter()
            .flat_map(|p| {
                everything
                    .sets
                    .get(&SetKey::PostComments(*p))
                    .map(|v| {
                        v.top
                            .iter()
                            .map(|(c, _)| BlobKey::CommentBody(*p, *c))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let bodies = loader.load(&all_comments, &[]).await?;
        let comments: Vec<CommentDoc> = bodies
            .blobs
            .values()
            .map(|text| from_json(text))
            .collect::<AppResult<_>>()?;
        let newest_likers = narrowed.iter().flat_map(|p| {
            everything
                .sets
                .get(&SetKey::PostLikers(*p))
                .map(|v| v.top.iter().map(|(u, _)| *u).collect::<Vec<_>>())
                .unwrap_or_default()
        });
        let people: Vec<i64> = newest_likers
            .chain(
                comments
                    .iter()
                    .flat_map(|c| std::iter::once(c.author_uid).chain(c.reply_to.map(|r| r.uid))),
            )
            .collect();
        visibility_reads::settle_blocks(&mut loader, &mut rel, people).await?;
        let allowed = |post: i64, x: i64| sights.get(&post).is_some_and(|s| s.shows_actor(&rel, x));
        let mut by_post: HashMap<i64, Vec<CommentDoc>> = HashMap::new();
        // Whether each comment is shown: its author and whom it replies to.
        let mut shown: HashMap<i64, bool> = HashMap::new();
        for c in comments {
            let visible = allowed(c.post_id, c.author_uid)
                && c.reply_to.is_none_or(|r| allowed(c.post_id, r.uid));
            shown.insert(c.id, visible);
            if c.deleted {
                continue;
            }
            if visible {
                by_post.entry(c.post_id).or_default().push(c);
            } else if let Some(r) = c.reply_to {
                *unseen_replies.entry(r.comment_id).or_default() += 1;
            }
        }
        for c in posts.iter_mut() {
            if !narrowed.contains(&c.body.id) {
                continue;
            }
            let post = c.body.id;
            let mut newest_likers = everything
                .sets
                .remove(&SetKey::PostLikers(post))
                .unwrap_or_default();
            let count = narrowed_count(newest_likers.count, &newest_likers.top, |u| {
                allowed(post, u)
            });
            newest_likers.top.retain(|(uid, _)| allowed(post, *uid));
            c.likers = SetView {
                count,
                top: newest_likers.top.into_iter().take(LATEST_LIKES).collect(),
                probe_score: newest_likers.probe_score,
            };
            let newest = everything
                .sets
                .remove(&SetKey::PostComments(post))
                .unwrap_or_default();
            let mut visible = by_post.remove(&post).unwrap_or_default();
            visible.sort_unstable_by_key(|c| std::cmp::Reverse(c.id));
            // A comment whose body is gone is counted as hidden.
            let count = narrowed_count(newest.count, &newest.top, |cid| {
                shown.get(&cid).copied().unwrap_or(false)
            });
            c.comment_ids = SetView {
                count,
                top: visible
                    .iter()
                    .take(LATEST_COMMENTS)
                    .map(|c| (c.id, c.id))
                    .collect(),
                probe_score: None,
            };
        }
    }

    // Round 2: latest comments with their sets (of posts without a
    // snapshot), and the cards known so far.
    let mut blobs = Vec::new();
    let mut sets = Vec::new();
    for c in posts.iter().filter(|c| c.snapshot.is_none()) {
        let likers_top = if narrowed.contains(&c.body.id) {
            NARROW_WINDOW
        } else {
            LATEST_LIKES
        };
        for (cid, _) in &c.comment_ids.top {
            blobs.push(BlobKey::CommentBody(c.body.id, *cid));
            sets.extend(comment_sets(c.body.id, *cid, viewer, likers_top));
        }
    }
    let mut asked: HashSet<i64> = HashSet::new();
    let mut hinted: HashMap<i64, Vec<i64>> = HashMap::new();
    for c in posts.iter().filter(|c| c.snapshot.is_none()) {
        if let Some(text) = first.blobs.get(&BlobKey::CommentPeople(c.body.id)) {
            if let Ok(uids) = serde_json::from_str::<Vec<i64>>(text) {
                hinted.insert(c.body.id, uids);
            }
        }
    }
    // A snapshot whose template still shows every card as it is needs no
    // card read: the generations the first round read vouch for them
    // (an erased account's moved with its card).
    let standing: IdSet<i64> = posts
        .iter()
        .filter_map(|c| c.snapshot.as_ref())
        .filter(|snap| {
            snap.template
                .get()
                .is_some_and(|t| t.stands(|uid| loader.generation(Owner::User(uid))))
        })
        .map(|snap| snap.body.id)
        .collect();
    let first_cards = card_keys(
        posts
            .iter()
            .filter(|c| !standing.contains(&c.body.id))
            .flat_map(|c| match &c.snapshot {
                Some(snap) => snap.people.clone(),
                None => std::iter::once(c.body.author_uid)
                    .chain(c.likers.top.iter().map(|t| t.0))
                    .collect(),
            })
            .chain(hinted.values().flatten().copied()),
        &asked,
    );
    asked.extend(first_cards.iter().filter_map(|k| match k {
        BlobKey::Card(u) => Some(*u),
        _ => None,
    }));
    blobs.extend(first_cards);
    let mut second = loader.load(&blobs, &sets).await?;
    let mut cards = HashMap::new();
    cards_of(&second, &mut cards)?;

    // Round 3: cards of comment authors and of the people they replied to
    // (and, of a viewer blocked by too many to read whole, whether those
    // and the comments' likers blocked the viewer).
    let mut comment_docs: HashMap<i64, CommentDoc> = HashMap::new();
    for (key, text) in &second.blobs {
        if let BlobKey::CommentBody(..) = key {
            let c: CommentDoc = from_json(text)?;
            if !c.deleted {
                comment_docs.insert(c.id, c);
            }
        }
    }
    let comment_people: Vec<i64> = comment_docs
        .values()
        .flat_map(|c| std::iter::once(c.author_uid).chain(c.reply_to.map(|r| r.uid)))
        .collect();
    let more = card_keys(comment_people.iter().copied(), &asked);
    if !more.is_empty() {
        let third = loader.load(&more, &[]).await?;
        cards_of(&third, &mut cards)?;
    }
    let comment_likers = second.sets.iter().filter_map(|(k, v)| match k {
        SetKey::CommentLikers(..) => Some(v.top.iter().map(|(u, _)| *u).collect::<Vec<_>>()),
        _ => None,
    });
    let judged: Vec<i64> = comment_people
        .iter()
        .copied()
        .chain(comment_likers.flatten())
        .chain(
            posts
                .iter()
                .filter_map(|c| c.snapshot.as_ref())
                .flat_map(|snap| snap.comments.iter())
                .flat_map(|c| {
                    std::iter::once(c.doc.author_uid)
                        .chain(c.doc.reply_to.map(|r| r.uid))
                        .chain(c.likers.top.iter().map(|(u, _)| *u))
                }),
        )
        .collect();
    visibility_reads::settle_blocks(&mut loader, &mut rel, judged).await?;
    // An erased account's card is gone at once (its content goes in the
    // background): its posts, comments and likes are no longer shown.
    let erased = |uid: i64| !cards.contains_key(&uid);
    // Remember whose cards each post's latest comments needed, so the next
    // read fetches them in round 2 and skips round 3.
    for c in posts.iter().filter(|c| c.snapshot.is_none()) {
        let mut people: Vec<i64> = c
            .comment_ids
            .top
            .iter()
            .filter_map(|(cid, _)| comment_docs.get(cid))
            .flat_map(|c| std::iter::once(c.author_uid).chain(c.reply_to.map(|r| r.uid)))
            .collect();
        people.sort_unstable();
        people.dedup();
        let known = hinted
            .get(&c.body.id)
            .is_some_and(|h| people.iter().all(|u| h.contains(u)));
        // Written empty too: a post without comments then hits the hint
        // instead of missing it on every read.
        if !known {
            loader.write_back(
                BlobKey::CommentPeople(c.body.id),
                super::loader::to_json(&people)?,
            );
        }
    }

    let mut out = Vec::with_capacity(posts.len());
    for c in posts {
        if erased(c.body.author_uid) && !standing.contains(&c.body.id) {
            continue;
        }
        // Written from the snapshot's template: nothing of it is hidden
        // from this viewer (else it was set aside above) and everyone on it
        // still has their card.
        if let Some(snap) = &c.snapshot {
            let generation_of = |uid: i64| loader.generation(Owner::User(uid));
            if let Some((template, again)) =
                template_of(snap, &cards, ctx.media.base_url(), generation_of)
            {
                if let Some(again) = again {
                    loader.keep_snapshot(again);
                }
                let comments_liked: Vec<bool> = snap
                    .comments
                    .iter()
                    .map(|cp| {
                        let key = SetKey::CommentLikers(c.body.id, cp.doc.id);
                        probe_of(&cp.likers, key, viewer, &first).is_some()
                    })
                    .collect();
                let reader = ReaderPart {
                    pres,
                    devices: &ctx.devices,
                    is_author: viewer == Some(c.body.author_uid),
                    liked: c.likers.probe_score.is_some(),
                    comments_liked: &comments_liked,
                };
                out.push(PostJson {
                    id: c.body.id,
                    author: c.body.author_uid,
                    liked: reader.liked,
                    like_count: snap.likers.count,
                    json: template.write(&snap.body, &reader),
                });
                continue;
            }
        }
        let Candidate {
            body,
            mut likers,
            comment_ids,
            share_count,
            view_count,
            snapshot,
        } = c;
        let post_id = body.id;
        let comments: Vec<CommentParts> = match &snapshot {
            Some(snap) => snap
                .comments
                .iter()
                .filter(|c| {
                    let doc = &c.doc;
                    !erased(doc.author_uid)
                        && !rel.blocked(doc.author_uid)
                        && !doc.reply_to.is_some_and(|r| rel.blocked(r.uid))
                })
                .map(|c| {
                    let key = SetKey::CommentLikers(post_id, c.doc.id);
                    let likers = SetView {
                        count: c.likers.count,
                        top: Vec::new(),
                        probe_score: probe_of(&c.likers, key, viewer, &first),
                    };
                    CommentParts {
                        doc: c.doc.clone(),
                        likers,
                        replies: c.replies.clone(),
                    }
                })
                .collect(),
            None => comment_ids
                .top
                .iter()
                .filter_map(|(cid, _)| {
                    let doc = comment_docs.get(cid)?.clone();
                    let replied_blocked = doc.reply_to.is_some_and(|r| rel.blocked(r.uid));
                    if rel.blocked(doc.author_uid) || replied_blocked || erased(doc.author_uid) {
                        return None;
                    }
                    let mut likers = second
                        .sets
                        .remove(&SetKey::CommentLikers(post_id, *cid))
                        .unwrap_or_default();
                    let mut replies = second
                        .sets
                        .remove(&SetKey::CommentReplies(post_id, *cid))
                        .unwrap_or_default();
                    if narrowed.contains(&post_id) {
                        let sight = sights.get(&post_id).copied().unwrap_or(Sight::NotVisible);
                        likers.count = narrowed_count(likers.count, &likers.top, |u| {
                            sight.shows_actor(&rel, u)
                        });
                        let hidden = unseen_replies.get(cid).copied().unwrap_or(0);
                        replies.count = replies.count.saturating_sub(hidden);
                    }
                    Some(CommentParts {
                        likers,
                        replies,
                        doc,
                    })
                })
                .collect(),
        };
        // What everyone sees of a post read whole, kept for the next reads
        // while its generation stands (`PostSnapshot`).
        // A comment left out for its author having no card is left out of
        // the snapshot too, which no change of that author's generation
        // would then renew: a suspended account's comments must come back
        // when the suspension ends. So such a post keeps no snapshot.
        let comments_withheld = comment_ids
            .top
            .iter()
            .any(|(cid, _)| comment_docs.get(cid).is_some_and(|d| erased(d.author_uid)));
        if snapshot.is_none() && !narrowed.contains(&post_id) && !comments_withheld {
            let people: Vec<i64> = {
                let mut p: Vec<i64> = std::iter::once(body.author_uid)
                    .chain(likers.top.iter().map(|(u, _)| *u))
                    .chain(comments.iter().flat_map(|c| {
                        std::iter::once(c.doc.author_uid).chain(c.doc.reply_to.map(|r| r.uid))
                    }))
                    .collect();
                p.sort_unstable();
                p.dedup();
                p
            };
            let unprobed = |v: &SetView| SetView {
                probe_score: None,
                ..v.clone()
            };
            loader.keep_snapshot(PostSnapshot {
                body: (*body).clone(),
                likers: unprobed(&likers),
                comment_ids: comment_ids.clone(),
                share_count,
                view_count,
                comments: comments
                    .iter()
                    .map(|c| CommentParts {
                        doc: c.doc.clone(),
                        likers: unprobed(&c.likers),
                        replies: c.replies.clone(),
                    })
                    .collect(),
                people,
                template: std::sync::OnceLock::new(),
            });
        }
        likers.top.retain(|(uid, _)| !erased(*uid));
        let comments_liked: Vec<bool> = comments
            .iter()
            .map(|c| c.likers.probe_score.is_some())
            .collect();
        let parts = PostParts {
            body: body.into_owned(),
            likers,
            comment_count: comment_ids.count,
            share_count,
            view_count,
            comments,
        };
        let reader = ReaderPart {
            pres,
            devices: &ctx.devices,
            is_author: viewer == Some(parts.body.author_uid),
            liked: parts.likers.probe_score.is_some(),
            comments_liked: &comments_liked,
        };
        out.push(PostJson {
            id: parts.body.id,
            author: parts.body.author_uid,
            liked: reader.liked,
            like_count: parts.likers.count,
            json: write_post(&parts, &cards, ctx.media.base_url(), &reader),
        });
    }
    loader.finish("assemble_posts");
    Ok(Kept {
        items: out,
        looked_at,
        more: more_visible,
    })
}

/// Comments (already read from the documents) as they appear in a post.
/// With `post`, their counts follow what the viewer may see of it: across a
/// block, and in a friends-only post WeChat's rule, nobody else's likes and
/// replies are counted.
pub async fn comment_views(
    ctx: &Context,
    comments: Vec<CommentDoc>,
    viewer: Viewer,
    pres: &Presentation,
    post: Option<&VisiblePost>,
) -> AppResult<Vec<CommentView>> {
    let narrow = post.filter(|p| visibility::sight(&p.body, &p.rel).may_hide_some(&p.rel));
    let whole = if narrow.is_some() { NARROW_WINDOW } else { 0 };
    let mut loader = Loader::new(ctx);
    let blobs = card_keys(
        comments
            .iter()
            .flat_map(|c| std::iter::once(c.author_uid).chain(c.reply_to.map(|r| r.uid))),
        &HashSet::new(),
    );
    let sets: Vec<SetRead> = comments
        .iter()
        .flat_map(|c| {
            let [likers, mut replies] = comment_sets(c.post_id, c.id, viewer, whole);
            replies.top = whole;
            [likers, replies]
        })
        .collect();
    let mut loaded = loader.load(&blobs, &sets).await?;
    let mut cards = HashMap::new();
    cards_of(&loaded, &mut cards)?;
    // Whose replies are they: one more batched read, only when narrowing.
    let mut reply_authors: HashMap<i64, i64> = HashMap::new();
    if narrow.is_some() {
        let keys: Vec<BlobKey> = comments
            .iter()
            .flat_map(|c| {
                loaded
                    .sets
                    .get(&SetKey::CommentReplies(c.post_id, c.id))
                    .map(|v| {
                        v.top
                            .iter()
                            .map(|(r, _)| BlobKey::CommentBody(c.post_id, *r))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let bodies = loader.load(&keys, &[]).await?;
        for text in bodies.blobs.values() {
            let r: CommentDoc = from_json(text)?;
            if !r.deleted {
                reply_authors.insert(r.id, r.author_uid);
            }
        }
    }
    // Of a viewer blocked by too many to read whole: whether the people
    // counted blocked them.
    let judged: Vec<i64> = loaded
        .sets
        .iter()
        .filter(|(k, _)| matches!(k, SetKey::CommentLikers(..)))
        .flat_map(|(_, v)| v.top.iter().map(|(u, _)| *u))
        .chain(reply_authors.values().copied())
        .collect();
    let rel = match narrow {
        Some(p) => Some(visibility_reads::knowing(ctx, &p.rel, judged).await?),
        None => None,
    };
    let shows = |u: i64| match (narrow, &rel) {
        (Some(p), Some(rel)) => crate::service::shows_actor(&p.body, rel, u),
        _ => true,
    };
    // A comment by someone without a card (suspended, or deleted and not
    // yet erased) is not shown meanwhile.
    let views = comments
        .into_iter()
        .filter(|doc| cards.contains_key(&doc.author_uid))
        .map(|doc| {
            let mut likers = loaded
                .sets
                .remove(&SetKey::CommentLikers(doc.post_id, doc.id))
                .unwrap_or_default();
            let mut replies = loaded
                .sets
                .remove(&SetKey::CommentReplies(doc.post_id, doc.id))
                .unwrap_or_default();
            if narrow.is_some() {
                likers.count = narrowed_count(likers.count, &likers.top, shows);
                replies.count = narrowed_count(replies.count, &replies.top, |r| {
                    reply_authors.get(&r).is_some_and(|a| shows(*a))
                });
            }
            build_comment(
                &CommentParts {
                    likers,
                    replies,
                    doc,
                },
                &cards,
                pres,
            )
        })
        .collect();
    loader.finish("comment_views");
    Ok(views)
}

/// User cards for these uids, read through the live store.
pub async fn load_cards(ctx: &Context, uids: &[i64]) -> AppResult<HashMap<i64, UserCard>> {
    let mut loader = Loader::new(ctx);
    let keys = card_keys(uids.iter().copied(), &HashSet::new());
    let loaded = loader.load(&keys, &[]).await?;
    let mut cards = HashMap::new();
    cards_of(&loaded, &mut cards)?;
    loader.finish("load_cards");
    Ok(cards)
}

/// A post the viewer may see, and its live generation as read before the
/// caller's document write (see `Changes::expected_gen`).
pub struct VisiblePost {
    pub body: PostBody,
    pub gen: Option<u64>,
    /// The viewer's relations, read with the post.
    pub rel: Relations,
}

impl VisiblePost {
    /// The post as its viewer sees what `people` did on it: asked first,
    /// where it must be, whether each of them blocked the viewer.
    pub async fn seen_with<'p>(
        &'p self,
        ctx: &Context,
        people: impl IntoIterator<Item = i64>,
    ) -> AppResult<PostSeen<'p>> {
        Ok(PostSeen {
            body: &self.body,
            rel: visibility_reads::knowing(ctx, &self.rel, people).await?,
        })
    }

    /// `seen_with` the people of these comments: their authors and whom
    /// they reply to.
    pub async fn seen_with_comments<'p>(
        &'p self,
        ctx: &Context,
        comments: &[CommentDoc],
    ) -> AppResult<PostSeen<'p>> {
        self.seen_with(
            ctx,
            comments
                .iter()
                .flat_map(|c| std::iter::once(c.author_uid).chain(c.reply_to.map(|r| r.uid))),
        )
        .await
    }
}

/// A visible post and what its viewer knows of the people on it
/// (`VisiblePost::seen_with`).
pub struct PostSeen<'p> {
    body: &'p PostBody,
    rel: std::borrow::Cow<'p, Relations>,
}

impl PostSeen<'_> {
    /// Whether the viewer sees what `actor` did on this post: not across a
    /// block, and in a friends-only post only the viewer's friends and the
    /// viewer (WeChat's rule; the author sees everything).
    pub fn shows_actor(&self, actor: i64) -> bool {
        crate::service::shows_actor(self.body, &self.rel, actor)
    }

    /// Whether the viewer sees this comment on this post: its author's,
    /// and the one it replies to (`visibility::shows_comment`).
    pub fn shows_comment(&self, c: &CommentDoc) -> bool {
        visibility::shows_comment(
            self.body,
            &self.rel,
            c.author_uid,
            c.reply_to.map(|r| r.uid),
        )
    }
}

/// A post's body if it exists and the viewer may see it: the check every
/// write on a post starts with.
pub async fn visible_post(ctx: &Context, post_id: i64, viewer: Viewer) -> AppResult<VisiblePost> {
    let mut loader = Loader::new(ctx);
    let loaded = loader
        .load(
            &[BlobKey::PostBody(post_id)],
            &Relations::reads(ctx, viewer),
        )
        .await?;
    let mut rel = Relations::from_loaded(viewer, &loaded);
    let gen = loader.generation(Owner::Post(post_id));
    let body: PostBody = match loaded.blobs.get(&BlobKey::PostBody(post_id)) {
        Some(text) => from_json(text)?,
        None => {
            loader.finish("visible_post");
            return Err(crate::error::AppError::NotFound("post"));
        }
    };
    visibility_reads::read_author_rules(&mut loader, &mut rel, [&body], [], true).await?;
    loader.finish("visible_post");
    if !can_see(&body, &rel) {
        return Err(crate::error::AppError::NotFound("post"));
    }
    Ok(VisiblePost { body, gen, rel })
}
