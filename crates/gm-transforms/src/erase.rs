//! RandomErasing (torchvision.transforms.v2.RandomErasing): a rectangle of the finished image
//! (after normalize, in the output's values) set to a constant or to normal noise.
//!
//! It works on the batch tensor the fused kernel wrote, so it is not a [`Transform`] step of
//! the chain: [`RandomErasing::draw`] gives a sample's [`Erase`] (what was drawn), which the
//! GPU ([`BatchOpsKernel::erase`]) or the CPU twin ([`erase_image`]) applies. Draws come from
//! the sample's own generator ([`RandomErasing::rng`]: seed, epoch, dataset index), a stream
//! apart from the chain's, so batches stay deterministic and resumable and adding erasing does
//! not change the chain's draws.
//!
//! [`Transform`]: crate::Transform
//! [`BatchOpsKernel::erase`]: crate::BatchOpsKernel::erase

use crate::elements::{ToU8, index, store};
use crate::plan::{PlanError, SampleRng};
use crate::types::OutputSpec;

/// Salt of the erasing stream: `SampleRng::new(seed ^ ERASE_STREAM, epoch, index)`.
const ERASE_STREAM: u64 = 0x6572_6173_6500_0001;

/// What an erased rectangle is filled with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EraseFill {
    /// One value per output channel (as stored: a BGR output's first channel is blue), in the
    /// output's units; a u8 output truncates it toward zero as torch's cast does.
    Value([f32; 3]),
    /// Standard normal noise, element `(c, y, x)` of the rectangle being
    /// [`erase_noise`]`(key, (c * height + y) * width + x)` (torchvision draws a `[C, h, w]`
    /// tensor with `normal_()`; ours is the same distribution from a counter-based hash, so
    /// that the GPU makes it without a host upload).
    Noise(u64),
}

/// One drawn erasure: rows `top..top + height`, columns `left..left + width`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Erase {
    /// First row.
    pub top: u32,
    /// First column.
    pub left: u32,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Values written.
    pub fill: EraseFill,
}

/// The `value` argument of torchvision's RandomErasing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ErasingValue {
    /// Every channel gets this value.
    Number(f32),
    /// One value per channel (three-channel outputs only).
    PerChannel([f32; 3]),
    /// `"random"`: standard normal noise per element.
    Random,
}

/// torchvision's RandomErasing: with probability `p`, erase a rectangle of `scale` of the
/// image's area and aspect ratio (h / w) in `ratio` (drawn log-uniform), trying 10 times to
/// fit it, as `RandomErasing.make_params` does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomErasing {
    p: f64,
    scale: (f64, f64),
    ratio: (f64, f64),
    value: ErasingValue,
}

impl Default for RandomErasing {
    /// torchvision's defaults: p 0.5, scale (0.02, 0.33), ratio (0.3, 3.3), value 0.
    fn default() -> Self {
        RandomErasing {
            p: 0.5,
            scale: (0.02, 0.33),
            ratio: (0.3, 3.3),
            value: ErasingValue::Number(0.0),
        }
    }
}

impl RandomErasing {
    /// Checks the arguments: `p` in 0..=1, `0 <= scale.0 <= scale.1 <= 1`,
    /// `0 < ratio.0 <= ratio.1`, finite values.
    pub fn new(
        p: f64,
        scale: (f64, f64),
        ratio: (f64, f64),
        value: ErasingValue,
    ) -> Result<RandomErasing, PlanError> {
        let err = |reason: String| {
            Err(PlanError::Step {
                step: "RandomErasing",
                reason,
            })
        };
        if !(0.0..=1.0).contains(&p) {
            return err(format!("p {p} is not in 0..=1"));
        }
        if !(0.0 <= scale.0 && scale.0 <= scale.1 && scale.1 <= 1.0) {
            return err(format!("scale {scale:?} is not (min, max) within 0..=1"));
        }
        if !(ratio.0 > 0.0 && ratio.0 <= ratio.1 && ratio.1.is_finite()) {
            return err(format!(
                "ratio {ratio:?} is not (min, max) of positive numbers"
            ));
        }
        let finite = match value {
            ErasingValue::Number(v) => v.is_finite(),
            ErasingValue::PerChannel(v) => v.iter().all(|x| x.is_finite()),
            ErasingValue::Random => true,
        };
        if !finite {
            return err(format!("value {value:?} is not finite"));
        }
        Ok(RandomErasing {
            p,
            scale,
            ratio,
            value,
        })
    }

