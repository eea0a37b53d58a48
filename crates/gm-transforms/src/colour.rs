//! Photometric (colour) operations on the geometry's output, with torchvision's uint8
//! semantics: the geometry's result is rounded to u8 first (as torchvision's uint8 resize
//! returns), then each operation computes in f32 in torchvision's order, clamps to 0..255 and
//! truncates back to an integer, as `torchvision.transforms.v2.functional` does on uint8
//! tensors. The fused kernel (kernels/colour.cuh, `colour_ops`) runs the same arithmetic per
//! pixel; the CPU twin ([`apply_image`]) runs it image by image.
//!
//! Contrast needs a whole-image statistic (the mean of the floored grey image at its point in
//! the chain): on the GPU a statistics pre-pass computes it, see docs/architecture.md.

/// How many colour operations one image's plan holds (ColorJitter's four plus room for
/// grayscale, solarize, posterize and invert).
pub const MAX_COLOUR_OPS: usize = 8;

/// One photometric operation with its parameter, applied to RGB values in 0..255.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ColourOp {
    /// `F.adjust_brightness`: `v * factor`.
    Brightness(f64),
    /// `F.adjust_contrast`: blend with the image's mean grey.
    Contrast(f64),
    /// `F.adjust_saturation`: blend with the pixel's grey.
    Saturation(f64),
    /// `F.adjust_hue`: rotate the hue by this fraction of a turn, in -0.5..=0.5.
    Hue(f64),
    /// `F.rgb_to_grayscale(num_output_channels=3)`: every channel the pixel's grey.
    Grayscale,
    /// `F.solarize`: values at or above the threshold are inverted.
    Solarize(f64),
    /// `F.posterize`: keep the top `bits` bits.
    Posterize(u8),
    /// `F.invert`: `255 - v`.
    Invert,
    /// `F.autocontrast`: each channel stretched from its min..max over the image to 0..255.
    Autocontrast,
    /// `F.equalize`: each channel mapped through its histogram's cumulative distribution.
    Equalize,
    /// `F.adjust_sharpness`: blend with the 3x3 smoothed image (border pixels kept); a factor
    /// below 1 blurs, above 1 sharpens.
    Sharpness(f64),
}

impl ColourOp {
    /// Whether the operation needs a statistic of the whole image (a pre-pass on the GPU).
    pub fn needs_stats(self) -> bool {
        matches!(
            self,
            ColourOp::Contrast(_) | ColourOp::Autocontrast | ColourOp::Equalize
        )
    }

    /// Whether the operation reads neighbouring pixels (the GPU recomputes them per tap, so
    /// a plan holds at most one such operation).
    pub fn reads_neighbours(self) -> bool {
        matches!(self, ColourOp::Sharpness(_))
    }

    /// Whether the operation leaves every image unchanged.
    pub fn is_identity(self) -> bool {
        match self {
            ColourOp::Brightness(f)
            | ColourOp::Contrast(f)
            | ColourOp::Saturation(f)
            | ColourOp::Sharpness(f) => f == 1.0,
            ColourOp::Hue(h) => h == 0.0,
            ColourOp::Posterize(bits) => bits >= 8,
            ColourOp::Solarize(t) => t > 255.0,
            ColourOp::Grayscale
            | ColourOp::Invert
            | ColourOp::Autocontrast
            | ColourOp::Equalize => false,
        }
    }

    /// The kernel's encoding: (code, a, b), the factors rounded to f32 as torch rounds a
    /// Python float scalar for a float32 tensor (`b` = `1 - factor`, computed in f64 first).
    pub(crate) fn encode(self) -> (i32, f32, f32) {
        let blend = |f: f64| (f as f32, (1.0 - f) as f32);
        match self {
            ColourOp::Brightness(f) => (1, f as f32, 0.0),
            ColourOp::Contrast(f) => (2, blend(f).0, blend(f).1),
            ColourOp::Saturation(f) => (3, blend(f).0, blend(f).1),
            ColourOp::Hue(h) => (4, h as f32, 0.0),
            ColourOp::Grayscale => (5, 0.0, 0.0),
            ColourOp::Solarize(t) => (6, t as f32, 0.0),
            ColourOp::Posterize(bits) => (7, f32::from(bits.min(8)), 0.0),
            ColourOp::Invert => (8, 0.0, 0.0),
            ColourOp::Autocontrast => (9, 0.0, 0.0),
            ColourOp::Equalize => (10, 0.0, 0.0),
            ColourOp::Sharpness(f) => (11, blend(f).0, blend(f).1),
        }
    }
}

/// The colour operations of one image, in order (a fixed-capacity list, so plans stay `Copy`).
#[derive(Clone, Copy)]
pub struct ColourOps {
    ops: [ColourOp; MAX_COLOUR_OPS],
    len: usize,
}

