//! Counters of the storage layer, shared by every request of one [`crate::Storage`].

use std::sync::atomic::{AtomicU64, Ordering};

/// What the storage layer did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Attempts after a transient failure.
    pub retries: u64,
    /// Requests that failed for good (after their retries).
    pub failures: u64,
    /// The most requests in flight at once.
    pub peak_in_flight: u64,
    /// The most requested bytes in flight at once.
    pub peak_in_flight_bytes: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
    in_flight: AtomicU64,
    in_flight_bytes: AtomicU64,
    peak_in_flight: AtomicU64,
    peak_in_flight_bytes: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> StorageStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StorageStats {
            requests: get(&self.requests),
            bytes: get(&self.bytes),
            retries: get(&self.retries),
            failures: get(&self.failures),
            peak_in_flight: get(&self.peak_in_flight),
            peak_in_flight_bytes: get(&self.peak_in_flight_bytes),
        }
    }

    pub(crate) fn attempt(&self, retry: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if retry {
            self.retries.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn received(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks a request of `bytes` as started; the guard marks it finished.
    pub(crate) fn start(&self, bytes: u64) -> InFlight<'_> {
        let n = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_in_flight.fetch_max(n, Ordering::Relaxed);
        let b = self.in_flight_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_in_flight_bytes.fetch_max(b, Ordering::Relaxed);
        InFlight {
            counters: self,
            bytes,
        }
    }
}

pub(crate) struct InFlight<'a> {
    counters: &'a Counters,
    bytes: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.counters
            .in_flight_bytes
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}
