//! COCO polygons rasterized as the COCO API rasterizes them (pycocotools' `frPyObjects`):
//! the outline at 5x resolution, its steps that cross a pixel column's centre line (computed
//! only where a step can cross, rather than walked point by point), and the mask encoded from
//! where each column's runs start and stop. Equal to pycocotools' masks, not
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
    let (h, w) = (i64::from(height), i64::from(width));
    Ok(encode(crossings(&x, &y, h, w), height, width))
}

/// C's `(int)` on x86: truncation, and `INT_MIN` for NaN and values out of range (the COCO
/// API's arithmetic, whose masks are the reference). Rust's cast truncates too, in range.
fn c_int(f: f64) -> i64 {
    if f.is_nan() || f >= 2_147_483_648.0 || f <= -2_147_483_649.0 {
        i64::from(i32::MIN)
    } else {
        f as i64
    }
}

/// One edge of the outline at the 5x resolution, as the COCO API walks it: along x where it
/// is at least as wide as tall ("shallow"), else along y, from its lower end, visited from
/// its first point to its last (`flip`: the lower end is its last point).
struct Edge {
    xs: i64,
    ys: i64,
    /// Steps along the walked axis.
    len: i64,
    shallow: bool,
    flip: bool,
    /// The other axis's change per step.
    slope: f64,
}

impl Edge {
    /// The edge from point `j` to the next (the last point's goes back to the first).
    fn new(x: &[i64], y: &[i64], j: usize) -> Edge {
        let k = x.len();
        let (mut xs, mut xe, mut ys, mut ye) = (x[j], x[(j + 1) % k], y[j], y[(j + 1) % k]);
        let (dx, dy) = ((xe - xs).abs(), (ys - ye).abs());
        let shallow = dx >= dy;
        let flip = (shallow && xs > xe) || (!shallow && ys > ye);
        if flip {
            std::mem::swap(&mut xs, &mut xe);
            std::mem::swap(&mut ys, &mut ye);
        }
        // A repeated point (dx = dy = 0) divides 0 by 0, as the COCO API does.
        let (len, slope) = if shallow {
            (dx, (ye - ys) as f64 / dx as f64)
        } else {
            (dy, (xe - xs) as f64 / dy as f64)
        };
        Edge {
            xs,
            ys,
            len,
            shallow,
            flip,
            slope,
        }
    }

    /// The point `t` steps from the lower end.
    fn at(&self, t: i64) -> (i64, i64) {
        if self.shallow {
            (
                t + self.xs,
                c_int(self.ys as f64 + self.slope * t as f64 + 0.5),
            )
        } else {
            (
                c_int(self.xs as f64 + self.slope * t as f64 + 0.5),
                t + self.ys,
            )
        }
    }

    /// The `d`th point visited.
    fn visited(&self, d: i64) -> (i64, i64) {
        self.at(if self.flip { self.len - d } else { d })
    }
}

/// The crossings ([`crossing`]) of every step of the closed outline through (x, y), the
/// steps between edges included, in no particular order ([`encode`] sorts them).
/// [`crossing`] keeps a step only where it changes column and the smaller of its two columns
/// is 2 more than a multiple of 5, whichever way the step goes; only such steps are computed:
/// one in five of a shallow edge's (each moves one column), and on a steep edge the one step
/// where its column passes each such value.
fn crossings(x: &[i64], y: &[i64], h: i64, w: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut step = |p: (i64, i64), q: (i64, i64)| {
        if let Some(k) = crossing(p, q, h, w) {
            out.push(k);
        }
    };
    let mut prev: Option<(i64, i64)> = None;
    for j in 0..x.len() {
        let e = Edge::new(x, y, j);
        if let Some(p) = prev {
            step(p, e.visited(0));
        }
        if e.shallow {
            let mut t = (2 - e.xs).rem_euclid(5);
            while t < e.len {
                step(e.at(t), e.at(t + 1));
                t += 5;
            }
        } else {
            steep_crossings(&e, &mut step);
        }
        prev = Some(e.visited(e.len));
    }
    out
}

