//! COCO polygons rasterized as the COCO API rasterizes them (pycocotools' `frPyObjects`):
//! the outline walked at 5x resolution, the crossings of pixel columns kept, and the mask
//! encoded from where each column's runs start and stop. Equal to pycocotools' masks, not
//! merely close: an object's area and IoU-based metrics depend on the exact pixels.

use super::CocoIssue;
use super::rle::{Rle, check_size};

const SCALE: f64 = 5.0;

/// The mask of polygon `xy` (x0, y0, x1, y1, ...) on an `h` x `w` image.
pub fn polygon_mask(xy: &[f64], height: u32, width: u32) -> Result<Rle, CocoIssue> {
    if xy.len() < 6 || !xy.len().is_multiple_of(2) || !xy.iter().all(|v| v.is_finite()) {
        return Err(CocoIssue::Mask(format!(
            "a polygon of {} coordinates (at least 3 finite points)",
            xy.len()
        )));
    }
    check_size(height, width)?;
    // The outline is walked point by point: a point far off the image would make that walk
    // as long as the distance.
    let reach = 4.0 * f64::from(width.max(height)) + 16.0;
    if xy.iter().any(|v| v.abs() > reach) {
        return Err(CocoIssue::Mask(format!(
            "a polygon point beyond {reach} pixels of a {width}x{height} image"
        )));
    }
    let (x, y): (Vec<i64>, Vec<i64>) = xy
        .chunks_exact(2)
        .map(|p| (c_int(SCALE * p[0] + 0.5), c_int(SCALE * p[1] + 0.5)))
        .unzip();
    let (u, v) = outline(&x, &y);
    let (xs, ys) = column_crossings(&u, &v, height, width);
    Ok(encode(&xs, &ys, height, width))
}

/// C's `(int)` on x86: truncation, and `INT_MIN` for NaN and values out of range (the COCO
/// API's arithmetic, whose masks are the reference).
fn c_int(f: f64) -> i64 {
    if f.is_nan() || f >= 2_147_483_648.0 || f <= -2_147_483_649.0 {
        i64::from(i32::MIN)
    } else {
        f.trunc() as i64
    }
}

/// Every point of the closed outline through (x, y) at the 5x resolution, edge by edge.
fn outline(x: &[i64], y: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let k = x.len();
    let (mut u, mut v) = (Vec::new(), Vec::new());
    for j in 0..k {
        let (mut xs, mut xe, mut ys, mut ye) = (x[j], x[(j + 1) % k], y[j], y[(j + 1) % k]);
        let (dx, dy) = ((xe - xs).abs(), (ys - ye).abs());
        let flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
        if flip {
            std::mem::swap(&mut xs, &mut xe);
            std::mem::swap(&mut ys, &mut ye);
        }
        if dx >= dy {
            // A repeated point (dx = dy = 0) divides 0 by 0, as the COCO API does.
            let s = (ye - ys) as f64 / dx as f64;
            for d in 0..=dx {
                let t = if flip { dx - d } else { d };
                u.push(t + xs);
                v.push(c_int(ys as f64 + s * t as f64 + 0.5));
            }
        } else {
            let s = (xe - xs) as f64 / dy as f64;
            for d in 0..=dy {
                let t = if flip { dy - d } else { d };
                v.push(t + ys);
                u.push(c_int(xs as f64 + s * t as f64 + 0.5));
            }
        }
    }
    (u, v)
}

/// Where the outline crosses from one column of the 5x grid to the next, brought back to
/// pixel columns (only crossings on a pixel's centre line count) and rows.
fn column_crossings(u: &[i64], v: &[i64], height: u32, width: u32) -> (Vec<i64>, Vec<i64>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for j in 1..u.len() {
        if u[j] == u[j - 1] {
            continue;
        }
        let xd = if u[j] < u[j - 1] { u[j] } else { u[j] - 1 } as f64;
        let xd = (xd + 0.5) / SCALE - 0.5;
        if xd.floor() != xd || xd < 0.0 || xd > f64::from(width) - 1.0 {
            continue;
        }
        let yd = if v[j] < v[j - 1] { v[j] } else { v[j - 1] } as f64;
        let yd = ((yd + 0.5) / SCALE - 0.5)
            .clamp(0.0, f64::from(height))
            .ceil();
        xs.push(xd as i64);
        ys.push(yd as i64);
    }
    (xs, ys)
}

/// The runs between the crossings: each crossing toggles the mask from its row down.
fn encode(xs: &[i64], ys: &[i64], height: u32, width: u32) -> Rle {
    let (h, w) = (i64::from(height), i64::from(width));
    let mut a: Vec<i64> = xs.iter().zip(ys).map(|(x, y)| x * h + y).collect();
    a.push(h * w);
    a.sort_unstable();
    let mut p = 0;
    for t in &mut a {
        let here = *t;
        *t -= p;
        p = here;
    }
    let mut counts: Vec<i64> = Vec::with_capacity(a.len());
    let mut j = 0;
    if let Some(&first) = a.first() {
        counts.push(first);
        j = 1;
    }
    while j < a.len() {
        if a[j] > 0 {
            counts.push(a[j]);
            j += 1;
        } else {
            j += 1;
            if j < a.len()
                && let Some(last) = counts.last_mut()
            {
                *last += a[j];
                j += 1;
            }
        }
    }
    Rle {
        height,
        width,
        counts: counts.into_iter().map(|c| c.max(0) as u32).collect(),
    }
}
