//! Batched image decoding into GPU memory: each image's header picks its path (the NVJPG
//! engines, nvJPEG's CUDA backend, or the CPU), the paths run at the same time on their own
//! streams and threads, and every image lands in one pooled device buffer. Each input gets its
//! own result: a decoded image, or an error naming the input and the reason.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use gm_cuda::{
    Device, DeviceMemory, DevicePool, DevicePtr, Event, PinnedPool, PoolConfig, PoolStats,
    PooledDeviceBuffer, Stream, nvtx,
};
use parking_lot::Mutex;

use super::color::{self, ColorJob, PlaneLayout};
use super::cpu::{RgbImage, decode_rgb};
use super::formats::{SourceFormat, decode_other_rgb, dimensions, sniff};
use super::header::{HeaderError, JpegInfo, parse};
use super::nvjpeg::{
    CudaWorker, GpuJob, HardwareDecoder, NvFormat, NvJpeg, destination, plane_destination,
};
use super::route::{Backend, DEFAULT_MAX_PIXELS, RouteError, route};

/// Which decoders may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// Each image on the best path for it: hardware, CUDA backend, then CPU.
    Auto,
    /// Only the NVJPG engines; other images are errors.
    Hardware,
    /// Only nvJPEG's CUDA backend; other images are errors.
    Cuda,
    /// Only the CPU.
    Cpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "hw" | "hardware" => Ok(BackendChoice::Hardware),
            "cuda" => Ok(BackendChoice::Cuda),
            "cpu" => Ok(BackendChoice::Cpu),
            other => Err(format!("unknown backend `{other}` (auto, hw, cuda, cpu)")),
        }
    }
}

/// Pixel layout of decoded images, 8 bits per sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    /// Interleaved RGB (HWC).
    Rgb,
    /// Planar RGB (CHW).
    RgbPlanar,
    /// One luma plane.
    Grey,
}

impl PixelFormat {
    /// Samples per pixel.
    pub fn channels(self) -> usize {
        match self {
            PixelFormat::Grey => 1,
            _ => 3,
        }
    }

    fn nv(self) -> NvFormat {
        match self {
            PixelFormat::Rgb => NvFormat::Rgbi,
            PixelFormat::RgbPlanar => NvFormat::Rgb,
            PixelFormat::Grey => NvFormat::Y,
        }
    }
}

/// How subsampled chroma is brought to full size on the GPU paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChromaUpsampling {
    /// Interpolated like libjpeg-turbo's "fancy upsampling" (PIL, OpenCV, zune-jpeg): nvJPEG
    /// writes the planes and one kernel per batch interpolates, converts and turns them, so
    /// GPU images match CPU decodes to the IDCT's rounding. EXIF orientation then costs
    /// nothing on the engines.
    #[default]
    Smooth,
    /// nvJPEG's own conversion, each chroma sample repeated (what DALI, nvImageCodec and
    /// torchvision return): one pass less, and blockier colour edges.
    Replicate,
}

impl std::str::FromStr for ChromaUpsampling {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "smooth" => Ok(ChromaUpsampling::Smooth),
            "replicate" => Ok(ChromaUpsampling::Replicate),
            other => Err(format!(
                "unknown chroma upsampling `{other}` (smooth, replicate)"
            )),
        }
    }
}

/// Settings of an [`ImageDecoder`].
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// Which decoders may be used.
    pub backend: BackendChoice,
    /// Output pixel layout.
    pub format: PixelFormat,
    /// Turn images upright as their EXIF orientation says (PIL's `exif_transpose`).
    pub apply_orientation: bool,
    /// Images with more pixels are refused before anything is allocated.
    pub max_pixels: u64,
    /// Fraction of the images the engines can take that are given to them; the rest go to the
    /// CUDA backend, which runs at the same time (DALI's `hw_decoder_load`). With `balanced`
    /// it is the share the engines are sure to get: the CUDA backend takes at most the rest.
    pub hw_load: f32,
    /// Share the engine-capable images at run time: the engines take chunks from the front of
    /// the batch, the CUDA workers single images from the back, until they meet. Neither path
    /// then waits for the other when the fixed split guessed wrong for this host and image mix.
    /// Off by default: the engines and the CUDA backend differ in the last bit, so which path
    /// an image takes, and with it the pixels, would then depend on timing.
    pub balanced: bool,
    /// The CUDA backend's share in one batched call that does the Huffman decoding on the GPU
    /// (nvJPEG's GPU_HYBRID backend), instead of image by image with the Huffman decoding on
    /// `cuda_threads` host threads: the SMs take the work the host cores did. Not with
    /// `balanced`.
    pub cuda_batched: bool,
    /// Threads (each with its own nvJPEG state and stream) for the CUDA backend.
    pub cuda_threads: usize,
    /// Threads for CPU decoding within a batch.
    pub cpu_threads: usize,
    /// Images of at least this many pixels get their Huffman decoding on the GPU when on the
    /// CUDA backend; smaller ones on the CPU thread.
    pub gpu_huffman_pixels: u64,
    /// Expected batch size and image size, to size the engines' memory up front.
    pub preallocate: Option<(usize, u32, u32)>,
    /// How subsampled chroma is upsampled on the GPU paths (RGB outputs; grey has no chroma).
    pub chroma: ChromaUpsampling,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            backend: BackendChoice::Auto,
            format: PixelFormat::Rgb,
            apply_orientation: true,
            max_pixels: DEFAULT_MAX_PIXELS,
            hw_load: 0.9,
            balanced: false,
            cuda_batched: false,
            cuda_threads: 2,
            cpu_threads: 2,
            gpu_huffman_pixels: 1_000_000,
            preallocate: None,
            chroma: ChromaUpsampling::Smooth,
        }
    }
}

