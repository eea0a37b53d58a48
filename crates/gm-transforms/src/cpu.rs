//! CPU twins of the kernels: the same arithmetic in the same order, on host memory, as the
//! reference GPU results are checked against.

use gm_cuda::DType;

use crate::chroma::{ChromaFilter, chroma_taps};
use crate::colour;
use crate::types::{
    Crop, FusedOp, Interp, Layout, Matrix, Orientation, OutputSpec, PixelFormat, PrePass, Warp,
};

/// A source image in host memory (the twin of [`SourceImage`](crate::SourceImage)).
#[derive(Debug, Clone, Copy)]
pub struct HostImage<'a> {
    /// Interleaved pixels, or the luma plane.
    pub data: &'a [u8],
    /// The interleaved chroma plane (the NV and P formats).
    pub chroma: &'a [u8],
    /// Bytes between rows.
    pub pitch: usize,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Pixel layout.
    pub format: PixelFormat,
    /// YUV matrix.
    pub matrix: Matrix,
    /// Full-range YUV.
    pub full_range: bool,
    /// How the stored pixels are shown; `width` and `height` are the stored size.
    pub orientation: Orientation,
    /// How subsampled chroma is brought to luma resolution.
    pub chroma_filter: ChromaFilter,
}

impl<'a> HostImage<'a> {
    /// A tightly packed interleaved RGB u8 image: the host twin of [`SourceImage::rgb8`].
    ///
    /// [`SourceImage::rgb8`]: crate::SourceImage::rgb8
    pub fn rgb8(data: &'a [u8], width: u32, height: u32) -> HostImage<'a> {
        HostImage {
            data,
            chroma: &[],
            pitch: width as usize * 3,
            width,
            height,
            format: PixelFormat::Rgb8,
            matrix: Matrix::default(),
            full_range: true,
            orientation: Orientation::STORED,
            chroma_filter: ChromaFilter::default(),
        }
    }

    /// Three RGB planes in `data` (`[3, H, W]`), rows `pitch` bytes apart and planes `plane`
    /// bytes apart: the host twin of [`SourceImage::rgb8_planar`].
    ///
    /// [`SourceImage::rgb8_planar`]: crate::SourceImage::rgb8_planar
    pub fn rgb8_planar(
        data: &'a [u8],
        plane: usize,
        pitch: usize,
        width: u32,
        height: u32,
    ) -> HostImage<'a> {
        HostImage {
            pitch,
            format: PixelFormat::Rgb8Planar { plane },
            ..HostImage::rgb8(data, width, height)
        }
    }

    /// The same image with its chroma brought to luma resolution by `upsampling`.
    pub fn with_chroma(self, upsampling: ChromaFilter) -> HostImage<'a> {
        HostImage {
            chroma_filter: upsampling,
            ..self
        }
    }

    /// The size the twin works in: `width` x `height` turned by the orientation.
    pub fn displayed_size(&self) -> (u32, u32) {
        self.orientation.displayed_size(self.width, self.height)
    }

    /// The whole image as displayed, packed u8 RGB ([`OutputSpec::rgb8`]): the twin of a
    /// frame's plain conversion (`gm frames --format rgb`).
    pub fn to_rgb8(&self) -> Vec<u8> {
        let (w, h) = self.displayed_size();
        let spec = OutputSpec::rgb8(w, h);
        let mut out = vec![0u8; spec.image_bytes()];
        fused(self, &FusedOp::full(w, h), &spec, &mut out);
        out
    }
}

/// A planar 4:2:0 frame (ffmpeg's `yuv420p`, or `yuv420p10le`-style 16-bit little-endian
/// samples with the value in the low `bit_depth` bits) repacked as NVDEC writes surfaces:
/// NV12 or P016, the U and V samples interleaved, one pitch for both planes. What the twin
/// (and the kernel) read, from frames a CPU decoder or ffmpeg gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemiPlanar {
    /// The luma plane, `pitch` bytes a row.
    pub luma: Vec<u8>,
    /// The interleaved chroma plane, `pitch` bytes a row.
    pub chroma: Vec<u8>,
    /// Bytes between rows.
    pub pitch: usize,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// NV12, or P016 with its bit depth.
    pub format: PixelFormat,
}

