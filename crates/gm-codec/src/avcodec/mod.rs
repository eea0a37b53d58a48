//! Video decoding on the CPU through FFmpeg's libavcodec, opened at run time as torchcodec
//! opens it (FFmpeg 4.4 to 8.x: libavcodec 58 to 62), never linked: the crate builds without
//! FFmpeg, and a machine without it gets a one-line error naming what to install.
//!
//! [`CpuDecoder`] executes the same gm-demux [`DecodePlan`](gm_demux::DecodePlan)s as NVDEC
//! sessions and hands each requested frame to a consumer as a [`HostFrame`]. AV1 also decodes
//! without FFmpeg, through the bundled rav1d ([`Av1Backend`], `crate::av1`). NVDEC sessions
//! route streams the GPU cannot decode here (see [`crate::route`]); tools and the loaders use
//! it directly where there is no GPU.

mod cpu;
mod decoder;
mod ffi;
mod frame;
mod layout;
pub(crate) mod run;
pub mod testing;

pub use cpu::{AV1_DECODER_VARIABLE, Av1Backend, CpuDecoder};
pub use decoder::CpuDecoderStats;
pub use ffi::FFMPEG_DIR_VARIABLE;
pub use frame::{ChromaLayout, HostFrame};
