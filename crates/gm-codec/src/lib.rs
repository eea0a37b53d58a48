//! GPU decoders: nvJPEG (batched JPEG decoding on the NVJPG engines and CUDA) and NVDEC
//! (nvcuvid). Both libraries are opened at run time, never linked, so this crate builds and
//! its users run on machines without them; [`libraries`] finds them and says what is missing.
//!
//! - [`nvdec`]: NVDEC sessions executing gm-demux decode plans, and a pool of them.
//! - [`libraries`]: finding nvJPEG and nvcuvid; [`engines`]: decode engines per GPU.
//!
//! - [`jpeg`]: JPEG headers and the choice of decoder; the nvJPEG decoders arrive with issue 5.

pub mod engines;
mod error;
pub mod jpeg;
pub mod libraries;
pub mod nvdec;

pub use engines::{EngineCounts, engines_for};
pub use error::{CodecError, Result, UnsupportedStream};
pub use libraries::{LibraryError, LoadedLibrary, NvLibrary, open_library};