impl SemiPlanar {
    /// Repacks `yuv` (`width` x `height`, 8-bit when `bit_depth` is 8, else 16-bit samples).
    /// `None` when `yuv` is not that frame's size.
    pub fn from_yuv420p(yuv: &[u8], width: u32, height: u32, bit_depth: u8) -> Option<SemiPlanar> {
        let (w, h) = (width as usize, height as usize);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let bps = if bit_depth > 8 { 2 } else { 1 };
        if yuv.len() != (w * h + 2 * cw * ch) * bps || !(8..=16).contains(&bit_depth) {
            return None;
        }
        let shift = 16 - u32::from(bit_depth);
        let sample = |i: usize| -> [u8; 2] {
            if bps == 1 {
                [yuv[i], 0]
            } else {
                (u16::from_le_bytes([yuv[2 * i], yuv[2 * i + 1]]) << shift).to_le_bytes()
            }
        };
        let pitch = cw * 2 * bps;
        let mut luma = vec![0u8; pitch * h];
        for y in 0..h {
            for x in 0..w {
                let at = y * pitch + x * bps;
                luma[at..at + bps].copy_from_slice(&sample(y * w + x)[..bps]);
            }
        }
        let mut chroma = vec![0u8; pitch * ch];
        let (u0, v0) = (w * h, w * h + cw * ch);
        for c in 0..cw * ch {
            let at = (c / cw) * pitch + (c % cw) * 2 * bps;
            chroma[at..at + bps].copy_from_slice(&sample(u0 + c)[..bps]);
            chroma[at + bps..at + 2 * bps].copy_from_slice(&sample(v0 + c)[..bps]);
        }
        let format = if bps == 1 {
            PixelFormat::Nv12
        } else {
            PixelFormat::P016 { bit_depth }
        };
        Some(SemiPlanar {
            luma,
            chroma,
            pitch,
            width,
            height,
            format,
        })
    }

    /// The twin's view of the frame, converted with `matrix` and `full_range` and shown with
    /// `orientation`; chroma interpolated at the centre siting (see [`HostImage::with_chroma`]).
    pub fn host_image(
        &self,
        matrix: Matrix,
        full_range: bool,
        orientation: Orientation,
    ) -> HostImage<'_> {
        HostImage {
            data: &self.luma,
            chroma: &self.chroma,
            pitch: self.pitch,
            width: self.width,
            height: self.height,
            format: self.format,
            matrix,
            full_range,
            orientation,
            chroma_filter: ChromaFilter::default(),
        }
    }
}

/// The window taps are clamped to, the region that reads the source, the padding fill.
#[derive(Clone, Copy)]
struct Window {
    x0: i64,
    y0: i64,
    x1: i64,
    y1: i64,
    valid: [i64; 4],
    fill: [f32; 3],
    /// torchvision's uint8 antialiased resize, at these precisions (crate::aa_exact).
    aa_exact: Option<(u32, u32)>,
}

fn fetch(p: &HostImage<'_>, win: &Window, x: i64, y: i64) -> [f32; 3] {
    let x = x.clamp(win.x0, win.x1 - 1);
    let y = y.clamp(win.y0, win.y1 - 1);
    if x < win.valid[0] || y < win.valid[1] || x >= win.valid[2] || y >= win.valid[3] {
        return win.fill;
    }
    let (w, h) = p.displayed_size();
    let (x, y) = p
        .orientation
        .stored_position(x as usize, y as usize, w as usize, h as usize);
    fetch_rgb(p, x, y)
}

fn fetch_rgb(p: &HostImage<'_>, x: usize, y: usize) -> [f32; 3] {
    if let PixelFormat::Rgb8Planar { plane } = p.format {
        let i = y * p.pitch + x;
        return [0, 1, 2].map(|c| f32::from(p.data[c * plane + i]));
    }
    let Some(((sx, sy), bps)) = p.format.semi_planar() else {
        let i = y * p.pitch + 3 * x;
        let (a, b, c) = (
            f32::from(p.data[i]),
            f32::from(p.data[i + 1]),
            f32::from(p.data[i + 2]),
        );
        return if p.format == PixelFormat::Rgb8 {
            [a, b, c]
        } else {
            [c, b, a]
        };
    };
    let bit_depth = p.format.bit_depth();
    let maxv = ((1u32 << bit_depth) - 1) as f32;
    let y_ = if bps == 1 {
        f32::from(p.data[y * p.pitch + x])
    } else {
        sample16(p.data, y * p.pitch + 2 * x, bit_depth)
    };
    let (u, v) = match p.chroma_filter {
        ChromaFilter::Cubic { x: hpos, y: vpos } if sx + sy > 0 => {
            interpolated_chroma(p, (x, y), (sx, sy), (hpos, vpos), bps)
        }
        _ => chroma_sample(p, x >> sx, y >> sy, bps),
    };
    yuv_to_rgb(p, y_, u, v, maxv)
}

/// A 16-bit sample holding `bit_depth` bits in its high bits (P016's layout).
fn sample16(b: &[u8], i: usize, bit_depth: u8) -> f32 {
    f32::from(u16::from_le_bytes([b[i], b[i + 1]]) >> (16 - u32::from(bit_depth)))
}

