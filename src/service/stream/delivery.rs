//! What one viewer may be told, asked at delivery time through the same
//! reads the API answers with (`read::visibility` decides, as everywhere):
//! a block, hide or audience change made while a stream is open applies
//! to its next event.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::AppResult;
use crate::service::read::assemble::{assemble_posts, visible_bodies_at};
use crate::service::read::visibility::Place;
use crate::service::{Context, Presentation};

/// A post's counts as one viewer sees them (`post.counts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostCounts {
    pub post_id: i64,
    pub like_count: u64,
    pub comment_count: u64,
    pub share_count: u64,
    /// Whether this viewer likes it (another device of theirs may have).
    pub liked_by_me: bool,
}

/// The counts of an expanded post, read back from its JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CountsOf {
    like_count: u64,
    comment_count: u64,
    share_count: u64,
    liked_by_me: bool,
}

fn presentation() -> Presentation {
    Presentation {
        now: crate::ids::now_ms(),
        ..Presentation::default()
    }
}

/// Which of `posts` the viewer may see (at `place`).
pub async fn visible(
    ctx: &Context,
    uid: i64,
    posts: &[i64],
    place: Place,
) -> AppResult<std::collections::HashSet<i64>> {
    if posts.is_empty() {
        return Ok(Default::default());
    }
    Ok(visible_bodies_at(ctx, posts, Some(uid), place)
        .await?
        .into_keys()
        .collect())
}

/// The counts of those of `posts` the viewer may see, as the expanded post
/// shows them to this viewer: the likes and comments of a friends-only
/// post's strangers are not counted, nor those across a block.
pub async fn counts(ctx: &Context, uid: i64, posts: &[i64]) -> AppResult<Vec<PostCounts>> {
    if posts.is_empty() {
        return Ok(Vec::new());
    }
    let expanded = assemble_posts(ctx, posts, Some(uid), &presentation()).await?;
    let mut out = Vec::with_capacity(expanded.len());
    for post in expanded {
        let c: CountsOf = serde_json::from_slice(&post.json)
            .map_err(|e| crate::error::AppError::Internal(e.into()))?;
        out.push(PostCounts {
            post_id: post.id,
            like_count: c.like_count,
            comment_count: c.comment_count,
            share_count: c.share_count,
            liked_by_me: c.liked_by_me,
        });
    }
    Ok(out)
}

/// Whether the viewer sees this comment (on a post they may see, by and to
/// people they may see there); its post's id when they do.
pub async fn comment_seen(ctx: &Context, uid: i64, comment: i64) -> AppResult<Option<i64>> {
    match crate::service::comments::visible_comment(ctx, comment, Some(uid)).await {
        Ok((c, _)) => Ok(Some(c.post_id)),
        Err(crate::error::AppError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The notification, expanded as the list shows it, if it still shows.
pub async fn notification(
    ctx: &Context,
    uid: i64,
    id: i64,
) -> AppResult<Option<crate::service::notifications::NotificationView>> {
    crate::service::notifications::one(ctx, uid, id, &presentation()).await
}

pub async fn unread(ctx: &Context, uid: i64) -> AppResult<u64> {
    Ok(
        crate::service::notifications::unread(ctx, uid, crate::ids::now_ms())
            .await?
            .unread,
    )
}

/// The `post.new` events among `events` (post id by event index) whose
/// posts the viewer sees in the home feed, read in one batch.
pub async fn entered_home(
    ctx: &Context,
    uid: i64,
    posts: &HashMap<usize, i64>,
) -> AppResult<std::collections::HashSet<i64>> {
    let ids: Vec<i64> = posts.values().copied().collect();
    visible(ctx, uid, &ids, Place::HomeFeed).await
}
