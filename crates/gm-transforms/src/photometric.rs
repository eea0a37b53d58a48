//! The photometric steps in torchvision.transforms.v2's names and arguments: each draws its
//! parameters per sample from the [`SampleRng`] (so every image of a sample, the frames of a
//! clip, gets the same draws) and appends [`ColourOp`]s to the plan.

use crate::colour::ColourOp;
use crate::plan::{PlanError, PlanState, SampleRng, Transform};

/// torchvision's `ColorJitter(brightness, contrast, saturation, hue)`: each present factor is
/// drawn uniformly from its range, and the four are applied in a random order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColorJitter {
    /// Range of the brightness factor, or `None` to leave brightness alone.
    pub brightness: Option<(f64, f64)>,
    /// Range of the contrast factor.
    pub contrast: Option<(f64, f64)>,
    /// Range of the saturation factor.
    pub saturation: Option<(f64, f64)>,
    /// Range of the hue shift, within -0.5..=0.5.
    pub hue: Option<(f64, f64)>,
}

impl ColorJitter {
    /// The scalar form: brightness, contrast and saturation factors from
    /// `max(0, 1 - x)..=1 + x`, the hue shift from `-hue..=hue` (torchvision's `_check_input`;
    /// 0 leaves that property alone).
    pub fn new(
        brightness: f64,
        contrast: f64,
        saturation: f64,
        hue: f64,
    ) -> Result<ColorJitter, PlanError> {
        let factor = |x: f64, name: &str| range_around(x, 1.0, true, name);
        let jitter = ColorJitter {
            brightness: factor(brightness, "brightness")?,
            contrast: factor(contrast, "contrast")?,
            saturation: factor(saturation, "saturation")?,
            hue: range_around(hue, 0.0, false, "hue")?,
        };
        jitter.check()?;
        Ok(jitter)
    }

    /// Checks the ranges as torchvision's constructor does.
    fn check(&self) -> Result<(), PlanError> {
        let ordered = |r: Option<(f64, f64)>, lo: f64, hi: f64| {
            r.is_none_or(|(a, b)| lo <= a && a <= b && b <= hi)
        };
        let inf = f64::INFINITY;
        if ordered(self.brightness, 0.0, inf)
            && ordered(self.contrast, 0.0, inf)
            && ordered(self.saturation, 0.0, inf)
            && ordered(self.hue, -0.5, 0.5)
        {
            return Ok(());
        }
        Err(jitter_error(format!(
            "ranges {self:?}: factors must be increasing and >= 0, hue within -0.5..=0.5"
        )))
    }
}

fn jitter_error(reason: String) -> PlanError {
    PlanError::Step {
        step: "ColorJitter",
        reason,
    }
}

/// `center - x ..= center + x` (the low end clipped at 0 for factors); `None` for 0.
fn range_around(
    x: f64,
    center: f64,
    clip: bool,
    name: &str,
) -> Result<Option<(f64, f64)>, PlanError> {
    if !(x >= 0.0 && x.is_finite()) {
        return Err(jitter_error(format!(
            "{name} {x} must be a non-negative number"
        )));
    }
    let lo = if clip {
        (center - x).max(0.0)
    } else {
        center - x
    };
    Ok((x != 0.0).then_some((lo, center + x)))
}

/// A factor drawn like `torch.empty(1).uniform_(lo, hi)`: a float32 value.
fn draw(rng: &mut SampleRng, range: Option<(f64, f64)>) -> Option<f64> {
    range.map(|(lo, hi)| f64::from(rng.uniform(lo, hi) as f32))
}

/// `torch.randperm(4)`'s role: a uniformly random order of the four adjustments.
fn random_order(rng: &mut SampleRng) -> [usize; 4] {
    let mut order = [0, 1, 2, 3];
    for i in (1..4).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    order
}

