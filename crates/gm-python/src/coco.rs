//! `gm.CocoDataset`: a COCO instances or keypoints file with its images, its targets as
//! host tensors in torchvision's layout, and the targets an `ImageLoader` batch moves with its
//! images.

use std::path::PathBuf;
use std::sync::Arc;

use gm_loader::coco::{CocoDataset as RustCoco, CocoTargets, EmptyImages, Rle};
use gm_transforms::targets::{BoundingBoxes, KeyPoints, Mask, TargetGeometry};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::GmError;
use crate::tensor::{Elem, Tensor};

/// A COCO annotation file and its image folder, as torchvision's `CocoDetection` wrapped for
/// transforms v2 reads it: `targets(i)` gives `boxes` (`float32 [N, 4]`, XYXY), `labels`
/// (`int64 [N]`, category ids), `masks` (`uint8 [N, H, W]`, exactly as pycocotools makes
/// them) where every object has an outline, `keypoints` (`float32 [N, K, 2]`) with
/// `keypoints_visible` (`bool [N, K]`) where the objects have them, and crowd regions apart
/// (`crowd_boxes`, `crowd_labels`). An image with a bad annotation raises `gm.GmError` naming
/// the file, image and annotation. As an `ImageLoader` source, each batch's `targets` holds
/// every image's targets moved with its pixels. `drop_empty=True` leaves out images without
/// objects (torchvision's detection references train without them).
#[pyclass(module = "gm", frozen)]
pub struct CocoDataset {
    pub(crate) inner: Arc<RustCoco>,
}

#[pymethods]
impl CocoDataset {
    #[new]
    #[pyo3(signature = (annotations, root, *, drop_empty=false))]
    fn new(
        py: Python<'_>,
        annotations: PathBuf,
        root: PathBuf,
        drop_empty: bool,
    ) -> PyResult<Self> {
        let empty = if drop_empty {
            EmptyImages::Drop
        } else {
            EmptyImages::Keep
        };
        let d = py.detach(|| RustCoco::open(&annotations, &root, empty));
        let d = d.map_err(|e| GmError::new_err(e.to_string()))?;
        Ok(CocoDataset { inner: Arc::new(d) })
    }

    fn __len__(&self) -> usize {
        gm_loader::Dataset::len(&*self.inner)
    }

    /// Image `i`'s record: `id`, `file_name`, `width`, `height`.
    fn image<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let im = self
            .inner
            .image(i)
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(format!("image {i}")))?;
        let d = PyDict::new(py);
        d.set_item("id", im.id)?;
        d.set_item("file_name", &im.file_name)?;
        d.set_item("width", im.width)?;
        d.set_item("height", im.height)?;
        Ok(d)
    }

    /// Image `i`'s targets on its own canvas.
    fn targets<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let t = self
            .inner
            .targets(i)
            .map_err(|e| GmError::new_err(e.to_string()))?;
        targets_dict(
            py,
            &t,
            &TargetGeometry::new(t.boxes.canvas.0, t.boxes.canvas.1),
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "gm.CocoDataset({} images, {})",
            gm_loader::Dataset::len(&*self.inner),
            self.inner.annotations().path.display()
        )
    }
}

/// Sample `index`'s targets moved through `geometry`, or `None` (with a warning) where its
/// annotations are bad: the image stays in the batch, its targets are missing, not wrong.
pub(crate) fn moved_targets(
    py: Python<'_>,
    d: &RustCoco,
    index: usize,
    geometry: &TargetGeometry,
) -> PyResult<Option<Py<PyDict>>> {
    match d.targets(index) {
        Ok(t) => Ok(Some(targets_dict(py, &t, geometry)?.unbind())),
        Err(e) => {
            tracing::warn!(sample = index, error = %e, "no targets for this image");
            Ok(None)
        }
    }
}

fn targets_dict<'py>(
    py: Python<'py>,
    t: &CocoTargets,
    g: &TargetGeometry,
) -> PyResult<Bound<'py, PyDict>> {
    let fail = |e: gm_transforms::targets::TargetError| GmError::new_err(e.to_string());
    // Objects a FixedSizeCrop left empty or a SanitizeBoundingBoxes dropped go with their
    // labels, masks and keypoints.
    let kept = g.kept(&t.boxes).map_err(fail)?;
    let d = PyDict::new(py);
    d.set_item("image_id", t.image_id)?;
    let mut moved = g.boxes(&t.boxes).map_err(fail)?;
    moved.boxes = pick(&moved.boxes, &kept, 1);
    d.set_item("boxes", boxes(py, &moved)?)?;
    d.set_item("labels", labels(py, &pick(&t.labels, &kept, 1))?)?;
    if let Some(m) = &t.masks {
        d.set_item("masks", masks(py, &pick(m, &kept, 1), g)?)?;
    }
    if let Some(k) = &t.keypoints {
        let mut moved = g.keypoints(k).map_err(fail)?;
        let per = t.keypoints_per_object;
        moved.points = pick(&moved.points, &kept, per);
        moved.visible = pick(&moved.visible, &kept, per);
        let (xy, vis) = keypoints(py, &moved, per)?;
        d.set_item("keypoints", xy)?;
        d.set_item("keypoints_visible", vis)?;
    }
    d.set_item(
        "crowd_boxes",
        boxes(py, &g.boxes(&t.crowd_boxes).map_err(fail)?)?,
    )?;
    d.set_item("crowd_labels", labels(py, &t.crowd_labels)?)?;
    Ok(d)
}

/// The items of the kept objects, `per` items an object.
fn pick<T: Clone>(items: &[T], kept: &[bool], per: usize) -> Vec<T> {
    items
        .chunks(per.max(1))
        .zip(kept)
        .filter(|(_, k)| **k)
        .flat_map(|(c, _)| c.iter().cloned())
        .collect()
}

fn boxes(py: Python<'_>, b: &BoundingBoxes) -> PyResult<Py<Tensor>> {
    let bytes = b
        .boxes
        .iter()
        .flatten()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    Py::new(
        py,
        Tensor::host(&[b.boxes.len(), 4], Elem::of(gm_cuda::DType::F32), bytes)?,
    )
}

fn labels(py: Python<'_>, l: &[i64]) -> PyResult<Py<Tensor>> {
    let bytes = l.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Py::new(py, Tensor::host(&[l.len()], Elem::I64, bytes)?)
}

fn masks(py: Python<'_>, rles: &[Rle], g: &TargetGeometry) -> PyResult<Py<Tensor>> {
    let (w, h) = g.canvas();
    let mut bytes = Vec::with_capacity(rles.len() * w as usize * h as usize);
    for r in rles {
        let m: Mask = g
            .mask(&r.to_mask())
            .map_err(|e| GmError::new_err(e.to_string()))?;
        bytes.extend_from_slice(&m.data);
    }
    Py::new(
        py,
        Tensor::host(
            &[rles.len(), h as usize, w as usize],
            Elem::of(gm_cuda::DType::U8),
            bytes,
        )?,
    )
}

fn keypoints(py: Python<'_>, k: &KeyPoints, per: usize) -> PyResult<(Py<Tensor>, Py<Tensor>)> {
    let n = k.points.len() / per.max(1);
    let xy = k
        .points
        .iter()
        .flatten()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let vis = k.visible.iter().map(|&v| u8::from(v)).collect();
    Ok((
        Py::new(
            py,
            Tensor::host(&[n, per, 2], Elem::of(gm_cuda::DType::F32), xy)?,
        )?,
        Py::new(py, Tensor::host(&[n, per], Elem::BOOL, vis)?)?,
    ))
}
