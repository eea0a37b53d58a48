//! The loader sources whose samples have targets (COCO, segmentation folders), and a batch's
//! targets moved with its images: computed on host threads without the GIL, then as the
//! dicts `batch.targets` holds.

use std::sync::Arc;

use gm_loader::MovedSample;
use gm_loader::coco::{CocoDataset as RustCoco, CocoError, MovedCoco};
use gm_loader::segmentation::{SegmentationError, SegmentationFolder as RustFolder};
use gm_transforms::targets::{Mask, TargetError, TargetGeometry};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::coco::{TargetKeys, TargetTensors};
use crate::image_loader::OnDevice;
use crate::segmentation::{SegmentationFolder, mask_tensor};
use crate::tensor::Tensor;

/// Why one image's targets could not be moved (the image stays in its batch without them).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TargetsError {
    /// Its COCO annotations are bad.
    #[error(transparent)]
    Coco(#[from] CocoError),
    /// Its label map cannot be read.
    #[error(transparent)]
    Segmentation(#[from] SegmentationError),
    /// Its targets do not fit its geometry (another canvas than the image's).
    #[error("{image}: {source}")]
    Moved {
        /// The image.
        image: String,
        /// Why.
        source: TargetError,
    },
    /// The thread moving them died.
    #[error("the thread moving these targets failed")]
    Lost,
}

/// A loader source whose samples have targets to move with their images.
#[derive(Clone)]
pub(crate) enum TargetSource {
    /// A COCO dataset and the keys its dicts hold.
    Coco(Arc<RustCoco>, TargetKeys),
    Segmentation(Arc<RustFolder>),
}

impl TargetSource {
    /// The targets source `source` is, if any.
    pub(crate) fn of(source: &Bound<'_, PyAny>) -> Option<TargetSource> {
        if let Ok(c) = source.cast::<crate::coco::CocoDataset>() {
            let c = c.get();
            return Some(TargetSource::Coco(c.inner.clone(), c.keys));
        }
        let s = source.cast::<SegmentationFolder>().ok()?;
        Some(TargetSource::Segmentation(s.get().inner.clone()))
    }

    /// Whether the targets have masks to move (a label map's; COCO's outlines unless the
    /// dataset's keys leave them out).
    pub(crate) fn moves_masks(&self) -> bool {
        match self {
            TargetSource::Coco(_, keys) => keys.has("masks"),
            TargetSource::Segmentation(_) => true,
        }
    }

    /// The images, as the loader's dataset.
    pub(crate) fn dataset(&self) -> Arc<dyn gm_loader::Dataset> {
        match self {
            TargetSource::Coco(c, _) => c.clone(),
            TargetSource::Segmentation(s) => s.clone(),
        }
    }

    /// The targets of the batch's samples `indices`, each moved through its `geometry`,
    /// computed (where masks move here, on up to [`TARGET_THREADS`] threads without the GIL),
    /// then as dicts; `None` (with a warning) where they cannot be read: the image stays in
    /// the batch, its targets are missing, not wrong. `masks`: each image's masks where the
    /// loader moved them with the pixels (they are then not moved here); `ready`: the targets
    /// the loader's stages moved (all but masks), and on a GPU loader where they uploaded
    /// them, used where nothing else is left to move.
    pub(crate) fn moved_batch(
        &self,
        py: Python<'_>,
        indices: &[usize],
        geometry: &[TargetGeometry],
        masks: Option<Vec<Py<Tensor>>>,
        ready: Option<(Vec<MovedSample>, Option<&OnDevice>)>,
    ) -> PyResult<Vec<Option<Py<PyDict>>>> {
        let with_masks = masks.is_none() && self.moves_masks();
        // The stages moved all but masks: enough where the loader moved the masks or there
        // are none.
        let outlines = |r: &Vec<MovedSample>| {
            r.iter()
                .any(|m| m.as_ref().is_ok_and(|c| c.masks.is_some()))
        };
        let mut device = None;
        let moved = if let Some((ready, on)) = ready.filter(|(r, _)| !with_masks || !outlines(r)) {
            // Moved on the loader's stages while the GPU ran the batch.
            device = on;
            ready
                .into_iter()
                .map(|m| {
                    m.map(|c| Moved::Coco(Box::new(c)))
                        .map_err(TargetsError::from)
                })
                .collect()
        } else if !with_masks && matches!(self, TargetSource::Segmentation(_)) {
            // Nothing left to move: the loader moved the maps.
            (0..indices.len())
                .map(|_| Ok(Moved::Mask(Mask::default())))
                .collect()
        } else if !with_masks {
            // Boxes, labels and keypoints: microseconds a batch, less than starting threads
            // on a host whose cores the loader keeps busy (2026-11-29, the build machine's
            // CPU loader on 2 cores: 290 -> 19 µs an image in `batch.targets`).
            (0..indices.len())
                .map(|k| self.move_one(indices[k], &geometry[k], false))
                .collect()
        } else {
            py.detach(|| {
                parallel_map(
                    indices.len(),
                    |k| self.move_one(indices[k], &geometry[k], with_masks),
                    || Err(TargetsError::Lost),
                )
            })
        };
        let keys = match self {
            TargetSource::Coco(_, keys) => *keys,
            TargetSource::Segmentation(_) => TargetKeys::ALL,
        };
        let mut masks = masks.map(Vec::into_iter);
        moved
            .into_iter()
            .zip(indices)
            .enumerate()
            .map(|(k, (m, &index))| match m {
                Ok(Moved::Coco(c)) => {
                    let view = masks.as_mut().and_then(Iterator::next);
                    let uploaded = match device.map(|(data, places)| (data, places.get(k))) {
                        Some((data, Some(Some(p)))) => Some(TargetTensors::on_device(data, p)?),
                        _ => None,
                    };
                    crate::coco::moved_dict(py, *c, view, uploaded, keys).map(Some)
                }
                Ok(Moved::Mask(m)) => {
                    let out = PyDict::new(py);
                    match masks.as_mut().and_then(Iterator::next) {
                        Some(view) => out.set_item("mask", view)?,
                        None => out.set_item("mask", mask_tensor(py, m)?)?,
                    }
                    Ok(Some(out.unbind()))
                }
                Err(e) => {
                    masks.as_mut().and_then(Iterator::next);
                    tracing::warn!(sample = index, error = %e, "no targets for this image");
                    Ok(None)
                }
            })
            .collect()
    }

    fn move_one(
        &self,
        index: usize,
        geometry: &TargetGeometry,
        with_masks: bool,
    ) -> Result<Moved, TargetsError> {
        match self {
            TargetSource::Coco(c, _) => c
                .moved_targets(index, geometry, with_masks)
                .map(|m| Moved::Coco(Box::new(m)))
                .map_err(TargetsError::from),
            TargetSource::Segmentation(s) => {
                let m = s.mask(index)?;
                geometry
                    .mask(&m)
                    .map(Moved::Mask)
                    .map_err(|source| TargetsError::Moved {
                        image: gm_loader::Dataset::name(&**s, index),
                        source,
                    })
            }
        }
    }
}

/// One image's moved targets, before they become a dict.
enum Moved {
    Coco(Box<MovedCoco>),
    Mask(Mask),
}

/// Host threads moving one batch's targets: masks are a pass over each object's pixels.
const TARGET_THREADS: usize = 8;

/// `f(0..n)` on up to [`TARGET_THREADS`] scoped threads, in order; an item whose thread
/// died is `lost()` rather than dropped (so that items stay with their images).
fn parallel_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync, lost: impl Fn() -> T) -> Vec<T> {
    let threads = n.clamp(1, TARGET_THREADS);
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<T>> = (0..n).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if k >= n {
                            break mine;
                        }
                        mine.push((k, f(k)));
                    }
                })
            })
            .collect();
        for (k, t) in workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
        {
            slots[k] = Some(t);
        }
    });
    slots.into_iter().map(|t| t.unwrap_or_else(&lost)).collect()
}
