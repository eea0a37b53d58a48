//! `F.adjust_hue` on one uint8 pixel, step for step as torchvision computes it: to float
//! (`v * (1/255)`), RGB to HSV (Pillow's formulas, as `_rgb_to_hsv`), shift the hue, back to
//! RGB (`_hsv_to_rgb`), then `x * 255.999` truncated (torchvision's float-to-uint8 rule).

/// The pixel `rgb` (integral values in 0..255) with its hue turned by `hue` (a turn is 1).
pub(crate) fn shift_hue(rgb: [f32; 3], hue: f32) -> [f32; 3] {
    let [h, s, v] = rgb_to_hsv(rgb.map(|c| c * (1.0f64 / 255.0) as f32));
    let h = remainder1(h + hue);
    hsv_to_rgb(h, s, v).map(|c| (c * (255.0f64 + 1.0 - 1e-3) as f32).trunc())
}

/// Python's `x % 1.0` (torch's `remainder`): in [0, 1) also for negative `x`.
fn remainder1(x: f32) -> f32 {
    let m = x % 1.0;
    if m < 0.0 { m + 1.0 } else { m }
}

fn rgb_to_hsv([r, g, b]: [f32; 3]) -> [f32; 3] {
    let maxc = r.max(g).max(b);
    let minc = r.min(g).min(b);
    let eqc = maxc == minc;
    let range = maxc - minc;
    // Where max == min the divisors are 1: torchvision's guard against 0/0.
    let s = range / if eqc { 1.0 } else { maxc };
    let div = if eqc { 1.0 } else { range };
    let (rc, gc, bc) = ((maxc - r) / div, (maxc - g) / div, (maxc - b) / div);
    let h = if maxc == r {
        bc - gc
    } else if maxc == g {
        (rc + 2.0) - bc
    } else {
        (gc + 4.0) - rc
    };
    let h = (h * (1.0f64 / 6.0) as f32 + 1.0) % 1.0;
    [h, s, maxc]
}

fn hsv_to_rgb(h: f32, s: f32, v: f32) -> [f32; 3] {
    let h6 = h * 6.0;
    let i = h6.floor();
    let f = h6 - i;
    let sxf = s * f;
    let one_minus_s = 1.0 - s;
    let q = ((1.0 - sxf) * v).clamp(0.0, 1.0);
    let t = ((sxf + one_minus_s) * v).clamp(0.0, 1.0);
    let p = (one_minus_s * v).clamp(0.0, 1.0);
    match (i as i32).rem_euclid(6) {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}
