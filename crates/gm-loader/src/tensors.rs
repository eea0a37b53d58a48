//! What batches hold: a tensor in GPU memory, or in host memory where a loader runs on the
//! CPU. Shared by the image and clip loaders.

use gm_cuda::{CudaError, DType, Stream, Tensor};

/// A batch tensor in host memory: the CPU pipeline's output.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    /// Dimensions, `[B, C, H, W]` or `[B, H, W, C]`.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Contiguous elements, native-endian.
    pub data: Vec<u8>,
}

/// The images of a batch (or a clip batch's frames).
#[derive(Debug)]
pub enum Images {
    /// In GPU memory, from the loader's pool; ready after the batch's ready event (see
    /// [`Batch::wait_on`](crate::Batch::wait_on),
    /// [`ClipBatch::wait_on`](crate::ClipBatch::wait_on)).
    Device(Tensor),
    /// In host memory (the loader runs on the CPU).
    Host(HostTensor),
}

impl Images {
    /// Dimensions.
    pub fn shape(&self) -> &[usize] {
        match self {
            Images::Device(t) => t.shape(),
            Images::Host(t) => &t.shape,
        }
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        match self {
            Images::Device(t) => t.dtype(),
            Images::Host(t) => t.dtype,
        }
    }

    /// The elements' bytes on the host; a device tensor is copied on `stream` (or a stream of
    /// its own) after its ready event. For tests and tools, not for training loops.
    pub fn to_host_bytes(&self, stream: Option<&Stream>) -> Result<Vec<u8>, CudaError> {
        match self {
            Images::Host(t) => Ok(t.data.clone()),
            Images::Device(t) => match stream {
                Some(s) => t.to_host_bytes(s),
                None => t.to_host_bytes(&Stream::new(t.device())?),
            },
        }
    }
}
