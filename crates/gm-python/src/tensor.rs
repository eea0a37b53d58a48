//! `gm.Tensor`: images, labels and frames, in GPU or host memory, handed to PyTorch, NumPy,
//! JAX or CuPy through DLPack without a copy.

use std::sync::Arc;

use dlpark::DlpackFlags;
use dlpark::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLManagedTensor, DLManagedTensorVersioned,
};
use dlpark::metadata::Dynamic;
use dlpark::python::{CudaStreamRequest, ExportRequest};
use gm_cuda::{DType, Device, DevicePool, Event, PoolConfig, Stream, sys};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::cuda_error;
use crate::owner::{Fenced, Owner};

/// An element type: its DLPack code and the name NumPy and PyTorch give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elem {
    pub(crate) dl: DLDataType,
    pub(crate) name: &'static str,
}

impl Elem {
    pub(crate) const I64: Elem = Elem {
        dl: DLDataType::new(DLDataTypeCode::INT, 64, 1),
        name: "int64",
    };

    /// DLPack's bool, one byte per element.
    pub(crate) const BOOL: Elem = Elem {
        dl: DLDataType::new(DLDataTypeCode::BOOL, 8, 1),
        name: "bool",
    };

    /// The element type of a gm tensor.
    pub(crate) fn of(d: DType) -> Elem {
        let name = match d {
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
        };
        Elem {
            dl: d.dlpack(),
            name,
        }
    }

    fn size(self) -> usize {
        usize::from(self.dl.bits / 8)
    }
}

/// A tensor in GPU or host memory. Pass it to `torch.from_dlpack` (or `numpy.from_dlpack`,
/// `jax.dlpack.from_dlpack`, `cupy.from_dlpack`): the consumer takes the memory without a
/// copy; on the GPU its stream first waits until the data is in place, and the memory goes
/// back to gm only after the consumer has dropped it and its stream's reads are done.
#[pyclass(module = "gm", frozen)]
pub struct Tensor {
    owner: Arc<Owner>,
    /// Base address of the allocation (DLPack's `data`); the view starts `byte_offset` in.
    data: u64,
    byte_offset: u64,
    shape: Vec<i64>,
    /// In elements.
    strides: Vec<i64>,
    elem: Elem,
    /// `None` for host memory.
    device: Option<Device>,
    ready: Option<Arc<Event>>,
}

impl Tensor {
    /// A view of a gm device tensor whose memory `owner` keeps.
    pub(crate) fn from_device(t: &gm_cuda::Tensor, owner: Arc<Owner>) -> Tensor {
        Tensor {
            owner,
            data: gm_cuda::DeviceMemory::device_ptr(t.storage()).0,
            byte_offset: t.byte_offset() as u64,
            shape: t.shape().iter().map(|&d| d as i64).collect(),
            strides: t.strides().iter().map(|&s| s as i64).collect(),
            elem: Elem::of(t.dtype()),
            device: Some(t.device().clone()),
            ready: t.ready_event().cloned(),
        }
    }

    /// Host bytes of a contiguous tensor of `shape`.
    pub(crate) fn host(shape: &[usize], elem: Elem, bytes: Vec<u8>) -> PyResult<Tensor> {
        let numel: usize = shape.iter().product();
        if numel * elem.size() != bytes.len() {
            return Err(PyValueError::new_err(format!(
                "{} bytes for a {} tensor of shape {shape:?}",
                bytes.len(),
                elem.name
            )));
        }
        let owner = Arc::new(Owner::Host(bytes));
        let data = match &*owner {
            Owner::Host(b) => b.as_ptr() as u64,
            _ => 0,
        };
        Ok(Tensor {
            owner,
            data,
            byte_offset: 0,
            shape: shape.iter().map(|&d| d as i64).collect(),
            strides: gm_cuda::contiguous_strides(shape)
                .into_iter()
                .map(|s| s as i64)
                .collect(),
            elem,
            device: None,
            ready: None,
        })
    }

