//! Which decoder a video stream goes to: NVDEC where the GPU's decoder takes it, the CPU
//! (libavcodec) where it cannot or where the user asks.

use std::fmt;
use std::str::FromStr;

/// The user's choice of video decoder, the same everywhere (Rust builders, Python, `gm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DecoderChoice {
    /// NVDEC where it can decode the stream (codec, profile, chroma format, bit depth, size),
    /// else the CPU; the CPU alone on a machine without a GPU.
    #[default]
    Auto,
    /// NVDEC only: a stream it cannot decode is refused with the reason.
    Gpu,
    /// The CPU only (libavcodec), frames then go through the same pipeline.
    Cpu,
}

impl DecoderChoice {
    /// The spelling `FromStr` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            DecoderChoice::Auto => "auto",
            DecoderChoice::Gpu => "gpu",
            DecoderChoice::Cpu => "cpu",
        }
    }
}

impl fmt::Display for DecoderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decoder choice that is not `auto`, `gpu` or `cpu`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("decoder {0:?}: expected auto, gpu or cpu")]
pub struct DecoderChoiceError(pub String);

impl FromStr for DecoderChoice {
    type Err = DecoderChoiceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(DecoderChoice::Auto),
            "gpu" | "nvdec" => Ok(DecoderChoice::Gpu),
            "cpu" | "ffmpeg" => Ok(DecoderChoice::Cpu),
            _ => Err(DecoderChoiceError(s.to_string())),
        }
    }
}

/// Where one stream is decoded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// On the GPU's NVDEC engines.
    Nvdec,
    /// On the CPU through libavcodec.
    Cpu {
        /// Why: the user asked, or what NVDEC's capability query said.
        reason: String,
    },
}

impl Route {
    /// `nvdec` or `cpu`.
    pub fn decoder(&self) -> &'static str {
        match self {
            Route::Nvdec => "nvdec",
            Route::Cpu { .. } => "cpu",
        }
    }

    /// Whether the stream goes to the CPU.
    pub fn is_cpu(&self) -> bool {
        matches!(self, Route::Cpu { .. })
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Nvdec => f.write_str("nvdec"),
            Route::Cpu { reason } => write!(f, "cpu ({reason})"),
        }
    }
}

/// What NVDEC's capability answer depends on: a stream's codec, profile, chroma format, bit
/// depth and size. Streams of one kind are routed alike, so routes and warnings are kept per
/// kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKind {
    codec: gm_demux::Codec,
    profile_idc: u8,
    chroma_format: u8,
    bit_depth: u8,
    width: u32,
    height: u32,
}

impl StreamKind {
    /// The kind of the stream `codec` describes.
    pub fn of(codec: &gm_demux::CodecInfo) -> StreamKind {
        StreamKind {
            codec: codec.codec,
            profile_idc: codec.profile_idc,
            chroma_format: codec.chroma_format,
            bit_depth: codec.bit_depth,
            width: codec.width,
            height: codec.height,
        }
    }
}

impl fmt::Display for StreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} profile {}, chroma format {}, {}-bit, {}x{}",
            self.codec.name(),
            self.profile_idc,
            self.chroma_format,
            self.bit_depth,
            self.width,
            self.height
        )
    }
}

/// How a session routes streams: the choice and the CPU decoder's threads per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routing {
    /// Auto, GPU only or CPU only.
    pub choice: DecoderChoice,
    /// libavcodec threads per open file (0: libavcodec picks from the machine's cores).
    pub cpu_threads: usize,
}

impl Default for Routing {
    /// Auto, one libavcodec thread per file: loaders decode many short runs on several
    /// sessions at once, where more sessions beat more threads per run (AV1 640x480 GOP 2,
    /// random pairs of frames: 4.9 ms a frame with 1 thread, 5.1 with 2, on the same core
    /// count per frame).
    fn default() -> Self {
        Routing {
            choice: DecoderChoice::Auto,
            cpu_threads: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_in_any_case_and_print_back() {
        for c in [DecoderChoice::Auto, DecoderChoice::Gpu, DecoderChoice::Cpu] {
            assert_eq!(c.to_string().parse::<DecoderChoice>(), Ok(c));
            assert_eq!(c.as_str().to_uppercase().parse::<DecoderChoice>(), Ok(c));
        }
        let e = "nvjpg".parse::<DecoderChoice>().unwrap_err().to_string();
        assert_eq!(e, "decoder \"nvjpg\": expected auto, gpu or cpu");
    }
}
