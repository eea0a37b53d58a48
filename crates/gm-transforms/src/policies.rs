//! Augmentation policies with torchvision's operation lists, magnitude bins and sampling,
//! built from the warps ([`crate::geometry`]) and the colour operations ([`ColourOp`]):
//! [`TrivialAugmentWide`] (one operation), [`RandAugment`] and [`AutoAugment`] (sequences of
//! operations, planned by [`plan_sequence`]), drawn per sample from the [`SampleRng`].

use crate::colour::ColourOp;
use crate::geometry::{Affine, Rotate};
use crate::plan::{PlanError, PlanState, SampleRng, Transform};
pub use crate::policy_sequence::plan_sequence;
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
    /// `F.invert` (AutoAugment's policies only).
    Invert,
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
            AugmentOp::Invert => "Invert",
        }
    }

    /// The colour operation of the operation with magnitude `m`; `None` for the warps and
    /// the identity.
    pub fn colour(self, m: f64) -> Option<ColourOp> {
        Some(match self {
            AugmentOp::Identity
            | AugmentOp::ShearX
            | AugmentOp::ShearY
            | AugmentOp::TranslateX
            | AugmentOp::TranslateY
            | AugmentOp::Rotate => return None,
            AugmentOp::Brightness => ColourOp::Brightness(1.0 + m),
            AugmentOp::Color => ColourOp::Saturation(1.0 + m),
            AugmentOp::Contrast => ColourOp::Contrast(1.0 + m),
            AugmentOp::Sharpness => ColourOp::Sharpness(1.0 + m),
            AugmentOp::Posterize => ColourOp::Posterize(m as u8),
            AugmentOp::Solarize => ColourOp::Solarize(255.0 * m),
            AugmentOp::AutoContrast => ColourOp::Autocontrast,
            AugmentOp::Equalize => ColourOp::Equalize,
            AugmentOp::Invert => ColourOp::Invert,
        })
    }

    /// Whether the operation is a warp (shear, translation, rotation).
    pub fn is_geometric(self) -> bool {
        matches!(
            self,
            AugmentOp::ShearX
                | AugmentOp::ShearY
                | AugmentOp::TranslateX
                | AugmentOp::TranslateY
                | AugmentOp::Rotate
        )
    }

    /// The operation's name in torchvision (`"ShearX"`...), `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<AugmentOp> {
        ALL_OPS.iter().copied().find(|op| op.name() == name)
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
                mask_fill: 0,
            }
            .plan(st, &mut rng),
            _ => match self.colour(m) {
                Some(op) => st.push_colour(step, op),
                None => Ok(()),
            },
        }
    }
}

