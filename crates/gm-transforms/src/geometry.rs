//! Affine and perspective warps with torchvision's names, arguments and draws: `Affine`,
//! `Rotate`, `Perspective` (torchvision.transforms.v2.functional's `affine`, `rotate`,
//! `perspective` with given parameters) and `RandomAffine`, `RandomRotation`,
//! `RandomPerspective` (their parameters drawn from the sample's [`SampleRng`] in
//! torchvision's order). Each folds into the plan's one sampling grid ([`Warp`]): the
//! crops, resizes and flips around it compose with its matrix, so the chain still samples
//! the source once.
//!
//! [`Warp`]: crate::Warp

use crate::plan::{PlanError, PlanState, SampleRng, Transform};
use crate::targets::GeoStep;
use crate::types::Interp;

/// A row-major 3x3 matrix.
pub(crate) type Mat3 = [f64; 9];

/// `a * b`.
pub(crate) fn mul(a: &Mat3, b: &Mat3) -> Mat3 {
    let mut out = [0.0; 9];
    for r in 0..3 {
        for c in 0..3 {
            out[3 * r + c] = (0..3).map(|k| a[3 * r + k] * b[3 * k + c]).sum();
        }
    }
    out
}

/// The affine matrix `[a, b, c, d, e, f]` with the last row (0, 0, 1).
pub(crate) fn affine(m: [f64; 6]) -> Mat3 {
    [m[0], m[1], m[2], m[3], m[4], m[5], 0.0, 0.0, 1.0]
}

fn err(step: &'static str, reason: impl Into<String>) -> PlanError {
    PlanError::Step {
        step,
        reason: reason.into(),
    }
}

/// torchvision's `_get_inverse_affine_matrix` (inverted): the 2x3 matrix from output to
/// input positions, both relative to the image centre, for a rotation by `angle` degrees
/// (counter-clockwise on screen for positive angles, as `F.affine`) about `center`, then a
/// translation, a scale and shears (degrees).
pub fn inverse_affine_matrix(
    center: (f64, f64),
    angle: f64,
    translate: (f64, f64),
    scale: f64,
    shear: (f64, f64),
) -> [f64; 6] {
    let rot = angle.to_radians();
    let (sx, sy) = (shear.0.to_radians(), shear.1.to_radians());
    let (cx, cy) = center;
    let (tx, ty) = translate;
    let cos_sy = sy.cos();
    let tan_sx = sx.tan();
    let rot_minus_sy = rot - sy;
    let (cx_plus_tx, cy_plus_ty) = (cx + tx, cy + ty);
    let a = rot_minus_sy.cos() / cos_sy;
    let b = -(a * tan_sx + rot.sin());
    let c = rot_minus_sy.sin() / cos_sy;
    let d = rot.cos() - c * tan_sx;
    let mut m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0];
    m[2] += cx - m[0] * cx_plus_tx - m[1] * cy_plus_ty;
    m[5] += cy - m[3] * cx_plus_tx - m[4] * cy_plus_ty;
    m
}

/// torchvision's `_affine_grid` for `m` (centre-relative, from [`inverse_affine_matrix`])
/// on a `w` x `h` image: the matrix rounded to f32 and divided by half the size in f32, the
/// output grid centred ([`Warp`](crate::Warp)'s matrix, origin and post).
fn affine_grid(m: [f64; 6], w: u32, h: u32) -> (Mat3, [f64; 2], f64) {
    let (hw, hh) = ((0.5 * f64::from(w)) as f32, (0.5 * f64::from(h)) as f32);
    let t = |k: usize, half: f32| f64::from(m[k] as f32 / half);
    let matrix = [
        t(0, hw),
        t(1, hw),
        t(2, hw),
        t(3, hh),
        t(4, hh),
        t(5, hh),
        0.0,
        0.0,
        1.0,
    ];
    let origin = [(1.0 - f64::from(w)) * 0.5, (1.0 - f64::from(h)) * 0.5];
    (matrix, origin, 0.0)
}

/// torchvision's `_perspective_grid` for coefficients `c` on a `w` x `h` image.
fn perspective_grid(c: [f32; 8], w: u32, h: u32) -> (Mat3, [f64; 2], f64) {
    let (hw, hh) = ((0.5 * f64::from(w)) as f32, (0.5 * f64::from(h)) as f32);
    let t = |k: usize, half: f32| f64::from(c[k] / half);
    let matrix = [
        t(0, hw),
        t(1, hw),
        t(2, hw),
        t(3, hh),
        t(4, hh),
        t(5, hh),
        f64::from(c[6]),
        f64::from(c[7]),
        1.0,
    ];
    (matrix, [0.5, 0.5], -1.0)
}

