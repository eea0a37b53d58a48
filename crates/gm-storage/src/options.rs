//! Storage settings: gm's limits and retry policy, plus object_store's own keys.

use std::time::Duration;

use crate::error::StorageError;

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
    /// Uploads of files of at least this size ([`Storage::put_file`](crate::Storage::put_file),
    /// `gm shard --to`) go in parts of this size, several at once (S3's smallest part is
    /// 5 MiB, which is the least taken).
    pub part_bytes: u64,
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
            part_bytes: 32 << 20,
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

/// gm's own keys, as [`StorageOptions::set`] takes them.
pub const GM_KEYS: &[&str] = &[
    "concurrency",
    "max_inflight_bytes",
    "retries",
    "retry_timeout",
    "backoff_min",
    "backoff_max",
    "timeout",
    "connect_timeout",
    "open_bytes",
    "block_size",
    "cache_bytes",
    "part_bytes",
];

impl StorageOptions {
    /// Options from `(key, value)` pairs, as the command line (`--storage KEY=VALUE`) and
    /// Python (`storage={...}`) give them: see [`set`](Self::set).
    pub fn from_pairs<K, V>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<StorageOptions, StorageError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut options = StorageOptions::default();
        for (key, value) in pairs {
            options.set(key.as_ref(), value.as_ref())?;
        }
        Ok(options)
    }

    /// Sets one option by name. gm's keys ([`GM_KEYS`]) take counts (`64`), byte sizes
    /// (`65536`, `64KiB`, `1MiB`, `1GiB`) or durations (`500ms`, `10s`, `2.5`: seconds);
    /// every other key is passed to object_store (`endpoint`, `region`, `allow_http`, ...),
    /// which checks it when the store is built.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
        let bad = |what: &str| StorageError::Config {
            url: "(storage options)".to_string(),
            reason: format!("option {key:?} = {value:?}: expected {what}"),
        };
        let count = || value.trim().parse::<u64>().map_err(|_| bad("a count"));
        let bytes = || parse_bytes(value).ok_or_else(|| bad("a byte size such as 65536 or 64KiB"));
        let time = || parse_duration(value).ok_or_else(|| bad("a duration such as 500ms or 10s"));
        match key.to_ascii_lowercase().as_str() {
            "concurrency" => {
                self.concurrency = usize::try_from(count()?).map_err(|_| bad("a count"))?
            }
            "max_inflight_bytes" => self.max_inflight_bytes = bytes()?,
            "retries" => self.retries = u32::try_from(count()?).map_err(|_| bad("a count"))?,
            "retry_timeout" => self.retry_timeout = time()?,
            "backoff_min" => self.backoff_min = time()?,
            "backoff_max" => self.backoff_max = time()?,
            "timeout" => self.timeout = time()?,
            "connect_timeout" => self.connect_timeout = time()?,
            "open_bytes" => self.open_bytes = bytes()?,
            "block_size" => self.block_size = bytes()?,
            "cache_bytes" => self.cache_bytes = bytes()?,
            "part_bytes" => self.part_bytes = bytes()?,
            _ => self.store.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }
}

/// `65536`, `64KiB`, `64KB` (also 1024), `1MiB`, `1GiB`.
fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

/// `500ms`, `10s`, `2m`, or a bare number of seconds (`2.5`).
fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let seconds = number.trim().parse::<f64>().ok()? * scale;
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gm_keys_parse_and_others_go_to_the_store() {
        let o = StorageOptions::from_pairs([
            ("concurrency", "8"),
            ("block_size", "4KiB"),
            ("open_bytes", "8192"),
            ("timeout", "250ms"),
            ("retry_timeout", "2.5"),
            ("backoff_max", "1s"),
            ("endpoint", "http://127.0.0.1:9000"),
            ("allow_http", "true"),
        ])
        .expect("valid options");
        assert_eq!(o.concurrency, 8);
        assert_eq!((o.block_size, o.open_bytes), (4096, 8192));
        assert_eq!(o.timeout, Duration::from_millis(250));
        assert_eq!(o.retry_timeout, Duration::from_millis(2500));
        assert_eq!(o.backoff_max, Duration::from_secs(1));
        assert_eq!(o.retries, StorageOptions::default().retries);
        assert_eq!(
            o.store,
            vec![
                ("endpoint".to_string(), "http://127.0.0.1:9000".to_string()),
                ("allow_http".to_string(), "true".to_string())
            ]
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        for (key, value) in [
            ("retries", "many"),
            ("block_size", "4 parsecs"),
            ("timeout", "-1s"),
        ] {
            let err = StorageOptions::from_pairs([(key, value)]).expect_err(key);
            let text = err.to_string();
            assert!(text.contains(key) && text.contains(value), "{text}");
        }
    }
}
