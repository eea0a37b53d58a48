//! candle's CUDA backend: copies into candle allocations, and handing gm's memory to candle.

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};
use candle_core::cuda_backend::{CudaDType, CudaDevice, CudaStorage};
use candle_core::op::BackpropOp;
use candle_core::{Storage, Tensor};
use gm_cuda::{DType, DevicePtr, Event, Stream};
use half::{bf16, f16};

const FRAMEWORK: &str = "candle";
use crate::error::InteropError;
use crate::foreign::Foreign;

/// candle's stream as a gm stream, after checking both sides use the primary context.
fn consumer_stream(
    t: &gm_cuda::Tensor,
    dev: &CudaDevice,
) -> Result<(Stream, Arc<CudaStream>), InteropError> {
    let cstream = dev.cuda_stream();
    let ordinal = cstream.context().ordinal();
    let gm_dev = t.device();
    if gm_dev.ordinal() != ordinal {
        return Err(InteropError::DeviceMismatch {
            framework: FRAMEWORK,
            batch: gm_dev.ordinal(),
            target: ordinal,
        });
    }
    if gm_dev.raw_context() != cstream.context().cu_ctx() {
        return Err(InteropError::NotPrimaryContext {
            framework: FRAMEWORK,
            ordinal,
        });
    }
    // SAFETY: candle's stream lives as long as `cstream`, which the caller holds while it
    // uses the returned stream; a borrowed stream is never destroyed by gm.
    let stream = unsafe { Stream::from_raw(gm_dev, cstream.cu_stream()) };
    Ok((stream, cstream))
}

fn check_layout(t: &gm_cuda::Tensor) -> Result<(), InteropError> {
    if t.is_contiguous() {
        Ok(())
    } else {
        Err(InteropError::NotContiguous {
            shape: t.shape().to_vec(),
        })
    }
}

fn wrap<T: CudaDType>(slice: CudaSlice<T>, dev: &CudaDevice, shape: &[usize]) -> Tensor {
    let storage = CudaStorage::wrap_cuda_slice(slice, dev.clone());
    Tensor::from_storage(Storage::Cuda(storage), shape, BackpropOp::none(), false)
}

/// A fresh candle tensor holding a copy of `t`, queued on candle's stream after `ready`.
/// Returns the stream the copy was queued on, for the batch's `record_stream`.
pub(super) fn copy(
    t: &gm_cuda::Tensor,
    ready: Option<&Arc<Event>>,
    dev: &CudaDevice,
) -> Result<(Tensor, Stream), InteropError> {
    check_layout(t)?;
    let (stream, cstream) = consumer_stream(t, dev)?;
    if let Some(e) = ready {
        stream.wait(e)?;
    }
    let tensor = match t.dtype() {
        DType::U8 => copy_typed::<u8>(t, &stream, &cstream, dev)?,
        DType::F16 => copy_typed::<f16>(t, &stream, &cstream, dev)?,
        DType::BF16 => copy_typed::<bf16>(t, &stream, &cstream, dev)?,
        DType::F32 => copy_typed::<f32>(t, &stream, &cstream, dev)?,
    };
    Ok((tensor, stream))
}

fn copy_typed<T: CudaDType + candle_core::cuda_backend::cudarc::driver::DeviceRepr>(
    t: &gm_cuda::Tensor,
    stream: &Stream,
    cstream: &Arc<CudaStream>,
    dev: &CudaDevice,
) -> Result<Tensor, InteropError> {
    let bytes = t.numel() * t.dtype().size();
    // SAFETY: every element is written by the copy below, queued on the same stream.
    let mut dst = unsafe { cstream.alloc::<T>(t.numel()) }
        .map_err(|e| candle_core::Error::from(candle_core::cuda_backend::CudaError::from(e)))?;
    {
        let (ptr, _record) = dst.device_ptr_mut(cstream);
        let mut foreign = Foreign {
            ptr: DevicePtr(ptr),
            len: bytes,
        };
        stream.copy_on_device(t.storage(), t.byte_offset(), &mut foreign, 0, bytes)?;
    }
    Ok(wrap(dst, dev, t.shape()))
}

/// `t`'s memory as a candle tensor, with no copy when `t` is its sole owner: the buffer leaves
/// gm's pool and candle frees it (`cuMemFreeAsync` on its stream, after its last use).
pub(super) fn hand_over(
    t: gm_cuda::Tensor,
    ready: Option<&Arc<Event>>,
    dev: &CudaDevice,
) -> Result<Tensor, InteropError> {
    check_layout(&t)?;
    if t.byte_offset() != 0 {
        return Ok(copy(&t, ready, dev)?.0);
    }
    let (stream, cstream) = consumer_stream(&t, dev)?;
    if let Some(e) = ready {
        stream.wait(e)?;
    }
    let (shape, dtype, numel) = (t.shape().to_vec(), t.dtype(), t.numel());
    let storage = match t.into_storage() {
        Ok(s) => s,
        Err(shared) => {
            tracing::debug!("batch memory is shared (a DLPack export?); copying instead");
            return Ok(copy(&shared, None, dev)?.0);
        }
    };
    let (ptr, _len) = match storage.into_owned() {
        Ok(buffer) => buffer.into_raw(),
        Err(imported) => {
            // Imported memory is its producer's to free: candle gets a copy.
            let t = gm_cuda::Tensor::new(imported, &shape, dtype)?;
            return Ok(copy(&t, None, dev)?.0);
        }
    };
    // SAFETY: the allocation is live, at least `numel` elements long, ours alone (detached from
    // the pool), in the primary context candle uses (checked), and fully written once
    // candle's stream passes the ready event it now waits on. candle frees it exactly once.
    Ok(unsafe {
        match dtype {
            DType::U8 => wrap(cstream.upgrade_device_ptr::<u8>(ptr.0, numel), dev, &shape),
            DType::F16 => wrap(cstream.upgrade_device_ptr::<f16>(ptr.0, numel), dev, &shape),
            DType::BF16 => wrap(
                cstream.upgrade_device_ptr::<bf16>(ptr.0, numel),
                dev,
                &shape,
            ),
            DType::F32 => wrap(cstream.upgrade_device_ptr::<f32>(ptr.0, numel), dev, &shape),
        }
    })
}
