//! Safe owners of nvJPEG's handles: the library with its hardware and CUDA decoders, a batched
//! decoder for the NVJPG engines, and per-thread workers for the CUDA backend.
//!
//! Every raw call stays in this module. Objects here are used by one thread at a time (nvJPEG's
//! states, streams and buffers are not thread safe; its library handle and decoders are).

use std::os::raw::c_int;
use std::ptr;
use std::sync::{Arc, OnceLock};

use gm_cuda::{Device, Event, Stream, nvtx};

use super::nvjpeg_sys::{self as sys, Api, ApiError, nvjpegImage_t, status_name};
use super::types::{PixelFormat, PlaneLayout, Roi};

/// An nvJPEG call that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op} failed: {} ({status})", status_name(*.status))]
#[non_exhaustive]
pub struct NvJpegError {
    /// The call.
    pub op: &'static str,
    /// Its status code.
    pub status: i32,
}

impl NvJpegError {
    /// Whether the status says the data itself is bad or unsupported (rather than the GPU or
    /// the library failing).
    pub fn is_bad_data(&self) -> bool {
        matches!(self.status, 3 | 4 | 10)
    }
}

fn check(op: &'static str, status: sys::nvjpegStatus_t) -> Result<(), NvJpegError> {
    if status == sys::NVJPEG_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(NvJpegError { op, status })
    }
}

fn raw_stream(s: &Stream) -> sys::cudaStream_t {
    s.raw() as sys::cudaStream_t
}

/// The opened library: one handle for the hardware engines (absent on GPUs without NVJPG),
/// one for the CUDA backend, and the two CUDA-backend decoders (Huffman on the CPU, and on the
/// GPU for large images).
pub struct NvJpeg {
    api: Api,
    device: Device,
    hw_handle: Option<sys::nvjpegHandle_t>,
    /// A handle on the GPU_HYBRID backend, whose batched call does the Huffman decoding of a
    /// whole batch on the GPU: created by the first decoder that asks for it
    /// ([`HardwareDecoder::gpu_huffman`]), since each handle holds its own device memory.
    gpu_handle: OnceLock<Option<sys::nvjpegHandle_t>>,
    handle: sys::nvjpegHandle_t,
    hybrid: sys::nvjpegJpegDecoder_t,
    gpu_hybrid: sys::nvjpegJpegDecoder_t,
    engines: u32,
}

// SAFETY: nvJPEG documents the library handle and decoder objects as usable from any thread;
// per-thread objects live in the worker types below.
unsafe impl Send for NvJpeg {}
// SAFETY: as above.
unsafe impl Sync for NvJpeg {}

impl std::fmt::Debug for NvJpeg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvJpeg")
            .field("path", &self.api.path)
            .field("version", &self.api.version)
            .field("hardware_engines", &self.engines)
            .finish()
    }
}

