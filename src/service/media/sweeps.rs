//! What the periodic sweep does for media, so that nothing is left
//! behind: pictures no post took within `MOMENTS_MEDIA_UNATTACHED_HOURS`
//! (and uploads an instance died storing) are deleted; a picture taken by
//! a post being published is checked once, a few minutes later, against
//! the post: made, it stays for good; never made, it is freed again.
//! And an account's pictures go with the account.

use std::collections::HashMap;

use super::attachments::delete_stored;
use crate::error::AppResult;
use crate::ids::{now_ms, HOUR_MS};
use crate::service::Context;
use crate::store::{MediaDoc, MediaState};

const BATCH: usize = 200;

/// How long after a post took a picture the sweep checks that the post
/// was made: far longer than publishing takes.
pub const ATTACH_CHECK_AFTER_MS: i64 = 10 * 60 * 1000;

/// One pass: each kind of work in batches until a batch comes back short,
/// at most 50 batches each.
pub async fn sweep_once(ctx: &Context) -> AppResult<()> {
    let hours = i64::try_from(ctx.settings.media.unattached_hours).unwrap_or(i64::MAX);
    let unattached_before = now_ms().saturating_sub(hours.saturating_mul(HOUR_MS));
    for state in [MediaState::Ready, MediaState::Storing] {
        for _ in 0..50 {
            let stale = ctx
                .docs
                .media_in_state_before(state, unattached_before, BATCH)
                .await?;
            let found = stale.len();
            let doomed = match state {
                MediaState::Ready => claim(ctx, stale).await?,
                _ => stale,
            };
            delete_by_owner(ctx, &doomed).await?;
            if found < BATCH {
                break;
            }
        }
    }
    for _ in 0..50 {
        let attached = ctx
            .docs
            .media_in_state_before(
                MediaState::Attached,
                now_ms() - ATTACH_CHECK_AFTER_MS,
                BATCH,
            )
            .await?;
        check_attached(ctx, &attached).await?;
        if attached.len() < BATCH {
            break;
        }
    }
    Ok(())
}

/// Of pictures found on no post, those this sweep has taken back to
/// `storing` (which no post can take) first: one a post took between the
/// read and now stays with that post. Two round trips an owner, not one a
/// picture: the move, then a read of which moved (those `storing` since
/// this claim; another sweep claiming the same picture in the same
/// millisecond only deletes it twice).
async fn claim(ctx: &Context, stale: Vec<MediaDoc>) -> AppResult<Vec<MediaDoc>> {
    let mut by_owner: HashMap<i64, Vec<MediaDoc>> = HashMap::new();
    for m in stale {
        by_owner.entry(m.uid).or_default().push(m);
    }
    let now = now_ms();
    let mut claimed = Vec::new();
    for (uid, pictures) in by_owner {
        let ids: Vec<i64> = pictures.iter().map(|m| m.id).collect();
        let moved = ctx
            .docs
            .move_media(uid, &ids, MediaState::Ready, MediaState::Storing, now)
            .await?;
        if moved == 0 {
            continue;
        }
        let now_held = ctx.docs.media_by_ids(uid, &ids).await?;
        claimed.extend(
            now_held
                .into_iter()
                .filter(|m| m.state == MediaState::Storing && m.state_since == now),
        );
    }
    Ok(claimed)
}

async fn delete_by_owner(ctx: &Context, media: &[MediaDoc]) -> AppResult<()> {
    let mut by_owner: HashMap<i64, Vec<crate::domain::media::Media>> = HashMap::new();
    for m in media {
        by_owner.entry(m.uid).or_default().push(m.media.clone());
    }
    for (uid, pictures) in by_owner {
        delete_stored(ctx, uid, &pictures).await?;
    }
    Ok(())
}

/// Settles pictures posts took a while ago: kept where the post is live,
/// deleted where it was deleted since, freed where it was never made.
async fn check_attached(ctx: &Context, attached: &[MediaDoc]) -> AppResult<()> {
    let mut post_ids: Vec<i64> = attached.iter().filter_map(|m| m.post_id).collect();
    post_ids.sort_unstable();
    post_ids.dedup();
    let posts: HashMap<i64, bool> = ctx
        .docs
        .posts_by_ids(&post_ids)
        .await?
        .into_iter()
        .map(|p| (p.id, p.deleted))
        .collect();
    let now = now_ms();
    let mut gone = Vec::new();
    let mut posted: HashMap<i64, Vec<i64>> = HashMap::new();
    for m in attached {
        let Some(post) = m.post_id else { continue };
        match posts.get(&post) {
            Some(false) => posted.entry(m.uid).or_default().push(m.id),
            Some(true) => gone.push(m.clone()),
            None => {
                ctx.docs.detach_media(m.uid, &[m.id], post, now).await?;
            }
        }
    }
    for (uid, ids) in posted {
        ctx.docs
            .move_media(uid, &ids, MediaState::Attached, MediaState::Posted, now)
            .await?;
    }
    delete_by_owner(ctx, &gone).await
}

/// Marks a post's pictures for the sweep to check at once, before the
/// post is deleted: if deleting their bytes fails after, the sweep finds
/// them on a deleted post and deletes them then.
pub async fn check_soon(
    ctx: &Context,
    uid: i64,
    media: &[crate::domain::media::Media],
) -> AppResult<()> {
    if media.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = media.iter().map(|m| m.id).collect();
    ctx.docs
        .move_media(
            uid,
            &ids,
            MediaState::Posted,
            MediaState::Attached,
            now_ms() - ATTACH_CHECK_AFTER_MS,
        )
        .await?;
    Ok(())
}

/// Deletes up to `limit` of an account's pictures, whatever their state
/// (its posts' are deleted with its posts first); how many it deleted.
pub async fn erase_of(ctx: &Context, uid: i64, limit: usize) -> AppResult<usize> {
    let mine = ctx.docs.media_of(uid, None, limit).await?;
    let pictures: Vec<_> = mine.iter().map(|m| m.media.clone()).collect();
    delete_stored(ctx, uid, &pictures).await?;
    Ok(mine.len())
}
