//! Favorites (收藏): posts a user keeps for later, listed newest
//! first. Only the user who keeps them sees them; a favorite of a post
//! deleted since, or one its keeper may no longer see, drops out of the
//! list (visibility.rs), and comes back if the post becomes visible again.

use super::read::assemble::{page_of_named_posts, visible_post};
use super::read::post_json::PostJson;
use super::read::responses::{FavoriteState, Page};
use super::{with_fresh_id, Context, Presentation};
use crate::domain::cursor::Cursor;
use crate::error::AppResult;
use crate::ids::timestamp_of;
use crate::store::FavoriteDoc;

/// Keeps the post for `uid`; doing it again changes nothing. Only a post
/// its keeper may see can be kept (404 otherwise, as for every read).
#[tracing::instrument(skip(ctx))]
pub async fn favorite(ctx: &Context, post_id: i64, uid: i64) -> AppResult<FavoriteState> {
    visible_post(ctx, post_id, Some(uid)).await?;
    with_fresh_id(|id| {
        let doc = FavoriteDoc {
            id,
            uid,
            post_id,
            created_at: timestamp_of(id),
        };
        async move { ctx.docs.insert_favorite(&doc).await }
    })
    .await?;
    Ok(FavoriteState { favorited: true })
}

/// Forgets it; forgetting one never kept is not an error. No visibility
/// check: a keeper may drop a post they can no longer see.
#[tracing::instrument(skip(ctx))]
pub async fn unfavorite(ctx: &Context, post_id: i64, uid: i64) -> AppResult<FavoriteState> {
    ctx.docs.delete_favorite(uid, post_id).await?;
    Ok(FavoriteState { favorited: false })
}

/// The posts `uid` keeps, newest favorite first, expanded for them.
pub async fn favorites(
    ctx: &Context,
    uid: i64,
    cursor: Option<Cursor>,
    limit: usize,
    pres: &Presentation,
) -> AppResult<Page<PostJson>> {
    page_of_named_posts(
        ctx,
        uid,
        cursor,
        limit,
        pres,
        |before, n| async move { Ok(ctx.docs.favorites_page(uid, before, n).await?) },
        |f: &FavoriteDoc| Some(f.post_id),
        |f: &FavoriteDoc| f.id,
    )
    .await
}