/// torchvision's `_get_perspective_coeffs`: the coefficients (a..h) that map each point of
/// `endpoints` to the matching point of `startpoints`, `x' = (ax + by + c) / (gx + hy + 1)`,
/// `y' = (dx + ey + f) / (gx + hy + 1)`, rounded to f32 as torchvision does. `None` when the
/// points are degenerate (three in a line).
pub fn perspective_coefficients(
    startpoints: [[f64; 2]; 4],
    endpoints: [[f64; 2]; 4],
) -> Option<[f32; 8]> {
    let mut a = [[0.0f64; 9]; 8];
    for (i, (p1, p2)) in endpoints.iter().zip(&startpoints).enumerate() {
        a[2 * i] = [
            p1[0],
            p1[1],
            1.0,
            0.0,
            0.0,
            0.0,
            -p2[0] * p1[0],
            -p2[0] * p1[1],
            p2[0],
        ];
        a[2 * i + 1] = [
            0.0,
            0.0,
            0.0,
            p1[0],
            p1[1],
            1.0,
            -p2[1] * p1[0],
            -p2[1] * p1[1],
            p2[1],
        ];
    }
    solve8(a).map(|x| x.map(|v| v as f32))
}

/// Gaussian elimination with partial pivoting on the augmented 8x9 system.
fn solve8(mut a: [[f64; 9]; 8]) -> Option<[f64; 8]> {
    for col in 0..8 {
        let pivot = (col..8).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        for row in 0..8 {
            if row != col {
                let f = a[row][col] / a[col][col];
                let pivot_row = a[col];
                for (v, p) in a[row].iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    let mut x = [0.0; 8];
    for (i, v) in x.iter_mut().enumerate() {
        *v = a[i][8] / a[i][i];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Checks a warp's interpolation (torchvision's grid warps take nearest or bilinear).
fn check_interp(step: &'static str, interp: Interp) -> Result<(), PlanError> {
    match interp {
        Interp::Nearest | Interp::Bilinear => Ok(()),
        other => Err(err(
            step,
            format!("interpolation {other:?}: warps sample nearest or bilinear"),
        )),
    }
}

fn check_fill(step: &'static str, fill: Option<[f32; 3]>) -> Result<(), PlanError> {
    let Some(fill) = fill else { return Ok(()) };
    if fill
        .iter()
        .all(|v| v.is_finite() && (0.0..=255.0).contains(v))
    {
        Ok(())
    } else {
        Err(err(step, format!("fill {fill:?} is not in 0..255")))
    }
}

/// `F.affine` with given parameters (torchvision.transforms.v2.functional): rotation by
/// `angle` degrees about `center` (the image centre when `None`; in pixels of the current
/// image, origin top-left), translation in pixels, scale, shear in degrees (x, y).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    /// Rotation in degrees.
    pub angle: f64,
    /// Translation in pixels (x, y).
    pub translate: (f64, f64),
    /// Scale factor (> 0).
    pub scale: f64,
    /// Shear in degrees (x, y).
    pub shear: (f64, f64),
    /// Nearest or bilinear.
    pub interpolation: Interp,
    /// Value of pixels mapped from outside the image, per RGB channel, 0..255; `None` is
    /// torchvision's functional default `fill=None` (zeros padding, no fill blend).
    pub fill: Option<[f32; 3]>,
    /// Centre of rotation in pixels; the image centre when `None`.
    pub center: Option<(f64, f64)>,
    /// Value of a mask's pixels mapped from outside (torchvision's fill for a `Mask`: the
    /// fill dict's Mask entry, or a single fill value; 0 by default).
    pub mask_fill: u8,
}

impl Affine {
    /// The identity with `RandomAffine`'s defaults (nearest, fill 0).
    pub fn identity() -> Affine {
        Affine {
            angle: 0.0,
            translate: (0.0, 0.0),
            scale: 1.0,
            shear: (0.0, 0.0),
            interpolation: Interp::Nearest,
            fill: Some([0.0; 3]),
            center: None,
            mask_fill: 0,
        }
    }
}

impl Transform for Affine {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        const STEP: &str = "Affine";
        check_interp(STEP, self.interpolation)?;
        check_fill(STEP, self.fill)?;
        let finite = [self.angle, self.translate.0, self.translate.1, self.shear.0]
            .iter()
            .chain(&[self.shear.1, self.scale])
            .all(|v| v.is_finite());
        if !finite || self.scale <= 0.0 {
            return Err(err(
                STEP,
                format!("{self:?}: scale must be positive, all finite"),
            ));
        }
        st.geometry.steps.push(GeoStep::Affine {
            angle: self.angle,
            translate: self.translate,
            scale: self.scale,
            shear: self.shear,
            center: self.center,
            mask_fill: self.mask_fill,
        });
        let (w, h) = (st.width, st.height);
        let center = self.center.map_or((0.0, 0.0), |(cx, cy)| {
            (cx - f64::from(w) * 0.5, cy - f64::from(h) * 0.5)
        });
        let m = inverse_affine_matrix(center, self.angle, self.translate, self.scale, self.shear);
        st.warp_current(STEP, affine_grid(m, w, h), self.interpolation, self.fill)
    }
}

/// `F.rotate` with a given angle (degrees, counter-clockwise), `expand=False`. Like
/// torchvision, a multiple of 360 degrees about the centre changes nothing and 180 degrees
/// about the centre is an exact half turn (both flips).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rotate {
    /// Angle in degrees.
    pub angle: f64,
    /// Nearest or bilinear.
    pub interpolation: Interp,
    /// Centre of rotation in pixels; the image centre when `None`.
    pub center: Option<(f64, f64)>,
    /// Value of pixels mapped from outside the image, per RGB channel, 0..255; `None` is
    /// torchvision's functional default `fill=None` (zeros padding, no fill blend).
    pub fill: Option<[f32; 3]>,
    /// Value of a mask's pixels mapped from outside (torchvision's fill for a `Mask`: the
    /// fill dict's Mask entry, or a single fill value; 0 by default).
    pub mask_fill: u8,
}

impl Transform for Rotate {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        const STEP: &str = "Rotate";
        check_interp(STEP, self.interpolation)?;
        check_fill(STEP, self.fill)?;
        if !self.angle.is_finite() {
            return Err(err(STEP, format!("angle {}", self.angle)));
        }
        // torchvision moves targets by the affine of -angle even where its image takes a
        // fast path below.
        let target_step = GeoStep::Rotate {
            angle: self.angle,
            center: self.center,
            mask_fill: self.mask_fill,
        };
        let angle = self.angle.rem_euclid(360.0);
        if self.center.is_none() {
            // torchvision's fast paths: a copy, or torch.rot90 twice.
            if angle == 0.0 {
                st.check_geometry(STEP)?;
                st.geometry.steps.push(target_step);
                return Ok(());
            }
            if angle == 180.0 {
                st.check_geometry(STEP)?;
                st.flip(true);
                st.flip(false);
                // The image's two flips, the targets' rotation.
                let n = st.geometry.steps.len();
                st.geometry.steps.truncate(n.saturating_sub(2));
                st.geometry.steps.push(target_step);
                return Ok(());
            }
        }
        st.geometry.steps.push(target_step);
        let (w, h) = (st.width, st.height);
        let center = self.center.map_or((0.0, 0.0), |(cx, cy)| {
            (cx - f64::from(w) * 0.5, cy - f64::from(h) * 0.5)
        });
        let m = inverse_affine_matrix(center, -angle, (0.0, 0.0), 1.0, (0.0, 0.0));
        st.warp_current(STEP, affine_grid(m, w, h), self.interpolation, self.fill)
    }
}

