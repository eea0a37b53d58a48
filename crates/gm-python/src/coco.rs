//! `gm.CocoDataset`: a COCO instances or keypoints file with its images, its targets as
//! host tensors in torchvision's layout, and the targets an `ImageLoader` batch moves with its
//! images.

use std::path::PathBuf;
use std::sync::Arc;

use gm_loader::coco::{CocoDataset as RustCoco, CocoShardsError, EmptyImages, MovedCoco};
use gm_transforms::targets::{BoundingBoxes, KeyPoints, TargetGeometry};
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
/// `CocoDataset.from_shards(shards, categories)` reads WebDataset shards whose samples carry
/// their image and its COCO record (see there).
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

    /// WebDataset shards (a pattern such as `s3://bucket/coco-{000..099}.tar`, or a list of
    /// shard paths or URLs) whose samples each hold an image and a `.json` record:
    /// `{"image": {"width": W, "height": H, "id": ..., "file_name": ...}, "annotations":
    /// [...]}` (id and file name optional), the annotations as in a COCO file. `categories`
    /// is a COCO file with the categories (the instances file will do). A sample without a
    /// usable record raises `gm.GmError` naming `shard#key` when its targets are asked for.
    /// `storage` as for `ImageLoader`.
    #[staticmethod]
    #[pyo3(signature = (shards, categories, *, drop_empty=false, storage=None))]
    fn from_shards(
        py: Python<'_>,
        shards: &Bound<'_, PyAny>,
        categories: PathBuf,
        drop_empty: bool,
        storage: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let empty = if drop_empty {
            EmptyImages::Drop
        } else {
            EmptyImages::Keep
        };
        let storage = crate::storage::from_dict(storage)?;
        let builder = crate::storage::shards_builder(shards, storage)?;
        let d = py.detach(|| RustCoco::from_shards(builder, &categories, empty));
        let d = d.map_err(|e| match e {
            CocoShardsError::Shards(e) => crate::storage::shard_error(e),
            CocoShardsError::Coco(e) => GmError::new_err(e.to_string()),
        })?;
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
    fn targets(&self, py: Python<'_>, i: usize) -> PyResult<Py<PyDict>> {
        let im = self
            .inner
            .image(i)
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(format!("image {i}")))?;
        let unmoved = TargetGeometry::new(im.width, im.height);
        let moved = self
            .inner
            .moved_targets(i, &unmoved, true)
            .map_err(|e| GmError::new_err(e.to_string()))?;
        moved_dict(py, moved, None, None)
    }

    fn __repr__(&self) -> String {
        format!(
            "gm.CocoDataset({} images, {})",
            gm_loader::Dataset::len(&*self.inner),
            self.inner.annotations().path.display()
        )
    }
}

/// One image's targets where a GPU stage uploaded them: views of the batch's targets buffer.
pub(crate) struct DeviceViews {
    boxes: Option<Tensor>,
    labels: Tensor,
    keypoints: Option<(Tensor, Tensor)>,
    crowd_boxes: Tensor,
    crowd_labels: Tensor,
}

impl DeviceViews {
    /// The views of `data` at `places`.
    pub(crate) fn of(data: &Tensor, p: &gm_loader::TargetPlaces) -> PyResult<DeviceViews> {
        let view = |place: &gm_loader::TargetPlace, elem: Elem| {
            data.typed_part(place.offset, &place.shape, elem)
                .ok_or_else(|| {
                    pyo3::exceptions::PyValueError::new_err(
                        "a batch's targets reach past their buffer",
                    )
                })
        };
        let f32s = Elem::of(gm_cuda::DType::F32);
        let keypoints = match (&p.keypoints, &p.keypoints_visible) {
            (Some(k), Some(v)) => Some((view(k, f32s)?, view(v, Elem::BOOL)?)),
            _ => None,
        };
        Ok(DeviceViews {
            boxes: p.boxes.as_ref().map(|b| view(b, f32s)).transpose()?,
            labels: view(&p.labels, Elem::I64)?,
            keypoints,
            crowd_boxes: view(&p.crowd_boxes, f32s)?,
            crowd_labels: view(&p.crowd_labels, Elem::I64)?,
        })
    }
}

/// One image's moved targets as the dict `CocoDataset.targets` gives, on the moved canvas;
/// `masks` the moved masks where the loader moved them, `uploaded` the rest where a GPU stage
/// uploaded them (else they are host tensors here).
pub(crate) fn moved_dict(
    py: Python<'_>,
    moved: MovedCoco,
    masks: Option<Py<Tensor>>,
    uploaded: Option<DeviceViews>,
) -> PyResult<Py<PyDict>> {
    if let Some(u) = uploaded {
        // Masks only where the objects have outlines, as below.
        let masks = masks.filter(|_| moved.masks.is_some());
        return device_dict(py, moved.image_id, masks, u);
    }
    let d = PyDict::new(py);
    d.set_item("image_id", moved.image_id)?;
    if let Some(b) = &moved.boxes {
        d.set_item("boxes", boxes(py, b)?)?;
    }
    d.set_item("labels", labels(py, &moved.labels)?)?;
    if let (Some(_), Some(m)) = (&moved.masks, masks) {
        d.set_item("masks", m)?;
    } else if let Some((n, bytes)) = moved.masks {
        let (w, h) = moved.canvas;
        let shape = [n, h as usize, w as usize];
        let t = Tensor::host(&shape, Elem::of(gm_cuda::DType::U8), bytes)?;
        d.set_item("masks", Py::new(py, t)?)?;
    }
    if let Some((k, per)) = &moved.keypoints {
        let (xy, vis) = keypoints(py, k, *per)?;
        d.set_item("keypoints", xy)?;
        d.set_item("keypoints_visible", vis)?;
    }
    d.set_item("crowd_boxes", boxes(py, &moved.crowd_boxes)?)?;
    d.set_item("crowd_labels", labels(py, &moved.crowd_labels)?)?;
    Ok(d.unbind())
}

/// [`moved_dict`] of targets on the device, in the same keys and order.
fn device_dict(
    py: Python<'_>,
    image_id: i64,
    masks: Option<Py<Tensor>>,
    u: DeviceViews,
) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    d.set_item("image_id", image_id)?;
    if let Some(b) = u.boxes {
        d.set_item("boxes", Py::new(py, b)?)?;
    }
    d.set_item("labels", Py::new(py, u.labels)?)?;
    if let Some(m) = masks {
        d.set_item("masks", m)?;
    }
    if let Some((xy, vis)) = u.keypoints {
        d.set_item("keypoints", Py::new(py, xy)?)?;
        d.set_item("keypoints_visible", Py::new(py, vis)?)?;
    }
    d.set_item("crowd_boxes", Py::new(py, u.crowd_boxes)?)?;
    d.set_item("crowd_labels", Py::new(py, u.crowd_labels)?)?;
    Ok(d.unbind())
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
