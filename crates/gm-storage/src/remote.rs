//! [`RemoteSource`]: a remote object as a `gm_demux::ByteSource`, read by ranged GETs pinned to
//! the version seen when it was opened, through a block cache.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use gm_demux::{ByteSource, SourceVersion};

use crate::cache::BlockCache;
use crate::error::StorageError;
use crate::location::RemoteUrl;
use crate::storage::Storage;

/// Objects up to this many times the first GET are read whole when opened (1 MiB by
/// default): a few more ranged requests would cost more than the bytes.
const WHOLE_FACTOR: u64 = 4;
/// Prefetched ranges without a block closer than this share one exact request.
const EXACT_GAP: u64 = 16 << 10;
/// Matroska's index walk reads every block header, so any cache fetches the whole file: large
/// sequential blocks make that a few requests instead of hundreds.
const MATROSKA_BLOCK: u64 = 1 << 20;
const EBML_MAGIC: [u8; 4] = [0x1A, 0x45, 0xDF, 0xA3];

/// A remote object read by ranges.
#[derive(Debug)]
pub struct RemoteSource {
    storage: Storage,
    url: RemoteUrl,
    name: PathBuf,
    version: SourceVersion,
    cache: Mutex<BlockCache>,
    read: AtomicU64,
    requests: AtomicU64,
    fetched: AtomicU64,
}

impl RemoteSource {
    /// Opens `url` with one GET of its first `open_bytes` (256 KiB), which gives its size and version; later
    /// reads must come from that version (a replaced object is an error, never mixed bytes).
    pub fn open(storage: &Storage, url: &RemoteUrl) -> Result<RemoteSource, StorageError> {
        let options = storage.options();
        let open_bytes = match is_matroska_name(url.key()) {
            true => options.open_bytes.max(MATROSKA_BLOCK),
            false => options.open_bytes.max(1),
        };
        let (first, version) = storage.get(url, Some(0..open_bytes), None)?;
        let block = if first.starts_with(&EBML_MAGIC) {
            MATROSKA_BLOCK
        } else {
            options.block_size.max(4096)
        };
        let whole_bytes = options.open_bytes.saturating_mul(WHOLE_FACTOR);
        let small = version.size <= whole_bytes;
        let capacity = options
            .cache_bytes
            .max(2 * block)
            .max(if small { version.size } else { 0 });
        let source = RemoteSource {
            storage: storage.clone(),
            url: url.clone(),
            name: PathBuf::from(url.url().as_str()),
            cache: Mutex::new(BlockCache::new(block, capacity)),
            version,
            read: AtomicU64::new(0),
            requests: AtomicU64::new(1),
            fetched: AtomicU64::new(first.len() as u64),
        };
        // Only whole blocks go in the cache (the end of the object counts as whole).
        let whole = if first.len() as u64 == source.version.size {
            first.len()
        } else {
            (first.len() as u64 / block * block) as usize
        };
        source.lock().insert(0, &first[..whole]);
        if small {
            let runs = {
                let cache = source.lock();
                cache.missing_runs(cache.blocks_of(&(0..source.version.size)))
            };
            source.fetch_runs(&runs)?;
        }
        Ok(source)
    }

    /// The object's URL.
    pub fn url(&self) -> &RemoteUrl {
        &self.url
    }

    /// Body bytes received so far (blocks and prefetched ranges: at least the distinct bytes
    /// of `bytes_read`).
    pub fn bytes_fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, BlockCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fetches runs of blocks (concurrently when there are several) into the cache.
    fn fetch_runs(&self, runs: &[Range<u64>]) -> Result<(), StorageError> {
        let block = self.lock().block_size();
        let size = self.version.size;
        let ranges: Vec<_> = runs
            .iter()
            .map(|r| r.start * block..(r.end * block).min(size))
            .collect();
        let fetched = self.fetch_ranges(&ranges)?;
        let mut cache = self.lock();
        for (run, bytes) in runs.iter().zip(&fetched) {
            cache.insert(run.start, bytes);
        }
        Ok(())
    }

    /// Fetches exact ranges (concurrently) into the cache's exact store.
    fn fetch_exact(&self, ranges: &[Range<u64>]) -> Result<(), StorageError> {
        let fetched = self.fetch_ranges(ranges)?;
        let mut cache = self.lock();
        for (r, bytes) in ranges.iter().zip(fetched) {
            cache.insert_exact(r.start, bytes);
        }
        Ok(())
    }

    /// Reads `ranges` of this version concurrently, counting the requests and bytes.
    fn fetch_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, StorageError> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let fetched = self.storage.get_ranges(&self.url, ranges, &self.version)?;
        self.requests
            .fetch_add(ranges.len() as u64, Ordering::Relaxed);
        let bytes: usize = fetched.iter().map(Vec::len).sum();
        self.fetched.fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(fetched)
    }
}