/// The steps of steep edge `e` that change column from a column 2 more than a multiple of 5
/// (or to it, going left). Its column `c_int(xs + slope * t + 0.5)` is monotonic in `t` and
/// moves at most one per step (|slope| < 1), so each column `m` it leaves for `m + 1` is left
/// at exactly one step: estimated from the line, then found exactly by walking from there.
fn steep_crossings(e: &Edge, step: &mut impl FnMut((i64, i64), (i64, i64))) {
    let column = |t: i64| e.at(t).0;
    let (first, last) = (column(0), column(e.len));
    let rising = last >= first;
    let (lo, hi) = if rising { (first, last) } else { (last, first) };
    let mut m = lo + (2 - lo).rem_euclid(5);
    while m < hi {
        // The step t -> t + 1 whose columns are m and m + 1: beyond m after it, not before.
        let beyond = |t: i64| {
            if rising {
                column(t) > m
            } else {
                column(t) <= m
            }
        };
        let guess = ((m + 1) as f64 - 0.5 - e.xs as f64) / e.slope;
        let mut t = (guess.floor() as i64).clamp(0, e.len - 1);
        while t > 0 && beyond(t) {
            t -= 1;
        }
        while t < e.len - 1 && !beyond(t + 1) {
            t += 1;
        }
        step(e.at(t), e.at(t + 1));
        m += 5;
    }
}

/// Where the outline's step from `(pu, pv)` to `(u, v)` crosses from one column of the 5x
/// grid to the next on a pixel's centre line: that pixel column's index times `h` plus the
/// row the crossing starts at, as a column-major position; `None` for other steps.
///
/// The COCO API computes the column as `(xd + 0.5) / 5 - 0.5` in double and keeps it where it
/// is whole: exactly where `xd` is 2 more than a multiple of 5 (the quotient is then `k + 0.5`,
/// which a double holds, and otherwise at least 0.1 from a whole number). Its row,
/// `ceil(clamp((yd + 0.5) / 5 - 0.5, 0, h))`, is likewise `(yd - 2) / 5` rounded up and
/// clamped. Integers here give the same values without the floating-point calls.
fn crossing((pu, pv): (i64, i64), (u, v): (i64, i64), h: i64, w: i64) -> Option<i64> {
    if u == pu {
        return None;
    }
    let xd = if u < pu { u } else { u - 1 } - 2;
    if xd.rem_euclid(5) != 0 {
        return None;
    }
    let column = xd / 5;
    if column < 0 || column > w - 1 {
        return None;
    }
    let yd = pv.min(v) - 2;
    let row = (-((-yd).div_euclid(5))).clamp(0, h);
    Some(column * h + row)
}

