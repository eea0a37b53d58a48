//! CUDA image transforms and their CPU reference twins.
//!
//! So far: the fused kernel ([`FusedKernel`]) that takes a batch of images (RGB/BGR, or NV12 /
//! P016 straight from NVDEC surfaces) through colour conversion, crop, resize, flip, normalize
//! and dtype/layout conversion into a batch tensor in one pass, and its CPU twin
//! ([`cpu::fused`]); the [`Transform`] steps that a [`Compose`] chain plans, on the CPU and
//! with per-sample seeded randomness, into that kernel's parameters; and nested [`sample`]
//! structures whose images a chain reaches through the [`sample::Visit`] trait.

pub mod cpu;
mod fused;
mod plan;
pub mod sample;
mod types;

pub use fused::{FUSED_PTX, FusedKernel};
pub use plan::{
    CenterCrop, Compose, CropBox, Filter, Grey, HorizontalFlip, Normalize, Pad, PlanError,
    PlanState, RandomResizedCrop, Resize, SampleRng, ToBgr, ToDtype, Transform, VerticalFlip,
};
pub use types::{
    Crop, FusedOp, Interp, Layout, Matrix, OutputSpec, Padding, PixelFormat, SourceImage,
};
