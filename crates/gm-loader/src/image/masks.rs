//! Masks moved with their images ([`LoaderBuilder::masks`](crate::LoaderBuilder::masks)):
//! read by the host workers beside the encoded image (and, for a GPU loader, copied by them
//! into pinned memory), the objects the geometry drops left out, then gathered on the GPU in
//! the fused launch that writes the pixels, or moved by the CPU twin on the CPU path.

use gm_cuda::{
    DType, Device, DeviceMemory, DevicePool, DevicePtr, PinnedPool, PoolConfig, PooledPinnedBuffer,
    Stream, Tensor,
};
use gm_transforms::targets::{GeoStep, MaskStack, MaskTaps, TargetGeometry};
use gm_transforms::{MaskGather, SampleRng};

use super::context::Shared;
use crate::error::{LoaderError, SampleErrorKind};
use crate::tensors::{HostTensor, Images};

/// The moved masks of a batch: every image's in one `u8` buffer.
#[derive(Debug)]
pub struct BatchMasks {
    /// Image `i`'s `parts[i].planes` masks of its output size at `parts[i].offset`, one
    /// after another (a flat `u8` tensor); written with the images, ready on the batch's
    /// ready event.
    pub data: Images,
    /// Where each image's masks lie, in batch order.
    pub parts: Vec<MaskPart>,
}

/// One image's masks in [`BatchMasks::data`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskPart {
    /// Bytes from the start of the buffer.
    pub offset: usize,
    /// Number of masks (a label map: 1; a COCO image: its objects that the geometry kept;
    /// 0 for a sample without masks).
    pub planes: u32,
    /// Height of each, the image's output height.
    pub height: u32,
    /// Width of each.
    pub width: u32,
}

impl MaskPart {
    /// The part's bytes.
    pub fn bytes(&self) -> usize {
        self.planes as usize * self.height as usize * self.width as usize
    }
}

/// Sample `index`'s masks (read by a host worker), when the loader moves masks.
pub(crate) fn read(shared: &Shared, index: usize) -> Result<Option<MaskStack>, SampleErrorKind> {
    if !shared.masks {
        return Ok(None);
    }
    shared.dataset.masks(index)
}

/// Which of a sample's `planes` masks survive the geometry's drops (sanitize, empty boxes),
/// judged by the sample's boxes as the targets are; `None` when all do.
fn kept(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    planes: u32,
) -> Result<Option<Vec<bool>>, SampleErrorKind> {
    if !geometry.steps.iter().any(|s| matches!(s, GeoStep::Keep(_))) {
        return Ok(None);
    }
    let Some(boxes) = shared.dataset.boxes(index)? else {
        return Ok(None);
    };
    if boxes.boxes.len() != planes as usize {
        return Err(SampleErrorKind::Targets(format!(
            "{planes} masks for {} boxes",
            boxes.boxes.len()
        )));
    }
    let keep = geometry
        .kept(&boxes)
        .map_err(|e| SampleErrorKind::Targets(e.to_string()))?;
    Ok(Some(keep))
}

/// A sample's masks as a host worker hands them to a GPU stage.
pub(crate) enum SampleMasks {
    /// In ordinary host memory (read on the stage thread: substitutes, the device cache).
    Host(MaskStack),
    /// Copied by the host worker into pinned memory, so that the stage thread, which the
    /// loader waits on, only enqueues their upload.
    Pinned(PinnedMasks),
}

/// `planes` masks of `width` x `height`, packed, in pinned memory; where the host worker
/// could plan the sample's geometry, their taps after them.
pub(crate) struct PinnedMasks {
    width: u32,
    height: u32,
    planes: u32,
    buf: PooledPinnedBuffer,
    prepared: Option<WorkerTaps>,
}

/// What the host worker prepared for the launch: the geometry it planned (from the masks'
/// size, which must be the image's), the planes that survive it, and where in the pinned
/// buffer its encoded taps lie. The stage uses them when its own plan gives the same geometry.
struct WorkerTaps {
    geometry: TargetGeometry,
    keep: Option<Vec<bool>>,
    at: usize,
    bytes: usize,
}