    /// The probability of erasing.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The erasing generator of sample `index` of `epoch` in a run seeded with `seed`.
    pub fn rng(seed: u64, epoch: u64, index: u64) -> SampleRng {
        SampleRng::new(seed ^ ERASE_STREAM, epoch, index)
    }

    /// The erasure of one image of `spec`, or `None` when it is left alone (the `p` draw, or
    /// no rectangle fitting in 10 tries, as in torchvision). Refuses a per-channel value on a
    /// one-channel output.
    pub fn draw(&self, spec: &OutputSpec, rng: &mut SampleRng) -> Result<Option<Erase>, PlanError> {
        let fill = match self.value {
            ErasingValue::Number(v) => EraseFill::Value([v; 3]),
            ErasingValue::PerChannel(_) if spec.channels() != 3 => {
                return Err(PlanError::Step {
                    step: "RandomErasing",
                    reason: format!(
                        "three values for an output of {} channel(s)",
                        spec.channels()
                    ),
                });
            }
            ErasingValue::PerChannel(v) => EraseFill::Value(v),
            ErasingValue::Random => EraseFill::Noise(0),
        };
        // torchvision: `if torch.rand(1) >= p: return`.
        if !rng.bernoulli(self.p) {
            return Ok(None);
        }
        let (img_w, img_h) = (spec.width as f64, spec.height as f64);
        let area = img_w * img_h;
        let (lo, hi) = (self.ratio.0.ln(), self.ratio.1.ln());
        for _ in 0..10 {
            let erase_area = area * rng.uniform(self.scale.0, self.scale.1);
            let aspect = rng.uniform(lo, hi).exp();
            // Python's round() rounds half to even.
            let h = (erase_area * aspect).sqrt().round_ties_even();
            let w = (erase_area / aspect).sqrt().round_ties_even();
            if !(h < img_h && w < img_w) {
                continue;
            }
            let (h, w) = (h as u32, w as u32);
            let fill = match fill {
                EraseFill::Noise(_) => EraseFill::Noise(rng.next_u64()),
                f => f,
            };
            let top = rng.below(u64::from(spec.height - h) + 1) as u32;
            let left = rng.below(u64::from(spec.width - w) + 1) as u32;
            return Ok(Some(Erase {
                top,
                left,
                height: h,
                width: w,
                fill,
            }));
        }
        Ok(None)
    }
}

/// Element `i` of the noise with key `key`: a standard normal value from two 24-bit uniforms
/// of a SplitMix64 hash (Box-Muller, in f32 as the kernel computes it).
pub fn erase_noise(key: u64, i: u64) -> f32 {
    let mut z = key ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let scale = 1.0 / 16_777_216.0f32;
    let u1 = ((z >> 40) as u32 as f32 + 1.0) * scale;
    let u2 = ((z >> 8) & 0xff_ffff) as u32 as f32 * scale;
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// The CPU twin of the erasing kernel on one image of `spec` (`image`: its bytes). The
/// rectangle is clipped to the image.
pub fn erase_image(image: &mut [u8], spec: &OutputSpec, e: &Erase) {
    let bottom = (e.top.saturating_add(e.height)).min(spec.height) as usize;
    let right = (e.left.saturating_add(e.width)).min(spec.width) as usize;
    for c in 0..spec.channels() {
        for y in e.top as usize..bottom {
            for x in e.left as usize..right {
                let v = match e.fill {
                    EraseFill::Value(v) => v[c],
                    EraseFill::Noise(key) => {
                        let (ry, rx) = (y - e.top as usize, x - e.left as usize);
                        let k = (c * e.height as usize + ry) * e.width as usize + rx;
                        erase_noise(key, k as u64)
                    }
                };
                store(spec.dtype, image, index(spec, c, x, y), v, ToU8::Truncate);
            }
        }
    }
}

/// [`erase_image`] on every image of a batch with an erasure (`erases[k]` for image `k`).
pub fn erase_batch(batch: &mut [u8], spec: &OutputSpec, erases: &[Option<Erase>]) {
    let size = spec.image_bytes();
    for (image, e) in batch.chunks_exact_mut(size).zip(erases) {
        if let Some(e) = e {
            erase_image(image, spec, e);
        }
    }
}
