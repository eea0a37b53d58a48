//! The builder and the loader it makes.

use std::sync::Arc;

use gm_codec::jpeg::{DecoderOptions, PixelFormat};
use gm_cuda::{DType, Device, DevicePool, PoolStats};
use gm_transforms::{BatchMix, Compose, Layout, RandomErasing, ToDtype, Transform};
use parking_lot::Mutex;

use super::cache::DeviceCache;
use super::context::Shared;
use super::cores::CorePlan;
use super::dataset::Dataset;
use super::gpu_stage::GpuStage;
use super::pipeline::{Epoch, EpochPlan};
use super::sizes::BatchSizes;
use super::stats::Stats;
use super::stream_feed::{Feed, StreamProgress, StreamSlots};
use crate::NodeCpus;
use crate::bad_samples::BadSamplePolicy;
use crate::elastic::Reshard;
use crate::error::LoaderError;
use crate::progress::Progress;
use crate::sampler::Sampler;
use crate::settings::{Placement, Settings, pick_device};
use crate::shards::WebDatasetStream;
use crate::state::LoaderState;

/// Whether a GPU loader makes host threads that wait for the GPU sleep instead of spin
/// ([`LoaderBuilder::blocking_sync`]). Off: sleeping measured within the hosts' run-to-run
/// spread, and the setting is process-wide (the figures: docs/image-loader.md).
pub const LOADER_BLOCKING_SYNC: bool = false;

/// Whether the loader's CUDA-backend decodes stop at the region each sample's transform reads
/// ([`LoaderBuilder::region_decode`]).
pub const LOADER_REGION_DECODE: bool = true;

/// Builds a [`Loader`], in the style of burn's `DataLoaderBuilder`.
pub struct LoaderBuilder {
    dataset: Arc<dyn Dataset>,
    settings: Settings,
    transforms: Compose,
    output: Option<(DType, Layout)>,
    workers: Option<usize>,
    prefetch: usize,
    decoder: Option<DecoderOptions>,
    cores: Option<usize>,
    gpu_stages: Option<usize>,
    cache: Option<DeviceCache>,
    blocking_sync: Option<bool>,
    region_decode: bool,
    masks: bool,
    targets: bool,
    numa: bool,
    progress: Option<Arc<Progress>>,
    erasing: Option<RandomErasing>,
    mix: Option<BatchMix>,
    sizes: BatchSizes,
    stream: Option<Streamed>,
}

/// A streaming WebDataset and where its samples are parked while in flight.
#[derive(Clone)]
struct Streamed {
    stream: Arc<WebDatasetStream>,
    slots: Arc<StreamSlots>,
}

impl LoaderBuilder {
    /// RandomErasing on every image after the chain (after `Normalize`, in the output's
    /// values, as torchvision places it), drawn per sample from (seed, epoch, dataset index),
    /// run on the batch tensor in one launch (GPU) or by the CPU twin.
    pub fn random_erasing(mut self, erasing: RandomErasing) -> Self {
        self.erasing = Some(erasing);
        self
    }

    /// MixUp and/or CutMix on every batch (after erasing), drawn per batch from (seed,
    /// epoch, batch position); each image is mixed with the one before it (the batch rolled
    /// by one, as torchvision), and [`Batch::soft_labels`](crate::Batch::soft_labels) holds
    /// the mixed labels. A label outside `0..num_classes` ends the epoch with a
    /// [`LoaderError::Plan`] naming the sample.
    pub fn batch_mix(mut self, mix: BatchMix) -> Self {
        self.mix = Some(mix);
        self
    }

    /// How a batch holds images whose outputs differ in size, for chains that end without a
    /// fixed size (detection's `Resize::ShorterMax`, `RandomShortestSize`, `ScaleJitter`):
    /// padded to the largest ([`BatchSizes::Padded`], [`BatchSizes::DETECTION`]) or packed
    /// ([`BatchSizes::Ragged`]); [`Batch::sizes`](crate::Batch::sizes) gives each image's
    /// size. Default [`BatchSizes::Uniform`]. RandomErasing and MixUp/CutMix work on batches
    /// of one size only.
    pub fn batch_sizes(mut self, sizes: BatchSizes) -> Self {
        self.sizes = sizes;
        self
    }

