//! MixUp and CutMix on a whole batch (torchvision.transforms.v2.MixUp / CutMix, and
//! `RandomChoice([MixUp, CutMix])` when both are on).
//!
//! Image `i` is paired with image `i - 1` (the last with the first: the batch rolled by one,
//! as torchvision pairs them). One draw per batch ([`BatchMix::draw`], from
//! [`BatchMix::rng`]: seed, epoch, batch position) gives the [`Mix`]: the weight `lambda`
//! ~ Beta(alpha, alpha) ([`crate::draw::beta`]) and, for CutMix, the box pasted from the
//! partner, with `lambda` set to the share of the image left (torchvision's
//! `lam_adjusted`). The GPU ([`BatchOpsKernel::mix`]) or the CPU twin ([`mix_batch`]) applies
//! it in place; [`Mix::soft_labels`] gives the labels as `[batch, num_classes]` f32.
//!
//! [`BatchOpsKernel::mix`]: crate::BatchOpsKernel::mix

use crate::draw::beta;
use crate::elements::{ToU8, index, load, store};
use crate::plan::{PlanError, SampleRng};
use crate::types::OutputSpec;

/// Salt of the mixing stream: `SampleRng::new(seed ^ MIX_STREAM, epoch, batch position)`.
const MIX_STREAM: u64 = 0x6d69_7800_0000_0002;

/// What one batch's mix drew.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Weight of each image's own pixels and label (CutMix: the share outside the box).
    pub lambda: f32,
    /// CutMix's box `(x1, y1, x2, y2)` (exclusive ends), copied from the partner; `None` for
    /// MixUp.
    pub cut: Option<[u32; 4]>,
}

/// MixUp and/or CutMix settings: the Beta parameter of each that is on, and the classes
/// labels are one-hot encoded over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchMix {
    mixup_alpha: Option<f64>,
    cutmix_alpha: Option<f64>,
    num_classes: usize,
}

impl BatchMix {
    /// MixUp with Beta(`mixup`, `mixup`), CutMix with Beta(`cutmix`, `cutmix`); with both,
    /// each batch picks one with even odds. At least one must be given, alphas positive and
    /// finite, `num_classes` at least 1.
    pub fn new(
        mixup: Option<f64>,
        cutmix: Option<f64>,
        num_classes: usize,
    ) -> Result<BatchMix, PlanError> {
        let err = |reason: String| {
            Err(PlanError::Step {
                step: "MixUp/CutMix",
                reason,
            })
        };
        if mixup.is_none() && cutmix.is_none() {
            return err("neither MixUp nor CutMix is on".into());
        }
        for a in mixup.iter().chain(&cutmix) {
            if !(*a > 0.0 && a.is_finite()) {
                return err(format!("alpha {a} is not a positive number"));
            }
        }
        if num_classes == 0 {
            return err("num_classes must be at least 1".into());
        }
        Ok(BatchMix {
            mixup_alpha: mixup,
            cutmix_alpha: cutmix,
            num_classes,
        })
    }

    /// Classes of the soft labels.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }

    /// The mixing generator of batch `position` of `epoch` in a run seeded with `seed`.
    pub fn rng(seed: u64, epoch: u64, position: u64) -> SampleRng {
        SampleRng::new(seed ^ MIX_STREAM, epoch, position)
    }

    /// The mix of one batch of `width` x `height` images: RandomChoice's pick (when both
    /// are on), then lambda, then CutMix's centre, in torchvision's order.
    pub fn draw(&self, width: u32, height: u32, rng: &mut SampleRng) -> Mix {
        let cutmix = match (self.mixup_alpha, self.cutmix_alpha) {
            (Some(_), Some(_)) => rng.below(2) == 1,
            (None, Some(_)) => true,
            _ => false,
        };
        if !cutmix {
            let alpha = self.mixup_alpha.unwrap_or(1.0);
            return Mix {
                lambda: beta(rng, alpha, alpha) as f32,
                cut: None,
            };
        }
        let alpha = self.cutmix_alpha.unwrap_or(1.0);
        let lam = beta(rng, alpha, alpha) as f32;
        let r_x = rng.below(u64::from(width.max(1))) as i64;
        let r_y = rng.below(u64::from(height.max(1))) as i64;
        cut_box(lam, r_x, r_y, width, height)
    }
}

