//! The batched decoder: each image's header picks its path (the NVJPG engines, nvJPEG's CUDA
//! backend, or the CPU), the paths run at the same time on their own streams and threads, and
//! every image lands in one pooled device buffer. Each input gets its own result: a decoded
//! image, or an error naming the input and the reason.
//!
//! [`ImageDecoder::decode_regions`] runs the steps in order: the plan (`super::plan`), the
//! paths (`run`), their outcomes and the CPU fallback (`settle`), then the upload of CPU
//! output, the join of every stream and the conversion of planes (`finish`).

mod finish;
mod run;
mod settle;

use std::sync::Arc;
use std::time::Instant;

use gm_cuda::{Device, DevicePool, Event, PinnedPool, PoolConfig, PoolStats, Stream, nvtx};

use super::error::DecoderError;
use super::nvjpeg::{CudaWorker, HardwareDecoder, NvJpeg};
use super::options::{BackendChoice, DecoderOptions};
use super::output::{DecodedBatch, EncodedImage};
use super::plan::{Available, BatchPlan};
use super::types::Roi;
use settle::BatchLog;

/// Batched decoder of JPEG (and PNG/BMP/WebP/TIFF) images into GPU memory. One instance
/// serves one thread; run several for more throughput.
pub struct ImageDecoder {
    device: Device,
    options: DecoderOptions,
    nv: Option<Arc<NvJpeg>>,
    hardware: Option<HardwareDecoder>,
    /// The batched GPU-Huffman decoder of [`Split::GpuHuffman`](super::Split::GpuHuffman).
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

/// nvJPEG's decoders for `options`: the engines, the batched GPU-Huffman decoder and the
/// CUDA workers, each where the options use it.
type GpuDecoders = (
    Option<HardwareDecoder>,
    Option<HardwareDecoder>,
    Vec<CudaWorker>,
);

fn gpu_decoders(nv: &Arc<NvJpeg>, options: &DecoderOptions) -> Result<GpuDecoders, DecoderError> {
    let hardware = if matches!(
        options.backend,
        BackendChoice::Auto | BackendChoice::Hardware
    ) {
        HardwareDecoder::new(nv, options.preallocate)?
    } else {
        None
    };
    let threads = if options.backend == BackendChoice::Hardware {
        // Used only to retry a failed hardware batch image by image.
        1
    } else {
        options.cuda.threads.max(1)
    };
    let cuda = (0..threads)
        .map(|_| CudaWorker::new(nv, options.cuda.gpu_huffman_pixels))
        .collect::<Result<Vec<_>, _>>()?;
    let gpu_batched = if options.split.is_gpu_huffman()
        && matches!(options.backend, BackendChoice::Auto | BackendChoice::Cuda)
    {
        HardwareDecoder::gpu_huffman(nv)?
    } else {
        None
    };
    Ok((hardware, gpu_batched, cuda))
}

impl ImageDecoder {
    /// A decoder on `device`. nvJPEG is opened unless the backend is the CPU; without it, or
    /// without a GPU, this is an error that says what is missing.
    pub fn new(device: &Device, options: DecoderOptions) -> Result<ImageDecoder, DecoderError> {
        device.bind_to_thread()?;
        let (nv, (hardware, gpu_batched, cuda)) = if options.backend == BackendChoice::Cpu {
            (None, (None, None, Vec::new()))
        } else {
            let nv = NvJpeg::open(device)?;
            let decoders = gpu_decoders(&nv, &options)?;
            (Some(nv), decoders)
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
        self.options.split = self.options.split.with_hw_load(hw_load.clamp(0.0, 1.0));
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

    fn available(&self) -> Available {
        Available {
            hardware: self.hardware.is_some(),
            gpu_batched: self.gpu_batched.is_some(),
            cuda_workers: self.cuda.len(),
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
    /// planes are decoded whole. Each [`DecodedImage`](super::DecodedImage) says what it holds
    /// (`origin`, `full_size`).
    pub fn decode_regions(
        &mut self,
        inputs: &[EncodedImage<'_>],
        region: &mut dyn FnMut(usize, u32, u32) -> Option<Roi>,
    ) -> Result<DecodedBatch, DecoderError> {
        let t0 = Instant::now();
        let planning = nvtx::range(c"gm-codec: plan JPEG batch");
        self.device.bind_to_thread()?;
        let o = self.options.clone();
        let mut plan = BatchPlan::new(inputs, &o, self.available(), region);
        drop(planning);
        let mut log = BatchLog::default();
        log.timings.plan_us = t0.elapsed().as_micros() as u64;
        plan.output_layout(inputs, &o);

        let ready = Event::new(&self.device)?;
        if plan.total == 0 {
            ready.record(&self.stream)?;
            log.timings.total_us = t0.elapsed().as_micros() as u64;
            return Ok(DecodedBatch {
                images: plan.results,
                timings: log.timings,
                notes: log.notes,
                buffer: None,
                ready,
                stream: self.stream.clone(),
            });
        }
        let mut buffer = self.pool.acquire(plan.total, &self.stream)?;
        plan.plane_layout();
        let table_len = plan.table_len();
        let mut plane_buf = if plan.plane_count() > 0 {
            Some(
                self.planes
                    .acquire(table_len + plan.plane_total, &self.stream)?,
            )
        } else {
            None
        };
        let plane_base = plane_buf
            .as_ref()
            .map_or(0, |b| b.device_ptr().0 + table_len as u64);
        let start = Event::new(&self.device)?;
        start.record(&self.stream)?;
        let base = buffer.device_ptr().0;
        let jobs = plan.jobs(inputs, &o, base, plane_base);

        let ran = self.run_paths(inputs, &plan, &jobs, &start);
        let cpu_out = self.settle(inputs, &mut plan, &jobs, ran, &start, &mut log);
        self.upload_cpu(&cpu_out, &plan.results, &start, &mut buffer)?;
        self.join_streams(&jobs)?;
        if let Some(planes_buf) = plane_buf.as_mut() {
            self.convert_planes(&plan, planes_buf, plane_base, base)?;
        }
        // Returned to the pool in stream order: the next batch's decoders start after `start`.
        drop(plane_buf);
        ready.record(&self.stream)?;
        log.timings.total_us = t0.elapsed().as_micros() as u64;
        Ok(DecodedBatch {
            images: plan.results,
            timings: log.timings,
            notes: log.notes,
            buffer: Some(buffer),
            ready,
            stream: self.stream.clone(),
        })
    }
}
