//! COCO's run-length masks: runs of 0s and 1s alternating (0s first) down the columns of an
//! `h` x `w` mask, in the text form of COCO's JSON (LEB128-like 5-bit groups, each count
//! after the second stored relative to the one two before) or as a plain list of counts.
//! Masks decode to the layout torchvision's `Mask` has: rows of bytes, 0 or 1.

use super::CocoIssue;

/// The largest mask gm decodes, in pixels (16384 x 16384): a file claiming more is refused
/// rather than allocated.
pub const MAX_MASK_PIXELS: u64 = 1 << 28;

/// Refuses masks above [`MAX_MASK_PIXELS`].
pub(crate) fn check_size(height: u32, width: u32) -> Result<(), CocoIssue> {
    let pixels = u64::from(height) * u64::from(width);
    if pixels > MAX_MASK_PIXELS {
        return Err(CocoIssue::Mask(format!(
            "a {width}x{height} mask, above the {MAX_MASK_PIXELS} pixels gm decodes"
        )));
    }
    Ok(())
}

/// A mask as runs: `counts` alternate 0s and 1s down the columns, summing to `h * w`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rle {
    /// Height.
    pub height: u32,
    /// Width.
    pub width: u32,
    /// Run lengths, 0s first.
    pub counts: Vec<u32>,
}

impl Rle {
    /// Runs from a plain list of counts, checked to cover the mask exactly.
    pub fn new(height: u32, width: u32, counts: Vec<u32>) -> Result<Rle, CocoIssue> {
        check_size(height, width)?;
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if total != u64::from(height) * u64::from(width) {
            return Err(CocoIssue::Mask(format!(
                "run lengths sum to {total}, not {height} x {width} = {}",
                u64::from(height) * u64::from(width)
            )));
        }
        Ok(Rle {
            height,
            width,
            counts,
        })
    }

    /// Runs from COCO's compressed text (`"counts": "..."` with `"size": [h, w]`).
    pub fn from_text(height: u32, width: u32, text: &str) -> Result<Rle, CocoIssue> {
        let bad = |why: &str| CocoIssue::Mask(format!("compressed RLE: {why}"));
        let mut counts: Vec<u32> = Vec::new();
        let mut bytes = text.bytes().peekable();
        while bytes.peek().is_some() {
            let (mut x, mut shift) = (0i64, 0u32);
            loop {
                let b = bytes.next().ok_or_else(|| bad("a count ends mid-way"))?;
                if !(48..48 + 64).contains(&b) || shift > 30 {
                    return Err(bad(
                        "a character outside the 64 it uses, or a count too long",
                    ));
                }
                let c = i64::from(b - 48);
                x |= (c & 0x1f) << shift;
                shift += 5;
                if c & 0x20 == 0 {
                    if c & 0x10 != 0 {
                        x |= -1i64 << shift;
                    }
                    break;
                }
            }
            if counts.len() > 2 {
                x += i64::from(counts[counts.len() - 2]);
            }
            counts.push(u32::try_from(x).map_err(|_| bad("a negative run length"))?);
        }
        Rle::new(height, width, counts)
    }

