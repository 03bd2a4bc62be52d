//! Search: posts found by their words (`domain::search_text`), each hit
//! answered only if the reader may read it by the rules every read applies
//! (`read::visibility`, through `keep_visible_posts`), and pages filled
//! past the hits they may not (`fill_page`).
//!
//! Which posts a reader can find: their own, those of the people they
//! follow, and public posts of anyone. The index filters on that before
//! paging (`PostSearch::circle`, `IndexedPost::findable`), so a page is not
//! mostly hits the rules then drop; the rules decide the rest at answer
//! time, so a delete, a block, a hide, a narrowed audience or a moderator's
//! removal takes effect on the next search, whatever the index holds.
//!
//! Indexing follows the documents, not the requests: `Indexer` reads posts
//! in id order from where the index's last commit got to, so an
//! acknowledged post is indexed even if the instance that took it died a
//! moment later, and an index deleted or lost is rebuilt by reading them
//! all again.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::read::assemble::keep_visible_posts;
use super::read::loader::Loader;
use super::read::paging::{fill_page, fill_page_by};
use super::read::post_json::PostJson;
use super::read::responses::Page;
use super::read::visibility::{finds_posts_of, found_by_strangers, Relations};
use super::Context;
use super::Presentation;
use crate::domain::cursor::{Cursor, NameCursor, ScoreCursor};
use crate::domain::search_query::PostQuery;
use crate::domain::search_text::{marks, name_key};
use crate::error::AppResult;
use crate::store::search::{IndexedPost, PostSearch, SearchHit, SearchIndex};
use crate::store::{DocStore, NameKey, PostDoc, PostPresence, StoreResult, UserCard, UserDoc};

/// Posts read from the documents per indexing step.
const INDEXING_BATCH: usize = 1000;

/// How long after its id was made a post may still be committed: ids are
/// made before the insert (and on another instance, by another clock), so
/// the indexer's mark stays this far behind the newest id it read, and
/// the posts above the mark are read again until they are older.
const SETTLING: Duration = Duration::from_secs(10);

/// How often the indexer looks for new posts when nothing wakes it, and
/// how often it reads the settling window again.
const POLL: Duration = Duration::from_secs(1);

/// The least time between two passes: posts written meanwhile wait for
/// the next, so that a busy instance indexes them in batches, a commit
/// (which syncs files) a batch, not one a post.
const PASS_GAP: Duration = Duration::from_millis(100);

/// The least time between two passes after one that indexed at least
/// `BUSY_PASS_POSTS`: under a stream of posts, commits once a second
/// rather than ten times. Each commit syncs files beside the documents'
/// own syncs, and at ten a second posting slowed by a fifth.
const BUSY_PASS_GAP: Duration = Duration::from_secs(1);
const BUSY_PASS_POSTS: usize = 100;

/// A pass commits what it has read once it holds this many posts or this
/// many bytes of their text, and at its end: one commit for a second of
/// posts, with what waits for it bounded.
const COMMIT_POSTS: usize = 10_000;
const COMMIT_BYTES: usize = 8 << 20;

/// The search index and what keeps it up to date.
pub struct Search {
    /// `None` when this instance could not open its index (another
    /// instance holds the same folder): searches answer 503 and say why.
    index: Option<Arc<dyn SearchIndex>>,
    why_not: String,
    wake: tokio::sync::Notify,
    /// Authors whose posts are being indexed again (`reindex_author`), and
    /// whether their setting changed again since the pass began.
    reindexing: std::sync::Mutex<std::collections::HashMap<i64, bool>>,
    reindex_permits: tokio::sync::Semaphore,
    forgetting: std::sync::Mutex<Forgetting>,
}

/// Entries to remove, gathered while a removal commits.
#[derive(Default)]
struct Forgetting {
    posts: Vec<i64>,
    authors: Vec<i64>,
    /// Whether a task is removing them.
    draining: bool,
}

impl Search {
    pub fn new(index: Arc<dyn SearchIndex>) -> Self {
        Self {
            index: Some(index),
            why_not: String::new(),
            wake: tokio::sync::Notify::new(),
            reindexing: Default::default(),
            reindex_permits: tokio::sync::Semaphore::new(REINDEXING_AT_ONCE),
            forgetting: Default::default(),
        }
    }

