//! What can go wrong while loading, for one sample or for the whole loader.

use crate::dataset::DatasetError;

/// One sample that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sample {index} ({name}): {reason}")]
pub struct SampleError {
    /// Index in the dataset.
    pub index: usize,
    /// File path or name.
    pub name: String,
    /// The reason (missing file, truncated, corrupt, unsupported, ...).
    pub reason: String,
}

/// Errors of the loader.
#[derive(Debug, thiserror::Error)]
pub enum LoaderError {
    /// The dataset could not be opened.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// The builder's settings do not fit together.
    #[error("loader configuration: {0}")]
    Config(String),
    /// A bad sample under [`BadSamplePolicy::Fail`](crate::BadSamplePolicy::Fail).
    #[error("bad sample: {0}")]
    BadSample(SampleError),
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
    /// A video could not be indexed, planned or decoded.
    #[error("video: {0}")]
    Video(String),
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

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}
