//! JPEG (and, for mixed datasets, PNG/BMP/WebP/TIFF) decoding into GPU memory.
//!
//! The layers, from the bottom: [`types`] holds the small value types every layer shares;
//! [`header`] reads a JPEG header without decoding and [`route`](mod@route) picks the decoder from it;
//! `nvjpeg_sys` declares nvJPEG's C API (private), [`nvjpeg`] wraps it safely; the batched
//! decoder ([`ImageDecoder`]) sits on top. Its parts:
//!
//! - [`options`]: [`DecoderOptions`] and the choices in it ([`Split`], [`CudaWorkers`], ...).
//! - [`output`]: the inputs and the decoded batch ([`EncodedImage`], [`DecodedBatch`], ...).
//! - [`error`]: per-image errors ([`ImageError`]) and decoder errors ([`DecoderError`]).
//! - `plan` (private): each image's path, the regions and the buffer layout of a batch;
//!   `split` (private): the engines' share and the queue they share with the CUDA workers.
//!
//! Beside it: [`decode_host`] decodes one image on the CPU with the batched decoder's checks;
//! [`color`] turns decoded YCbCr planes into RGB with the CPU decoders' chroma upsampling (a
//! kernel and its CPU twin); [`cpu`] is the CPU fallback (zune-jpeg, and libjpeg-turbo where zune-jpeg differs from it) and
//! EXIF orientation;
//! [`formats`] tells formats apart and decodes the non-JPEG ones on the CPU.

pub mod color;
pub mod cpu;
mod decoder;
pub mod error;
pub mod formats;
pub mod header;
mod host;
mod libjpeg;
pub mod nvjpeg;
mod nvjpeg_sys;
pub mod options;
pub mod output;
mod plan;
pub mod route;
mod split;
pub mod types;

pub use color::{ycc_to_rgb_device, ycc_to_rgb_host};
pub use cpu::{RgbImage, decode_rgb, decode_rgb_libjpeg, needs_libjpeg, orient, to_layout};
pub use decoder::ImageDecoder;
pub use error::{DecoderError, ImageError, ImageErrorKind, ParseOptionError};
pub use formats::{SourceFormat, decode_other_rgb, sniff};
pub use header::{Coding, Component, HeaderError, JpegInfo, Subsampling, parse, scan_damaged};
pub use host::{decode_host, decode_host_with};
pub use nvjpeg::{NvJpeg, NvJpegError, SetupError};
pub use options::{
    BackendChoice, ChromaUpsampling, CudaWorkers, DecoderOptions, Split, SplitKey, Truncated,
};
pub use output::{BatchTimings, DecodePath, DecodedBatch, DecodedImage, EncodedImage, PathCounts};
pub use route::{Backend, DEFAULT_MAX_PIXELS, RouteError, route};
pub use types::{PixelFormat, PlaneLayout, Roi};
