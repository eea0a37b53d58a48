//! A byte-bounded LRU cache of demuxed packets, grouped by GOP, shared by the readers of one
//! or many videos: consecutive clips of one video read each GOP from the file once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Cache key: a video (any id the caller chooses, e.g. a hash of the path) and a GOP.
pub type GopKey = (u64, u32);

/// LRU cache of packet bytes by GOP, bounded in bytes.
#[derive(Debug)]
pub struct GopCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    gops: HashMap<GopKey, Entry>,
    bytes: usize,
    tick: u64,
    hits: u64,
    misses: u64,
}

#[derive(Debug, Default)]
struct Entry {
    packets: HashMap<u32, Arc<[u8]>>,
    bytes: usize,
    last_use: u64,
}

/// Counters of a [`GopCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Packets found in the cache.
    pub hits: u64,
    /// Packets that had to be read.
    pub misses: u64,
    /// Bytes held.
    pub bytes: usize,
    /// GOPs held.
    pub gops: usize,
}

impl GopCache {
    /// A cache holding at most `capacity` bytes of packets.
    pub fn new(capacity: usize) -> GopCache {
        GopCache {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every update is one step).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached bytes of packet `decode_index` of `gop`, if present.
    pub fn get(&self, key: GopKey, decode_index: u32) -> Option<Arc<[u8]>> {
        let mut g = self.lock();
        g.tick += 1;
        let tick = g.tick;
        let found = g.gops.get_mut(&key).and_then(|e| {
            e.last_use = tick;
            e.packets.get(&decode_index).cloned()
        });
        if found.is_some() {
            g.hits += 1;
        } else {
            g.misses += 1;
        }
        found
    }

    /// Whether packet `decode_index` of `gop` is cached, without counting a hit or a miss or
    /// touching its age (a look ahead, not a use).
    pub fn contains(&self, key: GopKey, decode_index: u32) -> bool {
        self.lock()
            .gops
            .get(&key)
            .is_some_and(|e| e.packets.contains_key(&decode_index))
    }

    /// Stores a packet, evicting least recently used GOPs (never the one being filled) to stay
    /// within capacity. A packet larger than the whole cache is not stored.
    pub fn insert(&self, key: GopKey, decode_index: u32, bytes: Arc<[u8]>) {
        let len = bytes.len();
        if len > self.capacity {
            return;
        }
        let mut g = self.lock();
        while g.bytes + len > self.capacity {
            let victim = g
                .gops
                .iter()
                .filter(|(k, _)| **k != key)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(k, _)| *k);
            match victim.and_then(|k| g.gops.remove(&k)) {
                Some(e) => g.bytes -= e.bytes,
                None => return,
            }
        }
        g.tick += 1;
        let tick = g.tick;
        let e = g.gops.entry(key).or_default();
        e.last_use = tick;
        if e.packets.insert(decode_index, bytes).is_none() {
            e.bytes += len;
            g.bytes += len;
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            hits: g.hits,
            misses: g.misses,
            bytes: g.bytes,
            gops: g.gops.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Arc<[u8]> {
        vec![7u8; n].into()
    }

    #[test]
    fn least_recently_used_gops_go_first_and_bytes_stay_bounded() {
        let c = GopCache::new(1000);
        c.insert((1, 0), 0, bytes(400));
        c.insert((1, 1), 10, bytes(400));
        assert!(c.get((1, 0), 0).is_some()); // GOP 0 is now more recent than GOP 1
        c.insert((1, 2), 20, bytes(400));
        assert!(c.get((1, 1), 10).is_none(), "GOP 1 was evicted");
        assert!(c.get((1, 0), 0).is_some());
        assert!(c.get((1, 2), 20).is_some());
        let s = c.stats();
        assert_eq!((s.bytes, s.gops), (800, 2));
        c.insert((1, 3), 30, bytes(2000));
        assert_eq!(c.stats().bytes, 800, "larger than the cache: not stored");
        // Filling one GOP past the capacity evicts others, never itself.
        for i in 0..5 {
            c.insert((2, 0), i, bytes(300));
        }
        assert!(c.stats().bytes <= 1000);
    }
}