/// Why nvJPEG could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The library is missing or too old.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// A call failed.
    #[error("nvJPEG setup: {0}")]
    Call(#[from] NvJpegError),
    /// The CUDA layer failed.
    #[error(transparent)]
    Cuda(#[from] gm_cuda::CudaError),
}

impl NvJpeg {
    /// Opens nvJPEG for `device`. The hardware handle is created where the GPU has NVJPG
    /// engines; elsewhere only the CUDA backend exists.
    pub fn open(device: &Device) -> Result<Arc<NvJpeg>, SetupError> {
        let api = Api::load()?;
        device.bind_to_thread()?;
        let mut nv = NvJpeg {
            api,
            device: device.clone(),
            hw_handle: None,
            gpu_handle: OnceLock::new(),
            handle: ptr::null_mut(),
            hybrid: ptr::null_mut(),
            gpu_hybrid: ptr::null_mut(),
            engines: 0,
        };
        match nv.create_handle(sys::NVJPEG_BACKEND_HARDWARE) {
            Ok(h) => {
                nv.hw_handle = Some(h);
                let (mut engines, mut cores) = (0, 0);
                // SAFETY: valid handle, two out-parameters.
                let st =
                    unsafe { (nv.api.nvjpegGetHardwareDecoderInfo)(h, &mut engines, &mut cores) };
                if st == sys::NVJPEG_STATUS_SUCCESS {
                    nv.engines = engines;
                }
            }
            Err(status) => tracing::info!(
                status = status_name(status),
                "no nvJPEG hardware backend on this GPU"
            ),
        }
        nv.handle = nv
            .create_handle(sys::NVJPEG_BACKEND_DEFAULT)
            .map_err(|status| NvJpegError {
                op: "nvjpegCreateEx",
                status,
            })?;
        // SAFETY: valid handle; out-parameters receive the decoders.
        check("nvjpegDecoderCreate(HYBRID)", unsafe {
            (nv.api.nvjpegDecoderCreate)(nv.handle, sys::NVJPEG_BACKEND_HYBRID, &mut nv.hybrid)
        })?;
        // SAFETY: as above.
        check("nvjpegDecoderCreate(GPU_HYBRID)", unsafe {
            (nv.api.nvjpegDecoderCreate)(
                nv.handle,
                sys::NVJPEG_BACKEND_GPU_HYBRID,
                &mut nv.gpu_hybrid,
            )
        })?;
        tracing::debug!(path = %nv.api.path, version = ?nv.api.version, engines = nv.engines, "nvJPEG opened");
        Ok(Arc::new(nv))
    }

    /// A library handle on `backend`, with nvJPEG's default allocators.
    fn create_handle(&self, backend: c_int) -> Result<sys::nvjpegHandle_t, sys::nvjpegStatus_t> {
        let mut h = ptr::null_mut();
        // SAFETY: null allocators select nvJPEG's defaults; `h` receives the handle, which
        // Drop destroys.
        let st = unsafe {
            (self.api.nvjpegCreateEx)(backend, ptr::null_mut(), ptr::null_mut(), 0, &mut h)
        };
        if st == sys::NVJPEG_STATUS_SUCCESS {
            Ok(h)
        } else {
            Err(st)
        }
    }

    /// The GPU_HYBRID handle, created on first use; `None` where nvJPEG cannot create it.
    fn gpu_handle(&self) -> Option<sys::nvjpegHandle_t> {
        *self.gpu_handle.get_or_init(|| {
            self.create_handle(sys::NVJPEG_BACKEND_GPU_HYBRID)
                .inspect_err(|&st| {
                    tracing::info!(status = status_name(st), "no nvJPEG GPU_HYBRID handle")
                })
                .ok()
        })
    }

    /// Whether the NVJPG hardware backend is available.
    pub fn has_hardware(&self) -> bool {
        self.hw_handle.is_some()
    }

    /// Hardware decode engines reported by nvJPEG (0 without the hardware backend).
    pub fn hardware_engines(&self) -> u32 {
        self.engines
    }

    /// Where the library was found, and its version.
    pub fn library(&self) -> (&str, Option<&str>) {
        (&self.api.path, self.api.version.as_deref())
    }
}

impl Drop for NvJpeg {
    fn drop(&mut self) {
        let _ = self.device.bind_to_thread();
        // SAFETY: each object was created by this library and is destroyed once; the workers
        // holding an Arc to this value have been dropped.
        unsafe {
            if !self.gpu_hybrid.is_null() {
                (self.api.nvjpegDecoderDestroy)(self.gpu_hybrid);
            }
            if !self.hybrid.is_null() {
                (self.api.nvjpegDecoderDestroy)(self.hybrid);
            }
            if !self.handle.is_null() {
                (self.api.nvjpegDestroy)(self.handle);
            }
            if let Some(h) = self.hw_handle {
                (self.api.nvjpegDestroy)(h);
            }
            if let Some(Some(h)) = self.gpu_handle.get() {
                (self.api.nvjpegDestroy)(*h);
            }
        }
    }
}

/// Output layout asked of nvJPEG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NvFormat {
    /// Interleaved RGB.
    Rgbi,
    /// Planar RGB.
    Rgb,
    /// Luma only.
    Y,
    /// The planes as coded (Y, Cb, Cr at their own sizes), for our own colour conversion.
    Yuv,
}

impl NvFormat {
    fn code(self) -> c_int {
        match self {
            NvFormat::Rgbi => sys::NVJPEG_OUTPUT_RGBI,
            NvFormat::Rgb => sys::NVJPEG_OUTPUT_RGB,
            NvFormat::Y => sys::NVJPEG_OUTPUT_Y,
            NvFormat::Yuv => sys::NVJPEG_OUTPUT_YUV,
        }
    }
}

impl From<PixelFormat> for NvFormat {
    fn from(f: PixelFormat) -> NvFormat {
        match f {
            PixelFormat::Rgb => NvFormat::Rgbi,
            PixelFormat::RgbPlanar => NvFormat::Rgb,
            PixelFormat::Grey => NvFormat::Y,
        }
    }
}

