//! The builder and the loader it makes.

use std::sync::Arc;

use gm_codec::jpeg::{DecoderOptions, PixelFormat};
use gm_cuda::{DType, Device, DevicePool, PoolStats};
use gm_transforms::{Compose, Layout, SampleRng, ToDtype, Transform};
use parking_lot::Mutex;

use crate::cache::{Cache, DeviceCache};
use crate::dataset::Dataset;
use crate::error::{LoaderError, SampleError};
use crate::gpu_stage::GpuStage;
use crate::pipeline::{Epoch, EpochPlan};
use crate::sampler::Sampler;
use crate::state::LoaderState;
use crate::stats::Stats;

/// What happens to a sample that cannot be read or decoded. Whatever the policy, the sample
/// is counted and the first errors are kept ([`Stats::first_errors`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BadSamplePolicy {
    /// Leave it out: its batch is one image shorter.
    #[default]
    Skip,
    /// Put another sample in its place (drawn from the seed, the epoch and the position, so
    /// runs repeat); after [`MAX_SUBSTITUTES`] failed tries the slot is skipped.
    Substitute,
    /// End the epoch with [`LoaderError::BadSample`].
    Fail,
}

/// Whether a GPU loader makes host threads that wait for the GPU sleep instead of spin
/// ([`LoaderBuilder::blocking_sync`]). Off: measured on two H200s with 32 cores (2026-11-21,
/// ImageNet-sized JPEGs, 4 workers x 2 stages, 0.8 share, 4 threads), sleeping gave 34,881
/// against 31,719 images/s in one run and 33,776 against 34,069 in the next, within the hosts'
/// run-to-run spread, and the setting is process-wide.
pub const LOADER_BLOCKING_SYNC: bool = false;

/// Whether the loader's CUDA-backend decodes stop at the region each sample's transform reads
/// ([`LoaderBuilder::region_decode`]).
pub const LOADER_REGION_DECODE: bool = true;

/// How many substitutes are tried for one bad sample.
pub const MAX_SUBSTITUTES: u32 = 8;

/// Where the pipeline runs.
#[derive(Debug, Clone)]
enum Placement {
    /// GPU `LOCAL_RANK` (or 0) when there is one, else the CPU.
    Auto,
    Gpu(Device),
    Cpu,
}

/// Settings shared by the pipeline's threads.
pub(crate) struct Shared {
    pub(crate) dataset: Arc<dyn Dataset>,
    pub(crate) transforms: Compose,
    pub(crate) seed: u64,
    pub(crate) policy: BadSamplePolicy,
    pub(crate) max_pixels: u64,
    pub(crate) apply_orientation: bool,
    pub(crate) stats: Mutex<Stats>,
    /// Read buffers handed back by the stage, so reading allocates nothing in steady state.
    pub(crate) buffers: Mutex<Vec<Vec<u8>>>,
    pub(crate) cpu: bool,
    pub(crate) cache: Option<Arc<Cache>>,
    /// Decode only the pixels each sample's transform reads ([`LoaderBuilder::region_decode`]).
    pub(crate) region_decode: bool,
}

impl Shared {
    /// Counts a bad sample; `Err` under [`BadSamplePolicy::Fail`].
    pub(crate) fn bad_sample(&self, index: usize, reason: String) -> Result<(), LoaderError> {
        let e = SampleError {
            index,
            name: self.dataset.name(index),
            reason,
        };
        gm_cuda::nvtx::mark(c"gm-loader: bad sample");
        if self.stats.lock().record_bad(e.clone()) {
            tracing::warn!(sample = index, name = %e.name, reason = %e.reason, "bad sample");
        } else {
            tracing::debug!(sample = index, name = %e.name, reason = %e.reason, "bad sample");
        }
        match self.policy {
            BadSamplePolicy::Fail => Err(LoaderError::BadSample(e)),
            _ => Ok(()),
        }
    }

    /// The dataset index that stands in for slot `slot` of batch `position` on try `attempt`.
    pub(crate) fn substitute(
        &self,
        epoch: u64,
        position: usize,
        slot: usize,
        attempt: u32,
    ) -> usize {
        let key = ((position as u64) << 24) ^ ((slot as u64) << 4) ^ u64::from(attempt);
        let mut rng = SampleRng::new(self.seed ^ 0x5ab5_7170_7e00_0000, epoch, key);
        rng.below(self.dataset.len() as u64) as usize
    }

    pub(crate) fn take_buffer(&self) -> Vec<u8> {
        self.buffers.lock().pop().unwrap_or_default()
    }

    pub(crate) fn give_buffer(&self, buf: Vec<u8>) {
        let mut b = self.buffers.lock();
        // Enough for a few batches in flight; beyond that, let them go.
        if b.len() < 4096 {
            b.push(buf);
        }
    }
}

