//! Device and pinned host memory, and the copies between them.
//!
//! Buffers are untyped bytes: decoders, kernels and tensors each see them through their own
//! element type, and pools hand them out by size class. Copies are stream-ordered; a pinned
//! buffer remembers its last asynchronous copy and makes host access wait for it, so reading a
//! download or refilling an upload staging buffer can never race the DMA engine.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::driver::result;

use crate::device::Device;
use crate::error::{CudaError, DriverResultExt, Result};
use crate::stream::{Event, Stream};

/// A device address, as kernels and other CUDA libraries take it.
#[repr(transparent)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The address `bytes` further on.
    pub fn offset(self, bytes: usize) -> DevicePtr {
        DevicePtr(self.0 + bytes as u64)
    }
}

/// Something that lives in device memory, for copies and launches.
pub trait DeviceMemory {
    /// Start address.
    fn device_ptr(&self) -> DevicePtr;
    /// Size in bytes.
    fn byte_len(&self) -> usize;
}

/// Device memory, freed on drop. Untyped: a size in bytes.
pub struct DeviceBuffer {
    ptr: DevicePtr,
    len: usize,
    device: Device,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr.0))
            .field("len", &self.len)
            .field("device", &self.device.ordinal())
            .finish()
    }
}

impl DeviceBuffer {
    /// Allocates `bytes` of device memory (contents undefined). A zero-byte buffer allocates
    /// nothing.
    pub fn alloc(device: &Device, bytes: usize) -> Result<DeviceBuffer> {
        let ptr = if bytes == 0 {
            0
        } else {
            device.bind_to_thread()?;
            // SAFETY: plain allocation; the pointer is owned by the returned buffer.
            unsafe { result::malloc_sync(bytes) }.map_err(|e| {
                CudaError::allocation(e, || format!("cuMemAlloc({bytes} bytes)"), bytes, false)
            })?
        };
        Ok(DeviceBuffer {
            ptr: DevicePtr(ptr),
            len: bytes,
            device: device.clone(),
        })
    }

    /// The device address.
    pub fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the memory is on.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl DeviceBuffer {
    /// Gives up ownership: returns the allocation's pointer and length and frees nothing.
    /// The memory came from `cuMemAlloc` in the device's primary context; whoever takes it
    /// frees it (`cuMemFree`, or `cuMemFreeAsync` in stream order after its last use).
    pub fn into_raw(self) -> (DevicePtr, usize) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped or used again, so the device handle is moved out
        // exactly once (it would otherwise leak a reference).
        drop(unsafe { std::ptr::read(&this.device) });
        (this.ptr, this.len)
    }
}

impl DeviceMemory for DeviceBuffer {
    fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }
    fn byte_len(&self) -> usize {
        self.len
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        let freed = self.device.bind_to_thread().and_then(|()| {
            // SAFETY: the pointer came from cuMemAlloc and is freed exactly once, here.
            unsafe { result::free_sync(self.ptr.0) }.during(|| "cuMemFree".into())
        });
        if let Err(e) = freed {
            tracing::error!(error = %e, bytes = self.len, "freeing device memory failed");
        }
    }
}

// cuMemHostAlloc flags (cuda.h): PORTABLE makes the memory pinned for every context, so a
// staging buffer can feed any device; WRITECOMBINED skips the CPU caches, which speeds
// host-to-device DMA and makes host reads very slow.
const CU_MEMHOSTALLOC_PORTABLE: u32 = 0x01;
const CU_MEMHOSTALLOC_WRITECOMBINED: u32 = 0x04;

/// Page-locked host memory: the source and target of asynchronous copies.
///
/// Host access ([`as_slice`](Self::as_slice), [`as_mut_slice`](Self::as_mut_slice)) first waits
/// for the last copy that used the buffer, so a download is complete before it is read and an
/// upload has left the buffer before it is overwritten. A copy on another stream than the last
/// copy's waits for it too; a copy on the same stream is queued behind it without a wait.
pub struct PinnedBuffer {
    ptr: NonNull<u8>,
    len: usize,
    write_combined: bool,
    device: Device,
    last_copy: Event,
    copy_pending: AtomicBool,
    /// The stream of the last copy (held, so that it cannot be replaced by another stream
    /// at the same address while its copy may run).
    last_stream: Option<Stream>,
}

// SAFETY: the buffer owns its allocation; host access goes through &self / &mut self borrows and
// waits for the DMA engine, so sharing follows the usual slice rules.
unsafe impl Send for PinnedBuffer {}
// SAFETY: as above; `copy_pending` is atomic and copies need &mut self.
unsafe impl Sync for PinnedBuffer {}