    /// Decode and resize every image once into GPU memory at `build()`, and serve every
    /// epoch's augmentations from there (GPU only). The memory it needs is computed from the
    /// image headers and logged before anything is decoded; a cache that would not fit is a
    /// [`LoaderError::CacheTooLarge`], not an out-of-memory crash.
    pub fn device_cache(mut self, cache: DeviceCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Counts the images decoded into the device cache in `progress` (total: the images to
    /// cache) while `build()` fills it, for a progress bar.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// GPU stage threads, each with its own decoder, kernel and stream, taking batches in
    /// turn (default: the core budget's, [`CorePlan::stages`]: 3 from 10 cores, 2 below).
    pub fn gpu_stages(mut self, n: usize) -> Self {
        self.gpu_stages = Some(n.max(1));
        self
    }

    /// Sample order (default: sequential).
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.settings.sampler = sampler;
        self
    }

    /// Images per batch (default 32).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.settings.batch_size = n;
        self
    }

    /// Drop a short last batch (default: keep it).
    pub fn drop_last(mut self, drop: bool) -> Self {
        self.settings.drop_last = drop;
        self
    }

    /// Batches of one group at a time: `groups[i]` is sample `i`'s group (one per sample of
    /// the dataset), e.g. [`aspect_ratio_groups`](crate::aspect_ratio_groups) of the images'
    /// sizes, so that detection batches of images resized without cropping pad little. Each
    /// epoch's batches are torchvision's `GroupedBatchSampler`'s over the sampler's order
    /// (this rank's share): `len / batch_size` full batches, the last ones of each group
    /// completed with that group's samples. Deterministic and resumable, at the same world
    /// size or, through [`LoaderState::merge`](crate::LoaderState::merge), at another: the
    /// rest of the epoch is grouped again over each new rank's share of what no rank took.
    pub fn batch_groups(mut self, groups: Vec<usize>) -> Self {
        self.settings.groups = Some(groups.into());
        self
    }

    /// Appends a step to the transform chain, which is planned per sample and run as one
    /// fused kernel. The chain must end in a fixed output size (a crop or a resize to width
    /// and height) so that images stack.
    pub fn transform(mut self, step: impl Transform + 'static) -> Self {
        self.transforms.push(step);
        self
    }

    /// Replaces the transform chain with a prepared one (a [`Compose`], or a
    /// `Vec<Box<dyn Transform>>`); see [`LoaderBuilder::transform`].
    pub fn transforms(mut self, chain: impl Into<Compose>) -> Self {
        self.transforms = chain.into();
        self
    }

    /// Output element type and layout, applied after the chain (default: what the chain
    /// says, u8 HWC if it says nothing).
    pub fn output(mut self, dtype: DType, layout: Layout) -> Self {
        self.output = Some((dtype, layout));
        self
    }

    /// Run on this GPU (default: GPU `LOCAL_RANK`, or 0, when there is one, else the CPU).
    pub fn device(mut self, device: &Device) -> Self {
        self.settings.placement = Placement::Gpu(device.clone());
        self
    }

    /// Run on the CPU: CPU decoding and the transforms' CPU twins, host tensors out.
    pub fn cpu(mut self) -> Self {
        self.settings.placement = Placement::Cpu;
        self
    }

    /// Host worker threads reading files (on the CPU path they also decode). Default: from
    /// the core budget ([`LoaderBuilder::cores`]; 2 to 4 on the GPU path, the budget up to 32
    /// on the CPU path).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// The host cores this loader may use (default [`default_core_budget`](crate::default_core_budget): the process's
    /// cores divided by the processes of its node under torchrun or Slurm). Below
    /// [`ENGINES_ONLY_BELOW`](crate::ENGINES_ONLY_BELOW) cores the GPU path decodes on the engines alone, which needs a
    /// third of the host time per image of the CUDA backend's share; from there on it adds
    /// that share ([`CorePlan`]), unless the launcher says several loaders share the node
    /// ([`local_loaders`](crate::local_loaders)): then the engines decode alone at any budget,
    /// as the split's host work bought nothing with all of them running. [`LoaderBuilder::decoder`] and [`LoaderBuilder::workers`]
    /// override what the budget picks. Batches are bit-reproducible for a fixed budget.
    pub fn cores(mut self, n: usize) -> Self {
        self.cores = Some(n.max(1));
        self
    }