/// Chroma sample (`cx`, `cy`) as (U, V).
fn chroma_sample(p: &HostImage<'_>, cx: usize, cy: usize, bps: usize) -> (f32, f32) {
    let c = cy * p.pitch + 2 * bps * cx;
    if bps == 1 {
        (f32::from(p.chroma[c]), f32::from(p.chroma[c + 1]))
    } else {
        let depth = p.format.bit_depth();
        (
            sample16(p.chroma, c, depth),
            sample16(p.chroma, c + 2, depth),
        )
    }
}

/// The taps of one axis: swscale's filter where the axis is subsampled, else the sample itself.
fn axis_taps(i: usize, luma_len: usize, shift: u32, pos: u16) -> ([usize; 5], [f32; 5]) {
    if shift == 0 {
        return ([i, 0, 0, 0, 0], [1.0, 0.0, 0.0, 0.0, 0.0]);
    }
    let t = chroma_taps(i, luma_len, pos);
    (t.index, t.weight)
}

/// (U, V) at luma sample `at` (stored coordinates): swscale's horizontal pass, capped where
/// its 15-bit intermediate saturates, then its vertical pass (the kernel's order).
fn interpolated_chroma(
    p: &HostImage<'_>,
    at: (usize, usize),
    shifts: (u32, u32),
    pos: (u16, u16),
    bps: usize,
) -> (f32, f32) {
    let (xi, xw) = axis_taps(at.0, p.width as usize, shifts.0, pos.0);
    let (yi, yw) = axis_taps(at.1, p.height as usize, shifts.1, pos.1);
    let cap = 32767.0 * 2f32.powi(i32::from(p.format.bit_depth()) - 15);
    let (mut u, mut v) = (0.0f32, 0.0f32);
    for (&cy, &wy) in yi.iter().zip(&yw) {
        if wy == 0.0 {
            continue;
        }
        let (mut hu, mut hv) = (0.0f32, 0.0f32);
        for (&cx, &wx) in xi.iter().zip(&xw) {
            if wx == 0.0 {
                continue;
            }
            let (a, b) = chroma_sample(p, cx, cy, bps);
            hu += wx * a;
            hv += wx * b;
        }
        u += wy * hu.min(cap);
        v += wy * hv.min(cap);
    }
    (u, v)
}

/// The kernel's YUV to RGB conversion, 0..255 a channel.
fn yuv_to_rgb(p: &HostImage<'_>, y_: f32, u: f32, v: f32, maxv: f32) -> [f32; 3] {
    let k = (maxv + 1.0) / 256.0;
    let (yn, cb, cr) = if p.full_range {
        (y_ / maxv, (u - 128.0 * k) / maxv, (v - 128.0 * k) / maxv)
    } else {
        (
            (y_ - 16.0 * k) / (219.0 * k),
            (u - 128.0 * k) / (224.0 * k),
            (v - 128.0 * k) / (224.0 * k),
        )
    };
    let (kr, kb) = match p.matrix {
        Matrix::Bt709 => (0.2126f32, 0.0722f32),
        Matrix::Bt2020 => (0.2627, 0.0593),
        Matrix::Bt601 => (0.299, 0.114),
    };
    let kg = 1.0 - kr - kb;
    let r = yn + 2.0 * (1.0 - kr) * cr;
    let b = yn + 2.0 * (1.0 - kb) * cb;
    let g = (yn - kr * r - kb * b) / kg;
    [r, g, b].map(|v| v.clamp(0.0, 1.0) * 255.0)
}

/// OpenCV's and torch's cubic convolution weights (A = -0.75) for a fraction `t`.
fn cubic_weights(t: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let (x0, x1, x2) = (1.0 + t, t, 1.0 - t);
    let w0 = ((A * x0 - 5.0 * A) * x0 + 8.0 * A) * x0 - 4.0 * A;
    let w1 = ((A + 2.0) * x1 - (A + 3.0)) * x1 * x1 + 1.0;
    let w2 = ((A + 2.0) * x2 - (A + 3.0)) * x2 * x2 + 1.0;
    [w0, w1, w2, 1.0 - w0 - w1 - w2]
}

/// torch's antialiased-bilinear span: first index, tap count, centre, inverse scale.
fn aa_span(start: f32, scale: f32, i: usize, lo: i64, hi: i64) -> (i64, i64, f32, f32) {
    let support = if scale >= 1.0 { scale } else { 1.0 };
    let invscale = if scale >= 1.0 { 1.0 / scale } else { 1.0 };
    let center = start + scale * (i as f32 + 0.5);
    let xmin = ((center - support + 0.5) as i64).max(lo);
    let xmax = ((center + support + 0.5) as i64).min(hi);
    (xmin, (xmax - xmin).max(1), center, invscale)
}

