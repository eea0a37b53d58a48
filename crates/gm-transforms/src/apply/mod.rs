//! A chain applied to images the caller already holds: the output of any decoder (torchcodec,
//! DALI, a user's kernel) in GPU memory, or pixels in host memory. Each image is planned with
//! its own draws, `(seed, epoch, index)` as in the loaders, and the whole batch runs as the
//! loaders run it: the fused launch (with its pre-passes), the blur and noise passes, and
//! RandomErasing, on the GPU ([`DeviceChain`]) or through the CPU twins ([`apply_host`]).
//! An image's targets (boxes, masks, keypoints) move through the geometry its plan recorded
//! ([`move_targets`]), as the loaders move a dataset's.

use gm_cuda::{CudaError, Device, DevicePool, Stream, Tensor};

mod masks;
pub use masks::{DeviceMasks, MovedMasks};

use crate::cpu::{HostImage, fused_passes};
use crate::targets::{BoundingBoxes, KeyPoints, Mask, TargetError, TargetGeometry, kept_objects};
use crate::{
    BatchOpsKernel, Blur, BlurKernel, Compose, Erase, FusedKernel, FusedOp, MaskGather, OutputSpec,
    Passes, PlanError, PrePass, RandomErasing, SampleRng, Slot, SourceImage, blur_image,
    erase_image, noise_image,
};

/// Why a chain could not run on a batch of images.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Image `index` (its position in the batch) could not be planned.
    #[error("image {index}: {source}")]
    Plan {
        /// Position in the batch.
        index: usize,
        /// Why.
        source: PlanError,
    },
    /// The images' outputs differ in more than their size (type, layout, normalization).
    #[error(
        "image {index} comes out as {got:?}, image 0 as {want:?}: the images of one call may \
         differ in size only"
    )]
    Outputs {
        /// The first image that differs.
        index: usize,
        /// Its output.
        got: Box<OutputSpec>,
        /// Image 0's.
        want: Box<OutputSpec>,
    },
    /// Image `index`'s targets could not be moved (or do not describe the same objects).
    #[error("image {index}'s targets: {source}")]
    Targets {
        /// Position in the batch.
        index: usize,
        /// Why.
        source: TargetError,
    },
    /// Image `index`'s masks go through a warp (affine, rotation, perspective), which has no
    /// per-axis taps: they are moved on the host ([`move_targets`]) instead of in the launch.
    #[error("image {index}'s masks go through a warp: move them on the host")]
    WarpedMasks {
        /// Position in the batch.
        index: usize,
    },
    /// A step that needs one output size, in a call whose images come out in several.
    #[error(
        "{step} runs on batches of one size, and these images come out in several sizes: end \
         the chain in a fixed size, or call it on the images one at a time"
    )]
    Ragged {
        /// The step.
        step: &'static str,
    },
    /// The GPU refused.
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

/// One image's plan: the final fused pass, its output and the passes around it, and the
/// erasure drawn for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The final fused pass.
    pub op: FusedOp,
    /// What it writes.
    pub spec: OutputSpec,
    /// The passes before and after it, and the geometry the image went through.
    pub post: Passes,
    /// RandomErasing's draw, when the chain ends in one.
    pub erase: Option<Erase>,
}

/// Plans image `i` (`sizes[i]`: width, height) with the draws of `(seed, epoch, indices[i])`,
/// the same a loader gives dataset sample `indices[i]`; `boxes[i]`, where given, are the
/// boxes steps such as RandomIoUCrop draw from (`boxes` empty: none). The outputs may differ
/// in size only (see [`Planned::stacks`]).
pub fn plan_batch(
    chain: &Compose,
    erasing: Option<&RandomErasing>,
    sizes: &[(u32, u32)],
    (seed, epoch): (u64, u64),
    indices: &[u64],
    boxes: &[Option<&BoundingBoxes>],
) -> Result<Vec<Planned>, ApplyError> {
    let mut out: Vec<Planned> = Vec::with_capacity(sizes.len());
    for (index, (&(w, h), &sample)) in sizes.iter().zip(indices).enumerate() {
        let at = |source| ApplyError::Plan { index, source };
        let mut rng = SampleRng::new(seed, epoch, sample);
        let drawn_from = boxes.get(index).copied().flatten();
        let (op, spec, post) = chain
            .plan_with_boxes(w, h, drawn_from, &mut rng)
            .map_err(at)?;
        let erase = match erasing {
            Some(e) => e
                .draw(&spec, &mut RandomErasing::rng(seed, epoch, sample))
                .map_err(at)?,
            None => None,
        };
        if let Some(first) = out.first()
            && first.spec != sized_as(&spec, &first.spec)
        {
            return Err(ApplyError::Outputs {
                index,
                got: Box::new(spec),
                want: Box::new(first.spec),
            });
        }
        out.push(Planned {
            op,
            spec,
            post,
            erase,
        });
    }
    Ok(out)
}