/// `torch.linspace(start, end, steps)` in f32 as torch computes it on the CPU (the first half
/// from the start, the second from the end, each value one fused multiply-add), each value as
/// f64. Checked against torch for every table of the policies (tests/policies.rs).
pub fn linspace_f32(start: f32, end: f32, steps: usize) -> Vec<f64> {
    if steps == 1 {
        return vec![f64::from(start)];
    }
    let step = (end - start) / (steps - 1) as f32;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            let v = if i < half {
                step.mul_add(i as f32, start)
            } else {
                (-step).mul_add((steps - i - 1) as f32, end)
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

/// Every operation: RandAugment's 14 in torchvision's order, then AutoAugment's `Invert`.
const ALL_OPS: [AugmentOp; 15] = [
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
    AugmentOp::Invert,
];

/// The magnitudes of `op` in `RandAugment`'s and `AutoAugment`'s `_AUGMENTATION_SPACE` (they
/// are the same) with `n` bins for a `width` x `height` image (`None` for the operations
/// without), and whether the operation is signed.
pub fn standard_magnitudes(
    op: AugmentOp,
    n: usize,
    width: u32,
    height: u32,
) -> (Option<Vec<f64>>, bool) {
    // torch.linspace takes the Python float end as f32.
    let translate = |size: u32| linspace_f32(0.0, (150.0 / 331.0 * f64::from(size)) as f32, n);
    match op {
        AugmentOp::Identity | AugmentOp::AutoContrast | AugmentOp::Equalize | AugmentOp::Invert => {
            (None, false)
        }
        AugmentOp::ShearX | AugmentOp::ShearY => (Some(linspace_f32(0.0, 0.3, n)), true),
        AugmentOp::TranslateX => (Some(translate(width)), true),
        AugmentOp::TranslateY => (Some(translate(height)), true),
        AugmentOp::Rotate => (Some(linspace_f32(0.0, 30.0, n)), true),
        AugmentOp::Posterize => {
            // (8 - (arange(n) / ((n - 1) / 4))).round().int(), in f32.
            let div = ((n - 1) as f64 / 4.0) as f32;
            let bits = (0..n).map(|i| f64::from((8.0 - i as f32 / div).round_ties_even()));
            (Some(bits.collect()), false)
        }
        AugmentOp::Solarize => (Some(linspace_f32(1.0, 0.0, n)), false),
        AugmentOp::Brightness | AugmentOp::Color | AugmentOp::Contrast | AugmentOp::Sharpness => {
            (Some(linspace_f32(0.0, 0.9, n)), true)
        }
    }
}

/// The magnitude of bin `bin` of `op` (`standard_magnitudes`), negated when the operation is
/// signed and `rand() <= 0.5` (drawn only then, as torchvision's `forward`).
fn signed_magnitude(
    op: AugmentOp,
    bins: usize,
    bin: usize,
    (width, height): (u32, u32),
    rng: &mut SampleRng,
) -> f64 {
    let (table, signed) = standard_magnitudes(op, bins, width, height);
    let Some(m) = table.and_then(|t| t.get(bin).copied()) else {
        return 0.0;
    };
    if signed && rng.uniform(0.0, 1.0) <= 0.5 {
        -m
    } else {
        m
    }
}

/// Checks the arguments the policies share: interpolation (nearest or bilinear) and fill.
fn check_common(
    step: &'static str,
    interpolation: Interp,
    fill: Option<[f32; 3]>,
) -> Result<(), PlanError> {
    let err = |reason: String| PlanError::Step { step, reason };
    if !matches!(interpolation, Interp::Nearest | Interp::Bilinear) {
        return Err(err(format!(
            "interpolation {interpolation:?}: the warps sample nearest or bilinear"
        )));
    }
    if let Some(f) = fill
        && !f.iter().all(|v| (0.0..=255.0).contains(v))
    {
        return Err(err(format!("fill {f:?} is not in 0..255")));
    }
    Ok(())
}

/// torchvision's `RandAugment`: per sample, `num_ops` times, one of its 14 operations
/// uniformly, then (for the signed operations with magnitudes) a sign, `rand() <= 0.5`
/// negative; the magnitude is bin `magnitude` of `num_magnitude_bins`. The operations apply
/// in sequence ([`plan_sequence`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandAugment {
    num_ops: usize,
    magnitude: usize,
    num_magnitude_bins: usize,
    interpolation: Interp,
    fill: Option<[f32; 3]>,
}

impl RandAugment {
    /// The operations in torchvision's order (`_AUGMENTATION_SPACE`).
    pub const OPS: [AugmentOp; 14] = TrivialAugmentWide::OPS;

    /// torchvision's defaults: 2 operations, magnitude 9 of 31 bins, nearest, `fill=None`.
    pub fn new() -> RandAugment {
        RandAugment {
            num_ops: 2,
            magnitude: 9,
            num_magnitude_bins: 31,
            interpolation: Interp::Nearest,
            fill: None,
        }
    }

    /// torchvision's arguments: `num_ops` (at most 8, the colour operations a plan holds),
    /// `magnitude` (a bin below `num_magnitude_bins`, where torchvision fails on the first
    /// sample), `num_magnitude_bins` (at least 2), interpolation (nearest or bilinear), fill.
    pub fn with(
        num_ops: usize,
        magnitude: usize,
        num_magnitude_bins: usize,
        interpolation: Interp,
        fill: Option<[f32; 3]>,
    ) -> Result<RandAugment, PlanError> {
        const STEP: &str = "RandAugment";
        let err = |reason: String| PlanError::Step { step: STEP, reason };
        if num_ops > crate::colour::MAX_COLOUR_OPS {
            return Err(err(format!(
                "num_ops {num_ops}: a plan holds at most {} operations",
                crate::colour::MAX_COLOUR_OPS
            )));
        }
        if num_magnitude_bins < 2 {
            return Err(err(format!(
                "num_magnitude_bins {num_magnitude_bins}: at least 2"
            )));
        }
        if magnitude >= num_magnitude_bins {
            return Err(err(format!(
                "magnitude {magnitude} is not a bin of num_magnitude_bins {num_magnitude_bins}"
            )));
        }
        check_common(STEP, interpolation, fill)?;
        Ok(RandAugment {
            num_ops,
            magnitude,
            num_magnitude_bins,
            interpolation,
            fill,
        })
    }

    /// The operations and magnitudes torchvision's `forward` draws for a `width` x `height`
    /// image, in the order they apply.
    pub fn draw(&self, width: u32, height: u32, rng: &mut SampleRng) -> Vec<(AugmentOp, f64)> {
        (0..self.num_ops)
            .map(|_| {
                let op = Self::OPS[rng.below(Self::OPS.len() as u64) as usize];
                let bins = self.num_magnitude_bins;
                let m = signed_magnitude(op, bins, self.magnitude, (width, height), rng);
                (op, m)
            })
            .collect()
    }
}

impl Default for RandAugment {
    fn default() -> RandAugment {
        RandAugment::new()
    }
}

impl Transform for RandAugment {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let ops = self.draw(st.width, st.height, rng);
        plan_sequence(st, "RandAugment", &ops, self.interpolation, self.fill)
    }
}

