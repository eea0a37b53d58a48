//! The draws of the batch-level augmentations after the chain, shared by the GPU and CPU
//! stages: RandomErasing per sample (seed, epoch, dataset index) and MixUp/CutMix per batch
//! (seed, epoch, position), so that a batch is the same on either path, in any run, and
//! after a resume.

use gm_cuda::DType;
use gm_transforms::{Erase, Mix, OutputSpec, RandomErasing};

use super::context::Shared;
use super::dataset::Label;
use crate::error::LoaderError;
use crate::tensors::HostTensor;

/// The erasure of each image of a batch (samples `indices`), or `None` without erasing.
pub(crate) fn draw_erases(
    shared: &Shared,
    epoch: u64,
    spec: &OutputSpec,
    indices: &[usize],
) -> Result<Option<Vec<Option<Erase>>>, LoaderError> {
    let Some(erasing) = &shared.erasing else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(indices.len());
    for &index in indices {
        let mut rng = RandomErasing::rng(shared.seed, epoch, index as u64);
        let e = erasing
            .draw(spec, &mut rng)
            .map_err(|e| shared.plan_error(index, e.into()))?;
        out.push(e);
    }
    Ok(Some(out))
}

/// The mix of batch `position` (samples `indices`, labels `labels`) and its soft labels, or
/// `None` without MixUp/CutMix. A label outside the classes is a plan error of its sample.
pub(crate) fn draw_mix(
    shared: &Shared,
    epoch: u64,
    position: usize,
    spec: &OutputSpec,
    indices: &[usize],
    labels: &[Label],
) -> Result<Option<(Mix, HostTensor)>, LoaderError> {
    let Some(mixing) = &shared.mix else {
        return Ok(None);
    };
    let mut rng = gm_transforms::BatchMix::rng(shared.seed, epoch, position as u64);
    let mix = mixing.draw(spec.width, spec.height, &mut rng);
    let classes = mixing.num_classes();
    if let Some(k) = labels
        .iter()
        .position(|&l| usize::try_from(l).map_or(true, |c| c >= classes))
    {
        let reason = gm_transforms::PlanError::Step {
            step: "MixUp/CutMix",
            reason: format!("label {} is outside 0..{classes}", labels[k]),
        };
        return Err(shared.plan_error(indices[k], reason.into()));
    }
    let soft = mix
        .soft_labels(labels, classes)
        .map_err(|e| shared.plan_error(indices.first().copied().unwrap_or(0), e.into()))?;
    let tensor = HostTensor {
        shape: vec![labels.len(), classes],
        dtype: DType::F32,
        data: soft.iter().flat_map(|v| v.to_ne_bytes()).collect(),
    };
    Ok(Some((mix, tensor)))
}
