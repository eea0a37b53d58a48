//! Objects' masks kept as runs after their first rasterizing. A COCO polygon is walked at
//! five times its image's resolution to give pycocotools' runs: about 60 µs an image of a
//! host worker's time on the detection bench's photos, every epoch, where everything else a
//! worker does for a COCO sample takes a few µs. The runs are a few hundred bytes an object,
//! so most datasets' masks fit in host memory; a budget bounds what a large one keeps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::Rle;

/// The default budget: 512 MiB of runs a process (COCO's train2017, about 860k objects,
/// needs about twice that; smaller datasets fit whole).
pub const DEFAULT_MASK_CACHE_BYTES: usize = 512 << 20;

/// One image's masks: its objects' and its crowd regions' (as `CocoTargets` holds them).
pub(crate) type ImageMasks = (Option<Vec<Rle>>, Option<Vec<Rle>>);

/// Each image's masks, set once by the first sample that rasterizes them while they fit the
/// budget, never evicted (so a large dataset keeps the images it met first). The runs kept
/// are the ones rasterizing gives, so a batch does not depend on what is cached.
pub(crate) struct MaskCache {
    images: Vec<OnceLock<Arc<ImageMasks>>>,
    used: AtomicUsize,
    budget: usize,
}

impl MaskCache {
    /// Room for `images` images' masks, at most `budget` bytes of them.
    pub(crate) fn new(images: usize, budget: usize) -> MaskCache {
        MaskCache {
            images: (0..images).map(|_| OnceLock::new()).collect(),
            used: AtomicUsize::new(0),
            budget,
        }
    }

    /// Image `i`'s masks, if kept.
    pub(crate) fn get(&self, i: usize) -> Option<Arc<ImageMasks>> {
        self.images.get(i)?.get().cloned()
    }

    /// Keeps image `i`'s masks if they fit what is left of the budget.
    pub(crate) fn offer(&self, i: usize, masks: &ImageMasks) {
        let Some(slot) = self.images.get(i) else {
            return;
        };
        if slot.get().is_some() {
            return;
        }
        let bytes = held_bytes(masks);
        let fits = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + bytes <= self.budget).then_some(used + bytes)
            })
            .is_ok();
        // Two workers may rasterize the same image at once; the second's bytes go back.
        if fits && slot.set(Arc::new(masks.clone())).is_err() {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
        }
    }

    /// Bytes of runs kept.
    pub(crate) fn bytes(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for MaskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaskCache")
            .field("images", &self.images.len())
            .field("bytes", &self.bytes())
            .field("budget", &self.budget)
            .finish()
    }
}

/// What `masks` hold in memory: each mask's counts and its header.
fn held_bytes((objects, crowd): &ImageMasks) -> usize {
    objects
        .iter()
        .chain(crowd)
        .flatten()
        .map(|r| std::mem::size_of::<Rle>() + 4 * r.counts.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(counts: usize) -> ImageMasks {
        let rle = Rle {
            height: 4,
            width: 4,
            counts: vec![1; counts],
        };
        (Some(vec![rle.clone(), rle]), None)
    }

    #[test]
    fn images_are_kept_while_they_fit_and_once() {
        let one = held_bytes(&masks(10));
        let cache = MaskCache::new(3, 2 * one);
        cache.offer(0, &masks(10));
        cache.offer(0, &masks(10));
        assert_eq!(cache.bytes(), one);
        cache.offer(1, &masks(10));
        cache.offer(2, &masks(10));
        assert_eq!(cache.bytes(), 2 * one);
        assert_eq!(cache.get(0).as_deref(), Some(&masks(10)));
        assert!(cache.get(1).is_some() && cache.get(2).is_none() && cache.get(7).is_none());
        let none = MaskCache::new(3, 0);
        none.offer(0, &masks(1));
        assert!(none.get(0).is_none());
    }
}
