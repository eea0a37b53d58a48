//! Masks moved with their images ([`LoaderBuilder::masks`](crate::LoaderBuilder::masks)):
//! read by the host workers beside the encoded image (and, for a GPU loader, copied by them
//! into pinned memory), the objects the geometry drops left out, then gathered on the GPU in
//! the fused launch that writes the pixels, or moved by the CPU twin on the CPU path.

use gm_cuda::{
    DType, Device, DeviceMemory, DevicePool, DevicePtr, PinnedPool, PoolConfig, PooledPinnedBuffer,
    Stream, Tensor,
};
use gm_transforms::targets::{GeoStep, MaskRuns, MaskStack, MaskTaps, TargetGeometry};
use gm_transforms::{MaskGather, MaskRunJob, MaskRunsKernel, SampleRng};

use super::context::Shared;
use super::mask_source::{MaskSource, into_stack, kept_count};
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
    /// In ordinary host memory (read on the stage thread, or where the worker could not plan
    /// the sample: a warp, a plan that fails, no pinned memory).
    Host(MaskStack),
    /// Prepared by the host worker in pinned memory, so that the stage thread, which the
    /// loader waits on, only enqueues their upload.
    Pinned(PinnedMasks),
    /// The kept masks as their spans of 1s (COCO's runs), with the taps and the geometry the
    /// host worker planned: a few bytes an object, packed into the stage's one upload and
    /// written out on the device.
    Runs(PlannedRuns),
}

/// A sample's kept masks as spans of 1s, planned by its host worker.
pub(crate) struct PlannedRuns {
    runs: MaskRuns,
    taps: MaskTaps,
    geometry: TargetGeometry,
}

/// A sample's masks as its host worker prepared them for the launch: the `planes` masks of
/// `width` x `height` that survive the geometry it planned (from the masks' size, which must
/// be the image's), packed in pinned memory, their encoded taps at `taps_at` after them. The
/// stage uploads them in one copy when its own plan gives the same geometry.
pub(crate) struct PinnedMasks {
    width: u32,
    height: u32,
    planes: u32,
    buf: PooledPinnedBuffer,
    geometry: TargetGeometry,
    taps_at: usize,
    bytes: usize,
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
            // Cached, as the stage's staging is (a 2026-11-28 try with write-combined worker
            // memory, without the taps, cut less; design log).
            pool: PinnedPool::new(
                device,
                PoolConfig::unbounded("gm-loader worker masks"),
                false,
            ),
        }
    }

    /// Sample `index`'s masks `source` (epoch `epoch`) prepared for the launch: those its
    /// geometry keeps as their spans of 1s where the source holds them so, with their taps;
    /// else their planes written into pinned memory, then their taps. Where the worker
    /// cannot plan the sample from the masks' size, or that memory cannot be had, every mask
    /// in host memory (the stage then prepares and stages them itself, and reports what
    /// fails).
    pub(crate) fn pin(
        &self,
        shared: &Shared,
        epoch: u64,
        index: usize,
        source: Box<dyn MaskSource>,
    ) -> Result<SampleMasks, SampleErrorKind> {
        let (width, height, planes) = source.shape();
        let Some((geometry, keep, taps)) = worker_taps(shared, epoch, index, source.shape()) else {
            return into_stack(source).map(SampleMasks::Host);
        };
        if let Some(runs) = source.runs(keep.as_deref()) {
            return Ok(SampleMasks::Runs(PlannedRuns {
                runs,
                taps,
                geometry,
            }));
        }
        let kept = kept_count(keep.as_deref(), planes);
        let taps_at = (kept as usize * width as usize * height as usize).next_multiple_of(4);
        let bytes = taps_at + taps.encoded_bytes();
        let acquired = self
            .device
            .bind_to_thread()
            .and_then(|()| self.pool.acquire(bytes.max(1)));
        let mut buf = match acquired {
            Ok(buf) => buf,
            Err(e) => {
                tracing::debug!(error = %e, "no pinned memory for a sample's masks; the stage stages them");
                return into_stack(source).map(SampleMasks::Host);
            }
        };
        let host = buf.as_mut_slice().map_err(pinned_error)?;
        source.write(keep.as_deref(), &mut host[..taps_at])?;
        write_taps(&taps, &mut host[taps_at..]);
        Ok(SampleMasks::Pinned(PinnedMasks {
            width,
            height,
            planes: kept,
            buf,
            geometry,
            taps_at,
            bytes,
        }))
    }
}

