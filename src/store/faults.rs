//! Faults injected into store calls, by port and method name: a call held
//! at a gate until released, failed before it reaches the store, or run and
//! then answered as failed (the write happened, its answer was lost, as in a
//! failover). Races and partial failures that real stores produce only now
//! and then are so made to happen at an exact step, on every backend, with
//! the real stores underneath.
//!
//! One generic layer: `store::metered` asks `Faults::at` before every call,
//! so no port needs a hand-written copy. With nothing injected the check is
//! one relaxed atomic load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{StoreError, StoreResult};

/// What happens to a matching call.
#[derive(Clone)]
pub enum Fault {
    /// Refused before it reaches the store, as an unreachable store would.
    Fail,
    /// Run to its end, then answered as failed: the store changed and the
    /// caller never heard.
    FailAfter,
    /// Held before it reaches the store until the gate is opened.
    Hold(Arc<Gate>),
}

/// Where held calls wait: `reached` says one got there, `open` lets every
/// held call (and every later one) through.
#[derive(Default)]
pub struct Gate {
    reached: tokio::sync::Notify,
    held: std::sync::atomic::AtomicUsize,
    opened: tokio::sync::watch::Sender<bool>,
}

impl Gate {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Waits until a call is held here.
    pub async fn reached(&self) {
        loop {
            let notified = self.reached.notified();
            if self.held.load(Ordering::Acquire) > 0 {
                return;
            }
            notified.await;
        }
    }

    pub fn open(&self) {
        self.opened.send_replace(true);
    }

    async fn pass(&self) {
        let mut opened = self.opened.subscribe();
        self.held.fetch_add(1, Ordering::AcqRel);
        self.reached.notify_waiters();
        let _ = opened.wait_for(|open| *open).await;
    }
}

struct Rule {
    port: &'static str,
    op: &'static str,
    fault: Fault,
    /// Calls it still applies to.
    left: usize,
}

#[derive(Default)]
pub struct Faults {
    armed: AtomicBool,
    rules: Mutex<Vec<Rule>>,
}

/// What the metered layer does with one call.
pub(super) enum Verdict {
    Run,
    Fail,
    FailAfter,
}

impl Faults {
    /// Applies `fault` to the next `times` calls of `port`'s method `op`
    /// (`"PostDocs"`, `"insert_post"`: the names `/metrics` shows).
    pub fn inject(&self, port: &'static str, op: &'static str, fault: Fault, times: usize) {
        let mut rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        rules.push(Rule {
            port,
            op,
            fault,
            left: times,
        });
        self.armed.store(true, Ordering::Release);
    }

    /// Removes every fault not yet spent.
    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.armed.store(false, Ordering::Release);
    }

    /// The fault this call meets, waiting at its gate if it is held.
    pub(super) async fn at(&self, port: &'static str, op: &'static str) -> Verdict {
        if !self.armed.load(Ordering::Acquire) {
            return Verdict::Run;
        }
        let fault = {
            let mut rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
            let found = rules
                .iter_mut()
                .find(|r| r.port == port && r.op == op && r.left > 0);
            let fault = found.map(|r| {
                r.left -= 1;
                r.fault.clone()
            });
            rules.retain(|r| r.left > 0);
            if rules.is_empty() {
                self.armed.store(false, Ordering::Release);
            }
            fault
        };
        match fault {
            None => Verdict::Run,
            Some(Fault::Fail) => Verdict::Fail,
            Some(Fault::FailAfter) => Verdict::FailAfter,
            Some(Fault::Hold(gate)) => {
                gate.pass().await;
                Verdict::Run
            }
        }
    }
}

pub(super) fn injected<T>(port: &'static str, op: &'static str) -> StoreResult<T> {
    Err(StoreError::Unavailable(anyhow::anyhow!(
        "fault injected into {port}::{op}"
    )))
}
