//! Masks moved by the fused kernel beside their image: an image's masks as one stack of
//! planes, and the per-column and per-row taps the kernel gathers them through (one source
//! read per output byte, in the launch that writes the image). [`MaskTaps::gather`] is the
//! kernel's CPU twin.

use super::mask_axes::{Tap, axis_taps};
use super::{Mask, TargetError, TargetGeometry};

/// The masks of one image on one canvas: `planes` masks of `width` x `height` bytes one after
/// another (a label map is one plane; a COCO image's objects one each).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MaskStack {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Number of masks.
    pub planes: u32,
    /// The masks, each row by row.
    pub data: Vec<u8>,
}

impl MaskStack {
    /// `planes` masks of `width` x `height` in `data`; an error when `data` is not exactly
    /// that long.
    pub fn new(width: u32, height: u32, planes: u32, data: Vec<u8>) -> Result<Self, TargetError> {
        let want = width as usize * height as usize * planes as usize;
        if data.len() != want {
            return Err(TargetError::MaskBytes {
                bytes: data.len(),
                width,
                height,
                planes,
            });
        }
        Ok(MaskStack {
            width,
            height,
            planes,
            data,
        })
    }

    /// One mask as a stack of one.
    pub fn single(mask: Mask) -> MaskStack {
        MaskStack {
            width: mask.width,
            height: mask.height,
            planes: 1,
            data: mask.data,
        }
    }

    /// Bytes of one plane.
    pub fn plane_bytes(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// Plane `k`.
    pub fn plane(&self, k: usize) -> Option<Mask> {
        let n = self.plane_bytes();
        let data = self.data.get(k * n..(k + 1) * n)?.to_vec();
        Some(Mask {
            width: self.width,
            height: self.height,
            data,
        })
    }

    /// The planes whose `keep` is true, in order (a plane without an entry is dropped).
    pub fn select(&self, keep: &[bool]) -> MaskStack {
        let n = self.plane_bytes();
        let mut data = Vec::new();
        let mut planes = 0;
        for (plane, _) in self
            .data
            .chunks_exact(n.max(1))
            .zip(keep)
            .filter(|(_, k)| **k)
        {
            data.extend_from_slice(plane);
            planes += 1;
        }
        MaskStack {
            width: self.width,
            height: self.height,
            planes,
            data,
        }
    }
}

/// Where each output column and row of a moved mask reads, as the fused kernel reads them:
/// a source index, or, for a pixel that a crop or pad brought in from nowhere,
/// `-1 - (fill | step << 8)` (where a column and a row both are, the later step's fill wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskTaps {
    /// The source's (width, height), which the taps index.
    pub source: (u32, u32),
    /// One tap per output column.
    pub columns: Vec<i32>,
    /// One tap per output row.
    pub rows: Vec<i32>,
}

impl MaskTaps {
    /// The taps that copy a `width` x `height` mask as it is.
    pub fn identity(width: u32, height: u32) -> MaskTaps {
        MaskTaps {
            source: (width, height),
            columns: (0..width as i32).collect(),
            rows: (0..height as i32).collect(),
        }
    }

    /// The moved masks' (width, height).
    pub fn size(&self) -> (u32, u32) {
        (self.columns.len() as u32, self.rows.len() as u32)
    }

    /// The columns' taps then the rows', as the kernel reads them.
    pub fn encoded(&self) -> impl Iterator<Item = i32> + '_ {
        self.columns.iter().chain(&self.rows).copied()
    }

    /// Bytes of [`MaskTaps::encoded`].
    pub fn encoded_bytes(&self) -> usize {
        4 * (self.columns.len() + self.rows.len())
    }

    /// `masks` gathered through the taps: the fused kernel's mask store, on the host.
    pub fn gather(&self, masks: &MaskStack) -> Result<MaskStack, TargetError> {
        if (masks.width, masks.height) != self.source {
            return Err(TargetError::Canvas {
                target: (masks.width, masks.height),
                image: self.source,
            });
        }
        let (w, h) = self.size();
        let plane = masks.plane_bytes();
        let mut data = vec![0u8; w as usize * h as usize * masks.planes as usize];
        for (k, out) in data
            .chunks_exact_mut((w as usize * h as usize).max(1))
            .enumerate()
        {
            let src = &masks.data[k * plane..(k + 1) * plane];
            for (y, &ty) in self.rows.iter().enumerate() {
                for (x, &tx) in self.columns.iter().enumerate() {
                    out[y * w as usize + x] = tapped(src, masks.width, masks.height, tx, ty);
                }
            }
        }
        Ok(MaskStack {
            width: w,
            height: h,
            planes: masks.planes,
            data,
        })
    }
}

