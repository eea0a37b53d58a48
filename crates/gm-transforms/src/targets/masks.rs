//! Masks (torchvision's `tv_tensors.Mask`: a label or 0/1 per pixel) through the recorded
//! geometry as torchvision moves them: resizes nearest (torch's `interpolate(mode="nearest")`,
//! the source index `floor(dst * in / out)` in float32), crops filling 0, pads filling the
//! pad's mask fill (torchvision's `fill` for a `Mask`), flips,
//! warps sampled nearest with the image's own grid (the fused twin's warp), rotations with
//! torchvision's fast paths.

use super::{GeoStep, TargetError, TargetGeometry};
use crate::cpu::{HostImage, fused};
use crate::geometry::{Affine, Perspective, Rotate};
use crate::plan::{PlanState, SampleRng, Transform};
use crate::types::Interp;

/// One mask, `width` x `height` bytes row by row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mask {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// The values, row by row.
    pub data: Vec<u8>,
}

impl TargetGeometry {
    /// `mask` (on the source's canvas) moved through every step, on the output's canvas;
    /// where nothing of the source lands (pads, warps), 0.
    pub fn mask(&self, mask: &Mask) -> Result<Mask, TargetError> {
        if (mask.width, mask.height) != self.source
            || mask.data.len() != mask.width as usize * mask.height as usize
        {
            return Err(TargetError::Canvas {
                target: (mask.width, mask.height),
                image: self.source,
            });
        }
        if let Some(m) = super::mask_axes::gather(mask, &self.steps) {
            return Ok(m);
        }
        let mut m = mask.clone();
        for step in &self.steps {
            m = m.step(*step)?;
        }
        Ok(m)
    }
}

impl Mask {
    fn at(&self, x: i64, y: i64) -> u8 {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return 0;
        }
        self.data[y as usize * self.width as usize + x as usize]
    }

    /// A `w` x `h` mask whose pixel (x, y) is `f(x, y)`.
    fn from_fn(w: u32, h: u32, f: impl Fn(i64, i64) -> u8) -> Mask {
        let data = (0..i64::from(h))
            .flat_map(|y| (0..i64::from(w)).map(move |x| (x, y)))
            .map(|(x, y)| f(x, y))
            .collect();
        Mask {
            width: w,
            height: h,
            data,
        }
    }

    pub(crate) fn step(&self, step: GeoStep) -> Result<Mask, TargetError> {
        let (w, h) = (i64::from(self.width), i64::from(self.height));
        Ok(match step {
            GeoStep::Crop {
                left,
                top,
                width,
                height,
            } => {
                let (l, t) = (left.round() as i64, top.round() as i64);
                Mask::from_fn(width, height, |x, y| self.at(x + l, y + t))
            }
            GeoStep::Pad {
                left,
                top,
                right,
                bottom,
                mask_fill,
            } => {
                let (l, t) = (i64::from(left), i64::from(top));
                let (nw, nh) = (self.width + left + right, self.height + top + bottom);
                Mask::from_fn(nw, nh, |x, y| {
                    let (sx, sy) = (x - l, y - t);
                    let inside = (0..w).contains(&sx) && (0..h).contains(&sy);
                    if inside { self.at(sx, sy) } else { mask_fill }
                })
            }
            GeoStep::Flip { horizontal: true } => {
                Mask::from_fn(self.width, self.height, |x, y| self.at(w - 1 - x, y))
            }
            GeoStep::Flip { horizontal: false } => {
                Mask::from_fn(self.width, self.height, |x, y| self.at(x, h - 1 - y))
            }
            GeoStep::Resize { width, height } => {
                let xs = nearest_sources(self.width, width);
                let ys = nearest_sources(self.height, height);
                Mask::from_fn(width, height, |x, y| {
                    self.at(xs[x as usize], ys[y as usize])
                })
            }
            GeoStep::ZeroOutside { .. } | GeoStep::Keep(_) => self.clone(),
            GeoStep::Rotate {
                angle,
                center,
                mask_fill,
            } => self.rotated(angle, center, mask_fill),
            GeoStep::Affine {
                angle,
                translate,
                scale,
                shear,
                center,
                mask_fill,
            } => self.warped(&Affine {
                angle,
                translate,
                scale,
                shear,
                interpolation: Interp::Nearest,
                fill: warp_fill(mask_fill),
                center,
                mask_fill,
            }),
            GeoStep::Perspective {
                coefficients,
                mask_fill,
            } => self.warped(&Perspective {
                coefficients,
                interpolation: Interp::Nearest,
                fill: warp_fill(mask_fill),
                mask_fill,
            }),
        })
    }

    /// torchvision's `rotate_image` on a mask: its fast paths, else the nearest grid.
    fn rotated(&self, angle: f64, center: Option<(f64, f64)>, mask_fill: u8) -> Mask {
        let (w, h) = (i64::from(self.width), i64::from(self.height));
        let a = angle.rem_euclid(360.0);
        if center.is_none() {
            match a {
                0.0 => return self.clone(),
                180.0 => {
                    return Mask::from_fn(self.width, self.height, |x, y| {
                        self.at(w - 1 - x, h - 1 - y)
                    });
                }
                // torch.rot90 (counter-clockwise) of a square.
                90.0 if w == h => {
                    return Mask::from_fn(self.width, self.height, |x, y| self.at(w - 1 - y, x));
                }
                270.0 if w == h => {
                    return Mask::from_fn(self.width, self.height, |x, y| self.at(y, h - 1 - x));
                }
                _ => {}
            }
        }
        self.warped(&Rotate {
            angle,
            interpolation: Interp::Nearest,
            center,
            fill: warp_fill(mask_fill),
            mask_fill,
        })
    }

    /// The warp `step` plans on this mask's size, sampled nearest by the fused twin.
    fn warped(&self, step: &dyn Transform) -> Mask {
        let mut st = PlanState::new(self.width, self.height);
        if step.plan(&mut st, &mut SampleRng::new(0, 0, 0)).is_err() {
            return Mask::from_fn(self.width, self.height, |_, _| 0);
        }
        let (op, spec) = st.finish();
        let rgb: Vec<u8> = self.data.iter().flat_map(|&v| [v, v, v]).collect();
        let mut out = vec![0u8; spec.image_bytes()];
        fused(
            &HostImage::rgb8(&rgb, self.width, self.height),
            &op,
            &spec,
            &mut out,
        );
        Mask {
            width: spec.width,
            height: spec.height,
            data: out.chunks_exact(3).map(|p| p[0]).collect(),
        }
    }
}

/// The twin's fill for a mask warp: none for 0 (torchvision's `fill=None`, zeros padding),
/// else the value on every channel (nearest sampling takes it whole).
fn warp_fill(mask_fill: u8) -> Option<[f32; 3]> {
    (mask_fill != 0).then(|| [f32::from(mask_fill); 3])
}

/// torch's nearest source index per output index (`interpolate(mode="nearest")`).
pub(crate) fn nearest_sources(input: u32, output: u32) -> Vec<i64> {
    let last = i64::from(input) - 1;
    (0..i64::from(output))
        .map(|o| {
            if output == input {
                o
            } else if output == 2 * input {
                o >> 1
            } else {
                let scale = input as f32 / output as f32;
                ((o as f32 * scale).floor() as i64).min(last)
            }
        })
        .collect()
}