    /// `i64` values in device memory from `uploads` (a small pool and its stream).
    pub(crate) fn device_i64(values: &[i64], uploads: &Uploads) -> PyResult<Tensor> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        Tensor::upload(&bytes, &[values.len()], Elem::I64, uploads)
    }

    /// Contiguous `f32` values (native-endian bytes) of `shape` in device memory from
    /// `uploads` (the soft labels of a mixed batch).
    pub(crate) fn device_f32(bytes: &[u8], shape: &[usize], uploads: &Uploads) -> PyResult<Tensor> {
        Tensor::upload(bytes, shape, Elem::of(DType::F32), uploads)
    }

    /// Where this view lies in the allocation it shares with others (keyed by its owner,
    /// base address and ready event), for [`crate::torch_import::to_torch`].
    pub(crate) fn place(&self) -> crate::torch_import::Place {
        // One past the last element's byte (strides in elements, none negative in gm).
        let last: i64 = self
            .shape
            .iter()
            .zip(&self.strides)
            .map(|(&d, &s)| (d.max(1) - 1) * s.max(0))
            .sum();
        let empty = self.shape.iter().any(|&d| d <= 0);
        let bytes = if empty {
            0
        } else {
            (last as u64 + 1) * self.elem.size() as u64
        };
        crate::torch_import::Place {
            group: (
                Arc::as_ptr(&self.owner) as usize,
                self.data,
                self.ready.as_ref().map_or(0, |e| Arc::as_ptr(e) as usize),
            ),
            offset: self.byte_offset,
            end: self.byte_offset + bytes,
        }
    }

    /// Bytes of one element.
    pub(crate) fn elem_size(&self) -> usize {
        self.elem.size()
    }

    /// The element type's name in NumPy and PyTorch.
    pub(crate) fn elem_name(&self) -> &'static str {
        self.elem.name
    }

    /// The shape.
    pub(crate) fn shape_vec(&self) -> Vec<i64> {
        self.shape.clone()
    }

    /// The strides, in elements.
    pub(crate) fn strides_vec(&self) -> Vec<i64> {
        self.strides.clone()
    }

    /// The first `elements` elements of this view's type from its allocation's base, flat,
    /// ready when this view is.
    pub(crate) fn flat_elements(&self, elements: u64) -> Tensor {
        let mut v = self.clone_view();
        v.byte_offset = 0;
        v.shape = vec![elements as i64];
        v.strides = vec![1];
        v
    }

    /// Whether the elements are in host memory.
    pub(crate) fn on_host(&self) -> bool {
        self.device.is_none()
    }

    /// Host tensors copied to device memory from `uploads` in one copy (a batch's targets
    /// beside its images): each a view of one buffer, all ready on one event.
    pub(crate) fn to_device_all(host: &[&Tensor], uploads: &Uploads) -> PyResult<Vec<Tensor>> {
        // 8-byte aligned places in one buffer, tensors of one element type and row shape
        // side by side (every image's boxes, then every image's labels, ...), so that torch
        // can cut each kind with one split (`torch_import::to_torch`).
        let mut order: Vec<usize> = (0..host.len()).collect();
        order.sort_by_key(|&k| {
            (
                host[k].elem.name,
                host[k].shape.get(1..).map(<[i64]>::to_vec),
            )
        });
        let mut bytes = Vec::new();
        let mut at = vec![0; host.len()];
        for k in order {
            bytes.resize(bytes.len().next_multiple_of(8), 0);
            at[k] = bytes.len();
            bytes.extend_from_slice(&host[k].host_bytes()?);
        }
        let all = Tensor::upload(&bytes, &[bytes.len()], Elem::of(DType::U8), uploads)?;
        Ok(host
            .iter()
            .zip(at)
            .map(|(t, offset)| {
                let shape: Vec<usize> = t.shape.iter().map(|&d| d.max(0) as usize).collect();
                let mut v = all.clone_view();
                v.byte_offset += offset as u64;
                v.shape = t.shape.clone();
                v.strides = gm_cuda::contiguous_strides(&shape)
                    .into_iter()
                    .map(|s| s as i64)
                    .collect();
                v.elem = t.elem;
                v
            })
            .collect())
    }

    /// Contiguous elements of `elem` (native-endian `bytes`) of `shape`, copied to device
    /// memory from `uploads` on its stream; ready once the copy has run, the memory fenced on
    /// that stream when the last view goes.
    fn upload(bytes: &[u8], shape: &[usize], elem: Elem, uploads: &Uploads) -> PyResult<Tensor> {
        let s = &uploads.stream;
        let strides = gm_cuda::contiguous_strides(shape);
        let up = || -> gm_cuda::Result<(gm_cuda::Tensor, Arc<Event>)> {
            let mut buf = uploads.pool.acquire(bytes.len().max(8), s)?;
            s.upload(bytes, &mut buf, 0)?;
            let ready = Arc::new(Event::new(s.device())?);
            ready.record(s)?;
            // The storage's own type does not matter: DLPack exports `elem`.
            let mut t = gm_cuda::Tensor::with_layout(buf, 0, shape, &strides, DType::U8)?;
            t.set_ready_event(ready.clone());
            Ok((t, ready))
        };
        let (t, ready) = up().map_err(cuda_error)?;
        let owner = Arc::new(Owner::Fenced(Fenced::new(t.clone(), s.clone())));
        let mut out = Tensor::from_device(&t, owner);
        out.elem = elem;
        out.ready = Some(ready);
        Ok(out)
    }

    /// The same view, sharing the memory.
    fn clone_view(&self) -> Tensor {
        Tensor {
            owner: self.owner.clone(),
            data: self.data,
            byte_offset: self.byte_offset,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            elem: self.elem,
            device: self.device.clone(),
            ready: self.ready.clone(),
        }
    }

    /// Element 0 along the first dimension (`t[0]`), sharing the memory.
    pub(crate) fn first(&self) -> Tensor {
        Tensor {
            owner: self.owner.clone(),
            data: self.data,
            byte_offset: self.byte_offset,
            shape: self.shape.get(1..).unwrap_or_default().to_vec(),
            strides: self.strides.get(1..).unwrap_or_default().to_vec(),
            elem: self.elem,
            device: self.device.clone(),
            ready: self.ready.clone(),
        }
    }

    /// The contiguous `shape` starting `offset` elements into this tensor's data, sharing
    /// the memory (one image of a ragged batch); `None` where it would reach past the end.
    pub(crate) fn part(&self, offset: usize, shape: &[usize]) -> Option<Tensor> {
        self.typed_part(offset * self.elem.size(), shape, self.elem)
    }

    /// The contiguous `shape` of `elem` starting `byte_offset` bytes into this tensor's data
    /// (a batch's targets in their packed buffer); `None` where it would reach past the end.
    pub(crate) fn typed_part(
        &self,
        byte_offset: usize,
        shape: &[usize],
        elem: Elem,
    ) -> Option<Tensor> {
        let bytes =
            |s: &[i64], size: usize| s.iter().map(|&d| d.max(0) as usize).product::<usize>() * size;
        let len = shape.iter().product::<usize>() * elem.size();
        if byte_offset + len > bytes(&self.shape, self.elem.size()) {
            return None;
        }
        let mut t = self.clone_view();
        t.byte_offset = self.byte_offset + byte_offset as u64;
        t.shape = shape.iter().map(|&d| d as i64).collect();
        t.strides = gm_cuda::contiguous_strides(shape)
            .into_iter()
            .map(|s| s as i64)
            .collect();
        t.elem = elem;
        Some(t)
    }

    /// `gm.Tensor(shape=..., dtype=..., device=...)`.
    pub(crate) fn describe(&self) -> String {
        let device = match &self.device {
            Some(d) => format!("cuda:{}", d.ordinal()),
            None => "cpu".into(),
        };
        format!(
            "gm.Tensor(shape={:?}, dtype={}, device={device})",
            self.shape, self.elem.name
        )
    }

    fn dl_device(&self) -> DLDevice {
        match &self.device {
            Some(d) => DLDevice::cuda(d.ordinal() as i32),
            None => DLDevice::CPU,
        }
    }

    /// The consumer's stream for a DLPack request on this device (`None`: no ordering).
    fn consumer(&self, req: &ExportRequest<'_>) -> PyResult<Option<Stream>> {
        let Some(device) = &self.device else {
            return Ok(None);
        };
        let raw = match req.cuda_stream()? {
            CudaStreamRequest::NoSync => return Ok(None),
            // The protocol's default for an omitted stream is the legacy default stream; the
            // sentinels 1 and 2 are CUDA's own handles for the two default streams.
            CudaStreamRequest::Omitted | CudaStreamRequest::LegacyDefault => 1usize,
            CudaStreamRequest::PerThreadDefault => 2,
            CudaStreamRequest::Pointer(p) => p,
        };
        // SAFETY: the consumer passed its stream of this device for this export; the export
        // context records on it at most once, when the consumer releases the tensor, which it
        // does while its stream still exists.
        Ok(Some(unsafe {
            Stream::from_raw(device, raw as sys::CUstream)
        }))
    }

    fn export<M: dlpark::ManagedTensorBase>(
        &self,
        consumer: Option<Stream>,
    ) -> PyResult<dlpark::Managed<M>> {
        let ctx = Box::new(Export {
            owner: self.owner.clone(),
            consumer,
        });
        let mut init = Dynamic::new(self.shape.clone(), self.strides.clone())
            .initialize_as::<M>(ctx)
            .map_err(|e| PyBufferError::new_err(format!("DLPack export: {e}")))?;
        let t = init.tensor_mut();
        t.data = self.data as usize as *mut std::ffi::c_void;
        t.byte_offset = self.byte_offset;
        t.device = self.dl_device();
        t.dtype = self.elem.dl;
        // SAFETY: data, shape, strides and dtype describe memory that `owner`, held by the
        // context until the consumer's deleter runs, keeps alive and in bounds.
        Ok(unsafe { init.finish() })
    }

    /// The elements' bytes. Every gm.Tensor is contiguous (batches, their slices, decoded
    /// images, labels), so its bytes are one range from `byte_offset`.
    fn host_bytes(&self) -> PyResult<Vec<u8>> {
        let len = self.shape.iter().product::<i64>().max(0) as usize * self.elem.size();
        let start = self.byte_offset as usize;
        match (&*self.owner, &self.device) {
            (Owner::Host(b), None) => b
                .get(start..start + len)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| PyValueError::new_err("a tensor past its host memory")),
            (_, Some(d)) => {
                let download = || -> gm_cuda::Result<Vec<u8>> {
                    let s = Stream::new(d)?;
                    if let Some(e) = &self.ready {
                        s.wait(e)?;
                    }
                    let mut out = vec![0u8; len];
                    let mem = RawDevice {
                        ptr: self.data + self.byte_offset,
                        len,
                    };
                    s.download(&mem, 0, &mut out)?;
                    Ok(out)
                };
                download().map_err(cuda_error)
            }
            _ => Err(PyValueError::new_err("a host tensor without host memory")),
        }
    }
}

