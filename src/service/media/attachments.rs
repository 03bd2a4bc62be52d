//! Pictures on posts: the ones a new post names, checked and taken for
//! it; and deleting pictures, bytes first, with the post they are on, with
//! an account, or when no post took them.

use std::collections::HashMap;

use crate::domain::media::Media;
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::service::Context;
use crate::store::{MediaDoc, MediaState, StoreError, StoreResult};

/// The pictures a post being published names, as checked before it is.
#[derive(Debug, Default)]
pub struct Chosen {
    /// In the post's order.
    ids: Vec<i64>,
    /// Those on no post yet.
    ready: Vec<i64>,
    /// Those an earlier try of this very post took, by the id it tried.
    taken_before: HashMap<i64, Vec<i64>>,
    media: HashMap<i64, Media>,
}

impl Chosen {
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// What `StoreError::Duplicate` says when a picture checked free was
/// taken by another post before this one could take it.
pub const TAKEN_MEANWHILE: &str = "a post with one of these pictures";

/// Checks `ids` (`mediaIds`, distinct) before a post is published: each
/// must be `uid`'s, stored, and on no post, except one that an earlier
/// try of this same post took (`own_tries`: the ids its tries used).
pub async fn choose(ctx: &Context, uid: i64, ids: &[i64], own_tries: &[i64]) -> AppResult<Chosen> {
    if ids.is_empty() {
        return Ok(Chosen::default());
    }
    let found: HashMap<i64, MediaDoc> = ctx
        .docs
        .media_by_ids(uid, ids)
        .await?
        .into_iter()
        .map(|d| (d.id, d))
        .collect();
    let mut chosen = Chosen {
        ids: ids.to_vec(),
        ..Chosen::default()
    };
    for (i, id) in ids.iter().enumerate() {
        let field = format!("mediaIds[{i}]");
        let doc = found
            .get(id)
            .ok_or_else(|| AppError::unprocessable(&field, "no such picture of yours"))?;
        match (doc.state, doc.post_id) {
            (MediaState::Ready, _) => chosen.ready.push(*id),
            (MediaState::Attached, Some(post)) if own_tries.contains(&post) => {
                chosen.taken_before.entry(post).or_default().push(*id)
            }
            (MediaState::Storing, _) => {
                return Err(AppError::unprocessable(
                    &field,
                    "that picture is still being stored",
                ))
            }
            _ => {
                return Err(AppError::unprocessable(
                    &field,
                    "that picture is on another post",
                ))
            }
        }
        chosen.media.insert(*id, doc.media.clone());
    }
    Ok(chosen)
}

/// Takes the chosen pictures for post `post_id`, just before it is
/// inserted; its `media`, in order. Another post taking one first is
/// `Duplicate(TAKEN_MEANWHILE)`, with none of them left taken.
pub async fn attach(
    ctx: &Context,
    uid: i64,
    chosen: &Chosen,
    post_id: i64,
) -> StoreResult<Vec<Media>> {
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    let now = now_ms();
    let mut free = chosen.ready.clone();
    for (tried, ids) in &chosen.taken_before {
        if *tried != post_id {
            ctx.docs.detach_media(uid, ids, *tried, now).await?;
            free.extend(ids);
        }
    }
    let taken = ctx.docs.attach_media(uid, &free, post_id, now).await?;
    if taken < free.len() as u64 {
        detach(ctx, uid, chosen, post_id).await?;
        return Err(StoreError::Duplicate(TAKEN_MEANWHILE));
    }
    Ok(chosen
        .ids
        .iter()
        .filter_map(|id| chosen.media.get(id).cloned())
        .collect())
}

/// Frees the chosen pictures a post that was not made took.
pub async fn detach(ctx: &Context, uid: i64, chosen: &Chosen, post_id: i64) -> StoreResult<()> {
    if chosen.is_empty() {
        return Ok(());
    }
    ctx.docs
        .detach_media(uid, &chosen.ids, post_id, now_ms())
        .await
}

/// Deletes `uid`'s pictures: the bytes of each rendition, then the
/// records. Bytes first, so that a failure between leaves a record that
/// a sweep or a retry finds, never bytes no record names.
pub async fn delete_stored(ctx: &Context, uid: i64, media: &[Media]) -> AppResult<()> {
    if media.is_empty() {
        return Ok(());
    }
    let objects: Vec<String> = media.iter().flat_map(Media::objects).collect();
    ctx.media.store.delete(&objects).await?;
    let ids: Vec<i64> = media.iter().map(|m| m.id).collect();
    ctx.docs.delete_media(uid, &ids).await?;
    Ok(())
}
