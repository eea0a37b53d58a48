//! The device cache: every image decoded and resized once into GPU memory, and each epoch's
//! augmentations served from there (the idea of a GPU-only dataset). Opt-in: it trades device
//! memory, and resolution, for not decoding again.

use std::time::Instant;

use gm_codec::jpeg::formats::dimensions;
use gm_codec::jpeg::{
    DecodedBatch, EncodedImage, ImageDecoder, ImageErrorKind, SourceFormat, parse, sniff,
};
use gm_cuda::{DType, Device, DeviceBuffer, Stream, Tensor};
use gm_transforms::{FusedKernel, FusedOp, Interp, Layout, OutputSpec, SourceImage};

use super::dataset::Dataset;
use crate::error::{LoaderError, SampleErrorKind};
use crate::progress::Progress;

/// What the cache holds: each image as 8-bit RGB with its shorter side scaled down to
/// `shorter_side` (aspect kept, never scaled up; antialiased), so that random crops still see
/// the whole image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceCache {
    /// Shorter side of the cached images (`u32::MAX`: keep decoded images as they are).
    pub shorter_side: u32,
    /// Refuse to build a cache larger than this many bytes (besides what the device has free).
    pub max_bytes: Option<u64>,
}

impl DeviceCache {
    /// A cache at `shorter_side`, bounded only by the device's free memory.
    pub fn shorter_side(shorter_side: u32) -> DeviceCache {
        DeviceCache {
            shorter_side,
            max_bytes: None,
        }
    }
}

/// Room left on the device beside the cache: the decoders, the batch pool and the model.
const HEADROOM: u64 = 2 << 30;
/// Offsets of cached images are aligned like the decoder's outputs.
const ALIGN: usize = 256;

/// Where one image lives in the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) offset: usize,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

/// The cached images of a dataset.
pub(crate) struct Cache {
    pub(crate) memory: Tensor,
    pub(crate) entries: Vec<Result<Entry, SampleErrorKind>>,
    pub(crate) bytes: u64,
}

impl Cache {
    /// The source image of an entry.
    pub(crate) fn source(&self, e: &Entry) -> SourceImage {
        SourceImage::rgb8(self.memory.data_ptr().offset(e.offset), e.width, e.height)
    }
}

/// The cached size of a `w` x `h` image: the shorter side brought down to `side` with the
/// longer one scaled alike (truncated, as torchvision's `Resize` does), never scaled up.
pub fn cached_size(w: u32, h: u32, side: u32) -> (u32, u32) {
    let short = w.min(h);
    if short <= side {
        return (w, h);
    }
    let scale = |x: u32| ((u64::from(side) * u64::from(x)) / u64::from(short)).max(1) as u32;
    if w <= h {
        (side, scale(h))
    } else {
        (scale(w), side)
    }
}

/// An image's upright size from its header.
fn header_size(
    data: &[u8],
    max_pixels: u64,
    apply_orientation: bool,
) -> Result<(u32, u32), SampleErrorKind> {
    let (w, h) = match sniff(data) {
        None => return Err(ImageErrorKind::NotAnImage.into()),
        Some(SourceFormat::Jpeg) => parse(data)
            .map_err(|e| ImageErrorKind::Corrupt(e.to_string()))?
            .oriented_size(apply_orientation),
        Some(f) => dimensions(data, f, max_pixels)?,
    };
    if u64::from(w) * u64::from(h) > max_pixels {
        return Err(ImageErrorKind::TooLarge(format!(
            "{w}x{h} is over the {max_pixels}-pixel limit"
        ))
        .into());
    }
    Ok((w, h))
}

/// Where the cache's images go: one entry per sample, and the bytes they take.
struct Sizes {
    entries: Vec<Result<Entry, SampleErrorKind>>,
    total: usize,
}

/// Sizes every image from its header (reading each file once) and lays them out.
fn lay_out(
    dataset: &dyn Dataset,
    spec: &DeviceCache,
    max_pixels: u64,
    apply_orientation: bool,
) -> Sizes {
    let mut buf = Vec::new();
    let mut entries = Vec::with_capacity(dataset.len());
    let mut total = 0usize;
    for i in 0..dataset.len() {
        buf.clear();
        let size = match dataset.read(i, &mut buf) {
            Err(e) => Err(SampleErrorKind::read(&e)),
            Ok(()) => header_size(&buf, max_pixels, apply_orientation),
        };
        entries.push(size.map(|(w, h)| {
            let (width, height) = cached_size(w, h, spec.shorter_side);
            let offset = total;
            total += (width as usize * height as usize * 3).div_ceil(ALIGN) * ALIGN;
            Entry {
                offset,
                width,
                height,
            }
        }));
    }
    Sizes { entries, total }
}

/// Checks `total` bytes for `images` images against the device's free memory and the spec's
/// bound.
fn check_room(
    device: &Device,
    total: usize,
    images: usize,
    spec: &DeviceCache,
) -> Result<(), LoaderError> {
    let free = device.info()?.free_memory as u64;
    let room = free.saturating_sub(HEADROOM);
    let limit = spec.max_bytes.map_or(room, |m| m.min(room));
    tracing::info!(
        images,
        mb = total as f64 / 1e6,
        free_mb = free as f64 / 1e6,
        "device cache: sized from the headers"
    );
    if total as u64 > limit {
        return Err(LoaderError::CacheTooLarge {
            needed: total as u64,
            available: limit,
            images,
        });
    }
    Ok(())
}