// By the operations held: the unused slots are filler.
impl PartialEq for ColourOps {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for ColourOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Default for ColourOps {
    fn default() -> Self {
        ColourOps::NONE
    }
}

impl ColourOps {
    /// No colour operation.
    pub const NONE: ColourOps = ColourOps {
        ops: [ColourOp::Invert; MAX_COLOUR_OPS],
        len: 0,
    };

    /// The list of `ops`, or `None` if there are more than [`MAX_COLOUR_OPS`].
    pub fn from_ops(ops: &[ColourOp]) -> Option<ColourOps> {
        let mut out = ColourOps::NONE;
        ops.iter().try_for_each(|&op| out.push(op))?;
        Some(out)
    }

    /// Appends `op`; `None` when the list is full.
    pub fn push(&mut self, op: ColourOp) -> Option<()> {
        *self.ops.get_mut(self.len)? = op;
        self.len += 1;
        Some(())
    }

    /// The operations, in order.
    pub fn as_slice(&self) -> &[ColourOp] {
        &self.ops[..self.len]
    }

    /// Whether there is no operation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many statistics pre-passes the list needs on the GPU.
    pub fn stats_passes(&self) -> usize {
        self.as_slice().iter().filter(|op| op.needs_stats()).count()
    }
}

/// torchvision's grey of an RGB pixel, `r*0.2989 + g*0.587 + b*0.114` as torch computes it
/// (`add_` with `alpha` is a fused multiply-add in its CPU kernels).
pub(crate) fn grey(rgb: [f32; 3]) -> f32 {
    rgb[2].mul_add(0.114, rgb[1].mul_add(0.587, rgb[0] * 0.2989))
}

/// torchvision's `_blend` on uint8: `a*ratio + b*(1-ratio)`, clamped, truncated.
fn blend(a: f32, b: f32, ratio: f32, one_minus: f32) -> f32 {
    b.mul_add(one_minus, a * ratio).clamp(0.0, 255.0).trunc()
}

/// A whole-image statistic: the mean grey (contrast), or per-channel min and max
/// (autocontrast).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stat {
    /// The operation needs none.
    None,
    /// Mean of the floored grey.
    Mean(f32),
    /// Per-channel minimum and maximum.
    Range([f32; 3], [f32; 3]),
    /// Per-channel lookup table (equalize).
    Lut(Box<[[u8; 256]; 3]>),
}

/// One operation on one pixel (values integral in 0..255); `stat` is the whole-image
/// statistic the operation needs, if any.
pub(crate) fn apply_pixel(op: ColourOp, rgb: [f32; 3], stat: &Stat) -> [f32; 3] {
    let (_, a, b) = op.encode();
    match (op, stat) {
        (ColourOp::Contrast(_), &Stat::Mean(mean)) => rgb.map(|v| blend(v, mean, a, b)),
        (ColourOp::Autocontrast, &Stat::Range(lo, hi)) => autocontrast(rgb, lo, hi),
        (ColourOp::Equalize, Stat::Lut(lut)) => {
            [0, 1, 2].map(|c| f32::from(lut[c][rgb[c] as usize]))
        }
        _ => apply_point(op, rgb, a, b),
    }
}

/// torchvision's `autocontrast_image` on uint8: `(v - min) / ((max - min) / 255)`, clamped and
/// truncated; a flat channel (max == min) is left as it is.
fn autocontrast(rgb: [f32; 3], lo: [f32; 3], hi: [f32; 3]) -> [f32; 3] {
    let mut out = rgb;
    for c in 0..3 {
        let (min, inv_scale) = if hi[c] == lo[c] {
            (0.0, 1.0)
        } else {
            (lo[c], (hi[c] - lo[c]) * (1.0f64 / 255.0) as f32)
        };
        out[c] = ((rgb[c] - min) / inv_scale).clamp(0.0, 255.0).trunc();
    }
    out
}

/// The operations that read nothing but the pixel; `a`, `b` as [`ColourOp::encode`] gives.
fn apply_point(op: ColourOp, rgb: [f32; 3], a: f32, b: f32) -> [f32; 3] {
    match op {
        ColourOp::Brightness(_) => rgb.map(|v| (v * a).clamp(0.0, 255.0).trunc()),
        ColourOp::Saturation(_) => {
            let g = grey(rgb).floor();
            rgb.map(|v| blend(v, g, a, b))
        }
        ColourOp::Hue(_) => crate::hsv::shift_hue(rgb, a),
        ColourOp::Grayscale => [grey(rgb).trunc(); 3],
        ColourOp::Solarize(_) => rgb.map(|v| if v >= a { 255.0 - v } else { v }),
        ColourOp::Posterize(bits) => {
            let mask = (0xff00u32 >> bits.min(8)) as u8;
            rgb.map(|v| f32::from(v as u8 & mask))
        }
        ColourOp::Invert => rgb.map(|v| 255.0 - v),
        // Statistics operations without their statistic: not reached (see apply_image).
        ColourOp::Contrast(_)
        | ColourOp::Autocontrast
        | ColourOp::Equalize
        | ColourOp::Sharpness(_) => rgb,
    }
}

