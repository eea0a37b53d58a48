//! Batches as burn tensors.
//!
//! - [`images`], [`clips`]: for any burn backend (`NdArray`, `Cuda`, ...), through host memory:
//!   the CPU path's batches are already there; a GPU batch is downloaded once. The images
//!   become a float tensor of the backend's float type.
//! - [`images_cuda`], [`clips_cuda`] (feature `burn-cuda`): for burn's CUDA backend, with or
//!   without fusion, one device-to-device copy into memory burn allocated, in the batch's
//!   float type (f16, bf16 or f32; `Tensor::cast` for another). cubecl's streams are private,
//!   so the order is kept by the host: it waits for burn's queued work before the copy (free in
//!   a loop that reads its loss every step) and for the copy itself (tens of microseconds).
//! - [`labels`]: an int tensor `[B]`.
//! - `BurnLoader` (feature `burn-dataloader`): the image loader as a burn `DataLoader`, for
//!   burn's `Learner`.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use gm_loader::{Batch, ClipBatch};

use crate::error::InteropError;
use crate::host::HostElements;

#[cfg(feature = "burn-cuda")]
mod cuda;
#[cfg(feature = "burn-dataloader")]
mod loader;
#[cfg(feature = "burn-cuda")]
pub use burn_cubecl::cubecl::cuda::CudaDevice;
#[cfg(feature = "burn-cuda")]
pub use cuda::CudaBackend;
#[cfg(feature = "burn-dataloader")]
pub use loader::{BurnLoader, Convert, ImageBatch};

/// The batch's images as a tensor of burn's CUDA backend, of rank `D` (4 for
/// `[B, C, H, W]`): one device-to-device copy for a GPU batch (see the module docs), the host
/// path for a CPU one. The batch's memory is free for gm's pool when this returns.
#[cfg(feature = "burn-cuda")]
pub fn images_cuda<B: CudaBackend, const D: usize>(
    batch: &Batch,
    device: &CudaDevice,
) -> Result<Tensor<B, D>, InteropError> {
    match &batch.images {
        gm_loader::Images::Device(t) => cuda::copy(t, batch.ready_event(), device),
        gm_loader::Images::Host(_) => images(batch, device),
    }
}

/// The clips' frames as a tensor of burn's CUDA backend, of rank `D` (5 for
/// `[B, T, C, H, W]`, 6 with a camera axis), by one device-to-device copy; the host path
/// for a CPU batch.
#[cfg(feature = "burn-cuda")]
pub fn clips_cuda<B: CudaBackend, const D: usize>(
    batch: &ClipBatch,
    device: &CudaDevice,
) -> Result<Tensor<B, D>, InteropError> {
    match &batch.frames {
        gm_loader::Images::Device(t) => cuda::copy(t, batch.ready_event(), device),
        gm_loader::Images::Host(_) => clips(batch, device),
    }
}

/// The batch's images as a burn float tensor of rank `D` (4 for `[B, C, H, W]`).
pub fn images<B: Backend, const D: usize>(
    batch: &Batch,
    device: &B::Device,
) -> Result<Tensor<B, D>, InteropError> {
    let bytes = batch.images.to_host_bytes(None)?;
    tensor(batch.images.dtype(), batch.images.shape(), bytes, device)
}

/// The batch's labels as a burn int tensor `[B]`.
pub fn labels<B: Backend>(batch: &Batch, device: &B::Device) -> Tensor<B, 1, Int> {
    Tensor::from_data(
        TensorData::new(batch.labels.clone(), [batch.labels.len()]),
        device,
    )
}

/// The clips' frames as a burn float tensor of rank `D` (5 for `[B, T, C, H, W]`, 6 with a
/// camera axis).
pub fn clips<B: Backend, const D: usize>(
    batch: &ClipBatch,
    device: &B::Device,
) -> Result<Tensor<B, D>, InteropError> {
    let bytes = batch.frames.to_host_bytes(None)?;
    tensor(batch.frames.dtype(), batch.frames.shape(), bytes, device)
}

fn tensor<B: Backend, const D: usize>(
    dtype: gm_cuda::DType,
    shape: &[usize],
    bytes: Vec<u8>,
    device: &B::Device,
) -> Result<Tensor<B, D>, InteropError> {
    if shape.len() != D {
        return Err(InteropError::Rank {
            expected: D,
            shape: shape.to_vec(),
        });
    }
    let shape = shape.to_vec();
    let data = match HostElements::new(dtype, bytes) {
        HostElements::U8(v) => TensorData::new(v, shape),
        HostElements::U16(v) => TensorData::new(v, shape),
        HostElements::F16(v) => TensorData::new(v, shape),
        HostElements::Bf16(v) => TensorData::new(v, shape),
        HostElements::F32(v) => TensorData::new(v, shape),
    };
    Ok(Tensor::from_data(data, device))
}