impl std::fmt::Debug for PinnedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("len", &self.len)
            .field("write_combined", &self.write_combined)
            .finish()
    }
}

impl PinnedBuffer {
    /// Allocates `bytes` of pinned host memory, zero-filled. `write_combined` suits buffers the
    /// host only writes (upload staging); never read them on the host.
    pub fn alloc(device: &Device, bytes: usize, write_combined: bool) -> Result<PinnedBuffer> {
        let last_copy = Event::new(device)?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            device.bind_to_thread()?;
            let flags = CU_MEMHOSTALLOC_PORTABLE
                | if write_combined {
                    CU_MEMHOSTALLOC_WRITECOMBINED
                } else {
                    0
                };
            // SAFETY: plain allocation; the pointer is owned by the returned buffer.
            let raw = unsafe { result::malloc_host(bytes, flags) }.map_err(|e| {
                CudaError::allocation(e, || format!("cuMemHostAlloc({bytes} bytes)"), bytes, true)
            })?;
            let ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(|| {
                CudaError::InvalidArgument("cuMemHostAlloc returned a null pointer".into())
            })?;
            // SAFETY: freshly allocated, `bytes` long, not shared yet.
            unsafe { ptr.as_ptr().write_bytes(0, bytes) };
            ptr
        };
        Ok(PinnedBuffer {
            ptr,
            len: bytes,
            write_combined,
            device: device.clone(),
            last_copy,
            copy_pending: AtomicBool::new(false),
            last_stream: None,
        })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it was allocated write-combined.
    pub fn is_write_combined(&self) -> bool {
        self.write_combined
    }

    /// The bytes, after the last asynchronous copy into this buffer has finished.
    pub fn as_slice(&self) -> Result<&[u8]> {
        self.wait_for_copies()?;
        // SAFETY: `len` bytes allocated by us; no copy is in flight (just waited) and copies need
        // &mut self, so none can start while this borrow lives.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) })
    }

    /// The bytes for writing, after the last asynchronous copy out of this buffer has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [u8]> {
        self.wait_for_copies()?;
        // SAFETY: as in `as_slice`, and the borrow is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) })
    }

    /// Whether a copy that uses this buffer may still be running.
    pub fn copy_in_flight(&self) -> Result<bool> {
        Ok(self.copy_pending.load(Ordering::Acquire) && !self.last_copy.is_complete()?)
    }

    fn wait_for_copies(&self) -> Result<()> {
        if self.copy_pending.load(Ordering::Acquire) {
            self.last_copy.synchronize()?;
            self.copy_pending.store(false, Ordering::Release);
        }
        Ok(())
    }

    /// Before a copy on `stream`: waits for the copies in flight, unless they were all on
    /// `stream`, which runs the new one after them (a batch's uploads from one buffer would
    /// otherwise each wait for the one before).
    fn before_copy(&self, stream: &Stream) -> Result<()> {
        match &self.last_stream {
            Some(last) if last.is_same(stream) => Ok(()),
            _ => self.wait_for_copies(),
        }
    }

    fn copy_enqueued(&mut self, stream: &Stream) -> Result<()> {
        self.last_copy.record(stream)?;
        self.copy_pending.store(true, Ordering::Release);
        self.last_stream = Some(stream.clone());
        Ok(())
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // The DMA engine may still be reading or writing: wait before the memory goes away.
        let freed = self
            .wait_for_copies()
            .and_then(|()| self.device.bind_to_thread())
            .and_then(|()| {
                // SAFETY: allocated by cuMemHostAlloc, freed exactly once, no copy in flight.
                unsafe { result::free_host(self.ptr.as_ptr().cast()) }
                    .during(|| "cuMemFreeHost".into())
            });
        if let Err(e) = freed {
            tracing::error!(error = %e, bytes = self.len, "freeing pinned memory failed");
        }
    }
}

/// Where a 2-D copy writes.
enum Target {
    Host(*mut u8),
    Device(DevicePtr),
}

fn check_range(what: &str, offset: usize, bytes: usize, len: usize) -> Result<()> {
    match offset.checked_add(bytes) {
        Some(end) if end <= len => Ok(()),
        _ => Err(CudaError::InvalidArgument(format!(
            "{what}: {bytes} bytes at offset {offset} run past the end of a {len}-byte buffer"
        ))),
    }
}

