//! burn's CUDA backend: one device-to-device copy into memory burn allocated.
//!
//! cubecl 0.10 (burn 0.21's CUDA runtime) uses the device's primary context, as gm does, so
//! gm's pointers are valid there; but it keeps its streams private, so its stream cannot be
//! made to wait on gm's ready event. The order is therefore kept by two host waits:
//!
//! 1. `client.sync()` before the copy: cubecl reuses freed memory in its own stream's order,
//!    so a fresh allocation may still be read by burn kernels queued earlier on that stream.
//!    The wait lasts as long as the burn work already queued on this thread, which is nothing
//!    in a loop that reads its loss every step (that read waits for the step already).
//! 2. The copy's own stream, synchronized after the copy: burn's later kernels are queued
//!    after this returns, so they see the copied bytes; the batch's memory is read by nothing
//!    after it, and may go back to gm's pool.
//!
//! The copy's stream is made once per thread and device: creating and destroying one per batch
//! was part of the handoff's cost.

use std::cell::RefCell;
use std::sync::Arc;

use burn::tensor::backend::Backend;
use burn::tensor::{DType as BurnDType, Shape, Tensor, TensorPrimitive};
use burn_cubecl::cubecl::Runtime;
use burn_cubecl::cubecl::cuda::{CudaDevice, CudaRuntime};
use burn_cubecl::cubecl::future::block_on;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, FloatElement, IntElement};
use gm_cuda::{DType, DevicePtr, Event, Stream};

use crate::error::InteropError;
use crate::foreign::Foreign;

const FRAMEWORK: &str = "burn";

/// A burn backend on cubecl's CUDA runtime, with or without burn's operation fusion
/// (`burn::backend::Cuda` is either, depending on burn's `fusion` feature).
pub trait CudaBackend: Backend<Device = CudaDevice> {
    /// A cubecl tensor as this backend's float tensor.
    fn float_primitive(
        t: CubeTensor<CudaRuntime>,
        device: &CudaDevice,
    ) -> Self::FloatTensorPrimitive;
}

impl<F: FloatElement, I: IntElement, BT: BoolElement> CudaBackend
    for CubeBackend<CudaRuntime, F, I, BT>
{
    fn float_primitive(t: CubeTensor<CudaRuntime>, _: &CudaDevice) -> CubeTensor<CudaRuntime> {
        t
    }
}

impl<F: FloatElement, I: IntElement, BT: BoolElement> CudaBackend
    for burn_fusion::Fusion<CubeBackend<CudaRuntime, F, I, BT>>
{
    fn float_primitive(
        t: CubeTensor<CudaRuntime>,
        device: &CudaDevice,
    ) -> Self::FloatTensorPrimitive {
        // As burn-fusion registers a tensor made by the inner backend (its float_from_data).
        type Inner<F, I, BT> = CubeBackend<CudaRuntime, F, I, BT>;
        let client = burn_fusion::get_client::<Inner<F, I, BT>>(device);
        let (shape, dtype) = (burn::tensor::TensorMetadata::shape(&t), t.dtype);
        let handle = <Inner<F, I, BT> as burn_ir::BackendIr>::float_tensor_handle(t);
        let desc = burn_ir::InitOperationIr::create(shape, dtype, || {
            client.register_tensor_handle(handle)
        });
        let mut out = client.register(
            burn_fusion::stream::OperationStreams::default(),
            burn_ir::OperationIr::Init(desc),
            burn_fusion::NoOp::<Inner<F, I, BT>>::new(),
        );
        out.remove(0)
    }
}

/// A burn tensor on `device` holding a copy of `t`, made after `ready`.
pub(super) fn copy<B: CudaBackend, const D: usize>(
    t: &gm_cuda::Tensor,
    ready: Option<&Arc<Event>>,
    device: &CudaDevice,
) -> Result<Tensor<B, D>, InteropError> {
    let dtype = float_dtype(t)?;
    if t.shape().len() != D {
        return Err(InteropError::Rank {
            expected: D,
            shape: t.shape().to_vec(),
        });
    }
    if t.device().ordinal() != device.index {
        return Err(InteropError::DeviceMismatch {
            framework: FRAMEWORK,
            batch: t.device().ordinal(),
            target: device.index,
        });
    }
    let bytes = t.numel() * t.dtype().size();
    let client = CudaRuntime::client(device);
    let handle = client.empty(bytes);
    let resource = client
        .get_resource(handle.clone())
        .map_err(|e| InteropError::BurnRuntime(format!("{e:?}")))?;
    // Wait 1 (module docs): burn's earlier kernels are done with this memory.
    block_on(client.sync()).map_err(|e| InteropError::BurnRuntime(format!("{e:?}")))?;
    let mut dst = Foreign {
        ptr: DevicePtr(resource.resource().ptr),
        len: bytes,
    };
    with_copy_stream(t.device(), |stream| {
        if let Some(e) = ready {
            stream.wait(e)?;
        }
        stream.copy_on_device(t.storage(), t.byte_offset(), &mut dst, 0, bytes)?;
        // Wait 2: the bytes are in place before burn can queue a read of them.
        Ok(stream.synchronize()?)
    })?;
    drop(resource);
    let shape = Shape::from(t.shape().to_vec());
    let cube = CubeTensor::new_contiguous(client, device.clone(), shape, handle, dtype);
    Ok(Tensor::from_primitive(TensorPrimitive::Float(
        B::float_primitive(cube, device),
    )))
}

thread_local! {
    /// This thread's copy stream per device ordinal.
    static COPY_STREAMS: RefCell<Vec<(usize, Stream)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's copy stream for `device`, made on first use.
fn with_copy_stream<R>(
    device: &gm_cuda::Device,
    f: impl FnOnce(&Stream) -> Result<R, InteropError>,
) -> Result<R, InteropError> {
    COPY_STREAMS.with(|cell| {
        let mut streams = cell.borrow_mut();
        let ordinal = device.ordinal();
        let i = match streams.iter().position(|(o, _)| *o == ordinal) {
            Some(i) => i,
            None => {
                streams.push((ordinal, Stream::new(device)?));
                streams.len() - 1
            }
        };
        f(&streams[i].1)
    })
}

fn float_dtype(t: &gm_cuda::Tensor) -> Result<BurnDType, InteropError> {
    if !t.is_contiguous() {
        return Err(InteropError::NotContiguous {
            shape: t.shape().to_vec(),
        });
    }
    match t.dtype() {
        DType::F16 => Ok(BurnDType::F16),
        DType::BF16 => Ok(BurnDType::BF16),
        DType::F32 => Ok(BurnDType::F32),
        other => Err(InteropError::NotFloat {
            framework: FRAMEWORK,
            dtype: other,
        }),
    }
}
