//! A remote source's block cache: fixed-size blocks of one object version, least recently
//! used evicted first.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct BlockCache {
    block: u64,
    capacity: usize,
    blocks: HashMap<u64, Arc<Vec<u8>>>,
    /// Block numbers, least recently used first.
    order: VecDeque<u64>,
}

impl BlockCache {
    /// A cache of `capacity_bytes` in blocks of `block` bytes (at least two blocks).
    pub(crate) fn new(block: u64, capacity_bytes: u64) -> BlockCache {
        BlockCache {
            block,
            capacity: (capacity_bytes / block).max(2) as usize,
            blocks: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn block_size(&self) -> u64 {
        self.block
    }

    pub(crate) fn capacity_blocks(&self) -> usize {
        self.capacity
    }

    /// The block numbers covering `range`.
    pub(crate) fn blocks_of(&self, range: &Range<u64>) -> Range<u64> {
        range.start / self.block..range.end.div_ceil(self.block)
    }

    /// Runs of consecutive blocks in `blocks` that are not cached.
    pub(crate) fn missing_runs(&self, blocks: Range<u64>) -> Vec<Range<u64>> {
        let mut runs: Vec<Range<u64>> = Vec::new();
        for b in blocks.filter(|b| !self.blocks.contains_key(b)) {
            match runs.last_mut() {
                Some(run) if run.end == b => run.end = b + 1,
                _ => runs.push(b..b + 1),
            }
        }
        runs
    }

    /// Stores the bytes of blocks `first..` (the last one may be short: the object's end).
    pub(crate) fn insert(&mut self, first: u64, bytes: &[u8]) {
        for (i, chunk) in bytes.chunks(self.block as usize).enumerate() {
            let b = first + i as u64;
            if self.blocks.insert(b, Arc::new(chunk.to_vec())).is_none() {
                self.order.push_back(b);
            }
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.blocks.remove(&old);
            }
        }
    }

    /// Copies `buf.len()` bytes from `offset` out of the cache; `false` if a block is missing.
    pub(crate) fn copy(&mut self, buf: &mut [u8], offset: u64) -> bool {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let b = at / self.block;
            let Some(block) = self.blocks.get(&b) else {
                return false;
            };
            let start = (at - b * self.block) as usize;
            let n = (block.len().saturating_sub(start)).min(buf.len() - done);
            if n == 0 {
                return false;
            }
            buf[done..done + n].copy_from_slice(&block[start..start + n]);
            done += n;
            self.touch(b);
        }
        true
    }

    fn touch(&mut self, b: u64) {
        if self.order.back() != Some(&b) {
            if let Some(i) = self.order.iter().position(|&x| x == b) {
                self.order.remove(i);
            }
            self.order.push_back(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_copies_and_eviction() {
        let mut cache = BlockCache::new(4, 12);
        cache.insert(1, &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(cache.missing_runs(0..5), [0..1, 3..5]);
        let mut buf = [0; 6];
        assert!(cache.copy(&mut buf, 5));
        assert_eq!(buf, [2, 3, 4, 5, 6, 7]);
        assert!(!cache.copy(&mut buf, 0));
        cache.insert(3, &[9, 9]);
        cache.insert(4, &[8]);
        // Three blocks fit: block 1 was used less recently than 2, so it went.
        let expected: Vec<Range<u64>> = std::iter::once(0..2).collect();
        assert_eq!(cache.missing_runs(0..5), expected);
    }
}
