//! Gradient Mechanics batches as candle and burn tensors.
//!
//! Each framework is a cargo feature: `candle` (CPU tensors), `candle-cuda` (candle's CUDA
//! backend: a device copy on candle's stream, or zero-copy handover of the batch memory),
//! `burn` (any burn backend, through host memory). gm and the frameworks share the device's
//! primary CUDA context, so gm's device pointers are valid in theirs (checked at each
//! handoff).
//!
//! Stream order is kept as with PyTorch: the framework's stream waits on the batch's ready
//! event, and a batch's pooled memory returns to gm's pool only after the framework's copy
//! has run (`record_stream`). The measured cost of each path is in `docs/interop.md`.
//!
//! ```no_run
//! # #[cfg(feature = "candle")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use gm_interop::candle::{Handoff, batches};
//! use gm_loader::{ImageFolder, Loader};
//! let mut loader = Loader::builder(ImageFolder::new("train/")?).batch_size(256).build()?;
//! let device = candle_core::Device::Cpu; // or Device::new_cuda(0)? with `candle-cuda`
//! for pair in batches(loader.epoch(0), &device, Handoff::Copy) {
//!     let (images, labels) = pair?;
//!     assert_eq!(images.dims()[0], labels.dims()[0]);
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "candle"))]
//! # fn main() {}
//! ```

mod error;
#[cfg(any(feature = "candle-cuda", feature = "burn-cuda"))]
mod foreign;
#[cfg(any(feature = "candle", feature = "burn"))]
mod host;

#[cfg(feature = "burn")]
pub mod burn;
#[cfg(feature = "candle")]
pub mod candle;

pub use error::InteropError;
