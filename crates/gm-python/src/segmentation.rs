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

    /// Sample `index`'s targets moved through `geometry`, or `None` (with a warning) where
    /// they cannot be read: the image stays in the batch, its targets are missing, not wrong.
    pub(crate) fn moved(
        &self,
        py: Python<'_>,
        index: usize,
        geometry: &TargetGeometry,
    ) -> PyResult<Option<Py<PyDict>>> {
        let d = match self {
            TargetSource::Coco(c) => return crate::coco::moved_targets(py, c, index, geometry),
            TargetSource::Segmentation(s) => s,
        };
        let moved = d
            .mask(index)
            .map_err(|e| e.to_string())
            .and_then(|m| geometry.mask(&m).map_err(|e| e.to_string()));
        match moved {
            Ok(m) => {
                let out = PyDict::new(py);
                out.set_item("mask", mask_tensor(py, m)?)?;
                Ok(Some(out.unbind()))
            }
            Err(e) => {
                let name = gm_loader::Dataset::name(&**d, index);
                tracing::warn!(sample = index, image = %name, error = %e, "no label map for this image");
                Ok(None)
            }
        }
    }
}