/// Where nvJPEG writes one image: device pointer and width in pixels of a tightly packed image.
pub(crate) fn destination(ptr: u64, width: u32, height: u32, format: NvFormat) -> nvjpegImage_t {
    let w = width as usize;
    let mut d = nvjpegImage_t::default();
    match format {
        NvFormat::Rgbi => {
            d.channel[0] = ptr as *mut u8;
            d.pitch[0] = w * 3;
        }
        NvFormat::Y | NvFormat::Yuv => {
            d.channel[0] = ptr as *mut u8;
            d.pitch[0] = w;
        }
        NvFormat::Rgb => {
            let plane = w * height as usize;
            for c in 0..3 {
                d.channel[c] = (ptr as usize + c * plane) as *mut u8;
                d.pitch[c] = w;
            }
        }
    }
    d
}

/// Where nvJPEG writes the planes of one image laid out as `layout` says, starting at `ptr`.
pub(crate) fn plane_destination(ptr: u64, layout: &PlaneLayout) -> nvjpegImage_t {
    let mut d = nvjpegImage_t::default();
    d.channel[0] = ptr as *mut u8;
    d.pitch[0] = layout.y_pitch;
    if !layout.grey {
        let cb = ptr as usize + layout.y_bytes();
        d.channel[1] = cb as *mut u8;
        d.channel[2] = (cb + layout.c_bytes()) as *mut u8;
        d.pitch[1] = layout.c_pitch;
        d.pitch[2] = layout.c_pitch;
    }
    d
}

/// One JPEG for a GPU decoder: its bytes, EXIF orientation to apply (1 for none), the output
/// format and where the output goes.
#[derive(Clone, Copy)]
pub(crate) struct GpuJob<'a> {
    pub data: &'a [u8],
    pub orientation: u8,
    pub pixels: u64,
    pub format: NvFormat,
    pub dst: nvjpegImage_t,
    /// Only this region (CUDA backend only; `dst` is sized for it).
    pub roi: Option<Roi>,
}

// SAFETY: the pointers in `dst` are device addresses, never dereferenced on the host; `data`
// is a shared borrow.
unsafe impl Send for GpuJob<'_> {}
// SAFETY: as above.
unsafe impl Sync for GpuJob<'_> {}

/// Batched decoding on the NVJPG engines, on its own stream.
pub struct HardwareDecoder {
    nv: Arc<NvJpeg>,
    handle: sys::nvjpegHandle_t,
    state: sys::nvjpegJpegState_t,
    jpeg_stream: sys::nvjpegJpegStream_t,
    params: Vec<sys::nvjpegDecodeParams_t>,
    initialized: Option<(usize, NvFormat)>,
    stream: Stream,
    done: Event,
}

// SAFETY: used by one thread at a time (`&mut self` for every call).
unsafe impl Send for HardwareDecoder {}

impl HardwareDecoder {
    /// A decoder on the hardware handle; `None` where the GPU has no NVJPG engines.
    pub fn new(
        nv: &Arc<NvJpeg>,
        preallocate: Option<(usize, u32, u32)>,
    ) -> Result<Option<Self>, SetupError> {
        match nv.hw_handle {
            Some(handle) => Self::on_handle(nv, handle, preallocate).map(Some),
            None => Ok(None),
        }
    }

    /// A batched decoder on the GPU_HYBRID handle (Huffman decoding on the GPU, the whole
    /// batch at once); `None` where nvJPEG could not create that backend.
    pub fn gpu_huffman(nv: &Arc<NvJpeg>) -> Result<Option<Self>, SetupError> {
        match nv.gpu_handle() {
            Some(handle) => Self::on_handle(nv, handle, None).map(Some),
            None => Ok(None),
        }
    }

