//! GPU decoders: nvJPEG (batched JPEG decoding on the NVJPG engines and CUDA) and NVDEC
//! (nvcuvid). Both libraries are opened at run time, never linked, so this crate builds and
//! its users run on machines without them; [`libraries`] finds them and says what is missing.
//!
//! So far the crate holds the run-time library discovery and the table of decode engines per
//! GPU that `gm info` reports; the decoders arrive with issues 4 (NVDEC) and 5 (nvJPEG).

pub mod engines;
pub mod libraries;

pub use engines::{EngineCounts, engines_for};
pub use libraries::{LibraryError, LoadedLibrary, NvLibrary, open_library};
