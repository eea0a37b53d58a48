//! DLPack import: device memory another library owns, as a [`Tensor`] gm's kernels can read.
//!
//! The DLPack deleter runs when the last tensor viewing the memory drops. Stream order is the
//! caller's to state: the import takes the event the producer's writes are ready on, and every
//! reader waits on it ([`Tensor::wait_on`]), as with gm's own tensors.

use std::sync::Arc;

use dlpark::ffi::{DLDataType, DLDeviceType};
use dlpark::{AllocationDeleter, Managed, ManagedTensorBase};

use crate::device::Device;
use crate::error::{CudaError, Result};
use crate::memory::{DeviceMemory, DevicePtr};
use crate::stream::Event;
use crate::tensor::{DType, Storage, Tensor};

/// Memory imported through DLPack; dropping it calls the producer's deleter.
pub struct Imported {
    ptr: DevicePtr,
    len: usize,
    device: Device,
    _owner: AllocationDeleter,
}

impl std::fmt::Debug for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Imported")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl Imported {
    /// The device the memory is on.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl DeviceMemory for Imported {
    fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }
    fn byte_len(&self) -> usize {
        self.len
    }
}

fn invalid(reason: String) -> CudaError {
    CudaError::InvalidArgument(format!("DLPack import: {reason}"))
}

fn dtype(d: DLDataType) -> Result<DType> {
    [DType::U8, DType::F16, DType::BF16, DType::F32]
        .into_iter()
        .find(|t| t.dlpack() == d)
        .ok_or_else(|| {
            invalid(format!(
                "unsupported element type {d:?} (u8, f16, bf16, f32)"
            ))
        })
}

impl Tensor {
    /// Takes a DLPack tensor (versioned or legacy) in CUDA memory of `device`. `ready` is the
    /// event the producer's writes are complete on (`None`: they already are, e.g. the producer
    /// synchronized or exported on the stream gm will read on). Shapes, strides (elements; none
    /// means row-major), the byte offset and the element type are checked; the memory the
    /// layout addresses must lie at or after the data pointer.
    pub fn from_dlpack<M: ManagedTensorBase>(
        managed: Managed<M>,
        device: &Device,
        ready: Option<Arc<Event>>,
    ) -> Result<Tensor> {
        let view = managed
            .validate()
            .map_err(|e| invalid(format!("invalid descriptor: {e}")))?;
        let dev = view.device();
        if dev.device_type != DLDeviceType::CUDA || dev.device_id as usize != device.ordinal() {
            return Err(invalid(format!(
                "the tensor is on {dev:?}, not CUDA device {}",
                device.ordinal()
            )));
        }
        let dt = dtype(view.dtype())?;
        let shape: Vec<usize> = view.shape().iter().map(|&d| d.max(0) as usize).collect();
        let strides: Vec<isize> = view
            .strides_or_compact()
            .map_err(|e| invalid(format!("strides: {e}")))?
            .iter()
            .map(|&s| s as isize)
            .collect();
        let offset = view.byte_offset() as usize;
        let span = shape
            .iter()
            .zip(&strides)
            .map(|(&d, &s)| (d.saturating_sub(1) as isize * s).max(0) as usize)
            .sum::<usize>()
            + 1;
        let len = if shape.contains(&0) {
            offset
        } else {
            offset + span * dt.size()
        };
        let ptr = DevicePtr(view.data_ptr() as u64);
        let storage = Storage::Imported(Imported {
            ptr,
            len,
            device: device.clone(),
            _owner: managed.into_deleter(),
        });
        let mut t = Tensor::with_layout(storage, offset, &shape, &strides, dt)?;
        if let Some(e) = ready {
            t.set_ready_event(e);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_types_map_both_ways_and_others_are_refused() {
        for t in [DType::U8, DType::F16, DType::BF16, DType::F32] {
            assert_eq!(dtype(t.dlpack()).unwrap(), t);
        }
        let err = dtype(DLDataType::F64).unwrap_err().to_string();
        assert!(err.contains("unsupported element type"), "{err}");
    }
}
