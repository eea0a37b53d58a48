//! `CpuDecoder`: the host's video decoder, libavcodec for every codec it has and, for AV1, the
//! bundled rav1d where FFmpeg or its libdav1d is missing (or where asked).

use std::str::FromStr;

use gm_demux::{Codec, DecodePlan, PacketSource};

use super::decoder::{CpuDecoderStats, Libav, describe, has_decoder};
use super::frame::HostFrame;
use crate::error::{CodecError, Result};
use crate::nvdec::ColourInfo;

/// The environment variable that picks the AV1 decoder of [`CpuDecoder::new`]: `auto`,
/// `libavcodec` or `bundled`.
pub const AV1_DECODER_VARIABLE: &str = "GM_AV1_DECODER";

/// Which library decodes AV1 on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Av1Backend {
    /// FFmpeg's libdav1d wrapper where FFmpeg has it (dav1d with its assembly, as the ffmpeg
    /// tool and torchcodec decode AV1), else the bundled decoder.
    #[default]
    Auto,
    /// FFmpeg's libdav1d wrapper only.
    Libavcodec,
    /// rav1d, built into gm (the `bundled-av1` feature): needs nothing installed.
    Bundled,
}

impl FromStr for Av1Backend {
    type Err = CodecError;

    fn from_str(s: &str) -> Result<Av1Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Av1Backend::Auto),
            "libavcodec" | "ffmpeg" | "libdav1d" => Ok(Av1Backend::Libavcodec),
            "bundled" | "rav1d" => Ok(Av1Backend::Bundled),
            other => Err(CodecError::Setting(format!(
                "{AV1_DECODER_VARIABLE}={other:?}: expected auto, libavcodec or bundled"
            ))),
        }
    }
}

impl Av1Backend {
    /// The choice in [`AV1_DECODER_VARIABLE`] (`Auto` when unset).
    pub fn from_env() -> Result<Av1Backend> {
        std::env::var(AV1_DECODER_VARIABLE).map_or(Ok(Av1Backend::Auto), |v| v.parse())
    }

    /// Whether AV1 goes to the bundled decoder on this machine.
    fn bundled_here(self) -> bool {
        match self {
            Av1Backend::Bundled => true,
            Av1Backend::Libavcodec => false,
            Av1Backend::Auto => cfg!(feature = "bundled-av1") && !has_decoder("libdav1d"),
        }
    }
}

/// A video decoder on the host that executes the same gm-demux plans as NVDEC sessions and
/// hands each requested frame to a consumer as a [`HostFrame`]: the CPU counterpart of
/// [`DecoderSession`](crate::nvdec::DecoderSession), for codecs or profiles NVDEC lacks (AV1
/// on Hopper, H.264 4:4:4) and machines without a GPU. H.264, HEVC and VP9 go to FFmpeg's
/// libavcodec, opened at run time; AV1 to libavcodec's libdav1d wrapper or the bundled rav1d
/// ([`Av1Backend`]). Frames equal ffmpeg's software decode. Not shareable between threads;
/// use one per host thread.
pub struct CpuDecoder {
    threads: usize,
    av1: Av1Backend,
    libav: Option<Libav>,
    #[cfg(feature = "bundled-av1")]
    bundled: Option<crate::av1::Rav1d>,
}

impl std::fmt::Debug for CpuDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuDecoder")
            .field("threads", &self.threads)
            .field("av1", &self.av1)
            .finish()
    }
}

impl CpuDecoder {
    /// A decoder using `threads` libavcodec threads per file (0: libavcodec picks from the
    /// machine's cores; the bundled AV1 decoder always runs on the calling thread alone), AV1
    /// as [`AV1_DECODER_VARIABLE`] says. Libraries open on first use:
    /// a codec that needs FFmpeg where none is found fails then, with a one-line error naming
    /// what to install.
    pub fn new(threads: usize) -> Result<CpuDecoder> {
        Ok(CpuDecoder::with_av1(threads, Av1Backend::from_env()?))
    }

    /// A decoder with `threads` threads per file and AV1 on `av1`.
    pub fn with_av1(threads: usize, av1: Av1Backend) -> CpuDecoder {
        CpuDecoder {
            threads,
            av1,
            libav: None,
            #[cfg(feature = "bundled-av1")]
            bundled: None,
        }
    }

    /// Which FFmpeg was loaded: `libavcodec 59.37.100 from libavcodec.so.59`, or the error
    /// naming what to install.
    pub fn library() -> Result<String> {
        describe()
    }

    /// Which library decodes `codec` on this machine with AV1 on `av1` (`libavcodec`,
    /// `libavcodec (libdav1d)` or `rav1d (bundled)`), or why none can.
    pub fn backend_for(codec: Codec, av1: Av1Backend) -> Result<&'static str> {
        if codec == Codec::Av1 && av1.bundled_here() {
            return if cfg!(feature = "bundled-av1") {
                Ok("rav1d (bundled)")
            } else {
                Err(CodecError::NoCpuDecoder {
                    codec: "AV1",
                    reason: "this build of gm-codec has no bundled decoder (feature `bundled-av1`)"
                        .into(),
                })
            };
        }
        describe()?;
        if codec == Codec::Av1 {
            if !has_decoder("libdav1d") {
                return Err(CodecError::NoCpuDecoder {
                    codec: "AV1",
                    reason: format!(
                        "{} has no libdav1d decoder; install an FFmpeg built with it or use the \
                         bundled decoder ({AV1_DECODER_VARIABLE}=bundled)",
                        describe()?
                    ),
                });
            }
            return Ok("libavcodec (libdav1d)");
        }
        Ok("libavcodec")
    }

    /// Counters so far, over both libraries.
    pub fn stats(&self) -> CpuDecoderStats {
        let libav = self.libav.as_ref().map(Libav::stats).unwrap_or_default();
        #[cfg(feature = "bundled-av1")]
        let libav = libav + self.bundled.as_ref().map(|b| b.stats()).unwrap_or_default();
        libav
    }

    /// Decodes `plan` with packets from `source`, calling `consumer` for every requested frame
    /// (in display order within each run; [`HostFrame::slots`] says where each belongs).
    pub fn decode(
        &mut self,
        source: &dyn PacketSource,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        // The demuxer's chroma location follows ffmpeg's rules (bitstream, codec default,
        // container) where libavcodec alone would miss the container's.
        let chroma_location = source.chroma_location();
        let consumer = &mut |f: &HostFrame<'_>| {
            consumer(&HostFrame {
                colour: ColourInfo {
                    chroma_location,
                    ..f.colour
                },
                ..*f
            })
        };
        #[cfg(feature = "bundled-av1")]
        if source.codec().codec == Codec::Av1 && self.av1.bundled_here() {
            let bundled = match &mut self.bundled {
                Some(b) => b,
                slot => slot.insert(crate::av1::Rav1d::new(source.name())?),
            };
            return bundled.decode(source, plan, consumer);
        }
        if source.codec().codec == Codec::Av1
            && let Err(e) = Self::backend_for(Codec::Av1, self.av1)
        {
            return Err(CodecError::Decode {
                file: source.name().to_path_buf(),
                frame: 0,
                reason: e.to_string(),
            });
        }
        let libav = match &mut self.libav {
            Some(l) => l,
            slot => slot.insert(Libav::new(self.threads)?),
        };
        libav.decode(source, plan, consumer)
    }
}
