//! Photos: an upload turned into stored renditions (`processing`), kept
//! and described for its owner (`uploads`), taken by a post and deleted
//! with it (`attachments`), and swept when no post took it (`sweeps`);
//! small copies kept in moderation snapshots (`evidence`); phone-like
//! sample pictures for tests and benchmarks (`samples`).
//! `Library` is what every part shares: the media store, the bound on
//! uploads received at once, and the URLs clients fetch.

pub mod attachments;
pub mod evidence;
pub mod processing;
pub mod samples;
pub mod sweeps;
pub mod uploads;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::config::MediaSettings;
use crate::domain::media::{Focus, Media, Rendition};
use crate::error::{AppError, AppResult};
use crate::store::MediaStore;

/// The media store and what goes with it, one per app.
pub struct Library {
    pub store: Arc<dyn MediaStore>,
    /// Uploads being received: each holds up to `MOMENTS_MEDIA_MAX_BYTES`
    /// of body, so their number is what bounds the memory uploads take.
    receiving: Arc<tokio::sync::Semaphore>,
    /// Of those, each account's (`MOMENTS_MEDIA_UPLOADS_PER_ACCOUNT`).
    receiving_by_account: Arc<Mutex<HashMap<i64, usize>>>,
    per_account: usize,
    /// What URLs start with (`MOMENTS_MEDIA_BASE_URL`).
    base_url: String,
}

/// An upload's place among those received at once, held until it is
/// answered.
pub struct UploadSlot {
    _place: tokio::sync::OwnedSemaphorePermit,
    _account: AccountPlace,
}

/// One of an account's places; given back when dropped.
struct AccountPlace {
    uid: i64,
    by_account: Arc<Mutex<HashMap<i64, usize>>>,
}

impl Drop for AccountPlace {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.by_account.lock() {
            if let Some(n) = counts.get_mut(&self.uid) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.remove(&self.uid);
                }
            }
        }
    }
}

impl Library {
    pub fn new(store: Arc<dyn MediaStore>, settings: &MediaSettings) -> Self {
        Self {
            store,
            receiving: Arc::new(tokio::sync::Semaphore::new(settings.uploads)),
            receiving_by_account: Arc::default(),
            per_account: settings.uploads_per_account,
            base_url: settings.base_url.clone(),
        }
    }

    /// A place for one more upload of `uid`'s, taken before its body is
    /// read: 429 when the account has all its places (this instance's),
    /// 503 when every place is taken; both with `Retry-After`, so a burst
    /// of uploads waits at the client rather than in this process's
    /// memory.
    pub fn admit(&self, uid: i64) -> AppResult<UploadSlot> {
        let account = {
            let mut counts = self
                .receiving_by_account
                .lock()
                .map_err(|_| AppError::Overloaded("uploads"))?;
            let n = counts.entry(uid).or_default();
            if *n >= self.per_account {
                return Err(AppError::RateLimited {
                    what: "uploads at once",
                    retry_after_secs: 1,
                });
            }
            *n += 1;
            AccountPlace {
                uid,
                by_account: self.receiving_by_account.clone(),
            }
        };
        let place = self
            .receiving
            .clone()
            .try_acquire_owned()
            .map_err(|_| AppError::Overloaded("uploads"))?;
        Ok(UploadSlot {
            _place: place,
            _account: account,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// Where clients fetch one rendition of `media`.
pub fn url_of(base_url: &str, media: &Media, rendition: Rendition) -> String {
    format!("{base_url}/{}", media.key.object(rendition, media.encoding))
}

/// A picture as the API answers it, alone and in a post's `media`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediaView {
    pub id: i64,
    /// Always `image`, for now.
    #[serde(rename = "type")]
    #[schema(example = "image")]
    pub kind: &'static str,
    /// The upright original, capped on its long side, without metadata.
    pub url: String,
    /// The grid's thumbnail.
    pub preview_url: String,
    pub width: u32,
    pub height: u32,
    pub preview_width: u32,
    pub preview_height: u32,
    /// A placeholder to paint before either loads (blurhash.com).
    pub blurhash: String,
    /// Alt text.
    pub description: String,
    pub focus: Option<Focus>,
    /// Bytes of the original.
    pub size: u64,
}

impl MediaView {
    /// `media` as clients see it, its URLs starting with `base_url`.
    pub fn of(media: &Media, base_url: &str) -> Self {
        let url = |r| url_of(base_url, media, r);
        MediaView {
            id: media.id,
            kind: "image",
            url: url(Rendition::Original),
            preview_url: url(Rendition::Preview),
            width: media.width,
            height: media.height,
            preview_width: media.preview_width,
            preview_height: media.preview_height,
            blurhash: media.blurhash.clone(),
            description: media.description.clone(),
            focus: media.focus,
            size: media.size,
        }
    }
}