fn pinned_error(e: gm_cuda::CudaError) -> SampleErrorKind {
    SampleErrorKind::Targets(format!("pinned mask memory: {e}"))
}

/// The geometry, kept planes and taps of sample `index`'s masks, planned by the host worker
/// as the stage plans the image (same seed, epoch and sample; the masks' size, which must be
/// the image's); `None` where that cannot be done here (a warp, a plan or boxes that fail:
/// the stage finds and reports those itself).
fn worker_taps(
    shared: &Shared,
    epoch: u64,
    index: usize,
    (width, height, planes): (u32, u32, u32),
) -> Option<(TargetGeometry, Option<Vec<bool>>, MaskTaps)> {
    let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
    let (_, _, post) = shared.plan(index, (width, height), &mut rng).ok()?;
    let keep = kept(shared, index, &post.geometry, planes).ok()?;
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
    /// The kept planes in host memory (moved already through a warp), staged with their taps.
    Host(MaskStack, MaskTaps),
    /// The kept planes and their taps in a host worker's pinned memory, uploaded from there.
    Pinned(PinnedMasks),
    /// The kept masks as spans of 1s, staged with their taps, written out on the device.
    Runs(MaskRuns, MaskTaps),
}

impl StageMasks {
    /// The source planes' width and height.
    fn source(&self) -> (u32, u32) {
        match self {
            StageMasks::Host(m, _) => (m.width, m.height),
            StageMasks::Pinned(m) => (m.width, m.height),
            StageMasks::Runs(r, _) => (r.width, r.height),
        }
    }

    /// How many planes go to the launch.
    fn planes(&self) -> u32 {
        match self {
            StageMasks::Host(m, _) => m.planes,
            StageMasks::Pinned(m) => m.planes,
            StageMasks::Runs(r, _) => r.planes(),
        }
    }

    /// The taps and the bytes the stage's own staging holds for this sample.
    fn staged(&self) -> Option<(&MaskTaps, usize)> {
        match self {
            StageMasks::Host(m, t) => Some((t, m.data.len())),
            StageMasks::Runs(r, t) => Some((t, r.span_bytes())),
            StageMasks::Pinned(_) => None,
        }
    }
}

/// A sample's masks ready for the fused launch: the source planes (or their runs) and the
/// taps that move them. What the host worker prepared serves where its plan is the stage's;
/// otherwise (never for masks of the image's size, as both plans draw from the same seed,
/// epoch and sample) the masks are read again here, as for a substitute.
pub(crate) fn prepare(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    masks: Option<SampleMasks>,
) -> Result<Option<StageMasks>, SampleErrorKind> {
    let stack = match masks {
        None => return Ok(None),
        Some(SampleMasks::Pinned(m)) if m.geometry == *geometry => {
            return Ok(Some(StageMasks::Pinned(m)));
        }
        Some(SampleMasks::Runs(r)) if r.geometry == *geometry => {
            return Ok(Some(StageMasks::Runs(r.runs, r.taps)));
        }
        Some(SampleMasks::Pinned(_) | SampleMasks::Runs(_)) => match read(shared, index)? {
            Some(stack) => stack,
            None => return Ok(None),
        },
        Some(SampleMasks::Host(stack)) => stack,
    };
    let (stack, taps) = on_host(shared, index, geometry, stack)?;
    Ok(Some(StageMasks::Host(stack, taps)))
}