    /// Batches ready ahead of the consumer (default 2).
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = n;
        self
    }

    /// What to do with bad samples (default: skip).
    pub fn bad_samples(mut self, policy: BadSamplePolicy) -> Self {
        self.settings.policy = policy;
        self
    }

    /// Seed of the augmentations and of substitutes (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// Whether the loader runs its host threads on the CPUs of its GPU's NUMA node and sets
    /// its GPU stages up from there (default: on). Where the host has one node, or the process
    /// is already confined to fewer CPUs, this changes nothing; see [`NodeCpus`].
    pub fn numa_placement(mut self, on: bool) -> Self {
        self.numa = on;
        self
    }

    /// Whether host threads waiting for the GPU sleep instead of spinning
    /// ([`Device::set_blocking_sync`]), set on the device when the loader is built. Default
    /// [`LOADER_BLOCKING_SYNC`]; `None` leaves the device as it is. The setting belongs to the
    /// device's primary context, so it holds for every CUDA user in the process (PyTorch's
    /// synchronizations then sleep too, at some microseconds of wake-up each).
    pub fn blocking_sync(mut self, on: Option<bool>) -> Self {
        self.blocking_sync = on;
        self
    }

    /// Whether the GPU stages plan each sample's transform from the image header and have the
    /// CUDA backend decode only the pixels it reads (a random-resized crop reads about half an
    /// image), as DALI's `decoders.image_random_crop` does. Default [`LOADER_REGION_DECODE`].
    /// Batches stay deterministic; they differ from whole-image decoding only by the rounding
    /// of sample positions.
    pub fn region_decode(mut self, on: bool) -> Self {
        self.region_decode = on;
        self
    }

    /// Whether each sample's masks ([`Dataset::masks`]: a segmentation folder's label map, a
    /// COCO image's object masks) are moved with its pixels, nearest, through the same drawn
    /// geometry, into [`Batch::masks`](crate::Batch::masks): on the GPU in the fused launch
    /// that writes the image (the sources and their per-axis taps uploaded once per batch),
    /// on the CPU path by the kernel's twin. Objects the chain drops (SanitizeBoundingBoxes,
    /// FixedSizeCrop) lose their masks with their boxes. A sample whose masks cannot be read
    /// is a bad sample. Default off.
    pub fn masks(mut self, on: bool) -> Self {
        self.masks = on;
        self
    }

    /// Each batch carries its samples' targets moved through their geometry
    /// ([`Batch::targets`](crate::Batch::targets): [`Dataset::moved_targets`], a COCO
    /// image's boxes, labels, keypoints and crowd regions), computed on the loader's stage
    /// threads while the GPU runs the batch, so that the training loop only takes them.
    /// Default off.
    pub fn targets(mut self, on: bool) -> Self {
        self.targets = on;
        self
    }

    /// Decoder settings (backend, engine share, threads, size limit, EXIF orientation). The
    /// output format is always RGB: the transform does the rest. Default: the core budget's
    /// ([`CorePlan::decoder`]; [`DecoderOptions::for_loader`] from [`ENGINES_ONLY_BELOW`](crate::ENGINES_ONLY_BELOW)
    /// cores up on a node of its own).
    pub fn decoder(mut self, options: DecoderOptions) -> Self {
        self.decoder = Some(options);
        self
    }

    /// Batch groups fit the dataset and its source: one per sample, and not over a stream.
    fn check_groups(&self) -> Result<(), LoaderError> {
        let Some(groups) = &self.settings.groups else {
            return Ok(());
        };
        if self.stream.is_some() {
            return Err(LoaderError::Config(
                "batch groups need samples by index; a streaming WebDataset has none".into(),
            ));
        }
        if groups.len() != self.dataset.len() {
            return Err(LoaderError::Config(format!(
                "{} batch groups for a dataset of {} samples",
                groups.len(),
                self.dataset.len()
            )));
        }
        Ok(())
    }

    /// Checks the settings, picks the device and creates the decoder.
    pub fn build(self) -> Result<Loader, LoaderError> {
        if self.settings.batch_size == 0 {
            return Err(LoaderError::Config("batch size must be at least 1".into()));
        }
        if self.sizes != BatchSizes::Uniform && (self.erasing.is_some() || self.mix.is_some()) {
            return Err(LoaderError::Config(format!(
                "RandomErasing and MixUp/CutMix draw over a batch of one size; this loader's \
                 batches hold images of many sizes ({:?})",
                self.sizes
            )));
        }
        match &self.stream {
            Some(s) => self.check_stream(s.stream.options())?,
            None if self.dataset.is_empty() => {
                return Err(LoaderError::Config("the dataset is empty".into()));
            }
            None => {}
        }
        self.check_groups()?;
        let mut chain = self.transforms;
        if let Some((dtype, layout)) = self.output {
            chain.push(ToDtype(dtype, layout));
        }
        let (device, placement) = pick_device(&self.settings.placement)?;
        let node = match &device {
            Some(d) if self.numa => d.info().ok().and_then(|i| NodeCpus::of_gpu(&i.pci_bus_id)),
            _ => None,
        };
        let plan = self.cores.map_or_else(
            || CorePlan::from_env_on(node.as_ref()),
            CorePlan::for_cores_here,
        );
        // Masks as pixels are host work per image; as runs, next to none.
        let pixel_masks = self.masks && !self.dataset.masks_as_runs();
        let mut decoder = self
            .decoder
            .unwrap_or_else(|| match (&device, pixel_masks) {
                (Some(_), true) => plan.mask_decoder.clone(),
                _ => plan.decoder.clone(),
            });
        decoder.format = PixelFormat::Rgb;
        let workers = self.workers.unwrap_or(match (&device, pixel_masks) {
            (Some(_), false) => plan.workers,
            (Some(_), true) => plan.mask_workers,
            (None, _) => plan.cpu_workers,
        });
        let stages = self.gpu_stages.unwrap_or(plan.stages);
        tracing::info!(
            cores = plan.cores,
            workers,
            stages,
            engine_share = decoder.split.hw_load(),
            cuda_threads = decoder.cuda.threads,
            "image loader settings"
        );
        let mask_pinning = match (&device, self.masks) {
            (Some(d), true) => Some(super::masks::MaskPinning::new(d)),
            _ => None,
        };
        let (gpu, pool, placement) = match device {
            Some(d) => {
                let sync = self.blocking_sync;
                let (stages, pool, what) = crate::numa::on_node(node.as_ref(), || {
                    start_stages(&d, &decoder, stages, sync)
                })?;
                let what = match &node {
                    Some(n) => format!("{what}, threads on {}", n.describe()),
                    None => what,
                };
                (stages, Some(pool), what)
            }
            None => (Vec::new(), None, placement),
        };
        let cache = match (self.cache, gpu.first()) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(LoaderError::Config(
                    "the device cache needs a GPU; this loader runs on the CPU".into(),
                ));
            }
            (Some(spec), Some(stage)) => {
                let mut stage = stage.lock();
                let stage = &mut *stage;
                Some(Arc::new(super::cache::build(
                    &stage.device,
                    &mut stage.decoder,
                    &mut stage.kernel,
                    self.dataset.as_ref(),
                    &spec,
                    self.progress.as_deref(),
                )?))
            }
        };
        let shared = Arc::new(Shared {
            bad: self.settings.bad_samples(self.dataset.len()),
            dataset: self.dataset,
            transforms: chain,
            seed: self.settings.seed,
            max_pixels: decoder.max_pixels,
            apply_orientation: decoder.apply_orientation,
            truncated: decoder.truncated,
            stats: Mutex::new(Stats::default()),
            buffers: Mutex::new(Vec::new()),
            cpu: gpu.is_empty(),
            cache,
            region_decode: self.region_decode,
            erasing: self.erasing,
            mix: self.mix,
            sizes: self.sizes,
            named: self.stream.is_some(),
            masks: self.masks,
            targets: self.targets,
            mask_pinning,
            node: node.map(Arc::new),
        });
        Ok(Loader {
            shared,
            gpu,
            batch_pool: pool,
            placement,
            settings: self.settings,
            workers: workers.max(1),
            prefetch: self.prefetch.max(1),
            stream: self.stream,
        })
    }

    /// What a stream cannot do: its batch size and seed are its options', and nothing can be
    /// drawn at random from it (substitutes, a device cache).
    fn check_stream(&self, o: &crate::shards::StreamOptions) -> Result<(), LoaderError> {
        let conflict = |what: &str, stream: u64, builder: u64| {
            LoaderError::Config(format!(
                "a stream's {what} is its StreamOptions' ({stream}); the builder asked for {builder}"
            ))
        };
        if self.settings.batch_size != o.batch_size {
            let b = self.settings.batch_size as u64;
            return Err(conflict("batch size", o.batch_size as u64, b));
        }
        if self.settings.seed != o.seed {
            return Err(conflict("seed", o.seed, self.settings.seed));
        }
        if self.masks || self.targets {
            return Err(LoaderError::Config(
                "masks and targets are read from an indexed dataset (Dataset::masks, \
                 Dataset::moved_targets); a stream has none"
                    .into(),
            ));
        }
        if self.settings.policy == BadSamplePolicy::Substitute {
            return Err(LoaderError::Config(
                "a stream has no random access to draw substitutes from: use Skip or Fail".into(),
            ));
        }
        if self.cache.is_some() {
            return Err(LoaderError::Config(
                "a stream cannot fill a device cache: every epoch reads the shards again".into(),
            ));
        }
        Ok(())
    }
}

