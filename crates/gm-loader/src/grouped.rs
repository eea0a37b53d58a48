//! Batches of images of similar shape (torchvision's detection references'
//! `GroupedBatchSampler` with `create_aspect_ratio_groups`): detection resizes to a shorter
//! side without cropping, so a batch whose images share an aspect ratio pads little. Each
//! index of the sampler's epoch order joins its group's buffer, a full buffer is a batch, and
//! at the end the fullest leftover buffers are completed with their group's first samples
//! until the epoch has `len / batch_size` batches. Batches depend only on the sampler's order
//! (seed, epoch, rank), the groups and the batch size: deterministic, and a resumed epoch
//! skips the batches already delivered.

use std::collections::BTreeMap;

use crate::error::LoaderError;
use crate::sampler::Sampler;

/// Group ids by aspect ratio, as torchvision's `create_aspect_ratio_groups` with `k`: height /
/// width cut at `2^linspace(-1, 1, 2k + 1)` (`2k + 2` groups), or at 1 (`k = 0`: portrait and
/// landscape). `sizes` are (width, height).
pub fn aspect_ratio_groups(sizes: &[(u32, u32)], k: usize) -> Vec<usize> {
    let bins: Vec<f64> = if k == 0 {
        vec![1.0]
    } else {
        let n = 2 * k + 1;
        (0..n)
            .map(|i| 2f64.powf(-1.0 + 2.0 * i as f64 / (n - 1) as f64))
            .collect()
    };
    sizes
        .iter()
        .map(|&(w, h)| {
            let ratio = f64::from(h) / f64::from(w.max(1));
            bins.partition_point(|&b| b <= ratio)
        })
        .collect()
}

/// Batches of one group at a time, over a [`Sampler`]'s order.
#[derive(Debug, Clone)]
pub struct GroupedBatchSampler {
    sampler: Sampler,
    groups: Vec<usize>,
    batch_size: usize,
}

impl GroupedBatchSampler {
    /// `groups[i]` is sample `i`'s group (see [`aspect_ratio_groups`]).
    pub fn new(
        sampler: Sampler,
        groups: Vec<usize>,
        batch_size: usize,
    ) -> Result<GroupedBatchSampler, LoaderError> {
        if batch_size == 0 {
            return Err(LoaderError::Config("a batch size of 0".into()));
        }
        Ok(GroupedBatchSampler {
            sampler,
            groups,
            batch_size,
        })
    }

    /// Batches per epoch: this rank's samples / batch size.
    pub fn len(&self, epoch: u64) -> usize {
        self.sampler.indices(self.groups.len(), epoch).len() / self.batch_size
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self, epoch: u64) -> bool {
        self.len(epoch) == 0
    }

    /// The batches of `epoch`, in order.
    pub fn batches(&self, epoch: u64) -> Vec<Vec<usize>> {
        let order = self.sampler.indices(self.groups.len(), epoch);
        group_batches(&order, &self.groups, self.batch_size)
    }
}

/// Batches of one group at a time over `order` (sample indices; `groups[i]` is sample `i`'s
/// group): each index joins its group's buffer, a full buffer is a batch, and the fullest
/// leftover buffers are completed with their group's samples until there are
/// `order.len() / batch_size` batches (torchvision's `GroupedBatchSampler`).
pub(crate) fn group_batches(
    order: &[usize],
    groups: &[usize],
    batch_size: usize,
) -> Vec<Vec<usize>> {
    let batch_size = batch_size.max(1);
    let expected = order.len() / batch_size;
    let mut buffers: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut seen: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    // The groups in the order Python's dict holds their buffers (a group moves to the end
    // when its batch is taken: torchvision deletes the key and reads it back at once).
    let mut opened: Vec<usize> = Vec::new();
    let mut out = Vec::with_capacity(expected);
    for &i in order {
        let g = groups.get(i).copied().unwrap_or(0);
        if !opened.contains(&g) {
            opened.push(g);
        }
        let buf = buffers.entry(g).or_default();
        buf.push(i);
        seen.entry(g).or_default().push(i);
        if buf.len() == batch_size {
            out.push(std::mem::take(buf));
            opened.retain(|&o| o != g);
            opened.push(g);
        }
    }
    complete(&mut out, expected, batch_size, &buffers, &seen, &opened);
    out
}

/// A stable hash of the groups (FNV-1a over each group id), for saved states.
pub(crate) fn groups_hash(groups: &[usize]) -> u64 {
    groups.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &g| {
        (g as u64)
            .to_le_bytes()
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    })
}

/// Completes the fullest leftover buffers (ties in the order they were opened, as Python's
/// stable sort of a dict does) with their group's samples, repeated as needed.
fn complete(
    out: &mut Vec<Vec<usize>>,
    expected: usize,
    batch_size: usize,
    buffers: &BTreeMap<usize, Vec<usize>>,
    seen: &BTreeMap<usize, Vec<usize>>,
    opened: &[usize],
) {
    let mut left: Vec<usize> = opened
        .iter()
        .copied()
        .filter(|g| buffers.get(g).is_some_and(|b| !b.is_empty()))
        .collect();
    left.sort_by_key(|g| std::cmp::Reverse(buffers[g].len()));
    for g in left {
        if out.len() >= expected {
            break;
        }
        let mut batch = buffers[&g].clone();
        let pool = &seen[&g];
        let need = batch_size - batch.len();
        batch.extend(pool.iter().cycle().take(need));
        out.push(batch);
    }
}
