//! One rebuild at a time per key and instance: requests that need the same
//! document read at the same moment share it. A hot post whose likers set
//! is absent is read once, not once per reader arriving while it is read.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures_util::future::{BoxFuture, FutureExt, Shared};

use crate::store::{DocStore, LikeDoc, LikeKind, StoreError, StoreResult};

type Answer<V> = Result<Arc<V>, Arc<StoreError>>;

pub struct InFlight<K, V> {
    running: Mutex<HashMap<K, Shared<BoxFuture<'static, Answer<V>>>>>,
}

impl<K, V> Default for InFlight<K, V> {
    fn default() -> Self {
        Self {
            running: Mutex::new(HashMap::new()),
        }
    }
}

/// A shared failure, handed to each waiter as its own error of the same kind.
fn unshare(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unavailable(c) => StoreError::Unavailable(anyhow::anyhow!("{c:#}")),
        StoreError::Duplicate(w) => StoreError::Duplicate(w),
        StoreError::IdTaken => StoreError::IdTaken,
        StoreError::Other(c) => StoreError::Other(anyhow::anyhow!("{c:#}")),
    }
}

impl<K, V> InFlight<K, V>
where
    K: Eq + Hash + Clone + Send + 'static,
    V: Send + Sync + 'static,
{
    /// The answer of `read` for `key`, shared with every caller asking for
    /// the same key while it runs, and whether this caller ran it (and so
    /// is the one to write what it rebuilt back).
    pub async fn run(
        &self,
        key: K,
        read: impl FnOnce() -> BoxFuture<'static, StoreResult<V>>,
    ) -> StoreResult<SharedRead<V>> {
        let (shared, led) = {
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            match running.get(&key) {
                Some(f) => (f.clone(), false),
                None => {
                    let f = read()
                        .map(|r| r.map(Arc::new).map_err(Arc::new))
                        .boxed()
                        .shared();
                    running.insert(key.clone(), f.clone());
                    (f, true)
                }
            }
        };
        let answer = shared.clone().await;
        {
            // Done: later callers read afresh (only this run's entry goes).
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            if running.get(&key).is_some_and(|f| f.ptr_eq(&shared)) {
                running.remove(&key);
            }
        }
        answer
            .map(|value| SharedRead { value, led })
            .map_err(|e| unshare(&e))
    }
}

/// A read's answer, and whether this caller ran the read.
pub struct SharedRead<V> {
    pub value: Arc<V>,
    pub led: bool,
}

impl<T> SharedRead<Vec<T>> {
    /// Nothing to read: an answer no other caller shares.
    fn empty() -> Self {
        SharedRead {
            value: Arc::new(Vec::new()),
            led: true,
        }
    }
}

/// The rebuild reads whose size strangers can grow (every like of a post,
/// every comment, every reply, every share), shared while in flight.
/// Two ids that go together: `(post_id, comment_id)` asked for,
/// `(comment_id, reply_id)` answered.
type IdPair = (i64, i64);

#[derive(Default)]
pub struct Rebuilds {
    likes: InFlight<(LikeKind, Vec<i64>), Vec<LikeDoc>>,
    comment_ids: InFlight<Vec<i64>, Vec<(i64, i64)>>,
    reply_ids: InFlight<Vec<IdPair>, Vec<IdPair>>,
    share_ids: InFlight<Vec<i64>, Vec<(i64, i64)>>,
}

impl Rebuilds {
    pub async fn likes_of_targets(
        &self,
        docs: &Arc<dyn DocStore>,
        kind: LikeKind,
        ids: &[i64],
    ) -> StoreResult<SharedRead<Vec<LikeDoc>>> {
        shared_by_ids(
            &self.likes,
            (kind, ids.to_vec()),
            docs,
            ids,
            move |d, ids| async move { d.likes_of_targets(kind, &ids).await }.boxed(),
        )
        .await
    }

    pub async fn comment_ids_of_posts(
        &self,
        docs: &Arc<dyn DocStore>,
        ids: &[i64],
    ) -> StoreResult<SharedRead<Vec<(i64, i64)>>> {
        shared_by_ids(&self.comment_ids, ids.to_vec(), docs, ids, |d, ids| {
            async move { d.comment_ids_of_posts(&ids).await }.boxed()
        })
        .await
    }

    /// `(post_id, share_id)` of these posts.
    pub async fn share_ids_of_posts(
        &self,
        docs: &Arc<dyn DocStore>,
        ids: &[i64],
    ) -> StoreResult<SharedRead<Vec<(i64, i64)>>> {
        shared_by_ids(&self.share_ids, ids.to_vec(), docs, ids, |d, ids| {
            async move { d.share_ids_of_posts(&ids).await }.boxed()
        })
        .await
    }

    /// Of comments given as `(post_id, comment_id)`.
    pub async fn reply_ids_of_comments(
        &self,
        docs: &Arc<dyn DocStore>,
        ids: &[(i64, i64)],
    ) -> StoreResult<SharedRead<Vec<(i64, i64)>>> {
        shared_by_ids(&self.reply_ids, ids.to_vec(), docs, ids, |d, ids| {
            async move { d.reply_ids_of_comments(&ids).await }.boxed()
        })
        .await
    }
}

/// A read of these ids through `flight`; no read at all for none.
async fn shared_by_ids<K, I, T>(
    flight: &InFlight<K, Vec<T>>,
    key: K,
    docs: &Arc<dyn DocStore>,
    ids: &[I],
    read: impl FnOnce(Arc<dyn DocStore>, Vec<I>) -> BoxFuture<'static, StoreResult<Vec<T>>>,
) -> StoreResult<SharedRead<Vec<T>>>
where
    K: Eq + Hash + Clone + Send + 'static,
    I: Clone + Send + 'static,
    T: Send + Sync + 'static,
{
    if ids.is_empty() {
        return Ok(SharedRead::empty());
    }
    let (docs, owned) = (docs.clone(), ids.to_vec());
    flight.run(key, move || read(docs, owned)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn callers_asking_at_once_share_one_read() {
        let flight: Arc<InFlight<u8, u32>> = Arc::default();
        let reads = Arc::new(AtomicUsize::new(0));
        let (open, gate) = tokio::sync::oneshot::channel::<()>();
        let gate = gate.shared();
        let callers: Vec<_> = (0..5)
            .map(|_| {
                let (flight, reads, gate) = (flight.clone(), reads.clone(), gate.clone());
                tokio::spawn(async move {
                    flight
                        .run(7, move || {
                            reads.fetch_add(1, Ordering::SeqCst);
                            async move {
                                let _ = gate.await;
                                Ok(42)
                            }
                            .boxed()
                        })
                        .await
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let _ = open.send(());
        let mut leaders = 0;
        for c in callers {
            let answer = c.await.unwrap().unwrap();
            assert_eq!(*answer.value, 42);
            leaders += usize::from(answer.led);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(leaders, 1, "one caller ran it");
        // Once done, the next caller reads again.
        let again = flight.run(7, || async { Ok(43) }.boxed()).await.unwrap();
        assert_eq!((*again.value, again.led), (43, true));
    }
}