    /// No index on this instance, for `why`.
    pub fn unavailable(why: String) -> Self {
        Self {
            index: None,
            why_not: why,
            wake: tokio::sync::Notify::new(),
            reindexing: Default::default(),
            reindex_permits: tokio::sync::Semaphore::new(REINDEXING_AT_ONCE),
            forgetting: Default::default(),
        }
    }

    /// The index, or the store error a search answers when there is none.
    pub fn index(&self) -> StoreResult<&Arc<dyn SearchIndex>> {
        self.index.as_ref().ok_or_else(|| {
            crate::store::StoreError::Unavailable(anyhow::anyhow!(
                "no search index on this instance: {}",
                self.why_not
            ))
        })
    }

    /// A post was written here: index it now rather than at the next poll.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Forgets a deleted post's entry, off the request's path. Only tidy:
    /// a deleted post is never answered (the rules check every hit); an
    /// entry this misses (another instance's index, a failed write, a pass
    /// of the indexer that read the post just before it was deleted) stays,
    /// unanswered, until the index is rebuilt. Deletes made while a
    /// removal commits go together in the next, so an account's thousand
    /// posts erased at once are a few commits, not a thousand.
    pub fn forget(self: &Arc<Self>, post_id: i64) {
        self.forget_later(|p| p.posts.push(post_id));
    }

    /// Forgets every entry of an erased account's posts (the same, by
    /// author: what any pass indexed of them).
    pub fn forget_author(self: &Arc<Self>, uid: i64) {
        self.forget_later(|p| p.authors.push(uid));
    }

    fn forget_later(self: &Arc<Self>, add: impl FnOnce(&mut Forgetting)) {
        let Some(index) = self.index.clone() else {
            return;
        };
        {
            let mut pending = self
                .forgetting
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            add(&mut pending);
            if pending.draining {
                return;
            }
            pending.draining = true;
        }
        let search = self.clone();
        tokio::spawn(async move {
            loop {
                let (posts, authors) = {
                    let mut pending = search
                        .forgetting
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    if pending.posts.is_empty() && pending.authors.is_empty() {
                        pending.draining = false;
                        return;
                    }
                    (
                        std::mem::take(&mut pending.posts),
                        std::mem::take(&mut pending.authors),
                    )
                };
                if !posts.is_empty() {
                    if let Err(e) = index.remove_posts(&posts).await {
                        tracing::warn!(posts = posts.len(), error = %e, "could not remove deleted posts from the search index");
                    }
                }
                if !authors.is_empty() {
                    if let Err(e) = index.remove_authors(&authors).await {
                        tracing::warn!(?authors, error = %e, "could not remove erased accounts' posts from the search index");
                    }
                }
            }
        });
    }

    /// Runs the indexer until the task is dropped.
    pub fn spawn_indexer(ctx: Context) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            if ctx.search.index.is_none() {
                return;
            }
            let mut indexer = Indexer::default();
            loop {
                let gap = match indexer.step(&ctx).await {
                    Ok(indexed) if indexed >= BUSY_PASS_POSTS => BUSY_PASS_GAP,
                    Ok(_) => PASS_GAP,
                    Err(e) => {
                        tracing::warn!(error = %e, "search indexing failed; trying again");
                        PASS_GAP
                    }
                };
                tokio::time::sleep(gap).await;
                let _ = tokio::time::timeout(POLL, ctx.search.wake.notified()).await;
            }
        })
    }
}

/// What the index holds of a post, its author letting themselves be found
/// or not.
pub fn indexed(post: &PostDoc, author_findable: bool) -> IndexedPost {
    IndexedPost {
        id: post.id,
        author: post.author_uid,
        createtime: post.createtime,
        content: post.content.clone(),
        has_media: !post.media.is_empty(),
        findable: found_by_strangers(post.visibility, author_findable),
    }
}