    /// COCO's compressed text of these runs.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (i, &c) in self.counts.iter().enumerate() {
            let mut x = i64::from(c);
            if i > 2 {
                x -= i64::from(self.counts[i - 2]);
            }
            loop {
                let mut group = x & 0x1f;
                x >>= 5;
                let more = if group & 0x10 != 0 { x != -1 } else { x != 0 };
                if more {
                    group |= 0x20;
                }
                out.push(char::from(48 + group as u8));
                if !more {
                    break;
                }
            }
        }
        out
    }

    /// The mask, row by row, one byte (0 or 1) per pixel.
    pub fn decode(&self) -> Vec<u8> {
        let mut mask = vec![0u8; self.height as usize * self.width as usize];
        self.set_ones(&mut mask);
        mask
    }

    /// Writes the mask into `out` (its first `h * w` bytes), row by row, one byte (0 or 1)
    /// per pixel; runs past the mask's end (counts not made by [`Rle::new`]) are cut there.
    pub fn decode_into(&self, out: &mut [u8]) {
        let n = self.height as usize * self.width as usize;
        if let Some(out) = out.get_mut(..n) {
            out.fill(0);
            self.set_ones(out);
        }
    }

    /// Sets the mask's pixels in `out`, exactly `h * w` bytes, row by row.
    fn set_ones(&self, out: &mut [u8]) {
        let (h, w) = (self.height as usize, self.width as usize);
        if h == 0 {
            return;
        }
        let (mut at, mut set) = (0usize, false);
        for &run in &self.counts {
            let run = (run as usize).min(h * w - at);
            if set {
                // Down the columns: each column's part of the run is a strided walk (no
                // division per pixel; the rows a column touches stay cached for the next).
                let (mut col, mut row, mut left) = (at / h, at % h, run);
                while left > 0 {
                    let n = left.min(h - row);
                    out[row * w + col..]
                        .iter_mut()
                        .step_by(w)
                        .take(n)
                        .for_each(|p| *p = 1);
                    (left, row, col) = (left - n, 0, col + 1);
                }
            }
            at += run;
            set = !set;
        }
    }

    /// The union of several masks of one size (pycocotools' `merge`); `None` for none.
    pub fn union(masks: &[Rle]) -> Result<Option<Rle>, CocoIssue> {
        let Some(first) = masks.first() else {
            return Ok(None);
        };
        if let [one] = masks {
            // pycocotools' merge of one mask is that mask.
            return Ok(Some(one.clone()));
        }
        let (h, w) = (first.height, first.width);
        if let Some(m) = masks.iter().find(|m| (m.height, m.width) != (h, w)) {
            return Err(CocoIssue::Mask(format!(
                "masks of {}x{} and {}x{} in one object",
                w, h, m.width, m.height
            )));
        }
        Ok(Some(Rle {
            height: h,
            width: w,
            counts: union_counts(masks, u64::from(h) * u64::from(w)),
        }))
    }

    /// The mask as the transforms take it ([`TargetGeometry::mask`] moves it with its image).
    ///
    /// [`TargetGeometry::mask`]: gm_transforms::targets::TargetGeometry::mask
    pub fn to_mask(&self) -> gm_transforms::targets::Mask {
        gm_transforms::targets::Mask {
            width: self.width,
            height: self.height,
            data: self.decode(),
        }
    }

    /// The spans of 1s, `[start, length]` in COCO's order (down the columns), as a GPU loader
    /// uploads a mask; spans past the mask's end (counts not made by [`Rle::new`]) are cut
    /// there.
    pub fn ones(&self) -> impl Iterator<Item = [u32; 2]> + '_ {
        let total = u64::from(self.height) * u64::from(self.width);
        let mut at = 0u64;
        self.counts.iter().enumerate().filter_map(move |(k, &run)| {
            let start = at;
            let run = u64::from(run).min(total.saturating_sub(start));
            at += run;
            // start + run <= total <= MAX_MASK_PIXELS for a mask of Rle::new; the rest is cut.
            (k % 2 == 1 && run > 0)
                .then(|| Some([u32::try_from(start).ok()?, u32::try_from(run).ok()?]))
                .flatten()
        })
    }

    /// The number of pixels set.
    pub fn area(&self) -> u64 {
        self.counts
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&c| u64::from(c))
            .sum()
    }
}

