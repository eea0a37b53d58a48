//! GaussianBlur (torchvision.transforms.v2.GaussianBlur) and its CPU twin.
//!
//! A blur reads a neighbourhood of the geometry's output, so it does not fold into the fused
//! kernel's one sampling grid (every tap would resample the source). The fused kernel writes
//! the image before the blur as u8 HWC ([`Blur::fused_spec`]), which is also where torchvision
//! blurs (it blurs the uint8 image and rounds back to uint8); the blur pass
//! ([`BlurKernel`](crate::BlurKernel), CPU twin [`blur_image`]) convolves rows then columns
//! with torchvision's 1-D kernels and reflect padding, rounds half to even as `round_()` does,
//! then applies the output's normalize, dtype and layout.

use gm_cuda::DType;

use crate::elements::{ToU8, index, store};
use crate::plan::{PlanError, PlanState, SampleRng, Transform};
use crate::types::{Layout, OutputSpec};

/// torchvision's `GaussianBlur(kernel_size, sigma=(0.1, 2.0))`: sigma drawn uniformly from
/// `sigma` per sample (one value for both axes, as `make_params` draws it), kernel sizes odd
/// and positive, reflect padding. It blurs the u8 image of the steps before it, which must be
/// crops, resizes, flips and colour operations; after it come only flips, `Normalize`,
/// `ToDtype`, `ToBgr` and `Grey` (the grey conversion and channel order apply before the
/// blur, which treats channels alike).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianBlur {
    kernel_size: (u32, u32),
    sigma: (f64, f64),
}

impl GaussianBlur {
    /// Checks the arguments as torchvision does: `kernel_size` (width, height) odd and
    /// positive, `0 < sigma.0 <= sigma.1`, finite.
    pub fn new(kernel_size: (u32, u32), sigma: (f64, f64)) -> Result<GaussianBlur, PlanError> {
        let (kx, ky) = kernel_size;
        if kx == 0 || ky == 0 || kx % 2 == 0 || ky % 2 == 0 {
            return Err(blur_error(format!(
                "kernel size {kernel_size:?}: values should be odd and positive"
            )));
        }
        if !(0.0 < sigma.0 && sigma.0 <= sigma.1 && sigma.1.is_finite()) {
            return Err(blur_error(format!(
                "sigma {sigma:?}: values should be positive and of the form (min, max)"
            )));
        }
        Ok(GaussianBlur { kernel_size, sigma })
    }

    /// A square kernel with torchvision's default sigma range (0.1, 2.0).
    pub fn square(kernel_size: u32) -> Result<GaussianBlur, PlanError> {
        GaussianBlur::new((kernel_size, kernel_size), (0.1, 2.0))
    }

    /// The kernel size (width, height).
    pub fn kernel_size(&self) -> (u32, u32) {
        self.kernel_size
    }

    /// The sigma range.
    pub fn sigma(&self) -> (f64, f64) {
        self.sigma
    }
}

fn blur_error(reason: String) -> PlanError {
    PlanError::Step {
        step: "GaussianBlur",
        reason,
    }
}

impl Transform for GaussianBlur {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        st.check_after_noise("GaussianBlur")?;
        if st.blur.is_some() {
            return Err(blur_error("a chain blurs once".into()));
        }
        if st.spec.dtype != DType::U8 || st.spec.scale != [1.0; 3] || st.spec.bias != [0.0; 3] {
            return Err(blur_error(
                "after Normalize or ToDtype to floats; the blur works on the u8 image, put it first"
                    .into(),
            ));
        }
        let (kx, ky) = self.kernel_size;
        // torch's reflect padding needs the padding smaller than the image.
        if kx / 2 >= st.width || ky / 2 >= st.height {
            return Err(blur_error(format!(
                "kernel {kx}x{ky} needs reflect padding ({}, {}) smaller than the {}x{} image",
                kx / 2,
                ky / 2,
                st.width,
                st.height
            )));
        }
        // `torch.empty(1).uniform_(lo, hi).item()`: a float32 draw.
        let sigma = rng.uniform(self.sigma.0, self.sigma.1) as f32;
        st.blur = Some(Blur {
            kernel: self.kernel_size,
            sigma,
        });
        Ok(())
    }
}

/// One image's drawn blur.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blur {
    /// Kernel width and height (odd).
    pub kernel: (u32, u32),
    /// Standard deviation, both axes.
    pub sigma: f32,
}

impl Blur {
    /// What the fused kernel writes for a blurred output of `spec`: the same size, channels
    /// and channel order as u8 HWC, without normalize.
    pub fn fused_spec(spec: &OutputSpec) -> OutputSpec {
        OutputSpec {
            layout: Layout::Hwc,
            dtype: DType::U8,
            scale: [1.0; 3],
            bias: [0.0; 3],
            ..*spec
        }
    }

    /// The horizontal 1-D kernel.
    pub fn weights_x(&self) -> Vec<f32> {
        gaussian_kernel1d(self.kernel.0, self.sigma)
    }

    /// The vertical 1-D kernel.
    pub fn weights_y(&self) -> Vec<f32> {
        gaussian_kernel1d(self.kernel.1, self.sigma)
    }
}

