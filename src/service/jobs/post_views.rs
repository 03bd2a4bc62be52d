//! Views (浏览): a signed-in read of a post by anyone but its
//! author counts one view per reader, post and day (UTC). Counting adds no
//! document write to the read: a view waits in this instance's buffer,
//! which a flusher writes to the documents in batches (a hot counter is
//! queued and written in bulk, never once per read), every `MOMENTS_VIEW_FLUSH_MS` and when
//! the service stops. A post's `viewCount` is what the documents hold (a
//! live blob, dropped after each flush of the post): a view shows in it
//! once written, within a flush, and is never shown and then taken back.
//!
//! What a failure can cost, at most:
//! - this process dying (`kill -9`, a crash): the views waiting in its
//!   buffer, which holds at most `MOMENTS_VIEW_BUFFER` (10,000) and only
//!   what came in since the last flush (one second). A view that finds the
//!   buffer full is not counted;
//! - losing Redis: none. Views wait in the process, counts are documents,
//!   and the live blobs are rebuilt from them.
//!
//! The documents are the judge of "once per reader, post and day": a view
//! this instance counts that another instance (or an earlier flush) stored
//! already is refused by the unique index, and the count follows what was
//! stored.

use crate::ids::DAY_MS;
use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::cursor::Cursor;
use crate::error::AppResult;
use crate::service::read::assemble::page_of_named_posts;
use crate::service::read::post_json::PostJson;
use crate::service::read::responses::Page;
use crate::service::{Context, Presentation};
use crate::store::{BlobKey, Changes, LiveChange, LiveKey, Owner, ViewDoc};

/// How long a reader's views are kept, and listed in their history.
pub const HISTORY_MS: i64 = 30 * DAY_MS;

/// (post, reader, day): what a view is once per.
type ViewKey = (i64, i64, i64);

/// The views waiting to be written, keyed by (post, reader, day), with
/// when each was made.
#[derive(Default)]
struct Waiting {
    views: HashMap<ViewKey, i64>,
}

/// A batch of views being written: the same id and the same documents on
/// every try until one succeeds, which is what lets the documents count
/// each view once however far a failed try got (`ViewDocs::record_views`).
#[derive(Clone)]
struct Batch {
    id: i64,
    keys: Vec<ViewKey>,
    docs: Vec<ViewDoc>,
}

pub struct PostViews {
    waiting: Mutex<Waiting>,
    capacity: usize,
    /// One flush at a time, so two never write the same views; it holds the
    /// batch a failed flush left, for the next one to write first. Its
    /// views stay among the waiting until written.
    flushing: tokio::sync::Mutex<Option<Batch>>,
}

impl PostViews {
    pub fn new(capacity: usize) -> Self {
        Self {
            waiting: Mutex::new(Waiting::default()),
            capacity,
            flushing: tokio::sync::Mutex::new(None),
        }
    }

    /// Counts `uid`'s view of `post` at `at` (epoch ms), once per day here
    /// (the documents decide across instances and flushes); false when it
    /// was waiting already, or the buffer is full.
    pub fn record(&self, post: i64, uid: i64, at: i64) -> bool {
        let Ok(mut w) = self.waiting.lock() else {
            return false;
        };
        let key = (post, uid, at.div_euclid(DAY_MS));
        if w.views.contains_key(&key) {
            return false;
        }
        if w.views.len() >= self.capacity {
            crate::metrics::view_uncounted();
            return false;
        }
        w.views.insert(key, at);
        true
    }

    /// Views waiting, in all.
    pub fn waiting(&self) -> usize {
        self.waiting.lock().map(|w| w.views.len()).unwrap_or(0)
    }

    /// Writes every view waiting now: the new ones become documents and
    /// their posts' counts grow by them; the posts' live counts are
    /// dropped, to be read again. A batch that a failure left is written
    /// first, as it was, by the next flush. Returns how many views it
    /// stored.
    pub async fn flush(&self, ctx: &Context) -> AppResult<usize> {
        let mut unfinished = self.flushing.lock().await;
        let mut stored = 0;
        // The batch a failure left, if any, then one of everything waiting.
        for batch in unfinished.take().into_iter().map(Some).chain([None]) {
            let batch = match batch {
                Some(b) => b,
                None => match self.next_batch() {
                    Some(b) => b,
                    None => break,
                },
            };
            *unfinished = Some(batch.clone());
            stored += ctx.docs.record_views(batch.id, &batch.docs).await?;
            *unfinished = None;
            if let Ok(mut w) = self.waiting.lock() {
                for key in &batch.keys {
                    w.views.remove(key);
                }
            }
            let mut posts: Vec<i64> = batch.docs.iter().map(|v| v.post_id).collect();
            posts.sort_unstable();
            posts.dedup();
            let drops: Vec<Changes> = posts
                .into_iter()
                .map(|post| Changes {
                    owner: Owner::Post(post),
                    expected_gen: None,
                    changes: vec![LiveChange::Drop(LiveKey::Blob(BlobKey::ViewCount(post)))],
                })
                .collect();
            ctx.repair.apply(ctx.live.as_ref(), drops).await;
        }
        Ok(stored)
    }

    /// Every view waiting now, as a new batch; none when none waits.
    fn next_batch(&self) -> Option<Batch> {
        let waiting: Vec<(ViewKey, i64)> = match self.waiting.lock() {
            Ok(w) => w.views.iter().map(|(k, at)| (*k, *at)).collect(),
            Err(_) => return None,
        };
        if waiting.is_empty() {
            return None;
        }
        let docs = waiting
            .iter()
            .map(|((post, uid, day), at)| {
                ViewDoc::new(crate::ids::next_id(), *uid, *post, *day, *at)
            })
            .collect();
        Some(Batch {
            id: crate::ids::next_id(),
            keys: waiting.into_iter().map(|(k, _)| k).collect(),
            docs,
        })
    }

    /// Flushes every `every`, for as long as the returned task lives.
    pub fn spawn_flusher(ctx: Context, every: std::time::Duration) -> tokio::task::JoinHandle<()> {
        super::spawn_every(every, move || {
            let ctx = ctx.clone();
            async move {
                if let Err(e) = ctx.post_views.flush(&ctx).await {
                    tracing::warn!(error = %e, "could not write views; they wait for the next flush");
                }
            }
        })
    }
}

/// The posts `uid` viewed in the last 30 days and may still see, newest
/// view first (one entry per post and day; views of the last second may
/// not be written yet).
pub async fn history(
    ctx: &Context,
    uid: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<PostJson>> {
    let since = pres.now - HISTORY_MS;
    page_of_named_posts(
        ctx,
        uid,
        cursor,
        limit,
        pres,
        |before, n| async move { Ok(ctx.docs.views_page(uid, since, before, n).await?) },
        |v: &ViewDoc| Some(v.post_id),
        |v: &ViewDoc| v.id,
    )
    .await
}
