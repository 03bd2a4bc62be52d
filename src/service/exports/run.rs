//! One run of one export on this instance: the export it writes, its
//! progress, the chunks it stored, whether it lost its claim, and the
//! records it holds (`Run::hold`, the proof that records are streamed).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use super::sink::Sink;
use crate::store::ExportDoc;

/// One run of one export on this instance.
pub struct Run {
    pub export: ExportDoc,
    pub chunk_bytes: usize,
    done: AtomicI64,
    known: AtomicI64,
    chunks: AtomicI64,
    lost: AtomicBool,
    sink: Mutex<Option<Sink>>,
    /// Records read from the stores and not yet dropped, and the most at
    /// once: the proof that the records are streamed too, not only the
    /// bytes (a writer that read every post first would deflate them just
    /// as lean).
    held: AtomicI64,
    peak_held: AtomicI64,
}

/// Records a run holds, counted while this lives.
pub struct Held<'r> {
    run: &'r Run,
    n: i64,
}

impl Held<'_> {
    /// `n` more held with these.
    pub fn add(&mut self, n: usize) {
        let n = n as i64;
        self.n += n;
        let now = self.run.held.fetch_add(n, Ordering::Relaxed) + n;
        self.run.peak_held.fetch_max(now, Ordering::Relaxed);
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.run.held.fetch_sub(self.n, Ordering::Relaxed);
    }
}

impl Run {
    pub fn new(export: ExportDoc, chunk_bytes: usize) -> Self {
        Run {
            export,
            chunk_bytes,
            done: AtomicI64::new(0),
            known: AtomicI64::new(0),
            chunks: AtomicI64::new(0),
            lost: AtomicBool::new(false),
            sink: Mutex::new(None),
            held: AtomicI64::new(0),
            peak_held: AtomicI64::new(0),
        }
    }

    /// Counts `n` records read from the stores as held until the answer
    /// is dropped: every batch read is counted so.
    pub fn hold(&self, n: usize) -> Held<'_> {
        let mut held = Held { run: self, n: 0 };
        held.add(n);
        held
    }

    /// Records `done` more written and `found` more known.
    pub fn add(&self, done: i64, found: i64) {
        self.known.fetch_add(found, Ordering::Relaxed);
        self.done.fetch_add(done, Ordering::Relaxed);
    }

    pub fn progress(&self) -> (i64, i64) {
        let done = self.done.load(Ordering::Relaxed);
        (done, self.known.load(Ordering::Relaxed).max(done))
    }

    /// The number of the next chunk to store.
    pub fn next_chunk(&self) -> i64 {
        self.chunks.fetch_add(1, Ordering::Relaxed)
    }

    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    pub fn lose(&self) {
        self.lost.store(true, Ordering::Relaxed);
    }

    pub fn watch_sink(&self, sink: &Sink) {
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = Some(sink.clone());
    }

    /// The most records held at once.
    pub fn peak_held(&self) -> i64 {
        self.peak_held.load(Ordering::Relaxed)
    }

    pub fn sink(&self) -> Option<Sink> {
        self.sink.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
