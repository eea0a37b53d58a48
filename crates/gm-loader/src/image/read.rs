//! The host workers' step: read a sample (and, on the CPU path, decode and transform it).

use gm_codec::jpeg::{DecoderOptions, decode_host_with};
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{OutputSpec, SampleRng};

use super::context::Shared;
use crate::error::SampleErrorKind;

/// One sample after the host worker.
pub(crate) enum Prepared {
    /// Encoded bytes, for the GPU decoder.
    Bytes(Vec<u8>),
    /// The transformed image (CPU path).
    Pixels { data: Vec<u8>, spec: OutputSpec },
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
    let buf = match shared.read(index) {
        Ok(buf) => buf,
        Err(e) => return Prepared::Failed(e),
    };
    if !shared.cpu {
        return Prepared::Bytes(buf);
    }
    let out = decode_and_transform(shared, epoch, index, &buf);
    shared.give_buffer(buf);
    match out {
        Ok((data, spec)) => Prepared::Pixels { data, spec },
        Err(reason) => Prepared::Failed(reason),
    }
}

/// Decodes `data` (sample `index`) and runs its planned transform.
fn decode_and_transform(
    shared: &Shared,
    epoch: u64,
    index: usize,
    data: &[u8],
) -> Result<(Vec<u8>, OutputSpec), SampleErrorKind> {
    let options = DecoderOptions {
        max_pixels: shared.max_pixels,
        apply_orientation: shared.apply_orientation,
        truncated: shared.truncated,
        ..DecoderOptions::default()
    };
    let img = decode_host_with(data, &options)?;
    let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
    let (op, spec) = shared
        .transforms
        .plan_image(img.width, img.height, &mut rng)?;
    let src = HostImage::rgb8(&img.rgb, img.width, img.height);
    let mut out = vec![0u8; spec.image_bytes()];
    fused(&src, &op, &spec, &mut out);
    Ok((out, spec))
}
