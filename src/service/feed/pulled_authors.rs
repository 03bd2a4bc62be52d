//! Pulled authors: accounts followed by more than
//! `MOMENTS_PULLED_AUTHOR_FOLLOWERS`, whose posts are merged into each
//! follower's home feed at read time instead of pushed into every timeline.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::AppResult;
use crate::ids::now_ms;
use crate::service::Context;
use crate::store::StoreResult;

/// How long an instance trusts a follower count when deciding push or pull.
const FOLLOWER_COUNT_TRUST_MS: i64 = 60_000;
/// How long an instance trusts its copy of pulled authors' newest post ids,
/// at most. Sooner than that, a pulled author's new post makes every
/// instance forget its copy: the publisher at once, the others when they
/// next poll the live store's notes, every [`PULLED_POLL_EVERY`]. (A deleted
/// post needs no note: its cached body is a tombstone every instance sees.)
const PULLED_POSTS_MS: i64 = 5_000;
/// How often each instance polls for pulled authors' new posts.
pub const PULLED_POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// Newest post ids fetched per pulled author: more than any page needs.
const PULLED_POSTS_KEPT: usize = 128;

/// Per instance, what deciding push or pull and pulling need, so that a feed
/// read costs no document round trip once warm:
/// - follower counts of recently seen authors (a count per followee on every
///   read would be ruinous). An author who just crossed the threshold is
///   pulled at most a minute late, never lost: until then their posts reach
///   followers by the rebuild and history paths.
/// - pulled authors' newest post ids: every follower's read pulls them, and
///   without a copy each read would be a query on the same few authors.
#[derive(Default)]
pub struct PulledAuthors {
    counts: Mutex<HashMap<i64, (u64, i64)>>,
    pulled: Mutex<HashMap<i64, PulledPosts>>,
    /// The newest note of a pulled author's post this instance has acted
    /// on; `None` before the first poll.
    seen_note: Mutex<Option<u64>>,
}

/// One pulled author's newest post ids, newest first: every post it has with
/// an id at or above `from` (`None`: every post it has), read at `at`.
struct PulledPosts {
    ids: Vec<i64>,
    from: Option<i64>,
    at: i64,
}

impl PulledPosts {
    /// Up to `want` ids below `before`, newest first, if this copy holds
    /// them all (else the page reaches past it, to older posts).
    fn page(&self, before: Option<i64>, want: usize) -> Option<Vec<i64>> {
        let below: Vec<i64> = self
            .ids
            .iter()
            .copied()
            .filter(|p| before.is_none_or(|b| *p < b))
            .take(want)
            .collect();
        (self.from.is_none() || below.len() >= want).then_some(below)
    }
}

impl PulledAuthors {
    /// Those of `authors` followed by more than the threshold, as counted
    /// within the last minute.
    pub(super) async fn pulled_among(&self, ctx: &Context, authors: &[i64]) -> AppResult<Vec<i64>> {
        let now = now_ms();
        let mut known = Vec::new();
        let mut missing = Vec::new();
        if let Ok(map) = self.counts.lock() {
            for a in authors {
                match map.get(a) {
                    Some((n, at)) if now - at < FOLLOWER_COUNT_TRUST_MS => known.push((*a, *n)),
                    _ => missing.push(*a),
                }
            }
        }
        if !missing.is_empty() {
            let fresh = ctx.docs.follower_counts(&missing).await?;
            if let Ok(mut map) = self.counts.lock() {
                if map.len() > 100_000 {
                    map.clear();
                }
                for (a, n) in &fresh {
                    map.insert(*a, (*n, now));
                }
            }
            known.extend(fresh);
        }
        let threshold = ctx.settings.pulled_author_followers;
        Ok(known
            .into_iter()
            .filter(|(_, n)| *n > threshold)
            .map(|(a, _)| a)
            .collect())
    }

    /// Drops this instance's copy of an author's newest posts: the author
    /// has just posted or deleted one.
    pub fn forget_posts_of(&self, author: i64) {
        if let Ok(mut pulled) = self.pulled.lock() {
            pulled.remove(&author);
        }
    }

    /// Forgets the copies of pulled authors that posted since the last poll,
    /// unless the copy already holds the post (it was read after it); all of
    /// them when the notes no longer reach back that far.
    pub async fn poll(&self, live: &dyn crate::store::LiveStore) -> StoreResult<()> {
        let seen = self.seen_note.lock().map(|s| *s).unwrap_or(None);
        let (newest, authors) = live.pulled_authors_posted_after(seen.unwrap_or(0)).await?;
        match (seen, authors) {
            (Some(_), Some(notes)) => {
                if let Ok(mut pulled) = self.pulled.lock() {
                    for (author, post) in notes {
                        if pulled.get(&author).is_some_and(|c| !c.ids.contains(&post)) {
                            pulled.remove(&author);
                        }
                    }
                }
            }
            _ => {
                if let Ok(mut pulled) = self.pulled.lock() {
                    pulled.clear();
                }
            }
        }
        if let Ok(mut s) = self.seen_note.lock() {
            *s = Some(newest);
        }
        Ok(())
    }

    pub fn spawn_poller(
        self: &std::sync::Arc<Self>,
        live: std::sync::Arc<dyn crate::store::LiveStore>,
    ) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        crate::service::jobs::spawn_every(PULLED_POLL_EVERY, move || {
            let (me, live) = (me.clone(), live.clone());
            async move {
                if let Err(e) = me.poll(live.as_ref()).await {
                    tracing::debug!(error = %e, "polling for pulled authors' posts failed; retrying");
                }
            }
        })
    }

    /// The newest `want` post ids of each of these pulled authors below
    /// `before` (the caller merges). Documents are read only for authors
    /// whose copy is missing or stale (all at once), and for a page deeper
    /// than the copies reach.
    pub(super) async fn pulled_posts(
        &self,
        ctx: &Context,
        authors: &[i64],
        before: Option<i64>,
        want: usize,
    ) -> AppResult<Vec<i64>> {
        let now = now_ms();
        let mut out = Vec::new();
        let mut stale = Vec::new();
        let mut deeper = Vec::new();
        let mut take = |author: i64, copy: &PulledPosts| match copy.page(before, want) {
            Some(ids) => out.extend(ids),
            None => deeper.push(author),
        };
        if let Ok(pulled) = self.pulled.lock() {
            for a in authors {
                match pulled.get(a).filter(|p| now - p.at < PULLED_POSTS_MS) {
                    Some(copy) => take(*a, copy),
                    None => stale.push(*a),
                }
            }
        }
        if !stale.is_empty() {
            // One query per author, all at once: each copy is then exact,
            // and there are few pulled authors behind any one reader.
            let fetched = futures_util::future::try_join_all(stale.iter().map(|a| async move {
                let ids = ctx
                    .docs
                    .post_ids_by_authors(&[*a], None, PULLED_POSTS_KEPT)
                    .await?;
                let from = (ids.len() >= PULLED_POSTS_KEPT)
                    .then(|| ids.last().copied())
                    .flatten();
                Ok::<_, crate::error::AppError>((*a, PulledPosts { ids, from, at: now }))
            }))
            .await?;
            for (a, copy) in &fetched {
                take(*a, copy);
            }
            if let Ok(mut pulled) = self.pulled.lock() {
                if pulled.len() > 10_000 {
                    pulled.clear();
                }
                pulled.extend(fetched);
            }
        }
        if !deeper.is_empty() {
            out.extend(ctx.docs.post_ids_by_authors(&deeper, before, want).await?);
        }
        Ok(out)
    }
}
