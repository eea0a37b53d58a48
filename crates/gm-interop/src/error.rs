//! What can go wrong handing a batch to a framework.

use gm_cuda::CudaError;

/// An error converting a batch into a framework tensor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InteropError {
    /// The loader failed (an epoch's iterator yielded an error).
    #[error(transparent)]
    Loader(#[from] gm_loader::LoaderError),
    /// A CUDA call failed (the copy, the stream wait, opening the device).
    #[error(transparent)]
    Cuda(#[from] CudaError),
    /// candle refused the tensor.
    #[cfg(feature = "candle")]
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
    /// The batch's rank is not the tensor rank asked for.
    #[error("a rank-{expected} tensor was asked for, but the batch has shape {shape:?}")]
    Rank {
        /// The rank asked for.
        expected: usize,
        /// The batch's shape.
        shape: Vec<usize>,
    },
    /// The batch lives on another GPU than the framework device asked for.
    #[error("the batch is on GPU {batch} but the {framework} device is GPU {target}")]
    DeviceMismatch {
        /// The framework.
        framework: &'static str,
        /// The batch's GPU.
        batch: usize,
        /// The framework device's GPU.
        target: usize,
    },
    /// The framework's CUDA context is not the device's primary context, so gm's pointers are
    /// not valid in it.
    #[error("the {framework} device on GPU {ordinal} does not use the primary CUDA context")]
    NotPrimaryContext {
        /// The framework.
        framework: &'static str,
        /// The GPU.
        ordinal: usize,
    },
    /// burn's CUDA runtime failed (an allocation, a wait for its stream).
    #[cfg(feature = "burn-cuda")]
    #[error("burn's CUDA runtime: {0}")]
    BurnRuntime(String),
    /// The batch's element type makes no float tensor of the framework.
    #[error(
        "a {dtype:?} batch is not a float tensor for {framework}: end the transforms with a \
         float ToDtype"
    )]
    NotFloat {
        /// The framework.
        framework: &'static str,
        /// The batch's element type.
        dtype: gm_cuda::DType,
    },
    /// The framework has no element type for the batch's (candle has no 16-bit integers).
    #[error("{framework} has no element type for {dtype:?} tensors")]
    UnsupportedDtype {
        /// The framework.
        framework: &'static str,
        /// The batch's element type.
        dtype: gm_cuda::DType,
    },
    /// The batch's tensor is a strided view; frameworks get contiguous memory.
    #[error("the batch tensor is not contiguous (shape {shape:?})")]
    NotContiguous {
        /// Its shape.
        shape: Vec<usize>,
    },
}
