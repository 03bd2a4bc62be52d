//! A user's public profile: their card with follower counts and, for a
//! signed-in viewer, how the two relate; found by uid, or by exact
//! username on a budget of its own. Who may see it is the social graph's
//! rule (`social::visible_user`).

use serde::Serialize;

use super::read::visibility::finds_by_name;
use super::social::visible_user;
use super::{Context, Viewer};
use crate::error::{AppError, AppResult};

/// A user's card with the numbers and, for a signed-in viewer, how the two relate.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub uid: i64,
    pub nick_name: String,
    pub head_img: String,
    pub followers_count: u64,
    pub following_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub following: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed_by: Option<bool>,
    /// Whether the viewer blocked this user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
}

/// A user's card with follower counts, and how the viewer relates to them.
pub async fn profile(ctx: &Context, uid: i64, viewer: Viewer) -> AppResult<Profile> {
    let (card, rel) = visible_user(ctx, uid, viewer).await?;
    let (followers_count, following_count) = ctx.docs.follow_counts(uid).await?;
    let (following, followed_by, blocking) = match viewer {
        Some(v) if v != uid => {
            let (out, back) = ctx.docs.follow_edges(v, &[uid]).await?;
            (
                Some(!out.is_empty()),
                Some(!back.is_empty()),
                Some(rel.sets.blocking.contains(&uid)),
            )
        }
        _ => (None, None, None),
    };
    Ok(Profile {
        uid,
        nick_name: card.nick_name,
        head_img: card.head_img,
        followers_count,
        following_count,
        following,
        followed_by,
        blocking,
    })
}

/// A profile found by its exact username (any case), seen as `viewer`:
/// not found if it is not one `viewer` may find by name
/// (`visibility::finds_by_name`).
/// Sign-up tells whether a name is taken, at a few hundred tries an hour;
/// this tells more (who it is), so it has a budget of its own, far below
/// the reads budget: a list of names cannot be walked at read speed.
pub async fn profile_by_username(ctx: &Context, username: &str, viewer: i64) -> AppResult<Profile> {
    let username = crate::domain::user::Username::parse(username)?;
    super::rate_limits::enforce(
        ctx,
        &super::rate_limits::user_lookup_budgets(ctx.settings.rate_limits.as_ref(), viewer),
    )
    .await?;
    let user = ctx
        .docs
        .user_by_username(username.as_str())
        .await?
        .ok_or(AppError::NotFound("user"))?;
    let found = profile(ctx, user.uid, Some(viewer)).await?;
    // One who turned being found off is, to anyone else but their
    // followers, a name no one has.
    let follows = found.following == Some(true);
    if !finds_by_name(viewer == user.uid, follows, user.findable) {
        return Err(AppError::NotFound("user"));
    }
    Ok(found)
}
