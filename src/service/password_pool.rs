//! Password hashing on a small fixed pool of threads.
//!
//! Each argon2id hash takes 19 MiB for its duration. On tokio's blocking
//! pool (up to 512 threads) a burst of logins would run that many hashes at
//! once; on this fixed pool at most one per core runs, so a login flood
//! queues instead of making the server allocate gigabytes. (The binary also
//! pins glibc's mmap threshold so those buffers go back to the system: see
//! `main.rs`.)

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    jobs: Mutex<mpsc::Sender<Job>>,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        for i in 0..threads {
            let rx = rx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("password-{i}"))
                .spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                });
        }
        Pool {
            jobs: Mutex::new(tx),
        }
    })
}

/// Runs `f` on the password pool and waits for it without blocking the
/// async worker. `None` if the pool is gone (never, short of a panic in it).
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let span = tracing::Span::current();
    let job: Job = Box::new(move || {
        let _enter = span.enter();
        let _ = tx.send(f());
    });
    pool().jobs.lock().ok()?.send(job).ok()?;
    rx.await.ok()
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn jobs_run_and_answer() {
        let answers =
            futures_util::future::join_all((0..8).map(|i| super::run(move || i * 2))).await;
        assert_eq!(answers, (0..8).map(|i| Some(i * 2)).collect::<Vec<_>>());
    }
}