/// Sizes every image from its header, checks the total against the device, then decodes and
/// resizes them all into one buffer with `decoder` and `kernel`, a batch at a time.
pub(crate) fn build(
    device: &Device,
    decoder: &mut ImageDecoder,
    kernel: &mut FusedKernel,
    dataset: &dyn Dataset,
    spec: &DeviceCache,
    progress: Option<&Progress>,
) -> Result<Cache, LoaderError> {
    let t0 = Instant::now();
    let opts = decoder.options().clone();
    let Sizes { mut entries, total } =
        lay_out(dataset, spec, opts.max_pixels, opts.apply_orientation);
    let images = entries.iter().filter(|e| e.is_ok()).count();
    check_room(device, total, images, spec)?;
    let memory = Tensor::new(
        DeviceBuffer::alloc(device, total.max(1))
            .map_err(|e| e.needed_by(|| format!("the device cache of {images} images")))?,
        &[total.max(1)],
        DType::U8,
    )?;
    let stream = decoder.stream().clone();
    let ok: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].is_ok()).collect();
    let mut bufs: Vec<Vec<u8>> = Vec::new();
    if let Some(p) = progress {
        p.start(ok.len() as u64);
    }
    for chunk in ok.chunks(256) {
        let decoded = decode_chunk(decoder, dataset, chunk, &mut bufs, &mut entries)?;
        stream.wait(decoded.ready_event())?;
        for (k, &i) in chunk.iter().enumerate() {
            let Ok(e) = entries[i] else { continue };
            if let Err(reason) = resize_into(kernel, &stream, &memory, &decoded, k, e, spec)? {
                entries[i] = Err(reason);
            }
        }
        if let Some(p) = progress {
            p.add(chunk.len() as u64);
        }
    }
    // Once, before the first epoch: the stages read the cache from their own streams.
    stream.synchronize()?;
    tracing::info!(
        images = entries.iter().filter(|e| e.is_ok()).count(),
        mb = total as f64 / 1e6,
        seconds = t0.elapsed().as_secs_f64(),
        "device cache: filled"
    );
    Ok(Cache {
        memory,
        entries,
        bytes: total as u64,
    })
}

/// Reads and decodes the samples of `chunk`; a sample that cannot be read again is marked bad.
fn decode_chunk(
    decoder: &mut ImageDecoder,
    dataset: &dyn Dataset,
    chunk: &[usize],
    bufs: &mut Vec<Vec<u8>>,
    entries: &mut [Result<Entry, SampleErrorKind>],
) -> Result<DecodedBatch, LoaderError> {
    bufs.resize_with(chunk.len(), Vec::new);
    let mut names = Vec::with_capacity(chunk.len());
    for (b, &i) in bufs.iter_mut().zip(chunk) {
        b.clear();
        if let Err(e) = dataset.read(i, b) {
            entries[i] = Err(SampleErrorKind::read(&e));
        }
        names.push(dataset.name(i));
    }
    let inputs: Vec<EncodedImage<'_>> = bufs
        .iter()
        .zip(&names)
        .map(|(data, name)| EncodedImage { name, data })
        .collect();
    Ok(decoder.decode(&inputs)?)
}

/// Resizes decoded image `k` into its cache entry; `Ok(Err(..))` when the image is bad.
fn resize_into(
    kernel: &mut FusedKernel,
    stream: &Stream,
    memory: &Tensor,
    decoded: &DecodedBatch,
    k: usize,
    e: Entry,
    spec: &DeviceCache,
) -> Result<Result<(), SampleErrorKind>, LoaderError> {
    let img = match &decoded.images[k] {
        Err(err) => return Ok(Err(err.kind.clone().into())),
        Ok(img) => img,
    };
    let Some(ptr) = decoded.device_ptr(k) else {
        return Ok(Ok(()));
    };
    if cached_size(img.width, img.height, spec.shorter_side) != (e.width, e.height) {
        return Ok(Err(SampleErrorKind::DecodedSize {
            width: img.width,
            height: img.height,
        }));
    }
    let src = SourceImage::rgb8(ptr, img.width, img.height);
    let out = OutputSpec {
        width: e.width,
        height: e.height,
        layout: Layout::Hwc,
        dtype: DType::U8,
        bgr: false,
        grey: false,
        interp: if e.width < img.width {
            Interp::Antialias
        } else {
            Interp::Bilinear
        },
        scale: [1.0; 3],
        bias: [0.0; 3],
    };
    let view = memory.view(
        e.offset,
        &[1, e.height as usize, e.width as usize, 3],
        DType::U8,
    )?;
    kernel.run(
        stream,
        &[src],
        &[FusedOp::full(img.width, img.height)],
        &out,
        &view,
        0,
    )?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_sizes_scale_the_shorter_side_down_only() {
        assert_eq!(cached_size(500, 375, 256), (341, 256));
        assert_eq!(cached_size(375, 500, 256), (256, 341));
        assert_eq!(cached_size(200, 100, 256), (200, 100));
        assert_eq!(cached_size(4000, 1, 256), (4000, 1));
        assert_eq!(cached_size(640, 480, u32::MAX), (640, 480));
        assert_eq!(cached_size(100_000, 300, 1), (333, 1));
    }
}
