//! Bounding boxes (torchvision's `tv_tensors.BoundingBoxes`, float32) and their kernels: each
//! step in the box's own format with torchvision's float32 operations, so that results are
//! the same floats.

use super::{GeoStep, TargetError, after, forward_affine, inverse_perspective, perspective_point};

/// How a box's four numbers are read (torchvision's `BoundingBoxFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoxFormat {
    /// Corners: x1, y1, x2, y2.
    Xyxy,
    /// Top-left corner and size: x, y, width, height (COCO's).
    Xywh,
    /// Centre and size: cx, cy, width, height.
    Cxcywh,
}

/// Boxes on a canvas (the image they belong to).
#[derive(Debug, Clone, PartialEq)]
pub struct BoundingBoxes {
    /// How each box is written.
    pub format: BoxFormat,
    /// The canvas's width and height.
    pub canvas: (u32, u32),
    /// One row per box.
    pub boxes: Vec<[f32; 4]>,
}

impl BoundingBoxes {
    /// Boxes on a `canvas` (width, height); every value finite, sizes not negative.
    pub fn new(
        format: BoxFormat,
        canvas: (u32, u32),
        boxes: Vec<[f32; 4]>,
    ) -> Result<BoundingBoxes, TargetError> {
        for (index, b) in boxes.iter().enumerate() {
            let sized = match format {
                BoxFormat::Xyxy => b[2] >= b[0] && b[3] >= b[1],
                BoxFormat::Xywh | BoxFormat::Cxcywh => b[2] >= 0.0 && b[3] >= 0.0,
            };
            if !sized || !b.iter().all(|v| v.is_finite()) {
                return Err(TargetError::Value {
                    what: "box",
                    index,
                    values: b.to_vec(),
                    kind: "box (finite, not of negative size)",
                });
            }
        }
        Ok(BoundingBoxes {
            format,
            canvas,
            boxes,
        })
    }

    /// The same boxes written in `format`.
    pub fn to_format(&self, format: BoxFormat) -> BoundingBoxes {
        let boxes = self
            .boxes
            .iter()
            .map(|b| from_xyxy(to_xyxy(*b, self.format), format))
            .collect();
        BoundingBoxes {
            format,
            canvas: self.canvas,
            boxes,
        }
    }

    /// The boxes after `step`, on the canvas after it.
    pub(crate) fn step(&self, step: GeoStep) -> BoundingBoxes {
        let (w, h) = self.canvas;
        let canvas = after(step, self.canvas);
        let f = self.format;
        let boxes: Vec<[f32; 4]> = match step {
            GeoStep::Flip { horizontal } => self.map(|b| flip(b, f, horizontal, (w, h))),
            GeoStep::Resize { width, height } => {
                let rx = (f64::from(width) / f64::from(w)) as f32;
                let ry = (f64::from(height) / f64::from(h)) as f32;
                self.map(|b| [b[0] * rx, b[1] * ry, b[2] * rx, b[3] * ry])
            }
            GeoStep::Crop { left, top, .. } => self.map(|b| shift(b, f, -left, -top)),
            GeoStep::Pad { left, top, .. } => self.map(|b| shift(b, f, left as f32, top as f32)),
            GeoStep::Affine { .. } | GeoStep::Rotate { .. } => {
                match forward_affine(step, self.canvas) {
                    Some(m) => self.map(|b| {
                        let warp = |[x, y]: [f32; 2]| {
                            [x * m[0] + y * m[1] + m[2], x * m[3] + y * m[4] + m[5]]
                        };
                        from_xyxy(hull(to_xyxy(b, f), warp), f)
                    }),
                    None => self.boxes.clone(),
                }
            }
            GeoStep::Perspective { coefficients, .. } => match inverse_perspective(&coefficients) {
                Some(m) => {
                    self.map(|b| from_xyxy(hull(to_xyxy(b, f), |p| perspective_point(&m, p)), f))
                }
                None => self.boxes.clone(),
            },
            GeoStep::ZeroOutside {
                left,
                top,
                right,
                bottom,
            } => self.map(|b| {
                let x = to_xyxy(b, f);
                let (cx, cy) = (0.5 * (x[0] + x[2]), 0.5 * (x[1] + x[3]));
                let inside = left < cx && cx < right && top < cy && cy < bottom;
                if inside { b } else { [0.0; 4] }
            }),
            GeoStep::Keep(_) => self.boxes.clone(),
        };
        let moved = BoundingBoxes {
            format: f,
            canvas,
            boxes,
        };
        match step {
            // torchvision clamps after crops, pads and warps, not after flips and resizes.
            GeoStep::Crop { .. }
            | GeoStep::Pad { .. }
            | GeoStep::Affine { .. }
            | GeoStep::Rotate { .. }
            | GeoStep::Perspective { .. } => moved.clamped(),
            GeoStep::Flip { .. }
            | GeoStep::Resize { .. }
            | GeoStep::ZeroOutside { .. }
            | GeoStep::Keep(_) => moved,
        }
    }