impl PinnedMasks {
    fn plane_bytes(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The masks back in host memory (for a warp, moved on the host).
    fn to_stack(&self) -> Result<MaskStack, SampleErrorKind> {
        let n = self.plane_bytes() * self.planes as usize;
        let data = self.buf.as_slice().map_err(pinned_error)?[..n].to_vec();
        MaskStack::new(self.width, self.height, self.planes, data)
            .map_err(|e| SampleErrorKind::Targets(e.to_string()))
    }
}

fn pinned_error(e: gm_cuda::CudaError) -> SampleErrorKind {
    SampleErrorKind::Targets(format!("pinned mask memory: {e}"))
}

/// The host workers' pinned memory for masks (GPU loaders that move masks).
pub(crate) struct MaskPinning {
    device: Device,
    pool: PinnedPool,
}

impl MaskPinning {
    pub(crate) fn new(device: &Device) -> MaskPinning {
        MaskPinning {
            device: device.clone(),
            // Cached (not write-combined): a warp reads the planes back on the stage.
            pool: PinnedPool::new(
                device,
                PoolConfig::unbounded("gm-loader worker masks"),
                false,
            ),
        }
    }

    /// Sample `index`'s masks `stack` (epoch `epoch`) copied into pinned memory, with their
    /// taps where the worker can plan the sample from the masks' size; where that memory
    /// cannot be had, `stack` as it is (the stage then stages it itself).
    pub(crate) fn pin(
        &self,
        shared: &Shared,
        epoch: u64,
        index: usize,
        stack: MaskStack,
    ) -> SampleMasks {
        let taps = worker_taps(shared, epoch, index, &stack);
        let planes_bytes = stack.data.len().next_multiple_of(4);
        let taps_bytes = taps.as_ref().map_or(0, |(_, _, t)| t.encoded_bytes());
        let pinned = self.device.bind_to_thread().and_then(|()| {
            let mut buf = self.pool.acquire((planes_bytes + taps_bytes).max(1))?;
            let host = buf.as_mut_slice()?;
            host[..stack.data.len()].copy_from_slice(&stack.data);
            if let Some((_, _, t)) = &taps {
                write_taps(t, &mut host[planes_bytes..]);
            }
            Ok(buf)
        });
        match pinned {
            Ok(buf) => SampleMasks::Pinned(PinnedMasks {
                width: stack.width,
                height: stack.height,
                planes: stack.planes,
                buf,
                prepared: taps.map(|(geometry, keep, t)| WorkerTaps {
                    geometry,
                    keep,
                    at: planes_bytes,
                    bytes: t.encoded_bytes(),
                }),
            }),
            Err(e) => {
                tracing::debug!(error = %e, "no pinned memory for a sample's masks; the stage stages them");
                SampleMasks::Host(stack)
            }
        }
    }
}

/// The geometry, kept planes and taps of sample `index`'s masks, planned by the host worker
/// as the stage plans the image (same seed, epoch and sample; the masks' size, which must be
/// the image's); `None` where that cannot be done here (a warp, a plan or boxes that fail:
/// the stage finds and reports those itself).
fn worker_taps(
    shared: &Shared,
    epoch: u64,
    index: usize,
    stack: &MaskStack,
) -> Option<(TargetGeometry, Option<Vec<bool>>, MaskTaps)> {
    let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
    let (_, _, post) = shared
        .plan(index, (stack.width, stack.height), &mut rng)
        .ok()?;
    let keep = kept(shared, index, &post.geometry, stack.planes).ok()?;
    let taps = post.geometry.mask_taps()?;
    Some((post.geometry, keep, taps))
}

/// `taps` encoded as the kernel reads them into `out`.
fn write_taps(taps: &MaskTaps, out: &mut [u8]) {
    for (k, v) in taps.encoded().enumerate() {
        out[4 * k..][..4].copy_from_slice(&v.to_ne_bytes());
    }
}

/// A sample's masks ready for the fused launch, with the taps that move them.
pub(crate) enum StageMasks {
    /// Planes in host memory, staged with the batch's taps.
    Host(MaskStack, MaskTaps),
    /// Planes in a host worker's pinned memory, uploaded from there: those `keep` marks
    /// (`None`: all); the taps staged, or in that memory after the planes.
    Pinned(PinnedMasks, Option<Vec<bool>>, Option<MaskTaps>),
}

impl StageMasks {
    /// The source planes' width and height.
    fn source(&self) -> (u32, u32) {
        match self {
            StageMasks::Host(m, _) => (m.width, m.height),
            StageMasks::Pinned(m, _, _) => (m.width, m.height),
        }
    }