/// `F.perspective` with given coefficients (a..h, see [`perspective_coefficients`]): output
/// position (x, y) (pixel centres at +0.5) reads input position
/// `((ax + by + c) / (gx + hy + 1), (dx + ey + f) / (gx + hy + 1))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perspective {
    /// The eight coefficients.
    pub coefficients: [f32; 8],
    /// Nearest or bilinear.
    pub interpolation: Interp,
    /// Value of pixels mapped from outside the image, per RGB channel, 0..255; `None` is
    /// torchvision's functional default `fill=None` (zeros padding, no fill blend).
    pub fill: Option<[f32; 3]>,
    /// Value of a mask's pixels mapped from outside (torchvision's fill for a `Mask`: the
    /// fill dict's Mask entry, or a single fill value; 0 by default).
    pub mask_fill: u8,
}

impl Transform for Perspective {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        const STEP: &str = "Perspective";
        check_interp(STEP, self.interpolation)?;
        check_fill(STEP, self.fill)?;
        if !self.coefficients.iter().all(|v| v.is_finite()) {
            return Err(err(STEP, format!("coefficients {:?}", self.coefficients)));
        }
        st.geometry.steps.push(GeoStep::Perspective {
            coefficients: self.coefficients,
            mask_fill: self.mask_fill,
        });
        let grid = perspective_grid(self.coefficients, st.width, st.height);
        st.warp_current(STEP, grid, self.interpolation, self.fill)
    }
}

