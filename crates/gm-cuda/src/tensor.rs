//! Tensors in device memory, and their zero-copy export as DLPack.

use std::sync::Arc;

use dlpark::ffi::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned};
use dlpark::metadata::Dynamic;

use crate::device::Device;
use crate::error::{CudaError, Result};
use crate::import::Imported;
use crate::memory::{DeviceBuffer, DeviceMemory, DevicePtr};
use crate::pool::{DevicePool, PooledDeviceBuffer};
use crate::stream::{Event, Stream};

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit unsigned integer (raw 10- to 16-bit video samples; not a transform output).
    U16,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::F32 => 4,
        }
    }

    /// The DLPack data type.
    pub fn dlpack(self) -> DLDataType {
        match self {
            DType::U8 => DLDataType::U8,
            DType::U16 => DLDataType::U16,
            DType::F16 => DLDataType::F16,
            DType::BF16 => DLDataType::BF16,
            DType::F32 => DLDataType::F32,
        }
    }
}

/// The memory under a tensor: an owned buffer or one on loan from a pool (given back when the
/// last tensor or DLPack export using it is dropped).
#[derive(Debug)]
pub enum Storage {
    /// A buffer the tensor owns.
    Owned(DeviceBuffer),
    /// A buffer on loan from a [`DevicePool`].
    Pooled(PooledDeviceBuffer),
    /// Memory another library owns, imported through DLPack ([`Tensor::from_dlpack`]).
    Imported(Imported),
}

impl Storage {
    fn device(&self) -> &Device {
        match self {
            Storage::Owned(b) => b.device(),
            Storage::Pooled(b) => b.device(),
            Storage::Imported(b) => b.device(),
        }
    }
}

impl Storage {
    /// The buffer itself, taken out of its pool if it was on loan
    /// ([`Pooled::detach`](crate::pool::Pooled::detach)); imported memory is not gm's to give,
    /// and comes back unchanged.
    pub fn into_owned(self) -> std::result::Result<DeviceBuffer, Storage> {
        match self {
            Storage::Owned(b) => Ok(b),
            Storage::Pooled(b) => Ok(b.detach()),
            imported @ Storage::Imported(_) => Err(imported),
        }
    }
}

impl DeviceMemory for Storage {
    fn device_ptr(&self) -> DevicePtr {
        match self {
            Storage::Owned(b) => b.device_ptr(),
            Storage::Pooled(b) => b.device_ptr(),
            Storage::Imported(b) => b.device_ptr(),
        }
    }
    fn byte_len(&self) -> usize {
        match self {
            Storage::Owned(b) => b.len(),
            Storage::Pooled(b) => b.len(),
            Storage::Imported(b) => b.byte_len(),
        }
    }
}

impl From<DeviceBuffer> for Storage {
    fn from(b: DeviceBuffer) -> Self {
        Storage::Owned(b)
    }
}

impl From<PooledDeviceBuffer> for Storage {
    fn from(b: PooledDeviceBuffer) -> Self {
        Storage::Pooled(b)
    }
}

/// A strided view of device memory with an element type, plus the event its contents are
/// ready on. Cloning shares the memory.
///
/// Whoever fills a tensor sets its ready event; whoever reads it on another stream first calls
/// [`Tensor::wait_on`] with that stream (the DLPack export does this for the consumer's
/// stream), so no one ever synchronizes the device.
#[derive(Debug, Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    byte_offset: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
    dtype: DType,
    ready: Option<Arc<Event>>,
}

/// Row-major strides, in elements, of a contiguous tensor of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc: isize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1) as isize);
    }
    strides
}

impl Tensor {
    /// A contiguous tensor of `shape` at the start of `storage`.
    pub fn new(storage: impl Into<Storage>, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::with_layout(storage, 0, shape, &contiguous_strides(shape), dtype)
    }

    /// A tensor with explicit layout: `strides` in elements (negative allowed), starting
    /// `byte_offset` bytes into `storage`. Every addressed element must lie inside the storage.
    pub fn with_layout(
        storage: impl Into<Storage>,
        byte_offset: usize,
        shape: &[usize],
        strides: &[isize],
        dtype: DType,
    ) -> Result<Tensor> {
        let storage = storage.into();
        if shape.len() != strides.len() {
            return Err(CudaError::InvalidArgument(format!(
                "shape {shape:?} and strides {strides:?} differ in length"
            )));
        }
        check_bounds(byte_offset, shape, strides, dtype, storage.byte_len())?;
        Ok(Tensor {
            storage: Arc::new(storage),
            byte_offset,
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            dtype,
            ready: None,
        })
    }

