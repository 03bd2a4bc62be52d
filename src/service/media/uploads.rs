//! A user's uploads: one received, processed and stored; its alt text
//! and focus edited while no post has it; one deleted; one read back.
//!
//! An upload is recorded before its bytes are stored and answered only
//! once they are: an instance that dies in between leaves a record in
//! `storing`, which no one is answered and the unattached sweep deletes
//! with whatever bytes made it.

use bytes::Bytes;

use super::processing::{self, Bounds, Refusal};
use super::MediaView;
use crate::domain::media::{Focus, Media, MediaKey};
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::service::thread_pool::{self, Refused};
use crate::service::{rate_limits, with_fresh_id, Context};
use crate::store::{MediaDoc, MediaState};

/// A file as the client sent it, with what it said of it.
pub struct Upload {
    pub bytes: Bytes,
    /// The part's content type, as sent (checked against the bytes).
    pub content_type: String,
    pub description: String,
    pub focus: Option<Focus>,
}

fn refused(r: Refusal) -> AppError {
    AppError::unprocessable("file", r.to_string())
}

/// Processes and stores `upload` as `uid`'s; the picture as it is now
/// answered. Charged to the account's media quota by the bytes sent, or
/// stored if more.
pub async fn upload(ctx: &Context, uid: i64, upload: Upload) -> AppResult<MediaView> {
    rate_limits::enforce(
        ctx,
        &rate_limits::media_byte_budgets(
            ctx.settings.rate_limits.as_ref(),
            uid,
            upload.bytes.len(),
        ),
    )
    .await?;
    let settings = &ctx.settings.media;
    let bounds = Bounds {
        max_pixels: settings.max_pixels,
        original_side: settings.original_side,
        preview_side: settings.preview_side,
    };
    let sent = upload.bytes.len();
    let (bytes, content_type) = (upload.bytes, upload.content_type);
    let made = thread_pool::pictures()
        .run(move || processing::process(&bytes, &content_type, &bounds))
        .await
        .map_err(|r| match r {
            Refused::Busy => AppError::Overloaded("pictures"),
            Refused::Gone => AppError::Internal(anyhow::anyhow!("the picture pool is gone")),
        })?
        .map_err(refused)?;
    // A small file can decode into a large one (a few colours of PNG, kept
    // as such): what is stored beyond what was sent is charged too.
    let stored = made.original.bytes.len() + made.preview.bytes.len();
    if stored > sent {
        rate_limits::enforce(
            ctx,
            &rate_limits::media_byte_budgets(ctx.settings.rate_limits.as_ref(), uid, stored - sent),
        )
        .await?;
    }
    let key = MediaKey::random()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("no random bytes for a media key")))?;
    let now = now_ms();
    let doc = with_fresh_id(|id| {
        let doc = MediaDoc::storing(
            uid,
            Media {
                id,
                key: key.clone(),
                encoding: made.original.encoding,
                width: made.original.width,
                height: made.original.height,
                size: made.original.bytes.len() as u64,
                preview_width: made.preview.width,
                preview_height: made.preview.height,
                blurhash: made.blurhash.clone(),
                description: upload.description.clone(),
                focus: upload.focus,
            },
            now,
        );
        async move {
            ctx.docs.insert_media(&doc).await?;
            Ok(doc)
        }
    })
    .await?;
    let [original, preview] = doc.media.objects();
    let library = &ctx.media.store;
    tokio::try_join!(
        library.put(&original, Bytes::from(made.original.bytes)),
        library.put(&preview, Bytes::from(made.preview.bytes)),
    )?;
    let stored = ctx
        .docs
        .move_media(
            uid,
            &[doc.id],
            MediaState::Storing,
            MediaState::Ready,
            now_ms(),
        )
        .await?;
    if stored == 0 {
        // Only the sweep takes a picture out of `storing`, a day later.
        return Err(AppError::Conflict(
            "the upload took too long and was discarded; upload it again".into(),
        ));
    }
    Ok(MediaView::of(&doc.media, ctx.media.base_url()))
}

/// `uid`'s picture `id`, in a state its owner is answered; 404 for
/// anyone else's, or one still being stored.
async fn own(ctx: &Context, uid: i64, id: i64) -> AppResult<MediaDoc> {
    ctx.docs
        .media_by_ids(uid, &[id])
        .await?
        .pop()
        .filter(|m| m.state != MediaState::Storing)
        .ok_or(AppError::NotFound("media"))
}

fn on_a_post() -> AppError {
    AppError::Conflict("this picture is on a post: edit or delete the post instead".into())
}

pub async fn get(ctx: &Context, uid: i64, id: i64) -> AppResult<MediaView> {
    let doc = own(ctx, uid, id).await?;
    Ok(MediaView::of(&doc.media, ctx.media.base_url()))
}

/// Sets the alt text and focus of a picture no post has yet (a post's
/// pictures are as it was published).
pub async fn describe(
    ctx: &Context,
    uid: i64,
    id: i64,
    description: Option<String>,
    focus: Option<Option<Focus>>,
) -> AppResult<MediaView> {
    let doc = own(ctx, uid, id).await?;
    if doc.state != MediaState::Ready {
        return Err(on_a_post());
    }
    let description = description.unwrap_or(doc.media.description);
    let focus = focus.unwrap_or(doc.media.focus);
    let now = ctx
        .docs
        .describe_media(uid, id, &description, focus)
        .await?
        // Taken by a post between the read and the write.
        .ok_or_else(on_a_post)?;
    Ok(MediaView::of(&now.media, ctx.media.base_url()))
}

/// Deletes a picture no post has: its bytes, then its record.
pub async fn delete(ctx: &Context, uid: i64, id: i64) -> AppResult<()> {
    let doc = own(ctx, uid, id).await?;
    // Back to `storing` first, which no post can take: a post being
    // published at this moment either has it already (409) or never will.
    let claimed = ctx
        .docs
        .move_media(uid, &[id], MediaState::Ready, MediaState::Storing, now_ms())
        .await?;
    if claimed == 0 {
        return Err(on_a_post());
    }
    super::attachments::delete_stored(ctx, uid, &[doc.media]).await?;
    Ok(())
}