/// Builds a [`Loader`], in the style of burn's `DataLoaderBuilder`.
pub struct LoaderBuilder {
    dataset: Arc<dyn Dataset>,
    sampler: Sampler,
    batch_size: usize,
    drop_last: bool,
    transforms: Vec<Box<dyn Transform>>,
    output: Option<(DType, Layout)>,
    placement: Placement,
    workers: usize,
    prefetch: usize,
    policy: BadSamplePolicy,
    seed: u64,
    decoder: DecoderOptions,
    gpu_stages: usize,
    cache: Option<DeviceCache>,
    blocking_sync: Option<bool>,
    region_decode: bool,
}

impl LoaderBuilder {
    /// Decode and resize every image once into GPU memory at `build()`, and serve every
    /// epoch's augmentations from there (GPU only). The memory it needs is computed from the
    /// image headers and logged before anything is decoded; a cache that would not fit is a
    /// [`LoaderError::CacheTooLarge`], not an out-of-memory crash.
    pub fn device_cache(mut self, cache: DeviceCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// GPU stage threads, each with its own decoder, kernel and stream, taking batches in
    /// turn (default 2: on an H200 with ImageNet-sized JPEGs and the default decoder settings,
    /// 1, 2, 3 and 4 stages gave 22.0k, 34.8k, 33.0k and 32.4k images/s).
    pub fn gpu_stages(mut self, n: usize) -> Self {
        self.gpu_stages = n.max(1);
        self
    }

    /// Sample order (default: sequential).
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.sampler = sampler;
        self
    }

    /// Images per batch (default 32).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Drop a short last batch (default: keep it).
    pub fn drop_last(mut self, drop: bool) -> Self {
        self.drop_last = drop;
        self
    }

    /// The transform chain, planned per sample and run as one fused kernel. It must end in a
    /// fixed output size (a crop or a resize to width and height) so that images stack.
    pub fn transforms(mut self, chain: Vec<Box<dyn Transform>>) -> Self {
        self.transforms = chain;
        self
    }

    /// Output element type and layout, applied after the chain (default: what the chain
    /// says, u8 HWC if it says nothing).
    pub fn output(mut self, dtype: DType, layout: Layout) -> Self {
        self.output = Some((dtype, layout));
        self
    }

    /// Run on this GPU.
    pub fn device(mut self, device: Device) -> Self {
        self.placement = Placement::Gpu(device);
        self
    }

    /// Run on the CPU: CPU decoding and the transforms' CPU twins, host tensors out.
    pub fn cpu(mut self) -> Self {
        self.placement = Placement::Cpu;
        self
    }

    /// Host worker threads reading files (default 4; on the CPU path they also decode).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Batches ready ahead of the consumer (default 2).
    pub fn prefetch(mut self, n: usize) -> Self {
        self.prefetch = n;
        self
    }

