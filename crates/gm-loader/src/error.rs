//! What can go wrong while loading, for one sample or for the whole loader.

use std::path::PathBuf;

use gm_codec::jpeg::ImageErrorKind;
use gm_codec::nvdec::FrameStatus;
use gm_episodes::EpisodeError;
use gm_transforms::{OutputSpec, PlanError};

/// A dataset could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// A directory or list file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// A line of a list file is not `path label`.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The list file.
        path: PathBuf,
        /// Line number, from 1.
        line: usize,
        /// The reason.
        reason: String,
    },
    /// No samples.
    #[error("{0}: no images found")]
    Empty(PathBuf),
}

/// One sample that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("sample {index} ({name}): {reason}")]
pub struct SampleError {
    /// Index in the dataset.
    pub index: usize,
    /// File path or name.
    pub name: String,
    /// The reason.
    pub reason: SampleErrorKind,
}

/// Why a sample (an image, a clip, a video file) could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleErrorKind {
    /// The file could not be read.
    #[error("cannot read: {message}")]
    Read {
        /// The I/O error's kind (`NotFound`, `PermissionDenied`, ...).
        kind: std::io::ErrorKind,
        /// The I/O error in words.
        message: String,
    },
    /// The image could not be decoded (not an image, truncated, corrupt, too large...).
    #[error(transparent)]
    Decode(#[from] ImageErrorKind),
    /// The decoder gave back an image of another size than its header said.
    #[error("decoded as {width}x{height}, which its header did not say")]
    DecodedSize {
        /// Decoded width.
        width: u32,
        /// Decoded height.
        height: u32,
    },
    /// The transform chain could not be planned for this sample.
    #[error("transforms: {0}")]
    Transform(#[from] PlanError),
    /// The sample's output differs in size or type from the rest of its batch.
    #[error(
        "the output is {}x{} {:?} {:?} but the batch's is {}x{} {:?} {:?}: end the chain \
         with a fixed-size step (CenterCrop, RandomResizedCrop, Resize to width and height) \
         or let batches hold many sizes (LoaderBuilder::batch_sizes, batch_sizes=)",
        got.width, got.height, got.dtype, got.layout,
        want.width, want.height, want.dtype, want.layout
    )]
    OutputSize {
        /// This sample's output.
        got: OutputSpec,
        /// The batch's output.
        want: OutputSpec,
    },
    /// A video's packets could not be read or planned.
    #[error("{message}")]
    Demux {
        /// The demuxer's error in words.
        message: String,
    },
    /// NVDEC failed on a video.
    #[error("{message}")]
    Codec {
        /// The decoder's error in words.
        message: String,
    },
    /// NVDEC decoded a frame but flagged it (concealed errors).
    #[error("frame {frame}: the decoder reported {status:?}")]
    FrameStatus {
        /// Frame index (presentation order).
        frame: u32,
        /// What the decoder said.
        status: FrameStatus,
    },
    /// A video could not be cut into episodes.
    #[error("{path}: {source}")]
    Episodes {
        /// The (first) video of the scene.
        path: PathBuf,
        /// Why.
        source: EpisodeError,
    },
    /// A video without frames.
    #[error("{0}: no video frames")]
    NoFrames(PathBuf),
    /// A substitute clip has another number of cameras than the clip it replaces.
    #[error("substitute {0} has another shape")]
    SubstituteShape(usize),
    /// The sample's annotations are bad (a transform that draws from its boxes needs them).
    #[error("annotations: {0}")]
    Targets(String),
    /// A state the loader does not expect (a bug).
    #[error("internal: {0}")]
    Internal(&'static str),
}

impl SampleErrorKind {
    /// A read error, keeping its kind.
    pub(crate) fn read(e: &std::io::Error) -> SampleErrorKind {
        SampleErrorKind::Read {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// Errors of the loader.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoaderError {
    /// The dataset could not be opened.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// The builder's settings do not fit together.
    #[error("loader configuration: {0}")]
    Config(String),
    /// A LeRobot dataset could not be opened as asked.
    #[error("LeRobot dataset: {0}")]
    LeRobot(#[from] crate::lerobot::LeRobotError),
    /// A directory or file the loader needs could not be read or made.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// A bad sample under [`BadSamplePolicy::Fail`](crate::BadSamplePolicy::Fail).
    #[error("bad sample: {0}")]
    BadSample(SampleError),
    /// A video file that could not be indexed or cut, under
    /// [`BadFiles::Fail`](crate::BadFiles::Fail).
    #[error("video: {0}")]
    BadVideo(SampleError),
    /// A sample's transform chain could not be planned, or its output differs in size from the
    /// rest of the batch.
    #[error("transforms for {0}")]
    Plan(SampleError),
    /// A worker thread panicked; the loader has shut down.
    #[error("the {stage} panicked: {message}; the loader has shut down")]
    WorkerPanic {
        /// Which thread.
        stage: &'static str,
        /// The panic's message.
        message: String,
    },
    /// The GPU failed (not an input: inputs fail one sample at a time).
    #[error(transparent)]
    Cuda(#[from] gm_cuda::CudaError),
    /// The image decoder failed as a whole.
    #[error(transparent)]
    Decoder(#[from] gm_codec::jpeg::DecoderError),
    /// The video decoders (NVDEC) failed as a whole.
    #[error("NVDEC: {0}")]
    Codec(#[from] gm_codec::CodecError),
    /// A video could not be demuxed.
    #[error("video: {0}")]
    Demux(#[from] gm_demux::DemuxError),
    /// The device cache would not fit.
    #[error(
        "the device cache needs {needed} bytes for {images} images but {available} are available \
         (free device memory less 2 GiB of headroom, or the cache's max_bytes): cache at a smaller \
         shorter side, or load without the cache"
    )]
    CacheTooLarge {
        /// Bytes the cache needs.
        needed: u64,
        /// Bytes it may use.
        available: u64,
        /// Images it would hold.
        images: usize,
    },
    /// A saved state does not belong to this loader.
    #[error("cannot resume: {0}")]
    Resume(String),
}

impl LoaderError {
    /// Whether the GPU ran out of memory (batch buffers, decoder pools, NVDEC surfaces, the
    /// device cache): the message says what needed how much, and a loader built with smaller
    /// settings (batch or output size, workers, stages, sessions, cache) can go on.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            LoaderError::Cuda(e) | LoaderError::Decoder(gm_codec::jpeg::DecoderError::Cuda(e)) => {
                e.is_out_of_memory()
            }
            LoaderError::Codec(gm_codec::CodecError::Cuda(e)) => e.is_out_of_memory(),
            LoaderError::Codec(gm_codec::CodecError::OutOfDecoderMemory { .. }) => true,
            _ => false,
        }
    }
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}