    fn on_handle(
        nv: &Arc<NvJpeg>,
        handle: sys::nvjpegHandle_t,
        preallocate: Option<(usize, u32, u32)>,
    ) -> Result<Self, SetupError> {
        nv.device.bind_to_thread()?;
        let mut d = HardwareDecoder {
            nv: nv.clone(),
            handle,
            state: ptr::null_mut(),
            jpeg_stream: ptr::null_mut(),
            params: Vec::new(),
            initialized: None,
            stream: Stream::named(&nv.device, c"nvJPEG engines")?,
            // The engines' thread waits on it for each chunk of a balanced batch: sleeping
            // leaves its core to the CUDA workers' Huffman decoding.
            done: Event::blocking(&nv.device)?,
        };
        // SAFETY: valid handle; out-parameters.
        check("nvjpegJpegStateCreate", unsafe {
            (nv.api.nvjpegJpegStateCreate)(handle, &mut d.state)
        })?;
        // SAFETY: as above.
        check("nvjpegJpegStreamCreate", unsafe {
            (nv.api.nvjpegJpegStreamCreate)(handle, &mut d.jpeg_stream)
        })?;
        if let Some((batch, w, h)) = preallocate {
            // A memory pool for the engines sized up front: nvImageCodec measured >20% faster
            // hardware decoding with it than with allocation on first use.
            // SAFETY: valid handle and state.
            let st = unsafe {
                (nv.api.nvjpegDecodeBatchedPreAllocate)(
                    handle,
                    d.state,
                    batch as c_int,
                    w as c_int,
                    h as c_int,
                    sys::NVJPEG_CSS_420,
                    sys::NVJPEG_OUTPUT_RGBI,
                )
            };
            if st != sys::NVJPEG_STATUS_SUCCESS {
                tracing::warn!(
                    status = status_name(st),
                    "nvjpegDecodeBatchedPreAllocate failed"
                );
            }
        }
        Ok(d)
    }

    /// The stream the engines' work is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    fn ensure_params(&mut self, n: usize) -> Result<(), NvJpegError> {
        while self.params.len() < n {
            let mut p = ptr::null_mut();
            // SAFETY: valid handle; out-parameter.
            check("nvjpegDecodeParamsCreate", unsafe {
                (self.nv.api.nvjpegDecodeParamsCreate)(self.handle, &mut p)
            })?;
            self.params.push(p);
        }
        Ok(())
    }

    /// Whether the engines take `data` with `orientation` applied (nvJPEG's own check, after
    /// our header-based routing: it also knows the engines' limits on sizes and restart
    /// intervals).
    pub(crate) fn supports(&mut self, data: &[u8], orientation: u8) -> bool {
        if self.ensure_params(1).is_err() {
            return false;
        }
        let api = &self.nv.api;
        // SAFETY: `data` outlives the call; handle, stream and params are ours.
        unsafe {
            if (api.nvjpegJpegStreamParseHeader)(
                self.handle,
                data.as_ptr(),
                data.len(),
                self.jpeg_stream,
            ) != sys::NVJPEG_STATUS_SUCCESS
            {
                return false;
            }
            if (api.nvjpegDecodeParamsSetExifOrientation)(self.params[0], c_int::from(orientation))
                != sys::NVJPEG_STATUS_SUCCESS
            {
                return false;
            }
            let mut unsupported: c_int = 1;
            (api.nvjpegDecodeBatchedSupportedEx)(
                self.handle,
                self.jpeg_stream,
                self.params[0],
                &mut unsupported,
            ) == sys::NVJPEG_STATUS_SUCCESS
                && unsupported == 0
        }
    }

    /// Decodes `jobs` in one batched call, enqueued on this decoder's stream after `after`.
    /// Waits on the host for this decoder's previous batch first (its state is reused).
    pub(crate) fn decode(
        &mut self,
        jobs: &mut [GpuJob<'_>],
        after: &Event,
    ) -> Result<(), NvJpegError> {
        let Some(format) = jobs.first().map(|j| j.format) else {
            return Ok(());
        };
        if jobs.iter().any(|j| j.format != format) {
            // One output format per batched call: the caller splits mixed batches.
            return Err(NvJpegError {
                op: "nvjpegDecodeBatched with mixed output formats",
                status: 2,
            });
        }
        self.nv.device.bind_to_thread().map_err(|_| NvJpegError {
            op: "binding the CUDA context",
            status: 1,
        })?;
        self.done.synchronize().map_err(|_| NvJpegError {
            op: "waiting for the previous hardware batch",
            status: 6,
        })?;
        self.stream.wait(after).map_err(|_| NvJpegError {
            op: "ordering the hardware stream",
            status: 6,
        })?;
        let n = jobs.len();
        self.ensure_params(n)?;
        let api = &self.nv.api;
        if self.initialized != Some((n, format)) {
            // SAFETY: valid handle and state.
            check("nvjpegDecodeBatchedInitialize", unsafe {
                (api.nvjpegDecodeBatchedInitialize)(
                    self.handle,
                    self.state,
                    n as c_int,
                    1,
                    format.code(),
                )
            })?;
            self.initialized = Some((n, format));
        }
        let data: Vec<*const u8> = jobs.iter().map(|j| j.data.as_ptr()).collect();
        let lens: Vec<usize> = jobs.iter().map(|j| j.data.len()).collect();
        let mut dst: Vec<nvjpegImage_t> = jobs.iter().map(|j| j.dst).collect();
        // The parameter-taking call only when an image needs turning: it is the one that
        // applies EXIF orientation, and the plain call is what the peers measure.
        let turn = jobs.iter().any(|j| j.orientation != 1);
        let st = if turn {
            for (p, j) in self.params.iter().zip(jobs.iter()) {
                // SAFETY: params created by this handle.
                check("nvjpegDecodeParamsSetExifOrientation", unsafe {
                    (api.nvjpegDecodeParamsSetExifOrientation)(*p, c_int::from(j.orientation))
                })?;
            }
            // SAFETY: n inputs, lengths, destinations (device memory the caller sized for
            // each image's decoded size) and params; inputs stay alive until the call returns,
            // which is when nvJPEG has copied them.
            unsafe {
                (api.nvjpegDecodeBatchedEx)(
                    self.handle,
                    self.state,
                    data.as_ptr(),
                    lens.as_ptr(),
                    dst.as_mut_ptr(),
                    self.params.as_mut_ptr(),
                    raw_stream(&self.stream),
                )
            }
        } else {
            // SAFETY: as above, without params.
            unsafe {
                (api.nvjpegDecodeBatched)(
                    self.handle,
                    self.state,
                    data.as_ptr(),
                    lens.as_ptr(),
                    dst.as_mut_ptr(),
                    raw_stream(&self.stream),
                )
            }
        };
        if let Err(e) = check(
            if turn {
                "nvjpegDecodeBatchedEx"
            } else {
                "nvjpegDecodeBatched"
            },
            st,
        ) {
            // nvJPEG asks for re-initialization after a failed batch.
            self.initialized = None;
            return Err(e);
        }
        self.done.record(&self.stream).map_err(|_| NvJpegError {
            op: "recording the hardware batch's event",
            status: 6,
        })
    }
}