/// The byte at column tap `tx` and row tap `ty` of `src` (`w` x `h`), as the kernel's
/// `mask_value` reads it.
fn tapped(src: &[u8], w: u32, h: u32, tx: i32, ty: i32) -> u8 {
    if tx < 0 || ty < 0 {
        let (fx, fy) = (-1 - tx, -1 - ty);
        let v = if tx >= 0 {
            fy
        } else if ty >= 0 || (fx >> 8) > (fy >> 8) {
            fx
        } else {
            fy
        };
        return (v & 255) as u8;
    }
    if tx as u32 >= w || ty as u32 >= h {
        return 0;
    }
    src[ty as usize * w as usize + tx as usize]
}

impl TargetGeometry {
    /// The taps that move masks on the source's canvas through every step, for the fused
    /// kernel; `None` where a step is a warp (move those with [`TargetGeometry::mask`] and
    /// gather the result through [`MaskTaps::identity`]).
    pub fn mask_taps(&self) -> Option<MaskTaps> {
        let (xs, ys) = axis_taps(self.source, &self.steps)?;
        Some(MaskTaps {
            source: self.source,
            columns: xs.into_iter().map(Tap::encoded).collect(),
            rows: ys.into_iter().map(Tap::encoded).collect(),
        })
    }

    /// `masks` (on the source's canvas) moved through every step, each plane as
    /// [`TargetGeometry::mask`] moves it.
    pub fn mask_stack(&self, masks: &MaskStack) -> Result<MaskStack, TargetError> {
        if let Some(taps) = self.mask_taps() {
            return taps.gather(masks);
        }
        let mut out = MaskStack::default();
        for k in 0..masks.planes as usize {
            let plane = masks.plane(k).unwrap_or_default();
            let moved = self.mask(&plane)?;
            (out.width, out.height) = (moved.width, moved.height);
            out.data.extend_from_slice(&moved.data);
            out.planes += 1;
        }
        if masks.planes == 0 {
            (out.width, out.height) = self.canvas();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::mask_axes::tests::random_steps;
    use super::*;
    use crate::plan::SampleRng;
    use crate::targets::GeoStep;

    /// The kernel's reading of the encoded taps gives what moving each plane step by step
    /// gives, fills of crops and pads included.
    #[test]
    fn gathering_through_taps_equals_moving_each_plane() {
        let mut rng = SampleRng::new(11, 0, 0);
        for case in 0..300 {
            let (w, h) = (1 + rng.below(24) as u32, 1 + rng.below(24) as u32);
            let planes = rng.below(4) as u32;
            let data = (0..w * h * planes).map(|_| rng.below(250) as u8).collect();
            let stack = MaskStack::new(w, h, planes, data).expect("sized");
            let g = TargetGeometry {
                source: (w, h),
                steps: random_steps(&mut rng, (w, h)),
            };
            let got = g.mask_taps().expect("axis-aligned").gather(&stack);
            let got = got.expect("same canvas");
            assert_eq!(got.planes, planes);
            assert_eq!((got.width, got.height), g.canvas(), "case {case}");
            for k in 0..planes as usize {
                let want = g.mask(&stack.plane(k).expect("plane")).expect("moved");
                assert_eq!(
                    got.plane(k),
                    Some(want),
                    "case {case} plane {k}: {:?}",
                    g.steps
                );
            }
        }
    }

    #[test]
    fn warps_have_no_taps_and_move_plane_by_plane() {
        let g = TargetGeometry {
            source: (6, 4),
            steps: vec![GeoStep::Rotate {
                angle: 180.0,
                center: None,
                mask_fill: 0,
            }],
        };
        assert!(g.mask_taps().is_none());
        let stack = MaskStack::new(6, 4, 2, (0..48).collect()).expect("sized");
        let moved = g.mask_stack(&stack).expect("moved");
        let want = g.mask(&stack.plane(1).expect("plane")).expect("moved");
        assert_eq!(moved.plane(1), Some(want));
        let same = MaskTaps::identity(6, 4).gather(&moved).expect("same size");
        assert_eq!(same, moved);
    }

    #[test]
    fn a_stack_keeps_the_planes_asked_for() {
        let stack = MaskStack::new(2, 1, 3, vec![1, 1, 2, 2, 3, 3]).expect("sized");
        let kept = stack.select(&[true, false, true]);
        assert_eq!((kept.planes, kept.data), (2, vec![1, 1, 3, 3]));
        assert!(MaskStack::new(2, 2, 1, vec![0; 3]).is_err());
    }
}