/// What a DLPack capsule keeps: the memory's owner, and the consumer stream its release must
/// wait for.
struct Export {
    owner: Arc<Owner>,
    consumer: Option<Stream>,
}

impl Drop for Export {
    fn drop(&mut self) {
        if let Some(s) = &self.consumer
            && let Err(e) = self.owner.record_stream(s)
        {
            tracing::error!(error = %e, "could not order a tensor's release after its DLPack consumer");
        }
    }
}

/// A span of device memory inside an allocation the tensor's owner keeps.
struct RawDevice {
    ptr: u64,
    len: usize,
}

impl gm_cuda::DeviceMemory for RawDevice {
    fn device_ptr(&self) -> gm_cuda::DevicePtr {
        gm_cuda::DevicePtr(self.ptr)
    }
    fn byte_len(&self) -> usize {
        self.len
    }
}

/// A small pool and a stream for uploads that travel beside a batch (its labels).
pub(crate) struct Uploads {
    pool: DevicePool,
    stream: Stream,
}

impl Uploads {
    pub(crate) fn new(device: &Device) -> PyResult<Uploads> {
        Ok(Uploads {
            pool: DevicePool::new(device, PoolConfig::unbounded("gm-python uploads")),
            stream: Stream::new(device).map_err(cuda_error)?,
        })
    }
}

