//! The instance bits of generated ids. Without `MOMENTS_INSTANCE_ID`, each
//! instance leases one of the 32 from the document store at start-up and
//! renews the lease in the background, so that N instances never mint the
//! same id. A lease lost anyway (the store unreachable for longer than its
//! term, and the id taken by another) is replaced by a fresh one at once.

use std::sync::Arc;
use std::time::Duration;

use crate::ids::{self, now_ms};
use crate::store::DocStore;

/// How long a lease lasts unrenewed: a crashed instance's id is free again
/// after this.
pub const LEASE_MS: i64 = 60_000;
const RENEW_EVERY: Duration = Duration::from_secs(15);

/// A leased instance id and the random name it is held under.
pub struct Lease {
    pub id: u16,
    holder: String,
}

fn new_holder() -> anyhow::Result<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(|e| anyhow::anyhow!(e))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Leases an instance id and makes the id generator use it.
pub async fn acquire(docs: &dyn DocStore) -> anyhow::Result<Lease> {
    let holder = new_holder()?;
    let now = now_ms();
    let id = docs
        .lease_instance_id(&holder, now, now + LEASE_MS)
        .await?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "all {} instance ids are leased by running instances; stop one, or wait a \
                 minute for a crashed one's lease to end",
                u32::from(ids::MAX_INSTANCE) + 1
            )
        })?;
    ids::global().set_instance(id);
    Ok(Lease { id, holder })
}

/// Renews the lease every 15 s; a lost one is replaced.
pub fn spawn_renewal(docs: Arc<dyn DocStore>, lease: Lease) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lease = lease;
        let mut tick = tokio::time::interval(RENEW_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            match docs
                .renew_instance_id(lease.id, &lease.holder, now_ms() + LEASE_MS)
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    tracing::error!(
                        instance = lease.id,
                        "the instance id lease was lost to another instance; leasing a new one"
                    );
                    match acquire(docs.as_ref()).await {
                        Ok(fresh) => {
                            tracing::info!(instance = fresh.id, "leased a new instance id");
                            lease = fresh;
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "could not lease a new instance id")
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not renew the instance id lease"),
            }
        }
    })
}
