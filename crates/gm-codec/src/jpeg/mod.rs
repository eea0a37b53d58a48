//! JPEG (and, for mixed datasets, PNG/BMP/WebP/TIFF) decoding into GPU memory.
//!
//! - [`header`] reads a JPEG header without decoding; [`route`] picks the decoder from it.
//! - [`batch`] is the batched decoder: the NVJPG engines, nvJPEG's CUDA backend and the CPU
//!   at the same time, one result per input, one pooled device buffer per batch.
//! - [`decode_host`] decodes one image on the CPU with the batched decoder's checks.
//! - [`color`] turns decoded YCbCr planes into RGB with the CPU decoders' chroma
//!   upsampling (a kernel and its CPU twin).
//! - [`cpu`] is the CPU fallback (zune-jpeg) and EXIF orientation; [`formats`] tells formats
//!   apart and decodes the non-JPEG ones on the CPU.
//! - [`nvjpeg`] owns nvJPEG's handles; its raw declarations stay private to this module.

pub mod batch;
pub mod color;
pub mod cpu;
pub mod formats;
pub mod header;
mod host;
pub mod nvjpeg;
mod nvjpeg_sys;
pub mod route;

pub use batch::{
    BackendChoice, BatchTimings, ChromaUpsampling, DecodePath, DecodedBatch, DecodedImage,
    DecoderError, DecoderOptions, EncodedImage, ImageDecoder, ImageError, ImageErrorKind,
    PathCounts, PixelFormat, Roi, to_layout,
};
pub use color::{PlaneLayout, ycc_to_rgb_device, ycc_to_rgb_host};
pub use cpu::{RgbImage, decode_rgb, orient};
pub use formats::{SourceFormat, decode_other_rgb, sniff};
pub use header::{Coding, Component, HeaderError, JpegInfo, Subsampling, parse};
pub use host::decode_host;
pub use nvjpeg::{NvJpeg, NvJpegError};
pub use route::{Backend, DEFAULT_MAX_PIXELS, RouteError, route};
