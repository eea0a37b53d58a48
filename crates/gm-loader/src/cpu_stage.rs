//! The CPU path: decoding on the host and the transforms' CPU twins, into a host tensor.

use gm_codec::jpeg::decode_host;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{Layout, OutputSpec, SampleRng};

use crate::batch::{Batch, HostTensor, Images};
use crate::builder::{BadSamplePolicy, MAX_SUBSTITUTES, Shared};
use crate::error::{LoaderError, SampleError};
use crate::pipeline::{Prepared, prepare};

/// Decodes `data` (sample `index`) and runs its planned transform.
pub(crate) fn decode_and_transform(
    shared: &Shared,
    epoch: u64,
    index: usize,
    data: &[u8],
) -> Result<(Vec<u8>, OutputSpec), String> {
    let img = decode_host(data, shared.max_pixels, shared.apply_orientation)
        .map_err(|e| e.to_string())?;
    let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
    let (op, spec) = shared
        .transforms
        .plan_image(img.width, img.height, &mut rng)
        .map_err(|e| format!("transforms: {e}"))?;
    let src = HostImage::rgb8(&img.rgb, img.width, img.height);
    let mut out = vec![0u8; spec.image_bytes()];
    fused(&src, &op, &spec, &mut out);
    Ok((out, spec))
}

/// The shape of `n` images of `spec`.
pub(crate) fn batch_shape(n: usize, spec: &OutputSpec) -> Vec<usize> {
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    match spec.layout {
        Layout::Chw => vec![n, c, h, w],
        Layout::Hwc => vec![n, h, w, c],
    }
}

/// The error for an image whose output differs from the batch's.
pub(crate) fn size_mismatch(
    shared: &Shared,
    index: usize,
    got: &OutputSpec,
    want: &OutputSpec,
) -> LoaderError {
    LoaderError::Plan(SampleError {
        index,
        name: shared.dataset.name(index),
        reason: format!(
            "the output is {}x{} {:?} {:?} but the batch's is {}x{} {:?} {:?}: end the chain \
             with a fixed-size step (CenterCrop, RandomResizedCrop, Resize to width and height)",
            got.width,
            got.height,
            got.dtype,
            got.layout,
            want.width,
            want.height,
            want.dtype,
            want.layout
        ),
    })
}

/// Finishes one batch on the CPU: bad samples per the policy, then the images stacked.
pub(crate) fn run_batch(
    shared: &Shared,
    epoch: u64,
    position: usize,
    items: Vec<(usize, Prepared)>,
) -> Result<Option<Batch>, LoaderError> {
    let mut good: Vec<(usize, Vec<u8>, OutputSpec)> = Vec::with_capacity(items.len());
    let (mut skipped, mut substituted) = (0u64, 0u64);
    for (slot, (mut index, mut prepared)) in items.into_iter().enumerate() {
        let mut attempt = 0u32;
        loop {
            let reason = match prepared {
                Prepared::Pixels { data, spec } => {
                    good.push((index, data, spec));
                    substituted += u64::from(attempt > 0);
                    break;
                }
                Prepared::Failed(reason) => reason,
                Prepared::Bytes(b) => {
                    shared.give_buffer(b);
                    "internal: undecoded bytes on the CPU path".to_string()
                }
                Prepared::Cached => "internal: a device-cache slot on the CPU path".to_string(),
            };
            shared.bad_sample(index, reason)?;
            if shared.policy != BadSamplePolicy::Substitute || attempt >= MAX_SUBSTITUTES {
                skipped += 1;
                break;
            }
            index = shared.substitute(epoch, position, slot, attempt);
            attempt += 1;
            prepared = prepare(shared, epoch, index);
        }
    }
    {
        let mut s = shared.stats.lock();
        s.skipped += skipped;
        s.substituted += substituted;
        s.paths.cpu += good.len() as u64;
    }
    let Some(spec) = good.first().map(|g| g.2) else {
        return Ok(None);
    };
    if let Some(g) = good.iter().find(|g| g.2 != spec) {
        return Err(size_mismatch(shared, g.0, &g.2, &spec));
    }
    let mut data = Vec::with_capacity(good.len() * spec.image_bytes());
    let mut indices = Vec::with_capacity(good.len());
    for (i, px, _) in &good {
        data.extend_from_slice(px);
        indices.push(*i);
    }
    Ok(Some(Batch {
        images: Images::Host(HostTensor {
            shape: batch_shape(good.len(), &spec),
            dtype: spec.dtype,
            data,
        }),
        labels: indices.iter().map(|&i| shared.dataset.label(i)).collect(),
        indices,
        epoch,
        position,
        ready_event: None,
        release: None,
    }))
}