/// One encoded input: a name for messages (usually the file path) and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct EncodedImage<'a> {
    /// Name used in errors.
    pub name: &'a str,
    /// The encoded bytes.
    pub data: &'a [u8],
}

/// Why an input could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageErrorKind {
    /// Not an image format we read.
    #[error("not an image (no JPEG, PNG, BMP, WebP or TIFF signature)")]
    NotAnImage,
    /// The data ends early.
    #[error("truncated: {0}")]
    Truncated(String),
    /// More pixels than allowed.
    #[error("too large: {0}")]
    TooLarge(String),
    /// A valid image that the chosen decoders cannot take.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Damaged data.
    #[error("corrupt: {0}")]
    Corrupt(String),
}

/// An input that could not be decoded, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input}: {kind}")]
pub struct ImageError {
    /// The input's name.
    pub input: String,
    /// The reason.
    pub kind: ImageErrorKind,
}

/// The path an image took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecodePath {
    /// The NVJPG hardware engines.
    Hardware,
    /// nvJPEG's CUDA backend.
    Cuda,
    /// Decoded on the CPU and uploaded through pinned memory.
    Cpu,
}

impl DecodePath {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            DecodePath::Hardware => "hw",
            DecodePath::Cuda => "cuda",
            DecodePath::Cpu => "cpu",
        }
    }
}

/// A region of an image: its top-left pixel and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Roi {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// A decoded image inside a [`DecodedBatch`]'s device buffer, tightly packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedImage {
    /// Width in pixels of what was decoded (after orientation): the whole image's, or the
    /// region's when only a region was asked for ([`ImageDecoder::decode_regions`]).
    pub width: u32,
    /// Height in pixels of what was decoded.
    pub height: u32,
    /// Where the decoded pixels start in the whole image: (0, 0) unless a region was decoded.
    pub origin: (u32, u32),
    /// The whole image's size (after orientation).
    pub full_size: (u32, u32),
    /// Pixel layout.
    pub format: PixelFormat,
    /// Byte offset in the batch buffer.
    pub offset: usize,
    /// Size in bytes: width * height * channels.
    pub len: usize,
    /// Which decoder produced it.
    pub path: DecodePath,
    /// The input's container format.
    pub source: SourceFormat,
}

/// The images of one batch, in input order, in one pooled device buffer. Use them on another
/// stream after waiting on [`DecodedBatch::ready`]; dropping the batch returns the buffer.
#[derive(Debug)]
pub struct DecodedBatch {
    /// One result per input.
    pub images: Vec<Result<DecodedImage, ImageError>>,
    /// Where the batch's host time went.
    pub timings: BatchTimings,
    /// Problems met on the way that the results do not show (a hardware batch that failed
    /// and was decoded again image by image).
    pub notes: Vec<String>,
    buffer: Option<PooledDeviceBuffer>,
    ready: Event,
    stream: Stream,
}

/// Host wall time of a batch's stages, in microseconds. The paths run at the same time, so
/// they add up to more than the total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchTimings {
    /// Sniffing, header parsing, routing and the engines' support check.
    pub plan_us: u64,
    /// The batched hardware call (nvJPEG parses on the host, then submits to the engines).
    pub hardware_us: u64,
    /// The longest CUDA-backend worker.
    pub cuda_us: u64,
    /// The longest CPU decoding thread, and the staging of its output.
    pub cpu_us: u64,
    /// The whole call.
    pub total_us: u64,
}

impl DecodedBatch {
    /// The event recorded when every image of the batch is in place.
    pub fn ready(&self) -> &Event {
        &self.ready
    }

    /// Device address of image `i`, if it decoded.
    pub fn device_ptr(&self, i: usize) -> Option<DevicePtr> {
        let img = self.images.get(i)?.as_ref().ok()?;
        Some(self.buffer.as_ref()?.device_ptr().offset(img.offset))
    }

    /// The buffer holding every image (none when nothing decoded).
    pub fn buffer(&self) -> Option<&PooledDeviceBuffer> {
        self.buffer.as_ref()
    }

    /// Copies image `i` to the host, waiting for the batch. For tests and tools.
    pub fn download(&self, i: usize) -> gm_cuda::Result<Option<Vec<u8>>> {
        let (Some(Ok(img)), Some(buf)) = (self.images.get(i), self.buffer.as_ref()) else {
            return Ok(None);
        };
        let mut out = vec![0u8; img.len];
        self.stream.download(buf, img.offset, &mut out)?;
        Ok(Some(out))
    }

    /// How many images took each path, and how many failed.
    pub fn counts(&self) -> PathCounts {
        let mut c = PathCounts::default();
        for r in &self.images {
            match r {
                Ok(i) => match i.path {
                    DecodePath::Hardware => c.hardware += 1,
                    DecodePath::Cuda => c.cuda += 1,
                    DecodePath::Cpu => c.cpu += 1,
                },
                Err(_) => c.failed += 1,
            }
        }
        c
    }
}

/// Images per path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounts {
    /// On the NVJPG engines.
    pub hardware: usize,
    /// On the CUDA backend.
    pub cuda: usize,
    /// On the CPU.
    pub cpu: usize,
    /// Errors.
    pub failed: usize,
}

/// What the planner decided for one input.
enum Plan {
    /// `planes`: decoded to YCbCr planes laid out so, then converted by our kernel.
    Gpu {
        backend: Backend,
        info: JpegInfo,
        planes: Option<PlaneLayout>,
    },
    CpuJpeg(JpegInfo),
    CpuOther(SourceFormat),
    Failed(ImageErrorKind),
}

