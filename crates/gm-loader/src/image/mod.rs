//! The image pipeline: datasets of encoded images, host workers reading them, GPU (or CPU)
//! stages decoding and transforming them into batches.
//!
//! Imports point one way: `builder` -> `pipeline` -> the stages (`gpu_stage`, `cpu_stage`)
//! (and `augment`, their draws after the chain; `masks`, the masks moved with the images) -> `read` -> `context` -> the value types (`cache`, `batch`, `output`, `sizes`, `dataset`, `stats`).

mod augment;
mod batch;
mod builder;
mod cache;
mod context;
mod cores;
mod cpu_stage;
mod dataset;
mod device_targets;
mod files;
mod gpu_stage;
mod mask_source;
mod masks;
mod output;
mod pipeline;
mod read;
mod sizes;
mod stats;
mod stream_feed;

pub use batch::{Batch, MovedSample};
pub use builder::{LOADER_BLOCKING_SYNC, LOADER_REGION_DECODE, Loader, LoaderBuilder};
pub use cache::{DeviceCache, cached_size};
pub use cores::{CorePlan, ENGINES_ONLY_BELOW, default_core_budget, local_loaders};
pub(crate) use dataset::read_file;
pub use dataset::{Dataset, IMAGE_EXTENSIONS, ImageFolder, InMemory, Label, ListFile};
pub use device_targets::{DeviceTargets, TargetPlace, TargetPlaces};
pub use mask_source::MaskSource;
pub(crate) use mask_source::{into_stack, is_kept};
pub use masks::{BatchMasks, MaskPart};
pub use pipeline::{Epoch, Waited};
pub use sizes::BatchSizes;
pub use stats::{PathTotals, Stats};
