//! The share of the engine-capable images between the NVJPG engines and nvJPEG's CUDA
//! backend: how many the engines get, and the queue both ends of which they take from when
//! the share is decided at run time ([`Split::Balanced`]).

use super::options::{BackendChoice, Split};

/// The smallest chunk the engines take while the CUDA workers still take from the back: a
/// batched call spreads its images over the engines, so very small calls leave them idle.
pub(crate) const MIN_ENGINE_CHUNK: usize = 16;

/// The engines' queue of a batch, shared with the CUDA workers: the engines take chunks at
/// `front`, the workers single images below `back`, never below `floor` (the engines' share).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EngineQueue {
    front: usize,
    back: usize,
    floor: usize,
}

impl EngineQueue {
    /// A queue of `len` images of which the CUDA workers may take those at `floor` and above.
    pub(crate) fn new(len: usize, floor: usize) -> EngineQueue {
        EngineQueue {
            front: 0,
            back: len,
            floor,
        }
    }

    /// The next chunk for the engines: a third of what is left (a long first call, shorter
    /// ones as the two ends near, so neither side waits long for the other at the end), all of
    /// it in a fixed split.
    pub(crate) fn take_front(&mut self, balanced: bool) -> Option<std::ops::Range<usize>> {
        let left = self.back - self.front;
        if left == 0 {
            return None;
        }
        let n = if balanced {
            (left.div_ceil(3)).max(MIN_ENGINE_CHUNK).min(left)
        } else {
            left
        };
        let r = self.front..self.front + n;
        self.front += n;
        Some(r)
    }

    /// An image for a CUDA worker, from the back.
    pub(crate) fn take_back(&mut self) -> Option<usize> {
        if self.back > self.front.max(self.floor) {
            self.back -= 1;
            Some(self.back)
        } else {
            None
        }
    }

    /// Where the CUDA workers stopped: the images from here on were theirs.
    pub(crate) fn back(&self) -> usize {
        self.back
    }
}

/// How many of the `hw_total` engine-capable images the engines are given: all of them when
/// only the engines may decode, else `hw_load` of them, rounded.
pub(crate) fn engine_quota(backend: BackendChoice, hw_total: usize, hw_load: f32) -> usize {
    if backend == BackendChoice::Hardware {
        hw_total
    } else {
        (hw_total as f64 * f64::from(hw_load.clamp(0.0, 1.0))).round() as usize
    }
}

/// Whether the share is taken at run time: asked for, with both the engines and CUDA workers
/// here, every decoder allowed, and no batched GPU-Huffman call taking the CUDA share.
pub(crate) fn runs_balanced(
    split: &Split,
    backend: BackendChoice,
    hardware: bool,
    gpu_batched: bool,
    cuda_workers: usize,
) -> bool {
    split.is_balanced()
        && backend == BackendChoice::Auto
        && hardware
        && !gpu_batched
        && cuda_workers > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drains `q` the way the engines' thread and one CUDA worker would when they alternate:
    /// the engines' chunks and the workers' images.
    fn drain(q: &mut EngineQueue, balanced: bool) -> (Vec<std::ops::Range<usize>>, Vec<usize>) {
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            let f = q.take_front(balanced);
            let b = q.take_back();
            if f.is_none() && b.is_none() {
                return (front, back);
            }
            front.extend(f);
            back.extend(b);
        }
    }

    #[test]
    fn a_fixed_split_gives_the_engines_everything_in_one_call() {
        let mut q = EngineQueue::new(100, 100);
        assert_eq!(q.take_front(false), Some(0..100));
        assert_eq!(q.take_front(false), None);
        assert_eq!(q.take_back(), None);
        assert_eq!(q.back(), 100);
    }

    #[test]
    fn the_workers_never_take_below_the_engines_sure_share() {
        let mut q = EngineQueue::new(10, 6);
        let taken: Vec<usize> = std::iter::from_fn(|| q.take_back()).collect();
        assert_eq!(taken, [9, 8, 7, 6]);
        assert_eq!(q.back(), 6);
        // The engines then take what the workers left, in one chunk of at least 16.
        assert_eq!(q.take_front(true), Some(0..6));
        assert_eq!(q.take_front(true), None);
    }

    #[test]
    fn balanced_chunks_shrink_to_a_third_of_what_is_left_but_not_below_the_minimum() {
        let mut q = EngineQueue::new(300, 0);
        assert_eq!(q.take_front(true), Some(0..100));
        assert_eq!(q.take_front(true), Some(100..167));
        assert_eq!(q.take_front(true), Some(167..212));
        let mut q = EngineQueue::new(20, 0);
        assert_eq!(q.take_front(true), Some(0..16));
        assert_eq!(q.take_front(true), Some(16..20));
    }

    #[test]
    fn both_ends_together_take_every_image_exactly_once() {
        for (len, floor) in [(0, 0), (1, 0), (50, 0), (50, 25), (257, 100), (64, 64)] {
            let mut q = EngineQueue::new(len, floor);
            let (front, back) = drain(&mut q, true);
            let mut all: Vec<usize> = front
                .into_iter()
                .flatten()
                .chain(back.iter().copied())
                .collect();
            all.sort_unstable();
            assert_eq!(
                all,
                (0..len).collect::<Vec<_>>(),
                "len {len}, floor {floor}"
            );
            assert!(back.iter().all(|&b| b >= floor), "len {len}, floor {floor}");
            assert_eq!(q.back(), len - back.len());
        }
    }

    #[test]
    fn the_quota_rounds_the_share_and_the_hardware_backend_takes_all() {
        assert_eq!(engine_quota(BackendChoice::Auto, 10, 0.9), 9);
        assert_eq!(engine_quota(BackendChoice::Auto, 10, 0.85), 9);
        assert_eq!(engine_quota(BackendChoice::Auto, 10, 0.84), 8);
        assert_eq!(engine_quota(BackendChoice::Auto, 10, 1.7), 10);
        assert_eq!(engine_quota(BackendChoice::Auto, 10, -1.0), 0);
        assert_eq!(engine_quota(BackendChoice::Hardware, 10, 0.0), 10);
        assert_eq!(engine_quota(BackendChoice::Cuda, 7, 0.5), 4);
    }

    #[test]
    fn the_run_time_share_needs_every_piece() {
        let b = Split::Balanced { hw_load: 0.5 };
        assert!(runs_balanced(&b, BackendChoice::Auto, true, false, 2));
        assert!(!runs_balanced(&b, BackendChoice::Hardware, true, false, 2));
        assert!(!runs_balanced(&b, BackendChoice::Auto, false, false, 2));
        assert!(!runs_balanced(&b, BackendChoice::Auto, true, true, 2));
        assert!(!runs_balanced(&b, BackendChoice::Auto, true, false, 0));
        let f = Split::Fixed { hw_load: 0.5 };
        assert!(!runs_balanced(&f, BackendChoice::Auto, true, false, 2));
    }
}
