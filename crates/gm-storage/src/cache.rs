//! A remote source's block cache: fixed-size blocks of one object version, least recently
//! used evicted first; beside them, the exact byte ranges prefetches fetched (an index's
//! header windows, a decode run's packets), oldest dropped first past the same byte budget.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct BlockCache {
    block: u64,
    capacity: usize,
    blocks: HashMap<u64, Arc<Vec<u8>>>,
    /// Block numbers, least recently used first.
    order: VecDeque<u64>,
    /// Exact ranges by start (a read finds its range in log time: a full scan's hint may leave
    /// thousands), their starts oldest first, and their bytes.
    exact: BTreeMap<u64, Vec<u8>>,
    exact_order: VecDeque<u64>,
    exact_bytes: usize,
}

impl BlockCache {
    /// A cache of `capacity_bytes` in blocks of `block` bytes (at least two blocks).
    pub(crate) fn new(block: u64, capacity_bytes: u64) -> BlockCache {
        BlockCache {
            block,
            capacity: (capacity_bytes / block).max(2) as usize,
            blocks: HashMap::new(),
            order: VecDeque::new(),
            exact: BTreeMap::new(),
            exact_order: VecDeque::new(),
            exact_bytes: 0,
        }
    }

    pub(crate) fn block_size(&self) -> u64 {
        self.block
    }

    pub(crate) fn capacity_blocks(&self) -> usize {
        self.capacity
    }

    /// Bytes the exact ranges may hold: as many as the blocks.
    pub(crate) fn exact_budget(&self) -> usize {
        self.capacity.saturating_mul(self.block as usize)
    }

    /// Stores an exact range fetched outside the blocks, dropping the oldest past the budget.
    pub(crate) fn insert_exact(&mut self, start: u64, bytes: Vec<u8>) {
        self.exact_bytes += bytes.len();
        match self.exact.insert(start, bytes) {
            Some(old) => self.exact_bytes -= old.len(),
            None => self.exact_order.push_back(start),
        }
        while self.exact_bytes > self.exact_budget() {
            let Some(oldest) = self.exact_order.pop_front() else {
                break;
            };
            if let Some(old) = self.exact.remove(&oldest) {
                self.exact_bytes -= old.len();
            }
        }
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

    /// Whether `range` can be copied from the cache: inside one exact range, or all its blocks
    /// held.
    pub(crate) fn holds(&self, range: &Range<u64>) -> bool {
        self.exact_holding(range).is_some()
            || self.blocks_of(range).all(|b| self.blocks.contains_key(&b))
    }

    /// The exact range that contains `range` (the one starting last at or before it: one
    /// hint's ranges do not overlap; where two hints' do, a read this misses is fetched as
    /// usual, still correct), as its start and bytes.
    fn exact_holding(&self, range: &Range<u64>) -> Option<(u64, &[u8])> {
        self.exact
            .range(..=range.start)
            .next_back()
            .filter(|(start, b)| range.end <= **start + b.len() as u64)
            .map(|(start, b)| (*start, b.as_slice()))
    }

    /// Copies `buf.len()` bytes from `offset` out of the cache (one exact range, or blocks);
    /// `false` if they are not all there.
    pub(crate) fn copy(&mut self, buf: &mut [u8], offset: u64) -> bool {
        if let Some((start, bytes)) = self.exact_holding(&(offset..offset + buf.len() as u64)) {
            let at = (offset - start) as usize;
            buf.copy_from_slice(&bytes[at..at + buf.len()]);
            return true;
        }
        self.copy_blocks(buf, offset)
    }

    fn copy_blocks(&mut self, buf: &mut [u8], offset: u64) -> bool {
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

    #[test]
    fn exact_ranges_serve_reads_inside_them_and_the_oldest_go_past_the_budget() {
        let mut cache = BlockCache::new(4, 8);
        assert_eq!(cache.exact_budget(), 8);
        cache.insert_exact(100, vec![1, 2, 3, 4, 5]);
        let mut buf = [0; 3];
        assert!(cache.copy(&mut buf, 101));
        assert_eq!(buf, [2, 3, 4]);
        assert!(!cache.copy(&mut buf, 103), "runs past the range");
        cache.insert_exact(200, vec![7, 8, 9, 10]);
        // 9 bytes > 8: the first range went.
        assert!(!cache.copy(&mut buf, 101));
        assert!(cache.copy(&mut buf, 201));
        assert_eq!(buf, [8, 9, 10]);
    }
}
