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
    pub(crate) fn malformed(file: &Path, reason: impl std::fmt::Display) -> Self {
        DemuxError::Malformed {
            file: file.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}

/// What a byte-level parser (boxes, tables, NAL units, slice headers) found wrong, before the
/// file name is attached; [`DemuxError`] carries its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A box or record ends before a field it must hold.
    #[error("'{what}' box truncated: needs {needed} bytes at {at}")]
    Truncated {
        /// The box or record being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Where the field starts in it.
        at: usize,
    },
    /// A slice header or parameter set ends inside a field.
    #[error("bitstream ends inside a header")]
    BitstreamEnd,
    /// An exp-Golomb code too long for 32 bits.
    #[error("exp-Golomb code longer than 32 bits")]
    ExpGolombTooLong,
    /// A sample ends inside a NAL unit's length prefix.
    #[error("truncated NAL length prefix")]
    TruncatedNalLength,
    /// A NAL unit's length runs past the end of its sample.
    #[error("NAL unit of {len} bytes runs past the end of the sample ({left} left)")]
    NalPastEnd {
        /// The declared length.
        len: usize,
        /// Bytes left in the sample.
        left: usize,
    },
    /// Any other inconsistency, described in terms of boxes, tables and fields.
    #[error("{0}")]
    Invalid(String),
}

impl From<String> for ParseError {
    fn from(reason: String) -> Self {
        ParseError::Invalid(reason)
    }
}

impl From<&str> for ParseError {
    fn from(reason: &str) -> Self {
        ParseError::Invalid(reason.to_string())
    }
}

/// Result of the byte-level parsers.
pub(crate) type ParseResult<T> = std::result::Result<T, ParseError>;

/// `invalid!("...", args)`: a [`ParseError::Invalid`] with a formatted message.
macro_rules! invalid {
    ($($arg:tt)*) => {
        $crate::error::ParseError::Invalid(format!($($arg)*))
    };
}
pub(crate) use invalid;