/// The learned policies of `AutoAugment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoAugmentPolicy {
    /// `AutoAugmentPolicy.IMAGENET` (torchvision's default).
    #[default]
    ImageNet,
    /// `AutoAugmentPolicy.CIFAR10`.
    Cifar10,
    /// `AutoAugmentPolicy.SVHN`.
    Svhn,
}

/// One step of a sub-policy: operation, probability, magnitude bin (of 10).
pub type SubPolicyStep = (AugmentOp, f64, Option<usize>);

impl AutoAugmentPolicy {
    /// The 25 sub-policies of two steps, as torchvision's `_get_policies` lists them.
    pub fn sub_policies(self) -> &'static [[SubPolicyStep; 2]; 25] {
        match self {
            AutoAugmentPolicy::ImageNet => &crate::policy_tables::IMAGENET,
            AutoAugmentPolicy::Cifar10 => &crate::policy_tables::CIFAR10,
            AutoAugmentPolicy::Svhn => &crate::policy_tables::SVHN,
        }
    }
}

/// torchvision's `AutoAugment`: per sample, one of the policy's 25 sub-policies uniformly,
/// then for each of its two steps a `rand() <= probability` draw and, when it applies and is
/// signed, a sign (`rand() <= 0.5` negative); magnitudes from 10 bins. The applied steps run
/// in sequence ([`plan_sequence`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoAugment {
    policy: AutoAugmentPolicy,
    interpolation: Interp,
    fill: Option<[f32; 3]>,
}

impl AutoAugment {
    /// The magnitude bins AutoAugment's `forward` uses.
    pub const BINS: usize = 10;

    /// torchvision's defaults: the ImageNet policy, nearest, `fill=None`.
    pub fn new() -> AutoAugment {
        AutoAugment {
            policy: AutoAugmentPolicy::ImageNet,
            interpolation: Interp::Nearest,
            fill: None,
        }
    }

    /// torchvision's arguments: policy, interpolation (nearest or bilinear), fill.
    pub fn with(
        policy: AutoAugmentPolicy,
        interpolation: Interp,
        fill: Option<[f32; 3]>,
    ) -> Result<AutoAugment, PlanError> {
        check_common("AutoAugment", interpolation, fill)?;
        Ok(AutoAugment {
            policy,
            interpolation,
            fill,
        })
    }

    /// The sub-policy index and the steps torchvision's `forward` applies for a `width` x
    /// `height` image, in order.
    pub fn draw(
        &self,
        width: u32,
        height: u32,
        rng: &mut SampleRng,
    ) -> (usize, Vec<(AugmentOp, f64)>) {
        let policies = self.policy.sub_policies();
        let k = rng.below(policies.len() as u64) as usize;
        let mut ops = Vec::with_capacity(2);
        for &(op, p, bin) in &policies[k] {
            if rng.uniform(0.0, 1.0) > p {
                continue;
            }
            let m = bin.map_or(0.0, |b| {
                signed_magnitude(op, Self::BINS, b, (width, height), rng)
            });
            ops.push((op, m));
        }
        (k, ops)
    }
}

impl Default for AutoAugment {
    fn default() -> AutoAugment {
        AutoAugment::new()
    }
}

impl Transform for AutoAugment {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let (_, ops) = self.draw(st.width, st.height, rng);
        plan_sequence(st, "AutoAugment", &ops, self.interpolation, self.fill)
    }
}
