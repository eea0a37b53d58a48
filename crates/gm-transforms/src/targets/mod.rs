//! Detection and pose targets through the same geometry as their image: bounding boxes and
//! keypoints moved by every geometric step a plan drew (crops, resizes, flips, pads, affine
//! warps and rotations), the way torchvision.transforms.v2 moves its `tv_tensors`.
//!
//! Planning an image records its geometry ([`PlanState::geometry`]) step by step as
//! torchvision applies it to targets: each step on the image as it is then, so a crop after a
//! flip crops the flipped image. [`TargetGeometry`] then replays those steps on the targets,
//! with torchvision's float32 arithmetic (boxes clamped to the canvas after crops, pads and
//! warps, not after resizes and flips; keypoints never clamped). Targets cost nothing on the
//! GPU: a few floats per object, moved on the host beside the plan.
//!
//! [`PlanState::geometry`]: crate::PlanState::geometry

mod boxes;
mod keypoints;
mod mask_axes;
mod mask_runs;
mod mask_stack;
mod masks;

pub use boxes::{BoundingBoxes, BoxFormat, SanitizeBoundingBoxes};
pub use keypoints::KeyPoints;
pub use mask_runs::MaskRuns;
pub use mask_stack::{MaskStack, MaskTaps};
pub use masks::Mask;

/// One geometric step as torchvision applies it to targets, in the coordinates of the image
/// the step sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GeoStep {
    /// `F.crop(top, left, height, width)`: the region kept (it may reach outside: padding).
    Crop {
        /// Left edge.
        left: f32,
        /// Top edge.
        top: f32,
        /// Width kept.
        width: u32,
        /// Height kept.
        height: u32,
    },
    /// `F.resize` to this width and height.
    Resize {
        /// New width.
        width: u32,
        /// New height.
        height: u32,
    },
    /// `F.horizontal_flip` (`true`) or `F.vertical_flip`.
    Flip {
        /// Left-right.
        horizontal: bool,
    },
    /// `F.pad` with a constant: pixels added on each side; masks get `mask_fill` there (the
    /// fill torchvision gives a `Mask`: a Pad's or RandomCrop's own, 0 where CenterCrop or
    /// FixedSizeCrop pad).
    Pad {
        /// Left.
        left: u32,
        /// Top.
        top: u32,
        /// Right.
        right: u32,
        /// Bottom.
        bottom: u32,
        /// Value of a mask's new pixels.
        mask_fill: u8,
    },
    /// `F.rotate` (`expand=False`): targets move by the affine of `-angle`; masks take
    /// torchvision's fast paths (a copy, a half turn, quarter turns of a square).
    Rotate {
        /// Angle in degrees, counter-clockwise.
        angle: f64,
        /// Centre in pixels (the image centre when `None`).
        center: Option<(f64, f64)>,
        /// Value of a mask's pixels mapped from outside.
        mask_fill: u8,
    },
    /// `F.affine`, `expand=False`.
    Affine {
        /// Rotation in degrees.
        angle: f64,
        /// Translation in pixels.
        translate: (f64, f64),
        /// Scale.
        scale: f64,
        /// Shear in degrees.
        shear: (f64, f64),
        /// Centre in pixels (the image centre when `None`).
        center: Option<(f64, f64)>,
        /// Value of a mask's pixels mapped from outside.
        mask_fill: u8,
    },
    /// `F.perspective` with these coefficients (output position to input position, as
    /// [`crate::Perspective`] holds them); targets go through its inverse.
    Perspective {
        /// a..h.
        coefficients: [f32; 8],
        /// Value of a mask's pixels mapped from outside.
        mask_fill: u8,
    },
    /// RandomIoUCrop's mark before its crop: boxes whose centre is not strictly inside
    /// `left < x < right`, `top < y < bottom` become all zeros (torchvision zeroes them after
    /// the crop, which clamps zeros to zeros), for a later sanitize to drop.
    ZeroOutside {
        /// Left edge of the crop.
        left: f32,
        /// Top edge.
        top: f32,
        /// Right edge.
        right: f32,
        /// Bottom edge.
        bottom: f32,
    },
    /// Objects that fail `rule` here are dropped with their labels, masks and keypoints
    /// ([`TargetGeometry::kept`]); the canvas and the kept boxes do not change.
    Keep(KeepRule),
}

