//! Masks as the spans of 1s of their runs down the columns (COCO's run-length order: pixel
//! `(x, y)` at index `x * height + y`). A GPU loader uploads these, a few bytes an object,
//! where a plane is `width * height` bytes, and writes the planes on the device
//! ([`MaskRunsKernel`](crate::MaskRunsKernel)); [`MaskRuns::to_stack`] is that kernel's CPU
//! twin.

use super::MaskStack;

/// Masks of `width` x `height` as their spans of 1s down the columns, mask after mask.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MaskRuns {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// For each mask, how many of `spans` are its.
    pub counts: Vec<u32>,
    /// `[start, length]` of each span of 1s (column-major indices), mask after mask.
    pub spans: Vec<[u32; 2]>,
}

impl MaskRuns {
    /// No masks yet, of `width` x `height`.
    pub fn new(width: u32, height: u32) -> MaskRuns {
        MaskRuns {
            width,
            height,
            ..MaskRuns::default()
        }
    }

    /// Adds a mask with these spans of 1s, each cut to the plane (empty ones left out).
    pub fn push(&mut self, spans: impl IntoIterator<Item = [u32; 2]>) {
        let pixels = u64::from(self.width) * u64::from(self.height);
        let before = self.spans.len();
        for [start, len] in spans {
            let len = u64::from(len).min(pixels.saturating_sub(u64::from(start)));
            if len > 0 {
                // `len` <= pixels - start fits as start + len <= pixels, itself below 2^32
                // for any mask a span can address.
                self.spans.push([start, len as u32]);
            }
        }
        self.counts.push((self.spans.len() - before) as u32);
    }

    /// Number of masks.
    pub fn planes(&self) -> u32 {
        self.counts.len() as u32
    }

    /// Bytes of the spans as the kernel reads them (two `u32` each).
    pub fn span_bytes(&self) -> usize {
        8 * self.spans.len()
    }

    /// The spans as the kernel reads them, native-endian `u32` start then length, into the
    /// first [`span_bytes`](Self::span_bytes) of `out`.
    pub fn write_spans(&self, out: &mut [u8]) {
        for (s, at) in self.spans.iter().zip(out.chunks_exact_mut(8)) {
            at[..4].copy_from_slice(&s[0].to_ne_bytes());
            at[4..].copy_from_slice(&s[1].to_ne_bytes());
        }
    }

    /// The masks, each row by row, one byte (0 or 1) per pixel.
    pub fn to_stack(&self) -> MaskStack {
        let (w, h) = (self.width as usize, self.height as usize);
        let plane = w * h;
        let mut data = vec![0u8; plane * self.counts.len()];
        let mut spans = self.spans.iter();
        for (out, &count) in data.chunks_exact_mut(plane.max(1)).zip(&self.counts) {
            for &[start, len] in spans.by_ref().take(count as usize) {
                for i in start as usize..start as usize + len as usize {
                    out[(i % h) * w + i / h] = 1;
                }
            }
        }
        MaskStack {
            width: self.width,
            height: self.height,
            planes: self.planes(),
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_run_down_the_columns_and_are_cut_to_the_plane() {
        // 3 wide, 2 high: index 1 is (0, 1), 2..4 are column 1, index 5 is (2, 1).
        let mut runs = MaskRuns::new(3, 2);
        runs.push([[1, 3], [5, 9], [7, 1]]);
        runs.push([]);
        assert_eq!(runs.counts, [2, 0]);
        assert_eq!(runs.spans, [[1, 3], [5, 1]]);
        let stack = runs.to_stack();
        assert_eq!(stack.planes, 2);
        assert_eq!(&stack.data[..6], &[0, 1, 0, 1, 1, 1]);
        assert_eq!(&stack.data[6..], &[0; 6]);
        let mut bytes = vec![0u8; runs.span_bytes()];
        runs.write_spans(&mut bytes);
        assert_eq!(&bytes[8..12], &5u32.to_ne_bytes());
    }
}