fn aa_weight(j: i64, center: f32, invscale: f32) -> f32 {
    (1.0 - ((j as f32 - center + 0.5) * invscale).abs()).max(0.0)
}

/// The fused operation on one image, written into `out` (one slot: `spec.image_bytes()`):
/// the geometry per pixel, then the colour operations (image by image, as torchvision), then
/// normalize and store.
pub fn fused(src: &HostImage<'_>, op: &FusedOp, spec: &OutputSpec, out: &mut [u8]) {
    let (ow, oh) = (spec.width as usize, spec.height as usize);
    let (sw, sh) = src.displayed_size();
    let (w4, v4, fill) = op.windows(sw, sh);
    let win = Window {
        x0: i64::from(w4[0]),
        y0: i64::from(w4[1]),
        x1: i64::from(w4[2]),
        y1: i64::from(w4[3]),
        valid: v4.map(i64::from),
        fill,
        aa_exact: crate::aa_exact::precisions(op, spec, src.format, sw, sh),
    };
    let mut pixels: Vec<[f32; 3]> = (0..oh)
        .flat_map(|y| (0..ow).map(move |x| (x, y)))
        .map(|(x, y)| sample(src, op, spec, &win, x, y))
        .collect();
    if !op.colour.is_empty() {
        colour::apply_image(&op.colour, &mut pixels, ow);
    }
    for (i, rgb) in pixels.into_iter().enumerate() {
        store(spec, out, i % ow.max(1), i / ow.max(1), rgb);
    }
}

/// The twin of [`FusedKernel::run_passes`](crate::FusedKernel::run_passes) on one image:
/// each pre-pass of `pre` in order (the first reads `src`, each later one the one before's
/// u8 RGB output), then `op` into `out` as [`fused`].
pub fn fused_passes(
    src: &HostImage<'_>,
    pre: &[PrePass],
    op: &FusedOp,
    spec: &OutputSpec,
    out: &mut [u8],
) {
    let Some((first, rest)) = pre.split_first() else {
        return fused(src, op, spec, out);
    };
    let mut image = vec![0u8; first.spec.image_bytes()];
    fused(src, &first.op, &first.spec, &mut image);
    let mut size = (first.spec.width, first.spec.height);
    for p in rest {
        let mut next = vec![0u8; p.spec.image_bytes()];
        fused(
            &HostImage::rgb8(&image, size.0, size.1),
            &p.op,
            &p.spec,
            &mut next,
        );
        (image, size) = (next, (p.spec.width, p.spec.height));
    }
    fused(&HostImage::rgb8(&image, size.0, size.1), op, spec, out);
}

/// Where output pixel (x, y) samples the source: the crop, the scale, and the output position
/// before flipping.
struct At {
    crop: Crop,
    sx: f32,
    sy: f32,
    ox: f32,
    oy: f32,
}

/// The geometry's value (RGB, 0..255, unrounded) of output pixel (`x`, `y`).
fn sample(
    src: &HostImage<'_>,
    op: &FusedOp,
    spec: &OutputSpec,
    win: &Window,
    x: usize,
    y: usize,
) -> [f32; 3] {
    if let Some(w) = &op.warp {
        return warp(src, win, w, x, y);
    }
    let (ow, oh) = (spec.width as usize, spec.height as usize);
    let at = At {
        crop: op.crop,
        sx: op.crop.w / spec.width as f32,
        sy: op.crop.h / spec.height as f32,
        ox: if op.flip_h { ow - 1 - x } else { x } as f32,
        oy: if op.flip_v { oh - 1 - y } else { y } as f32,
    };
    match spec.interp {
        Interp::Nearest => nearest(src, win, &at),
        Interp::Antialias => match win.aa_exact {
            Some(p) => antialias_exact(src, win, &at, (spec.width, spec.height), p),
            None => antialias(src, win, &at),
        },
        Interp::Bicubic => bicubic(src, win, &at),
        Interp::Bilinear => bilinear(src, win, &at),
    }
}

/// The source position output pixel (`x`, `y`) maps to through the warp, in tap units
/// (pixel `i`'s centre at `i`), as the kernel computes it and as torch's CPU `bmm` and
/// grid_sample do: f32, `u * m0` rounded, then one fused multiply-add of `v * m1`, then `+ m2`.
pub(crate) fn warp_position(w: &Warp, x: usize, y: usize) -> (f32, f32) {
    let (m, o, post, s, t) = w.to_f32();
    let (u, v) = (x as f32 + o[0], y as f32 + o[1]);
    let row = |k: usize| v.mul_add(m[k + 1], u * m[k]) + m[k + 2];
    let (px, py, pz) = (row(0), row(3), row(6));
    let (gx, gy) = (px / pz + post, py / pz + post);
    ((gx + 1.0) * s[0] + t[0], (gy + 1.0) * s[1] + t[1])
}

