//! Streams and events: how work is ordered without device-wide synchronization.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, sys};

use crate::device::Device;
use crate::error::{DriverResultExt, Result};

/// A non-blocking CUDA stream (it does not synchronize with the legacy default stream).
///
/// Cheap to clone; clones refer to the same stream.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<CudaStream>,
    device: Device,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.device.ordinal())
            .field("raw", &self.inner.cu_stream())
            .finish()
    }
}

impl Stream {
    /// Whether `other` is this very stream (a clone of this wrapper), not merely a stream at
    /// the same address.
    pub fn is_same(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Creates a new non-blocking stream on `device`.
    pub fn new(device: &Device) -> Result<Stream> {
        let inner = device
            .context()
            .new_stream()
            .during(|| "cuStreamCreate".into())?;
        Ok(Stream {
            inner,
            device: device.clone(),
        })
    }

    /// Creates a new stream that profilers show as `name` (with the `nvtx` feature).
    pub fn named(device: &Device, name: &std::ffi::CStr) -> Result<Stream> {
        let s = Stream::new(device)?;
        crate::nvtx::name_stream(&s, name);
        Ok(s)
    }

    /// Wraps a stream owned by someone else (for example the consumer's current PyTorch
    /// stream) so that our work can be ordered against it. The stream is not destroyed when
    /// the wrapper is dropped.
    ///
    /// # Safety
    /// `raw` must be a valid stream of `device`'s primary context and must outlive the wrapper.
    pub unsafe fn from_raw(device: &Device, raw: sys::CUstream) -> Stream {
        // SAFETY: the caller vouches for the stream's validity and lifetime.
        let inner = unsafe { device.context().wrap_borrowed_stream(raw) };
        Stream {
            inner,
            device: device.clone(),
        }
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The raw handle, for other CUDA libraries (nvJPEG, NVDEC).
    pub fn raw(&self) -> sys::CUstream {
        self.inner.cu_stream()
    }

    /// Makes all future work on this stream wait for the work captured by `event`. The host
    /// does not wait.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .during(|| "cuStreamWaitEvent".into())
    }

    /// Records `event` at the current end of this stream.
    pub fn record(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Blocks the host until the stream's work is done. For tests, shutdown and the end of a
    /// download; the pipeline itself waits on events.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .during(|| "cuStreamSynchronize".into())
    }

    pub(crate) fn cuda(&self) -> &Arc<CudaStream> {
        &self.inner
    }
}

/// A CUDA event: a point in a stream that other streams or the host can wait for.
pub struct Event {
    inner: CudaEvent,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("raw", &self.inner.cu_event())
            .finish()
    }
}

impl Event {
    /// An event for ordering only (timing disabled, which makes record and wait cheaper).
    pub fn new(device: &Device) -> Result<Event> {
        Self::with_flags(device, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
    }

    /// An event whose [`Event::synchronize`] sleeps instead of spinning: for host threads
    /// that wait long (a batch on the engines) on a host whose cores have other work.
    pub fn blocking(device: &Device) -> Result<Event> {
        Self::with_flags(device, sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC)
    }

    /// An event that also records time, for [`Event::elapsed_ms`].
    pub fn timing(device: &Device) -> Result<Event> {
        Self::with_flags(device, sys::CUevent_flags::CU_EVENT_DEFAULT)
    }

    fn with_flags(device: &Device, flags: sys::CUevent_flags) -> Result<Event> {
        let inner = device
            .context()
            .new_event(Some(flags))
            .during(|| "cuEventCreate".into())?;
        Ok(Event { inner })
    }

    /// Records the current end of `stream` into this event (replacing what it held).
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.inner
            .record(stream.cuda())
            .during(|| "cuEventRecord".into())
    }

    /// Blocks the host until the recorded work is done.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .during(|| "cuEventSynchronize".into())
    }

    /// Whether the recorded work is done, without waiting. An event never recorded is done.
    pub fn is_complete(&self) -> Result<bool> {
        self.inner
            .try_is_complete()
            .during(|| "cuEventQuery".into())
    }

    /// Milliseconds between this event and `end`, both created with [`Event::timing`]; waits
    /// for both.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self.inner
            .elapsed_ms(&end.inner)
            .during(|| "cuEventElapsedTime".into())
    }

    /// The raw handle, for other CUDA libraries.
    pub fn raw(&self) -> sys::CUevent {
        self.inner.cu_event()
    }
}
