//! Shares (分享): a reader records passing a post on to a
//! platform. One record per reader, post and platform; the post's
//! `shareCount` counts them. Only a post the reader may see can be shared.

use serde::Serialize;

use super::read::assemble::visible_post;
use super::read::loader::Loader;
use super::{with_fresh_id, Context};
use crate::domain::share::SharePlatform;
use crate::error::AppResult;
use crate::ids::timestamp_of;
use crate::store::{LiveChange, SetKey, SetRead, ShareDoc};

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShareState {
    pub platform: SharePlatform,
    /// The post's shares, this one included.
    pub share_count: u64,
}

#[tracing::instrument(skip(ctx))]
pub async fn share(
    ctx: &Context,
    post_id: i64,
    uid: i64,
    platform: SharePlatform,
) -> AppResult<ShareState> {
    visible_post(ctx, post_id, Some(uid)).await?;
    let set = SetKey::PostShares(post_id);
    let (added, id) = with_fresh_id(|id| {
        let doc = ShareDoc {
            id,
            post_id,
            uid,
            platform,
            created_at: timestamp_of(id),
        };
        async move { ctx.docs.insert_share(&doc).await.map(|added| (added, id)) }
    })
    .await?;
    if added {
        ctx.repair
            .apply_unordered(
                ctx.live.as_ref(),
                set.owner(),
                vec![LiveChange::LwwAdd(set, id, id)],
            )
            .await;
        super::stream::events::counts_changed(ctx, post_id);
    }
    let mut loader = Loader::new(ctx);
    let read = SetRead {
        key: set,
        top: 0,
        probe: None,
        below: None,
    };
    let loaded = loader.load(&[], &[read]).await?;
    loader.finish("share_count");
    Ok(ShareState {
        platform,
        share_count: loaded.sets.get(&set).map_or(0, |v| v.count),
    })
}