/// Of these posts' authors, those who let themselves be found, in one read.
async fn findable_authors(docs: &dyn DocStore, posts: &[&PostDoc]) -> StoreResult<HashSet<i64>> {
    let mut authors: Vec<i64> = posts.iter().map(|p| p.author_uid).collect();
    authors.sort_unstable();
    authors.dedup();
    if authors.is_empty() {
        return Ok(HashSet::new());
    }
    Ok(docs
        .users_for_indexing(&authors)
        .await?
        .into_iter()
        .filter(|u| u.findable)
        .map(|u| u.uid)
        .collect())
}

/// Indexes `uid`'s posts again after they turned being found on or off,
/// off the request's path, so that the index's first filter agrees with
/// the setting (the answer asks the setting itself, `unfindable`, so until
/// then strangers only miss posts they would be allowed to find). Each
/// pass indexes with the setting as the documents hold it when it starts,
/// and another follows if it changed meanwhile; no author has two at
/// once, however often they flip it, and at most `REINDEXING_AT_ONCE`
/// authors are indexed again at a time. A pass cut short by a stop leaves
/// the rest until the index is rebuilt.
pub fn reindex_author(ctx: &Context, uid: i64) {
    if ctx.search.index.is_none() {
        return;
    }
    {
        let mut running = ctx
            .search
            .reindexing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(again) = running.get_mut(&uid) {
            *again = true;
            return;
        }
        running.insert(uid, false);
    }
    let ctx = ctx.clone();
    tokio::spawn(async move {
        // However the task ends (a panic too), the author can be indexed
        // again later.
        let mut done = Reindexing {
            ctx: &ctx,
            uid,
            armed: true,
        };
        let mut failures = 0;
        loop {
            let permit = ctx.search.reindex_permits.acquire().await;
            let used = match reindex_pass(&ctx, uid).await {
                Ok(used) => used,
                // A dropped connection or an engine restarting: the pass
                // is made whole again after a wait, doubling, half a minute in
                // all.
                Err(e) if failures < REINDEX_TRIES => {
                    drop(permit);
                    tracing::warn!(uid, error = %e, "could not index an author's posts again; trying again");
                    tokio::time::sleep(Duration::from_secs(1 << failures)).await;
                    failures += 1;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(uid, error = %e, "could not index an author's posts again; a rebuild will");
                    return;
                }
            };
            drop(permit);
            let now = match ctx.docs.users_for_indexing(&[uid]).await {
                Ok(users) => users.first().map(|u| u.findable),
                Err(_) => used,
            };
            let mut running = ctx
                .search
                .reindexing
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match running.get_mut(&uid) {
                Some(again) if *again || now != used => *again = false,
                // Out under the same lock that a new change checks: none
                // falls between this check and the entry's end.
                _ => {
                    running.remove(&uid);
                    done.armed = false;
                    return;
                }
            }
        }
    });
}

/// Passes over an author's posts tried again after the first fails.
const REINDEX_TRIES: u32 = 5;

/// Authors indexed again at once at most: each pass is a batch of commits
/// on the one writer the indexer shares.
const REINDEXING_AT_ONCE: usize = 2;

/// Takes `uid` out of the authors being indexed again if the task ends
/// otherwise than by its loop's last check (a failure, a panic).
struct Reindexing<'c> {
    ctx: &'c Context,
    uid: i64,
    armed: bool,
}

impl Drop for Reindexing<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.ctx
                .search
                .reindexing
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .remove(&self.uid);
        }
    }
}

/// One pass over `uid`'s posts; the setting it indexed them with (None:
/// no such account).
async fn reindex_pass(ctx: &Context, uid: i64) -> StoreResult<Option<bool>> {
    let index = ctx.search.index()?;
    let Some(author) = ctx.docs.users_for_indexing(&[uid]).await?.pop() else {
        return Ok(None);
    };
    let mut before = None;
    loop {
        let ids = ctx
            .docs
            .post_ids_by_author(uid, before, INDEXING_BATCH)
            .await?;
        let posts = ctx.docs.posts_by_ids(&ids).await?;
        let again: Vec<IndexedPost> = posts
            .iter()
            .filter(|p| !p.deleted)
            .map(|p| indexed(p, author.findable))
            .collect();
        // An account erased meanwhile: its posts left the index by author,
        // and are not put back.
        let still = ctx.docs.users_for_indexing(&[uid]).await?;
        if still.first().is_none_or(|u| u.is_erased()) {
            return Ok(None);
        }
        index.index_posts(&again).await?;
        if ids.len() < INDEXING_BATCH {
            return Ok(Some(author.findable));
        }
        before = ids.last().copied();
    }
}

