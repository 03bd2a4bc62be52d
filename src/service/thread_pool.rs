//! CPU-heavy work on small fixed pools of threads, each behind a bounded
//! queue: password hashing (`passwords`) and picture processing
//! (`pictures`), apart so that a login flood does not hold up uploads nor
//! uploads sign-ins.
//!
//! Each argon2id hash takes 19 MiB for its duration, and decoding a photo
//! up to a few hundred. On tokio's blocking pool (up to 512 threads) a
//! burst would run that many at once; on these pools at most one per core
//! runs. The queue in front of each is bounded too: a flood past it is
//! answered 503 at once instead of queueing without end, each queued job
//! holding its input and a waiting request. (The binary also pins glibc's
//! mmap threshold so the big buffers go back to the system: see
//! `main.rs`.)

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

/// Jobs waiting per hashing thread. A hash takes about 50 ms here, so a
/// full queue is under a second of work: longer waits than that are better
/// answered "try again" than held open.
const PASSWORDS_QUEUED_PER_THREAD: usize = 16;

/// Pictures waiting per processing thread. A 12 MP photo takes a few
/// hundred milliseconds and each waiting one holds its upload, so the
/// queue is short.
pub const PICTURES_QUEUED_PER_THREAD: usize = 2;

/// One per core. Leaving a core free for serving was measured under a
/// login flood and bought other requests nothing (the flood's share of the
/// HTTP workers is what slows them) for a third fewer sign-ins
/// (BENCHMARKS.md).
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

pub struct ThreadPool {
    jobs: Mutex<mpsc::SyncSender<Job>>,
}

/// The pool that hashes and checks passwords.
pub fn passwords() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPool::start(
            "password",
            threads(),
            threads() * PASSWORDS_QUEUED_PER_THREAD,
        )
    })
}

/// The pool that decodes, resizes and encodes uploaded pictures.
pub fn pictures() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPool::start("picture", threads(), threads() * PICTURES_QUEUED_PER_THREAD)
    })
}

impl ThreadPool {
    fn start(name: &str, threads: usize, queued: usize) -> ThreadPool {
        let (tx, rx) = mpsc::sync_channel::<Job>(queued);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = rx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    match job {
                        // A job that panics loses its answer (its caller
                        // gets `Gone`), not the thread: a picture that
                        // trips a decoder must not shrink the pool.
                        Ok(job) => {
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                        }
                        Err(_) => return,
                    }
                });
        }
        ThreadPool {
            jobs: Mutex::new(tx),
        }
    }

    /// Runs `f` on this pool and waits for it without blocking the async
    /// worker; refuses at once when the queue is full.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Refused> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        let job: Job = Box::new(move || {
            let _enter = span.enter();
            let _ = tx.send(f());
        });
        let sent = self.jobs.lock().map_err(|_| Refused::Gone)?.try_send(job);
        match sent {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => return Err(Refused::Busy),
            Err(mpsc::TrySendError::Disconnected(_)) => return Err(Refused::Gone),
        }
        rx.await.map_err(|_| Refused::Gone)
    }
}

/// Why a job did not run.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The queue is full: the caller answers 503 with `Retry-After`.
    Busy,
    /// The pool is gone, or the job panicked.
    Gone,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_and_answer() {
        let answers =
            futures_util::future::join_all((0..8).map(|i| passwords().run(move || i * 2))).await;
        assert_eq!(answers, (0..8).map(|i| Ok(i * 2)).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_full_queue_refuses_instead_of_growing() {
        // One thread, held by a job that waits on a gate; a queue of 4
        // behind it.
        let pool = ThreadPool::start("test", 1, 4);
        let (started, running) = tokio::sync::oneshot::channel();
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let holder = pool.run(move || {
            let _ = started.send(());
            let _ = gate.recv();
            "held"
        });
        tokio::pin!(holder);
        assert!(futures_util::poll!(&mut holder).is_pending());
        running.await.unwrap();
        // The thread is provably busy: each job is queued or refused when
        // first polled, and the queue takes four.
        let mut queued = Vec::new();
        let mut refused = 0;
        for i in 0..15 {
            let mut job = Box::pin(pool.run(move || i));
            match futures_util::poll!(&mut job) {
                std::task::Poll::Pending => queued.push((i, job)),
                std::task::Poll::Ready(r) => {
                    assert_eq!(r, Err(Refused::Busy));
                    refused += 1;
                }
            }
        }
        assert_eq!((queued.len(), refused), (4, 11));
        open.send(()).unwrap();
        assert_eq!(holder.await, Ok("held"));
        for (i, job) in queued {
            assert_eq!(
                job.await,
                Ok(i),
                "a queued job runs once the thread is free"
            );
        }
    }
}
