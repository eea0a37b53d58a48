//! `gm.ImageLoader`: the Rust image loader behind a PyTorch-style iterable, with the
//! `state_dict`/`load_state_dict` convention of torchdata's StatefulDataLoader.

use std::sync::Arc;

use gm_codec::jpeg::DecoderOptions;
use gm_loader::shards::{StreamOptions, WebDatasetStream};
use gm_loader::{
    BadSamplePolicy, Batch as RustBatch, BatchSizes, CorePlan, DeviceCache, Images, Loader, Sampler,
};
use parking_lot::Mutex;
use pyo3::exceptions::{PyStopIteration, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::device::{self, Placement};
use crate::errors::loader_error;
use crate::iteration::{Inner, next_batch};
use crate::logging;
use crate::owner::Owner;
use crate::stats::stats_dict;
use crate::targets::TargetSource;
use crate::tensor::{Elem, Tensor, Uploads};

/// Loads batches of images from a folder of class subfolders (ImageFolder) or a list file
/// ("path label" per line), decoding on the GPU's JPEG engines, nvJPEG's CUDA backend and the
/// CPU at once, and running the transforms as one fused kernel.
///
/// `source` may be a URL (`s3://`, `gs://`, `az://`, `http(s)://`): a prefix (ending in `/`,
/// or naming no object) lists as an ImageFolder, an object is read as a list file. `storage`
/// configures the stores: object_store keys (`endpoint`, `region`, `allow_http`, ...) and
/// gm's (`concurrency`, `retries`, `timeout`, `connect_timeout`, ...), after the environment.
///
/// Iterating yields `Batch`es whose `images` and `labels` are `gm.Tensor`s on the GPU (or in
/// host memory on the CPU path); `torch.from_dlpack` takes them without a copy.
///
/// `stream=True` reads WebDataset shards (`.tar` or `.tar.gz`, a pattern or a list) front to
/// back with no index, as `webdataset` does: a seeded shard order split across ranks, in
/// `streams` streams each with a shuffle buffer of `shuffle_buffer` samples (1 without
/// `shuffle`) that draws once it holds `shuffle_initial` and grows as it draws;
/// `batch_sizes` says how a batch holds images whose outputs differ in size (a chain ending
/// in `Resize(size, max_size=...)`, `RandomShortestSize` or `ScaleJitter`, as detection
/// trains): `"uniform"` (one size; another is a bad sample), `"padded"` (one tensor of the
/// largest height and width, each rounded up to `size_divisible`, the rest `pad_value`, as
/// torchvision's `GeneralizedRCNNTransform` batches; `valid_mask()` marks the images) or
/// `"ragged"` (`images` is a list of tensors of their own sizes, views of one buffer).
/// Batches give each image's `(height, width)` in `image_sizes`. `batch_groups` (a group per
/// sample) or `aspect_ratio_group_factor` (a `gm.CocoDataset` source, grouped by its images'
/// aspect ratios as torchvision's `create_aspect_ratio_groups`) make batches of one group at a
/// time, as torchvision's `GroupedBatchSampler`.
///
/// `epoch_batches` fixes the batches per epoch (the data repeats), else an epoch is one pass
/// and has no `len()`. Batches say each image's `shard#key` in `names`.
/// `state_dict()` resumes a streamed epoch exactly. `drop_last` does not apply.
#[pyclass(module = "gm")]
pub struct ImageLoader {
    inner: Arc<Mutex<Inner<Loader>>>,
    /// The COCO source, whose targets each batch moves with its images.
    targets: Option<TargetSource>,
    batches: Option<usize>,
    on_gpu: bool,
    placement: String,
}

/// Iterates one epoch of an `ImageLoader`.
#[pyclass(module = "gm")]
pub struct BatchIterator {
    inner: Arc<Mutex<Inner<Loader>>>,
    targets: Option<TargetSource>,
    generation: u64,
}

/// One batch: `images` (`[B, C, H, W]`, or `[B, H, W, C]`; with `batch_sizes="ragged"` a
/// list of `[C, h, w]` tensors), `image_sizes` (each image's `(height, width)`), `labels`
/// (`int64 [B]`), with
/// `mix=` the `soft_labels` (`float32 [B, num_classes]`), the dataset `indices` of the
/// images, the `epoch` and the batch's `position` in it. Unpacks as `images, labels = batch`
/// (the soft labels when mixing, as torchvision's MixUp/CutMix return them).
#[pyclass(module = "gm", frozen)]
pub struct Batch {
    /// The images: one tensor, or a list of them for a ragged batch.
    #[pyo3(get)]
    images: Py<PyAny>,
    /// Each image's own `(height, width)` (inside its slot in a padded batch).
    #[pyo3(get)]
    image_sizes: Vec<(u32, u32)>,
    /// The images are `[B, H, W, C]`.
    channels_last: bool,
    /// The labels.
    #[pyo3(get)]
    labels: Py<Tensor>,
    /// With `mix=`: the mixed labels, `float32 [B, num_classes]` beside the images; else
    /// `None`.
    #[pyo3(get)]
    soft_labels: Option<Py<Tensor>>,
    /// Dataset index of each image (a substitute shows its own index).
    #[pyo3(get)]
    indices: Vec<usize>,
    /// With `stream=True`: each image's `shard#key`; else `None`.
    #[pyo3(get)]
    names: Option<Vec<String>>,
    /// The epoch.
    #[pyo3(get)]
    epoch: u64,
    /// Position of the batch in its epoch, from 0.
    #[pyo3(get)]
    position: usize,
    /// The targets (see the `targets` getter), moved when first read: a loop that reads only
    /// `masks` does not pay for the dicts.
    targets: PyOnceLock<Option<Vec<Option<Py<PyDict>>>>>,
    /// What moving them needs (`None` without a targets source).
    pending: Option<PendingTargets>,
    /// With a `gm.SegmentationFolder` source and images of one size: the label maps moved
    /// with them as one `uint8 [B, H, W]` tensor (the same memory as each target's `mask`),
    /// as the segmentation references' collate stacks them; else `None`.
    #[pyo3(get)]
    masks: Option<Py<Tensor>>,
}

/// `batch_sizes=` and its padding as the loader's setting.
fn sizes_named(name: &str, size_divisible: u32, pad_value: f32) -> PyResult<BatchSizes> {
    match name {
        "uniform" => Ok(BatchSizes::Uniform),
        "ragged" => Ok(BatchSizes::Ragged),
        "padded" if size_divisible >= 1 => Ok(BatchSizes::Padded {
            multiple: size_divisible,
            fill: pad_value,
        }),
        "padded" => Err(PyValueError::new_err("size_divisible must be at least 1")),
        other => Err(PyValueError::new_err(format!(
            "batch_sizes={other:?}: expected \"uniform\", \"padded\" or \"ragged\""
        ))),
    }
}

pub(crate) fn policy_named(name: &str) -> PyResult<BadSamplePolicy> {
    match name {
        "skip" => Ok(BadSamplePolicy::Skip),
        "substitute" => Ok(BadSamplePolicy::Substitute),
        "fail" => Ok(BadSamplePolicy::Fail),
        other => Err(PyValueError::new_err(format!(
            "bad_samples={other:?}: \"skip\", \"substitute\" or \"fail\""
        ))),
    }
}

/// The chain and, when it ends in `RandomErasing`, the erasing the loader runs after it.
pub(crate) fn plan_steps_erasing(
    py: Python<'_>,
    transforms: Option<&Bound<'_, PyAny>>,
) -> PyResult<(gm_transforms::Compose, Option<gm_transforms::RandomErasing>)> {
    let planner = py.import("gm.transforms")?;
    // No transforms still plans: the output is CHW uint8, as torchvision's images.
    let steps = match transforms {
        Some(t) if !t.is_none() => planner.call_method1("_plan", (t,))?,
        _ => planner.call_method1("_plan", (pyo3::types::PyList::empty(py),))?,
    };
    let mut steps: Vec<Bound<'_, PyTuple>> = steps.extract()?;
    let last_is_erasing = match steps.last() {
        Some(s) => s.get_item(0)?.extract::<String>()? == "random_erasing",
        None => false,
    };
    let erasing = match steps.pop_if(|_| last_is_erasing) {
        Some(step) => Some(crate::transforms::erasing(&step)?),
        None => None,
    };
    Ok((crate::transforms::compose(&steps)?, erasing))
}

/// Rank and world size when the caller gave both; `None` when neither (the launcher's
/// environment decides).
fn given_ranks(rank: Option<usize>, world: Option<usize>) -> PyResult<Option<(usize, usize)>> {
    match (rank, world) {
        (Some(r), Some(w)) => Ok(Some((r, w))),
        (None, None) => Ok(None),
        _ => Err(PyValueError::new_err(
            "give both rank and world_size, or neither (then RANK/WORLD_SIZE are read)",
        )),
    }
}

pub(crate) fn sampler_for(
    py: Python<'_>,
    shuffle: bool,
    seed: u64,
    rank: Option<usize>,
    world_size: Option<usize>,
    drop_last: bool,
) -> PyResult<Sampler> {
    let s = if shuffle {
        Sampler::shuffled(seed)
    } else {
        Sampler::sequential()
    };
    let sharded = match given_ranks(rank, world_size)? {
        Some((r, w)) => s.sharded(r, w, drop_last),
        None => s.sharded_from_env(drop_last),
    };
    sharded.map_err(|e| loader_error(py, e))
}

#[pymethods]
impl ImageLoader {
    #[new]
    #[pyo3(signature = (
        source, batch_size=32, transforms=None, *, shuffle=false, seed=0, device=None,
        rank=None, world_size=None, drop_last=false, bad_samples="skip", workers=None, stages=None,
        prefetch=2, device_cache=None, prefetch_next_epoch=true, progress=None, mix=None,
        truncated="refuse", storage=None, cores=None, stream=false, shuffle_buffer=1000,
        shuffle_initial=100, streams=4, epoch_batches=None, batch_sizes="uniform",
        size_divisible=32, pad_value=0.0, batch_groups=None, aspect_ratio_group_factor=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        batch_size: usize,
        transforms: Option<&Bound<'_, PyAny>>,
        shuffle: bool,
        seed: u64,
        device: Option<&Bound<'_, PyAny>>,
        rank: Option<usize>,
        world_size: Option<usize>,
        drop_last: bool,
        bad_samples: &str,
        workers: Option<usize>,
        stages: Option<usize>,
        prefetch: usize,
        device_cache: Option<u32>,
        prefetch_next_epoch: bool,
        progress: Option<&Bound<'_, PyAny>>,
        mix: Option<&Bound<'_, PyAny>>,
        truncated: &str,
        storage: Option<&Bound<'_, PyDict>>,
        cores: Option<usize>,
        stream: bool,
        shuffle_buffer: usize,
        shuffle_initial: usize,
        streams: usize,
        epoch_batches: Option<usize>,
        batch_sizes: &str,
        size_divisible: u32,
        pad_value: f32,
        batch_groups: Option<Vec<usize>>,
        aspect_ratio_group_factor: Option<usize>,
    ) -> PyResult<ImageLoader> {
        let sizes = sizes_named(batch_sizes, size_divisible, pad_value)?;
        let groups = match (batch_groups, aspect_ratio_group_factor) {
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err(
                    "batch_groups or aspect_ratio_group_factor, not both",
                ));
            }
            (Some(g), None) => Some(g),
            (None, Some(k)) => match source.cast::<crate::coco::CocoDataset>() {
                Ok(c) => Some(c.get().inner.aspect_ratio_groups(k)),
                Err(_) => {
                    return Err(PyValueError::new_err(
                        "aspect_ratio_group_factor groups a gm.CocoDataset's images by their \
                         records' sizes; for another source give batch_groups",
                    ));
                }
            },
            (None, None) => None,
        };
        if stream && groups.is_some() {
            return Err(PyValueError::new_err(
                "batch groups need samples by index; stream=True reads shards front to back",
            ));
        }
        logging::sync_level(py)?;
        let targets = TargetSource::of(source);
        if targets.is_some() && stream {
            return Err(PyValueError::new_err(
                "stream=True reads WebDataset shards; a gm.CocoDataset or gm.SegmentationFolder \
                 is read by index",
            ));
        }
        let truncated = crate::decode::parse_truncated(truncated)?;
        let storage = crate::storage::from_dict(storage)?;
        let start = if stream {
            let mut options = StreamOptions {
                seed,
                streams,
                batch_size,
                shuffle_buffer: if shuffle { shuffle_buffer } else { 1 },
                shuffle_initial,
                epoch_batches,
                ..StreamOptions::default()
            };
            options = match given_ranks(rank, world_size)? {
                Some((r, w)) => StreamOptions {
                    rank: r,
                    world_size: w,
                    ..options
                },
                None => options.ranks_from_env().map_err(|e| loader_error(py, e))?,
            };
            let shards = crate::storage::stream_shards(source)?;
            let storage = storage.unwrap_or_else(gm_storage::Storage::global);
            let s = WebDatasetStream::from_shards(shards, options, storage)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            Loader::streaming(s)
        } else {
            let dataset = match &targets {
                Some(t) => t.dataset(),
                None => crate::storage::image_dataset(py, source, storage)?,
            };
            let sampler = sampler_for(py, shuffle, seed, rank, world_size, drop_last)?;
            // A COCO image's or a label map's masks move with its pixels, in the fused launch.
            let b = Loader::builder_shared(dataset)
                .masks(targets.as_ref().is_some_and(TargetSource::moves_masks))
                .targets(targets.is_some())
                .sampler(sampler)
                .seed(seed)
                .batch_size(batch_size)
                .drop_last(drop_last);
            match groups {
                Some(g) => b.batch_groups(g),
                None => b,
            }
        };
        let (chain, erasing) = plan_steps_erasing(py, transforms)?;
        let mix = match mix {
            Some(m) if !m.is_none() => {
                let spec = py
                    .import("gm.transforms")?
                    .call_method1("_plan_mix", (m,))?;
                Some(crate::transforms::batch_mix(&spec)?)
            }
            _ => None,
        };
        let placement = device::parse(device)?;
        let gpu = device::resolve(py, &placement)?;
        // The core budget's decoder settings (those of a GPU loader that reads masks where
        // this one does), with the caller's policy for truncated files.
        let plan = cores.map_or_else(CorePlan::from_env, CorePlan::for_cores_here);
        let pixel_masks = targets
            .as_ref()
            .is_some_and(|t| !t.dataset().masks_as_runs());
        let decoder = match (&gpu, pixel_masks && !stream) {
            (Some(_), true) => plan.mask_decoder,
            _ => plan.decoder,
        };
        let mut b = start
            .transforms(chain)
            .batch_sizes(sizes)
            .bad_samples(policy_named(bad_samples)?)
            .prefetch(prefetch)
            .decoder(DecoderOptions {
                truncated,
                ..decoder
            });
        if let Some(n) = stages {
            b = b.gpu_stages(n);
        }
        if let Some(n) = cores {
            b = b.cores(n);
        }
        if let Some(n) = workers {
            b = b.workers(n);
        }
        b = match (&gpu, &placement) {
            (Some(d), _) => b.device(d),
            (None, Placement::Cpu) => b.cpu(),
            // The builder finds no GPU either, and says why in its placement.
            (None, _) => b,
        };
        if let Some(side) = device_cache {
            b = b.device_cache(DeviceCache::shorter_side(side));
        }
        if let Some(e) = erasing {
            b = b.random_erasing(e);
        }
        if let Some(m) = mix {
            b = b.batch_mix(m);
        }
        let counter = gm_loader::Progress::new();
        let b = b.progress(counter.clone());
        let loader =
            crate::progress::run(py, progress, &counter, ("device cache", "image"), || {
                b.build()
            })?
            .map_err(|e| loader_error(py, e));
        logging::flush(py);
        let loader = loader?;
        let uploads = gpu.as_ref().map(Uploads::new).transpose()?;
        Ok(ImageLoader {
            batches: (!loader.is_streaming() || epoch_batches.is_some())
                .then(|| loader.batches_per_epoch()),
            on_gpu: loader.on_gpu(),
            placement: loader.placement().to_string(),
            inner: Arc::new(Mutex::new(Inner::new(loader, uploads, prefetch_next_epoch))),
            targets,
        })
    }

    /// Batches per epoch (for this rank). A stream without `epoch_batches` has no length
    /// until it ends (`TypeError`, as `len()` of a PyTorch IterableDataset).
    fn __len__(&self) -> PyResult<usize> {
        self.batches.ok_or_else(|| {
            PyTypeError::new_err(
                "a stream's length is known only at its end: give epoch_batches= for one",
            )
        })
    }

    /// Starts an epoch: the one `set_epoch` chose, the one a loaded state resumes, or else
    /// the one after the last (the first is 0). An iteration still running stops.
    fn __iter__(&self, py: Python<'_>) -> PyResult<BatchIterator> {
        let inner = self.inner.clone();
        let generation = py
            .detach(|| inner.lock().start())
            .map_err(|e| loader_error(py, e))?;
        Ok(BatchIterator {
            inner: self.inner.clone(),
            targets: self.targets.clone(),
            generation,
        })
    }

    /// The epoch the next iteration runs (as `DistributedSampler.set_epoch`: it picks the
    /// shuffle and the augmentations).
    fn set_epoch(&self, epoch: u64) {
        self.inner.lock().set_epoch(epoch);
    }

    /// Where the loader stands: after the last batch handed out (or, between epochs, at the
    /// start of the next). Save it in a checkpoint; `load_state_dict` resumes exactly there.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.lock().state_dict(py)
    }

    /// Resumes from a `state_dict` at the next iteration. A state of another loader
    /// (dataset size, batch size, seed, sharding) is refused with the reason.
    fn load_state_dict(&self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        self.inner.lock().load_state_dict(state)
    }

    /// Counters and stage times of every epoch so far, as a dict. With `prefetch_next_epoch`
    /// (the default), an epoch started ahead of time counts as soon as it runs, so right after
    /// an epoch the counters may include the next epoch's first batches.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.lock().loader.stats();
        stats_dict(py, &s)
    }

    /// Where the pipeline runs, in words ("GPU 0 (NVIDIA H100 ...)" or "CPU (why)").
    #[getter]
    fn placement(&self) -> &str {
        &self.placement
    }

    /// Whether batches land in GPU memory.
    #[getter]
    fn on_gpu(&self) -> bool {
        self.on_gpu
    }

    /// Stops the running iteration and joins its threads (also done by the iterator's end and
    /// by garbage collection).
    fn close(&self, py: Python<'_>) {
        let inner = self.inner.clone();
        py.detach(|| inner.lock().close());
        logging::flush(py);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "gm.ImageLoader({} batches per epoch on {})",
            self.batches
                .map_or_else(|| "a stream of".to_string(), |n| n.to_string()),
            self.placement
        )
    }
}

