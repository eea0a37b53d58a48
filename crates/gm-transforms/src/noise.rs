//! GaussianNoise (torchvision.transforms.v2.GaussianNoise) on a float output, and its CPU twin.
//!
//! torchvision adds `mean + randn * sigma` to every element of a float image and clamps to
//! 0..1 with `clip`. Here the noise is the chain's last value step: it works in place on the
//! finished float batch (after the fused kernel and the blur pass), so `Normalize` and colour
//! or geometry steps after it are refused; the output must be f32, f16 or bf16 (torchvision's
//! float image: our `Normalize { mean: [0.0; 3], std: [1.0; 3] }` is its
//! `ToDtype(float32, scale=True)`). torch's generator cannot be matched bit for bit, so the
//! normal values come from a counter-based hash ([`erase_noise`]) of the key drawn per sample
//! and the element's index in the image: the same on the GPU
//! ([`BlurKernel::noise`](crate::BlurKernel::noise)) and in the twin ([`noise_image`]).

use gm_cuda::DType;

use crate::elements::{ToU8, load, store};
use crate::erase::erase_noise;
use crate::plan::{PlanError, PlanState, SampleRng, Transform};
use crate::types::OutputSpec;

/// torchvision's `GaussianNoise(mean=0.0, sigma=0.1, clip=True)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianNoise {
    mean: f32,
    sigma: f32,
    clip: bool,
}

impl Default for GaussianNoise {
    /// torchvision's defaults: mean 0, sigma 0.1, clip.
    fn default() -> Self {
        GaussianNoise {
            mean: 0.0,
            sigma: 0.1,
            clip: true,
        }
    }
}

impl GaussianNoise {
    /// Checks the arguments as torchvision does (`sigma` not negative), and that both are
    /// finite.
    pub fn new(mean: f32, sigma: f32, clip: bool) -> Result<GaussianNoise, PlanError> {
        if !(sigma >= 0.0 && sigma.is_finite() && mean.is_finite()) {
            return Err(noise_error(format!(
                "sigma {sigma} should be a non-negative number, mean {mean} finite"
            )));
        }
        Ok(GaussianNoise { mean, sigma, clip })
    }
}

pub(crate) fn noise_error(reason: String) -> PlanError {
    PlanError::Step {
        step: "GaussianNoise",
        reason,
    }
}

impl Transform for GaussianNoise {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if st.noise.is_some() {
            return Err(noise_error("a chain adds noise once".into()));
        }
        // The key is drawn even for sigma 0, so the chain's later draws do not depend on it.
        let key = rng.next_u64();
        st.noise = Some(Noise {
            mean: self.mean,
            sigma: self.sigma,
            clip: self.clip,
            key,
        });
        Ok(())
    }
}

/// One image's drawn noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Mean added.
    pub mean: f32,
    /// Standard deviation.
    pub sigma: f32,
    /// Clamp the result to 0..=1.
    pub clip: bool,
    /// The sample's key: element `i` of the image gets `erase_noise(key, i)`.
    pub key: u64,
}

impl Noise {
    /// Refuses an output the noise cannot be added to as torchvision does (a u8 output).
    pub fn check(spec: &OutputSpec) -> Result<(), PlanError> {
        if spec.dtype == DType::U8 {
            return Err(noise_error(
                "the output is u8; GaussianNoise works on a float output (ToDtype to F32, F16 \
                 or BF16, with Normalize)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// `v + (mean + n * sigma)`, clamped to 0..=1 with `clip`: torchvision's arithmetic in f32,
/// unfused as the kernel computes it.
pub(crate) fn add_noise(v: f32, n: f32, noise: &Noise) -> f32 {
    let out = v + (noise.mean + n * noise.sigma);
    if noise.clip { out.clamp(0.0, 1.0) } else { out }
}

/// The CPU twin of the noise kernel on one image of `spec` (`image`: its bytes, in place).
pub fn noise_image(image: &mut [u8], spec: &OutputSpec, noise: &Noise) {
    let elements = spec.image_bytes() / spec.dtype.size();
    for i in 0..elements {
        let v = load(spec.dtype, image, i);
        let n = erase_noise(noise.key, i as u64);
        store(spec.dtype, image, i, add_noise(v, n, noise), ToU8::Round);
    }
}

/// [`noise_image`] on every image of a batch with noise (`noises[k]` for image `k`).
pub fn noise_batch(batch: &mut [u8], spec: &OutputSpec, noises: &[Option<Noise>]) {
    let size = spec.image_bytes();
    for (image, n) in batch.chunks_exact_mut(size).zip(noises) {
        if let Some(n) = n {
            noise_image(image, spec, n);
        }
    }
}
