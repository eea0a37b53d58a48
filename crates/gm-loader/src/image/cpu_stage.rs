//! The CPU path: decoding on the host and the transforms' CPU twins, into a host tensor.

use gm_transforms::OutputSpec;
use gm_transforms::cpu::place_in_slot;
use gm_transforms::targets::{MaskStack, TargetGeometry};

use super::augment::{draw_erases, draw_mix};
use super::batch::Batch;
use super::context::Shared;
use super::read::{Prepared, prepare};
use super::sizes::place;
use crate::bad_samples::{Next, Tally};
use crate::error::{LoaderError, SampleErrorKind};
use crate::tensors::{HostTensor, Images};

/// One image of the batch, transformed.
struct Good {
    index: usize,
    data: Vec<u8>,
    spec: OutputSpec,
    geometry: TargetGeometry,
    masks: Option<MaskStack>,
}

/// Finishes one batch on the CPU: bad samples per the policy, then the images stacked.
pub(crate) fn run_batch(
    shared: &Shared,
    epoch: u64,
    position: usize,
    items: Vec<(usize, Prepared)>,
) -> Result<Option<Batch>, LoaderError> {
    let mut good: Vec<Good> = Vec::with_capacity(items.len());
    let mut tally = Tally::default();
    for (slot, (index, prepared)) in items.into_iter().enumerate() {
        match fill_slot(shared, epoch, position, slot, index, prepared)? {
            Some((g, attempt)) => {
                tally.filled(attempt);
                good.push(g);
            }
            None => tally.skip(),
        }
    }
    {
        let mut s = shared.stats.lock();
        s.skipped += tally.skipped;
        s.substituted += tally.substituted;
        s.paths.cpu += good.len() as u64;
    }
    stack(shared, epoch, position, good)
}

/// The image of one slot (with the try that gave it), substitutes included; `None` when the
/// slot is skipped.
fn fill_slot(
    shared: &Shared,
    epoch: u64,
    position: usize,
    slot: usize,
    mut index: usize,
    mut prepared: Prepared,
) -> Result<Option<(Good, u32)>, LoaderError> {
    let mut attempt = 0u32;
    loop {
        let reason = match prepared {
            Prepared::Pixels {
                data,
                spec,
                geometry,
                masks,
            } => {
                let good = Good {
                    index,
                    data,
                    spec,
                    geometry,
                    masks,
                };
                return Ok(Some((good, attempt)));
            }
            Prepared::Failed(reason) => reason,
            Prepared::Bytes { data, .. } => {
                shared.give_buffer(data);
                SampleErrorKind::Internal("undecoded bytes on the CPU path")
            }
            Prepared::Cached => SampleErrorKind::Internal("a device-cache slot on the CPU path"),
        };
        shared.bad_sample(index, reason)?;
        match shared.bad.next(epoch, position, slot, attempt) {
            Next::Skip => return Ok(None),
            Next::Substitute(i) => index = i,
        }
        attempt += 1;
        prepared = prepare(shared, epoch, index);
    }
}

/// Stacks the images into a host tensor; `None` when every slot was skipped.
fn stack(
    shared: &Shared,
    epoch: u64,
    position: usize,
    good: Vec<Good>,
) -> Result<Option<Batch>, LoaderError> {
    let specs: Vec<OutputSpec> = good.iter().map(|g| g.spec).collect();
    let placed = match place(shared.sizes, &specs) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(None),
        Err((k, reason)) => return Err(shared.plan_error(good[k].index, reason)),
    };
    let spec = placed.spec;
    let mut data = vec![0u8; placed.bytes()];
    let mut indices = Vec::with_capacity(good.len());
    let mut geometry = Vec::with_capacity(good.len());
    let mut masks = Vec::with_capacity(good.len());
    for (g, slot) in good.into_iter().zip(&placed.slots) {
        place_in_slot(&g.data, &g.spec, slot, &mut data)
            .map_err(|e| shared.plan_error(g.index, e.into()))?;
        indices.push(g.index);
        geometry.push(g.geometry);
        masks.push((g.masks, (g.spec.width, g.spec.height)));
    }
    let masks = shared.masks.then(|| super::masks::host_batch(masks));
    let labels: Vec<_> = indices.iter().map(|&i| shared.dataset.label(i)).collect();
    if let Some(erases) = draw_erases(shared, epoch, &spec, &indices)? {
        gm_transforms::erase_batch(&mut data, &spec, &erases);
    }
    let soft = match draw_mix(shared, epoch, position, &spec, &indices, &labels)? {
        Some((mix, soft)) => {
            gm_transforms::mix_batch(&mut data, indices.len(), &spec, &mix);
            Some(soft)
        }
        None => None,
    };
    let batch = Batch::new(
        Images::Host(HostTensor {
            shape: placed.shape.clone(),
            dtype: spec.dtype,
            data,
        }),
        labels,
        indices,
        epoch,
        position,
        None,
    );
    let names = shared.names_of(&batch.indices);
    let batch = batch
        .with_soft_labels(soft)
        .with_names(names)
        .with_masks(masks);
    let targets = shared.moved_targets(&batch.indices, &geometry);
    let batch = batch.with_targets(targets).with_geometry(geometry);
    Ok(Some(batch.with_placement(placed)))
}
