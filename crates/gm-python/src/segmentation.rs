//! `gm.SegmentationFolder`: JPEG images beside PNG label maps, each map as a host tensor (an
//! `ImageLoader` batch moves it with its image: `crate::targets`).

use std::path::PathBuf;
use std::sync::Arc;

use gm_loader::segmentation::SegmentationFolder as RustFolder;
use gm_transforms::targets::Mask;
use pyo3::prelude::*;

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

pub(crate) fn mask_tensor(py: Python<'_>, m: Mask) -> PyResult<Py<Tensor>> {
    let shape = [m.height as usize, m.width as usize];
    Py::new(
        py,
        Tensor::host(&shape, Elem::of(gm_cuda::DType::U8), m.data)?,
    )
}