#[pymethods]
impl BatchIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Batch> {
        match next_batch(py, &self.inner, self.generation)? {
            Some(b) => self.wrap(py, b),
            None => Err(PyStopIteration::new_err(())),
        }
    }

    /// Batches left in this epoch.
    fn __len__(&self) -> usize {
        self.inner.lock().remaining(self.generation)
    }
}

impl BatchIterator {
    fn wrap(&self, py: Python<'_>, mut b: RustBatch) -> PyResult<Batch> {
        let labels = std::mem::take(&mut b.labels);
        let soft = b.soft_labels.take();
        let indices = std::mem::take(&mut b.indices);
        let names = b.names.take();
        let (epoch, position) = (b.epoch, b.position);
        let image_sizes = b.sizes.clone();
        let channels_last = b.layout() == Some(gm_transforms::Layout::Hwc);
        // A ragged batch's images, each its own view of the buffer.
        let parts: Option<Vec<(usize, Vec<usize>)>> = (b.images.shape().len() == 1).then(|| {
            (0..image_sizes.len())
                .filter_map(|k| Some((*b.offsets.get(k)?, b.image_shape(k)?)))
                .collect()
        });
        let geometry = std::mem::take(&mut b.geometry);
        let ready = Mutex::new(b.targets.take());
        let mask_parts = b.masks.as_ref().map(|m| m.parts.clone());
        let (images, masks, on_device) = batch_tensors(b)?;
        let (mask_views, stacked) = match (masks, mask_parts) {
            (Some(t), Some(parts)) => (
                Some(self.mask_views(py, &t, &parts)?),
                self.stacked_maps(py, &t, &parts)?,
            ),
            _ => (None, None),
        };
        let pending = self.targets.as_ref().map(|source| PendingTargets {
            source: source.clone(),
            indices: indices.clone(),
            geometry,
            mask_views,
            ready,
            on_device,
            inner: self.inner.clone(),
        });
        let images = if let Some(parts) = parts {
            let views = parts
                .iter()
                .map(|(offset, shape)| {
                    let part = images.part(*offset, shape).ok_or_else(|| {
                        PyValueError::new_err("a ragged batch's image reaches past its buffer")
                    })?;
                    Py::new(py, part)
                })
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, views)?.into_any().unbind()
        } else {
            Py::new(py, images)?.into_any()
        };
        let labels = {
            let g = self.inner.lock();
            match &g.uploads {
                Some(u) => Tensor::device_i64(&labels, u)?,
                None => Tensor::host(
                    &[labels.len()],
                    Elem::I64,
                    labels.iter().flat_map(|v| v.to_ne_bytes()).collect(),
                )?,
            }
        };
        let soft_labels = match soft {
            None => None,
            Some(h) => {
                let g = self.inner.lock();
                let t = match &g.uploads {
                    Some(u) => Tensor::device_f32(&h.data, &h.shape, u)?,
                    None => Tensor::host(&h.shape, Elem::of(h.dtype), h.data)?,
                };
                Some(Py::new(py, t)?)
            }
        };
        Ok(Batch {
            images,
            image_sizes,
            channels_last,
            labels: Py::new(py, labels)?,
            soft_labels,
            indices,
            names,
            epoch,
            position,
            targets: PyOnceLock::new(),
            pending,
            masks: stacked,
        })
    }
}