impl HardwareDecoder {
    /// Waits on the host for the last batch to finish on the engines.
    pub(crate) fn wait(&self) -> Result<(), NvJpegError> {
        self.done.synchronize().map_err(|_| NvJpegError {
            op: "waiting for a hardware batch",
            status: 6,
        })
    }
}

impl Drop for HardwareDecoder {
    fn drop(&mut self) {
        let _ = self.nv.device.bind_to_thread();
        let _ = self.stream.synchronize();
        let api = &self.nv.api;
        // SAFETY: objects created here, destroyed once, after their work finished.
        unsafe {
            for p in &self.params {
                (api.nvjpegDecodeParamsDestroy)(*p);
            }
            if !self.jpeg_stream.is_null() {
                (api.nvjpegJpegStreamDestroy)(self.jpeg_stream);
            }
            if !self.state.is_null() {
                (api.nvjpegJpegStateDestroy)(self.state);
            }
        }
    }
}

/// One thread's resources for the CUDA backend (nvJPEG's decoupled API): a state per decoder,
/// two pinned buffers used in turn (the host phase of one image overlaps the copy of the
/// previous one), a device buffer, a parsed-stream object and a stream.
pub struct CudaWorker {
    nv: Arc<NvJpeg>,
    states: [sys::nvjpegJpegState_t; 2],
    pinned: [sys::nvjpegBufferPinned_t; 2],
    pinned_free: [Event; 2],
    device_buf: sys::nvjpegBufferDevice_t,
    jpeg_stream: sys::nvjpegJpegStream_t,
    params: sys::nvjpegDecodeParams_t,
    next_pinned: usize,
    stream: Stream,
    gpu_huffman_pixels: u64,
}

// SAFETY: used by one thread at a time (`&mut self` for every call).
unsafe impl Send for CudaWorker {}