/// `spec` with `like`'s size.
fn sized_as(spec: &OutputSpec, like: &OutputSpec) -> OutputSpec {
    OutputSpec {
        width: like.width,
        height: like.height,
        ..*spec
    }
}

impl Planned {
    /// Whether every image of `planned` comes out the same size, so that they stack into one
    /// batch; otherwise they are laid out one after the other ([`ragged_slots`]).
    pub fn stacks(planned: &[Planned]) -> bool {
        planned
            .windows(2)
            .all(|w| (w[0].spec.width, w[0].spec.height) == (w[1].spec.width, w[1].spec.height))
    }
}

/// Images of many sizes one after the other in one buffer: each image's slot (bytes from the
/// start, exactly its size) and where it starts in elements.
pub fn ragged_slots(planned: &[Planned]) -> (Vec<Slot>, Vec<usize>) {
    let mut slots = Vec::with_capacity(planned.len());
    let mut offsets = Vec::with_capacity(planned.len());
    let mut at = 0usize;
    for p in planned {
        slots.push(Slot {
            offset: at,
            width: p.spec.width,
            height: p.spec.height,
            fill: 0.0,
        });
        offsets.push(at / p.spec.dtype.size());
        at += p.spec.image_bytes();
    }
    (slots, offsets)
}

/// Whether images of many sizes can run their chain: blur, noise and erasing run on batches
/// of one size (on the GPU; the CPU twins refuse them too, so that both give the same).
pub fn check_ragged(planned: &[Planned]) -> Result<(), ApplyError> {
    let step = if planned.iter().any(|p| p.post.blur.is_some()) {
        "GaussianBlur"
    } else if planned.iter().any(|p| p.post.noise.is_some()) {
        "GaussianNoise"
    } else if planned.iter().any(|p| p.erase.is_some()) {
        "RandomErasing"
    } else {
        return Ok(());
    };
    Err(ApplyError::Ragged { step })
}

/// One image's targets on its own canvas: its objects' boxes, masks and keypoints
/// (`keypoints_per_object` points each), any of them absent, those present about the same
/// objects in the same order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Targets {
    /// The objects' boxes.
    pub boxes: Option<BoundingBoxes>,
    /// One mask per object, on the image's canvas.
    pub masks: Vec<Mask>,
    /// The objects' keypoints, `keypoints_per_object` each, object after object.
    pub keypoints: Option<KeyPoints>,
    /// Points per object in `keypoints`.
    pub keypoints_per_object: usize,
}

impl Targets {
    /// How many objects these targets describe, or why their parts disagree (boxes, masks
    /// and keypoint objects must count the same). Masks count only where given or where
    /// nothing else is.
    pub fn objects(&self) -> Result<usize, TargetError> {
        let per = self.keypoints_per_object.max(1);
        let mut counts: Vec<(&str, usize)> = Vec::new();
        if let Some(b) = &self.boxes {
            counts.push(("boxes", b.boxes.len()));
        }
        if !self.masks.is_empty() || (self.boxes.is_none() && self.keypoints.is_none()) {
            counts.push(("masks", self.masks.len()));
        }
        if let Some(k) = &self.keypoints {
            if k.points.len() % per != 0 {
                return Err(TargetError::Objects {
                    what: format!("{} keypoints are not {per} per object", k.points.len()),
                });
            }
            counts.push(("keypoint objects", k.points.len() / per));
        }
        let n = counts.first().map_or(0, |c| c.1);
        if counts.iter().any(|c| c.1 != n) {
            return Err(TargetError::Objects {
                what: format!("the counts differ: {counts:?}"),
            });
        }
        Ok(n)
    }
}

