//! Progress of long one-off work (listing a bucket prefix, indexing a video dataset, filling
//! the device cache), for whoever shows it: a progress bar, a log line. The work counts; the
//! viewer polls.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Units of work done and to do (files indexed, images cached), updated by the worker
/// threads and read by anyone holding a clone.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    /// Shared with the storage runtime, which counts listed objects as pages arrive.
    listed: Arc<AtomicU64>,
}

impl Progress {
    /// A counter at 0 of 0, to hand to a builder and poll.
    pub fn new() -> Arc<Progress> {
        Arc::new(Progress::default())
    }

    /// Units done so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Units to do (0 until the work knows).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Objects listed so far under a bucket prefix (before the work's total is known; the
    /// listing has no total of its own).
    pub fn listed(&self) -> u64 {
        self.listed.load(Ordering::Relaxed)
    }

    /// The counter a listing adds to.
    pub(crate) fn listing_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.listed)
    }

    pub(crate) fn start(&self, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
}
