//! `gm.CocoDataset`: a COCO instances or keypoints file with its images, its targets as
//! host tensors in torchvision's layout, and the targets an `ImageLoader` batch moves with its
//! images.

use std::path::PathBuf;
use std::sync::Arc;

use gm_loader::coco::{CocoDataset as RustCoco, CocoShardsError, CocoTargets, EmptyImages};
use gm_transforms::apply::{MovedTargets, Targets};
use gm_transforms::targets::{BoundingBoxes, KeyPoints, Mask, TargetGeometry, kept_objects};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::GmError;
use crate::targets::TargetsError;
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
        move_targets(&self.inner, i, &unmoved, true)
            .map_err(|e| GmError::new_err(e.to_string()))?
            .into_dict(py, None)
    }

    fn __repr__(&self) -> String {
        format!(
            "gm.CocoDataset({} images, {})",
            gm_loader::Dataset::len(&*self.inner),
            self.inner.annotations().path.display()
        )
    }
}

/// One image's COCO targets moved onto its output canvas, computed without Python (so that a
/// batch's images move theirs on several threads) and turned into a dict after.
pub(crate) struct MovedCoco {
    image_id: i64,
    /// Always there: every image's boxes are given to the move.
    boxes: Option<BoundingBoxes>,
    labels: Vec<i64>,
    /// The kept objects' masks, object after object, on the output canvas; empty bytes
    /// where the loader moved them (`into_dict` is then given them).
    masks: Option<(usize, Vec<u8>)>,
    /// The kept objects' keypoints, and how many each has.
    keypoints: Option<(KeyPoints, usize)>,
    crowd_boxes: BoundingBoxes,
    crowd_labels: Vec<i64>,
    canvas: (u32, u32),
}

/// Sample `index`'s targets moved through `geometry`, or why not; its masks only
/// `with_masks` (else the loader moved them with the pixels).
pub(crate) fn move_targets(
    d: &RustCoco,
    index: usize,
    g: &TargetGeometry,
    with_masks: bool,
) -> Result<MovedCoco, TargetsError> {
    let t: CocoTargets = if with_masks {
        d.targets(index)?
    } else {
        d.targets_without_masks(index)?
    };
    let fail = |source| TargetsError::Moved {
        image: gm_loader::Dataset::name(d, index),
        source,
    };
    // Objects a FixedSizeCrop left empty or a SanitizeBoundingBoxes dropped go with their
    // labels, masks and keypoints. The masks are decoded only for the objects kept.
    let parts = Targets {
        boxes: Some(t.boxes.clone()),
        masks: Vec::new(),
        keypoints: t.keypoints.clone(),
        keypoints_per_object: t.keypoints_per_object,
    };
    let MovedTargets {
        kept,
        boxes,
        keypoints,
        ..
    } = gm_transforms::apply::move_targets(g, &parts).map_err(fail)?;
    let masks = match &t.masks {
        Some(m) => {
            let mut bytes = Vec::new();
            for r in kept_objects(m, &kept, 1) {
                let moved: Mask = g.mask(&r.to_mask()).map_err(fail)?;
                bytes.extend_from_slice(&moved.data);
            }
            Some((kept.iter().filter(|k| **k).count(), bytes))
        }
        None => None,
    };
    Ok(MovedCoco {
        image_id: t.image_id,
        boxes,
        labels: kept_objects(&t.labels, &kept, 1),
        masks,
        keypoints: keypoints.map(|k| (k, t.keypoints_per_object)),
        crowd_boxes: g.boxes(&t.crowd_boxes).map_err(fail)?,
        crowd_labels: t.crowd_labels,
        canvas: g.canvas(),
    })
}

impl MovedCoco {
    /// The dict `CocoDataset.targets` gives, on the moved canvas; `masks` the moved masks
    /// where the loader moved them.
    pub(crate) fn into_dict(
        self,
        py: Python<'_>,
        masks: Option<Py<Tensor>>,
    ) -> PyResult<Py<PyDict>> {
        let d = PyDict::new(py);
        d.set_item("image_id", self.image_id)?;
        if let Some(b) = &self.boxes {
            d.set_item("boxes", boxes(py, b)?)?;
        }
        d.set_item("labels", labels(py, &self.labels)?)?;
        if let (Some(_), Some(m)) = (&self.masks, masks) {
            d.set_item("masks", m)?;
        } else if let Some((n, bytes)) = self.masks {
            let (w, h) = self.canvas;
            let shape = [n, h as usize, w as usize];
            let t = Tensor::host(&shape, Elem::of(gm_cuda::DType::U8), bytes)?;
            d.set_item("masks", Py::new(py, t)?)?;
        }
        if let Some((k, per)) = &self.keypoints {
            let (xy, vis) = keypoints(py, k, *per)?;
            d.set_item("keypoints", xy)?;
            d.set_item("keypoints_visible", vis)?;
        }
        d.set_item("crowd_boxes", boxes(py, &self.crowd_boxes)?)?;
        d.set_item("crowd_labels", labels(py, &self.crowd_labels)?)?;
        Ok(d.unbind())
    }
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
