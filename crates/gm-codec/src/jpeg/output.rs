//! What the batched decoder takes and gives: the encoded inputs, and the decoded batch with
//! one result per input, the path each image took and where the batch's time went.

use std::sync::Arc;

use gm_cuda::{DType, DevicePtr, Event, PooledDeviceBuffer, Stream, Tensor};

use super::error::ImageError;
use super::formats::SourceFormat;
use super::types::PixelFormat;

/// One encoded input: a name for messages (usually the file path) and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct EncodedImage<'a> {
    /// Name used in errors.
    pub name: &'a str,
    /// The encoded bytes.
    pub data: &'a [u8],
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

/// A decoded image inside a [`DecodedBatch`]'s device buffer, tightly packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodedImage {
    /// Width in pixels of what was decoded (after orientation): the whole image's, or the
    /// region's when only a region was asked for ([`ImageDecoder::decode_regions`](super::ImageDecoder::decode_regions)).
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
/// stream after waiting on [`DecodedBatch::ready_event`]; dropping the batch returns the buffer.
#[derive(Debug)]
pub struct DecodedBatch {
    /// One result per input.
    pub images: Vec<Result<DecodedImage, ImageError>>,
    /// Where the batch's host time went.
    pub timings: BatchTimings,
    /// Problems met on the way that the results do not show (a hardware batch that failed
    /// and was decoded again image by image).
    pub notes: Vec<String>,
    pub(super) buffer: Option<PooledDeviceBuffer>,
    pub(super) ready: Event,
    pub(super) stream: Stream,
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
    pub fn ready_event(&self) -> &Event {
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

    /// The images as `u8` tensors over the batch's buffer (`[H, W, 3]` for interleaved RGB,
    /// `[3, H, W]` planar, `[H, W, 1]` grey), each carrying the batch's ready event, and the
    /// stream the buffer is fenced on: a consumer that reads on another stream makes this one
    /// wait for its reads before the last tensor is dropped, so the pool reuses the memory
    /// only after them.
    pub fn into_tensors(self) -> gm_cuda::Result<(Vec<Result<Tensor, ImageError>>, Stream)> {
        let ready = Arc::new(self.ready);
        let whole = match self.buffer {
            Some(buf) => {
                let len = buf.len();
                let mut t = Tensor::new(buf, &[len], DType::U8)?;
                t.set_ready_event(ready);
                Some(t)
            }
            None => None,
        };
        let mut out = Vec::with_capacity(self.images.len());
        for r in self.images {
            out.push(match (r, &whole) {
                (Ok(img), Some(whole)) => {
                    let (w, h) = (img.width as usize, img.height as usize);
                    let shape = match img.format {
                        PixelFormat::Rgb => [h, w, 3],
                        PixelFormat::RgbPlanar => [3, h, w],
                        PixelFormat::Grey => [h, w, 1],
                    };
                    Ok(whole.view(img.offset, &shape, DType::U8)?)
                }
                (Ok(_), None) => {
                    return Err(gm_cuda::CudaError::InvalidArgument(
                        "a decoded image without a batch buffer".into(),
                    ));
                }
                (Err(e), _) => Err(e),
            });
        }
        Ok((out, self.stream))
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
