//! Errors of the decoders.

use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = CodecError> = std::result::Result<T, E>;

/// What went wrong decoding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The CUDA layer failed (no GPU, out of memory, ...).
    #[error(transparent)]
    Cuda(#[from] gm_cuda::CudaError),
    /// The container or bitstream could not be read.
    #[error(transparent)]
    Demux(#[from] gm_demux::DemuxError),
    /// A decoding library is missing.
    #[error(transparent)]
    Library(#[from] crate::libraries::LibraryError),
    /// The GPU's decoder cannot take this stream.
    #[error("{0}")]
    Unsupported(Box<UnsupportedStream>),
    /// An nvcuvid call failed.
    #[error("{file}: {op} failed with CUDA error {code}")]
    Nvdec {
        /// The file being decoded.
        file: PathBuf,
        /// The call.
        op: &'static str,
        /// Its CUresult.
        code: u32,
    },
    /// The decoder did not produce a requested frame, or produced it damaged.
    #[error("{file}: frame {frame}: {reason}")]
    Decode {
        /// The file.
        file: PathBuf,
        /// Presentation index of the frame.
        frame: u32,
        /// What happened.
        reason: String,
    },
    /// Creating a decoder would pass the pool's GPU memory budget.
    #[error(
        "out of decoder memory: an NVDEC decoder needs {requested} bytes, {in_use} of the {budget}-byte budget (0: none set) are in use by other sessions, and the GPU or the budget has no room; lower the number of decode sessions, or free GPU memory"
    )]
    OutOfDecoderMemory {
        /// Bytes the new decoder needs.
        requested: usize,
        /// Bytes held by the pool's decoders.
        in_use: usize,
        /// The budget.
        budget: usize,
    },
    /// No decoder on this machine's CPU takes the codec.
    #[error("{codec} on the CPU: {reason}")]
    NoCpuDecoder {
        /// The codec.
        codec: &'static str,
        /// What is missing, and what to install or set.
        reason: String,
    },
    /// A setting's value is not understood.
    #[error("{0}")]
    Setting(String),
    /// A consumer callback failed; its message.
    #[error("frame consumer failed: {0}")]
    Consumer(String),
    /// The decoder pool was shut down or a worker died.
    #[error("decoder pool: {0}")]
    Pool(String),
}

/// A stream the GPU's decoder cannot take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedStream {
    /// The file.
    pub file: PathBuf,
    /// Codec name.
    pub codec: String,
    /// Profile name.
    pub profile: String,
    /// Chroma format (4:2:0, 4:2:2, 4:4:4, monochrome).
    pub chroma: String,
    /// Luma bit depth.
    pub bit_depth: u8,
    /// Coded width.
    pub width: u32,
    /// Coded height.
    pub height: u32,
    /// The GPU's name.
    pub gpu: String,
    /// What the capability query said.
    pub reason: String,
}

impl std::fmt::Display for UnsupportedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} {}, chroma format {}, {}-bit, {}x{}: not decodable by NVDEC on {}: {}",
            self.file.display(),
            self.codec,
            self.profile,
            self.chroma,
            self.bit_depth,
            self.width,
            self.height,
            self.gpu,
            self.reason
        )
    }
}