impl BatchIterator {
    /// A segmentation batch's label maps as one `[B, H, W]` view, where they are one size.
    fn stacked_maps(
        &self,
        py: Python<'_>,
        t: &Tensor,
        parts: &[gm_loader::MaskPart],
    ) -> PyResult<Option<Py<Tensor>>> {
        let Some(first) = parts.first() else {
            return Ok(None);
        };
        let maps = matches!(self.targets, Some(TargetSource::Segmentation(_)));
        let packed = parts.iter().enumerate().all(|(k, p)| {
            p.planes == 1
                && (p.width, p.height) == (first.width, first.height)
                && p.offset == k * first.bytes()
        });
        if !maps || !packed {
            return Ok(None);
        }
        let shape = [parts.len(), first.height as usize, first.width as usize];
        t.part(0, &shape).map(|v| Py::new(py, v)).transpose()
    }

    /// Each image's masks as a view of the batch's: `[H, W]` for a label map, `[N, H, W]` for a
    /// COCO image's kept objects.
    fn mask_views(
        &self,
        py: Python<'_>,
        t: &Tensor,
        parts: &[gm_loader::MaskPart],
    ) -> PyResult<Vec<Py<Tensor>>> {
        let single = matches!(self.targets, Some(TargetSource::Segmentation(_)));
        parts
            .iter()
            .map(|p| {
                let (h, w) = (p.height as usize, p.width as usize);
                let shape = if single {
                    vec![h, w]
                } else {
                    vec![p.planes as usize, h, w]
                };
                let view = t.part(p.offset, &shape).ok_or_else(|| {
                    PyValueError::new_err("a batch's masks reach past their buffer")
                })?;
                Py::new(py, view)
            })
            .collect()
    }
}

