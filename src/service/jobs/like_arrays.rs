//! A like storm on one post: hot writes are queued and applied in
//! batches. The like document is written at once and is the truth; its
//! effect on the post document, the `likes_postid` array, is coalesced per
//! post. On MongoDB with Redis a like leaves the post's id in a Redis
//! stream, read by a consumer group that every instance's applier belongs
//! to: each batch refreshes each post named in it once, from the likes
//! themselves (so a refresh is idempotent, and the order entries arrive in
//! does not matter), then acknowledges the entries. An applier that dies
//! holding entries leaves them pending; after `RECLAIM_IDLE_MS` another
//! applier (or this one, restarted) claims and applies them, so nothing a
//! like acknowledged is lost. Where the stream cannot be written, the like
//! refreshes its post's array itself.
//!
//! Elsewhere there is nothing to queue: on MongoDB alone the array is
//! written with the like, and the embedded documents read the array from
//! the like index (their writes are coalesced by the group commit).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use crate::error::AppResult;
use crate::ids::now_ms;
use crate::service::Context;

/// Entries an applier takes at once.
const BATCH: usize = 1000;
/// How long an entry taken and not acknowledged waits before another
/// applier takes it over: longer than any batch takes.
pub const RECLAIM_IDLE_MS: u64 = 10_000;

/// Has the post's array refreshed: queued where there is a queue, at once
/// where queueing fails.
pub async fn refresh_later(ctx: &Context, post_id: i64) -> AppResult<()> {
    if let Err(e) = ctx.live.queue_array_refreshes(&[post_id]).await {
        tracing::warn!(error = %e, post_id, "could not queue a like array's refresh; writing it now");
        ctx.docs
            .refresh_like_array(post_id, ctx.settings.post_id_array_cap, now_ms())
            .await?;
    }
    Ok(())
}

/// One batch: takes what is queued (and what a dead applier left), refreshes
/// each post once, acknowledges the entries of the posts refreshed. Returns
/// how many posts it refreshed.
pub async fn apply_once(ctx: &Context, consumer: &str) -> AppResult<usize> {
    let taken = ctx
        .live
        .take_array_refreshes(consumer, BATCH, RECLAIM_IDLE_MS)
        .await?;
    if taken.is_empty() {
        return Ok(0);
    }
    let mut entries: HashMap<i64, Vec<String>> = HashMap::new();
    for (entry, post) in taken {
        entries.entry(post).or_default().push(entry);
    }
    let posts: BTreeSet<i64> = entries.keys().copied().collect();
    let cap = ctx.settings.post_id_array_cap;
    let refreshed = futures_util::future::join_all(posts.iter().map(|post| async move {
        let read_at = now_ms();
        (
            *post,
            ctx.docs.refresh_like_array(*post, cap, read_at).await,
        )
    }))
    .await;
    let mut done = Vec::new();
    let mut count = 0;
    for (post, result) in refreshed {
        match result {
            Ok(()) => {
                count += 1;
                done.extend(entries.remove(&post).unwrap_or_default());
            }
            // Left pending: taken over after RECLAIM_IDLE_MS.
            Err(e) => tracing::warn!(error = %e, post, "could not refresh a like array"),
        }
    }
    ctx.live.ack_array_refreshes(&done).await?;
    Ok(count)
}

/// Applies the queue every `every`, for as long as the returned task lives.
pub fn spawn_applier(ctx: Context, every: Duration) -> tokio::task::JoinHandle<()> {
    let consumer = format!("applier-{}", crate::ids::next_id());
    super::spawn_every(every, move || {
        let (ctx, consumer) = (ctx.clone(), consumer.clone());
        async move {
            if let Err(e) = apply_once(&ctx, &consumer).await {
                tracing::warn!(error = %e, "could not apply queued like arrays; retrying");
            }
        }
    })
}
