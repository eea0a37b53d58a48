//! The host workers' step: read a sample (and, on the CPU path, decode and transform it).

use gm_codec::jpeg::{DecoderOptions, decode_host_with};
use gm_transforms::apply::{Planned, apply_host};
use gm_transforms::cpu::HostImage;
use gm_transforms::targets::{MaskStack, TargetGeometry};
use gm_transforms::{OutputSpec, SampleRng};

use std::sync::atomic::{AtomicBool, Ordering};

use super::context::Shared;
use super::masks::SampleMasks;
use crate::error::SampleErrorKind;

/// One sample after the host worker.
pub(crate) enum Prepared {
    /// Encoded bytes, for the GPU decoder, and the sample's masks when the loader moves them.
    Bytes {
        data: Vec<u8>,
        masks: Option<SampleMasks>,
    },
    /// The transformed image (CPU path), and its moved masks.
    Pixels {
        data: Vec<u8>,
        spec: OutputSpec,
        geometry: TargetGeometry,
        masks: Option<MaskStack>,
    },
    /// Could not be read (or, on the CPU path, decoded or transformed).
    Failed(SampleErrorKind),
    /// Served from the device cache: nothing to read.
    Cached,
}

/// The host worker's part for sample `index`.
pub(crate) fn prepare(shared: &Shared, epoch: u64, index: usize) -> Prepared {
    if shared.cache.is_some() {
        return Prepared::Cached;
    }
    prepare_read(shared, epoch, index, shared.read(index))
}

/// The host worker's part for a batch: the dataset reads the samples together (concurrent
/// requests for remote data), then each is prepared.
/// Stops early (a shorter list) once `stop` is set: decoding a batch on the CPU takes long.
pub(crate) fn prepare_batch(
    shared: &Shared,
    epoch: u64,
    indices: &[usize],
    stop: &AtomicBool,
) -> Vec<(usize, Prepared)> {
    if shared.cache.is_some() {
        return indices.iter().map(|&i| (i, Prepared::Cached)).collect();
    }
    let reads = shared.read_batch(indices);
    let mut items = Vec::with_capacity(indices.len());
    for (&i, read) in indices.iter().zip(reads) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        items.push((i, prepare_read(shared, epoch, i, read)));
    }
    items
}

/// Sample `index` after its read.
fn prepare_read(
    shared: &Shared,
    epoch: u64,
    index: usize,
    read: Result<Vec<u8>, SampleErrorKind>,
) -> Prepared {
    let buf = match read {
        Ok(buf) => buf,
        Err(e) => return Prepared::Failed(e),
    };
    if !shared.cpu {
        return match gpu_masks(shared, epoch, index) {
            Ok(masks) => Prepared::Bytes { data: buf, masks },
            Err(reason) => {
                shared.give_buffer(buf);
                Prepared::Failed(reason)
            }
        };
    }
    let masks = match super::masks::read(shared, index) {
        Ok(m) => m,
        Err(reason) => {
            shared.give_buffer(buf);
            return Prepared::Failed(reason);
        }
    };
    let out = decode_and_transform(shared, epoch, index, &buf);
    shared.give_buffer(buf);
    let out = out.and_then(|(data, spec, geometry)| {
        let masks = super::masks::moved_on_host(shared, index, &geometry, masks)?;
        Ok(Prepared::Pixels {
            data,
            spec,
            geometry,
            masks,
        })
    });
    out.unwrap_or_else(Prepared::Failed)
}

/// Sample `index`'s masks for a GPU stage: written by this worker into pinned memory where
/// the loader pins them, else read into host memory.
fn gpu_masks(
    shared: &Shared,
    epoch: u64,
    index: usize,
) -> Result<Option<SampleMasks>, SampleErrorKind> {
    match &shared.mask_pinning {
        Some(pinning) if shared.masks => match shared.dataset.mask_source(index)? {
            Some(source) => pinning.pin(shared, epoch, index, source).map(Some),
            None => Ok(None),
        },
        _ => Ok(super::masks::read(shared, index)?.map(SampleMasks::Host)),
    }
}

/// Decodes `data` (sample `index`) and runs its planned transform.
fn decode_and_transform(
    shared: &Shared,
    epoch: u64,
    index: usize,
    data: &[u8],
) -> Result<(Vec<u8>, OutputSpec, TargetGeometry), SampleErrorKind> {
    let options = DecoderOptions {
        max_pixels: shared.max_pixels,
        apply_orientation: shared.apply_orientation,
        truncated: shared.truncated,
        ..DecoderOptions::default()
    };
    let img = decode_host_with(data, &options)?;
    let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
    let (op, spec, post) = shared.plan(index, (img.width, img.height), &mut rng)?;
    let src = HostImage::rgb8(&img.rgb, img.width, img.height);
    let mut out = vec![0u8; spec.image_bytes()];
    // RandomErasing runs on the batch (the CPU stage), as on the GPU.
    let planned = Planned {
        op,
        spec,
        post,
        erase: None,
    };
    apply_host(&src, &planned, &mut out);
    Ok((out, spec, planned.post.geometry))
}