/// torchvision's CutMix box around (`r_x`, `r_y`) for `lam`, and the adjusted lambda.
pub fn cut_box(lam: f32, r_x: i64, r_y: i64, width: u32, height: u32) -> Mix {
    let r = 0.5 * (1.0 - f64::from(lam)).max(0.0).sqrt();
    let (w, h) = (i64::from(width), i64::from(height));
    let (rw, rh) = ((r * w as f64) as i64, (r * h as f64) as i64);
    let x1 = (r_x - rw).max(0);
    let y1 = (r_y - rh).max(0);
    let x2 = (r_x + rw).min(w);
    let y2 = (r_y + rh).min(h);
    let area = ((x2 - x1) * (y2 - y1)) as f64 / (w * h).max(1) as f64;
    Mix {
        lambda: (1.0 - area) as f32,
        cut: Some([x1 as u32, y1 as u32, x2 as u32, y2 as u32]),
    }
}

impl Mix {
    /// The labels as `[labels.len(), num_classes]` row-major f32: row `i` is `lambda` on
    /// `labels[i]` plus `1 - lambda` on `labels[i - 1]` (the last label for row 0), each row
    /// summing to 1. Refuses a label outside `0..num_classes`, naming its position.
    pub fn soft_labels(&self, labels: &[i64], num_classes: usize) -> Result<Vec<f32>, PlanError> {
        let n = labels.len();
        let mut out = vec![0.0f32; n * num_classes];
        let class = |k: usize| -> Result<usize, PlanError> {
            usize::try_from(labels[k])
                .ok()
                .filter(|&c| c < num_classes)
                .ok_or_else(|| PlanError::Step {
                    step: "MixUp/CutMix",
                    reason: format!(
                        "label {} of batch position {k} is outside 0..{num_classes}",
                        labels[k]
                    ),
                })
        };
        for i in 0..n {
            let own = class(i)?;
            let partner = class((i + n - 1) % n)?;
            // torchvision: rolled * (1 - lam) + label * lam, in f32.
            out[i * num_classes + partner] += 1.0 - self.lambda;
            out[i * num_classes + own] += self.lambda;
        }
        Ok(out)
    }
}

/// The CPU twin of the mixing kernel: `n` images of `spec` in `batch`, mixed in place with
/// their partners (each reads its partner's pixels from before the mix). MixUp computes
/// `partner * (1 - lambda) + own * lambda` in f32 and rounds once (a u8 output rounds half to
/// even; torchvision refuses MixUp on uint8); CutMix copies the box. The box is clipped.
pub fn mix_batch(batch: &mut [u8], n: usize, spec: &OutputSpec, mix: &Mix) {
    let size = spec.image_bytes();
    let elems = size / spec.dtype.size();
    if n < 2 || batch.len() < n * size {
        // One image is its own partner: nothing changes.
        return;
    }
    let lam = mix.lambda;
    let [x1, y1, x2, y2] = mix
        .cut
        .unwrap_or([0, 0, spec.width, spec.height])
        .map(|v| v as usize);
    let (x2, y2) = (x2.min(spec.width as usize), y2.min(spec.height as usize));
    for c in 0..spec.channels() {
        for y in y1..y2 {
            for x in x1..x2 {
                let e = index(spec, c, x, y);
                let mut prev = load(spec.dtype, batch, (n - 1) * elems + e);
                for i in 0..n {
                    let cur = load(spec.dtype, batch, i * elems + e);
                    let v = if mix.cut.is_some() {
                        prev
                    } else {
                        prev * (1.0 - lam) + cur * lam
                    };
                    store(spec.dtype, batch, i * elems + e, v, ToU8::Round);
                    prev = cur;
                }
            }
        }
    }
}
