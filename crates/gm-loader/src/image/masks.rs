//! Masks moved with their images ([`LoaderBuilder::masks`](crate::LoaderBuilder::masks)):
//! read by the host workers beside the encoded image, the objects the geometry drops left
//! out, then gathered on the GPU in the fused launch that writes the pixels (one pinned upload
//! of every source and its taps per batch), or moved by the CPU twin on the CPU path.

use gm_cuda::{
    DType, Device, DeviceMemory, DevicePool, DevicePtr, PinnedPool, PoolConfig, Stream, Tensor,
};
use gm_transforms::MaskGather;
use gm_transforms::targets::{GeoStep, MaskStack, MaskTaps, TargetGeometry};

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

/// The planes of `masks` whose objects survive the geometry's drops (sanitize, empty boxes),
/// judged by the sample's boxes as the targets are.
fn kept(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    masks: MaskStack,
) -> Result<MaskStack, SampleErrorKind> {
    if !geometry.steps.iter().any(|s| matches!(s, GeoStep::Keep(_))) {
        return Ok(masks);
    }
    let Some(boxes) = shared.dataset.boxes(index)? else {
        return Ok(masks);
    };
    if boxes.boxes.len() != masks.planes as usize {
        return Err(SampleErrorKind::Targets(format!(
            "{} masks for {} boxes",
            masks.planes,
            boxes.boxes.len()
        )));
    }
    let keep = geometry
        .kept(&boxes)
        .map_err(|e| SampleErrorKind::Targets(e.to_string()))?;
    Ok(masks.select(&keep))
}

/// A sample's masks ready for the fused launch: the source planes and the taps that move
/// them. Through a warp the planes are moved here, on the host, and copied as they are.
pub(crate) fn prepare(
    shared: &Shared,
    index: usize,
    geometry: &TargetGeometry,
    masks: Option<MaskStack>,
) -> Result<Option<(MaskStack, MaskTaps)>, SampleErrorKind> {
    let Some(masks) = masks else { return Ok(None) };
    let masks = kept(shared, index, geometry, masks)?;
    let targets = |e: gm_transforms::targets::TargetError| SampleErrorKind::Targets(e.to_string());
    if (masks.width, masks.height) != geometry.source {
        return Err(SampleErrorKind::Targets(format!(
            "masks of {}x{} for an image of {}x{}",
            masks.width, masks.height, geometry.source.0, geometry.source.1
        )));
    }
    match geometry.mask_taps() {
        Some(taps) => Ok(Some((masks, taps))),
        None => {
            let moved = geometry.mask_stack(&masks).map_err(targets)?;
            let taps = MaskTaps::identity(moved.width, moved.height);
            Ok(Some((moved, taps)))
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
    let Some((masks, taps)) = prepare(shared, index, geometry, masks)? else {
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

    /// Uploads the batch's mask sources and taps in one copy on `stream` and takes the output
    /// from `pool`; `masks[i]` is image `i`'s (with `sizes[i]` its output's width and height).
    pub(crate) fn stage(
        &self,
        pool: &DevicePool,
        stream: &Stream,
        masks: &[Option<(MaskStack, MaskTaps)>],
        sizes: &[(u32, u32)],
    ) -> Result<StagedMasks, LoaderError> {
        // Taps first (4-byte aligned), then the planes.
        let tap_bytes: usize = masks.iter().flatten().map(|(_, t)| t.encoded_bytes()).sum();
        let plane_bytes: usize = masks.iter().flatten().map(|(m, _)| m.data.len()).sum();
        let total = (tap_bytes + plane_bytes).max(4);
        let mut pinned = self.pinned.acquire(total)?;
        let sources = Tensor::empty(pool, stream, &[total], DType::U8)?;
        let (mut at_taps, mut at_planes) = (0usize, tap_bytes);
        let base = sources.data_ptr();
        let mut layout = Vec::with_capacity(masks.len());
        {
            let host = pinned.as_mut_slice()?;
            for m in masks {
                let Some((stack, taps)) = m else {
                    layout.push(None);
                    continue;
                };
                for (k, v) in taps.encoded().enumerate() {
                    host[at_taps + 4 * k..][..4].copy_from_slice(&v.to_ne_bytes());
                }
                host[at_planes..][..stack.data.len()].copy_from_slice(&stack.data);
                layout.push(Some((at_taps, at_planes)));
                at_taps += taps.encoded_bytes();
                at_planes += stack.data.len();
            }
        }
        let mut dst = Region(base, total);
        stream.copy_to_device(&mut pinned, 0, &mut dst, 0, total)?;
        let (parts, out_bytes) = parts(masks.iter().zip(sizes).map(|(m, &(w, h))| match m {
            Some((stack, _)) => (stack.planes, w, h),
            None => (0, w, h),
        }));
        let out = Tensor::empty(pool, stream, &[out_bytes.max(1)], DType::U8)?;
        let gathers = masks
            .iter()
            .zip(&layout)
            .zip(&parts)
            .map(|((m, at), part)| {
                let ((stack, _), (taps, planes)) = (m.as_ref()?, (*at)?);
                Some(MaskGather {
                    src: base.offset(planes),
                    width: stack.width,
                    height: stack.height,
                    planes: stack.planes,
                    taps: base.offset(taps),
                    dst: out.data_ptr().offset(part.offset),
                })
            })
            .collect();
        Ok(StagedMasks {
            gathers,
            out,
            parts,
            _sources: sources,
        })
    }
}