    /// How many planes go to the launch.
    fn planes(&self) -> u32 {
        match self {
            StageMasks::Host(m, _) => m.planes,
            StageMasks::Pinned(m, None, _) => m.planes,
            StageMasks::Pinned(_, Some(keep), _) => keep.iter().filter(|k| **k).count() as u32,
        }
    }

    /// The taps the stage stages (those the worker wrote go up with their planes).
    fn staged_taps(&self) -> Option<&MaskTaps> {
        match self {
            StageMasks::Host(_, t) => Some(t),
            StageMasks::Pinned(_, _, t) => t.as_ref(),
        }
    }
}

/// A sample's masks ready for the fused launch: the source planes and the taps that move
/// them. Through a warp the planes are moved here, on the host, and copied as they are.
pub(crate) fn prepare(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    masks: Option<SampleMasks>,
) -> Result<Option<StageMasks>, SampleErrorKind> {
    let Some(masks) = masks else { return Ok(None) };
    let (width, height, planes) = match &masks {
        SampleMasks::Host(m) => (m.width, m.height, m.planes),
        SampleMasks::Pinned(m) => (m.width, m.height, m.planes),
    };
    if (width, height) != geometry.source {
        return Err(SampleErrorKind::Targets(format!(
            "masks of {width}x{height} for an image of {}x{}",
            geometry.source.0, geometry.source.1
        )));
    }
    // The worker's taps hold where its plan is the stage's.
    let worker_keep = match &masks {
        SampleMasks::Pinned(m) => m.prepared.as_ref().filter(|p| p.geometry == *geometry),
        SampleMasks::Host(_) => None,
    }
    .map(|p| p.keep.clone());
    let masks = match (worker_keep, masks) {
        (Some(keep), SampleMasks::Pinned(m)) => {
            return Ok(Some(StageMasks::Pinned(m, keep, None)));
        }
        (_, masks) => masks,
    };
    let keep = kept(shared, index, geometry, planes)?;
    match (geometry.mask_taps(), masks) {
        (Some(taps), SampleMasks::Pinned(mut m)) => {
            // The worker planned another geometry: its taps are not these.
            m.prepared = None;
            Ok(Some(StageMasks::Pinned(m, keep, Some(taps))))
        }
        (Some(taps), SampleMasks::Host(m)) => {
            let m = match keep {
                Some(k) => m.select(&k),
                None => m,
            };
            Ok(Some(StageMasks::Host(m, taps)))
        }
        (None, masks) => {
            let stack = match masks {
                SampleMasks::Host(m) => m,
                SampleMasks::Pinned(m) => m.to_stack()?,
            };
            let stack = match keep {
                Some(k) => stack.select(&k),
                None => stack,
            };
            let moved = geometry
                .mask_stack(&stack)
                .map_err(|e| SampleErrorKind::Targets(e.to_string()))?;
            let taps = MaskTaps::identity(moved.width, moved.height);
            Ok(Some(StageMasks::Host(moved, taps)))
        }
    }
}

/// A sample's masks moved on the host (the CPU path).
pub(crate) fn moved_on_host(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    masks: Option<MaskStack>,
) -> Result<Option<MaskStack>, SampleErrorKind> {
    let masks = masks.map(SampleMasks::Host);
    let Some(StageMasks::Host(masks, taps)) = prepare(shared, index, geometry, masks)? else {
        return Ok(None);
    };
    taps.gather(&masks)
        .map(Some)
        .map_err(|e| SampleErrorKind::Targets(e.to_string()))
}

/// The parts of a batch whose images have masks `sizes` ((planes, width, height) each).
fn parts(sizes: impl Iterator<Item = (u32, u32, u32)>) -> (Vec<MaskPart>, usize) {
    let mut offset = 0;
    let parts = sizes
        .map(|(planes, width, height)| {
            let p = MaskPart {
                offset,
                planes,
                height,
                width,
            };
            offset += p.bytes();
            p
        })
        .collect();
    (parts, offset)
}

/// A CPU batch's masks, in batch order (`None`: a sample without; `size`: its image's).
pub(crate) fn host_batch(masks: Vec<(Option<MaskStack>, (u32, u32))>) -> BatchMasks {
    let sizes = masks.iter().map(|(m, (w, h))| match m {
        Some(m) => (m.planes, m.width, m.height),
        None => (0, *w, *h),
    });
    let (parts, total) = parts(sizes);
    let mut data = Vec::with_capacity(total);
    for m in masks.into_iter().filter_map(|(m, _)| m) {
        data.extend_from_slice(&m.data);
    }
    BatchMasks {
        data: Images::Host(HostTensor {
            shape: vec![total],
            dtype: DType::U8,
            data,
        }),
        parts,
    }
}

/// Device memory inside a tensor the stage owns.
struct Region(DevicePtr, usize);

impl DeviceMemory for Region {
    fn device_ptr(&self) -> DevicePtr {
        self.0
    }
    fn byte_len(&self) -> usize {
        self.1
    }
}

/// The GPU stage's mask memory: pinned staging for the sources and taps.
pub(crate) struct MaskStaging {
    pinned: PinnedPool,
}

/// One batch's masks on the device: the gathers for the launch, the output, and the uploaded
/// sources (kept until the launch is queued; dropping them then fences them on the stream).
pub(crate) struct StagedMasks {
    pub(crate) gathers: Vec<Option<MaskGather>>,
    pub(crate) out: Tensor,
    pub(crate) parts: Vec<MaskPart>,
    _sources: Tensor,
}

impl MaskStaging {
    pub(crate) fn new(device: &Device) -> MaskStaging {
        MaskStaging {
            pinned: PinnedPool::new(device, PoolConfig::unbounded("gm-loader masks"), false),
        }
    }