impl CudaWorker {
    /// A worker; images of at least `gpu_huffman_pixels` pixels have their Huffman decoding
    /// done on the GPU, smaller ones on this worker's thread (DALI's hybrid threshold idea:
    /// for small images the CPU is faster than the GPU kernels' launch overhead).
    pub fn new(nv: &Arc<NvJpeg>, gpu_huffman_pixels: u64) -> Result<CudaWorker, SetupError> {
        nv.device.bind_to_thread()?;
        let api = &nv.api;
        let mut w = CudaWorker {
            nv: nv.clone(),
            states: [ptr::null_mut(); 2],
            pinned: [ptr::null_mut(); 2],
            pinned_free: [Event::new(&nv.device)?, Event::new(&nv.device)?],
            device_buf: ptr::null_mut(),
            jpeg_stream: ptr::null_mut(),
            params: ptr::null_mut(),
            next_pinned: 0,
            stream: Stream::named(&nv.device, c"nvJPEG CUDA backend")?,
            gpu_huffman_pixels,
        };
        // SAFETY: valid handle and decoders; out-parameters receive new objects, which Drop
        // destroys (null ones are skipped).
        unsafe {
            check(
                "nvjpegDecoderStateCreate",
                (api.nvjpegDecoderStateCreate)(nv.handle, nv.hybrid, &mut w.states[0]),
            )?;
            check(
                "nvjpegDecoderStateCreate",
                (api.nvjpegDecoderStateCreate)(nv.handle, nv.gpu_hybrid, &mut w.states[1]),
            )?;
            for p in &mut w.pinned {
                check(
                    "nvjpegBufferPinnedCreate",
                    (api.nvjpegBufferPinnedCreate)(nv.handle, ptr::null_mut(), p),
                )?;
            }
            check(
                "nvjpegBufferDeviceCreate",
                (api.nvjpegBufferDeviceCreate)(nv.handle, ptr::null_mut(), &mut w.device_buf),
            )?;
            for s in w.states {
                check(
                    "nvjpegStateAttachDeviceBuffer",
                    (api.nvjpegStateAttachDeviceBuffer)(s, w.device_buf),
                )?;
            }
            check(
                "nvjpegJpegStreamCreate",
                (api.nvjpegJpegStreamCreate)(nv.handle, &mut w.jpeg_stream),
            )?;
            check(
                "nvjpegDecodeParamsCreate",
                (api.nvjpegDecodeParamsCreate)(nv.handle, &mut w.params),
            )?;
        }
        Ok(w)
    }

    /// The stream this worker's device work is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Binds the CUDA context to the calling thread and orders this worker's stream after
    /// `after`; call once per batch before [`CudaWorker::decode`].
    pub(crate) fn begin(&self, after: &Event) -> Result<(), NvJpegError> {
        self.nv.device.bind_to_thread().map_err(|_| NvJpegError {
            op: "binding the CUDA context",
            status: 1,
        })?;
        self.stream.wait(after).map_err(|_| NvJpegError {
            op: "ordering the CUDA-backend stream",
            status: 6,
        })
    }

    /// Decodes one image into `job.dst`, enqueued on this worker's stream.
    pub(crate) fn decode(&mut self, job: &mut GpuJob<'_>) -> Result<(), NvJpegError> {
        let k = self.next_pinned;
        self.next_pinned ^= 1;
        // The pinned buffer's previous copy must be done before the host phase refills it.
        {
            let _nvtx = nvtx::range(c"nvJPEG CUDA backend: wait for a pinned buffer");
            self.pinned_free[k].synchronize().map_err(|_| NvJpegError {
                op: "waiting for a pinned buffer",
                status: 6,
            })?;
        }
        let _nvtx = nvtx::range(c"nvJPEG CUDA backend: host phase and enqueue");
        self.parse(job)?;
        let (decoder, state) = self.pick_decoder(job);
        self.run_phases(decoder, state, k, job)?;
        self.pinned_free[k]
            .record(&self.stream)
            .map_err(|_| NvJpegError {
                op: "recording a pinned buffer's event",
                status: 6,
            })
    }