/// The runs between the crossings (column-major positions, in outline order): each crossing
/// toggles the mask from its row down.
fn encode(mut a: Vec<i64>, height: u32, width: u32) -> Rle {
    let (h, w) = (i64::from(height), i64::from(width));
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The crossings as the COCO API computes them, in double: the outline's points kept in
    /// full, then each step's column `(xd + 0.5) / 5 - 0.5` kept where whole and on the image,
    /// and its row `ceil(clamp((yd + 0.5) / 5 - 0.5, 0, h))`.
    fn reference_crossings(xy: &[f64], height: u32, width: u32) -> Vec<i64> {
        let (x, y): (Vec<i64>, Vec<i64>) = xy
            .chunks_exact(2)
            .map(|p| (c_int(SCALE * p[0] + 0.5), c_int(SCALE * p[1] + 0.5)))
            .unzip();
        let (mut u, mut v) = (Vec::new(), Vec::new());
        outline(&x, &y, |a, b| {
            u.push(a);
            v.push(b);
        });
        let h = i64::from(height);
        let mut out = Vec::new();
        for j in 1..u.len() {
            if u[j] == u[j - 1] {
                continue;
            }
            let xd = if u[j] < u[j - 1] { u[j] } else { u[j] - 1 } as f64;
            let xd = (xd + 0.5) / SCALE - 0.5;
            if xd.floor() != xd || xd < 0.0 || xd > f64::from(width) - 1.0 {
                continue;
            }
            let yd = v[j].min(v[j - 1]) as f64;
            let yd = ((yd + 0.5) / SCALE - 0.5)
                .clamp(0.0, f64::from(height))
                .ceil();
            out.push(xd as i64 * h + yd as i64);
        }
        out
    }

    /// Every point of the closed outline, edge by edge, each from its first point to its
    /// last (the vertex between two edges twice), as the COCO API walks it.
    fn outline(x: &[i64], y: &[i64], mut visit: impl FnMut(i64, i64)) {
        for j in 0..x.len() {
            let e = Edge::new(x, y, j);
            for d in 0..=e.len {
                let (u, v) = e.visited(d);
                visit(u, v);
            }
        }
    }

    /// The crossings as `polygon_mask` finds them, sorted (their order does not matter to
    /// `encode`).
    fn integer_crossings(xy: &[f64], height: u32, width: u32) -> Vec<i64> {
        let (x, y): (Vec<i64>, Vec<i64>) = xy
            .chunks_exact(2)
            .map(|p| (c_int(SCALE * p[0] + 0.5), c_int(SCALE * p[1] + 0.5)))
            .unzip();
        let mut out = crossings(&x, &y, i64::from(height), i64::from(width));
        out.sort_unstable();
        out
    }

    fn sorted(mut v: Vec<i64>) -> Vec<i64> {
        v.sort_unstable();
        v
    }

    proptest! {
        /// Points on and off the image, repeated ones and sub-pixel steps: the integer
        /// crossings equal the COCO API's double arithmetic.
        #[test]
        fn integer_crossings_equal_the_coco_apis_doubles(
            height in 1u32..60,
            width in 1u32..60,
            points in proptest::collection::vec((-80.0f64..140.0, -80.0f64..140.0), 3..14),
            snap in 0u8..3,
        ) {
            let xy: Vec<f64> = points
                .iter()
                .flat_map(|&(a, b)| [a, b])
                // Whole and half pixels as well as arbitrary positions.
                .map(|c| match snap { 0 => c, 1 => c.round(), _ => (c * 2.0).round() / 2.0 })
                .collect();
            prop_assert_eq!(
                integer_crossings(&xy, height, width),
                sorted(reference_crossings(&xy, height, width))
            );
        }
    }

    proptest! {
        /// Photo-sized images and long edges (hundreds of steps at the 5x resolution), where
        /// the steps computed are a fraction of those walked.
        #[test]
        fn crossings_of_long_edges_equal_the_walks(
            height in 100u32..700,
            width in 100u32..700,
            points in proptest::collection::vec((-50.0f64..750.0, -50.0f64..750.0), 3..24),
        ) {
            let xy: Vec<f64> = points.iter().flat_map(|&(a, b)| [a, b]).collect();
            prop_assert_eq!(
                integer_crossings(&xy, height, width),
                sorted(reference_crossings(&xy, height, width))
            );
        }
    }

    #[test]
    fn crossings_far_off_the_image_and_at_its_edges_match() {
        for (xy, h, w) in [
            (vec![0.0, 0.0, 10.0, 0.0, 10.0, 10.0], 10u32, 10u32),
            (vec![-5.0, -5.0, 15.0, -5.0, 15.0, 15.0, -5.0, 15.0], 10, 10),
            (vec![3.0, 3.0, 3.0, 3.0, 3.0, 3.0], 7, 7),
            (vec![1e4, -1e4, -1e4, 1e4, 2.0, 2.0], 5000, 5000),
            (vec![0.4, 0.4, 0.6, 0.4, 0.5, 0.6], 1, 1),
        ] {
            assert_eq!(
                integer_crossings(&xy, h, w),
                sorted(reference_crossings(&xy, h, w)),
                "{xy:?}"
            );
        }
    }
}
