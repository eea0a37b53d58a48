//! GPU decoders of Gradient Mechanics: nvJPEG (batched JPEG decoding on the NVJPG engines,
//! nvJPEG's CUDA backend and the CPU at once) and NVDEC (nvcuvid). Both libraries are opened at
//! run time, never linked, so this crate builds and its users run on machines without them;
//! [`libraries`] finds them and says what is missing.
//!
//! - [`jpeg`]: JPEG headers and the choice of decoder, the batched [`jpeg::ImageDecoder`]
//!   (one pooled device buffer per batch, one result per input), PNG/BMP/WebP/TIFF on the
//!   CPU, and [`jpeg::decode_host`], the CPU path alone for machines without a GPU.
//! - [`nvdec`]: NVDEC sessions executing `gm-demux` decode plans, fed through the packet seam
//!   between containers and decoders, and a pool of sessions on worker threads.
//! - [`avcodec`]: the CPU video decoder (FFmpeg's libavcodec, loaded at run time) executing
//!   the same plans, for streams NVDEC lacks and machines without a GPU; [`route`]: which
//!   decoder a stream goes to (`auto`, `gpu`, `cpu`).
//! - [`libraries`]: finding nvJPEG and nvcuvid; [`engines`]: decode engines per GPU.
//!
//! ```no_run
//! use gm_codec::jpeg::{DEFAULT_MAX_PIXELS, decode_host};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let data = std::fs::read("photo.jpg")?;
//! let image = decode_host(&data, DEFAULT_MAX_PIXELS, true)?; // RGB, turned upright by EXIF
//! assert_eq!(image.rgb.len(), image.width as usize * image.height as usize * 3);
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "bundled-av1")]
mod av1;
pub mod avcodec;
pub mod engines;
mod error;
pub mod jpeg;
pub mod libraries;
pub mod nvdec;
pub mod pool;
pub mod route;

pub use engines::{EngineCounts, engines_for};
pub use error::{CodecError, Result, UnsupportedStream};
pub use libraries::{LibraryError, LoadedLibrary, NvLibrary, open_library};
pub use pool::{PoolHandle, WorkerPool};
pub use route::{DecoderChoice, DecoderChoiceError, Route, Routing, StreamKind};