/// torchvision's `_apply_grid_transform` at one output pixel: grid_sample (zeros padding,
/// `align_corners=False`) of the image and of a mask of ones, then `(v - fill) * mask + fill`
/// (bilinear) or the fill where the mask is under 0.5 (nearest).
fn warp(src: &HostImage<'_>, win: &Window, w: &Warp, x: usize, y: usize) -> [f32; 3] {
    let (fx, fy) = warp_position(w, x, y);
    // Far outside (or not a number, past the horizon) reads the fill: NaN becomes -1e6, as
    // the kernel's fmaxf makes it (f32::clamp would keep the NaN).
    let far = |v: f32| if v.is_nan() { -1e6 } else { v.clamp(-1e6, 1e6) };
    let (fx, fy) = (far(fx), far(fy));
    let inside = |xi: i64, yi: i64| xi >= win.x0 && yi >= win.y0 && xi < win.x1 && yi < win.y1;
    if w.nearest {
        let (xi, yi) = (fx.round_ties_even() as i64, fy.round_ties_even() as i64);
        return if inside(xi, yi) {
            fetch_rgb(src, xi as usize, yi as usize)
        } else {
            win.fill
        };
    }
    let (x0f, y0f) = (fx.floor(), fy.floor());
    let (x0, y0) = (x0f as i64, y0f as i64);
    let (e, s) = (fx - x0f, fy - y0f);
    let (wst, nth) = (1.0 - e, 1.0 - s);
    let taps = [
        (x0, y0, wst * nth),
        (x0 + 1, y0, e * nth),
        (x0, y0 + 1, wst * s),
        (x0 + 1, y0 + 1, e * s),
    ];
    let mut acc = [0.0f32; 3];
    let mut mask = 0.0f32;
    for (xi, yi, wt) in taps {
        if inside(xi, yi) {
            let t = fetch_rgb(src, xi as usize, yi as usize);
            for c in 0..3 {
                acc[c] += t[c] * wt;
            }
            mask += wt;
        }
    }
    if w.fill.is_none() {
        // torchvision's fill=None: grid_sample's zeros padding alone.
        return acc;
    }
    [0, 1, 2].map(|c| (acc[c] - win.fill[c]) * mask + win.fill[c])
}

/// Nearest neighbour: the source pixel under the output pixel's centre.
fn nearest(src: &HostImage<'_>, win: &Window, at: &At) -> [f32; 3] {
    let xi = (at.crop.x + (at.ox + 0.5) * at.sx).floor() as i64;
    let yi = (at.crop.y + (at.oy + 0.5) * at.sy).floor() as i64;
    fetch(src, win, xi, yi)
}

/// torchvision's uint8 antialiased resize of an integral crop ([`crate::aa_exact`]).
fn antialias_exact(
    src: &HostImage<'_>,
    win: &Window,
    at: &At,
    out: (u32, u32),
    precisions: (u32, u32),
) -> [f32; 3] {
    let read = |x: i64, y: i64| fetch(src, win, x, y).map(|v| v as u8);
    let c = at.crop;
    crate::aa_exact::sample(
        read,
        (c.x as i64, c.y as i64),
        (c.w as u32, c.h as u32),
        out,
        (at.ox as u32, at.oy as u32),
        precisions,
    )
    .map(f32::from)
}

/// torch's antialiased bilinear: a triangle filter widened by the scale, normalized.
// Index loops on purpose: they mirror the kernel's loops, so the sums add in the same order.
#[allow(clippy::needless_range_loop)]
fn antialias(src: &HostImage<'_>, win: &Window, at: &At) -> [f32; 3] {
    let lox = (at.crop.x.floor() as i64).max(win.x0);
    let hix = ((at.crop.x + at.crop.w).ceil() as i64).min(win.x1);
    let loy = (at.crop.y.floor() as i64).max(win.y0);
    let hiy = ((at.crop.y + at.crop.h).ceil() as i64).min(win.y1);
    let (fx0, nx, cx, ix) = aa_span(at.crop.x, at.sx, at.ox as usize, lox, hix);
    let (fy0, ny, cy, iy) = aa_span(at.crop.y, at.sy, at.oy as usize, loy, hiy);
    let wx_total: f32 = (0..nx).map(|a| aa_weight(fx0 + a, cx, ix)).sum();
    let wy_total: f32 = (0..ny).map(|b| aa_weight(fy0 + b, cy, iy)).sum();
    let mut acc = [0.0f32; 3];
    for b in 0..ny {
        let wy = aa_weight(fy0 + b, cy, iy) / wy_total;
        let mut row = [0.0f32; 3];
        for a in 0..nx {
            let wx = aa_weight(fx0 + a, cx, ix) / wx_total;
            let t = fetch(src, win, fx0 + a, fy0 + b);
            for c in 0..3 {
                row[c] += wx * t[c];
            }
        }
        for c in 0..3 {
            acc[c] += wy * row[c];
        }
    }
    acc
}

