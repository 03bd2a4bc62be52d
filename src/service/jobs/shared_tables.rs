//! The tables every instance keeps whole in memory (the device table, the
//! content filters): each reloads its copy when the table's version in the
//! live store moves, which whoever changes the table bumps, polled here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::AppResult;
use crate::store::{DocStore, LiveStore, SharedTable};

/// An instance's copy of a shared table.
#[async_trait::async_trait]
pub trait SharedCopy: Send + Sync + 'static {
    const TABLE: SharedTable;

    /// The live version at the last reload (`u64::MAX` before any).
    fn seen_version(&self) -> &AtomicU64;

    /// Reads the table from the documents into this copy.
    async fn reload(&self, docs: &dyn DocStore) -> AppResult<()>;

    /// Reloads if the live version moved since the last reload.
    async fn refresh(&self, docs: &dyn DocStore, live: &dyn LiveStore) -> AppResult<()> {
        let version = live.table_version(Self::TABLE).await?;
        if version != self.seen_version().load(Ordering::Acquire) {
            self.reload(docs).await?;
            self.seen_version().store(version, Ordering::Release);
        }
        Ok(())
    }
}

/// Refreshes `copy` every `every` for as long as the task lives.
pub fn spawn_refresher<T: SharedCopy>(
    copy: &Arc<T>,
    docs: Arc<dyn DocStore>,
    live: Arc<dyn LiveStore>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    let copy = copy.clone();
    super::spawn_every(every, move || {
        let (copy, docs, live) = (copy.clone(), docs.clone(), live.clone());
        async move {
            if let Err(e) = copy.refresh(docs.as_ref(), live.as_ref()).await {
                tracing::debug!(error = %e, table = T::TABLE.name(), "refresh failed; retrying");
            }
        }
    })
}