impl Stream {
    /// Copies `bytes` from pinned `src` (at `src_offset`) to device `dst` (at `dst_offset`),
    /// asynchronously on this stream.
    pub fn copy_to_device(
        &self,
        src: &mut PinnedBuffer,
        src_offset: usize,
        dst: &mut (impl DeviceMemory + ?Sized),
        dst_offset: usize,
        bytes: usize,
    ) -> Result<()> {
        check_range("copy_to_device source", src_offset, bytes, src.len)?;
        check_range(
            "copy_to_device destination",
            dst_offset,
            bytes,
            dst.byte_len(),
        )?;
        if bytes == 0 {
            return Ok(());
        }
        src.before_copy(self)?;
        self.device().bind_to_thread()?;
        // SAFETY: both ranges are in bounds; `src` stays pinned and alive until `last_copy`
        // (recorded below) completes, which every host access and Drop waits for.
        unsafe {
            let host = std::slice::from_raw_parts(src.ptr.as_ptr().add(src_offset), bytes);
            result::memcpy_htod_async(dst.device_ptr().offset(dst_offset).0, host, self.raw())
        }
        .during(|| format!("cuMemcpyHtoDAsync({bytes} bytes)"))?;
        src.copy_enqueued(self)
    }

    /// Copies `bytes` from device `src` (at `src_offset`) into pinned `dst` (at `dst_offset`),
    /// asynchronously; `dst.as_slice()` waits for it.
    pub fn copy_to_host(
        &self,
        src: &(impl DeviceMemory + ?Sized),
        src_offset: usize,
        dst: &mut PinnedBuffer,
        dst_offset: usize,
        bytes: usize,
    ) -> Result<()> {
        check_range("copy_to_host source", src_offset, bytes, src.byte_len())?;
        check_range("copy_to_host destination", dst_offset, bytes, dst.len)?;
        if bytes == 0 {
            return Ok(());
        }
        dst.before_copy(self)?;
        self.device().bind_to_thread()?;
        // SAFETY: in bounds; `dst` is not touched by the host until `last_copy` completes.
        unsafe {
            let host = std::slice::from_raw_parts_mut(dst.ptr.as_ptr().add(dst_offset), bytes);
            result::memcpy_dtoh_async(host, src.device_ptr().offset(src_offset).0, self.raw())
        }
        .during(|| format!("cuMemcpyDtoHAsync({bytes} bytes)"))?;
        dst.copy_enqueued(self)
    }

    /// Copies `bytes` between device buffers, asynchronously.
    pub fn copy_on_device(
        &self,
        src: &(impl DeviceMemory + ?Sized),
        src_offset: usize,
        dst: &mut (impl DeviceMemory + ?Sized),
        dst_offset: usize,
        bytes: usize,
    ) -> Result<()> {
        check_range("copy_on_device source", src_offset, bytes, src.byte_len())?;
        check_range(
            "copy_on_device destination",
            dst_offset,
            bytes,
            dst.byte_len(),
        )?;
        if bytes == 0 {
            return Ok(());
        }
        self.device().bind_to_thread()?;
        // SAFETY: both ranges are in bounds of live allocations.
        unsafe {
            result::memcpy_dtod_async(
                dst.device_ptr().offset(dst_offset).0,
                src.device_ptr().offset(src_offset).0,
                bytes,
                self.raw(),
            )
        }
        .during(|| format!("cuMemcpyDtoDAsync({bytes} bytes)"))
    }

    /// Copies a pageable host slice to the device. The driver stages it before returning, so
    /// `src` may be reused at once; slower than a pinned upload, meant for small data.
    pub fn upload(
        &self,
        src: &[u8],
        dst: &mut (impl DeviceMemory + ?Sized),
        dst_offset: usize,
    ) -> Result<()> {
        check_range("upload destination", dst_offset, src.len(), dst.byte_len())?;
        if src.is_empty() {
            return Ok(());
        }
        self.device().bind_to_thread()?;
        // SAFETY: in bounds; pageable sources are staged by the driver before it returns.
        unsafe { result::memcpy_htod_async(dst.device_ptr().offset(dst_offset).0, src, self.raw()) }
            .during(|| format!("cuMemcpyHtoDAsync({} pageable bytes)", src.len()))
    }