/// A range of degrees as torchvision's `_setup_angle`: a number `d` is `(-d, d)` and must be
/// non-negative.
fn angle_range(step: &'static str, degrees: f64) -> Result<(f64, f64), PlanError> {
    if degrees < 0.0 || !degrees.is_finite() {
        return Err(err(
            step,
            format!("degrees {degrees}: a single number must be non-negative"),
        ));
    }
    Ok((-degrees, degrees))
}

fn check_range(step: &'static str, name: &str, r: (f64, f64)) -> Result<(), PlanError> {
    if r.0.is_finite() && r.1.is_finite() && r.0 <= r.1 {
        Ok(())
    } else {
        Err(err(step, format!("{name} {r:?} is not a range")))
    }
}

/// Shear ranges in degrees: x, and y when four values were given.
type ShearRanges = ((f64, f64), Option<(f64, f64)>);

/// torchvision's `RandomAffine`: an angle uniform in `degrees`, then (when set) a translation
/// uniform in `±translate * size` rounded to whole pixels, a scale uniform in `scale`, a
/// shear x uniform in the first shear range and a shear y in the second; in that order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomAffine {
    degrees: (f64, f64),
    translate: Option<(f64, f64)>,
    scale: Option<(f64, f64)>,
    shear: Option<ShearRanges>,
    interpolation: Interp,
    fill: [f32; 3],
    center: Option<(f64, f64)>,
    mask_fill: u8,
}

impl RandomAffine {
    /// Rotation only, uniform in `-degrees..degrees` (torchvision's `RandomAffine(degrees)`):
    /// nearest, fill 0, about the centre.
    pub fn new(degrees: f64) -> Result<RandomAffine, PlanError> {
        RandomAffine::with_range(angle_range("RandomAffine", degrees)?)
    }

    /// Rotation uniform in `lo..hi` degrees (torchvision's `degrees=(lo, hi)`).
    pub fn with_range(degrees: (f64, f64)) -> Result<RandomAffine, PlanError> {
        check_range("RandomAffine", "degrees", degrees)?;
        Ok(RandomAffine {
            degrees,
            translate: None,
            scale: None,
            shear: None,
            interpolation: Interp::Nearest,
            fill: [0.0; 3],
            center: None,
            mask_fill: 0,
        })
    }

    /// Maximum translation as fractions of the width and the height (each in 0..1).
    pub fn translate(mut self, x: f64, y: f64) -> Result<RandomAffine, PlanError> {
        if !((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y)) {
            return Err(err(
                "RandomAffine",
                "translation values should be between 0 and 1",
            ));
        }
        self.translate = Some((x, y));
        Ok(self)
    }

    /// Scale uniform in `lo..hi` (both positive).
    pub fn scale(mut self, lo: f64, hi: f64) -> Result<RandomAffine, PlanError> {
        if !(lo > 0.0 && hi > 0.0) {
            return Err(err("RandomAffine", "scale values should be positive"));
        }
        check_range("RandomAffine", "scale", (lo, hi))?;
        self.scale = Some((lo, hi));
        Ok(self)
    }

    /// Shear as torchvision takes it: one number `s` (x in `-s..s`), two (x in `s0..s1`) or
    /// four (x in `s0..s1`, y in `s2..s3`), in degrees.
    pub fn shear(mut self, shear: &[f64]) -> Result<RandomAffine, PlanError> {
        const STEP: &str = "RandomAffine";
        let x = match shear.len() {
            1 => angle_range(STEP, shear[0])?,
            2 | 4 => (shear[0], shear[1]),
            n => {
                return Err(err(
                    STEP,
                    format!("shear should have 1, 2 or 4 values, got {n}"),
                ));
            }
        };
        check_range(STEP, "shear", x)?;
        let y = if shear.len() == 4 {
            check_range(STEP, "shear", (shear[2], shear[3]))?;
            Some((shear[2], shear[3]))
        } else {
            None
        };
        self.shear = Some((x, y));
        Ok(self)
    }