    /// Parses `job`'s bytes into this worker's stream object and sets its output format,
    /// orientation and region in this worker's params.
    fn parse(&mut self, job: &GpuJob<'_>) -> Result<(), NvJpegError> {
        let nv = &self.nv;
        let api = &nv.api;
        // The params are this worker's for every image: (0, 0, -1, -1) is the whole one.
        let (x, y, w, h) = job.roi.map_or((0, 0, -1, -1), |r| {
            (
                r.x as c_int,
                r.y as c_int,
                r.width as c_int,
                r.height as c_int,
            )
        });
        // SAFETY: every object belongs to this worker or to `nv`; `job.data` outlives the
        // call and nvjpegJpegStreamParse copies what it keeps (save_stream is 0).
        unsafe {
            check(
                "nvjpegJpegStreamParse",
                (api.nvjpegJpegStreamParse)(
                    nv.handle,
                    job.data.as_ptr(),
                    job.data.len(),
                    0,
                    0,
                    self.jpeg_stream,
                ),
            )?;
            check(
                "nvjpegDecodeParamsSetOutputFormat",
                (api.nvjpegDecodeParamsSetOutputFormat)(self.params, job.format.code()),
            )?;
            check(
                "nvjpegDecodeParamsSetExifOrientation",
                (api.nvjpegDecodeParamsSetExifOrientation)(
                    self.params,
                    c_int::from(job.orientation),
                ),
            )?;
            check(
                "nvjpegDecodeParamsSetROI",
                (api.nvjpegDecodeParamsSetROI)(self.params, x, y, w, h),
            )
        }
    }

    /// The decoder and state for the parsed image: the GPU-Huffman one for images of at
    /// least `gpu_huffman_pixels` pixels that it supports, else the host-Huffman one.
    fn pick_decoder(&self, job: &GpuJob<'_>) -> (sys::nvjpegJpegDecoder_t, sys::nvjpegJpegState_t) {
        let nv = &self.nv;
        if job.pixels >= self.gpu_huffman_pixels {
            let mut unsupported: c_int = 1;
            // SAFETY: the decoder, parsed stream and params are live objects of `nv` and this
            // worker; `unsupported` is a valid out-parameter.
            let st = unsafe {
                (nv.api.nvjpegDecoderJpegSupported)(
                    nv.gpu_hybrid,
                    self.jpeg_stream,
                    self.params,
                    &mut unsupported,
                )
            };
            if st == sys::NVJPEG_STATUS_SUCCESS && unsupported == 0 {
                return (nv.gpu_hybrid, self.states[1]);
            }
        }
        (nv.hybrid, self.states[0])
    }

    /// The host phase of the parsed image with pinned buffer `k`, then its transfer and
    /// device phase enqueued on this worker's stream, writing to `job.dst`.
    fn run_phases(
        &self,
        decoder: sys::nvjpegJpegDecoder_t,
        state: sys::nvjpegJpegState_t,
        k: usize,
        job: &mut GpuJob<'_>,
    ) -> Result<(), NvJpegError> {
        let nv = &self.nv;
        let api = &nv.api;
        // SAFETY: every object belongs to this worker or to `nv`; the host phase finishes
        // before we return; `job.dst` is device memory sized for the output.
        unsafe {
            check(
                "nvjpegStateAttachPinnedBuffer",
                (api.nvjpegStateAttachPinnedBuffer)(state, self.pinned[k]),
            )?;
            check(
                "nvjpegDecodeJpegHost",
                (api.nvjpegDecodeJpegHost)(
                    nv.handle,
                    decoder,
                    state,
                    self.params,
                    self.jpeg_stream,
                ),
            )?;
            check(
                "nvjpegDecodeJpegTransferToDevice",
                (api.nvjpegDecodeJpegTransferToDevice)(
                    nv.handle,
                    decoder,
                    state,
                    self.jpeg_stream,
                    raw_stream(&self.stream),
                ),
            )?;
            check(
                "nvjpegDecodeJpegDevice",
                (api.nvjpegDecodeJpegDevice)(
                    nv.handle,
                    decoder,
                    state,
                    &mut job.dst,
                    raw_stream(&self.stream),
                ),
            )
        }
    }
}

impl Drop for CudaWorker {
    fn drop(&mut self) {
        let _ = self.nv.device.bind_to_thread();
        let _ = self.stream.synchronize();
        let api = &self.nv.api;
        // SAFETY: objects created here, destroyed once, after their work finished.
        unsafe {
            if !self.params.is_null() {
                (api.nvjpegDecodeParamsDestroy)(self.params);
            }
            if !self.jpeg_stream.is_null() {
                (api.nvjpegJpegStreamDestroy)(self.jpeg_stream);
            }
            for s in self.states {
                if !s.is_null() {
                    (api.nvjpegJpegStateDestroy)(s);
                }
            }
            for p in self.pinned {
                if !p.is_null() {
                    (api.nvjpegBufferPinnedDestroy)(p);
                }
            }
            if !self.device_buf.is_null() {
                (api.nvjpegBufferDeviceDestroy)(self.device_buf);
            }
        }
    }
}