    /// What to do with bad samples (default: skip).
    pub fn bad_samples(mut self, policy: BadSamplePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Seed of the augmentations and of substitutes (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
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

    /// Decoder settings (backend, engine share, threads, size limit, EXIF orientation). The
    /// output format is always RGB: the transform does the rest. Default:
    /// [`DecoderOptions::for_loader`].
    pub fn decoder(mut self, options: DecoderOptions) -> Self {
        self.decoder = options;
        self
    }

    /// Checks the settings, picks the device and creates the decoder.
    pub fn build(self) -> Result<Loader, LoaderError> {
        if self.batch_size == 0 {
            return Err(LoaderError::Config("batch size must be at least 1".into()));
        }
        if self.dataset.is_empty() {
            return Err(LoaderError::Config("the dataset is empty".into()));
        }
        let mut chain = self.transforms;
        if let Some((dtype, layout)) = self.output {
            chain.push(Box::new(ToDtype(dtype, layout)));
        }
        let (device, placement) = match self.placement {
            Placement::Gpu(d) => (Some(d), None),
            Placement::Cpu => (None, Some("CPU (asked for)".to_string())),
            Placement::Auto => match gm_cuda::available() {
                Ok(_) => {
                    let ordinal = crate::sampler::DistEnv::from_env()?.map_or(0, |e| e.local_rank);
                    (Some(Device::new(ordinal)?), None)
                }
                Err(e) => {
                    tracing::info!(reason = %e, "no GPU: the loader runs on the CPU");
                    (None, Some(format!("CPU ({e})")))
                }
            },
        };
        let mut decoder = self.decoder;
        decoder.format = PixelFormat::Rgb;
        let (gpu, pool, placement) = match device {
            Some(d) => {
                if let Some(on) = self.blocking_sync {
                    d.set_blocking_sync(on)?;
                }
                let pool = GpuStage::new_batch_pool(&d);
                let stages = (0..self.gpu_stages)
                    .map(|_| {
                        GpuStage::new(&d, decoder.clone(), pool.clone())
                            .map(|s| Arc::new(Mutex::new(s)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let what = format!(
                    "GPU {} ({}), {} stage{}",
                    d.ordinal(),
                    d.name(),
                    stages.len(),
                    if stages.len() == 1 { "" } else { "s" }
                );
                (stages, Some(pool), what)
            }
            None => (Vec::new(), None, placement.unwrap_or_default()),
        };
        let cache = match (self.cache, gpu.first()) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(LoaderError::Config(
                    "the device cache needs a GPU; this loader runs on the CPU".into(),
                ));
            }
            (Some(spec), Some(stage)) => Some(Arc::new(crate::cache::build(
                &mut stage.lock(),
                self.dataset.as_ref(),
                &spec,
            )?)),
        };
        let shared = Arc::new(Shared {
            dataset: self.dataset,
            transforms: Compose(chain),
            seed: self.seed,
            policy: self.policy,
            max_pixels: decoder.max_pixels,
            apply_orientation: decoder.apply_orientation,
            stats: Mutex::new(Stats::default()),
            buffers: Mutex::new(Vec::new()),
            cpu: gpu.is_empty(),
            cache,
            region_decode: self.region_decode,
        });
        Ok(Loader {
            shared,
            gpu,
            batch_pool: pool,
            placement,
            sampler: self.sampler,
            batch_size: self.batch_size,
            drop_last: self.drop_last,
            workers: self.workers.max(1),
            prefetch: self.prefetch.max(1),
        })
    }
}

/// The image loader: iterate [`Loader::epoch`] for each epoch.
pub struct Loader {
    pub(crate) shared: Arc<Shared>,
    pub(crate) gpu: Vec<Arc<Mutex<GpuStage>>>,
    batch_pool: Option<DevicePool>,
    placement: String,
    sampler: Sampler,
    batch_size: usize,
    drop_last: bool,
    workers: usize,
    prefetch: usize,
}

impl Loader {
    /// A builder over `dataset`.
    pub fn builder(dataset: impl Dataset + 'static) -> LoaderBuilder {
        Loader::builder_shared(Arc::new(dataset))
    }

    /// A builder over a shared dataset.
    pub fn builder_shared(dataset: Arc<dyn Dataset>) -> LoaderBuilder {
        LoaderBuilder {
            dataset,
            sampler: Sampler::sequential(),
            batch_size: 32,
            drop_last: false,
            transforms: Vec::new(),
            output: None,
            placement: Placement::Auto,
            workers: 4,
            prefetch: 2,
            policy: BadSamplePolicy::Skip,
            seed: 0,
            decoder: DecoderOptions::for_loader(),
            gpu_stages: 2,
            cache: None,
            blocking_sync: Some(LOADER_BLOCKING_SYNC),
            region_decode: LOADER_REGION_DECODE,
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

    /// Sample order of an epoch.
    fn order(&self, epoch: u64) -> Vec<Vec<usize>> {
        let order = self.sampler.indices(self.shared.dataset.len(), epoch);
        order
            .chunks(self.batch_size)
            .filter(|c| !self.drop_last || c.len() == self.batch_size)
            .map(<[usize]>::to_vec)
            .collect()
    }

    /// Batches in an epoch.
    pub fn batches_per_epoch(&self) -> usize {
        let n = self.sampler.indices(self.shared.dataset.len(), 0).len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// The batches of `epoch`, from the first.
    pub fn epoch(&mut self, epoch: u64) -> Epoch<'_> {
        self.start(epoch, 0)
    }

    /// The batches that follow a saved state.
    pub fn resume(&mut self, state: &LoaderState) -> Result<Epoch<'_>, LoaderError> {
        self.state(0, 0).check_same_loader(state)?;
        Ok(self.start(state.epoch, state.next_batch))
    }

    /// The state before batch `next_batch` of `epoch`.
    pub fn state(&self, epoch: u64, next_batch: usize) -> LoaderState {
        LoaderState {
            epoch,
            next_batch,
            seed: self.shared.seed,
            sampler: self.sampler,
            dataset_len: self.shared.dataset.len(),
            batch_size: self.batch_size,
            drop_last: self.drop_last,
        }
    }

    fn start(&mut self, epoch: u64, first: usize) -> Epoch<'_> {
        let batches = self.order(epoch);
        let base = self.state(epoch, first);
        Epoch::spawn(EpochPlan {
            shared: self.shared.clone(),
            gpu: self.gpu.clone(),
            epoch,
            batches,
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
        }))
    }
}