    /// A contiguous tensor with memory from `pool`, for work on `stream`. Contents undefined.
    pub fn empty(
        pool: &DevicePool,
        stream: &Stream,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Tensor> {
        let numel = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .and_then(|n| n.checked_mul(dtype.size()))
            .ok_or_else(|| CudaError::InvalidArgument(format!("shape {shape:?} overflows")))?;
        Self::new(pool.acquire(numel, stream)?, shape, dtype)
    }

    /// A contiguous tensor of `shape` over the same memory, `byte_offset` bytes past this
    /// tensor's start (for carving images out of one large buffer). It shares the storage
    /// and the ready event; every element must lie inside the storage.
    pub fn view(&self, byte_offset: usize, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let start = self.byte_offset.checked_add(byte_offset).ok_or_else(|| {
            CudaError::InvalidArgument(format!("view offset {byte_offset} overflows"))
        })?;
        let strides = contiguous_strides(shape);
        check_bounds(start, shape, &strides, dtype, self.storage.byte_len())?;
        Ok(Tensor {
            storage: self.storage.clone(),
            byte_offset: start,
            shape: shape.to_vec(),
            strides,
            dtype,
            ready: self.ready.clone(),
        })
    }

    /// The memory under the tensor if this tensor is its only user (no clone, view or DLPack
    /// export shares it); otherwise the tensor, unchanged.
    pub fn into_storage(self) -> std::result::Result<Storage, Tensor> {
        Arc::try_unwrap(self.storage).map_err(|storage| Tensor { storage, ..self })
    }

    /// Dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device the memory is on.
    pub fn device(&self) -> &Device {
        self.storage.device()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Address of the first element.
    pub fn data_ptr(&self) -> DevicePtr {
        self.storage.device_ptr().offset(self.byte_offset)
    }

    /// The memory under the tensor (shared with its clones and DLPack exports).
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Offset of the first element from the start of the storage, in bytes.
    pub fn byte_offset(&self) -> usize {
        self.byte_offset
    }

    /// Whether the elements are dense and row-major.
    pub fn is_contiguous(&self) -> bool {
        self.shape
            .iter()
            .zip(&self.strides)
            .zip(contiguous_strides(&self.shape))
            .all(|((&d, &s), c)| d <= 1 || s == c)
    }

    /// The event the contents are ready on, if a producer set one.
    pub fn ready_event(&self) -> Option<&Arc<Event>> {
        self.ready.as_ref()
    }

    /// Sets the event the contents are ready on (the producer records it after its last write).
    pub fn set_ready_event(&mut self, event: Arc<Event>) {
        self.ready = Some(event);
    }

    /// Makes `stream` wait (on the device) until the contents are ready.
    pub fn wait_on(&self, stream: &Stream) -> Result<()> {
        match &self.ready {
            Some(e) => stream.wait(e),
            None => Ok(()),
        }
    }

    /// Copies a contiguous tensor's bytes to the host, waiting for them. For tests and tools.
    pub fn to_host_bytes(&self, stream: &Stream) -> Result<Vec<u8>> {
        if !self.is_contiguous() {
            return Err(CudaError::InvalidArgument(
                "to_host_bytes needs a contiguous tensor".into(),
            ));
        }
        self.wait_on(stream)?;
        let mut out = vec![0u8; self.numel() * self.dtype.size()];
        stream.download(&*self.storage, self.byte_offset, &mut out)?;
        Ok(out)
    }

    /// Exports the tensor as DLPack 1.x (`DLManagedTensorVersioned`) without copying. The
    /// export keeps the memory alive until the consumer calls its deleter. If `consumer` is
    /// given, that stream is made to wait for the ready event first, as the DLPack stream
    /// protocol asks of a producer.
    pub fn to_dlpack(&self, consumer: Option<&Stream>) -> Result<dlpark::versioned::Dlpack> {
        self.prepare_export(consumer)?;
        let mut init = Dynamic::new(self.dl_shape(), self.dl_strides())
            .initialize_as::<DLManagedTensorVersioned>(self.storage.clone())
            .map_err(|e| CudaError::InvalidArgument(format!("DLPack export: {e}")))?;
        self.fill_export(init.tensor_mut());
        // SAFETY: data, device, dtype, shape and strides describe memory kept alive by the
        // Arc<Storage> context until the deleter runs; bounds were checked at construction.
        Ok(unsafe { init.finish() })
    }

    /// The same as [`Tensor::to_dlpack`] with the legacy `DLManagedTensor` ABI (DLPack < 1.0),
    /// for consumers that only take that.
    pub fn to_dlpack_legacy(&self, consumer: Option<&Stream>) -> Result<dlpark::legacy::Dlpack> {
        self.prepare_export(consumer)?;
        let mut init = Dynamic::new(self.dl_shape(), self.dl_strides())
            .initialize_as::<DLManagedTensor>(self.storage.clone())
            .map_err(|e| CudaError::InvalidArgument(format!("DLPack export: {e}")))?;
        self.fill_export(init.tensor_mut());
        // SAFETY: as in `to_dlpack`.
        Ok(unsafe { init.finish() })
    }

    fn prepare_export(&self, consumer: Option<&Stream>) -> Result<()> {
        if let Some(stream) = consumer {
            self.wait_on(stream)?;
        }
        Ok(())
    }

    fn dl_shape(&self) -> Vec<i64> {
        self.shape.iter().map(|&d| d as i64).collect()
    }

    fn dl_strides(&self) -> Vec<i64> {
        self.strides.iter().map(|&s| s as i64).collect()
    }

    fn fill_export(&self, t: &mut dlpark::ffi::DLTensor) {
        // DLPack consumers (PyTorch among them) expect `data` to be the allocation's base with
        // the view's start in `byte_offset`.
        t.data = self.storage.device_ptr().0 as usize as *mut std::ffi::c_void;
        t.byte_offset = self.byte_offset as u64;
        t.device = DLDevice::cuda(self.device().ordinal() as i32);
        t.dtype = self.dtype.dlpack();
    }
}

/// Checks that every element addressed by the layout lies inside `len` bytes.
fn check_bounds(
    byte_offset: usize,
    shape: &[usize],
    strides: &[isize],
    dtype: DType,
    len: usize,
) -> Result<()> {
    if shape.contains(&0) {
        return if byte_offset <= len {
            Ok(())
        } else {
            Err(CudaError::InvalidArgument(format!(
                "byte offset {byte_offset} is past the {len}-byte storage"
            )))
        };
    }
    let es = dtype.size() as i128;
    let (mut lo, mut hi) = (byte_offset as i128, byte_offset as i128);
    for (&d, &s) in shape.iter().zip(strides) {
        let span = (d as i128 - 1) * s as i128 * es;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    if lo < 0 || hi + es > len as i128 {
        return Err(CudaError::InvalidArgument(format!(
            "a {dtype:?} tensor of shape {shape:?}, strides {strides:?} at byte offset \
             {byte_offset} addresses bytes {lo}..{} of a {len}-byte storage",
            hi + es
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_strides_are_row_major() {
        assert_eq!(
            contiguous_strides(&[2, 3, 224, 224]),
            vec![150_528, 50_176, 224, 1]
        );
        assert_eq!(contiguous_strides(&[]), Vec::<isize>::new());
        assert_eq!(contiguous_strides(&[5]), vec![1]);
    }

    #[test]
    fn bounds_are_checked_for_every_layout() {
        // 2x3 f32 in 24 bytes: fits exactly, one byte less does not.
        assert!(check_bounds(0, &[2, 3], &[3, 1], DType::F32, 24).is_ok());
        assert!(check_bounds(0, &[2, 3], &[3, 1], DType::F32, 23).is_err());
        assert!(check_bounds(4, &[2, 3], &[3, 1], DType::F32, 24).is_err());
        // A transposed view addresses the same bytes.
        assert!(check_bounds(0, &[3, 2], &[1, 3], DType::F32, 24).is_ok());
        // A horizontally flipped row starts at its last element.
        assert!(check_bounds(2 * 2, &[3], &[-1], DType::F16, 6).is_ok());
        assert!(check_bounds(2, &[3], &[-1], DType::F16, 6).is_err());
        // Empty tensors address nothing.
        assert!(check_bounds(6, &[0, 5], &[5, 1], DType::U8, 6).is_ok());
        assert!(check_bounds(7, &[0, 5], &[5, 1], DType::U8, 6).is_err());
    }

    #[test]
    fn dtype_sizes_match_dlpack() {
        for d in [DType::U8, DType::F16, DType::BF16, DType::F32] {
            assert_eq!(d.size() * 8, d.dlpack().bits as usize);
            assert_eq!(d.dlpack().lanes, 1);
        }
    }
}
