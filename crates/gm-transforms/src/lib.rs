//! CUDA image transforms and their CPU reference twins.
//!
//! The fused kernel ([`FusedKernel`]) takes a batch of images (RGB/BGR, or NV12 / P016
//! straight from NVDEC surfaces) through colour conversion, crop, resize, flip, photometric
//! operations ([`colour`], torchvision's uint8 semantics), affine and perspective warps
//! ([`geometry`], one sampling grid that the crops, resizes and flips fold into), normalize and dtype/layout
//! conversion into a batch tensor in one pass; [`cpu::fused`] is its CPU twin.
//! The [`Transform`] steps that a [`Compose`] chain plans, on the CPU and with per-sample
//! seeded randomness ([`SampleRng`]), become that kernel's parameters ([`FusedOp`],
//! [`OutputSpec`]); nested [`sample`] structures reach their images through the
//! [`sample::Visit`] trait. After the chain, [`RandomErasing`] (per sample) and [`BatchMix`]
//! (MixUp/CutMix, per batch) work in place on the batch tensor ([`BatchOpsKernel`], CPU twins
//! [`erase_batch`] and [`mix_batch`]). [`GaussianBlur`] and [`GaussianNoise`] stop the fusion:
//! [`Compose::plan_post`] plans them as passes after the fused kernel ([`BlurKernel`], CPU
//! twins [`blur_batch`] and [`noise_batch`]).
//!
//! ```
//! use gm_transforms::cpu::{HostImage, fused};
//! use gm_transforms::{Compose, HorizontalFlip, Normalize, RandomResizedCrop, SampleRng, Transform};
//!
//! # fn main() -> Result<(), gm_transforms::PlanError> {
//! let steps: Vec<Box<dyn Transform>> = vec![
//!     Box::new(RandomResizedCrop::new(32, 32)),
//!     Box::new(HorizontalFlip(0.5)),
//!     Box::new(Normalize::IMAGENET),
//! ];
//! // The plan of sample 3 of epoch 0: the same on the GPU and in the CPU twin.
//! let (op, spec) = Compose(steps).plan_image(64, 48, &mut SampleRng::new(7, 0, 3))?;
//! let pixels = vec![128u8; 64 * 48 * 3];
//! let mut out = vec![0u8; spec.image_bytes()];
//! fused(&HostImage::rgb8(&pixels, 64, 48), &op, &spec, &mut out);
//! assert_eq!((spec.width, spec.height), (32, 32));
//! # Ok(())
//! # }
//! ```

mod aa_exact;
pub mod apply;
mod batch_ops;
mod blur;
mod blur_kernel;
mod chroma;
pub mod colour;
pub mod cpu;
mod detection;
pub mod draw;
mod elements;
mod erase;
mod fused;
pub mod geometry;
mod hsv;
mod mask_runs_kernel;
mod mix;
mod noise;
mod photometric;
mod plan;
pub mod policies;
mod policy_sequence;
mod policy_tables;
mod random_crop;
pub mod sample;
pub mod targets;
mod types;

pub use batch_ops::{BATCH_OPS_PTX, BatchOpsKernel};
pub use blur::{Blur, GaussianBlur, blur_batch, blur_image, gaussian_kernel1d};
pub use blur_kernel::{BLUR_PTX, BlurKernel};
pub use chroma::{ChromaFilter, ChromaTaps, chroma_taps};
pub use colour::{ColourOp, ColourOps};
pub use detection::{
    FixedSizeCrop, RandomIoUCrop, RandomResize, RandomShortestSize, RandomZoomOut, ScaleJitter,
};
pub use erase::{
    Erase, EraseFill, ErasingValue, RandomErasing, erase_batch, erase_image, erase_noise,
};
pub use fused::{FUSED_PTX, FusedKernel, MaskGather};
pub use geometry::{Affine, Perspective, RandomAffine, RandomPerspective, RandomRotation, Rotate};
pub use mask_runs_kernel::{MASK_RUNS_PTX, MaskRunJob, MaskRunsKernel};
pub use mix::{BatchMix, Mix, cut_box, mix_batch};
pub use noise::{GaussianNoise, Noise, noise_batch, noise_image};
pub use photometric::{
    ColorJitter, RandomAdjustSharpness, RandomAutocontrast, RandomEqualize, RandomGrayscale,
    RandomInvert, RandomPosterize, RandomSolarize,
};
pub use plan::{
    CenterCrop, Compose, CropBox, Filter, Grey, HorizontalFlip, Normalize, Pad, Passes, PlanError,
    PlanState, RandomResizedCrop, Resize, SampleRng, ToBgr, ToDtype, Transform, VerticalFlip,
};
pub use policies::{AugmentOp, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide};
pub use random_crop::RandomCrop;
pub use types::{
    Crop, FusedOp, Interp, Layout, Matrix, Orientation, OutputSpec, Padding, PixelFormat, PrePass,
    Slot, SourceImage, Warp,
};
