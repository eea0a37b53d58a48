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
/// their image and its COCO record (see there). `target_keys` (torchvision's wrapper's) keeps
/// only those keys in the dicts, `"all"` or `None` every one; without `"masks"` a loader does
/// not move masks at all.
#[pyclass(module = "gm", frozen)]
pub struct CocoDataset {
    pub(crate) inner: Arc<RustCoco>,
    pub(crate) keys: TargetKeys,
}

/// The keys a COCO dataset's target dicts can hold, in their order.
const KEYS: [&str; 8] = [
    "image_id",
    "boxes",
    "labels",
    "masks",
    "keypoints",
    "keypoints_visible",
    "crowd_boxes",
    "crowd_labels",
];

/// Which of [`KEYS`] a dataset's target dicts hold (torchvision's `target_keys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TargetKeys(u16);

impl TargetKeys {
    /// Every key.
    pub(crate) const ALL: TargetKeys = TargetKeys((1 << KEYS.len()) - 1);

    /// `target_keys` as given: `None` or `"all"` for every key, else names from [`KEYS`].
    fn parse(keys: Option<&Bound<'_, PyAny>>) -> PyResult<TargetKeys> {
        let Some(keys) = keys.filter(|k| !k.is_none()) else {
            return Ok(TargetKeys::ALL);
        };
        if let Ok(s) = keys.extract::<String>() {
            return match s.as_str() {
                "all" => Ok(TargetKeys::ALL),
                _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "target_keys: {s:?} is not \"all\" nor a list of keys ({})",
                    KEYS.join(", ")
                ))),
            };
        }
        let mut bits = 0;
        for k in keys.try_iter()? {
            let k: String = k?.extract()?;
            let at = KEYS.iter().position(|&name| name == k).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "target_keys: no key {k:?}; the keys are {}",
                    KEYS.join(", ")
                ))
            })?;
            bits |= 1 << at;
        }
        Ok(TargetKeys(bits))
    }

    /// Whether the dicts hold `key`.
    pub(crate) fn has(self, key: &str) -> bool {
        KEYS.iter()
            .position(|&name| name == key)
            .is_some_and(|at| self.0 & (1 << at) != 0)
    }
}

/// `mask_cache_mb`'s default: gm-loader's budget in MiB.
const DEFAULT_MASK_CACHE_MB: usize = gm_loader::coco::DEFAULT_MASK_CACHE_BYTES >> 20;

#[pymethods]
impl CocoDataset {
    #[new]
    #[pyo3(signature = (annotations, root, *, drop_empty=false, target_keys=None, mask_cache_mb=DEFAULT_MASK_CACHE_MB))]
    fn new(
        py: Python<'_>,
        annotations: PathBuf,
        root: PathBuf,
        drop_empty: bool,
        target_keys: Option<&Bound<'_, PyAny>>,
        mask_cache_mb: usize,
    ) -> PyResult<Self> {
        let keys = TargetKeys::parse(target_keys)?;
        let empty = if drop_empty {
            EmptyImages::Drop
        } else {
            EmptyImages::Keep
        };
        let d = py.detach(|| RustCoco::open(&annotations, &root, empty));
        let d = d.map_err(|e| GmError::new_err(e.to_string()))?;
        let d = d.mask_cache(mask_cache_mb.saturating_mul(1 << 20));
        Ok(CocoDataset {
            inner: Arc::new(d),
            keys,
        })
    }

    /// WebDataset shards (a pattern such as `s3://bucket/coco-{000..099}.tar`, or a list of
    /// shard paths or URLs) whose samples each hold an image and a `.json` record:
    /// `{"image": {"width": W, "height": H, "id": ..., "file_name": ...}, "annotations":
    /// [...]}` (id and file name optional), the annotations as in a COCO file. `categories`
    /// is a COCO file with the categories (the instances file will do). A sample without a
    /// usable record raises `gm.GmError` naming `shard#key` when its targets are asked for.
    /// `storage` as for `ImageLoader`.
    #[staticmethod]
    #[pyo3(signature = (shards, categories, *, drop_empty=false, storage=None, target_keys=None, mask_cache_mb=DEFAULT_MASK_CACHE_MB))]
    fn from_shards(
        py: Python<'_>,
        shards: &Bound<'_, PyAny>,
        categories: PathBuf,
        drop_empty: bool,
        storage: Option<&Bound<'_, PyDict>>,
        target_keys: Option<&Bound<'_, PyAny>>,
        mask_cache_mb: usize,
    ) -> PyResult<Self> {
        let keys = TargetKeys::parse(target_keys)?;
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
        let d = d.mask_cache(mask_cache_mb.saturating_mul(1 << 20));
        Ok(CocoDataset {
            inner: Arc::new(d),
            keys,
        })
    }

    fn __len__(&self) -> usize {
        gm_loader::Dataset::len(&*self.inner)
    }

    /// Bytes of object masks kept after their first rasterizing (`mask_cache_mb`).
    #[getter]
    fn mask_cache_bytes(&self) -> usize {
        self.inner.mask_cache_bytes()
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
            .moved_targets(i, &unmoved, self.keys.has("masks"))
            .map_err(|e| GmError::new_err(e.to_string()))?;
        moved_dict(py, moved, None, None, self.keys)
    }