/// The GPU stages sharing one batch pool, and where they run in words.
type Stages = (Vec<Arc<Mutex<GpuStage>>>, DevicePool, String);

/// Starts `n` GPU stages on `d`, each with its own decoder.
fn start_stages(
    d: &Device,
    decoder: &DecoderOptions,
    n: usize,
    blocking_sync: Option<bool>,
) -> Result<Stages, LoaderError> {
    if let Some(on) = blocking_sync {
        d.set_blocking_sync(on)?;
    }
    let pool = GpuStage::new_batch_pool(d);
    let stages = (0..n)
        .map(|_| GpuStage::new(d, decoder.clone(), pool.clone()).map(|s| Arc::new(Mutex::new(s))))
        .collect::<Result<Vec<_>, _>>()?;
    let what = format!(
        "GPU {} ({}), {} stage{}",
        d.ordinal(),
        d.name(),
        stages.len(),
        if stages.len() == 1 { "" } else { "s" }
    );
    Ok((stages, pool, what))
}

/// The image loader: iterate [`Loader::epoch`] for each epoch.
pub struct Loader {
    pub(crate) shared: Arc<Shared>,
    pub(crate) gpu: Vec<Arc<Mutex<GpuStage>>>,
    batch_pool: Option<DevicePool>,
    placement: String,
    settings: Settings,
    workers: usize,
    prefetch: usize,
    stream: Option<Streamed>,
}