/// [`Targets`] moved with their image: only the objects that survive the chain (a
/// `SanitizeBoundingBoxes`, a `FixedSizeCrop`), `kept` saying which of the given ones they
/// are, on the output's `canvas` (width, height).
#[derive(Debug, Clone, PartialEq)]
pub struct MovedTargets {
    /// Per given object: whether it is still there.
    pub kept: Vec<bool>,
    /// The output's width and height.
    pub canvas: (u32, u32),
    /// The kept objects' boxes.
    pub boxes: Option<BoundingBoxes>,
    /// The kept objects' masks.
    pub masks: Vec<Mask>,
    /// The kept objects' keypoints (a point that left the canvas is invisible).
    pub keypoints: Option<KeyPoints>,
}

/// `targets` moved through the `geometry` an image's plan recorded ([`Planned::post`]),
/// exactly as the loaders move a dataset's targets: the objects the geometry drops go with
/// their masks and keypoints.
pub fn move_targets(
    geometry: &TargetGeometry,
    targets: &Targets,
) -> Result<MovedTargets, TargetError> {
    let objects = targets.objects()?;
    let kept = match &targets.boxes {
        Some(b) => geometry.kept(b)?,
        None => vec![true; objects],
    };
    let boxes = match &targets.boxes {
        Some(b) => {
            let mut moved = geometry.boxes(b)?;
            moved.boxes = kept_objects(&moved.boxes, &kept, 1);
            Some(moved)
        }
        None => None,
    };
    let mut masks = Vec::new();
    for (m, _) in targets.masks.iter().zip(&kept).filter(|(_, k)| **k) {
        masks.push(geometry.mask(m)?);
    }
    let keypoints = match &targets.keypoints {
        Some(k) => {
            let mut moved = geometry.keypoints(k)?;
            let per = targets.keypoints_per_object;
            moved.points = kept_objects(&moved.points, &kept, per);
            moved.visible = kept_objects(&moved.visible, &kept, per);
            Some(moved)
        }
        None => None,
    };
    Ok(MovedTargets {
        kept,
        canvas: geometry.canvas(),
        boxes,
        masks,
        keypoints,
    })
}

/// Runs `planned` on `src` through the CPU twins into `out` (`planned.spec.image_bytes()`
/// bytes): the fused passes, the blur, the noise and the erasure, exactly as a CPU loader
/// makes a sample.
pub fn apply_host(src: &HostImage<'_>, planned: &Planned, out: &mut [u8]) {
    let Planned {
        op,
        spec,
        post,
        erase,
    } = planned;
    if let Some(blur) = &post.blur {
        // The fused twin writes the pre-blur u8 HWC image; the blur twin the output.
        let fspec = Blur::fused_spec(spec);
        let mut mid = vec![0u8; fspec.image_bytes()];
        fused_passes(src, &post.pre, op, &fspec, &mut mid);
        blur_image(&mid, spec, Some(blur), out);
    } else {
        fused_passes(src, &post.pre, op, spec, out);
    }
    if let Some(noise) = &post.noise {
        noise_image(out, spec, noise);
    }
    if let Some(e) = erase {
        erase_image(out, spec, e);
    }
}

/// The GPU side of [`apply_host`] for a batch: the kernels, loaded once on a device.
pub struct DeviceChain {
    fused: FusedKernel,
    blur: BlurKernel,
    batch_ops: BatchOpsKernel,
    pool: DevicePool,
}

impl DeviceChain {
    /// Loads the kernels on `device`; outputs come from `pool`.
    pub fn new(device: &Device, pool: DevicePool) -> Result<DeviceChain, CudaError> {
        Ok(DeviceChain {
            fused: FusedKernel::new(device)?,
            blur: BlurKernel::new(device)?,
            batch_ops: BatchOpsKernel::new(device)?,
            pool,
        })
    }

    /// Runs image `i`'s plan `planned[i]` on `images[i]` into one flat tensor, the images one
    /// after the other ([`ragged_slots`]: each image's start, in elements), in one launch per
    /// pre-pass level and one for the final pass. Blur, noise and erasing need one size and
    /// are refused here.
    pub fn run_ragged(
        &mut self,
        stream: &Stream,
        images: &[SourceImage],
        planned: &[Planned],
    ) -> Result<Tensor, ApplyError> {
        self.ragged_with(stream, images, planned, &[])
    }

