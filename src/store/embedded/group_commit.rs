//! Group commit for the embedded documents. redb has one writer at a time
//! and every commit waits for fsync, so writes queued behind a commit are
//! run together in the next transaction and share its fsync: each is still
//! acknowledged only once it is on disk, but a burst of N writes costs a
//! handful of fsyncs instead of N.
//!
//! A batch is all or nothing. If any write in it fails (a duplicate
//! username, say), the batch is abandoned and each write is run again in a
//! transaction of its own, so one write's failure never touches another.
//!
//! Nothing is ever held back unwritten: a write is answered once committed.
//! Closing only lets the writes already queued commit, then releases the
//! writer's handle on the database, so that it can be closed cleanly.

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

enum Message {
    Write(Pending),
    /// Answered once every write queued before it is answered and the
    /// writer let go of the database.
    Close(tokio::sync::oneshot::Sender<()>),
}

/// At most this many writes share a transaction.
const MAX_BATCH: usize = 512;

pub struct GroupCommit {
    queue: mpsc::Sender<Message>,
}

impl GroupCommit {
    pub fn start(db: Arc<redb::Database>) -> Self {
        let (queue, messages) = mpsc::channel::<Message>();
        let spawned = std::thread::Builder::new()
            .name("moments-writer".into())
            .spawn(move || run(db, &messages));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the embedded writer thread");
        }
        Self { queue }
    }

    pub async fn submit(&self, job: Job) -> StoreResult<Output> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.queue
            .send(Message::Write(Pending { job, reply }))
            .map_err(|_| other("the writer thread is gone (the store is closed)"))?;
        answer
            .await
            .map_err(|_| other("the writer thread dropped a write (the store is closed)"))?
    }

    /// Commits the writes submitted so far, then stops the writer thread;
    /// writes submitted later fail. Returns once the thread let go of the
    /// database.
    pub async fn close(&self) {
        let (reply, done) = tokio::sync::oneshot::channel();
        if self.queue.send(Message::Close(reply)).is_ok() {
            let _ = done.await;
        }
    }
}

fn run(db: Arc<redb::Database>, messages: &mpsc::Receiver<Message>) {
    let mut closed = None;
    while closed.is_none() {
        let mut batch = match messages.recv() {
            Ok(Message::Write(first)) => vec![first],
            Ok(Message::Close(reply)) => {
                closed = Some(reply);
                break;
            }
            Err(_) => break,
        };
        while batch.len() < MAX_BATCH {
            match messages.try_recv() {
                Ok(Message::Write(p)) => batch.push(p),
                Ok(Message::Close(reply)) => {
                    closed = Some(reply);
                    break;
                }
                Err(_) => break,
            }
        }
        if batch.len() == 1 || !commit_together(&db, &mut batch) {
            for p in batch {
                let result = commit_alone(&db, &p.job);
                let _ = p.reply.send(result);
            }
        }
    }
    drop(db);
    if let Some(reply) = closed {
        let _ = reply.send(());
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
