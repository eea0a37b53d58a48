//! The video path: fixed-length clips (episodes) from many videos or multi-camera scenes,
//! decoded on a pool of NVDEC sessions and written by the fused kernel straight from each
//! mapped surface into `[B, T, C, H, W]` (or `[B, cameras, T, C, H, W]`) batch tensors.
//!
//! Batches go to the sessions in jobs of consecutive batches. One decode plan per video per
//! job requests every frame the job's clips need, so overlapping clips share decoding and
//! each run starts at the right keyframe (open-GOP leading pictures included: that is
//! `gm-demux`'s plan). With a sequential sampler (stream access) jobs span several batches,
//! so each GOP is decoded once per job rather than once per batch; with a shuffled sampler
//! (random access) a job is one batch and decodes only what its plan needs. A clip's frames
//! (every camera's) get the augmentation drawn from (seed, epoch, episode).

mod batch;
mod builder;
mod dataset;
mod decode;
mod jobs;
mod order;
mod pipeline;
mod stats;
mod worker;

pub use batch::ClipBatch;
pub use builder::{ClipLoader, ClipLoaderBuilder};
pub(crate) use dataset::ExplicitScene;
pub use dataset::{
    BadFiles, Clip, EpisodeSpec, VIDEO_EXTENSIONS, VideoDataset, VideoDatasetBuilder,
    index_file_name,
};
pub use decode::{chroma_filter, kernel_orientation, surface_format, surface_source};
pub use pipeline::ClipEpoch;
pub use stats::ClipStats;
pub use worker::PackedFrame;