/// Reads posts in id order past the index's mark, and indexes those not
/// indexed yet.
#[derive(Default)]
pub struct Indexer {
    /// Ids above the mark indexed already (not yet settled), so reading
    /// them again does not index them again.
    unsettled: BTreeSet<i64>,
    /// Ids above the mark removed already as deleted: a post indexed and
    /// then deleted within the settling window is removed when read again.
    removed: BTreeSet<i64>,
    /// The mark the last pass ended at: one that went back (an index
    /// emptied under a running indexer) means what it remembers is stale.
    last_mark: Option<i64>,
    /// The highest id read so far, and when the settling window (the
    /// posts above the mark) was last read again whole. Between those
    /// reads, once per `POLL`, a pass reads only posts past this id: at
    /// thousands of posts a second, reading the whole window each pass
    /// would read ten seconds of posts for every post written.
    read_through: Option<i64>,
    window_read_at: Option<std::time::Instant>,
}

impl Indexer {
    /// One pass: every post committed so far is indexed when it returns.
    /// How many posts it indexed that the index did not hold.
    pub async fn step(&mut self, ctx: &Context) -> StoreResult<usize> {
        let index = ctx.search.index()?;
        let pass = self
            .step_on(ctx.docs.as_ref(), index.as_ref(), &|_| {})
            .await;
        if pass.is_err() {
            // Posts read but not indexed: the next pass reads from the mark.
            self.read_through = None;
        }
        pass.map(|p| p.indexed)
    }

