//! Batches as burn tensors, for any burn backend (`NdArray`, `Cuda`, ...).
//!
//! The images become a float tensor of the backend's float type (`[B, C, H, W]`, or the
//! batch's layout), the labels an int tensor `[B]`. This path goes through host memory: the
//! CPU path's batches are already there; a GPU batch is downloaded once.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use gm_loader::{Batch, ClipBatch};

use crate::error::InteropError;
use crate::host::{HostElements, download};

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
    let bytes = download(&batch.frames)?;
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
        HostElements::F16(v) => TensorData::new(v, shape),
        HostElements::Bf16(v) => TensorData::new(v, shape),
        HostElements::F32(v) => TensorData::new(v, shape),
    };
    Ok(Tensor::from_data(data, device))
}