    /// Per box: some width and height (`x1 < x2 and y1 < y2` in XYXY).
    pub(crate) fn non_empty(&self) -> Vec<bool> {
        self.boxes
            .iter()
            .map(|b| {
                let x = to_xyxy(*b, self.format);
                x[0] < x[2] && x[1] < x[3]
            })
            .collect()
    }

    fn map(&self, f: impl Fn([f32; 4]) -> [f32; 4]) -> Vec<[f32; 4]> {
        self.boxes.iter().map(|b| f(*b)).collect()
    }

    /// Clamped to the canvas as torchvision's `clamp_bounding_boxes` (through XYXY).
    pub fn clamped(&self) -> BoundingBoxes {
        let (w, h) = (self.canvas.0 as f32, self.canvas.1 as f32);
        let boxes = self.map(|b| {
            let x = to_xyxy(b, self.format);
            let c = [
                x[0].clamp(0.0, w),
                x[1].clamp(0.0, h),
                x[2].clamp(0.0, w),
                x[3].clamp(0.0, h),
            ];
            from_xyxy(c, self.format)
        });
        BoundingBoxes {
            boxes,
            ..self.clone()
        }
    }
}

/// A box mirrored on a `(w, h)` canvas, in its format.
fn flip(b: [f32; 4], f: BoxFormat, horizontal: bool, (w, h): (u32, u32)) -> [f32; 4] {
    let (i, size) = if horizontal { (0, w) } else { (1, h) };
    let size = size as f32;
    let mut out = b;
    match f {
        BoxFormat::Xyxy => {
            out[i] = -(b[i + 2] - size);
            out[i + 2] = -(b[i] - size);
        }
        BoxFormat::Xywh => out[i] = -((b[i] + b[i + 2]) - size),
        BoxFormat::Cxcywh => out[i] = -(b[i] - size),
    }
    out
}

/// A box moved by (dx, dy), in its format.
fn shift(b: [f32; 4], f: BoxFormat, dx: f32, dy: f32) -> [f32; 4] {
    match f {
        BoxFormat::Xyxy => [b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy],
        BoxFormat::Xywh | BoxFormat::Cxcywh => [b[0] + dx, b[1] + dy, b[2], b[3]],
    }
}

/// The bounding box of an XYXY box's four corners mapped by `map`.
fn hull(b: [f32; 4], map: impl Fn([f32; 2]) -> [f32; 2]) -> [f32; 4] {
    let corners = [[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]]];
    let mut out = [
        f32::INFINITY,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NEG_INFINITY,
    ];
    for c in corners {
        let [u, v] = map(c);
        out = [out[0].min(u), out[1].min(v), out[2].max(u), out[3].max(v)];
    }
    out
}

/// torchvision's conversion of a box in `f` to XYXY (float32).
pub(crate) fn to_xyxy(b: [f32; 4], f: BoxFormat) -> [f32; 4] {
    match f {
        BoxFormat::Xyxy => b,
        BoxFormat::Xywh => [b[0], b[1], b[2] + b[0], b[3] + b[1]],
        BoxFormat::Cxcywh => {
            let (x1, y1) = (b[0] - b[2] / 2.0, b[1] - b[3] / 2.0);
            [x1, y1, b[2] + x1, b[3] + y1]
        }
    }
}

/// torchvision's conversion of an XYXY box to `f` (float32).
pub(crate) fn from_xyxy(b: [f32; 4], f: BoxFormat) -> [f32; 4] {
    let (w, h) = (b[2] - b[0], b[3] - b[1]);
    match f {
        BoxFormat::Xyxy => b,
        BoxFormat::Xywh => [b[0], b[1], w, h],
        BoxFormat::Cxcywh => [(b[0] * 2.0 + w) / 2.0, (b[1] * 2.0 + h) / 2.0, w, h],
    }
}

/// torchvision's `SanitizeBoundingBoxes`: which boxes to keep (at least `min_size` wide and
/// high, `min_area` in area, inside the canvas); the caller drops the others with their labels,
/// masks and keypoints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SanitizeBoundingBoxes {
    /// Smallest width and height kept (torchvision: 1).
    pub min_size: f32,
    /// Smallest area kept (torchvision: 1).
    pub min_area: f32,
}

impl Default for SanitizeBoundingBoxes {
    fn default() -> Self {
        SanitizeBoundingBoxes {
            min_size: 1.0,
            min_area: 1.0,
        }
    }
}

impl SanitizeBoundingBoxes {
    /// Per box: kept.
    pub fn keep(&self, boxes: &BoundingBoxes) -> Vec<bool> {
        let (w, h) = (boxes.canvas.0 as f32, boxes.canvas.1 as f32);
        boxes
            .boxes
            .iter()
            .map(|b| {
                let x = to_xyxy(*b, boxes.format);
                let (bw, bh) = (x[2] - x[0], x[3] - x[1]);
                bw >= self.min_size
                    && bh >= self.min_size
                    && x.iter().all(|&v| v >= 0.0)
                    && bw * bh >= self.min_area
                    && x[0] <= w
                    && x[2] <= w
                    && x[1] <= h
                    && x[3] <= h
            })
            .collect()
    }
}