/// Batched decoder of JPEG (and PNG/BMP/WebP/TIFF) images into GPU memory. One instance
/// serves one thread; run several for more throughput.
pub struct ImageDecoder {
    device: Device,
    options: DecoderOptions,
    nv: Option<Arc<NvJpeg>>,
    hardware: Option<HardwareDecoder>,
    /// The batched GPU-Huffman decoder of `cuda_batched`.
    gpu_batched: Option<HardwareDecoder>,
    cuda: Vec<CudaWorker>,
    cuda_done: Vec<Event>,
    stream: Stream,
    pool: DevicePool,
    planes: DevicePool,
    pinned: PinnedPool,
}

impl std::fmt::Debug for ImageDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageDecoder")
            .field("options", &self.options)
            .field("nvjpeg", &self.nv)
            .field("cuda_workers", &self.cuda.len())
            .finish()
    }
}

/// Why a decoder could not be created or a batch not be run at all (per-image problems are
/// in the batch's results instead).
#[derive(Debug, thiserror::Error)]
pub enum DecoderError {
    /// The CUDA layer failed.
    #[error(transparent)]
    Cuda(#[from] gm_cuda::CudaError),
    /// nvJPEG could not be set up.
    #[error(transparent)]
    Setup(#[from] super::nvjpeg::SetupError),
}

const ALIGN: usize = 256;

impl ImageDecoder {
    /// A decoder on `device`. nvJPEG is opened unless the backend is the CPU; without it, or
    /// without a GPU, this is an error that says what is missing.
    pub fn new(device: &Device, options: DecoderOptions) -> Result<ImageDecoder, DecoderError> {
        device.bind_to_thread()?;
        let (nv, hardware, gpu_batched, cuda) = if options.backend == BackendChoice::Cpu {
            (None, None, None, Vec::new())
        } else {
            let nv = NvJpeg::open(device)?;
            let hardware = if matches!(
                options.backend,
                BackendChoice::Auto | BackendChoice::Hardware
            ) {
                HardwareDecoder::new(&nv, options.preallocate)?
            } else {
                None
            };
            let threads = if options.backend == BackendChoice::Hardware {
                // Used only to retry a failed hardware batch image by image.
                1
            } else {
                options.cuda_threads.max(1)
            };
            let cuda = (0..threads)
                .map(|_| CudaWorker::new(&nv, options.gpu_huffman_pixels))
                .collect::<Result<Vec<_>, _>>()?;
            let gpu_batched = if options.cuda_batched
                && matches!(options.backend, BackendChoice::Auto | BackendChoice::Cuda)
            {
                HardwareDecoder::gpu_huffman(&nv)?
            } else {
                None
            };
            (Some(nv), hardware, gpu_batched, cuda)
        };
        let cuda_done = cuda
            .iter()
            .map(|_| Event::new(device))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ImageDecoder {
            device: device.clone(),
            stream: Stream::named(device, c"gm-codec: JPEG batches")?,
            pool: DevicePool::new(device, PoolConfig::unbounded("decoded images")),
            planes: DevicePool::new(device, PoolConfig::unbounded("decoded YCbCr planes")),
            pinned: PinnedPool::new(device, PoolConfig::unbounded("image upload staging"), true),
            options,
            nv,
            hardware,
            gpu_batched,
            cuda,
            cuda_done,
        })
    }

    /// The settings.
    pub fn options(&self) -> &DecoderOptions {
        &self.options
    }

    /// Changes the share of engine-capable images given to the engines (0 to 1).
    pub fn set_hw_load(&mut self, hw_load: f32) {
        self.options.hw_load = hw_load.clamp(0.0, 1.0);
    }

    /// Whether the NVJPG engines are in use.
    pub fn has_hardware(&self) -> bool {
        self.hardware.is_some()
    }

    /// The opened nvJPEG, if any.
    pub fn nvjpeg(&self) -> Option<&Arc<NvJpeg>> {
        self.nv.as_ref()
    }

    /// The output stream: batches are ready on it.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Device memory pool statistics (the decoded-image buffers).
    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Device memory pool statistics of the YCbCr planes that our chroma upsampling reads.
    pub fn plane_pool_stats(&self) -> PoolStats {
        self.planes.stats()
    }

    fn plan(&self, input: &EncodedImage<'_>) -> Plan {
        let o = &self.options;
        let Some(format) = sniff(input.data) else {
            return Plan::Failed(ImageErrorKind::NotAnImage);
        };
        if format != SourceFormat::Jpeg {
            if matches!(o.backend, BackendChoice::Hardware | BackendChoice::Cuda) {
                return Plan::Failed(ImageErrorKind::Unsupported(format!(
                    "{} images are decoded on the CPU, not by the {} backend",
                    format.name(),
                    if o.backend == BackendChoice::Hardware {
                        "hardware"
                    } else {
                        "CUDA"
                    }
                )));
            }
            return match dimensions(input.data, format, o.max_pixels) {
                Ok((w, h)) if u64::from(w) * u64::from(h) > o.max_pixels => {
                    Plan::Failed(ImageErrorKind::TooLarge(format!(
                        "{w}x{h} is over the {}-pixel limit",
                        o.max_pixels
                    )))
                }
                Ok(_) => Plan::CpuOther(format),
                Err(e) if e.contains("limit") => Plan::Failed(ImageErrorKind::TooLarge(e)),
                Err(e) => Plan::Failed(ImageErrorKind::Corrupt(e)),
            };
        }
        let info = match parse(input.data) {
            Ok(i) => i,
            Err(HeaderError::Truncated) => {
                return Plan::Failed(ImageErrorKind::Truncated("the header ends early".into()));
            }
            Err(e) => return Plan::Failed(ImageErrorKind::Corrupt(e.to_string())),
        };
        let (hw_ok, cuda_ok) = match o.backend {
            BackendChoice::Auto => (self.hardware.is_some(), true),
            BackendChoice::Hardware => (true, false),
            BackendChoice::Cuda => (false, true),
            BackendChoice::Cpu => (false, false),
        };
        let backend = match route(&info, hw_ok, cuda_ok, o.max_pixels) {
            Ok(b) => b,
            Err(RouteError::TooLarge {
                width,
                height,
                max_pixels,
            }) => {
                return Plan::Failed(ImageErrorKind::TooLarge(format!(
                    "{width}x{height} is over the {max_pixels}-pixel limit"
                )));
            }
            Err(RouteError::Unsupported(why)) => {
                return Plan::Failed(ImageErrorKind::Unsupported(why));
            }
        };
        if !info.has_end_marker(input.data) {
            return Plan::Failed(ImageErrorKind::Truncated(
                "no end-of-image marker after the scan".into(),
            ));
        }
        match (backend, o.backend) {
            (Backend::Cpu, BackendChoice::Hardware | BackendChoice::Cuda) => {
                Plan::Failed(ImageErrorKind::Unsupported(format!(
                    "{:?} {:?} {}-bit JPEG with {} components is not decodable by the {} backend",
                    info.coding,
                    info.subsampling(),
                    info.precision,
                    info.components.len(),
                    if o.backend == BackendChoice::Hardware {
                        "hardware"
                    } else {
                        "CUDA"
                    }
                )))
            }
            (Backend::Cuda, BackendChoice::Hardware) => {
                Plan::Failed(ImageErrorKind::Unsupported(format!(
                    "{:?} {:?} JPEG is not decodable by the hardware engines",
                    info.coding,
                    info.subsampling()
                )))
            }
            (Backend::Cpu, _) => Plan::CpuJpeg(info),
            (b, _) => {
                let planes =
                    if o.chroma == ChromaUpsampling::Smooth && o.format != PixelFormat::Grey {
                        PlaneLayout::for_jpeg(&info)
                    } else {
                        None
                    };
                Plan::Gpu {
                    // Every layout the engines take has planes; this only guards the split.
                    backend: if b == Backend::Hardware
                        && planes.is_none()
                        && o.chroma == ChromaUpsampling::Smooth
                        && o.format != PixelFormat::Grey
                    {
                        Backend::Cuda
                    } else {
                        b
                    },
                    info,
                    planes,
                }
            }
        }
    }

    /// Decodes `inputs` into one device buffer. Never fails because of one input: each gets
    /// its result. An `Err` means the GPU itself failed.
    pub fn decode(&mut self, inputs: &[EncodedImage<'_>]) -> Result<DecodedBatch, DecoderError> {
        self.decode_regions(inputs, &mut |_, _, _| None)
    }

    /// [`ImageDecoder::decode`], asking `region(input index, width, height)` for the part of
    /// each image its user will read (sizes after orientation; `None`: all of it). The CUDA
    /// backend then decodes only that region (nvJPEG's ROI decoding: less Huffman, IDCT and
    /// colour work, and less memory), as DALI's `decoders.image_random_crop` does; the engines
    /// and the CPU decode whole images, and images turned by EXIF orientation or decoded to
    /// planes are decoded whole. Each [`DecodedImage`] says what it holds (`origin`,
    /// `full_size`).
    pub fn decode_regions(
        &mut self,
        inputs: &[EncodedImage<'_>],
        region: &mut dyn FnMut(usize, u32, u32) -> Option<Roi>,
    ) -> Result<DecodedBatch, DecoderError> {
        let t0 = Instant::now();
        let planning = nvtx::range(c"gm-codec: plan JPEG batch");
        self.device.bind_to_thread()?;
        let o = self.options.clone();
        let fmt = o.format;
        let ch = fmt.channels();
        let mut plans: Vec<Plan> = inputs.iter().map(|i| self.plan(i)).collect();

        // The share of the engines' images moved to the CUDA backend.
        let mut hw_count = 0usize;
        let hw_total = plans
            .iter()
            .filter(|p| {
                matches!(
                    p,
                    Plan::Gpu {
                        backend: Backend::Hardware,
                        ..
                    }
                )
            })
            .count();
        let hw_quota = if o.backend == BackendChoice::Hardware {
            hw_total
        } else {
            (hw_total as f64 * f64::from(o.hw_load.clamp(0.0, 1.0))).round() as usize
        };
        // nvJPEG's own check of each engine image runs on the engines' thread, at the same
        // time as the CUDA workers, not here: parsing every header again took 2 ms a batch.
        let balanced = o.balanced
            && o.backend == BackendChoice::Auto
            && self.hardware.is_some()
            && self.gpu_batched.is_none()
            && !self.cuda.is_empty();
        if !balanced {
            for p in plans.iter_mut() {
                if let Plan::Gpu { backend, .. } = p
                    && *backend == Backend::Hardware
                {
                    if self.hardware.is_none() {
                        // Only reached with the hardware backend chosen (Auto routes by it).
                        *p = Plan::Failed(ImageErrorKind::Unsupported(
                            "this GPU has no NVJPG engines".into(),
                        ));
                    } else if hw_count >= hw_quota {
                        *backend = Backend::Cuda;
                    } else {
                        hw_count += 1;
                    }
                }
            }
        }

        // Regions, for the images the CUDA workers decode to RGB as they are.
        let rois: Vec<Option<Roi>> = plans
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Plan::Gpu {
                    backend: Backend::Cuda,
                    info,
                    planes: None,
                } if self.gpu_batched.is_none()
                    && (info.orientation == 1 || !o.apply_orientation) =>
                {
                    let (w, h) = (info.width, info.height);
                    region(i, w, h).filter(|r| {
                        r.width > 0
                            && r.height > 0
                            && r.x.checked_add(r.width).is_some_and(|e| e <= w)
                            && r.y.checked_add(r.height).is_some_and(|e| e <= h)
                            && (r.width, r.height) != (w, h)
                    })
                }
                _ => None,
            })
            .collect();
        drop(planning);
        let mut timings = BatchTimings {
            plan_us: t0.elapsed().as_micros() as u64,
            ..BatchTimings::default()
        };
        let mut notes = Vec::new();
        // Sizes and offsets in the batch buffer.
        let mut results: Vec<Result<DecodedImage, ImageError>> = Vec::with_capacity(inputs.len());
        let mut total = 0usize;
        for (p, input) in plans.iter().zip(inputs) {
            let dims = match p {
                Plan::Gpu { info, .. } | Plan::CpuJpeg(info) => {
                    Ok(info.oriented_size(o.apply_orientation))
                }
                Plan::CpuOther(f) => {
                    dimensions(input.data, *f, o.max_pixels).map_err(ImageErrorKind::Corrupt)
                }
                Plan::Failed(k) => Err(k.clone()),
            };
            let roi = rois[results.len()];
            results.push(match dims {
                Ok(full_size) => {
                    let (origin, (w, h)) = match roi {
                        Some(r) => ((r.x, r.y), (r.width, r.height)),
                        None => ((0, 0), full_size),
                    };
                    let len = w as usize * h as usize * ch;
                    let offset = total;
                    total += len.div_ceil(ALIGN) * ALIGN;
                    Ok(DecodedImage {
                        width: w,
                        height: h,
                        origin,
                        full_size,
                        format: fmt,
                        offset,
                        len,
                        path: match p {
                            Plan::Gpu {
                                backend: Backend::Hardware,
                                ..
                            } => DecodePath::Hardware,
                            Plan::Gpu { .. } => DecodePath::Cuda,
                            _ => DecodePath::Cpu,
                        },
                        source: match p {
                            Plan::CpuOther(f) => *f,
                            _ => SourceFormat::Jpeg,
                        },
                    })
                }
                Err(kind) => Err(ImageError {
                    input: input.name.to_string(),
                    kind,
                }),
            });
        }

        let ready = Event::new(&self.device)?;
        if total == 0 {
            ready.record(&self.stream)?;
            timings.total_us = t0.elapsed().as_micros() as u64;
            return Ok(DecodedBatch {
                images: results,
                timings,
                notes,
                buffer: None,
                ready,
                stream: self.stream.clone(),
            });
        }
        let mut buffer = self.pool.acquire(total, &self.stream)?;
        // Images decoded to planes: the job table first, then each image's planes.
        let mut plane_at: Vec<Option<usize>> = vec![None; inputs.len()];
        let mut plane_total = 0usize;
        for (i, p) in plans.iter().enumerate() {
            if let (
                Plan::Gpu {
                    planes: Some(l), ..
                },
                Ok(_),
            ) = (p, &results[i])
            {
                plane_at[i] = Some(plane_total);
                plane_total += l.bytes().div_ceil(ALIGN) * ALIGN;
            }
        }
        let plane_count = plane_at.iter().flatten().count();
        let table_len = color::table_bytes(plane_count).div_ceil(ALIGN) * ALIGN;
        let mut plane_buf = if plane_count > 0 {
            Some(self.planes.acquire(table_len + plane_total, &self.stream)?)
        } else {
            None
        };
        let plane_base = plane_buf
            .as_ref()
            .map_or(0, |b| b.device_ptr().0 + table_len as u64);
        let start = Event::new(&self.device)?;
        start.record(&self.stream)?;
        let base = buffer.device_ptr().0;

        let mut hw_jobs: Vec<(usize, GpuJob<'_>)> = Vec::new();
        let mut cuda_jobs: Vec<(usize, GpuJob<'_>)> = Vec::new();
        let mut cpu_jobs: Vec<usize> = Vec::new();
        for (i, (p, input)) in plans.iter().zip(inputs).enumerate() {
            let Ok(img) = &results[i] else { continue };
            match p {
                Plan::Gpu {
                    backend,
                    info,
                    planes,
                } => {
                    let (format, dst, orientation) = match (planes, plane_at[i]) {
                        (Some(l), Some(at)) => (
                            NvFormat::Yuv,
                            plane_destination(plane_base + at as u64, l),
                            1,
                        ),
                        _ => (
                            fmt.nv(),
                            destination(base + img.offset as u64, img.width, img.height, fmt.nv()),
                            if o.apply_orientation {
                                info.orientation
                            } else {
                                1
                            },
                        ),
                    };
                    let job = GpuJob {
                        data: input.data,
                        orientation,
                        pixels: u64::from(info.width) * u64::from(info.height),
                        format,
                        dst,
                        roi: rois[i],
                    };
                    if *backend == Backend::Hardware {
                        hw_jobs.push((i, job));
                    } else {
                        cuda_jobs.push((i, job));
                    }
                }
                Plan::CpuJpeg(_) | Plan::CpuOther(_) => cpu_jobs.push(i),
                Plan::Failed(_) => {}
            }
        }

        // Engines, CUDA workers and CPU threads at the same time.
        let failures: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
        let cpu_out: Mutex<Vec<(usize, Vec<u8>)>> = Mutex::new(Vec::new());
        let retry: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let (cuda_us, cpu_us) = (AtomicU64::new(0), AtomicU64::new(0));
        let split = Mutex::new(Split {
            front: 0,
            back: hw_jobs.len(),
            floor: if balanced { hw_quota } else { hw_jobs.len() },
        });
        let gpu_split = Mutex::new(Split {
            front: 0,
            back: cuda_jobs.len(),
            floor: cuda_jobs.len(),
        });
        let (hw_outcome, gpu_outcome) = {
            let hardware = self.hardware.as_mut();
            let gpu_batched = self.gpu_batched.as_mut();
            let batched = gpu_batched.is_some();
            let cuda = &mut self.cuda;
            let next_cuda = AtomicUsize::new(0);
            let next_cpu = AtomicUsize::new(0);
            let (cuda_us, cpu_us) = (&cuda_us, &cpu_us);
            let (hw_jobs, cuda_jobs, cpu_jobs, plans, failures, cpu_out, retry, start, split) = (
                &hw_jobs, &cuda_jobs, &cpu_jobs, &plans, &failures, &cpu_out, &retry, &start,
                &split,
            );
            let (next_cuda, next_cpu) = (&next_cuda, &next_cpu);
            let opts = &o;
            std::thread::scope(|s| {
                let hw = hardware.filter(|_| !hw_jobs.is_empty()).map(|h| {
                    s.spawn(move || run_engines(h, hw_jobs, split, balanced, true, start))
                });
                let gpu_split = &gpu_split;
                let gpu = gpu_batched.filter(|_| !cuda_jobs.is_empty()).map(|g| {
                    s.spawn(move || run_engines(g, cuda_jobs, gpu_split, false, false, start))
                });
                // With the batched GPU-Huffman call the workers only stay for retries.
                let cuda_jobs: &[(usize, GpuJob<'_>)] = if batched { &[] } else { cuda_jobs };
                let workers = cuda.len().min(if balanced {
                    cuda_jobs.len() + hw_jobs.len()
                } else {
                    cuda_jobs.len()
                });
                for w in cuda.iter_mut().take(workers) {
                    s.spawn(move || {
                        let _nvtx = nvtx::range(c"nvJPEG CUDA backend: worker");
                        let t = Instant::now();
                        if let Err(e) = w.begin(start) {
                            failures.lock().push((usize::MAX, e.to_string()));
                            return;
                        }
                        loop {
                            let k = next_cuda.fetch_add(1, Ordering::Relaxed);
                            // The CUDA-only images first, then the engines' from the back.
                            let (i, job) = match cuda_jobs.get(k) {
                                Some(j) => j,
                                None => match split.lock().take_back() {
                                    Some(b) => &hw_jobs[b],
                                    None => break,
                                },
                            };
                            let mut job = *job;
                            if let Err(e) = w.decode(&mut job) {
                                tracing::debug!(input = inputs[*i].name, error = %e, "CUDA backend failed; trying the CPU");
                                retry.lock().push(*i);
                            }
                        }
                        cuda_us.fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                    });
                }
                let cpu_threads = opts.cpu_threads.max(1).min(cpu_jobs.len());
                for _ in 0..cpu_threads {
                    s.spawn(move || {
                        let _nvtx = nvtx::range(c"gm-codec: CPU decode");
                        let t = Instant::now();
                        loop {
                            let k = next_cpu.fetch_add(1, Ordering::Relaxed);
                            let Some(&i) = cpu_jobs.get(k) else { break };
                            match cpu_decode(&plans[i], inputs[i].data, opts) {
                                Ok(px) => cpu_out.lock().push((i, px)),
                                Err(e) => failures.lock().push((i, e)),
                            }
                        }
                        cpu_us.fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                    });
                }
                (hw.map(|h| h.join()), gpu.map(|g| g.join()))
            })
        };
        let mut retry = retry.into_inner();
        timings.cuda_us = cuda_us.into_inner();
        timings.cpu_us = cpu_us.into_inner();
        // The engines' images the CUDA workers took.
        let taken_back = split.into_inner().back;
        for (i, _) in hw_jobs.iter().skip(taken_back) {
            if let Ok(img) = &mut results[*i] {
                img.path = DecodePath::Cuda;
            }
        }
        let mut refused: Vec<usize> = Vec::new();
        let mut redo: Vec<(usize, GpuJob<'_>)> = match hw_outcome {
            None => Vec::new(),
            Some(Ok(out)) => {
                timings.hardware_us = out.us;
                if let Some(e) = &out.error {
                    notes.push(format!(
                        "a hardware batch failed ({e}); its images were decoded one by one"
                    ));
                    tracing::warn!(error = %e, "hardware batch failed; decoding its images one by one");
                }
                for &k in &out.refused {
                    let i = hw_jobs[k].0;
                    if o.backend == BackendChoice::Hardware {
                        results[i] = Err(ImageError {
                            input: inputs[i].name.to_string(),
                            kind: ImageErrorKind::Unsupported(
                                "nvJPEG's hardware backend refuses this image".into(),
                            ),
                        });
                    } else {
                        refused.push(k);
                    }
                }
                out.redo
                    .iter()
                    .chain(&refused)
                    .map(|&k| hw_jobs[k])
                    .collect()
            }
            Some(Err(_)) => {
                notes.push("the hardware decode thread panicked; decoded image by image".into());
                tracing::error!("hardware decode thread panicked; decoding its images one by one");
                hw_jobs[..taken_back].to_vec()
            }
        };
        match gpu_outcome {
            None => {}
            Some(Ok(out)) => {
                timings.cuda_us = timings.cuda_us.max(out.us);
                if let Some(e) = &out.error {
                    notes.push(format!(
                        "a batched GPU-Huffman call failed ({e}); its images were decoded one by one"
                    ));
                    tracing::warn!(error = %e, "batched GPU-Huffman call failed; decoding its images one by one");
                }
                redo.extend(out.redo.iter().map(|&k| cuda_jobs[k]));
            }
            Some(Err(_)) => {
                notes.push("the GPU-Huffman decode thread panicked; decoded image by image".into());
                tracing::error!(
                    "GPU-Huffman decode thread panicked; decoding its images one by one"
                );
                redo.extend(cuda_jobs.iter().copied());
            }
        }
        if !redo.is_empty() {
            self.retry_on_cuda(&redo, &start, &mut retry, &mut results);
        }
        let mut failures = failures.into_inner();
        if let Some(pos) = failures.iter().position(|(i, _)| *i == usize::MAX) {
            let (_, e) = failures.remove(pos);
            // A worker could not even start: its images never ran.
            tracing::warn!(error = %e, "a CUDA worker could not start");
            for (i, _) in &cuda_jobs {
                retry.push(*i);
            }
            retry.sort_unstable();
            retry.dedup();
        }
        // Images a GPU path refused: the CPU decoder's verdict is final.
        let mut cpu_out = cpu_out.into_inner();
        for i in retry {
            match cpu_decode(&plans[i], inputs[i].data, &o) {
                Ok(px) => {
                    // A region asked of the CUDA backend: the CPU decoded the whole image.
                    let px = match (&results[i], rois[i]) {
                        (Ok(img), Some(r)) => crop_rows(&px, img.full_size.0, ch, r),
                        _ => px,
                    };
                    if let Ok(img) = &mut results[i] {
                        img.path = DecodePath::Cpu;
                    }
                    cpu_out.push((i, px));
                }
                Err(e) => failures.push((i, e)),
            }
        }
        for (i, reason) in failures {
            if i < results.len() {
                results[i] = Err(ImageError {
                    input: inputs[i].name.to_string(),
                    kind: classify(&reason),
                });
            }
        }

        // Uploads of CPU-decoded images, then the join of every stream.
        if !cpu_out.is_empty() {
            let bytes: usize = cpu_out.iter().map(|(_, px)| px.len()).sum();
            let mut staging = self.pinned.acquire(bytes)?;
            let mut at = 0;
            {
                let host = staging.as_mut_slice()?;
                for (_, px) in &cpu_out {
                    host[at..at + px.len()].copy_from_slice(px);
                    at += px.len();
                }
            }
            self.stream.wait(&start)?;
            let mut at = 0;
            for (i, px) in &cpu_out {
                if let Ok(img) = &results[*i]
                    && img.len == px.len()
                {
                    self.stream.copy_to_device(
                        &mut staging,
                        at,
                        &mut *buffer,
                        img.offset,
                        px.len(),
                    )?;
                }
                at += px.len();
            }
        }
        if let Some(h) = &self.hardware
            && !hw_jobs.is_empty()
        {
            let done = Event::new(&self.device)?;
            done.record(h.stream())?;
            self.stream.wait(&done)?;
        }
        if let Some(g) = &self.gpu_batched
            && !cuda_jobs.is_empty()
        {
            let done = Event::new(&self.device)?;
            done.record(g.stream())?;
            self.stream.wait(&done)?;
        }
        for (w, e) in self.cuda.iter().zip(&self.cuda_done) {
            e.record(w.stream())?;
            self.stream.wait(e)?;
        }
        // Planes to RGB for the images a GPU path decoded (a CPU retry wrote its own output).
        if let Some(planes_buf) = plane_buf.as_mut() {
            let jobs: Vec<ColorJob> = plans
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let (
                        Plan::Gpu {
                            planes: Some(l),
                            info,
                            ..
                        },
                        Ok(img),
                        Some(at),
                    ) = (p, &results[i], plane_at[i])
                    else {
                        return None;
                    };
                    (img.path != DecodePath::Cpu).then(|| {
                        ColorJob::new(
                            l,
                            DevicePtr(plane_base + at as u64),
                            DevicePtr(base + img.offset as u64),
                            fmt,
                            if o.apply_orientation {
                                info.orientation
                            } else {
                                1
                            },
                        )
                    })
                })
                .collect();
            color::launch(&self.stream, &jobs, &mut **planes_buf, 0)?;
        }
        // Returned to the pool in stream order: the next batch's decoders start after `start`.
        drop(plane_buf);
        ready.record(&self.stream)?;
        timings.total_us = t0.elapsed().as_micros() as u64;
        Ok(DecodedBatch {
            images: results,
            timings,
            notes,
            buffer: Some(buffer),
            ready,
            stream: self.stream.clone(),
        })
    }

    /// Decodes a failed hardware batch's images one by one on the first CUDA worker; those
    /// it refuses go to `retry` (the CPU).
    fn retry_on_cuda(
        &mut self,
        jobs: &[(usize, GpuJob<'_>)],
        start: &Event,
        retry: &mut Vec<usize>,
        results: &mut [Result<DecodedImage, ImageError>],
    ) {
        let _nvtx = nvtx::range(c"nvJPEG: engines' failed batch, one by one on CUDA");
        let Some(w) = self.cuda.first_mut() else {
            retry.extend(jobs.iter().map(|(i, _)| *i));
            return;
        };
        if w.begin(start).is_err() {
            retry.extend(jobs.iter().map(|(i, _)| *i));
            return;
        }
        for (i, j) in jobs {
            let mut job = *j;
            match w.decode(&mut job) {
                Ok(()) => {
                    if let Ok(img) = &mut results[*i] {
                        img.path = DecodePath::Cuda;
                    }
                }
                Err(_) => retry.push(*i),
            }
        }
    }
}

/// The engines' queue of a batch, shared with the CUDA workers: the engines take chunks at
/// `front`, the workers single images below `back`, never below `floor` (the engines' share).
struct Split {
    front: usize,
    back: usize,
    floor: usize,
}

/// The smallest chunk the engines take while the CUDA workers still take from the back: a
/// batched call spreads its images over the engines, so very small calls leave them idle.
const MIN_ENGINE_CHUNK: usize = 16;

impl Split {
    /// The next chunk for the engines: a third of what is left (a long first call, shorter
    /// ones as the two ends near, so neither side waits long for the other at the end), all of
    /// it in a fixed split.
    fn take_front(&mut self, balanced: bool) -> Option<std::ops::Range<usize>> {
        let left = self.back - self.front;
        if left == 0 {
            return None;
        }
        let n = if balanced {
            (left.div_ceil(3)).max(MIN_ENGINE_CHUNK).min(left)
        } else {
            left
        };
        let r = self.front..self.front + n;
        self.front += n;
        Some(r)
    }

    /// An image for a CUDA worker, from the back.
    fn take_back(&mut self) -> Option<usize> {
        if self.back > self.front.max(self.floor) {
            self.back -= 1;
            Some(self.back)
        } else {
            None
        }
    }
}

/// What the engines' thread did with its share.
struct EngineOutcome {
    /// Host time in the thread, µs.
    us: u64,
    /// Positions in the engines' queue that nvJPEG's check refused.
    refused: Vec<usize>,
    /// Positions in the engines' queue of images in a failed call, to decode again elsewhere.
    redo: Vec<usize>,
    /// The first failed call's error.
    error: Option<String>,
}

/// The engines' thread (or the batched GPU-Huffman one): takes chunks from the front of
/// `jobs` until the queue is empty, running nvJPEG's engine check on each image first when
/// `check`, and (when `balanced`) waits for each call
/// before taking the next so that the CUDA workers can take the rest meanwhile.
fn run_engines(
    h: &mut HardwareDecoder,
    jobs: &[(usize, GpuJob<'_>)],
    split: &Mutex<Split>,
    balanced: bool,
    check: bool,
    start: &Event,
) -> EngineOutcome {
    let _nvtx = nvtx::range(if check {
        c"nvJPEG engines: batch"
    } else {
        c"nvJPEG GPU Huffman: batch"
    });
    let t = Instant::now();
    let mut out = EngineOutcome {
        us: 0,
        refused: Vec::new(),
        redo: Vec::new(),
        error: None,
    };
    let mut chunk: Vec<GpuJob<'_>> = Vec::new();
    let mut at: Vec<usize> = Vec::new();
    loop {
        let Some(range) = split.lock().take_front(balanced) else {
            break;
        };
        chunk.clear();
        at.clear();
        let checking = check.then(|| nvtx::range(c"nvJPEG engines: check images"));
        for k in range {
            let job = jobs[k].1;
            if check && !h.supports(job.data, job.orientation) {
                out.refused.push(k);
            } else {
                chunk.push(job);
                at.push(k);
            }
        }
        drop(checking);
        if chunk.is_empty() {
            continue;
        }
        let mut r = h.decode(&mut chunk, start);
        if balanced && r.is_ok() {
            r = h.wait();
        }
        if let Err(e) = r {
            out.error.get_or_insert_with(|| e.to_string());
            out.redo.extend_from_slice(&at);
        }
    }
    out.us = t.elapsed().as_micros() as u64;
    out
}

/// The rows of `r` from a packed image `width` pixels wide with `ch` bytes per pixel.
fn crop_rows(px: &[u8], width: u32, ch: usize, r: Roi) -> Vec<u8> {
    let (stride, row) = (width as usize * ch, r.width as usize * ch);
    (r.y as usize..(r.y + r.height) as usize)
        .flat_map(|y| {
            let at = y * stride + r.x as usize * ch;
            px.get(at..at + row).unwrap_or_default()
        })
        .copied()
        .collect()
}

/// A CPU decode of a planned image into the output layout.
fn cpu_decode(plan: &Plan, data: &[u8], o: &DecoderOptions) -> Result<Vec<u8>, String> {
    let img = match plan {
        Plan::Gpu { info, .. } | Plan::CpuJpeg(info) => {
            decode_rgb(data, info, o.apply_orientation)?
        }
        Plan::CpuOther(f) => decode_other_rgb(data, *f, o.max_pixels)?,
        Plan::Failed(k) => return Err(k.to_string()),
    };
    Ok(to_layout(&img, o.format))
}

/// Interleaved RGB to the output layout. Grey uses the BT.601 luma weights that JPEG's YCbCr
/// uses, in 8-bit fixed point.
pub fn to_layout(img: &RgbImage, format: PixelFormat) -> Vec<u8> {
    match format {
        PixelFormat::Rgb => img.rgb.clone(),
        PixelFormat::RgbPlanar => {
            let n = img.width as usize * img.height as usize;
            let mut out = vec![0u8; n * 3];
            for (p, px) in img.rgb.chunks_exact(3).enumerate() {
                for c in 0..3 {
                    out[c * n + p] = px[c];
                }
            }
            out
        }
        PixelFormat::Grey => img
            .rgb
            .chunks_exact(3)
            .map(|p| {
                ((77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]) + 128) >> 8)
                    as u8
            })
            .collect(),
    }
}

pub(crate) fn classify(reason: &str) -> ImageErrorKind {
    let r = reason.to_ascii_lowercase();
    if r.contains("not supported") || r.contains("unsupported") {
        ImageErrorKind::Unsupported(reason.to_string())
    } else if r.contains("eof")
        || r.contains("end of")
        || r.contains("truncat")
        || r.contains("exhausted")
    {
        ImageErrorKind::Truncated(reason.to_string())
    } else {
        ImageErrorKind::Corrupt(reason.to_string())
    }
}