/// Bicubic convolution over the 4x4 taps around the sample position.
// Index loops on purpose: they mirror the kernel's loops, so the sums add in the same order.
#[allow(clippy::needless_range_loop)]
fn bicubic(src: &HostImage<'_>, win: &Window, at: &At) -> [f32; 3] {
    let fx = at.crop.x + (at.ox + 0.5) * at.sx - 0.5;
    let fy = at.crop.y + (at.oy + 0.5) * at.sy - 0.5;
    let (x0f, y0f) = (fx.floor(), fy.floor());
    let (wx, wy) = (cubic_weights(fx - x0f), cubic_weights(fy - y0f));
    let (x0, y0) = (x0f as i64, y0f as i64);
    let mut acc = [0.0f32; 3];
    for b in 0..4 {
        let yi = y0 - 1 + b as i64;
        let mut row = [0.0f32; 3];
        for a in 0..4 {
            let t = fetch(src, win, x0 - 1 + a as i64, yi);
            for c in 0..3 {
                row[c] += wx[a] * t[c];
            }
        }
        for c in 0..3 {
            acc[c] += wy[b] * row[c];
        }
    }
    acc
}

/// Bilinear over the 2x2 taps around the sample position.
fn bilinear(src: &HostImage<'_>, win: &Window, at: &At) -> [f32; 3] {
    let fx = at.crop.x + (at.ox + 0.5) * at.sx - 0.5;
    let fy = at.crop.y + (at.oy + 0.5) * at.sy - 0.5;
    let (x0f, y0f) = (fx.floor(), fy.floor());
    let (ax, ay) = (fx - x0f, fy - y0f);
    let (x0, y0) = (x0f as i64, y0f as i64);
    let (t00, t01) = (fetch(src, win, x0, y0), fetch(src, win, x0 + 1, y0));
    let (t10, t11) = (fetch(src, win, x0, y0 + 1), fetch(src, win, x0 + 1, y0 + 1));
    [0, 1, 2].map(|c| {
        let top = t00[c] + (t01[c] - t00[c]) * ax;
        let bot = t10[c] + (t11[c] - t10[c]) * ax;
        top + (bot - top) * ay
    })
}

/// The CPU twin of one slot of [`FusedKernel::run_slots`](crate::FusedKernel::run_slots):
/// copies `image` (one image of `spec`) into the top-left corner of `slot` in `out` and sets
/// the slot's other pixels to its fill, stored as the kernel stores an output value. Refuses
/// an `image` that is not one image of `spec`, an image larger than the slot, and a slot that
/// ends past `out`.
pub fn place_in_slot(
    image: &[u8],
    spec: &OutputSpec,
    slot: &crate::Slot,
    out: &mut [u8],
) -> Result<(), crate::PlanError> {
    let e = spec.dtype.size();
    let ch = spec.channels();
    let (w, h) = (spec.width as usize, spec.height as usize);
    let (sw, sh) = (slot.width as usize, slot.height as usize);
    let end = slot.offset + slot.bytes(spec);
    if image.len() != spec.image_bytes() || w > sw || h > sh || end > out.len() {
        return Err(crate::PlanError::Step {
            step: "batch slot",
            reason: format!(
                "{} bytes of a {w}x{h} image do not fit {slot:?} of a {}-byte batch",
                image.len(),
                out.len()
            ),
        });
    }
    let dst = &mut out[slot.offset..end];
    if w < sw || h < sh {
        let mut fill = vec![0u8; e];
        crate::elements::store(
            spec.dtype,
            &mut fill,
            0,
            slot.fill,
            crate::elements::ToU8::Round,
        );
        for px in dst.chunks_exact_mut(e) {
            px.copy_from_slice(&fill);
        }
    }
    // Rows of the image, each a run of elements in the slot's rows.
    let (planes, run, src_row, dst_row, dst_plane) = match spec.layout {
        Layout::Chw => (ch, w * e, w * e, sw * e, sw * sh * e),
        Layout::Hwc => (1, w * ch * e, w * ch * e, sw * ch * e, 0),
    };
    for p in 0..planes {
        for y in 0..h {
            let from = (p * h + y) * src_row;
            let to = p * dst_plane + y * dst_row;
            dst[to..to + run].copy_from_slice(&image[from..from + run]);
        }
    }
    Ok(())
}