impl Transform for ColorJitter {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        self.check()?;
        // torchvision's draw order: the permutation, then b, c, s, h.
        let order = random_order(rng);
        let factors = [
            draw(rng, self.brightness).map(ColourOp::Brightness),
            draw(rng, self.contrast).map(ColourOp::Contrast),
            draw(rng, self.saturation).map(ColourOp::Saturation),
            draw(rng, self.hue).map(ColourOp::Hue),
        ];
        for i in order {
            if let Some(op) = factors[i] {
                st.push_colour("ColorJitter", op)?;
            }
        }
        Ok(())
    }
}

/// Appends `op` with probability `p` (torchvision's `Random*` colour steps).
fn maybe(
    st: &mut PlanState,
    rng: &mut SampleRng,
    step: &'static str,
    p: f64,
    op: ColourOp,
) -> Result<(), PlanError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(PlanError::Step {
            step,
            reason: format!("probability {p} is not within 0..=1"),
        });
    }
    if rng.bernoulli(p) {
        st.push_colour(step, op)?;
    }
    Ok(())
}

/// torchvision's `RandomGrayscale(p)`: with probability `p`, every channel becomes the
/// pixel's grey (three channels kept).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomGrayscale(pub f64);

impl Transform for RandomGrayscale {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        maybe(st, rng, "RandomGrayscale", self.0, ColourOp::Grayscale)
    }
}

/// torchvision's `RandomInvert(p)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomInvert(pub f64);

impl Transform for RandomInvert {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        maybe(st, rng, "RandomInvert", self.0, ColourOp::Invert)
    }
}

/// torchvision's `RandomAutocontrast(p)`: each channel stretched from its min..max over the
/// image (after the geometry and the colour steps before it) to 0..255.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomAutocontrast(pub f64);

impl Transform for RandomAutocontrast {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        maybe(
            st,
            rng,
            "RandomAutocontrast",
            self.0,
            ColourOp::Autocontrast,
        )
    }
}

/// torchvision's `RandomEqualize(p)`: each channel mapped through its histogram's cumulative
/// distribution over the image (after the geometry and the colour steps before it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomEqualize(pub f64);

impl Transform for RandomEqualize {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        maybe(st, rng, "RandomEqualize", self.0, ColourOp::Equalize)
    }
}

/// torchvision's `RandomAdjustSharpness(sharpness_factor, p)`: blends with the 3x3 smoothed
/// image (0 blurs, 1 keeps, 2 doubles the detail); once per chain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomAdjustSharpness {
    /// The factor, 0 or more.
    pub sharpness_factor: f64,
    /// Probability.
    pub p: f64,
}

impl Transform for RandomAdjustSharpness {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let f = self.sharpness_factor;
        if !(f >= 0.0 && f.is_finite()) {
            return Err(PlanError::Step {
                step: "RandomAdjustSharpness",
                reason: format!("sharpness_factor {f} is not a non-negative number"),
            });
        }
        maybe(
            st,
            rng,
            "RandomAdjustSharpness",
            self.p,
            ColourOp::Sharpness(f),
        )
    }
}

/// torchvision's `RandomSolarize(threshold, p)`: values at or above `threshold` (0..=255)
/// are inverted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomSolarize {
    /// Threshold in pixel values.
    pub threshold: f64,
    /// Probability.
    pub p: f64,
}

impl Transform for RandomSolarize {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if self.threshold.is_nan() || self.threshold > 255.0 {
            return Err(PlanError::Step {
                step: "RandomSolarize",
                reason: format!("threshold {} is above 255", self.threshold),
            });
        }
        let op = ColourOp::Solarize(self.threshold);
        maybe(st, rng, "RandomSolarize", self.p, op)
    }
}

/// torchvision's `RandomPosterize(bits, p)`: keeps the top `bits` (0..=8) bits of each value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomPosterize {
    /// Bits kept.
    pub bits: u8,
    /// Probability.
    pub p: f64,
}

impl Transform for RandomPosterize {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if self.bits > 8 {
            return Err(PlanError::Step {
                step: "RandomPosterize",
                reason: format!("bits {} is not within 0..=8", self.bits),
            });
        }
        maybe(
            st,
            rng,
            "RandomPosterize",
            self.p,
            ColourOp::Posterize(self.bits),
        )
    }
}