    /// Uploads the batch's mask sources and taps on `stream` and takes the output from
    /// `pool`; `masks[i]` is image `i`'s (with `sizes[i]` its output's width and height). The
    /// taps the stage made and the planes in host memory go up in one copy through the
    /// stage's pinned staging; what the host workers pinned (planes, and their taps) goes up
    /// from there, without passing through this thread.
    pub(crate) fn stage(
        &self,
        pool: &DevicePool,
        stream: &Stream,
        mut masks: Vec<Option<StageMasks>>,
        sizes: &[(u32, u32)],
    ) -> Result<StagedMasks, LoaderError> {
        // Staged: the stage's taps (4-byte aligned), then the host planes; then, each at a
        // 4-byte boundary, the pinned planes and their worker's taps.
        let staged_taps: usize = masks
            .iter()
            .flatten()
            .filter_map(StageMasks::staged_taps)
            .map(MaskTaps::encoded_bytes)
            .sum();
        let host_bytes: usize = masks
            .iter()
            .flatten()
            .filter(|m| matches!(m, StageMasks::Host(..)))
            .map(launch_bytes)
            .sum();
        let pinned_bytes: usize = masks
            .iter()
            .flatten()
            .map(|m| match m {
                StageMasks::Pinned(p, _, _) => {
                    launch_bytes(m).next_multiple_of(4) + p.prepared.as_ref().map_or(0, |w| w.bytes)
                }
                StageMasks::Host(..) => 0,
            })
            .sum();
        let staged = (staged_taps + host_bytes).next_multiple_of(4);
        let total = (staged + pinned_bytes).max(4);
        let sources = Tensor::empty(pool, stream, &[total], DType::U8)?;
        let base = sources.data_ptr();
        let mut dst = Region(base, total);
        let mut staging = match staged {
            0 => None,
            n => Some(self.pinned.acquire(n)?),
        };
        let host: &mut [u8] = match &mut staging {
            Some(b) => b.as_mut_slice()?,
            None => &mut [],
        };
        let (mut at_taps, mut at_host, mut at_pinned) = (0usize, staged_taps, staged);
        let mut layout = Vec::with_capacity(masks.len());
        for m in &mut masks {
            let Some(m) = m else {
                layout.push(None);
                continue;
            };
            let mut taps_at = at_taps;
            if let Some(t) = m.staged_taps() {
                write_taps(t, &mut host[at_taps..]);
                at_taps += t.encoded_bytes();
            }
            let planes_at = match m {
                StageMasks::Host(stack, _) => {
                    host[at_host..][..stack.data.len()].copy_from_slice(&stack.data);
                    at_host += stack.data.len();
                    at_host - stack.data.len()
                }
                StageMasks::Pinned(p, keep, _) => {
                    let at = at_pinned;
                    match (&p.prepared, keep.as_deref()) {
                        // Every plane and the worker's taps, as the buffer lays them out.
                        (Some(w), None) => {
                            let bytes = w.at + w.bytes;
                            stream.copy_to_device(&mut p.buf, 0, &mut dst, at, bytes)?;
                            taps_at = at + w.at;
                            at_pinned += bytes;
                        }
                        _ => {
                            at_pinned += upload_kept(stream, p, keep.as_deref(), &mut dst, at)?;
                            at_pinned = at_pinned.next_multiple_of(4);
                            if let Some(w) = &p.prepared {
                                let (from, bytes) = (w.at, w.bytes);
                                stream
                                    .copy_to_device(&mut p.buf, from, &mut dst, at_pinned, bytes)?;
                                taps_at = at_pinned;
                                at_pinned += bytes;
                            }
                        }
                    }
                    at
                }
            };
            layout.push(Some((taps_at, planes_at)));
        }
        if let Some(b) = &mut staging {
            stream.copy_to_device(b, 0, &mut dst, 0, staged)?;
        }
        let (parts, out_bytes) = parts(masks.iter().zip(sizes).map(|(m, &(w, h))| match m {
            Some(m) => (m.planes(), w, h),
            None => (0, w, h),
        }));
        let out = Tensor::empty(pool, stream, &[out_bytes.max(1)], DType::U8)?;
        let gathers = masks
            .iter()
            .zip(&layout)
            .zip(&parts)
            .map(|((m, at), part)| {
                let (m, (taps, planes)) = (m.as_ref()?, (*at)?);
                let (width, height) = m.source();
                Some(MaskGather {
                    src: base.offset(planes),
                    width,
                    height,
                    planes: m.planes(),
                    taps: base.offset(taps),
                    dst: out.data_ptr().offset(part.offset),
                })
            })
            .collect();
        // The workers' pinned buffers go back to their pool here, each fenced by its copies.
        drop(masks);
        Ok(StagedMasks {
            gathers,
            out,
            parts,
            _sources: sources,
        })
    }
}

/// The bytes of the planes of `m` that go to the launch (the kept ones).
fn launch_bytes(m: &StageMasks) -> usize {
    let (w, h) = m.source();
    m.planes() as usize * w as usize * h as usize
}

/// Enqueues the upload of `p`'s planes that `keep` marks (all when `None`) to `dst` at `at`,
/// one copy per run of consecutive kept planes; returns the bytes uploaded.
fn upload_kept(
    stream: &Stream,
    p: &mut PinnedMasks,
    keep: Option<&[bool]>,
    dst: &mut Region,
    at: usize,
) -> Result<usize, LoaderError> {
    let plane = p.plane_bytes();
    let planes = p.planes as usize;
    let mut written = 0;
    let mut k = 0;
    while k < planes {
        let kept = |k: usize| keep.is_none_or(|keep| keep.get(k).copied().unwrap_or(false));
        if !kept(k) {
            k += 1;
            continue;
        }
        let start = k;
        while k < planes && kept(k) {
            k += 1;
        }
        let bytes = (k - start) * plane;
        stream.copy_to_device(&mut p.buf, start * plane, dst, at + written, bytes)?;
        written += bytes;
    }
    Ok(written)
}