    /// Nearest (torchvision's default) or bilinear.
    pub fn interpolation(mut self, interp: Interp) -> Result<RandomAffine, PlanError> {
        check_interp("RandomAffine", interp)?;
        self.interpolation = interp;
        Ok(self)
    }

    /// Value of pixels mapped from outside the image, per RGB channel, 0..255.
    pub fn fill(mut self, fill: [f32; 3]) -> Result<RandomAffine, PlanError> {
        check_fill("RandomAffine", Some(fill))?;
        self.fill = fill;
        Ok(self)
    }

    /// Value of a mask's pixels mapped from outside the image (torchvision's fill for a
    /// `Mask`; 0 by default).
    #[must_use]
    pub fn mask_fill(mut self, value: u8) -> Self {
        self.mask_fill = value;
        self
    }

    /// Centre of rotation in pixels of the image the step sees (origin top-left).
    #[must_use]
    pub fn center(mut self, x: f64, y: f64) -> RandomAffine {
        self.center = Some((x, y));
        self
    }

    /// The parameters torchvision's `make_params` draws for a `width` x `height` image, as an
    /// [`Affine`].
    pub fn draw(&self, width: u32, height: u32, rng: &mut SampleRng) -> Affine {
        let angle = rng.uniform(self.degrees.0, self.degrees.1);
        let translate = self.translate.map_or((0.0, 0.0), |(fx, fy)| {
            let (dx, dy) = (fx * f64::from(width), fy * f64::from(height));
            let tx = rng.uniform(-dx, dx).round_ties_even();
            let ty = rng.uniform(-dy, dy).round_ties_even();
            (tx, ty)
        });
        let scale = self.scale.map_or(1.0, |(lo, hi)| rng.uniform(lo, hi));
        let shear = self.shear.map_or((0.0, 0.0), |(x, y)| {
            let sx = rng.uniform(x.0, x.1);
            let sy = y.map_or(0.0, |y| rng.uniform(y.0, y.1));
            (sx, sy)
        });
        Affine {
            angle,
            translate,
            scale,
            shear,
            interpolation: self.interpolation,
            fill: Some(self.fill),
            center: self.center,
            mask_fill: self.mask_fill,
        }
    }
}

impl Transform for RandomAffine {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        self.draw(st.width, st.height, rng).plan(st, rng)
    }
}

/// torchvision's `RandomRotation` (`expand=False`; expanding is not supported): an angle
/// uniform in `degrees`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomRotation {
    degrees: (f64, f64),
    interpolation: Interp,
    center: Option<(f64, f64)>,
    fill: [f32; 3],
    mask_fill: u8,
}

impl RandomRotation {
    /// An angle uniform in `-degrees..degrees`: nearest, fill 0, about the centre.
    pub fn new(degrees: f64) -> Result<RandomRotation, PlanError> {
        RandomRotation::with_range(angle_range("RandomRotation", degrees)?)
    }

    /// An angle uniform in `lo..hi` degrees.
    pub fn with_range(degrees: (f64, f64)) -> Result<RandomRotation, PlanError> {
        check_range("RandomRotation", "degrees", degrees)?;
        Ok(RandomRotation {
            degrees,
            interpolation: Interp::Nearest,
            center: None,
            fill: [0.0; 3],
            mask_fill: 0,
        })
    }

    /// Nearest (torchvision's default) or bilinear.
    pub fn interpolation(mut self, interp: Interp) -> Result<RandomRotation, PlanError> {
        check_interp("RandomRotation", interp)?;
        self.interpolation = interp;
        Ok(self)
    }

    /// Value of pixels mapped from outside the image, per RGB channel, 0..255.
    pub fn fill(mut self, fill: [f32; 3]) -> Result<RandomRotation, PlanError> {
        check_fill("RandomRotation", Some(fill))?;
        self.fill = fill;
        Ok(self)
    }

    /// Value of a mask's pixels mapped from outside the image (torchvision's fill for a
    /// `Mask`; 0 by default).
    #[must_use]
    pub fn mask_fill(mut self, value: u8) -> Self {
        self.mask_fill = value;
        self
    }

    /// Centre of rotation in pixels of the image the step sees (origin top-left).
    #[must_use]
    pub fn center(mut self, x: f64, y: f64) -> RandomRotation {
        self.center = Some((x, y));
        self
    }
}