impl Loader {
    /// A builder over WebDataset shards read as streams ([`WebDatasetStream`]: one pass over
    /// each shard front to back, no index, a seeded shard order and shuffle buffers; the
    /// issue's streaming mode). Batch size, seed and ranks are the stream's
    /// [`StreamOptions`](crate::shards::StreamOptions); the builder's sampler is not used.
    /// Each sample's image is its first member with an image extension, its label the
    /// `.cls`/`.txt`/`.json` member's (-1 without one). A batch's `indices` are not dataset
    /// indices: each holds the epoch's low 16 bits above the sample's place in the epoch's
    /// stream (`position * batch_size + slot`), and seeds its augmentations. A shard that
    /// cannot be read, or ends early, is one bad sample named `shard#(end of shard)`; a
    /// sample without an image or a label, or with a label that does not parse, is a bad
    /// sample named `shard#key`. [`BadSamplePolicy::Substitute`] and the device cache are refused.
    pub fn streaming(stream: WebDatasetStream) -> LoaderBuilder {
        let o = stream.options().clone();
        let slots = Arc::new(StreamSlots::new(o.json_label_key.clone(), o.batch_size));
        let mut builder = Loader::builder_shared(slots.clone());
        builder.settings.batch_size = o.batch_size;
        builder.settings.seed = o.seed;
        builder.stream = Some(Streamed {
            stream: Arc::new(stream),
            slots,
        });
        builder
    }

