//! Batches as [`candle_core::Tensor`]s.
//!
//! - [`images`] / [`clips`]: one device-to-device copy on candle's stream, after the batch's
//!   ready event; the batch keeps its pooled memory, which goes back to gm's pool after the
//!   copy ([`Batch::record_stream`]). The pool stays allocation-free.
//! - [`into_images`] / [`into_clips`]: zero-copy. The batch's buffer leaves gm's pool for good
//!   ([`gm_cuda::Pooled::detach`]) and candle owns it, freeing it in its stream order after its
//!   last read; gm's pool allocates a replacement for a later batch. Falls back to the copy
//!   when the memory is shared (a DLPack export still holds it).
//! - On the CPU path (or a CPU candle device), a CPU tensor from the batch's host memory.
//!
//! Without the `candle-cuda` feature, a GPU batch reaches a CPU candle device through one
//! download; with it, everything stays on the GPU.

use candle_core::{DType as CandleDType, Device as CandleDevice, Tensor};
use gm_cuda::DType;
#[cfg(feature = "candle-cuda")]
use gm_loader::Images;
use gm_loader::{Batch, ClipBatch};

use crate::error::InteropError;
use crate::host::HostElements;

#[cfg(feature = "candle-cuda")]
mod cuda;
mod iter;

pub use iter::{Batches, Handoff, batches};

/// Makes the device's default CUDA memory pool, which candle allocates from
/// (`cuMemAllocAsync`), keep the memory it frees instead of returning it to the driver at each
/// synchronization ([`gm_cuda::Device::set_mempool_release_threshold`], for the whole
/// process). Without it, a training step that ends in a synchronization (reading the loss)
/// maps its memory again at the next step, the batch copy's 77 MB among it. A CPU device is
/// left alone.
pub fn keep_freed_memory(device: &CandleDevice) -> Result<(), InteropError> {
    #[cfg(feature = "candle-cuda")]
    if let CandleDevice::Cuda(dev) = device {
        let ordinal = dev.cuda_stream().context().ordinal();
        gm_cuda::Device::new(ordinal)?.set_mempool_release_threshold(u64::MAX)?;
    }
    let _ = device;
    Ok(())
}

/// The candle element type of a gm element type; candle has none for `U16`.
pub fn dtype(dtype: DType) -> Result<CandleDType, InteropError> {
    Ok(match dtype {
        DType::U8 => CandleDType::U8,
        DType::F16 => CandleDType::F16,
        DType::BF16 => CandleDType::BF16,
        DType::F32 => CandleDType::F32,
        DType::U16 => {
            return Err(InteropError::UnsupportedDtype {
                framework: "candle",
                dtype,
            });
        }
    })
}

/// The batch's images on `device`, by one copy (see the module docs). On the GPU, candle's
/// stream first waits for the batch, and the batch's memory returns to the pool only after
/// the copy, so the batch may be dropped at once.
pub fn images(batch: &mut Batch, device: &CandleDevice) -> Result<Tensor, InteropError> {
    #[cfg(feature = "candle-cuda")]
    if let (Images::Device(t), CandleDevice::Cuda(dev)) = (&batch.images, device) {
        let (tensor, stream) = cuda::copy(t, batch.ready_event(), dev)?;
        batch.record_stream(&stream)?;
        return Ok(tensor);
    }
    let bytes = batch.images.to_host_bytes(None)?;
    host_tensor(batch.images.dtype(), batch.images.shape(), bytes, device)
}

/// The batch's images on `device` without a copy where possible (see the module docs):
/// the memory becomes candle's. Labels and indices are returned with it.
pub fn into_images(
    batch: Batch,
    device: &CandleDevice,
) -> Result<(Tensor, Vec<gm_loader::Label>), InteropError> {
    #[cfg(feature = "candle-cuda")]
    if let (CandleDevice::Cuda(dev), Images::Device(_)) = (device, &batch.images) {
        let ready = batch.ready_event().cloned();
        let mut batch = batch;
        let labels = std::mem::take(&mut batch.labels);
        let Images::Device(t) = batch.images else {
            unreachable!("matched above")
        };
        let tensor = cuda::hand_over(t, ready.as_ref(), dev)?;
        return Ok((tensor, labels));
    }
    let mut batch = batch;
    let tensor = images(&mut batch, device)?;
    Ok((tensor, batch.labels))
}

/// The batch's labels as an `i64` tensor of shape `[B]` on `device`.
pub fn labels(batch: &Batch, device: &CandleDevice) -> Result<Tensor, InteropError> {
    Ok(Tensor::from_slice(
        &batch.labels,
        batch.labels.len(),
        device,
    )?)
}

/// The clips' frames on `device` (`[B, T, C, H, W]`, or with a camera axis), by one device
/// copy on candle's stream (the clip batch's memory returns to the pool after the copy), or
/// from host memory for a CPU batch.
pub fn clips(batch: &mut ClipBatch, device: &CandleDevice) -> Result<Tensor, InteropError> {
    #[cfg(feature = "candle-cuda")]
    if let (Images::Device(t), CandleDevice::Cuda(dev)) = (&batch.frames, device) {
        let (tensor, stream) = cuda::copy(t, batch.ready_event(), dev)?;
        batch.record_stream(&stream)?;
        return Ok(tensor);
    }
    let bytes = batch.frames.to_host_bytes(None)?;
    host_tensor(batch.frames.dtype(), batch.frames.shape(), bytes, device)
}

/// The clips' frames on `device` without a copy where possible: the memory becomes candle's.
pub fn into_clips(batch: ClipBatch, device: &CandleDevice) -> Result<Tensor, InteropError> {
    #[cfg(feature = "candle-cuda")]
    if let (CandleDevice::Cuda(dev), Images::Device(_)) = (device, &batch.frames) {
        let ready = batch.ready_event().cloned();
        let Images::Device(t) = batch.frames else {
            unreachable!("matched above")
        };
        return cuda::hand_over(t, ready.as_ref(), dev);
    }
    let mut batch = batch;
    clips(&mut batch, device)
}

/// A candle tensor from host bytes of a gm element type.
fn host_tensor(
    dtype: DType,
    shape: &[usize],
    bytes: Vec<u8>,
    device: &CandleDevice,
) -> Result<Tensor, InteropError> {
    let shape = shape.to_vec();
    Ok(match HostElements::new(dtype, bytes) {
        HostElements::U8(v) => Tensor::from_vec(v, shape, device)?,
        HostElements::U16(_) => {
            return Err(InteropError::UnsupportedDtype {
                framework: "candle",
                dtype,
            });
        }
        HostElements::F16(v) => Tensor::from_vec(v, shape, device)?,
        HostElements::Bf16(v) => Tensor::from_vec(v, shape, device)?,
        HostElements::F32(v) => Tensor::from_vec(v, shape, device)?,
    })
}