    /// `step` on these stores, telling `progress` of each batch of posts
    /// read.
    async fn step_on(
        &mut self,
        docs: &dyn DocStore,
        index: &dyn SearchIndex,
        progress: &(dyn Fn(u64) + Sync),
    ) -> StoreResult<Pass> {
        let mut read = 0;
        let mut newly_indexed = 0;
        // Read and not yet committed, with the mark they move it to.
        let mut pending: Vec<IndexedPost> = Vec::new();
        let mut pending_bytes = 0;
        let mut pending_mark = None;
        let mut mark = index.indexed_through().await?;
        if mark < self.last_mark {
            self.unsettled.clear();
            self.removed.clear();
            // Nothing above the mark is indexed now: the pass reads every
            // post whole, not as presences and then again by id.
            self.read_through = None;
        }
        let settled = crate::ids::first_id_at(crate::ids::now_ms() - SETTLING.as_millis() as i64);
        let whole_window = mark < self.last_mark
            || self.read_through.is_none()
            || self.window_read_at.is_none_or(|at| at.elapsed() >= POLL);
        let mut after = if whole_window {
            mark
        } else {
            self.read_through.max(mark)
        };
        // Below the newest post read before, in the settling window read
        // again, nearly every post is indexed already: each is read as
        // whether it is there and deleted, and a batch holding a post not
        // indexed (one that landed behind newer ones) is read again whole.
        // Past it, every post is new and is read whole at once. Both reads
        // are the indexer's own (`posts_after`), off any request's count.
        let read_before = self.read_through;
        loop {
            let indexed_already = match after < read_before {
                true => {
                    let seen = docs.post_presence_after(after, INDEXING_BATCH).await?;
                    let landed = seen
                        .iter()
                        .any(|p| !p.deleted && !self.unsettled.contains(&p.id));
                    (!landed).then_some(seen)
                }
                false => None,
            };
            let (seen, posts) = match indexed_already {
                Some(seen) => (seen, Vec::new()),
                None => {
                    let posts = docs.posts_after(after, INDEXING_BATCH).await?;
                    let seen = posts
                        .iter()
                        .map(|p| PostPresence {
                            id: p.id,
                            deleted: p.deleted,
                        })
                        .collect();
                    (seen, posts)
                }
            };
            // An empty batch too ends the pass, committing what it read.
            let last_batch = seen.len() < INDEXING_BATCH;
            if let Some(last) = seen.last().map(|p| p.id) {
                self.read_through = self.read_through.max(Some(last));
                after = Some(last);
                read += seen.len() as u64;
                progress(seen.len() as u64);
            }
            let unseen = |p: &&PostDoc| !self.unsettled.contains(&p.id);
            let live: Vec<&PostDoc> = posts.iter().filter(|p| !p.deleted).filter(unseen).collect();
            let findable = findable_authors(docs, &live).await?;
            pending.extend(
                live.iter()
                    .map(|p| indexed(p, findable.contains(&p.author_uid))),
            );
            pending_bytes += live.iter().map(|p| p.content.len()).sum::<usize>();
            // Deleted before this read: gone from the index too, in case
            // an earlier pass indexed them.
            let gone: Vec<i64> = seen
                .iter()
                .filter(|p| p.deleted && !self.removed.contains(&p.id))
                .map(|p| p.id)
                .collect();
            pending_mark = seen
                .iter()
                .map(|p| p.id)
                .filter(|id| *id < settled)
                .max()
                .max(pending_mark)
                .max(mark);
            if !gone.is_empty() {
                index.remove_posts(&gone).await?;
                self.removed.extend(&gone);
            }
            if last_batch || pending.len() >= COMMIT_POSTS || pending_bytes >= COMMIT_BYTES {
                if !pending.is_empty() || pending_mark != mark {
                    // The posts and the mark past them in one commit, so
                    // a crash loses neither without the other.
                    match pending_mark {
                        Some(m) => index.index_posts_through(&pending, m).await?,
                        None => index.index_posts(&pending).await?,
                    }
                    newly_indexed += pending.len();
                    self.unsettled.extend(pending.iter().map(|p| p.id));
                    mark = pending_mark;
                    if let Some(m) = mark {
                        self.unsettled = self.unsettled.split_off(&(m + 1));
                        self.removed = self.removed.split_off(&(m + 1));
                    }
                }
                pending.clear();
                pending_bytes = 0;
            }
            if last_batch {
                break;
            }
        }
        self.last_mark = mark;
        if whole_window {
            self.window_read_at = Some(std::time::Instant::now());
        }
        Ok(Pass {
            read,
            indexed: newly_indexed,
        })
    }
}

/// What a pass of the indexer did.
struct Pass {
    /// Posts read from the documents.
    read: u64,
    /// Posts indexed that the index did not hold.
    indexed: usize,
}

/// Empties `index` and indexes every post of the documents again, telling
/// `progress` of each batch read: `moments rebuild-search`, for an index
/// that no instance holds open. How many posts it read.
pub async fn rebuild(
    docs: &dyn DocStore,
    index: &dyn SearchIndex,
    progress: &(dyn Fn(u64) + Sync),
) -> StoreResult<u64> {
    index.clear().await?;
    Ok(Indexer::default()
        .step_on(docs, index, progress)
        .await?
        .read)
}

/// A page of posts found, and in each the spans of its text that matched
/// (UTF-16 offsets, `search_text::marks`), by post id.
pub struct FoundPosts {
    pub page: Page<PostJson>,
    pub marks: Vec<(i64, Vec<(usize, usize)>)>,
}

/// Posts `reader` may read that match `q`, newest first.
/// In what order a search answers posts, and where a page starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PostOrder {
    /// Newest first, below the last post the previous page showed.
    Newest(Option<Cursor>),
    /// Best match first (`SearchIndex::search_posts_by_relevance`), ranked
    /// below the previous page's last; among the `RELEVANCE_DEPTH` best.
    Relevance(Option<ScoreCursor>),
}

/// How many of the best matches a search by relevance ranks: pages go on
/// through these, and end with them. Ranking needs every match's score,
/// so a deeper reader of a common word would cost the whole index.
pub const RELEVANCE_DEPTH: usize = 500;

