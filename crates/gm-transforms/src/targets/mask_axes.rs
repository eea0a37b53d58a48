//! Masks through crops, resizes, flips and pads in one pass: each of those steps maps output
//! columns to input columns and output rows to input rows on its own, so their composition is
//! one source index (or a fill) per output column and per output row, and the moved mask one
//! gather from the source. Exactly the steps' result, without an intermediate mask per step.

use super::GeoStep;
use super::masks::{Mask, nearest_sources};

impl Tap {
    /// The tap as the fused kernel reads it: a source index, or `-1 - (fill | step << 8)`.
    pub(crate) fn encoded(self) -> i32 {
        match self {
            Tap::Source(i) => i as i32,
            Tap::Fill { value, step } => -1 - (i32::from(value) | (step as i32) << 8),
        }
    }
}

/// Where an output column (or row) reads: a source index, or the fill of the step that
/// brought it in from nowhere (the later step's fill wins where a column and a row both do).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tap {
    Source(u32),
    Fill { value: u8, step: usize },
}

/// Where each output column and each output row of a mask of `width` x `height` moved
/// through `steps` reads, or `None` where a step is not axis-aligned (a warp).
pub(crate) fn axis_taps(
    (width, height): (u32, u32),
    steps: &[GeoStep],
) -> Option<(Vec<Tap>, Vec<Tap>)> {
    let mut xs: Vec<Tap> = (0..width).map(Tap::Source).collect();
    let mut ys: Vec<Tap> = (0..height).map(Tap::Source).collect();
    for (k, step) in steps.iter().enumerate() {
        match *step {
            GeoStep::Crop {
                left,
                top,
                width,
                height,
            } => {
                // Past the edge, F.crop reads zeros.
                xs = shifted(
                    &xs,
                    left.round() as i64,
                    width,
                    Tap::Fill { value: 0, step: k },
                );
                ys = shifted(
                    &ys,
                    top.round() as i64,
                    height,
                    Tap::Fill { value: 0, step: k },
                );
            }
            GeoStep::Pad {
                left,
                top,
                right,
                bottom,
                mask_fill,
            } => {
                let fill = Tap::Fill {
                    value: mask_fill,
                    step: k,
                };
                let w = xs.len() as u32 + left + right;
                let h = ys.len() as u32 + top + bottom;
                xs = shifted(&xs, -i64::from(left), w, fill);
                ys = shifted(&ys, -i64::from(top), h, fill);
            }
            GeoStep::Flip { horizontal: true } => xs.reverse(),
            GeoStep::Flip { horizontal: false } => ys.reverse(),
            GeoStep::Resize { width, height } => {
                xs = resized(&xs, width);
                ys = resized(&ys, height);
            }
            GeoStep::ZeroOutside { .. } | GeoStep::Keep(_) => {}
            GeoStep::Rotate { .. } | GeoStep::Affine { .. } | GeoStep::Perspective { .. } => {
                return None;
            }
        }
    }
    Some((xs, ys))
}

/// `mask` moved through `steps`, or `None` where a step is not axis-aligned (a warp).
pub(crate) fn gather(mask: &Mask, steps: &[GeoStep]) -> Option<Mask> {
    let (xs, ys) = axis_taps((mask.width, mask.height), steps)?;
    let (w, h) = (xs.len(), ys.len());
    let mut data = Vec::with_capacity(w * h);
    let width = mask.width as usize;
    for y in &ys {
        match *y {
            Tap::Source(sy) => {
                let row = &mask.data[sy as usize * width..][..width];
                data.extend(xs.iter().map(|x| match *x {
                    Tap::Source(sx) => row[sx as usize],
                    Tap::Fill { value, .. } => value,
                }));
            }
            Tap::Fill { value, step } => data.extend(xs.iter().map(|x| match *x {
                Tap::Fill { value: v, step: s } if s > step => v,
                _ => value,
            })),
        }
    }
    Some(Mask {
        width: w as u32,
        height: h as u32,
        data,
    })
}

/// The taps of an axis of `len` whose output index `o` reads input index `o + offset`
/// (`fill` outside the input).
fn shifted(taps: &[Tap], offset: i64, len: u32, fill: Tap) -> Vec<Tap> {
    (0..i64::from(len))
        .map(|o| {
            usize::try_from(o + offset)
                .ok()
                .and_then(|i| taps.get(i).copied())
                .unwrap_or(fill)
        })
        .collect()
}

/// The taps of an axis resized to `len` with torch's nearest indices.
fn resized(taps: &[Tap], len: u32) -> Vec<Tap> {
    nearest_sources(taps.len() as u32, len)
        .into_iter()
        .map(|i| taps[i as usize])
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::plan::SampleRng;

    /// A random axis-aligned step on a `w` x `h` canvas: crops reaching past the edges, pads
    /// with a fill, flips, resizes up and down.
    fn random_step(rng: &mut SampleRng, (w, h): (u32, u32)) -> GeoStep {
        let mut below = |n: u32| rng.below(u64::from(n.max(1))) as u32;
        match below(4) {
            0 => GeoStep::Crop {
                left: below(w + 6) as f32 - 3.0,
                top: below(h + 6) as f32 - 3.0,
                width: 1 + below(w + 4),
                height: 1 + below(h + 4),
            },
            1 => GeoStep::Pad {
                left: below(4),
                top: below(4),
                right: below(4),
                bottom: below(4),
                mask_fill: [0, 255, 7][below(3) as usize],
            },
            2 => GeoStep::Flip {
                horizontal: below(2) == 0,
            },
            _ => GeoStep::Resize {
                width: 1 + below(2 * w + 2),
                height: 1 + below(2 * h + 2),
            },
        }
    }

    /// One to five random axis-aligned steps from a `w` x `h` canvas.
    pub(in crate::targets) fn random_steps(
        rng: &mut SampleRng,
        (w, h): (u32, u32),
    ) -> Vec<GeoStep> {
        let mut steps = Vec::new();
        let mut canvas = (w, h);
        for _ in 0..1 + rng.below(5) {
            let s = random_step(rng, canvas);
            canvas = super::super::after(s, canvas);
            steps.push(s);
        }
        steps
    }

    #[test]
    fn one_gather_equals_the_steps_one_by_one() {
        let mut rng = SampleRng::new(5, 0, 0);
        for case in 0..400 {
            let (w, h) = (1 + rng.below(30) as u32, 1 + rng.below(30) as u32);
            let data = (0..w * h).map(|_| rng.below(250) as u8).collect();
            let mask = Mask {
                width: w,
                height: h,
                data,
            };
            let steps = random_steps(&mut rng, (w, h));
            let mut want = mask.clone();
            for s in &steps {
                want = want.step(*s).expect("an axis-aligned step");
            }
            assert_eq!(gather(&mask, &steps), Some(want), "case {case}: {steps:?}");
        }
    }
}
