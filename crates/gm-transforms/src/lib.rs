//! CUDA image transforms and their CPU reference twins.
//!
//! So far: the fused kernel ([`FusedKernel`]) that takes a batch of images (RGB/BGR, or NV12 /
//! P016 straight from NVDEC surfaces) through colour conversion, crop, resize, flip, normalize
//! and dtype/layout conversion into a batch tensor in one pass, and its CPU twin
//! ([`cpu::fused`]). The separate operations, the `Transform` trait and random augmentation
//! parameters are the rest of issue 6.

pub mod cpu;
mod fused;
mod types;

pub use fused::{FUSED_PTX, FusedKernel};
pub use types::{Crop, FusedOp, Interp, Layout, Matrix, OutputSpec, PixelFormat, SourceImage};