pub async fn posts(
    ctx: &Context,
    reader: i64,
    q: &str,
    order: PostOrder,
    limit: usize,
    pres: &Presentation,
) -> AppResult<FoundPosts> {
    let query = PostQuery::parse(q)?;
    super::rate_limits::enforce(
        ctx,
        &super::rate_limits::search_budgets(ctx.settings.rate_limits.as_ref(), reader),
    )
    .await?;
    // A name no one has finds nothing, as a name whose posts the reader
    // may not read does, and after the same work (uid 0, the service's,
    // writes no posts): neither the answer nor its time tells whether it
    // exists.
    let from = match &query.from {
        None => None,
        Some(name) => Some(match crate::domain::user::Username::parse(name) {
            Ok(name) => ctx
                .docs
                .user_by_username(name.as_str())
                .await?
                .map_or(0, |user| user.uid),
            Err(_) => 0,
        }),
    };
    let circle = circle_of(ctx, reader).await?;
    let in_circle: HashSet<i64> = circle.iter().copied().collect();
    let in_circle = &in_circle;
    let search = PostSearch {
        terms: query.terms.clone(),
        circle,
        from,
        since: query.since,
        until: query.until,
        has_media: query.has_media,
        before: None,
        limit: 0,
        window: None,
    };
    // Who may find a post outside its author's circle is decided at each
    // answer, as the index may be behind a change of the setting.
    let keep = |hits: Vec<SearchHit>, room: usize| async move {
        let hidden = unfindable(ctx, hits.iter().map(|h| h.author), in_circle).await?;
        let found = |h: &SearchHit| (!hidden.contains(&h.author)).then_some(h.id);
        keep_visible_posts(ctx, &hits, found, room, Some(reader), pres).await
    };
    // The next page starts after the last post shown, never after a hit
    // the reader may not read: `fill_page`'s cursor can name the last hit
    // it looked at, and a post's id tells when it was written, so a cursor
    // past a hidden hit would tell that a post the reader may not read
    // holds the words. A full page always has a cursor (whether more
    // exist is not told); a short one has none, also when the rounds ran
    // out on hits the reader may not read (the README says so).
    let (items, next_cursor) = match order {
        PostOrder::Newest(cursor) => {
            let (items, _looked_past) = fill_page(
                limit,
                cursor.map(|c| c.0),
                |before, n| {
                    let search = PostSearch {
                        before,
                        limit: n,
                        ..search.clone()
                    };
                    async move { Ok(ctx.search.index()?.search_posts(&search).await?) }
                },
                keep,
                |h| h.id,
            )
            .await?;
            let next = (items.len() == limit)
                .then(|| items.last().map(|p| Cursor::encode(p.id)))
                .flatten();
            (items, next)
        }
        PostOrder::Relevance(after) => {
            let ranked = ctx
                .search
                .index()?
                .search_posts_by_relevance(&PostSearch {
                    limit: RELEVANCE_DEPTH,
                    ..search.clone()
                })
                .await?;
            let start = after.map_or(0, |c| {
                ranked
                    .iter()
                    .position(|h| c.is_before(h.score, h.hit.id))
                    .unwrap_or(ranked.len())
            });
            let ranked = &ranked[start..];
            // Paged by place in this ranking, read once.
            let (items, _looked_past) = fill_page_by(
                limit,
                None,
                |before: Option<usize>, n| {
                    let from = before.map_or(0, |at| at + 1).min(ranked.len());
                    let to = (from + n).min(ranked.len());
                    let batch: Vec<(usize, SearchHit)> = ranked[from..to]
                        .iter()
                        .enumerate()
                        .map(|(i, h)| (from + i, h.hit))
                        .collect();
                    async move { Ok(batch) }
                },
                |batch: Vec<(usize, SearchHit)>, room| {
                    keep(batch.into_iter().map(|(_, h)| h).collect(), room)
                },
                |(at, _)| *at,
                |_| String::new(),
            )
            .await?;
            let next = (items.len() == limit)
                .then(|| {
                    let last = items.last()?;
                    let hit = ranked.iter().find(|h| h.hit.id == last.id)?;
                    Some(ScoreCursor::encode(hit.score, hit.hit.id))
                })
                .flatten();
            (items, next)
        }
    };
    let terms = query.terms;
    let contents: Vec<(i64, String)> = items.iter().map(|p| (p.id, content_of(p))).collect();
    // Cutting a page of texts again is CPU work: off the async workers.
    let marks = tokio::task::spawn_blocking(move || {
        contents
            .into_iter()
            .map(|(id, content)| (id, marks(&content, &terms)))
            .collect()
    })
    .await
    .map_err(|e| crate::error::AppError::Internal(e.into()))?;
    Ok(FoundPosts {
        page: Page {
            items,
            next_cursor,
            server_time: pres.now,
        },
        marks,
    })
}

