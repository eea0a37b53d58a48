//! Keypoints (torchvision's `tv_tensors.KeyPoints`, float32) with a visibility flag per point
//! (COCO's `v > 0`), which torchvision does not carry: a point that leaves the canvas is
//! marked invisible, where torchvision's `SanitizeKeyPoints` would drop it.

use super::{GeoStep, TargetError, after, forward_affine, inverse_perspective, perspective_point};

/// Points on a canvas, each visible or not.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPoints {
    /// The canvas's width and height.
    pub canvas: (u32, u32),
    /// x, y per point (pixel `i`'s centre at `i`, as torchvision's flips assume).
    pub points: Vec<[f32; 2]>,
    /// Per point: visible (labelled and inside the canvas).
    pub visible: Vec<bool>,
}

impl KeyPoints {
    /// Points on a `canvas` (width, height), each with its visibility; every value finite.
    pub fn new(
        canvas: (u32, u32),
        points: Vec<[f32; 2]>,
        visible: Vec<bool>,
    ) -> Result<KeyPoints, TargetError> {
        if let Some((index, p)) = points
            .iter()
            .enumerate()
            .find(|(_, p)| !p.iter().all(|v| v.is_finite()))
        {
            return Err(TargetError::Value {
                what: "keypoint",
                index,
                values: p.to_vec(),
                kind: "point (finite x and y)",
            });
        }
        if visible.len() != points.len() {
            return Err(TargetError::Value {
                what: "keypoint",
                index: visible.len().min(points.len()),
                values: Vec::new(),
                kind: "point with a visibility (one flag per point)",
            });
        }
        Ok(KeyPoints {
            canvas,
            points,
            visible,
        })
    }

    /// The points after `step`, on the canvas after it (not clamped, as torchvision).
    pub(crate) fn step(&self, step: GeoStep) -> KeyPoints {
        let (w, h) = self.canvas;
        let map = |f: &dyn Fn([f32; 2]) -> [f32; 2]| self.points.iter().map(|p| f(*p)).collect();
        let points = match step {
            GeoStep::Flip { horizontal: true } => map(&|p| [-(p[0] - (w - 1) as f32), p[1]]),
            GeoStep::Flip { horizontal: false } => map(&|p| [p[0], -(p[1] - (h - 1) as f32)]),
            GeoStep::Resize { width, height } => {
                let rx = (f64::from(width) / f64::from(w)) as f32;
                let ry = (f64::from(height) / f64::from(h)) as f32;
                map(&|p| [p[0] * rx, p[1] * ry])
            }
            GeoStep::Crop { left, top, .. } => map(&|p| [p[0] - left, p[1] - top]),
            GeoStep::ZeroOutside { .. } | GeoStep::Keep(_) => self.points.clone(),
            GeoStep::Pad { left, top, .. } => map(&|p| [p[0] + left as f32, p[1] + top as f32]),
            GeoStep::Affine { .. } | GeoStep::Rotate { .. } => {
                match forward_affine(step, self.canvas) {
                    Some(m) => {
                        map(&|[x, y]| [x * m[0] + y * m[1] + m[2], x * m[3] + y * m[4] + m[5]])
                    }
                    None => self.points.clone(),
                }
            }
            GeoStep::Perspective { coefficients, .. } => match inverse_perspective(&coefficients) {
                Some(m) => map(&|p| perspective_point(&m, p)),
                None => self.points.clone(),
            },
        };
        KeyPoints {
            canvas: after(step, self.canvas),
            points,
            visible: self.visible.clone(),
        }
    }

    /// Marks the points outside the canvas invisible (torchvision's `SanitizeKeyPoints`
    /// test: 0 <= x < width, 0 <= y < height).
    pub(crate) fn hide_outside(&mut self) {
        let (w, h) = (self.canvas.0 as f32, self.canvas.1 as f32);
        for (p, v) in self.points.iter().zip(&mut self.visible) {
            if !(p[0] >= 0.0 && p[0] < w && p[1] >= 0.0 && p[1] < h) {
                *v = false;
            }
        }
    }
}
