//! Augmentation policies with torchvision's operation lists, magnitude bins and sampling,
//! built from the warps ([`crate::geometry`]) and the colour operations ([`ColourOp`]):
//! [`TrivialAugmentWide`], drawn per sample from the [`SampleRng`].

use crate::colour::ColourOp;
use crate::geometry::{Affine, Rotate};
use crate::plan::{PlanError, PlanState, SampleRng, Transform};
use crate::types::Interp;

/// One operation of torchvision's augmentation spaces (`_apply_image_or_video_transform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugmentOp {
    /// The image unchanged.
    Identity,
    /// `F.affine` with shear x `degrees(atan(m))` about the top-left corner.
    ShearX,
    /// `F.affine` with shear y `degrees(atan(m))` about the top-left corner.
    ShearY,
    /// `F.affine` translating by `int(m)` pixels in x.
    TranslateX,
    /// `F.affine` translating by `int(m)` pixels in y.
    TranslateY,
    /// `F.rotate` by `m` degrees.
    Rotate,
    /// `F.adjust_brightness(1 + m)`.
    Brightness,
    /// `F.adjust_saturation(1 + m)`.
    Color,
    /// `F.adjust_contrast(1 + m)`.
    Contrast,
    /// `F.adjust_sharpness(1 + m)`.
    Sharpness,
    /// `F.posterize(int(m))`.
    Posterize,
    /// `F.solarize(255 * m)`.
    Solarize,
    /// `F.autocontrast`.
    AutoContrast,
    /// `F.equalize`.
    Equalize,
}

impl AugmentOp {
    /// torchvision's name of the operation.
    pub fn name(self) -> &'static str {
        match self {
            AugmentOp::Identity => "Identity",
            AugmentOp::ShearX => "ShearX",
            AugmentOp::ShearY => "ShearY",
            AugmentOp::TranslateX => "TranslateX",
            AugmentOp::TranslateY => "TranslateY",
            AugmentOp::Rotate => "Rotate",
            AugmentOp::Brightness => "Brightness",
            AugmentOp::Color => "Color",
            AugmentOp::Contrast => "Contrast",
            AugmentOp::Sharpness => "Sharpness",
            AugmentOp::Posterize => "Posterize",
            AugmentOp::Solarize => "Solarize",
            AugmentOp::AutoContrast => "AutoContrast",
            AugmentOp::Equalize => "Equalize",
        }
    }

    /// Plans the operation with magnitude `m` (torchvision's `_apply_image_or_video_transform`
    /// on a uint8 image); the warps sample with `interp` and fill with `fill`.
    pub fn plan(
        self,
        st: &mut PlanState,
        m: f64,
        interp: Interp,
        fill: Option<[f32; 3]>,
    ) -> Result<(), PlanError> {
        let shear = |shear: (f64, f64)| Affine {
            shear,
            interpolation: interp,
            fill,
            center: Some((0.0, 0.0)),
            ..Affine::identity()
        };
        let translate = |translate: (f64, f64)| Affine {
            translate,
            interpolation: interp,
            fill,
            ..Affine::identity()
        };
        let mut rng = SampleRng::new(0, 0, 0); // the fixed steps draw nothing
        let step = self.name();
        match self {
            AugmentOp::Identity => Ok(()),
            AugmentOp::ShearX => shear((m.atan().to_degrees(), 0.0)).plan(st, &mut rng),
            AugmentOp::ShearY => shear((0.0, m.atan().to_degrees())).plan(st, &mut rng),
            AugmentOp::TranslateX => translate((m.trunc(), 0.0)).plan(st, &mut rng),
            AugmentOp::TranslateY => translate((0.0, m.trunc())).plan(st, &mut rng),
            AugmentOp::Rotate => Rotate {
                angle: m,
                interpolation: interp,
                center: None,
                fill,
            }
            .plan(st, &mut rng),
            AugmentOp::Brightness => st.push_colour(step, ColourOp::Brightness(1.0 + m)),
            AugmentOp::Color => st.push_colour(step, ColourOp::Saturation(1.0 + m)),
            AugmentOp::Contrast => st.push_colour(step, ColourOp::Contrast(1.0 + m)),
            AugmentOp::Sharpness => st.push_colour(step, ColourOp::Sharpness(1.0 + m)),
            AugmentOp::Posterize => st.push_colour(step, ColourOp::Posterize(m as u8)),
            AugmentOp::Solarize => st.push_colour(step, ColourOp::Solarize(255.0 * m)),
            AugmentOp::AutoContrast => st.push_colour(step, ColourOp::Autocontrast),
            AugmentOp::Equalize => st.push_colour(step, ColourOp::Equalize),
        }
    }
}