/// The statistic `op` needs of the image `pixels` (at its point in the chain).
pub(crate) fn statistic(op: ColourOp, pixels: &[[f32; 3]]) -> Stat {
    match op {
        ColourOp::Contrast(_) => Stat::Mean(mean_grey(pixels)),
        ColourOp::Autocontrast => {
            let (mut lo, mut hi) = ([255.0f32; 3], [0.0f32; 3]);
            for p in pixels {
                for c in 0..3 {
                    lo[c] = lo[c].min(p[c]);
                    hi[c] = hi[c].max(p[c]);
                }
            }
            Stat::Range(lo, hi)
        }
        ColourOp::Equalize => {
            let mut hist = [[0u32; 256]; 3];
            for p in pixels {
                for c in 0..3 {
                    hist[c][p[c] as usize] += 1;
                }
            }
            Stat::Lut(Box::new(hist.map(|h| equalize_lut(&h))))
        }
        _ => Stat::None,
    }
}

/// torchvision's `equalize_image` lookup table of one channel's histogram: the cumulative
/// count before each value, in steps of (pixels not of the largest value) / 255, rounded;
/// the identity when that step is 0 (a nearly flat channel).
pub(crate) fn equalize_lut(hist: &[u32; 256]) -> [u8; 256] {
    let total: u32 = hist.iter().sum();
    let top = hist.iter().rposition(|&n| n > 0).unwrap_or(0);
    let step = (total - hist[top]) / 255;
    let mut lut = [0u8; 256];
    let mut cum = 0u32;
    for v in 0..256 {
        lut[v] = if step == 0 {
            v as u8
        } else if v == 0 {
            0
        } else {
            ((cum + step / 2) / step).min(255) as u8
        };
        cum += hist[v];
    }
    lut
}

/// The mean of the floored grey image (`F.adjust_contrast`'s statistic): the integer sum
/// over the image divided once, as the GPU pre-pass computes it.
fn mean_grey(pixels: &[[f32; 3]]) -> f32 {
    let sum: u64 = pixels.iter().map(|&p| grey(p).floor() as u64).sum();
    mean_of_sum(sum, pixels.len())
}

/// `sum / n` as the kernels compute a statistic's mean.
fn mean_of_sum(sum: u64, n: usize) -> f32 {
    (sum as f64 / n.max(1) as f64) as f32
}

/// The 3x3 weights of `F.adjust_sharpness`' smoothing: 1/13 around, 5/13 in the middle.
pub(crate) const SMOOTH: [f32; 2] = [(1.0f64 / 13.0) as f32, (5.0f64 / 13.0) as f32];

/// `F.adjust_sharpness` on uint8: inside the border, `v + (1 - f) * (round(smooth) - v)`,
/// clamped and truncated; images of 2 pixels or fewer across are left alone, as the border.
fn sharpen(pixels: &mut [[f32; 3]], width: usize, one_minus: f32) {
    let height = pixels.len() / width.max(1);
    if width <= 2 || height <= 2 {
        return;
    }
    let src = pixels.to_vec();
    for y in 1..height - 1 {
        for x in 1..width - 1 {
            let v = src[y * width + x];
            let smooth = neighbourhood_sum(&src, width, x, y);
            pixels[y * width + x] = [0, 1, 2].map(|c| {
                let blur = smooth[c].round_ties_even();
                (blur - v[c])
                    .mul_add(one_minus, v[c])
                    .clamp(0.0, 255.0)
                    .trunc()
            });
        }
    }
}

/// The smoothing's weighted sum around (`x`, `y`), row by row, as the kernel adds it.
pub(crate) fn neighbourhood_sum(src: &[[f32; 3]], width: usize, x: usize, y: usize) -> [f32; 3] {
    let mut sum = [0.0f32; 3];
    for yy in y - 1..=y + 1 {
        for xx in x - 1..=x + 1 {
            let w = SMOOTH[usize::from(xx == x && yy == y)];
            let t = src[yy * width + xx];
            for (s, t) in sum.iter_mut().zip(t) {
                *s += t * w;
            }
        }
    }
    sum
}

/// Applies `ops` in order to a whole image (`pixels`: the geometry's output, row-major rows
/// of `width` pixels), after rounding it to u8 as torchvision's uint8 geometry does.
pub fn apply_image(ops: &ColourOps, pixels: &mut [[f32; 3]], width: usize) {
    for p in pixels.iter_mut() {
        *p = p.map(|v| v.round_ties_even().clamp(0.0, 255.0));
    }
    for &op in ops.as_slice() {
        if let ColourOp::Sharpness(_) = op {
            sharpen(pixels, width, op.encode().2);
            continue;
        }
        let stat = statistic(op, pixels);
        for p in pixels.iter_mut() {
            *p = apply_pixel(op, *p, &stat);
        }
    }
}
