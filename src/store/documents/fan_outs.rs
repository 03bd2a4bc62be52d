//! Fan-outs an instance saved unfinished, for any instance to claim and
//! resume.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::post::Visibility;
use crate::store::StoreResult;

/// A fan-out an instance left unfinished (it was stopping, or a store
/// failed under it): what resuming it from where it got to needs. Pushes
/// are idempotent, so resuming a little earlier than that is harmless.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FanOutDoc {
    #[serde(rename = "_id")]
    pub post_id: i64,
    pub author: i64,
    /// Who may see the post, which decides whom it is pushed to.
    pub visibility: Visibility,
    /// Followers active since then (epoch ms) are pushed to: the window
    /// the first run chose, kept so that the rest reaches the same people.
    #[serde(rename = "activeSince")]
    pub active_since: i64,
    /// The followers left are those whose follow edge id is below this
    /// (`active_followers` pages newest edge first). `None`: every one of
    /// them, and the author's own timeline.
    #[serde(rename = "resumeBefore")]
    pub resume_before: Option<i64>,
    /// Epoch ms.
    #[serde(rename = "savedAt")]
    pub saved_at: i64,
    /// Until when (epoch ms) the instance that claimed it is running it; 0
    /// when nobody has. A claim that lapses (its instance died) is taken
    /// again.
    #[serde(rename = "claimedUntil", default)]
    pub claimed_until: i64,
}

impl FanOutDoc {
    /// A fan-out that reached nobody yet, of the followers active since
    /// `active_since`; neither saved nor claimed.
    pub fn new(post_id: i64, author: i64, visibility: Visibility, active_since: i64) -> Self {
        Self {
            post_id,
            author,
            visibility,
            active_since,
            resume_before: None,
            saved_at: 0,
            claimed_until: 0,
        }
    }
}

/// Unfinished fan-outs, resumed by whichever instance claims them. Part of
/// `DocStore`.
#[async_trait]
pub trait FanOutDocs: Send + Sync {
    /// Stores it unclaimed, in place of what was saved of the same post's
    /// fan-out before.
    async fn save_fan_out(&self, fan_out: &FanOutDoc) -> StoreResult<()>;

    /// Claims until `until` up to `limit` saved fan-outs that nobody holds
    /// at `now` (unclaimed, or claimed until before it) and returns them:
    /// each to one caller only, however many ask at once.
    async fn claim_fan_outs(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<FanOutDoc>>;

    /// Forgets a post's saved fan-out: it ran to the end.
    async fn delete_fan_out(&self, post_id: i64) -> StoreResult<()>;
}