#[pymethods]
impl Tensor {
    /// The dimensions.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// Strides in elements.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.strides)
    }

    /// The element type's name: "uint8", "float16", "bfloat16", "float32" or "int64".
    #[getter]
    fn dtype(&self) -> &'static str {
        self.elem.name
    }

    /// "cuda:N" or "cpu".
    #[getter]
    fn device(&self) -> String {
        match &self.device {
            Some(d) => format!("cuda:{}", d.ordinal()),
            None => "cpu".into(),
        }
    }

    /// Whether the tensor is in GPU memory.
    #[getter]
    fn is_cuda(&self) -> bool {
        self.device.is_some()
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.shape.len()
    }

    fn __len__(&self) -> usize {
        self.shape.first().map_or(0, |&d| d as usize)
    }

    /// The elements' bytes in row-major order, copied to the host (after the data is in
    /// place on the GPU). For tests and tools, not for training loops.
    fn tobytes(&self, py: Python<'_>) -> PyResult<Vec<u8>> {
        py.detach(|| self.host_bytes())
    }

    /// A host copy of the tensor (NumPy takes it with `numpy.from_dlpack`).
    fn cpu(&self, py: Python<'_>) -> PyResult<Tensor> {
        let bytes = py.detach(|| self.host_bytes())?;
        let shape: Vec<usize> = self.shape.iter().map(|&d| d as usize).collect();
        Tensor::host(&shape, self.elem, bytes)
    }

    /// The DLPack device: `(2, ordinal)` for CUDA, `(1, 0)` for the host.
    fn __dlpack_device__(&self) -> (u32, i32) {
        let d = self.dl_device();
        (d.device_type.0, d.device_id)
    }

    /// Exports the tensor without a copy (the DLPack protocol). On the GPU, `stream` (the
    /// consumer's: an integer handle, 1 or 2 for CUDA's default streams, -1 for no ordering)
    /// waits for the data first, and the memory's release is ordered after the work queued on
    /// it when the consumer drops the tensor. A versioned capsule when `max_version` >= (1, 0).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(u32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let req = ExportRequest::parse(stream.as_ref(), max_version, dl_device, copy)?;
        req.validate_zero_copy(self.dl_device(), DlpackFlags::empty())?;
        let consumer = self.consumer(&req)?;
        if let (Some(s), Some(e)) = (&consumer, &self.ready) {
            s.wait(e).map_err(cuda_error)?;
        }
        req.export_zero_copy(
            py,
            self.dl_device(),
            DlpackFlags::empty(),
            || self.export::<DLManagedTensor>(consumer.clone()),
            || self.export::<DLManagedTensorVersioned>(consumer.clone()),
        )
    }

    fn __repr__(&self) -> String {
        self.describe()
    }
}
