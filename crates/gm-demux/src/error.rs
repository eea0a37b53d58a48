//! Errors of the demuxer. Each names the file and, where there is one, the sample.

use std::path::{Path, PathBuf};

/// Result alias of this crate.
pub type Result<T, E = DemuxError> = std::result::Result<T, E>;

/// What went wrong reading a video.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemuxError {
    /// Reading the file failed.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The container is damaged, truncated or not MP4.
    #[error("{file}: {reason}")]
    Malformed {
        /// The file.
        file: PathBuf,
        /// What is wrong, in terms of boxes and tables.
        reason: String,
    },
    /// The video track's codec is not H.264 or HEVC.
    #[error("unsupported codec {codec} in {file}")]
    UnsupportedCodec {
        /// The file.
        file: PathBuf,
        /// The sample entry's four-character code, e.g. `av01`.
        codec: String,
    },
    /// No video track, or not the one asked for.
    #[error("{file}: {reason}")]
    NoTrack {
        /// The file.
        file: PathBuf,
        /// Which track was looked for.
        reason: String,
    },
    /// One sample's bytes are not what the index says (for example a NAL length past the end).
    #[error("{file}: sample {sample}: {reason}")]
    BadSample {
        /// The file.
        file: PathBuf,
        /// Decode index of the sample.
        sample: usize,
        /// What is wrong.
        reason: String,
    },
    /// A frame index past the end of the video.
    #[error("{file}: frame {frame} requested, the video has {count} frames")]
    FrameOutOfRange {
        /// The file.
        file: PathBuf,
        /// The frame asked for.
        frame: usize,
        /// Frames in the video.
        count: usize,
    },
    /// A saved index that cannot be used (other version, damaged, or the video changed).
    #[error("{file}: saved index not usable: {reason}")]
    StaleIndex {
        /// The index file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
}

impl DemuxError {
    pub(crate) fn malformed(file: &Path, reason: impl Into<String>) -> Self {
        DemuxError::Malformed {
            file: file.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// Errors of the byte-level parsers, before the file name is attached.
pub(crate) type ParseResult<T> = std::result::Result<T, String>;