/// `stack` (sample `index`'s masks) ready for the launch on the host: the planes the geometry
/// keeps, with their taps; through a warp, moved here and copied as they are.
fn on_host(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    stack: MaskStack,
) -> Result<(MaskStack, MaskTaps), SampleErrorKind> {
    if (stack.width, stack.height) != geometry.source {
        return Err(SampleErrorKind::Targets(format!(
            "masks of {}x{} for an image of {}x{}",
            stack.width, stack.height, geometry.source.0, geometry.source.1
        )));
    }
    let stack = match kept(shared, index, geometry, stack.planes)? {
        Some(keep) => stack.select(&keep),
        None => stack,
    };
    if let Some(taps) = geometry.mask_taps() {
        return Ok((stack, taps));
    }
    let moved = geometry
        .mask_stack(&stack)
        .map_err(|e| SampleErrorKind::Targets(e.to_string()))?;
    let taps = MaskTaps::identity(moved.width, moved.height);
    Ok((moved, taps))
}

/// A sample's masks moved on the host (the CPU path).
pub(crate) fn moved_on_host(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    masks: Option<MaskStack>,
) -> Result<Option<MaskStack>, SampleErrorKind> {
    let Some(stack) = masks else { return Ok(None) };
    let (masks, taps) = on_host(shared, index, geometry, stack)?;
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
pub(crate) struct Region(pub(crate) DevicePtr, pub(crate) usize);

impl DeviceMemory for Region {
    fn device_ptr(&self) -> DevicePtr {
        self.0
    }
    fn byte_len(&self) -> usize {
        self.1
    }
}

/// The GPU stage's mask memory (pinned staging for the sources and taps) and the kernel that
/// writes masks from their spans.
pub(crate) struct MaskStaging {
    pinned: PinnedPool,
    runs: MaskRunsKernel,
}

/// One batch's masks on the device: the gathers for the launch, the output, and the uploaded
/// sources (kept until the launch is queued; dropping them then fences them on the stream).
pub(crate) struct StagedMasks {
    pub(crate) gathers: Vec<Option<MaskGather>>,
    pub(crate) out: Tensor,
    pub(crate) parts: Vec<MaskPart>,
    /// How many samples' masks were written from their spans.
    pub(crate) from_spans: u64,
    _sources: Tensor,
}

/// Where one sample's taps and planes lie in the batch's uploaded sources, and its spans of
/// 1s where the planes are written from them on the device.
#[derive(Debug, Clone, Copy)]
struct Placed {
    taps: usize,
    planes: usize,
    spans: Option<usize>,
}

/// The layout of a batch's mask sources on the device: `staged` bytes from the stage's own
/// staging (every staged sample's taps, then their planes or spans), then each pinned
/// sample's buffer at a 4-byte boundary, as its worker laid it out, then the planes written
/// from spans; `total` bytes in all.
struct Layout {
    placed: Vec<Option<Placed>>,
    staged: usize,
    total: usize,
}

impl Layout {
    fn of(masks: &[Option<StageMasks>]) -> Layout {
        let staged = || masks.iter().flatten().filter_map(StageMasks::staged);
        let taps: usize = staged().map(|(t, _)| t.encoded_bytes()).sum();
        let data: usize = staged().map(|(_, bytes)| bytes).sum();
        // Spans are u32 pairs: each sample's are placed at a 4-byte boundary.
        let pad = 4 * masks
            .iter()
            .filter(|m| matches!(m, Some(StageMasks::Runs(..))))
            .count();
        let staged = (taps + data + pad).next_multiple_of(4);
        let (mut at_taps, mut at_data, mut at_pinned, mut at_written) = (0, taps, staged, 0);
        let mut placed: Vec<Option<Placed>> = masks
            .iter()
            .map(|m| {
                let m = m.as_ref()?;
                let p = match m {
                    StageMasks::Host(..) => Placed {
                        taps: at_taps,
                        planes: at_data,
                        spans: None,
                    },
                    StageMasks::Runs(runs, _) => {
                        at_data = at_data.next_multiple_of(4);
                        let p = Placed {
                            taps: at_taps,
                            // From the start of the written planes, moved below.
                            planes: at_written,
                            spans: Some(at_data),
                        };
                        at_written += runs.planes() as usize * plane_bytes(runs.width, runs.height);
                        p
                    }
                    StageMasks::Pinned(pinned) => {
                        let p = Placed {
                            taps: at_pinned + pinned.taps_at,
                            planes: at_pinned,
                            spans: None,
                        };
                        at_pinned += pinned.bytes.next_multiple_of(4);
                        p
                    }
                };
                if let Some((t, bytes)) = m.staged() {
                    at_taps += t.encoded_bytes();
                    at_data += bytes;
                }
                Some(p)
            })
            .collect();
        let written = at_pinned.next_multiple_of(16);
        for p in placed.iter_mut().flatten() {
            if p.spans.is_some() {
                p.planes += written;
            }
        }
        Layout {
            placed,
            staged,
            total: (written + at_written).max(4),
        }
    }
}

/// Bytes of one `width` x `height` mask.
fn plane_bytes(width: u32, height: u32) -> usize {
    width as usize * height as usize
}

/// The jobs that write `runs` (a sample's, placed `at`) on the device at `base`.
fn span_jobs(runs: &MaskRuns, base: DevicePtr, at: Placed) -> Vec<MaskRunJob> {
    let Some(mut spans) = at.spans else {
        return Vec::new();
    };
    let plane = plane_bytes(runs.width, runs.height);
    runs.counts
        .iter()
        .enumerate()
        .map(|(k, &count)| {
            let job = MaskRunJob {
                spans: base.offset(spans),
                dst: base.offset(at.planes + k * plane),
                count,
                width: runs.width,
                height: runs.height,
            };
            spans += 8 * count as usize;
            job
        })
        .collect()
}

impl MaskStaging {
    pub(crate) fn new(device: &Device) -> Result<MaskStaging, LoaderError> {
        Ok(MaskStaging {
            pinned: PinnedPool::new(device, PoolConfig::unbounded("gm-loader masks"), false),
            runs: MaskRunsKernel::new(device)?,
        })
    }

    /// The stage's pinned staging (also for the batch's targets).
    pub(crate) fn pinned(&self) -> &PinnedPool {
        &self.pinned
    }

    /// Uploads the batch's mask sources and taps on `stream` and takes the output from
    /// `pool`; `masks[i]` is image `i`'s (with `sizes[i]` its output's width and height). The
    /// host samples go up in one copy through the stage's pinned staging; what a host worker
    /// prepared goes up in one copy per sample from its pinned memory, without passing
    /// through this thread; the planes of those it sent as spans are written in one launch.
    pub(crate) fn stage(
        &mut self,
        pool: &DevicePool,
        stream: &Stream,
        mut masks: Vec<Option<StageMasks>>,
        sizes: &[(u32, u32)],
    ) -> Result<StagedMasks, LoaderError> {
        let layout = Layout::of(&masks);
        let sources = Tensor::empty(pool, stream, &[layout.total], DType::U8)?;
        let base = sources.data_ptr();
        let mut dst = Region(base, layout.total);
        if layout.staged > 0 {
            let mut staging = self.pinned.acquire(layout.staged)?;
            fill_staging(staging.as_mut_slice()?, &masks, &layout.placed);
            stream.copy_to_device(&mut staging, 0, &mut dst, 0, layout.staged)?;
        }
        let (mut jobs, mut from_spans) = (Vec::new(), 0);
        for (m, at) in masks.iter_mut().zip(&layout.placed) {
            match (m, at) {
                (Some(StageMasks::Pinned(p)), Some(at)) => {
                    stream.copy_to_device(&mut p.buf, 0, &mut dst, at.planes, p.bytes)?;
                }
                (Some(StageMasks::Runs(runs, _)), Some(at)) => {
                    jobs.extend(span_jobs(runs, base, *at));
                    from_spans += 1;
                }
                _ => {}
            }
        }
        self.runs.run(stream, &jobs)?;
        let (parts, out_bytes) = parts(masks.iter().zip(sizes).map(|(m, &(w, h))| match m {
            Some(m) => (m.planes(), w, h),
            None => (0, w, h),
        }));
        let out = Tensor::empty(pool, stream, &[out_bytes.max(1)], DType::U8)?;
        let gathers = masks
            .iter()
            .zip(&layout.placed)
            .zip(&parts)
            .map(|((m, at), part)| {
                let (m, at) = (m.as_ref()?, (*at)?);
                let (width, height) = m.source();
                Some(MaskGather {
                    src: base.offset(at.planes),
                    width,
                    height,
                    planes: m.planes(),
                    taps: base.offset(at.taps),
                    dst: out.data_ptr().offset(part.offset),
                })
            })
            .collect();
        // The staging and the workers' pinned buffers go back to their pools, each fenced
        // by its copy.
        drop(masks);
        Ok(StagedMasks {
            gathers,
            out,
            parts,
            from_spans,
            _sources: sources,
        })
    }
}

/// Writes the staged samples' taps and planes or spans where `placed` puts them in the
/// stage's staging.
fn fill_staging(host: &mut [u8], masks: &[Option<StageMasks>], placed: &[Option<Placed>]) {
    for (m, at) in masks.iter().zip(placed) {
        match (m, at) {
            (Some(StageMasks::Host(stack, taps)), Some(at)) => {
                write_taps(taps, &mut host[at.taps..]);
                host[at.planes..][..stack.data.len()].copy_from_slice(&stack.data);
            }
            (Some(StageMasks::Runs(runs, taps)), Some(at)) => {
                write_taps(taps, &mut host[at.taps..]);
                if let Some(spans) = at.spans {
                    runs.write_spans(&mut host[spans..]);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_samples_and_spans_lie_apart_and_aligned() {
        let host = MaskStack::new(3, 1, 1, vec![1, 0, 1]).unwrap();
        let mut runs = MaskRuns::new(5, 3);
        runs.push([[1, 4], [9, 2]]);
        runs.push([[0, 15]]);
        let masks = vec![
            Some(StageMasks::Host(host.clone(), MaskTaps::identity(3, 1))),
            None,
            Some(StageMasks::Runs(runs.clone(), MaskTaps::identity(5, 3))),
        ];
        let layout = Layout::of(&masks);
        let (h, r) = (layout.placed[0].unwrap(), layout.placed[2].unwrap());
        assert!(layout.placed[1].is_none());
        let spans = r.spans.expect("spans staged");
        assert_eq!((h.spans, spans % 4, r.taps % 4), (None, 0, 0));
        // Taps, the host planes, the spans: in the staging, apart.
        assert_eq!((h.taps, r.taps), (0, 4 * (3 + 1)));
        assert!(h.planes >= r.taps + 4 * (5 + 3) && spans >= h.planes + 3);
        assert!(spans + runs.span_bytes() <= layout.staged);
        // The written planes after everything staged, 16-aligned, inside the total.
        assert!(r.planes >= layout.staged && r.planes % 16 == 0);
        assert_eq!(layout.total, r.planes + 2 * 15);
        let mut staging = vec![0u8; layout.staged];
        fill_staging(&mut staging, &masks, &layout.placed);
        assert_eq!(staging[h.planes..h.planes + 3], host.data[..]);
        let word = |at: usize| u32::from_ne_bytes(staging[at..at + 4].try_into().unwrap());
        assert_eq!([word(spans), word(spans + 4), word(spans + 16)], [1, 4, 0]);
        let jobs = span_jobs(&runs, DevicePtr(1 << 20), r);
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].count, jobs[1].count), (2, 1));
        assert_eq!(jobs[1].spans.0 - jobs[0].spans.0, 16);
        assert_eq!(jobs[1].dst.0 - jobs[0].dst.0, 15);
    }
}