/// Those of `authors` outside the reader's circle who do not let
/// themselves be found (`read::visibility::finds_posts_of`): one read of
/// their accounts, none when every author is in the circle.
async fn unfindable(
    ctx: &Context,
    authors: impl Iterator<Item = i64>,
    circle: &HashSet<i64>,
) -> AppResult<HashSet<i64>> {
    let mut strangers: Vec<i64> = authors.filter(|a| !circle.contains(a)).collect();
    strangers.sort_unstable();
    strangers.dedup();
    if strangers.is_empty() {
        return Ok(HashSet::new());
    }
    let accounts = ctx.docs.users_by_ids(&strangers).await?;
    Ok(accounts
        .into_iter()
        .filter(|u| !finds_posts_of(false, u.findable))
        .map(|u| u.uid)
        .collect())
}

/// The reader and the people they follow: whose posts they can find
/// whether or not the posts are public.
async fn circle_of(ctx: &Context, reader: i64) -> AppResult<Vec<i64>> {
    let mut loader = Loader::new(ctx);
    let loaded = loader
        .load(&[], &Relations::reads(ctx, Some(reader)))
        .await?;
    let sets = loaded.relation_sets(reader);
    loader.finish("search_circle");
    let mut circle: Vec<i64> = sets.following.iter().copied().collect();
    circle.push(reader);
    Ok(circle)
}

/// A post's text as its answer carries it.
fn content_of(post: &PostJson) -> String {
    #[derive(Deserialize)]
    struct Content {
        #[serde(default)]
        content: String,
    }
    serde_json::from_slice::<Content>(&post.json)
        .map(|c| c.content)
        .unwrap_or_default()
}

/// Accounts read per name per round at most, and rounds per page: a page
/// looks at a bounded number of accounts, however many share a prefix.
const PEOPLE_BATCH: usize = 200;
const PEOPLE_ROUNDS: usize = 4;

/// What a search box may send as the start of a name, in characters.
pub const MAX_PREFIX_CHARS: usize = 64;

/// A people search asks for letters: a prefix of none (spaces only) would
/// ask for everyone. `field` is `prefix` (a search box's, at most
/// `MAX_PREFIX_CHARS`) or `q` (a search's, at most `MAX_QUERY_CHARS`).
fn name_prefix(prefix: &str, field: &'static str) -> AppResult<String> {
    let max = match field {
        "prefix" => MAX_PREFIX_CHARS,
        _ => crate::domain::search_query::MAX_QUERY_CHARS,
    };
    if prefix.is_empty() {
        return Err(crate::error::AppError::invalid(field, "is required"));
    }
    if prefix.chars().count() > max {
        return Err(crate::error::AppError::invalid(
            field,
            format!("at most {max} characters"),
        ));
    }
    let key = name_key(prefix);
    if key.is_empty() {
        return Err(crate::error::AppError::unprocessable(
            field,
            "holds no letter or digit to look for",
        ));
    }
    Ok(key)
}

/// Where `user` stands in a people search for `key`: the smaller of its
/// names that start with it (its username, when `key` could start one,
/// and its folded nickname), and its uid. None if neither does.
fn found_at(user: &UserDoc, key: &str, by_username: bool) -> Option<(String, i64)> {
    let names = [
        by_username.then(|| NameKey::Username.of(user)),
        Some(NameKey::NickName.of(user)),
    ];
    names
        .into_iter()
        .flatten()
        .filter(|n| n.starts_with(key))
        .min()
        .map(|n| (n, user.uid))
}

