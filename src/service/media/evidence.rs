//! What a moderation snapshot keeps of a post's pictures: a small JPEG of
//! each, inline as a `data:` URL, so that the moderator sees them whatever
//! becomes of the post (its author may delete it, and its pictures with
//! it, the moment it is reported) and nothing in the media store has to
//! outlive the post for the snapshot's sake. The snapshot is erased as a
//! whole, pictures included, when its retention ends.

use base64::Engine;

use super::processing::{self, Bounds};
use crate::domain::media::{Media, Rendition};
use crate::service::Context;

/// The long side of a snapshot's picture: enough to judge it, about 5 KB.
pub const SIDE: u32 = 160;

/// A `data:` URL of a small copy of each picture that can still be read,
/// in order; a picture whose bytes are gone is left out (the snapshot
/// still names the post).
///
/// Shrunk on tokio's blocking pool, not the picture pool: a busy upload
/// pool must not cost a report its evidence, and a preview is small (at
/// most `MOMENTS_MEDIA_PREVIEW_SIDE` by three times that), a few
/// milliseconds each, behind a report's own rate limit.
pub async fn keep(ctx: &Context, media: &[Media]) -> Vec<String> {
    let reads = media.iter().map(|m| {
        let object = m.key.object(Rendition::Preview, m.encoding);
        async move { ctx.media.store.get(&object).await }
    });
    let previews = futures_util::future::join_all(reads).await;
    let mut kept = Vec::with_capacity(media.len());
    for preview in previews.into_iter().flatten().flatten() {
        let bounds = Bounds {
            max_pixels: 50_000_000,
            original_side: SIDE,
            preview_side: 16,
        };
        let small =
            tokio::task::spawn_blocking(move || processing::process(&preview, "", &bounds)).await;
        match small {
            Ok(Ok(made)) => kept.push(format!(
                "data:{};base64,{}",
                made.original.encoding.content_type(),
                base64::engine::general_purpose::STANDARD.encode(&made.original.bytes)
            )),
            other => tracing::warn!(?other, "a reported picture was not kept in its snapshot"),
        }
    }
    kept
}
