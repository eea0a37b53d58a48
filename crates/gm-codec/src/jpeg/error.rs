//! The errors of the JPEG side: why one input could not be decoded ([`ImageErrorKind`],
//! [`ImageError`]), why a decoder or a whole batch failed ([`DecoderError`]), and why an
//! option's name was not understood ([`ParseOptionError`]).

use super::header::HeaderError;
use super::nvjpeg::SetupError;
use super::route::RouteError;

/// Why an input could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageErrorKind {
    /// Not an image format we read.
    #[error("not an image (no JPEG, PNG, BMP, WebP or TIFF signature)")]
    NotAnImage,
    /// The data ends early.
    #[error("truncated: {0}")]
    Truncated(String),
    /// More pixels than allowed.
    #[error("too large: {0}")]
    TooLarge(String),
    /// A valid image that the chosen decoders cannot take.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Damaged data.
    #[error("corrupt: {0}")]
    Corrupt(String),
}

/// An input that could not be decoded, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input}: {kind}")]
pub struct ImageError {
    /// The input's name.
    pub input: String,
    /// The reason.
    pub kind: ImageErrorKind,
}

/// Why a decoder could not be created or a batch not be run at all (per-image problems are
/// in the batch's results instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecoderError {
    /// The CUDA layer failed.
    #[error(transparent)]
    Cuda(#[from] gm_cuda::CudaError),
    /// nvJPEG could not be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
}

/// A decoder option given by a name that is not one of its values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {option} `{given}` ({expected})")]
pub struct ParseOptionError {
    /// The option ("backend", "chroma upsampling").
    pub option: &'static str,
    /// What was given.
    pub given: String,
    /// The accepted names.
    pub expected: &'static str,
}

impl From<HeaderError> for ImageErrorKind {
    fn from(e: HeaderError) -> ImageErrorKind {
        match e {
            HeaderError::Truncated => ImageErrorKind::Truncated("the header ends early".into()),
            e => ImageErrorKind::Corrupt(e.to_string()),
        }
    }
}

impl From<RouteError> for ImageErrorKind {
    fn from(e: RouteError) -> ImageErrorKind {
        match e {
            RouteError::TooLarge {
                width,
                height,
                max_pixels,
            } => ImageErrorKind::TooLarge(format!(
                "{width}x{height} is over the {max_pixels}-pixel limit"
            )),
            RouteError::Unsupported(why) => ImageErrorKind::Unsupported(why),
        }
    }
}