    /// A builder over `dataset`.
    pub fn builder(dataset: impl Dataset + 'static) -> LoaderBuilder {
        Loader::builder_shared(Arc::new(dataset))
    }

    /// A builder over a shared dataset.
    pub fn builder_shared(dataset: Arc<dyn Dataset>) -> LoaderBuilder {
        LoaderBuilder {
            dataset,
            settings: Settings::new(32),
            transforms: Compose::new(),
            output: None,
            workers: None,
            prefetch: 2,
            decoder: None,
            cores: None,
            gpu_stages: None,
            cache: None,
            blocking_sync: Some(LOADER_BLOCKING_SYNC),
            region_decode: LOADER_REGION_DECODE,
            masks: false,
            targets: false,
            numa: true,
            progress: None,
            erasing: None,
            mix: None,
            sizes: BatchSizes::Uniform,
            stream: None,
        }
    }

    /// Where the pipeline runs, in words ("GPU 0 (NVIDIA H200)", or "CPU (why)").
    pub fn placement(&self) -> &str {
        &self.placement
    }

    /// Whether batches land in GPU memory.
    pub fn on_gpu(&self) -> bool {
        !self.gpu.is_empty()
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<dyn Dataset> {
        &self.shared.dataset
    }

    /// Batches in an epoch. For a stream ([`Loader::streaming`]): its `epoch_batches`, or 0
    /// when the count is known only at the end of each epoch.
    pub fn batches_per_epoch(&self) -> usize {
        match &self.stream {
            Some(s) => s.stream.options().epoch_batches.unwrap_or(0),
            None => self.settings.batches_per_epoch(self.shared.dataset.len()),
        }
    }

    /// Samples in an epoch for this rank (after `drop_last`; skipped bad samples included).
    /// For a stream: `epoch_batches` full batches, or 0 when unknown.
    pub fn samples_per_epoch(&self) -> usize {
        match &self.stream {
            Some(_) => self.batches_per_epoch() * self.settings.batch_size,
            None => self.settings.samples_per_epoch(self.shared.dataset.len()),
        }
    }

    /// Whether it reads a stream ([`Loader::streaming`]).
    pub fn is_streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// Images per batch (the last batch of an epoch may hold fewer).
    pub fn batch_size(&self) -> usize {
        self.settings.batch_size
    }

    /// The batches of `epoch`, from the first.
    pub fn epoch(&mut self, epoch: u64) -> Epoch<'_> {
        self.start(epoch, 0)
    }

