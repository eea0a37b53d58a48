//! Storage settings: gm's limits and retry policy, plus object_store's own keys.

use std::time::Duration;

/// How remote storage is reached. Credentials and endpoints come from the usual environment
/// variables first (`AWS_*`, `GOOGLE_*`, `AZURE_*`), then from [`StorageOptions::store`].
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// Requests in flight at once, over all stores.
    pub concurrency: usize,
    /// Bytes of requested ranges in flight at once.
    pub max_inflight_bytes: u64,
    /// Retries after the first attempt, for 5xx, 429, timeouts, refused connections and
    /// short bodies.
    pub retries: u32,
    /// No retry starts after this long since the first attempt.
    pub retry_timeout: Duration,
    /// The first backoff; it doubles up to `backoff_max`.
    pub backoff_min: Duration,
    /// The longest backoff.
    pub backoff_max: Duration,
    /// One request's limit, body included.
    pub timeout: Duration,
    /// The limit on opening a connection.
    pub connect_timeout: Duration,
    /// The first GET of a remote video, which gives its size and version (MP4 headers at the
    /// front and most short files fit in it).
    pub open_bytes: u64,
    /// Block size of a remote video's cache: reads fetch whole blocks.
    pub block_size: u64,
    /// Bytes cached per remote video.
    pub cache_bytes: u64,
    /// object_store configuration keys (`endpoint`, `region`, `allow_http`, ...), applied after
    /// the environment. Unknown keys are an error naming the key.
    pub store: Vec<(String, String)>,
}

impl Default for StorageOptions {
    /// object_store's defaults (10 retries over up to 180 s, 30 s per request) hold one bad
    /// sample for minutes; a data loader would rather report it and go on.
    fn default() -> Self {
        StorageOptions {
            concurrency: 64,
            max_inflight_bytes: 256 << 20,
            retries: 4,
            retry_timeout: Duration::from_secs(20),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(2),
            open_bytes: 256 << 10,
            block_size: 64 << 10,
            cache_bytes: 4 << 20,
            store: Vec::new(),
        }
    }
}

impl StorageOptions {
    /// Adds an object_store configuration key.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.store.push((key.into(), value.into()));
        self
    }

    /// The backoff before retry number `retry` (1 for the first retry).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32 << retry.saturating_sub(1).min(16);
        self.backoff_min
            .saturating_mul(factor)
            .min(self.backoff_max)
    }
}