/// A GPU batch's targets in their one device buffer, and each image's places in it.
pub(crate) type OnDevice = (Tensor, Vec<Option<gm_loader::TargetPlaces>>);

/// The batch's images, masks (if it moved any) and targets on the device (if a GPU stage
/// uploaded them) as tensors; on the GPU all keep the batch alive (its release is ordered
/// before the memory's).
fn batch_tensors(mut b: RustBatch) -> PyResult<(Tensor, Option<Tensor>, Option<OnDevice>)> {
    let masks = b.masks.as_mut().map(|m| match &mut m.data {
        Images::Host(h) => Err(std::mem::take(&mut h.data)),
        Images::Device(t) => Ok(t.clone()),
    });
    match &mut b.images {
        Images::Host(h) => {
            let data = std::mem::take(&mut h.data);
            let images = Tensor::host(&h.shape, Elem::of(h.dtype), data)?;
            let masks = match masks {
                Some(Err(bytes)) => Some(Tensor::host(
                    &[bytes.len()],
                    Elem::of(gm_cuda::DType::U8),
                    bytes,
                )?),
                _ => None,
            };
            Ok((images, masks, None))
        }
        Images::Device(t) => {
            let t = t.clone();
            let targets = b
                .device_targets
                .as_ref()
                .map(|d| (d.data.clone(), d.places.clone()));
            let owner = Arc::new(Owner::Batch(Box::new(Mutex::new(b))));
            let masks = match masks {
                Some(Ok(m)) => Some(Tensor::from_device(&m, owner.clone())),
                _ => None,
            };
            let targets = targets.map(|(d, p)| (Tensor::from_device(&d, owner.clone()), p));
            Ok((Tensor::from_device(&t, owner), masks, targets))
        }
    }
}