    fn ragged_with(
        &mut self,
        stream: &Stream,
        images: &[SourceImage],
        planned: &[Planned],
        gathers: &[Option<MaskGather>],
    ) -> Result<Tensor, ApplyError> {
        let Some(first) = planned.first() else {
            return Err(CudaError::InvalidArgument("no images".into()).into());
        };
        check_ragged(planned)?;
        let (slots, _) = ragged_slots(planned);
        let total: usize = planned.iter().map(|p| p.spec.image_bytes()).sum();
        let elems = total / first.spec.dtype.size();
        let out = Tensor::empty(&self.pool, stream, &[elems], first.spec.dtype)?;
        let (ops, pre) = passes(planned);
        let specs: Vec<OutputSpec> = planned.iter().map(|p| p.spec).collect();
        self.fused
            .run_slots(stream, images, &pre, &ops, &specs, &slots, &out, gathers)?;
        Ok(out)
    }

    /// [`DeviceChain::run`] (where the outputs stack, else [`DeviceChain::run_ragged`]) with
    /// image `i`'s masks `masks[i]` moved in the launch that writes its pixels, nearest, as
    /// the CPU twin moves them. A warped image's masks are refused
    /// ([`ApplyError::WarpedMasks`]): move those with [`move_targets`].
    pub fn run_masked(
        &mut self,
        stream: &Stream,
        images: &[SourceImage],
        planned: &[Planned],
        masks: &[Option<DeviceMasks>],
    ) -> Result<(Tensor, MovedMasks), ApplyError> {
        if masks.len() != planned.len() {
            return Err(CudaError::InvalidArgument(format!(
                "{} images but {} mask entries",
                planned.len(),
                masks.len()
            ))
            .into());
        }
        // The taps' memory goes back to the pool once the stream has run the launch.
        let (gathers, moved, _taps) = masks::gathers(&self.pool, stream, planned, masks)?;
        let out = if Planned::stacks(planned) {
            self.run_with(stream, images, planned, &gathers)?
        } else {
            self.ragged_with(stream, images, planned, &gathers)?
        };
        Ok((out, moved))
    }

    /// Runs image `i`'s plan `planned[i]` on `images[i]` into one `[B, C, H, W]` (or HWC, as
    /// the chain's `ToDtype` says) tensor, enqueued on `stream`; the caller keeps the sources
    /// valid until the stream has run it (their tensors' fences, or a wait).
    pub fn run(
        &mut self,
        stream: &Stream,
        images: &[SourceImage],
        planned: &[Planned],
    ) -> Result<Tensor, ApplyError> {
        self.run_with(stream, images, planned, &[])
    }

    fn run_with(
        &mut self,
        stream: &Stream,
        images: &[SourceImage],
        planned: &[Planned],
        gathers: &[Option<MaskGather>],
    ) -> Result<Tensor, ApplyError> {
        let Some(first) = planned.first() else {
            return Err(CudaError::InvalidArgument("no images".into()).into());
        };
        let spec = first.spec;
        let n = planned.len();
        let out = Tensor::empty(&self.pool, stream, &batch_shape(n, &spec), spec.dtype)?;
        let (ops, pre) = passes(planned);
        let blurs: Vec<Option<Blur>> = planned.iter().map(|p| p.post.blur).collect();
        if blurs.iter().any(Option::is_some) {
            let fspec = Blur::fused_spec(&spec);
            let mid = Tensor::empty(&self.pool, stream, &batch_shape(n, &fspec), fspec.dtype)?;
            self.fused
                .run_passes_masked(stream, images, &pre, &ops, &fspec, (&mid, 0), gathers)?;
            self.blur.run(stream, &mid, &spec, &blurs, &out)?;
        } else {
            self.fused
                .run_passes_masked(stream, images, &pre, &ops, &spec, (&out, 0), gathers)?;
        }
        let noises: Vec<_> = planned.iter().map(|p| p.post.noise).collect();
        if noises.iter().any(Option::is_some) {
            self.blur.noise(stream, &spec, &out, &noises)?;
        }
        let erases: Vec<Option<Erase>> = planned.iter().map(|p| p.erase).collect();
        if erases.iter().any(Option::is_some) {
            self.batch_ops.erase(stream, &spec, &out, &erases)?;
        }
        Ok(out)
    }
}