/// Which objects a [`GeoStep::Keep`] keeps, judged by their boxes at that step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeepRule {
    /// Boxes with some width and height (torchvision's detection references' FixedSizeCrop:
    /// `x1 < x2 and y1 < y2` after its crop).
    NonEmpty,
    /// torchvision's `SanitizeBoundingBoxes`.
    Sanitize(SanitizeBoundingBoxes),
}

/// The geometry one image went through: its size, then each step in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TargetGeometry {
    /// The source's width and height.
    pub source: (u32, u32),
    /// The steps, in order.
    pub steps: Vec<GeoStep>,
}

impl TargetGeometry {
    /// No step yet on a `width` x `height` image.
    pub fn new(width: u32, height: u32) -> TargetGeometry {
        TargetGeometry {
            source: (width, height),
            steps: Vec::new(),
        }
    }

    /// The canvas (width, height) after every step.
    pub fn canvas(&self) -> (u32, u32) {
        self.steps
            .iter()
            .fold(self.source, |canvas, s| after(*s, canvas))
    }

    /// `boxes` (on the source's canvas) moved through every step, on the output's canvas.
    pub fn boxes(&self, boxes: &BoundingBoxes) -> Result<BoundingBoxes, TargetError> {
        self.check_canvas(boxes.canvas)?;
        let mut out = boxes.clone();
        for step in &self.steps {
            out = out.step(*step);
        }
        Ok(out)
    }

    /// Per object of `boxes` (on the source's canvas): whether it survives every
    /// [`GeoStep::Keep`] of the geometry. The caller drops the others from the moved boxes
    /// ([`TargetGeometry::boxes`] keeps every box), labels, masks and keypoints.
    pub fn kept(&self, boxes: &BoundingBoxes) -> Result<Vec<bool>, TargetError> {
        self.check_canvas(boxes.canvas)?;
        let mut keep = vec![true; boxes.boxes.len()];
        let mut now = boxes.clone();
        for step in &self.steps {
            if let GeoStep::Keep(rule) = step {
                let pass = match rule {
                    KeepRule::NonEmpty => now.non_empty(),
                    KeepRule::Sanitize(s) => s.keep(&now),
                };
                keep.iter_mut().zip(pass).for_each(|(k, p)| *k &= p);
            }
            now = now.step(*step);
        }
        Ok(keep)
    }

    /// `points` (on the source's canvas) moved through every step, on the output's canvas;
    /// a point that leaves the canvas is marked invisible.
    pub fn keypoints(&self, points: &KeyPoints) -> Result<KeyPoints, TargetError> {
        self.check_canvas(points.canvas)?;
        let mut out = points.clone();
        for step in &self.steps {
            out = out.step(*step);
        }
        out.hide_outside();
        Ok(out)
    }

    fn check_canvas(&self, canvas: (u32, u32)) -> Result<(), TargetError> {
        for step in &self.steps {
            if let GeoStep::Perspective { coefficients, .. } = step
                && inverse_perspective(coefficients).is_none()
            {
                return Err(TargetError::Singular {
                    step: "Perspective",
                });
            }
        }
        if canvas == self.source {
            Ok(())
        } else {
            Err(TargetError::Canvas {
                target: canvas,
                image: self.source,
            })
        }
    }
}

/// The canvas after `step` on a `canvas` (width, height).
pub(crate) fn after(step: GeoStep, canvas: (u32, u32)) -> (u32, u32) {
    match step {
        GeoStep::Crop { width, height, .. } | GeoStep::Resize { width, height } => (width, height),
        GeoStep::Pad {
            left,
            top,
            right,
            bottom,
            ..
        } => (canvas.0 + left + right, canvas.1 + top + bottom),
        GeoStep::Flip { .. }
        | GeoStep::ZeroOutside { .. }
        | GeoStep::Keep(_)
        | GeoStep::Rotate { .. }
        | GeoStep::Affine { .. }
        | GeoStep::Perspective { .. } => canvas,
    }
}

