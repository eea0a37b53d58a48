//! The loading pipelines of Gradient Mechanics: from a folder of images, or from videos and
//! multi-camera scenes, to normalized batches in GPU memory.
//!
//! - [`Dataset`]: indexable samples (bytes from a path or memory, and a label); built in:
//!   [`ImageFolder`] (class subdirectories), [`ListFile`] (path and label per line),
//!   [`InMemory`].
//! - [`Sampler`]: sequential or seeded shuffled order, optionally sharded by rank like
//!   PyTorch's `DistributedSampler` ([`Shard`], read from `RANK`/`WORLD_SIZE` or Slurm).
//! - [`Loader::builder`]: dataset, sampler, batch size, transforms (`gm-transforms`), device,
//!   host workers, prefetch depth and [`BadSamplePolicy`]; [`Loader::epoch`] yields
//!   [`Batch`]es in sampler order.
//! - [`WebDataset`]: WebDataset tar shards (local or remote, brace patterns), indexed in
//!   DALI's `.idx` format so that sample `i` is a ranged read.
//! - [`VideoDataset`] and [`ClipLoader`]: episodes of videos or multi-camera scenes decoded on
//!   a pool of NVDEC sessions into [`ClipBatch`]es.
//!
//! The image pipeline: host workers read files into reused buffers; GPU stages decode each
//! batch (`gm-codec`'s [`ImageDecoder`](gm_codec::jpeg::ImageDecoder): NVJPG engines, CUDA
//! backend and CPU at once) and run the fused transform kernel into a pooled batch tensor on
//! the decoder's stream; a batch carries the event it is ready on, and a consumer's stream
//! waits on it before reading. Without a GPU the same pipeline decodes on the CPU and runs the
//! transforms' CPU twins into host tensors. With [`LoaderBuilder::device_cache`], every image
//! is decoded and resized once into GPU memory and each epoch only runs the augmentations.
//!
//! Determinism: the samples of a batch depend only on the sampler (seed, epoch, shard), and
//! each sample's augmentation only on (seed, epoch, dataset index), so the worker count never
//! changes a batch; [`LoaderState`] saves and restores the position within an epoch.
//!
//! ```no_run
//! use gm_cuda::DType;
//! use gm_loader::{BadSamplePolicy, ImageFolder, Loader, Sampler};
//! use gm_transforms::{Layout, Normalize, RandomResizedCrop, ToDtype, Transform};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let chain: Vec<Box<dyn Transform>> = vec![
//!     Box::new(RandomResizedCrop::new(224, 224)),
//!     Box::new(Normalize::IMAGENET),
//!     Box::new(ToDtype(DType::F16, Layout::Chw)),
//! ];
//! let mut loader = Loader::builder(ImageFolder::new("train/")?)
//!     .sampler(Sampler::shuffled(42))
//!     .batch_size(256)
//!     .transforms(chain)
//!     .bad_samples(BadSamplePolicy::Skip)
//!     .build()?; // the GPU if there is one, else the CPU
//! for batch in loader.epoch(0) {
//!     let batch = batch?;
//!     println!("{:?} {:?}", batch.images.shape(), batch.labels);
//! }
//! # Ok(())
//! # }
//! ```

mod bad_samples;
pub mod coco;
mod elastic;
mod epochs;
mod error;
mod grouped;
mod image;
mod lerobot;
mod numa;
mod progress;
mod release;
mod sampler;
mod sched;
pub mod segmentation;
mod settings;
pub mod shards;
mod state;
mod tensors;
mod video;

pub use bad_samples::{BadSamplePolicy, MAX_SUBSTITUTES};
pub use elastic::Reshard;
pub use epochs::{EpochSource, Epochs, PRESTART_AT};
pub use error::{DatasetError, LoaderError, SampleError, SampleErrorKind};
pub use grouped::{GroupedBatchSampler, aspect_ratio_groups};
pub use image::{
    Batch, BatchMasks, BatchSizes, Dataset, DeviceCache, Epoch, IMAGE_EXTENSIONS, ImageFolder,
    InMemory, Label, ListFile, Loader, LoaderBuilder, MaskPart, MaskSource, MovedSample,
    PathTotals, Stats, Waited, cached_size,
};
pub use image::{
    CorePlan, ENGINES_ONLY_BELOW, LOADER_BLOCKING_SYNC, LOADER_REGION_DECODE, default_core_budget,
    local_loaders,
};
pub use image::{DeviceTargets, TargetPlace, TargetPlaces};
pub use lerobot::{
    DEFAULT_TOLERANCE_S, LeRobotDataset, LeRobotDatasetBuilder, LeRobotError, LeRobotInfo,
    LeRobotSample,
};
pub use numa::{NodeCpus, allowed_cpus, format_cpulist, parse_cpulist};
pub use progress::Progress;
pub use sampler::{DistEnv, Order, Sampler, Shard};
pub use shards::{ShardError, WebDataset, WebDatasetBuilder};
pub use state::LoaderState;
pub use tensors::{HostTensor, Images};
pub use video::{
    BadFiles, Clip, ClipBatch, ClipEpoch, ClipLoader, ClipLoaderBuilder, ClipStats, EpisodeSpec,
    PackedFrame, VIDEO_EXTENSIONS, VideoDataset, VideoDatasetBuilder, chroma_filter,
    index_file_name, kernel_orientation, surface_format, surface_source,
};