/// Each image's final fused pass and the pre-passes before it, as the kernel takes them.
fn passes(planned: &[Planned]) -> (Vec<FusedOp>, Vec<&[PrePass]>) {
    planned
        .iter()
        .map(|p| (p.op, p.post.pre.as_slice()))
        .unzip()
}

/// `[n, 3, h, w]` or `[n, h, w, 3]`, as `spec` lays an image out.
fn batch_shape(n: usize, spec: &OutputSpec) -> Vec<usize> {
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    match spec.layout {
        crate::Layout::Chw => vec![n, c, h, w],
        crate::Layout::Hwc => vec![n, h, w, c],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::targets::BoxFormat;
    use crate::{HorizontalFlip, Resize};

    fn chain() -> Compose {
        Compose::new()
            .then(Resize::Shorter(8))
            .then(HorizontalFlip(1.0))
    }

    /// Images of two shapes come out in two sizes, laid one after the other; each image's
    /// bytes are what it gives alone.
    #[test]
    fn images_of_many_sizes_are_laid_one_after_the_other() {
        let sizes = [(16, 12), (10, 20), (16, 12)];
        let planned = plan_batch(&chain(), None, &sizes, (1, 2), &[0, 1, 2], &[]).unwrap();
        assert!(!Planned::stacks(&planned));
        assert!(Planned::stacks(&[planned[0].clone(), planned[2].clone()]));
        let (slots, offsets) = ragged_slots(&planned);
        let bytes: Vec<usize> = planned.iter().map(|p| p.spec.image_bytes()).collect();
        assert_eq!(offsets, vec![0, bytes[0], bytes[0] + bytes[1]]);
        assert_eq!((slots[1].width, slots[1].height), (8, 16));
        check_ragged(&planned).unwrap();
        let pixels: Vec<u8> = (0..16 * 12 * 3).map(|i| (i * 7 % 251) as u8).collect();
        let src = HostImage::rgb8(&pixels, 16, 12);
        let mut alone = vec![0u8; bytes[0]];
        apply_host(&src, &planned[0], &mut alone);
        let mut again = vec![0u8; bytes[2]];
        apply_host(&src, &planned[2], &mut again);
        assert_eq!(alone, again, "a deterministic chain, the same pixels");
        // Mirrored: the first output column is the resized image's last.
        let mut unflipped = vec![0u8; bytes[0]];
        let plain = Compose::new().then(Resize::Shorter(8));
        let p = plan_batch(&plain, None, &[(16, 12)], (1, 2), &[0], &[]).unwrap();
        apply_host(&src, &p[0], &mut unflipped);
        let (w, h) = (10, 8);
        let hwc = p[0].spec.layout == crate::Layout::Hwc;
        for c in 0..3 {
            for y in 0..h {
                for x in 0..w {
                    let at = |x: usize| {
                        if hwc {
                            (y * w + x) * 3 + c
                        } else {
                            c * w * h + y * w + x
                        }
                    };
                    assert_eq!(alone[at(x)], unflipped[at(w - 1 - x)], "({x}, {y}, {c})");
                }
            }
        }
    }

    /// Boxes move with their image and an object's parts must agree in number.
    #[test]
    fn targets_move_and_disagreeing_counts_are_refused() {
        let planned = plan_batch(&chain(), None, &[(16, 12)], (0, 0), &[5], &[]).unwrap();
        let boxes =
            BoundingBoxes::new(BoxFormat::Xyxy, (16, 12), vec![[0.0, 0.0, 4.0, 6.0]]).unwrap();
        let t = Targets {
            boxes: Some(boxes),
            ..Targets::default()
        };
        let moved = move_targets(&planned[0].post.geometry, &t).unwrap();
        assert_eq!(moved.kept, vec![true]);
        assert_eq!(moved.canvas, (10, 8));
        let b = moved.boxes.unwrap().boxes[0];
        // Scaled by 10/16 and 8/12, then mirrored on a canvas 10 wide.
        assert_eq!(b, [10.0 - 2.5, 0.0, 10.0, 4.0]);
        let two_masks = Targets {
            masks: vec![Mask::default(), Mask::default()],
            ..t
        };
        let source = move_targets(&planned[0].post.geometry, &two_masks).unwrap_err();
        let err = ApplyError::Targets { index: 3, source };
        assert!(
            err.to_string()
                .contains("image 3's targets: the counts differ"),
            "{err}"
        );
    }
}