/// torchvision's forward affine matrix (`_get_inverse_affine_matrix(..., inverted=False)`)
/// for `step` on a `canvas`, rounded to float32 as torchvision builds its tensor.
pub(crate) fn forward_affine(step: GeoStep, canvas: (u32, u32)) -> Option<[f32; 6]> {
    let (angle, translate, scale, shear, center) = match step {
        GeoStep::Affine {
            angle,
            translate,
            scale,
            shear,
            center,
            ..
        } => (angle, translate, scale, shear, center),
        GeoStep::Rotate { angle, center, .. } => (-angle, (0.0, 0.0), 1.0, (0.0, 0.0), center),
        _ => return None,
    };
    let (cx, cy) = center.unwrap_or((f64::from(canvas.0) * 0.5, f64::from(canvas.1) * 0.5));
    let rot = angle.to_radians();
    let (sx, sy) = (shear.0.to_radians(), shear.1.to_radians());
    let (cos_sy, tan_sx) = (sy.cos(), sx.tan());
    let a = (rot - sy).cos() / cos_sy;
    let b = -(a * tan_sx + rot.sin());
    let c = (rot - sy).sin() / cos_sy;
    let d = rot.cos() - c * tan_sx;
    let m = [a * scale, b * scale, c * scale, d * scale];
    let e = 0.0 + (cx + translate.0 - m[0] * cx - m[1] * cy);
    let f = 0.0 + (cy + translate.1 - m[2] * cx - m[3] * cy);
    Some([m[0], m[1], e, m[2], m[3], f].map(|v| v as f32))
}

/// torchvision's `_compute_perspective_thetas`: the inverse of a perspective's coefficients
/// as two float32 row sets, numerators (x, y) and the shared denominator, so that a point goes
/// to `(n . p) / (d . p)` with `p = (x, y, 1)`; `None` where torchvision refuses (a
/// zero determinant).
pub(crate) fn inverse_perspective(c: &[f32; 8]) -> Option<([[f32; 3]; 2], [f32; 3])> {
    let c = c.map(f64::from);
    let denom = c[0] * c[4] - c[1] * c[3];
    if denom == 0.0 {
        return None;
    }
    let inv = [
        (c[4] - c[5] * c[7]) / denom,
        (-c[1] + c[2] * c[7]) / denom,
        (c[1] * c[5] - c[2] * c[4]) / denom,
        (-c[3] + c[5] * c[6]) / denom,
        (c[0] - c[2] * c[6]) / denom,
        (-c[0] * c[5] + c[2] * c[3]) / denom,
        (-c[4] * c[6] + c[3] * c[7]) / denom,
        (-c[0] * c[7] + c[1] * c[6]) / denom,
    ]
    .map(|v| v as f32);
    Some((
        [[inv[0], inv[1], inv[2]], [inv[3], inv[4], inv[5]]],
        [inv[6], inv[7], 1.0],
    ))
}

/// A point through [`inverse_perspective`]'s rows, in float32.
pub(crate) fn perspective_point((n, d): &([[f32; 3]; 2], [f32; 3]), [x, y]: [f32; 2]) -> [f32; 2] {
    let dot = |r: &[f32; 3]| x * r[0] + y * r[1] + r[2];
    let q = dot(d);
    [dot(&n[0]) / q, dot(&n[1]) / q]
}

/// The items of the objects `kept` says survive, `per` items an object (a keypoint list has
/// several per object): what goes with the objects a [`TargetGeometry::kept`] drops.
pub fn kept_objects<T: Clone>(items: &[T], kept: &[bool], per: usize) -> Vec<T> {
    items
        .chunks(per.max(1))
        .zip(kept)
        .filter(|(_, k)| **k)
        .flat_map(|(c, _)| c.iter().cloned())
        .collect()
}

/// Why targets could not be moved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    /// The targets were given on another canvas than the image's.
    #[error("targets on a {}x{} canvas for a {}x{} image", target.0, target.1, image.0, image.1)]
    Canvas {
        /// The targets' canvas (width, height).
        target: (u32, u32),
        /// The image's size.
        image: (u32, u32),
    },
    /// Mask bytes that are not the stack's planes.
    #[error("{bytes} bytes are not {planes} masks of {width}x{height}")]
    MaskBytes {
        /// The bytes given.
        bytes: usize,
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Planes.
        planes: u32,
    },
    /// A step whose mapping cannot be inverted for targets (torchvision raises there too).
    #[error("{step}: its coefficients cannot be inverted to move boxes or keypoints")]
    Singular {
        /// The step's name.
        step: &'static str,
    },
    /// One image's boxes, masks and keypoints count different objects.
    #[error("{what}")]
    Objects {
        /// The counts that disagree.
        what: String,
    },
    /// A box or point value is not finite, or a size is negative.
    #[error("{what} {index}: {values:?} is not a valid {kind}")]
    Value {
        /// "box" or "keypoint".
        what: &'static str,
        /// Its index.
        index: usize,
        /// Its values.
        values: Vec<f32>,
        /// What it should be.
        kind: &'static str,
    },
}
