//! `gm.SegmentationFolder`: JPEG images beside PNG label maps, each map as a host tensor, and
//! the map an `ImageLoader` batch moves with its image; and the targets sources a loader can
//! move ([`TargetSource`]).

use std::path::PathBuf;
use std::sync::Arc;

use gm_loader::coco::CocoDataset as RustCoco;
use gm_loader::segmentation::SegmentationFolder as RustFolder;
use gm_transforms::targets::{Mask, TargetGeometry};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::GmError;
use crate::tensor::{Elem, Tensor};

/// Images and their label maps for semantic segmentation, paired by path: `masks/a/b.png`
/// (`b<mask_suffix>.png`) belongs to `images/a/b.jpg`, as ADE20K and Pascal VOC lay them out.
/// `mask(i)` gives sample `i`'s class indices (`uint8 [H, W]`) from an 8-bit or packed grey
/// or palette PNG. As an `ImageLoader` source, each batch's `targets` holds each image's
/// `{"mask": uint8 [H, W]}` moved with its pixels (nearest; a `RandomCrop`'s padding filled
/// with its fill for masks, e.g. `fill={tv_tensors.Mask: 255, "others": 0}`).
#[pyclass(module = "gm", frozen)]
pub struct SegmentationFolder {
    pub(crate) inner: Arc<RustFolder>,
}

#[pymethods]
impl SegmentationFolder {
    #[new]
    #[pyo3(signature = (images, masks, *, mask_suffix=""))]
    fn new(py: Python<'_>, images: PathBuf, masks: PathBuf, mask_suffix: &str) -> PyResult<Self> {
        let d = py.detach(|| RustFolder::open(&images, &masks, mask_suffix));
        let d = d.map_err(|e| GmError::new_err(e.to_string()))?;
        Ok(SegmentationFolder { inner: Arc::new(d) })
    }

    fn __len__(&self) -> usize {
        gm_loader::Dataset::len(&*self.inner)
    }

    /// Sample `i`'s class indices, `uint8 [H, W]`.
    fn mask(&self, py: Python<'_>, i: usize) -> PyResult<Py<Tensor>> {
        let m = py.detach(|| self.inner.mask(i));
        let m = m.map_err(|e| GmError::new_err(e.to_string()))?;
        mask_tensor(py, m)
    }

    /// Sample `i`'s image and label map paths.
    fn paths(&self, i: usize) -> PyResult<(PathBuf, PathBuf)> {
        match (self.inner.image_path(i), self.inner.mask_path(i)) {
            (Some(a), Some(b)) => Ok((a.to_path_buf(), b.to_path_buf())),
            _ => Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "sample {i}"
            ))),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "gm.SegmentationFolder({} samples)",
            gm_loader::Dataset::len(&*self.inner)
        )
    }
}

fn mask_tensor(py: Python<'_>, m: Mask) -> PyResult<Py<Tensor>> {
    let shape = [m.height as usize, m.width as usize];
    Py::new(
        py,
        Tensor::host(&shape, Elem::of(gm_cuda::DType::U8), m.data)?,
    )
}

/// A loader source whose samples have targets to move with their images.
#[derive(Clone)]
pub(crate) enum TargetSource {
    Coco(Arc<RustCoco>),
    Segmentation(Arc<RustFolder>),
}

impl TargetSource {
    /// The targets source `source` is, if any.
    pub(crate) fn of(source: &Bound<'_, PyAny>) -> Option<TargetSource> {
        if let Ok(c) = source.cast::<crate::coco::CocoDataset>() {
            return Some(TargetSource::Coco(c.get().inner.clone()));
        }
        let s = source.cast::<SegmentationFolder>().ok()?;
        Some(TargetSource::Segmentation(s.get().inner.clone()))
    }

    /// The images, as the loader's dataset.
    pub(crate) fn dataset(&self) -> Arc<dyn gm_loader::Dataset> {
        match self {
            TargetSource::Coco(c) => c.clone(),
            TargetSource::Segmentation(s) => s.clone(),
        }
    }

    /// The targets of the batch's samples `indices`, each moved through its `geometry`,
    /// computed on up to `threads` threads without the GIL, then as dicts; `None` (with a
    /// warning) where they cannot be read: the image stays in the batch, its targets are
    /// missing, not wrong.
    pub(crate) fn moved_batch(
        &self,
        py: Python<'_>,
        indices: &[usize],
        geometry: &[TargetGeometry],
    ) -> PyResult<Vec<Option<Py<PyDict>>>> {
        let moved = py.detach(|| {
            parallel_map(
                indices.len(),
                |k| self.move_one(indices[k], &geometry[k]),
                || Err("the thread moving these targets failed".to_string()),
            )
        });
        moved
            .into_iter()
            .zip(indices)
            .map(|(m, &index)| match m {
                Ok(Moved::Coco(c)) => c.into_dict(py).map(Some),
                Ok(Moved::Mask(m)) => {
                    let out = PyDict::new(py);
                    out.set_item("mask", mask_tensor(py, m)?)?;
                    Ok(Some(out.unbind()))
                }
                Err(e) => {
                    tracing::warn!(sample = index, error = %e, "no targets for this image");
                    Ok(None)
                }
            })
            .collect()
    }

    fn move_one(&self, index: usize, geometry: &TargetGeometry) -> Result<Moved, String> {
        match self {
            TargetSource::Coco(c) => {
                crate::coco::move_targets(c, index, geometry).map(|m| Moved::Coco(Box::new(m)))
            }
            TargetSource::Segmentation(s) => {
                let m = s.mask(index).map_err(|e| e.to_string())?;
                geometry
                    .mask(&m)
                    .map(Moved::Mask)
                    .map_err(|e| format!("{}: {e}", gm_loader::Dataset::name(&**s, index)))
            }
        }
    }
}

/// One image's moved targets, before they become a dict.
enum Moved {
    Coco(Box<crate::coco::MovedCoco>),
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