    fn __repr__(&self) -> String {
        format!(
            "gm.CocoDataset({} images, {})",
            gm_loader::Dataset::len(&*self.inner),
            self.inner.annotations().path.display()
        )
    }
}

/// One image's target tensors but its masks: views of a GPU batch's uploaded buffer, or
/// host tensors made from the moved targets.
pub(crate) struct TargetTensors {
    boxes: Option<Tensor>,
    labels: Tensor,
    keypoints: Option<(Tensor, Tensor)>,
    crowd_boxes: Tensor,
    crowd_labels: Tensor,
}

impl TargetTensors {
    /// The views of `data` at `p` (a GPU stage's upload).
    pub(crate) fn on_device(data: &Tensor, p: &gm_loader::TargetPlaces) -> PyResult<Self> {
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
        Ok(TargetTensors {
            boxes: p.boxes.as_ref().map(|b| view(b, f32s)).transpose()?,
            labels: view(&p.labels, Elem::I64)?,
            keypoints,
            crowd_boxes: view(&p.crowd_boxes, f32s)?,
            crowd_labels: view(&p.crowd_labels, Elem::I64)?,
        })
    }

    /// Host tensors of `moved`.
    fn on_host(moved: &MovedCoco) -> PyResult<Self> {
        let keypoints = match &moved.keypoints {
            Some((k, per)) => Some(keypoints(k, *per)?),
            None => None,
        };
        Ok(TargetTensors {
            boxes: moved.boxes.as_ref().map(boxes).transpose()?,
            labels: labels(&moved.labels)?,
            keypoints,
            crowd_boxes: boxes(&moved.crowd_boxes)?,
            crowd_labels: labels(&moved.crowd_labels)?,
        })
    }
}

/// One image's moved targets as the dict `CocoDataset.targets` gives, on the moved canvas,
/// with only the dataset's `keys`; `masks` the moved masks where the loader moved them,
/// `uploaded` the rest where a GPU stage uploaded them (else host tensors are made here).
pub(crate) fn moved_dict(
    py: Python<'_>,
    moved: MovedCoco,
    masks: Option<Py<Tensor>>,
    uploaded: Option<TargetTensors>,
    keys: TargetKeys,
) -> PyResult<Py<PyDict>> {
    let t = match uploaded {
        Some(t) => t,
        None => TargetTensors::on_host(&moved)?,
    };
    let d = Keyed(PyDict::new(py), keys);
    d.set("image_id", || Ok(moved.image_id))?;
    if let Some(b) = t.boxes {
        d.set("boxes", || Py::new(py, b))?;
    }
    d.set("labels", || Py::new(py, t.labels))?;
    // Masks only where the objects have outlines: the loader's, else moved here.
    match (masks, moved.masks) {
        (Some(m), Some(_)) => d.set("masks", || Ok(m))?,
        (None, Some((n, bytes))) => d.set("masks", || {
            let (w, h) = moved.canvas;
            let shape = [n, h as usize, w as usize];
            Py::new(
                py,
                Tensor::host(&shape, Elem::of(gm_cuda::DType::U8), bytes)?,
            )
        })?,
        (_, None) => {}
    }
    if let Some((xy, vis)) = t.keypoints {
        d.set("keypoints", || Py::new(py, xy))?;
        d.set("keypoints_visible", || Py::new(py, vis))?;
    }
    d.set("crowd_boxes", || Py::new(py, t.crowd_boxes))?;
    d.set("crowd_labels", || Py::new(py, t.crowd_labels))?;
    Ok(d.0.unbind())
}

/// A target dict that takes only its dataset's keys.
struct Keyed<'py>(Bound<'py, PyDict>, TargetKeys);

impl<'py> Keyed<'py> {
    fn set<V: IntoPyObject<'py>>(
        &self,
        key: &str,
        value: impl FnOnce() -> PyResult<V>,
    ) -> PyResult<()> {
        if self.1.has(key) {
            self.0.set_item(key, value()?)?;
        }
        Ok(())
    }
}

fn boxes(b: &BoundingBoxes) -> PyResult<Tensor> {
    let bytes = b
        .boxes
        .iter()
        .flatten()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    Tensor::host(&[b.boxes.len(), 4], Elem::of(gm_cuda::DType::F32), bytes)
}

fn labels(l: &[i64]) -> PyResult<Tensor> {
    let bytes = l.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Tensor::host(&[l.len()], Elem::I64, bytes)
}

fn keypoints(k: &KeyPoints, per: usize) -> PyResult<(Tensor, Tensor)> {
    let n = k.points.len() / per.max(1);
    let xy = k
        .points
        .iter()
        .flatten()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let vis = k.visible.iter().map(|&v| u8::from(v)).collect();
    Ok((
        Tensor::host(&[n, per, 2], Elem::of(gm_cuda::DType::F32), xy)?,
        Tensor::host(&[n, per], Elem::BOOL, vis)?,
    ))
}
