//! torchvision's uint8 antialiased bilinear resize, exactly: torch's CPU integer arithmetic
//! (aten/src/ATen/native/cpu/UpSampleKernel.cpp, `_compute_index_ranges_int16_weights`, and
//! the AVX2 kernels of UpSampleKernelAVXAntialias.h that torchvision uses on x86).
//!
//! Per axis, PIL's triangle filter widened by the scale gives each output index a span of
//! source taps and weights, computed and normalized in f64, then rounded to int16 at the
//! largest precision (bits) at which the axis's largest weight still fits. The image is
//! resampled horizontally first, each value rounded (`+ 2^(p-1)`, `>> p`) and clamped to
//! u8, then vertically the same way. A float resize rounded once differs from this by one
//! step on about a tenth of the pixels, and later operations (equalize, sharpness,
//! autocontrast) turn that step into more; this path makes whole uint8 chains equal.
//!
//! It applies where torchvision's input is what the kernel reads: an RGB/BGR u8 source and
//! an integral crop inside the image (Resize, RandomResizedCrop, CenterCrop-then-resize).
//! Other sources (video's YUV, fractional crops, padded crops) keep the float filter.
//! `fused.cu`'s `aa_exact_*` functions are the GPU side of the same arithmetic: before each
//! launch `gm_aa_exact_prepare` finds each axis's precision and writes a table of every
//! output column's and row's span and integer weights ([`table_stride`] words each, in the
//! launch's parameter buffer), which the pixels read, so the host plan only tests
//! [`applies`] and sizes the tables. A launch whose every image takes this path runs its own
//! entry points (`gm_fused_aa_exact`, `gm_fused_colour_aa_exact`), without the float
//! filter's and the YUV sources' code and registers.

use crate::types::{FusedOp, Interp, OutputSpec, PixelFormat};

/// The span of one output index on one axis: first source tap (relative to the crop), tap
/// count, the filter's centre and inverse scale.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub first: i64,
    pub count: i64,
    center: f64,
    invscale: f64,
}

/// torch's scale, support and largest tap count for `input` source samples onto `output`.
fn axis(input: u32, output: u32) -> (f64, f64, i64) {
    let scale = f64::from(input) / f64::from(output);
    let support = if scale >= 1.0 { scale } else { 1.0 };
    (scale, support, support.ceil() as i64 * 2 + 1)
}

/// `_compute_indices_min_size_weights_aa` for output index `i`: PIL's bounds.
pub(crate) fn span(input: u32, output: u32, i: u32) -> Span {
    let (scale, support, max_taps) = axis(input, output);
    let center = scale * (f64::from(i) + 0.5);
    let first = ((center - support + 0.5) as i64).max(0);
    let count =
        (((center + support + 0.5) as i64).min(i64::from(input)) - first).clamp(0, max_taps);
    Span {
        first,
        count,
        center,
        invscale: if scale >= 1.0 { 1.0 / scale } else { 1.0 },
    }
}

/// The triangle filter at tap `j` of `s`, unnormalized.
fn filter(s: &Span, j: i64) -> f64 {
    let x = (((j + s.first) as f64 - s.center) + 0.5) * s.invscale;
    let x = x.abs();
    if x < 1.0 { 1.0 - x } else { 0.0 }
}

/// The sum of the span's filter values, in tap order.
fn total(s: &Span) -> f64 {
    (0..s.count).fold(0.0, |t, j| t + filter(s, j))
}

/// Tap `j`'s weight at `precision` bits, rounded as torch rounds it.
pub(crate) fn weight(s: &Span, total: f64, j: i64, precision: u32) -> i32 {
    let w = if total != 0.0 {
        filter(s, j) / total
    } else {
        0.0
    };
    let v = w * f64::from(1u32 << precision);
    if v < 0.0 {
        (-0.5 + v) as i32
    } else {
        (0.5 + v) as i32
    }
}

/// The axis's precision: the first p whose next step would put its largest weight at or
/// over 2^15 (at most 22).
pub fn precision(input: u32, output: u32) -> u32 {
    let mut largest = 0.0f64;
    for i in 0..output {
        let s = span(input, output, i);
        let t = total(&s);
        if t != 0.0 {
            for j in 0..s.count {
                largest = largest.max(filter(&s, j) / t);
            }
        }
    }
    (0..22u32)
        .find(|p| (0.5 + largest * f64::from(1u32 << (p + 1))) as i32 >= 1 << 15)
        .unwrap_or(22)
}