/// Ranges (sorted by start) merged where less than `gap` bytes apart, as long as the bytes
/// between them stay within half the bytes wanted so far: at most 1.5 times the wanted bytes
/// are fetched (with the opening GET, a remote full scan stays within twice what the same
/// scan reads locally). Up to `budget` bytes in all.
fn coalesce(ranges: impl Iterator<Item = Range<u64>>, gap: u64, budget: u64) -> Vec<Range<u64>> {
    let mut merged: Vec<Range<u64>> = Vec::new();
    let (mut total, mut wanted, mut between) = (0, 0, 0);
    for r in ranges {
        match merged.last_mut() {
            // Overlapping or adjacent: only the new bytes count.
            Some(last) if r.start <= last.end => {
                let new = r.end.saturating_sub(last.end);
                (total, wanted) = (total + new, wanted + new);
                last.end = last.end.max(r.end);
            }
            Some(last)
                if r.start - last.end <= gap
                    && 2 * (between + r.start - last.end) <= wanted + (r.end - r.start) =>
            {
                between += r.start - last.end;
                wanted += r.end - r.start;
                total += r.end - last.end;
                last.end = r.end;
            }
            _ => {
                total += r.end - r.start;
                wanted += r.end - r.start;
                merged.push(r);
            }
        }
        if total > budget {
            merged.pop();
            break;
        }
    }
    merged
}

/// Whether a key names a Matroska file, so that the first GET can be a whole large block.
fn is_matroska_name(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    [".mkv", ".webm", ".mka", ".mk3d"]
        .iter()
        .any(|e| lower.ends_with(e))
}

impl ByteSource for RemoteSource {
    fn len(&self) -> u64 {
        self.version.size
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.version.size);
        let Some(end) = end else {
            let what = format!(
                "{} bytes at offset {offset} run past the end of the {}-byte {}",
                buf.len(),
                self.version.size,
                self.url
            );
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, what));
        };
        if !self.lock().copy(buf, offset) {
            let (runs, fits) = {
                let cache = self.lock();
                let blocks = cache.blocks_of(&(offset..end));
                let fits = (blocks.end - blocks.start) as usize * 2 <= cache.capacity_blocks();
                (cache.missing_runs(blocks), fits)
            };
            if fits {
                self.fetch_runs(&runs)?;
            }
            if !fits || !self.lock().copy(buf, offset) {
                // Too large for the cache (or evicted meanwhile): read the range exactly.
                let (bytes, _) =
                    self.storage
                        .get(&self.url, Some(offset..end), Some(&self.version))?;
                self.requests.fetch_add(1, Ordering::Relaxed);
                self.fetched
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                if bytes.len() != buf.len() {
                    let what = format!("{}: {} of {} bytes", self.url, bytes.len(), buf.len());
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, what));
                }
                buf.copy_from_slice(&bytes);
            }
        }
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn name(&self) -> &Path {
        &self.name
    }

    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Fetches the parts of `ranges` that are not cached exactly, concurrently, close ones in
    /// one request (never more than 1.5 times the bytes asked for: a full bitstream scan hints
    /// one small header window per packet, and rounding each up to a block read nearly the
    /// whole file); errors are left for the reads that need the bytes.
    fn prefetch(&self, ranges: &[Range<u64>]) {
        let exact = {
            let cache = self.lock();
            let mut wanted: Vec<Range<u64>> = ranges
                .iter()
                .filter(|r| r.end <= self.version.size && r.start < r.end)
                .filter(|r| !cache.holds(r))
                .cloned()
                .collect();
            wanted.sort_unstable_by_key(|r| (r.start, r.end));
            coalesce(wanted.into_iter(), EXACT_GAP, cache.exact_budget() as u64)
        };
        if let Err(e) = self.fetch_exact(&exact) {
            tracing::debug!(url = %self.url, "prefetch failed: {e}");
        }
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn version(&self) -> SourceVersion {
        self.version.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_ranges_share_a_request_up_to_the_byte_budget() {
        let ranges = [0..10, 20..30, 25..40, 100_000..100_010];
        assert_eq!(
            coalesce(ranges.clone().into_iter(), 16 << 10, 1 << 20),
            [0..40, 100_000..100_010]
        );
        assert_eq!(coalesce(ranges.clone().into_iter(), 5, 1 << 20).len(), 3);
        // 40 bytes fit, the next 10 do not.
        let first: Vec<Range<u64>> = std::iter::once(0..40).collect();
        assert_eq!(coalesce(ranges.into_iter(), 16 << 10, 45), first);
    }
}