impl Transform for RandomRotation {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        Rotate {
            angle: rng.uniform(self.degrees.0, self.degrees.1),
            interpolation: self.interpolation,
            center: self.center,
            fill: Some(self.fill),
            mask_fill: self.mask_fill,
        }
        .plan(st, rng)
    }
}

/// torchvision's `RandomPerspective`: with probability `p`, each corner moves inwards by up
/// to `distortion_scale` of half the size (corners drawn top-left, top-right, bottom-right,
/// bottom-left, x then y, as torchvision's `make_params`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomPerspective {
    distortion_scale: f64,
    p: f64,
    interpolation: Interp,
    fill: [f32; 3],
    mask_fill: u8,
}

impl RandomPerspective {
    /// torchvision's arguments: `distortion_scale` and `p` in 0..1; bilinear, fill 0.
    pub fn new(distortion_scale: f64, p: f64) -> Result<RandomPerspective, PlanError> {
        const STEP: &str = "RandomPerspective";
        if !(0.0..=1.0).contains(&distortion_scale) {
            return Err(err(
                STEP,
                "Argument distortion_scale value should be between 0 and 1",
            ));
        }
        if !(0.0..=1.0).contains(&p) {
            return Err(err(STEP, format!("probability p {p} is not in 0..1")));
        }
        Ok(RandomPerspective {
            distortion_scale,
            p,
            interpolation: Interp::Bilinear,
            fill: [0.0; 3],
            mask_fill: 0,
        })
    }

    /// Nearest or bilinear (torchvision's default).
    pub fn interpolation(mut self, interp: Interp) -> Result<RandomPerspective, PlanError> {
        check_interp("RandomPerspective", interp)?;
        self.interpolation = interp;
        Ok(self)
    }

    /// Value of pixels mapped from outside the image, per RGB channel, 0..255.
    pub fn fill(mut self, fill: [f32; 3]) -> Result<RandomPerspective, PlanError> {
        check_fill("RandomPerspective", Some(fill))?;
        self.fill = fill;
        Ok(self)
    }

    /// Value of a mask's pixels mapped from outside the image (torchvision's fill for a
    /// `Mask`; 0 by default).
    #[must_use]
    pub fn mask_fill(mut self, value: u8) -> Self {
        self.mask_fill = value;
        self
    }

    /// The end points torchvision draws for a `width` x `height` image (the start points
    /// are the corners), after the `p` draw; `None` when the step does nothing.
    pub fn draw(&self, width: u32, height: u32, rng: &mut SampleRng) -> Option<[[f64; 2]; 4]> {
        if !rng.bernoulli(self.p) {
            return None;
        }
        let (w, h) = (u64::from(width), u64::from(height));
        let bound_h = (self.distortion_scale * (h / 2) as f64) as u64 + 1;
        let bound_w = (self.distortion_scale * (w / 2) as f64) as u64 + 1;
        // torch.randint(lo, hi): uniform in lo..hi; the bounds never pass the size.
        let mut low = |n: u64| rng.below(n) as f64;
        let tl = [low(bound_w), low(bound_h)];
        let tr = [(w - bound_w) as f64 + low(bound_w), low(bound_h)];
        let br = [
            (w - bound_w) as f64 + low(bound_w),
            (h - bound_h) as f64 + low(bound_h),
        ];
        let bl = [low(bound_w), (h - bound_h) as f64 + low(bound_h)];
        Some([tl, tr, br, bl])
    }
}

/// The corners of a `width` x `height` image as torchvision's perspective start points.
pub fn corners(width: u32, height: u32) -> [[f64; 2]; 4] {
    let (w, h) = (f64::from(width) - 1.0, f64::from(height) - 1.0);
    [[0.0, 0.0], [w, 0.0], [w, h], [0.0, h]]
}

impl Transform for RandomPerspective {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if st.width < 2 || st.height < 2 {
            return Err(err("RandomPerspective", "an image under 2x2 pixels"));
        }
        let Some(end) = self.draw(st.width, st.height, rng) else {
            return Ok(());
        };
        let coefficients = perspective_coefficients(corners(st.width, st.height), end)
            .ok_or_else(|| err("RandomPerspective", format!("degenerate corners {end:?}")))?;
        Perspective {
            coefficients,
            interpolation: self.interpolation,
            fill: Some(self.fill),
            mask_fill: self.mask_fill,
        }
        .plan(st, rng)
    }
}