/// What moving a batch's targets needs.
struct PendingTargets {
    source: TargetSource,
    indices: Vec<usize>,
    geometry: Vec<gm_transforms::targets::TargetGeometry>,
    mask_views: Option<Vec<Py<Tensor>>>,
    /// The targets the loader's stages moved (taken on first read).
    ready: Mutex<Option<Vec<gm_loader::MovedSample>>>,
    /// The same targets on the device, where a GPU stage uploaded them.
    on_device: Option<OnDevice>,
    inner: Arc<Mutex<Inner<Loader>>>,
}

impl PendingTargets {
    /// The targets moved, on the images' device.
    fn moved(&self, py: Python<'_>) -> PyResult<Vec<Option<Py<PyDict>>>> {
        let views = self
            .mask_views
            .as_ref()
            .map(|v| v.iter().map(|t| t.clone_ref(py)).collect());
        let ready = self.ready.lock().take();
        let ready = ready.map(|r| (r, self.on_device.as_ref()));
        let moved = self
            .source
            .moved_batch(py, &self.indices, &self.geometry, views, ready)?;
        let g = self.inner.lock();
        match &g.uploads {
            Some(u) => targets_to_device(py, moved, u),
            None => Ok(moved),
        }
    }
}

/// Every tensor of every target dict moved to the device `uploads` copies to, as torchvision's
/// detection training moves its targets beside the images.
fn targets_to_device(
    py: Python<'_>,
    targets: Vec<Option<Py<PyDict>>>,
    uploads: &Uploads,
) -> PyResult<Vec<Option<Py<PyDict>>>> {
    // Every dict's host tensors (the loader's masks are on the device already), then one
    // upload for all of them.
    let mut places = Vec::new();
    let mut tensors = Vec::new();
    for d in targets.iter().flatten() {
        let d = d.bind(py);
        for (k, v) in d.iter() {
            if let Ok(t) = v.cast_into::<Tensor>()
                && t.get().on_host()
            {
                places.push((d.clone(), k));
                tensors.push(t);
            }
        }
    }
    if tensors.is_empty() {
        return Ok(targets);
    }
    let refs: Vec<&Tensor> = tensors.iter().map(|t| t.get()).collect();
    let moved = Tensor::to_device_all(&refs, uploads)?;
    for ((d, k), t) in places.into_iter().zip(moved) {
        d.set_item(k, Py::new(py, t)?)?;
    }
    Ok(targets)
}