    /// Epochs `epochs` back to back, each item tagged with its epoch, the next epoch started
    /// behind the last batches of the running one so that no epoch begins with an empty
    /// pipeline (see [`crate::Epochs`]).
    pub fn epochs(&mut self, epochs: std::ops::Range<u64>) -> crate::Epochs<'_, Loader> {
        crate::Epochs::new(self, epochs)
    }

    /// Batches left in a running epoch when the next one is best started ([`Loader::epochs`],
    /// the Python package's `prefetch_next_epoch`): where the running epoch's host workers
    /// have read their last batches, so that they read on into the next epoch while its last
    /// batches are decoded and consumed. Never below [`crate::PRESTART_AT`].
    pub fn prestart_at(&self) -> usize {
        let stages = self.gpu.len().max(1);
        let window = super::pipeline::read_window(self.workers, self.prefetch, stages);
        (window + self.prefetch + stages).max(crate::PRESTART_AT)
    }

    /// The batches that follow a saved state.
    pub fn resume(&mut self, state: &LoaderState) -> Result<Epoch<'_>, LoaderError> {
        self.resume_owned(state)
    }

    /// [`Loader::epoch`] as an iterator that does not borrow the loader: it holds what it
    /// needs itself. For bindings that cannot express the borrow (the Python package). Run
    /// one epoch at a time: a second one would share the GPU stages with the first.
    pub fn epoch_owned(&mut self, epoch: u64) -> Epoch<'static> {
        self.start(epoch, 0)
    }

    /// [`Loader::resume`] as an iterator that does not borrow the loader (see
    /// [`Loader::epoch_owned`]).
    pub fn resume_owned(&mut self, state: &LoaderState) -> Result<Epoch<'static>, LoaderError> {
        if let Some(s) = &self.stream {
            s.stream.check_resume(state)?;
            return Ok(self.start_at(
                state.epoch,
                state.next_batch,
                Some(state.clone()),
                Vec::new(),
            ));
        }
        self.state(0, 0).check_same_loader(state)?;
        Ok(self.start_after(state.epoch, state.next_batch, state.reshards.clone()))
    }

    /// The state before batch `next_batch` of `epoch` (of a stream: its start, with no
    /// streaming position, so only `next_batch` 0 resumes).
    pub fn state(&self, epoch: u64, next_batch: usize) -> LoaderState {
        match &self.stream {
            Some(s) => s.stream.state(epoch, next_batch, None),
            None => self
                .settings
                .state(epoch, next_batch, self.shared.dataset.len()),
        }
    }

    fn start(&mut self, epoch: u64, first: usize) -> Epoch<'static> {
        self.start_at(epoch, first, None, Vec::new())
    }

    /// What is left of `epoch` after `reshards` (a merged state's), from batch `first`.
    fn start_after(&mut self, epoch: u64, first: usize, reshards: Vec<Reshard>) -> Epoch<'static> {
        self.start_at(epoch, first, None, reshards)
    }

    fn start_at(
        &mut self,
        epoch: u64,
        first: usize,
        resume: Option<LoaderState>,
        reshards: Vec<Reshard>,
    ) -> Epoch<'static> {
        let mut base = resume.clone().unwrap_or_else(|| self.state(epoch, first));
        if resume.is_none() {
            base.reshards.clone_from(&reshards);
        }
        let (batches, stream) = match &self.stream {
            Some(s) => {
                let feed = Feed {
                    stream: s.stream.clone(),
                    slots: s.slots.clone(),
                    resume,
                };
                (Vec::new(), Some((feed, Arc::new(StreamProgress::new()))))
            }
            None => (
                self.settings
                    .batches_after(self.shared.dataset.len(), epoch, &reshards),
                None,
            ),
        };
        Epoch::spawn(EpochPlan {
            shared: self.shared.clone(),
            gpu: self.gpu.clone(),
            epoch,
            batches,
            stream,
            first,
            workers: self.workers,
            prefetch: self.prefetch,
            state: base,
        })
    }

    /// Counters and stage times of every epoch so far.
    pub fn stats(&self) -> Stats {
        self.shared.stats.lock().clone()
    }

    /// Bytes of device memory the device cache holds, if there is one.
    pub fn cache_bytes(&self) -> Option<u64> {
        self.shared.cache.as_ref().map(|c| c.bytes)
    }

    /// Images in the device cache (those that decoded), if there is one.
    pub fn cached_images(&self) -> Option<usize> {
        self.shared
            .cache
            .as_ref()
            .map(|c| c.entries.iter().filter(|e| e.is_ok()).count())
    }

    /// Statistics of the pool the batch tensors come from (GPU only).
    pub fn batch_pool_stats(&self) -> Option<PoolStats> {
        self.batch_pool.as_ref().map(DevicePool::stats)
    }

    /// Statistics of the decoders' output pools, summed over the stages (GPU only).
    pub fn decoder_pool_stats(&self) -> Option<PoolStats> {
        let mut stats = self.gpu.iter().map(|g| g.lock().decoder_pool_stats());
        let first = stats.next()?;
        Some(stats.fold(first, |a, b| PoolStats {
            allocations: a.allocations + b.allocations,
            reuses: a.reuses + b.reuses,
            releases: a.releases + b.releases,
            bytes_held: a.bytes_held + b.bytes_held,
            bytes_in_use: a.bytes_in_use + b.bytes_in_use,
            high_water: a.high_water + b.high_water,
            buffers_in_use: a.buffers_in_use + b.buffers_in_use,
            buffers_free: a.buffers_free + b.buffers_free,
            detached: a.detached + b.detached,
        }))
    }
}
