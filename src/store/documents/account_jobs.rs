//! What exports and imports share: a job an account starts, kept with the
//! account's others, run in the background by whichever instance claims
//! it. A claim lasts until `claimed_until` and is renewed while the run
//! lives; once it lapses (its instance died) another instance claims the
//! job again as the next attempt, so nothing the old run still writes is
//! taken for the new run's. Each adapter stores, lists and claims every
//! kind of job with one generic piece of code (`account_jobs` in each).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A kind of account job, as the adapters' generic code stores it: a
/// document with `_id`, `uid`, `state` (`queued` and `running` while
/// unfinished), `attempt` and `claimedUntil`.
pub trait AccountJob: Clone + Send + Sync + Unpin + Serialize + DeserializeOwned + 'static {
    /// Its name in claims and errors: `export`, `import`.
    const KIND: &'static str;
    fn id(&self) -> i64;
    fn uid(&self) -> i64;
    fn attempt(&self) -> i64;
    fn claimed_until(&self) -> i64;
    /// The job as the run that claims it at `now`, until `until`, starts
    /// it: the next attempt, running.
    fn claimed(self, now: i64, until: i64) -> Self;
}