/// The runs of the union of `masks` (`total` pixels each), 0s first and no empty run but a
/// leading one, as the union's pixel plane would give them; made by merging the masks' spans
/// of 1s, without that plane (which was most of the cost of an object of several polygons).
fn union_counts(masks: &[Rle], total: u64) -> Vec<u32> {
    let mut ones: Vec<(u64, u64)> = Vec::new();
    for m in masks {
        let mut at = 0u64;
        for (i, &run) in m.counts.iter().enumerate() {
            let end = (at + u64::from(run)).min(total);
            if i % 2 == 1 && end > at {
                ones.push((at, end));
            }
            at = end;
        }
    }
    ones.sort_unstable();
    let mut counts = Vec::with_capacity(2 * ones.len() + 1);
    let mut zeros_from = 0u64;
    let mut span: Option<(u64, u64)> = None;
    let mut close = |(start, end): (u64, u64), counts: &mut Vec<u32>| {
        counts.push((start - zeros_from) as u32);
        counts.push((end - start) as u32);
        zeros_from = end;
    };
    for (start, end) in ones {
        match &mut span {
            Some((_, open_end)) if start <= *open_end => *open_end = (*open_end).max(end),
            _ => {
                if let Some(done) = span.replace((start, end)) {
                    close(done, &mut counts);
                }
            }
        }
    }
    if let Some(done) = span {
        close(done, &mut counts);
    }
    if zeros_from < total || counts.is_empty() {
        counts.push((total - zeros_from) as u32);
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition: pixel k of the column-major order is row k % h of column k / h.
    fn reference(rle: &Rle) -> Vec<u8> {
        let (h, w) = (rle.height as usize, rle.width as usize);
        let mut mask = vec![0u8; h * w];
        let mut at = 0usize;
        for (i, &run) in rle.counts.iter().enumerate() {
            for k in at..at + run as usize {
                mask[(k % h) * w + k / h] = (i % 2) as u8;
            }
            at += run as usize;
        }
        mask
    }

    proptest! {
        #[test]
        fn decodes_as_the_column_major_definition(
            height in 1u32..40,
            width in 1u32..40,
            cuts in proptest::collection::vec(0.0f64..1.0, 0..12),
        ) {
            let rle = from_cuts(height, width, &cuts);
            prop_assert_eq!(rle.decode(), reference(&rle));
        }

        #[test]
        fn spans_of_ones_write_the_decoded_mask(
            height in 1u32..40,
            width in 1u32..40,
            cuts in proptest::collection::vec(0.0f64..1.0, 0..12),
        ) {
            let rle = from_cuts(height, width, &cuts);
            let mut runs = gm_transforms::targets::MaskRuns::new(width, height);
            runs.push(rle.ones());
            prop_assert_eq!(runs.to_stack().data, rle.decode());
            let ones: u64 = runs.spans.iter().map(|s| u64::from(s[1])).sum();
            prop_assert_eq!(ones, rle.area());
        }
    }

    /// The runs of a column-major 0/1 sequence, 0s first.
    fn runs(values: &[u8]) -> Vec<u32> {
        let mut counts = Vec::new();
        let (mut current, mut n) = (0u8, 0u32);
        for &v in values {
            if v != current {
                counts.push(n);
                (current, n) = (v, 0);
            }
            n += 1;
        }
        counts.push(n);
        counts
    }

    /// The union by its definition: every mask's 1s set in one plane, its runs taken.
    fn union_by_plane(masks: &[Rle]) -> Vec<u32> {
        let n = masks[0].height as usize * masks[0].width as usize;
        let mut column_major = vec![0u8; n];
        for m in masks {
            let mut at = 0usize;
            for (i, &run) in m.counts.iter().enumerate() {
                if i % 2 == 1 {
                    column_major[at..at + run as usize].fill(1);
                }
                at += run as usize;
            }
        }
        runs(&column_major)
    }

    /// A valid mask of `n` pixels from cut points in [0, 1).
    fn from_cuts(height: u32, width: u32, cuts: &[f64]) -> Rle {
        let n = height as usize * width as usize;
        let mut at: Vec<usize> = cuts.iter().map(|c| (c * n as f64) as usize).collect();
        at.push(n);
        at.sort_unstable();
        let mut last = 0;
        let counts = at
            .iter()
            .map(|&a| {
                let c = a - last;
                last = a;
                c as u32
            })
            .collect();
        Rle::new(height, width, counts).unwrap()
    }

    proptest! {
        #[test]
        fn unions_equal_the_plane_definition(
            height in 0u32..12,
            width in 0u32..12,
            cuts in proptest::collection::vec(proptest::collection::vec(0.0f64..1.0, 0..10), 2..5),
        ) {
            let masks: Vec<Rle> = cuts.iter().map(|c| from_cuts(height, width, c)).collect();
            let union = Rle::union(&masks).unwrap().unwrap();
            prop_assert_eq!(&union.counts, &union_by_plane(&masks));
            let total: u64 = union.counts.iter().map(|&c| u64::from(c)).sum();
            prop_assert_eq!(total, u64::from(height) * u64::from(width));
        }
    }

    #[test]
    fn runs_past_the_end_are_cut() {
        let rle = Rle {
            height: 2,
            width: 2,
            counts: vec![1, 9],
        };
        assert_eq!(rle.decode(), vec![0, 1, 1, 1]);
        let mut short = [7u8; 3];
        rle.decode_into(&mut short);
        assert_eq!(short, [7, 7, 7]);
    }
}