/// torchvision's `_get_gaussian_kernel1d` in float32: `x = linspace(-lim, lim, k)` with
/// `lim = (k - 1) / (2 sqrt 2)`, then `softmax(-(x / sigma)^2)`.
pub fn gaussian_kernel1d(k: u32, sigma: f32) -> Vec<f32> {
    let n = k as usize;
    let lim = (f64::from(k) - 1.0) / (2.0 * std::f64::consts::SQRT_2);
    let (start, end) = (-lim as f32, lim as f32);
    let step = if n > 1 {
        (end - start) / (n - 1) as f32
    } else {
        0.0
    };
    // torch's linspace: from the start for the first half, from the end for the rest.
    let x = (0..n).map(|i| {
        if i < n / 2 {
            start + step * i as f32
        } else {
            end - step * (n - 1 - i) as f32
        }
    });
    let v: Vec<f32> = x.map(|x| -((x / sigma) * (x / sigma))).collect();
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = v.iter().map(|&v| (v - max).exp()).collect();
    let inv = 1.0 / e.iter().sum::<f32>();
    e.iter().map(|&e| e * inv).collect()
}

/// Reflect padding's source index of `i` in `0..n` (`i` at most `n - 1` outside it).
pub(crate) fn reflect(i: i64, n: i64) -> usize {
    let r = if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    };
    r as usize
}

/// The CPU twin of the blur pass on one image: `src` is the fused kernel's u8 HWC image of
/// [`Blur::fused_spec`]`(spec)`, `out` one image of `spec`. `None` copies the image through
/// `spec`'s normalize, dtype and layout unchanged. Sums run tap by tap with fused
/// multiply-adds in the kernel's order.
pub fn blur_image(src: &[u8], spec: &OutputSpec, blur: Option<&Blur>, out: &mut [u8]) {
    let (w, h, ch) = (spec.width as usize, spec.height as usize, spec.channels());
    let (wx, wy) = match blur {
        Some(b) => (b.weights_x(), b.weights_y()),
        None => (vec![1.0], vec![1.0]),
    };
    let (rx, ry) = ((wx.len() / 2) as i64, (wy.len() / 2) as i64);
    let mut rows = vec![0.0f32; w * h * ch];
    for y in 0..h {
        for x in 0..w {
            for c in 0..ch {
                let mut s = 0.0f32;
                for (i, &k) in wx.iter().enumerate() {
                    let xx = reflect(x as i64 + i as i64 - rx, w as i64);
                    s = k.mul_add(f32::from(src[(y * w + xx) * ch + c]), s);
                }
                rows[(y * w + x) * ch + c] = s;
            }
        }
    }
    for y in 0..h {
        for x in 0..w {
            for c in 0..ch {
                let mut s = 0.0f32;
                for (j, &k) in wy.iter().enumerate() {
                    let yy = reflect(y as i64 + j as i64 - ry, h as i64);
                    s = k.mul_add(rows[(yy * w + x) * ch + c], s);
                }
                let v = s.round_ties_even().clamp(0.0, 255.0);
                let o = v * spec.scale[c] + spec.bias[c];
                store(spec.dtype, out, index(spec, c, x, y), o, ToU8::Round);
            }
        }
    }
}

/// [`blur_image`] on a batch: image `k` of `src` (images of [`Blur::fused_spec`]`(spec)`)
/// with `blurs[k]` into image `k` of `out`.
pub fn blur_batch(src: &[u8], spec: &OutputSpec, blurs: &[Option<Blur>], out: &mut [u8]) {
    let fused = Blur::fused_spec(spec).image_bytes();
    let chunks = src
        .chunks_exact(fused)
        .zip(out.chunks_exact_mut(spec.image_bytes()));
    for ((s, o), b) in chunks.zip(blurs) {
        blur_image(s, spec, b.as_ref(), o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_normalized_symmetric_and_peaked() {
        for (k, s) in [(1, 0.5), (3, 0.1), (5, 1.3), (9, 2.0), (31, 7.0)] {
            let w = gaussian_kernel1d(k, s);
            assert_eq!(w.len(), k as usize);
            assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{k} {s}");
            for i in 0..w.len() / 2 {
                assert!((w[i] - w[w.len() - 1 - i]).abs() < 1e-7);
                assert!(w[i] <= w[i + 1]);
            }
        }
    }

    #[test]
    fn reflect_mirrors_without_repeating_the_edge() {
        let r: Vec<usize> = (-2..7).map(|i| reflect(i, 5)).collect();
        assert_eq!(r, [2, 1, 0, 1, 2, 3, 4, 3, 2]);
    }

    #[test]
    fn arguments_are_checked() {
        assert!(GaussianBlur::new((4, 3), (0.1, 2.0)).is_err());
        assert!(GaussianBlur::new((3, 0), (0.1, 2.0)).is_err());
        assert!(GaussianBlur::new((3, 3), (0.0, 2.0)).is_err());
        assert!(GaussianBlur::new((3, 3), (2.0, 1.0)).is_err());
        assert!(GaussianBlur::new((3, 3), (1.0, f64::INFINITY)).is_err());
        assert!(GaussianBlur::new((5, 3), (1.0, 1.0)).is_ok());
    }

    #[test]
    fn a_flat_image_stays_flat_and_no_blur_copies() {
        let spec = OutputSpec {
            width: 7,
            height: 5,
            ..PlanState::new(7, 5).spec
        };
        let src = vec![77u8; 7 * 5 * 3];
        let mut out = vec![0u8; spec.image_bytes()];
        let b = Blur {
            kernel: (5, 3),
            sigma: 1.7,
        };
        blur_image(&src, &spec, Some(&b), &mut out);
        assert_eq!(out, src);
        let ramp: Vec<u8> = (0..src.len()).map(|i| (i * 7 % 251) as u8).collect();
        blur_image(&ramp, &spec, None, &mut out);
        assert_eq!(out, ramp);
    }
}