/// `torch.linspace(start, end, steps)` in f32 as torch computes it on the CPU (the first half
/// from the start, the second from the end), each value as f64.
pub fn linspace_f32(start: f32, end: f32, steps: usize) -> Vec<f64> {
    if steps == 1 {
        return vec![f64::from(start)];
    }
    let step = (end - start) / (steps - 1) as f32;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            let v = if i < half {
                start + step * i as f32
            } else {
                end - step * (steps - i - 1) as f32
            };
            f64::from(v)
        })
        .collect()
}

/// torchvision's `TrivialAugmentWide`: one operation of its 14, uniformly, then (for the
/// operations with magnitudes) a bin of `num_magnitude_bins`, then (for the signed ones) a
/// sign, `torch.rand() <= 0.5` negative; in that order, per sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrivialAugmentWide {
    num_magnitude_bins: usize,
    interpolation: Interp,
    fill: Option<[f32; 3]>,
}

impl TrivialAugmentWide {
    /// The operations in torchvision's order (`_AUGMENTATION_SPACE`).
    pub const OPS: [AugmentOp; 14] = [
        AugmentOp::Identity,
        AugmentOp::ShearX,
        AugmentOp::ShearY,
        AugmentOp::TranslateX,
        AugmentOp::TranslateY,
        AugmentOp::Rotate,
        AugmentOp::Brightness,
        AugmentOp::Color,
        AugmentOp::Contrast,
        AugmentOp::Sharpness,
        AugmentOp::Posterize,
        AugmentOp::Solarize,
        AugmentOp::AutoContrast,
        AugmentOp::Equalize,
    ];

    /// torchvision's defaults: 31 bins, nearest, `fill=None`.
    pub fn new() -> TrivialAugmentWide {
        TrivialAugmentWide {
            num_magnitude_bins: 31,
            interpolation: Interp::Nearest,
            fill: None,
        }
    }

    /// `num_magnitude_bins` (at least 2), interpolation (nearest or bilinear), fill.
    pub fn with(
        num_magnitude_bins: usize,
        interpolation: Interp,
        fill: Option<[f32; 3]>,
    ) -> Result<TrivialAugmentWide, PlanError> {
        let err = |reason: String| PlanError::Step {
            step: "TrivialAugmentWide",
            reason,
        };
        if num_magnitude_bins < 2 {
            return Err(err(format!("num_magnitude_bins {num_magnitude_bins}")));
        }
        if !matches!(interpolation, Interp::Nearest | Interp::Bilinear) {
            return Err(err(format!("interpolation {interpolation:?}")));
        }
        if let Some(f) = fill
            && !f.iter().all(|v| (0.0..=255.0).contains(v))
        {
            return Err(err(format!("fill {f:?}")));
        }
        Ok(TrivialAugmentWide {
            num_magnitude_bins,
            interpolation,
            fill,
        })
    }

    /// The magnitudes of `op` (`None` for the operations without) and whether it is signed.
    pub fn magnitudes(&self, op: AugmentOp) -> (Option<Vec<f64>>, bool) {
        let n = self.num_magnitude_bins;
        match op {
            AugmentOp::Identity | AugmentOp::AutoContrast | AugmentOp::Equalize => (None, false),
            AugmentOp::TranslateX | AugmentOp::TranslateY => {
                (Some(linspace_f32(0.0, 32.0, n)), true)
            }
            AugmentOp::Rotate => (Some(linspace_f32(0.0, 135.0, n)), true),
            AugmentOp::Posterize => {
                // (8 - (arange(n) / ((n - 1) / 6))).round().int(), in f32.
                let div = ((n - 1) as f64 / 6.0) as f32;
                let bits = (0..n).map(|i| f64::from((8.0 - i as f32 / div).round_ties_even()));
                (Some(bits.collect()), false)
            }
            AugmentOp::Solarize => (Some(linspace_f32(1.0, 0.0, n)), false),
            _ => (Some(linspace_f32(0.0, 0.99, n)), true),
        }
    }

    /// The operation and magnitude torchvision's `forward` draws.
    pub fn draw(&self, rng: &mut SampleRng) -> (AugmentOp, f64) {
        let op = Self::OPS[rng.below(Self::OPS.len() as u64) as usize];
        let (magnitudes, signed) = self.magnitudes(op);
        let Some(magnitudes) = magnitudes else {
            return (op, 0.0);
        };
        let mut m = magnitudes[rng.below(self.num_magnitude_bins as u64) as usize];
        if signed && rng.uniform(0.0, 1.0) <= 0.5 {
            m = -m;
        }
        (op, m)
    }
}

impl Default for TrivialAugmentWide {
    fn default() -> TrivialAugmentWide {
        TrivialAugmentWide::new()
    }
}

impl Transform for TrivialAugmentWide {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let (op, m) = self.draw(rng);
        op.plan(st, m, self.interpolation, self.fill)
    }
}
