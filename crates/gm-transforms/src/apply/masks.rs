//! Masks the caller holds in GPU memory, moved in the fused launch that writes their image
//! (the loaders' `MaskGather`), so that a `Transform.__call__` with masks reads each source
//! once and never goes through host memory.

use gm_cuda::{DType, DeviceMemory, DevicePool, DevicePtr, PooledDeviceBuffer, Stream, Tensor};

use super::{ApplyError, Planned};
use crate::MaskGather;
use crate::targets::TargetError;

/// One image's masks in device memory: `planes` packed u8 planes of `width` x `height`, the
/// image's source size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMasks {
    /// The first plane's first byte.
    pub data: DevicePtr,
    /// How many planes (objects, or 1 for a label map).
    pub planes: u32,
    /// Width of each.
    pub width: u32,
    /// Height of each.
    pub height: u32,
}

/// A batch's moved masks: every plane of image `i` (`[planes, h, w]`, its output's size) at
/// `offsets[i]` bytes into `data`, including the planes of objects the geometry dropped
/// ([`MovedTargets::kept`](super::MovedTargets::kept) says which to keep).
#[derive(Debug)]
pub struct MovedMasks {
    /// One flat u8 buffer, written by the launch that writes the images.
    pub data: Tensor,
    /// Where each image's planes start (images without masks: where the next would).
    pub offsets: Vec<usize>,
}

/// The gathers of `masks[i]` through `planned[i]`'s geometry: the taps uploaded in one copy
/// (kept alive by the returned buffer until the launch has run) and the output taken from
/// `pool`. A warped image's masks are refused ([`ApplyError::WarpedMasks`]): the caller moves
/// those on the host.
pub(super) fn gathers(
    pool: &DevicePool,
    stream: &Stream,
    planned: &[Planned],
    masks: &[Option<DeviceMasks>],
) -> Result<(Vec<Option<MaskGather>>, MovedMasks, PooledDeviceBuffer), ApplyError> {
    let mut taps = Vec::with_capacity(masks.len());
    let mut offsets = Vec::with_capacity(masks.len());
    let (mut tap_bytes, mut out_bytes) = (0usize, 0usize);
    for (index, (p, m)) in planned.iter().zip(masks).enumerate() {
        offsets.push(out_bytes);
        let Some(m) = m else {
            taps.push(None);
            continue;
        };
        let geometry = &p.post.geometry;
        let at = |source| ApplyError::Targets { index, source };
        if (m.width, m.height) != geometry.source {
            return Err(at(TargetError::Canvas {
                target: (m.width, m.height),
                image: geometry.source,
            }));
        }
        let t = geometry
            .mask_taps()
            .ok_or(ApplyError::WarpedMasks { index })?;
        tap_bytes += t.encoded_bytes();
        out_bytes += m.planes as usize * p.spec.width as usize * p.spec.height as usize;
        taps.push(Some(t));
    }
    let mut encoded = Vec::with_capacity(tap_bytes);
    for t in taps.iter().flatten() {
        encoded.extend(t.encoded().flat_map(i32::to_ne_bytes));
    }
    let mut uploaded = pool.acquire(encoded.len().max(4), stream)?;
    stream.upload(&encoded, &mut uploaded, 0)?;
    let data = Tensor::empty(pool, stream, &[out_bytes.max(1)], DType::U8)?;
    let mut at_taps = 0usize;
    let gathers = masks
        .iter()
        .zip(&taps)
        .zip(&offsets)
        .map(|((m, t), &offset)| {
            let (m, t) = (m.as_ref()?, t.as_ref()?);
            let g = MaskGather {
                src: m.data,
                width: m.width,
                height: m.height,
                planes: m.planes,
                taps: uploaded.device_ptr().offset(at_taps),
                dst: data.data_ptr().offset(offset),
            };
            at_taps += t.encoded_bytes();
            Some(g)
        })
        .collect();
    Ok((gathers, MovedMasks { data, offsets }, uploaded))
}