/// Whether `op` resizes an RGB/BGR u8 source of `width` x `height` as torchvision's uint8
/// path would: an antialiased resize of an integral crop inside the image, nothing padded or
/// warped. The GPU computes the axes' precisions itself (`gm_aa_exact_prepare`, one block per
/// image before the launch), so the host's plan pays only for this test.
pub fn applies(
    op: &FusedOp,
    spec: &OutputSpec,
    format: PixelFormat,
    width: u32,
    height: u32,
) -> bool {
    let c = op.crop;
    let whole = |v: f32| v.fract() == 0.0 && v >= 0.0;
    spec.interp == Interp::Antialias
        && op.warp.is_none()
        && op.pad.is_none()
        && format.is_rgb()
        && whole(c.x)
        && whole(c.y)
        && whole(c.w)
        && whole(c.h)
        && c.w >= 1.0
        && c.h >= 1.0
        && c.x + c.w <= width as f32
        && c.y + c.h <= height as f32
}

/// Words (i32) per output index of an axis's table in the kernel's exact path
/// (`gm_aa_exact_prepare` fills it, `aa_exact_sample` reads it): the first tap, the tap
/// count, and room for the axis's most taps.
pub(crate) fn table_stride(input: u32, output: u32) -> usize {
    let (_, _, max_taps) = axis(input, output);
    2 + max_taps.max(0) as usize
}

/// The horizontal and vertical precisions where [`applies`]; `None` where the float filter
/// stays.
pub fn precisions(
    op: &FusedOp,
    spec: &OutputSpec,
    format: PixelFormat,
    width: u32,
    height: u32,
) -> Option<(u32, u32)> {
    applies(op, spec, format, width, height).then(|| {
        (
            precision(op.crop.w as u32, spec.width),
            precision(op.crop.h as u32, spec.height),
        )
    })
}

/// Output pixel (`ox`, `oy`) (before flips) of a crop at (`x0`, `y0`) of `in_w` x `in_h`
/// resized to `out_w` x `out_h`, read through `at(x, y)` (u8 RGB of source pixel x, y): the
/// horizontal pass rounded to u8 for each row the vertical pass reads, then the vertical pass.
pub(crate) fn sample(
    at: impl Fn(i64, i64) -> [u8; 3],
    (x0, y0): (i64, i64),
    (in_w, in_h): (u32, u32),
    (out_w, out_h): (u32, u32),
    (ox, oy): (u32, u32),
    (px, py): (u32, u32),
) -> [u8; 3] {
    let sx = span(in_w, out_w, ox);
    let sy = span(in_h, out_h, oy);
    let (tx, ty) = (total(&sx), total(&sy));
    let mut acc = [1i32 << (py - 1); 3];
    for b in 0..sy.count {
        let wy = weight(&sy, ty, b, py);
        let mut row = [1i32 << (px - 1); 3];
        for a in 0..sx.count {
            let wx = weight(&sx, tx, a, px);
            let t = at(x0 + sx.first + a, y0 + sy.first + b);
            for c in 0..3 {
                row[c] += i32::from(t[c]) * wx;
            }
        }
        for c in 0..3 {
            acc[c] += (row[c] >> px).clamp(0, 255) * wy;
        }
    }
    acc.map(|v| (v >> py).clamp(0, 255) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights of an unchanged axis are the identity, and the precision is torch's 14.
    #[test]
    fn an_unchanged_axis_copies_its_samples() {
        assert_eq!(precision(57, 57), 14);
        for i in 0..57 {
            let s = span(57, 57, i);
            let t = total(&s);
            assert_eq!(s.first, i64::from(i));
            assert_eq!(weight(&s, t, 0, 14), 1 << 14);
            for j in 1..s.count {
                assert_eq!(weight(&s, t, j, 14), 0);
            }
        }
    }

    /// Every output's int16 weights fit in 15 bits and add up to about 2^p.
    #[test]
    fn weights_fit_and_sum_to_one() {
        for (input, output) in [
            (200, 97),
            (133, 61),
            (57, 80),
            (4000, 224),
            (224, 224),
            (3, 1),
        ] {
            let p = precision(input, output);
            assert!((1..=22).contains(&p), "{input}->{output}: {p}");
            for i in 0..output {
                let s = span(input, output, i);
                let t = total(&s);
                let ws: Vec<i32> = (0..s.count).map(|j| weight(&s, t, j, p)).collect();
                assert!(ws.iter().all(|&w| (0..1 << 15).contains(&w)), "{ws:?}");
                let sum: i32 = ws.iter().sum();
                assert!(
                    (sum - (1 << p)).abs() <= s.count as i32,
                    "{input}->{output} {i}: {sum}"
                );
            }
        }
    }
}
