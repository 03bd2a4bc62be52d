//! Group commit for the embedded documents. redb has one writer at a time
//! and every commit waits for fsync, so writes queued behind a commit are
//! run together in the next transaction and share its fsync: each is still
//! acknowledged only once it is on disk, but a burst of N writes costs a
//! handful of fsyncs instead of N.
//!
//! A batch is all or nothing. If any write in it fails (a duplicate
//! username, say), the batch is abandoned and each write is run again in a
//! transaction of its own, so one write's failure never touches another.

use std::any::Any;
use std::sync::mpsc;
use std::sync::Arc;

use redb::WriteTransaction;

use super::other;
use crate::store::StoreResult;

type Output = Box<dyn Any + Send>;
/// A write; `Fn` because a failed batch runs it a second time.
pub type Job = Box<dyn Fn(&WriteTransaction) -> StoreResult<Output> + Send>;

struct Pending {
    job: Job,
    reply: tokio::sync::oneshot::Sender<StoreResult<Output>>,
}

/// At most this many writes share a transaction.
const MAX_BATCH: usize = 512;

pub struct GroupCommit {
    queue: mpsc::Sender<Pending>,
}

impl GroupCommit {
    pub fn start(db: Arc<redb::Database>) -> Self {
        let (queue, jobs) = mpsc::channel::<Pending>();
        let spawned = std::thread::Builder::new()
            .name("moments-writer".into())
            .spawn(move || run(&db, &jobs));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the embedded writer thread");
        }
        Self { queue }
    }

    pub async fn submit(&self, job: Job) -> StoreResult<Output> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.queue
            .send(Pending { job, reply })
            .map_err(|_| other("the writer thread is gone"))?;
        answer
            .await
            .map_err(|_| other("the writer thread dropped a write"))?
    }
}

fn run(db: &redb::Database, jobs: &mpsc::Receiver<Pending>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        if batch.len() == 1 || !commit_together(db, &mut batch) {
            for p in batch {
                let result = commit_alone(db, &p.job);
                let _ = p.reply.send(result);
            }
        }
    }
}

/// Runs the batch in one transaction. True when every write was answered
/// (all committed, or all failed with the commit); false when one failed and
/// the batch must be retried write by write (nothing of it was committed).
fn commit_together(db: &redb::Database, batch: &mut Vec<Pending>) -> bool {
    let txn = match db.begin_write() {
        Ok(t) => t,
        Err(_) => return false,
    };
    let mut outputs = Vec::with_capacity(batch.len());
    for p in batch.iter() {
        match (p.job)(&txn) {
            Ok(o) => outputs.push(o),
            Err(_) => {
                let _ = txn.abort();
                return false;
            }
        }
    }
    match txn.commit() {
        Ok(()) => {
            for (p, o) in batch.drain(..).zip(outputs) {
                let _ = p.reply.send(Ok(o));
            }
        }
        Err(e) => {
            let message = e.to_string();
            for p in batch.drain(..) {
                let _ = p.reply.send(Err(other(&message)));
            }
        }
    }
    true
}

fn commit_alone(db: &redb::Database, job: &Job) -> StoreResult<Output> {
    let txn = db.begin_write().map_err(other)?;
    match job(&txn) {
        Ok(out) => {
            txn.commit().map_err(other)?;
            Ok(out)
        }
        Err(e) => {
            let _ = txn.abort();
            Err(e)
        }
    }
}
