//! The zip's bytes between the zip writer and the store: held until a
//! chunk fills, counted, hashed, and refused past the archive's cap.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

/// The zip's bytes on their way to the store: written by the zip writer,
/// taken a chunk at a time by the job. Shared, because the writer owns its
/// output while the job must drain it between batches.
#[derive(Clone)]
pub struct Sink(Arc<Mutex<SinkState>>);

struct SinkState {
    buf: Vec<u8>,
    written: u64,
    max: u64,
    sha: Sha256,
    /// The most bytes held at once.
    peak: usize,
    /// Whether a write was refused for passing `max`.
    refused: bool,
}

impl Sink {
    pub fn new(max: u64) -> Self {
        Sink(Arc::new(Mutex::new(SinkState {
            buf: Vec::new(),
            written: 0,
            max,
            sha: Sha256::new(),
            peak: 0,
            refused: false,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SinkState> {
        // A panic while holding it leaves bytes that are still bytes.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whole chunks of `size` bytes held, taken out; with `last`, what is
    /// left too.
    pub fn take_chunks(&self, size: usize, last: bool) -> Vec<Vec<u8>> {
        let mut s = self.state();
        let mut out = Vec::new();
        while s.buf.len() >= size {
            let rest = s.buf.split_off(size);
            out.push(std::mem::replace(&mut s.buf, rest));
        }
        if last && !s.buf.is_empty() {
            out.push(std::mem::take(&mut s.buf));
        }
        out
    }

    pub fn written(&self) -> u64 {
        self.state().written
    }

    pub fn peak(&self) -> usize {
        self.state().peak
    }

    pub fn refused(&self) -> bool {
        self.state().refused
    }

    pub fn sha256_hex(&self) -> String {
        let digest = self.state().sha.clone().finalize();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut s = self.state();
        if s.written + bytes.len() as u64 > s.max {
            s.refused = true;
            return Err(io::Error::other("the archive passed its size limit"));
        }
        s.buf.extend_from_slice(bytes);
        s.written += bytes.len() as u64;
        s.sha.update(bytes);
        s.peak = s.peak.max(s.buf.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