/// Accounts `reader` may find whose username or nickname starts with
/// `prefix` (folded as `search_text::name_key` folds it), in the order of
/// that name, past `after` (the last account the previous page showed).
/// Each is one the rules let the reader find (`Relations::finds_person`):
/// never an account blocked either way, suspended or erased, and one that
/// turned being found off only by those who follow it.
pub async fn people(
    ctx: &Context,
    reader: i64,
    prefix: &str,
    field: &'static str,
    after: Option<NameCursor>,
    limit: usize,
    now: i64,
) -> AppResult<Page<UserCard>> {
    let key = name_prefix(prefix, field)?;
    super::rate_limits::enforce(
        ctx,
        &super::rate_limits::search_budgets(ctx.settings.rate_limits.as_ref(), reader),
    )
    .await?;
    // A username is lowercase letters, digits and `_.-`: another key
    // starts none, and only nicknames are read.
    let by_username = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    // The page goes on from the place the last one ended: a name and a
    // uid, not an account, so that a cursor made up by hand tells nothing.
    let mut from = after.map(|c| (c.name, c.uid));
    let mut loader = Loader::new(ctx);
    let loaded = loader
        .load(&[], &Relations::reads(ctx, Some(reader)))
        .await?;
    loader.finish("search_people");
    let rel = Relations::from_loaded(Some(reader), &loaded);
    let mut found: Vec<UserCard> = Vec::new();
    let mut last_shown = None;
    let mut batch = (limit + 1).min(PEOPLE_BATCH);
    for _ in 0..PEOPLE_ROUNDS {
        let read = |by: NameKey| {
            let (key, from) = (key.clone(), from.clone());
            async move {
                if by == NameKey::Username && !by_username {
                    return Ok(Vec::new());
                }
                ctx.docs.users_by_name_prefix(by, &key, from, batch).await
            }
        };
        let (by_name, by_nick) =
            tokio::try_join!(read(NameKey::Username), read(NameKey::NickName))?;
        // Each list is whole up to its last name when it came back full:
        // past the smaller of those, the other may be missing accounts.
        let frontier = [(NameKey::Username, &by_name), (NameKey::NickName, &by_nick)]
            .into_iter()
            .filter(|(_, list)| list.len() == batch)
            .filter_map(|(by, list)| list.last().map(|u| (by.of(u), u.uid)))
            .min();
        let ended = by_name.len() < batch && by_nick.len() < batch;
        let mut candidates: Vec<((String, i64), UserDoc)> = Vec::new();
        for (by, list) in [(NameKey::Username, by_name), (NameKey::NickName, by_nick)] {
            for user in list {
                let at = (by.of(&user), user.uid);
                // An account both of whose names match shows once, at the
                // smaller.
                if found_at(&user, &key, by_username).as_ref() == Some(&at) {
                    candidates.push((at, user));
                }
            }
        }
        candidates.sort_by(|a, b| a.0.cmp(&b.0));
        candidates.dedup_by(|a, b| a.0 == b.0);
        if let Some(frontier) = &frontier {
            candidates.retain(|(at, _)| at <= frontier);
        }
        let rel = super::read::visibility_reads::knowing(
            ctx,
            &rel,
            candidates.iter().map(|(_, u)| u.uid),
        )
        .await?;
        for (at, user) in candidates {
            if found.len() == limit {
                break;
            }
            if !user.is_erased()
                && !user.is_withheld(now)
                && rel.finds_person(user.uid, user.findable)
            {
                found.push(user.card());
                last_shown = Some(at);
            }
        }
        if found.len() == limit || ended {
            break;
        }
        // Not full and not ended: every account up to the frontier was
        // judged, and the next round reads past it.
        from = frontier;
        batch = (batch * 2).min(PEOPLE_BATCH);
    }
    // As for posts: a full page goes on after its last account shown; a
    // short one has no next.
    let next_cursor = (found.len() == limit)
        .then(|| last_shown.map(|(name, uid)| NameCursor::encode(&name, uid)))
        .flatten();
    Ok(Page {
        items: found,
        next_cursor,
        server_time: now,
    })
}
