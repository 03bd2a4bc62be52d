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

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::read::assemble::keep_visible_posts;
use super::read::loader::Loader;
use super::read::paging::fill_page;
use super::read::post_json::PostJson;
use super::read::responses::Page;
use super::read::visibility::Relations;
use super::Context;
use super::Presentation;
use crate::domain::cursor::Cursor;
use crate::domain::post::Visibility;
use crate::domain::search_query::PostQuery;
use crate::domain::search_text::marks;
use crate::error::AppResult;
use crate::store::search::{IndexedPost, PostSearch, SearchIndex};
use crate::store::{PostDoc, StoreResult};

/// Posts read from the documents per indexing step.
const INDEXING_BATCH: usize = 1000;

/// How long after its id was made a post may still be committed: ids are
/// made before the insert (and on another instance, by another clock), so
/// the indexer's mark stays this far behind the newest id it read, and
/// the posts above the mark are read again until they are older.
const SETTLING: Duration = Duration::from_secs(10);

/// How often the indexer looks for new posts when nothing wakes it.
const POLL: Duration = Duration::from_secs(1);

/// The search index and what keeps it up to date.
pub struct Search {
    /// `None` when this instance could not open its index (another
    /// instance holds the same folder): searches answer 503 and say why.
    index: Option<Arc<dyn SearchIndex>>,
    why_not: String,
    wake: tokio::sync::Notify,
}

impl Search {
    pub fn new(index: Arc<dyn SearchIndex>) -> Self {
        Self {
            index: Some(index),
            why_not: String::new(),
            wake: tokio::sync::Notify::new(),
        }
    }

    /// No index on this instance, for `why`.
    pub fn unavailable(why: String) -> Self {
        Self {
            index: None,
            why_not: why,
            wake: tokio::sync::Notify::new(),
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
    /// unanswered, until the index is rebuilt.
    pub fn forget(self: &Arc<Self>, post_id: i64) {
        let Some(index) = self.index.clone() else {
            return;
        };
        tokio::spawn(async move {
            if let Err(e) = index.remove_posts(&[post_id]).await {
                tracing::warn!(post_id, error = %e, "could not remove a deleted post from the search index");
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
                if let Err(e) = indexer.step(&ctx).await {
                    tracing::warn!(error = %e, "search indexing failed; trying again");
                }
                let _ = tokio::time::timeout(POLL, ctx.search.wake.notified()).await;
            }
        })
    }
}

/// What the index holds of a post.
pub fn indexed(post: &PostDoc) -> IndexedPost {
    IndexedPost {
        id: post.id,
        author: post.author_uid,
        createtime: post.createtime,
        content: post.content.clone(),
        has_media: !post.media.is_empty(),
        findable: post.visibility == Visibility::Public,
    }
}

/// Reads posts in id order past the index's mark, and indexes those not
/// indexed yet.
#[derive(Default)]
pub struct Indexer {
    /// Ids above the mark indexed already (not yet settled), so reading
    /// them again does not index them again.
    unsettled: BTreeSet<i64>,
}

impl Indexer {
    /// One pass: every post committed so far is indexed when it returns.
    pub async fn step(&mut self, ctx: &Context) -> StoreResult<()> {
        let index = ctx.search.index()?;
        let mut mark = index.indexed_through().await?;
        let settled = crate::ids::first_id_at(crate::ids::now_ms() - SETTLING.as_millis() as i64);
        let mut after = mark;
        loop {
            let posts = ctx.docs.posts_after(after, INDEXING_BATCH).await?;
            let Some(last) = posts.last().map(|p| p.id) else {
                break;
            };
            let unseen = |p: &&PostDoc| !self.unsettled.contains(&p.id);
            let fresh: Vec<IndexedPost> = posts
                .iter()
                .filter(|p| !p.deleted)
                .filter(unseen)
                .map(indexed)
                .collect();
            // Deleted before this read: gone from the index too, in case
            // an earlier pass indexed them.
            let gone: Vec<i64> = posts
                .iter()
                .filter(|p| p.deleted)
                .filter(unseen)
                .map(|p| p.id)
                .collect();
            let new_mark = posts
                .iter()
                .map(|p| p.id)
                .filter(|id| *id < settled)
                .max()
                .max(mark);
            if !gone.is_empty() {
                index.remove_posts(&gone).await?;
                self.unsettled.extend(&gone);
            }
            if !fresh.is_empty() || new_mark != mark {
                match new_mark {
                    Some(m) => index.index_posts_through(&fresh, m).await?,
                    None => index.index_posts(&fresh).await?,
                }
                self.unsettled.extend(fresh.iter().map(|p| p.id));
                mark = new_mark;
                if let Some(m) = mark {
                    self.unsettled = self.unsettled.split_off(&(m + 1));
                }
            }
            after = Some(last);
            if posts.len() < INDEXING_BATCH {
                break;
            }
        }
        Ok(())
    }
}

/// A page of posts found, and in each the spans of its text that matched
/// (UTF-16 offsets, `search_text::marks`), by post id.
pub struct FoundPosts {
    pub page: Page<PostJson>,
    pub marks: Vec<(i64, Vec<(usize, usize)>)>,
}

/// Posts `reader` may read that match `q`, newest first.
pub async fn posts(
    ctx: &Context,
    reader: i64,
    q: &str,
    cursor: Option<Cursor>,
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
    let search = PostSearch {
        terms: query.terms.clone(),
        circle,
        from,
        since: query.since,
        until: query.until,
        has_media: query.has_media,
        before: None,
        limit: 0,
    };
    let (items, next_cursor) = fill_page(
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
        |ids: Vec<i64>, room| async move {
            keep_visible_posts(ctx, &ids, |id| Some(*id), room, Some(reader), pres).await
        },
        |id| *id,
    )
    .await?;
    // The next page starts after the last post shown, never after a hit
    // the reader may not read: `fill_page`'s cursor can name the last hit
    // it looked at, and a post's id tells when it was written, so a cursor
    // past a hidden hit would tell that a post the reader may not read
    // holds the words. A full page always has a cursor (whether more
    // exist is not told); a short one has none, also when the rounds ran
    // out on hits the reader may not read (the README says so).
    let _ = next_cursor;
    let next_cursor = (items.len() == limit)
        .then(|| items.last().map(|p| Cursor::encode(p.id)))
        .flatten();
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