impl Drop for BatchIterator {
    fn drop(&mut self) {
        // An iterator abandoned mid-epoch (a `break`, an exception, Ctrl-C) stops its threads.
        self.inner.lock().abandon(self.generation);
    }
}

#[pymethods]
impl Batch {
    /// With a `gm.CocoDataset` or `gm.SegmentationFolder` source: each image's targets (a
    /// dict as `CocoDataset.targets` gives, or `{"mask": ...}`, moved with its pixels onto
    /// the output canvas, on the images' device; the masks moved in the same launch as the
    /// pixels, each a view of the batch's masks); an image whose annotations or label map
    /// cannot be read is a bad sample (`bad_samples=`); else `None`. Moved when first read.
    #[getter]
    fn targets(&self, py: Python<'_>) -> PyResult<Option<Vec<Option<Py<PyDict>>>>> {
        let moved = self.targets.get_or_try_init(py, || {
            self.pending.as_ref().map(|p| p.moved(py)).transpose()
        })?;
        Ok(moved.as_ref().map(|v| {
            v.iter()
                .map(|d| d.as_ref().map(|d| d.clone_ref(py)))
                .collect()
        }))
    }

    /// `targets` with every tensor in them a torch tensor on the images' device: what
    /// `{k: torch.from_dlpack(v) ...}` of each image's dict gives, made with one DLPack import
    /// per buffer the batch's targets share (its masks; its boxes, labels and keypoints) rather
    /// than one per tensor, which costs tens of µs each. New dicts each call; needs torch.
    fn torch_targets(&self, py: Python<'_>) -> PyResult<Option<Vec<Option<Py<PyDict>>>>> {
        let Some(targets) = self.targets(py)? else {
            return Ok(None);
        };
        let dicts = targets
            .iter()
            .map(|d| d.as_ref().map(|d| d.bind(py).copy()).transpose())
            .collect::<PyResult<Vec<_>>>()?;
        let (mut places, mut tensors) = (Vec::new(), Vec::new());
        for d in dicts.iter().flatten() {
            for (k, v) in d.iter() {
                if let Ok(t) = v.cast_into::<Tensor>() {
                    places.push((d.clone(), k));
                    tensors.push(t);
                }
            }
        }
        let imported = crate::torch_import::to_torch(py, &tensors)?;
        for ((d, k), t) in places.into_iter().zip(imported) {
            d.set_item(k, t)?;
        }
        Ok(Some(
            dicts.into_iter().map(|d| d.map(Bound::unbind)).collect(),
        ))
    }

    fn __len__(&self) -> usize {
        self.indices.len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // With mixing, the soft labels, as torchvision's MixUp/CutMix return them.
        let labels = match &self.soft_labels {
            Some(s) => s.clone_ref(py).into_any(),
            None => self.labels.clone_ref(py).into_any(),
        };
        let pair = PyList::new(py, [self.images.clone_ref(py).into_any(), labels])?;
        pair.try_iter().map(Bound::into_any)
    }

    /// For a padded batch: `bool [B, H, W]` on the images' device, True where a pixel is
    /// an image's and False on padding (DETR's mask inverted). Needs torch.
    fn valid_mask<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("gm._sizes")?.call_method1(
            "valid_mask",
            (
                self.images.bind(py),
                self.image_sizes.clone(),
                self.channels_last,
            ),
        )
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let images = match self.images.bind(py).cast::<Tensor>() {
            Ok(t) => t.get().describe(),
            Err(_) => format!("[{} tensors]", self.image_sizes.len()),
        };
        format!(
            "gm.Batch(epoch={}, position={}, images={images})",
            self.epoch, self.position
        )
    }
}