/// Normalizes `rgb` and writes output pixel (`x`, `y`) in the spec's layout and type.
fn store(spec: &OutputSpec, out: &mut [u8], x: usize, y: usize, mut rgb: [f32; 3]) {
    let (ow, oh) = (spec.width as usize, spec.height as usize);
    let esize = spec.dtype.size();
    let channels = spec.channels();
    if spec.grey {
        rgb[0] = 0.2989 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2];
    }
    for c in 0..channels {
        let src_c = if spec.grey {
            0
        } else if spec.bgr {
            2 - c
        } else {
            c
        };
        let v = rgb[src_c] * spec.scale[c] + spec.bias[c];
        let idx = match spec.layout {
            Layout::Chw => c * ow * oh + y * ow + x,
            Layout::Hwc => (y * ow + x) * channels + c,
        };
        let o = &mut out[idx * esize..(idx + 1) * esize];
        match spec.dtype {
            DType::U8 => o[0] = v.round_ties_even().clamp(0.0, 255.0) as u8,
            // Not a kernel output (`ToDtype` refuses it); stored as the u8 path rounds.
            DType::U16 => {
                o.copy_from_slice(&(v.round_ties_even().clamp(0.0, 65535.0) as u16).to_le_bytes())
            }
            DType::F16 => o.copy_from_slice(&half::f16::from_f32(v).to_le_bytes()),
            DType::BF16 => o.copy_from_slice(&half::bf16::from_f32(v).to_le_bytes()),
            DType::F32 => o.copy_from_slice(&v.to_le_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An image in the top-left corner of a larger slot, rows of the slot's width, the rest
    /// the fill; CHW and HWC; a slot past the buffer refused.
    #[test]
    fn place_in_slot_pads_right_and_below() {
        let mut spec = OutputSpec::normalized(2, 1, DType::U8, [0.0; 3], [1.0; 3]);
        let image: Vec<u8> = (1..=6).collect();
        let slot = crate::Slot {
            offset: 1,
            width: 3,
            height: 2,
            fill: 9.4,
        };
        let mut out = vec![0u8; 1 + 18];
        place_in_slot(&image, &spec, &slot, &mut out).unwrap();
        #[rustfmt::skip]
        let chw = [0, 1, 2, 9, 9, 9, 9, 3, 4, 9, 9, 9, 9, 5, 6, 9, 9, 9, 9];
        assert_eq!(out, chw);
        spec.layout = Layout::Hwc;
        place_in_slot(&image, &spec, &slot, &mut out).unwrap();
        let mut hwc = vec![0u8];
        hwc.extend([1, 2, 3, 4, 5, 6]);
        hwc.extend([9; 12]);
        assert_eq!(out, hwc);
        assert!(place_in_slot(&image, &spec, &slot, &mut out[..18]).is_err());
    }

    fn rgb_image(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
        let mut v = Vec::new();
        for y in 0..h {
            for x in 0..w {
                v.extend(f(x, y));
            }
        }
        v
    }

    fn spec(w: u32, h: u32, dtype: DType) -> OutputSpec {
        OutputSpec {
            width: w,
            height: h,
            layout: Layout::Hwc,
            dtype,
            bgr: false,
            grey: false,
            interp: Interp::Bilinear,
            scale: [1.0; 3],
            bias: [0.0; 3],
        }
    }

    fn host(data: &[u8], w: u32, h: u32) -> HostImage<'_> {
        HostImage {
            data,
            chroma: &[],
            pitch: 3 * w as usize,
            width: w,
            height: h,
            format: PixelFormat::Rgb8,
            matrix: Matrix::Bt601,
            full_range: false,
            orientation: Default::default(),
            chroma_filter: Default::default(),
        }
    }

    #[test]
    fn identity_resize_copies_pixels_and_flips_mirror_them() {
        let img = rgb_image(5, 3, |x, y| [x as u8 * 10, y as u8 * 20, 7]);
        let src = host(&img, 5, 3);
        let mut out = vec![0u8; 5 * 3 * 3];
        let op = FusedOp {
            crop: Crop::full(5, 3),
            flip_h: false,
            flip_v: false,
            pad: None,
            colour: colour::ColourOps::NONE,
            warp: None,
        };
        fused(&src, &op, &spec(5, 3, DType::U8), &mut out);
        assert_eq!(out, img);
        fused(
            &src,
            &FusedOp { flip_h: true, ..op },
            &spec(5, 3, DType::U8),
            &mut out,
        );
        assert_eq!(&out[..3], &[40, 0, 7], "first pixel is the last of the row");
    }

    #[test]
    fn planar_rgb_reads_as_its_interleaved_twin() {
        let (w, h) = (23u32, 17u32);
        let img = rgb_image(w, h, |x, y| {
            [
                (x * 11 + y) as u8,
                (y * 13 + x * x) as u8,
                (x * y + 5) as u8,
            ]
        });
        // Planes padded: rows of 29 bytes, planes 700 bytes apart (17 rows take 493).
        let (pitch, plane) = (29usize, 700usize);
        let mut planes = vec![0u8; 2 * plane + pitch * h as usize];
        for (i, px) in img.chunks(3).enumerate() {
            let (x, y) = (i % w as usize, i / w as usize);
            for (c, &v) in px.iter().enumerate() {
                planes[c * plane + y * pitch + x] = v;
            }
        }
        let planar = HostImage::rgb8_planar(&planes, plane, pitch, w, h);
        let op = FusedOp {
            crop: Crop {
                x: 1.5,
                y: 2.0,
                w: 19.25,
                h: 13.0,
            },
            flip_h: true,
            flip_v: false,
            pad: None,
            colour: colour::ColourOps::NONE,
            warp: None,
        };
        for interp in [
            Interp::Nearest,
            Interp::Bilinear,
            Interp::Bicubic,
            Interp::Antialias,
        ] {
            let s = OutputSpec {
                interp,
                ..spec(9, 7, DType::U8)
            };
            let (mut want, mut got) = (vec![0u8; 9 * 7 * 3], vec![0u8; 9 * 7 * 3]);
            fused(&host(&img, w, h), &op, &s, &mut want);
            fused(&planar, &op, &s, &mut got);
            assert_eq!(got, want, "{interp:?}");
        }
        // Planes 0 bytes apart: one grey plane broadcast to three channels.
        let grey = HostImage::rgb8_planar(&planes[..pitch * h as usize], 0, pitch, w, h);
        let mut out = vec![0u8; w as usize * h as usize * 3];
        let whole = FusedOp {
            crop: Crop::full(w, h),
            flip_h: false,
            ..op
        };
        fused(&grey, &whole, &spec(w, h, DType::U8), &mut out);
        for (px, want) in out.chunks(3).zip(img.chunks(3)) {
            assert_eq!(px, [want[0]; 3]);
        }
    }

    #[test]
    fn bilinear_halving_averages_pixel_pairs_like_opencv() {
        // OpenCV's INTER_LINEAR at exactly 2x down samples at source x = 2i + 0.5.
        let img = rgb_image(4, 1, |x, _| [x as u8 * 10, 0, 0]);
        let mut out = vec![0u8; 2 * 3 * 4];
        let op = FusedOp {
            crop: Crop::full(4, 1),
            flip_h: false,
            flip_v: false,
            pad: None,
            colour: colour::ColourOps::NONE,
            warp: None,
        };
        fused(&host(&img, 4, 1), &op, &spec(2, 1, DType::F32), &mut out);
        let r0 = f32::from_le_bytes(out[0..4].try_into().unwrap());
        let r1 = f32::from_le_bytes(out[12..16].try_into().unwrap());
        assert_eq!((r0, r1), (5.0, 25.0));
    }

    #[test]
    fn limited_range_grey_and_white_convert_exactly() {
        // Y=235, U=V=128 is white; Y=16 black, in every matrix.
        for (yv, want) in [(235u8, 255u8), (16, 0), (126, 128)] {
            let luma = [yv; 4];
            let chroma = [128u8; 4];
            for matrix in [Matrix::Bt601, Matrix::Bt709, Matrix::Bt2020] {
                let src = HostImage {
                    data: &luma,
                    chroma: &chroma,
                    pitch: 2,
                    width: 2,
                    height: 2,
                    format: PixelFormat::Nv12,
                    matrix,
                    full_range: false,
                    orientation: Default::default(),
                    chroma_filter: Default::default(),
                };
                let mut out = vec![0u8; 12];
                let op = FusedOp {
                    crop: Crop::full(2, 2),
                    flip_h: false,
                    flip_v: false,
                    pad: None,
                    colour: colour::ColourOps::NONE,
                    warp: None,
                };
                fused(&src, &op, &spec(2, 2, DType::U8), &mut out);
                assert!(
                    out.iter()
                        .all(|&v| (i16::from(v) - i16::from(want)).abs() <= 1),
                    "Y={yv} {matrix:?}: {out:?}"
                );
            }
        }
    }
}