    /// Copies device memory into a pageable host slice and waits for this stream, so `dst` is
    /// filled on return. For tests and tools; the pipeline downloads through pinned memory.
    pub fn download(
        &self,
        src: &(impl DeviceMemory + ?Sized),
        src_offset: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        check_range("download source", src_offset, dst.len(), src.byte_len())?;
        if dst.is_empty() {
            return Ok(());
        }
        self.device().bind_to_thread()?;
        // SAFETY: in bounds; we synchronize before `dst` is released to the caller.
        unsafe {
            result::memcpy_dtoh_async(dst, src.device_ptr().offset(src_offset).0, self.raw())
        }
        .during(|| format!("cuMemcpyDtoHAsync({} pageable bytes)", dst.len()))?;
        self.synchronize()
    }

    /// Copies a pitched 2-D region of device memory (for example a mapped decoder surface) into
    /// a tightly packed host slice, and waits for it. `dst` must hold `row_bytes * rows`.
    ///
    /// # Safety
    /// `src` must address `rows` rows of at least `row_bytes` bytes, `src_pitch` apart, that
    /// stay valid until the call returns.
    pub unsafe fn download_2d(
        &self,
        src: DevicePtr,
        src_pitch: usize,
        row_bytes: usize,
        rows: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        if dst.len() != row_bytes * rows || row_bytes > src_pitch {
            return Err(CudaError::InvalidArgument(format!(
                "download_2d: {rows} rows of {row_bytes} bytes (pitch {src_pitch}) into {} bytes",
                dst.len()
            )));
        }
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: the caller vouches for the source; the destination is `dst`, checked above,
        // and we synchronize before it is released.
        unsafe {
            self.memcpy_2d(
                src,
                src_pitch,
                Target::Host(dst.as_mut_ptr()),
                row_bytes,
                row_bytes,
                rows,
            )?
        };
        self.synchronize()
    }

    /// Copies a pitched 2-D region between device addresses, asynchronously (for example a
    /// mapped decoder surface into a tightly packed buffer).
    ///
    /// # Safety
    /// Both regions must be valid for `rows` rows of `row_bytes`, `src_pitch` and `dst_pitch`
    /// apart, until the copy has run.
    pub unsafe fn copy_2d_on_device(
        &self,
        src: DevicePtr,
        src_pitch: usize,
        dst: DevicePtr,
        dst_pitch: usize,
        row_bytes: usize,
        rows: usize,
    ) -> Result<()> {
        if row_bytes > src_pitch || row_bytes > dst_pitch {
            return Err(CudaError::InvalidArgument(format!(
                "copy_2d_on_device: rows of {row_bytes} bytes exceed the pitch ({src_pitch}, {dst_pitch})"
            )));
        }
        if row_bytes == 0 || rows == 0 {
            return Ok(());
        }
        // SAFETY: the caller vouches for both regions.
        unsafe {
            self.memcpy_2d(
                src,
                src_pitch,
                Target::Device(dst),
                dst_pitch,
                row_bytes,
                rows,
            )
        }
    }

    /// One pitched 2-D copy from device memory, asynchronous on this stream.
    ///
    /// # Safety
    /// Both regions must be valid for `rows` rows of `row_bytes` until the copy has run.
    unsafe fn memcpy_2d(
        &self,
        src: DevicePtr,
        src_pitch: usize,
        dst: Target,
        dst_pitch: usize,
        row_bytes: usize,
        rows: usize,
    ) -> Result<()> {
        use cudarc::driver::sys;
        self.device().bind_to_thread()?;
        let (dst_type, dst_host, dst_device, what) = match dst {
            Target::Host(p) => (
                sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                p.cast(),
                0,
                "to host",
            ),
            Target::Device(p) => (
                sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                std::ptr::null_mut(),
                p.0,
                "device to device",
            ),
        };
        let copy = sys::CUDA_MEMCPY2D_st {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: src.0,
            srcArray: std::ptr::null_mut(),
            srcPitch: src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstArray: std::ptr::null_mut(),
            dstPitch: dst_pitch,
            WidthInBytes: row_bytes,
            Height: rows,
        };
        // SAFETY: per this function's contract.
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, self.raw()) }
            .result()
            .during(|| format!("cuMemcpy2DAsync({rows} x {row_bytes} bytes, {what})"))
    }

    /// Sets every byte of `dst` to `value`, asynchronously.
    pub fn memset(&self, dst: &mut (impl DeviceMemory + ?Sized), value: u8) -> Result<()> {
        if dst.byte_len() == 0 {
            return Ok(());
        }
        self.device().bind_to_thread()?;
        // SAFETY: the whole range belongs to `dst`.
        unsafe { result::memset_d8_async(dst.device_ptr().0, value, dst.byte_len(), self.raw()) }
            .during(|| format!("cuMemsetD8Async({} bytes)", dst.byte_len()))
    }
}
