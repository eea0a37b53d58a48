//! How subsampled chroma is brought to luma resolution before the YUV to RGB conversion.
//!
//! [`ChromaFilter::Cubic`] computes what ffmpeg's swscale computes with
//! `accurate_rnd+full_chroma_int` and its default bicubic filter (Keys' cubic, a = -0.6), at
//! the chroma location the stream signals: the same tap positions (including the first rows'
//! and columns' filters, whose start swscale truncates toward zero and which therefore lose a
//! tap), taps outside the plane clamped to its edge, each filter normalised, and the
//! horizontal pass capped where swscale's 15-bit intermediate saturates. RGB from it is
//! within one step of ffmpeg's conversion of the same frame. [`ChromaFilter::Replicate`]
//! repeats each chroma sample over the luma samples it covers: one read instead of up to 25.
//!
//! [`chroma_taps`] is the arithmetic the kernel (`chroma_taps` in fused.cu) repeats.

/// How the fused kernel and its twin read the chroma of 4:2:0 and 4:2:2 sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChromaFilter {
    /// Each chroma sample repeated over the luma samples it covers (faster, not ffmpeg's).
    Replicate,
    /// Chroma interpolated with swscale's bicubic filter at the chroma sample position
    /// (`x`, `y`): where the first chroma sample sits, in 1/256 of a luma sample right of and
    /// below the first luma sample (ffmpeg's `in_h_chr_pos` / `in_v_chr_pos`). MPEG-2's
    /// "left" siting is (0, 128), "centre" (128, 128), "top-left" (0, 0).
    Cubic {
        /// Horizontal position, 0..=256.
        x: u16,
        /// Vertical position, 0..=256.
        y: u16,
    },
}

impl Default for ChromaFilter {
    /// Interpolated at the centre of the luma samples a chroma sample covers: what swscale
    /// assumes where nothing is signalled.
    fn default() -> Self {
        ChromaFilter::Cubic { x: 128, y: 128 }
    }
}

impl ChromaFilter {
    /// The kernel's code: 0 replicate, else `1 | x << 1 | y << 10`.
    pub(crate) fn code(self) -> i32 {
        match self {
            ChromaFilter::Replicate => 0,
            ChromaFilter::Cubic { x, y } => {
                1 | (i32::from(x.min(256)) << 1) | (i32::from(y.min(256)) << 10)
            }
        }
    }
}

/// Taps of one axis of the chroma filter: up to five chroma indices and their weights
/// (weights of zero mark unused taps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChromaTaps {
    /// Chroma sample indices, clamped to the plane.
    pub index: [usize; 5],
    /// Normalised weights.
    pub weight: [f32; 5],
}

/// Keys' cubic convolution kernel with a = -0.6, swscale's default bicubic.
fn keys(d: f32) -> f32 {
    const A: f32 = -0.6;
    if d < 1.0 {
        ((A + 2.0) * d - (A + 3.0)) * d * d + 1.0
    } else if d < 2.0 {
        ((A * d - 5.0 * A) * d + 8.0 * A) * d - 4.0 * A
    } else {
        0.0
    }
}

/// The filter swscale's `initFilter` builds for luma sample `i` of `luma_len` from the
/// `ceil(luma_len / 2)` chroma samples of a 2:1 subsampled axis, whose first sits `pos`/256
/// luma samples from the first luma sample.
pub fn chroma_taps(i: usize, luma_len: usize, pos: u16) -> ChromaTaps {
    const ONE: i64 = 1 << 17;
    let l = luma_len as i64;
    let n = (l + 1) >> 1;
    // Positions in 1/2^17 of a chroma sample, as swscale keeps them.
    let inc = ((n << 16) + (l >> 1)) / l;
    let src_pos = (i64::from(pos.min(256)) + 128) >> 1;
    let x = inc - src_pos * 512 + 2 * inc * i as i64;
    // Rust's division truncates toward zero, as C's does: swscale's first taps depend on it.
    let first = (x - 3 * (1 << 16)) / ONE;
    let mut taps = ChromaTaps {
        index: [0; 5],
        weight: [0.0; 5],
    };
    let mut sum = 0.0f32;
    for j in 0..5 {
        let at = first + j as i64;
        let d = ((at * ONE - x).abs() as f32) / ONE as f32;
        taps.index[j] = at.clamp(0, n - 1) as usize;
        taps.weight[j] = keys(d);
        sum += taps.weight[j];
    }
    for w in &mut taps.weight {
        *w /= sum;
    }
    taps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interior_taps_are_keys_weights_at_the_sited_fraction() {
        // Co-sited horizontally: even luma samples sit on a chroma sample, odd ones halfway.
        let even = chroma_taps(10, 64, 0);
        let on: Vec<(usize, f32)> = even
            .index
            .iter()
            .copied()
            .zip(even.weight)
            .filter(|(_, w)| *w != 0.0)
            .collect();
        assert_eq!(on, vec![(5, 1.0)]);
        let odd = chroma_taps(11, 64, 0);
        let w: f32 = odd.weight.iter().sum();
        assert!((w - 1.0).abs() < 1e-6);
        assert_eq!(odd.index, [4, 5, 6, 7, 8]);
        assert!(
            (odd.weight[1] - keys(0.5)).abs() < 1e-6 && (odd.weight[3] - keys(1.5)).abs() < 1e-6
        );
        // Centre siting: a quarter and three quarters of a chroma sample.
        let c = chroma_taps(11, 64, 128);
        let frac: Vec<f32> = c.weight.iter().copied().filter(|w| *w != 0.0).collect();
        assert_eq!(frac.len(), 4);
        assert!((frac[1] - keys(0.25)).abs() < 1e-6);
    }

    #[test]
    fn the_truncated_first_filters_lose_a_tap_and_renormalise() {
        // Luma row 2 under centre siting sits at chroma 0.75; swscale's truncated start drops
        // the tap at -1 (weight keys(1.75) < 0) and renormalises the other three.
        let t = chroma_taps(2, 64, 128);
        assert_eq!(t.index[0], 0);
        let lost = keys(1.75);
        let rest = keys(0.75) + keys(0.25) + keys(1.25);
        assert!(
            (t.weight[0] - keys(0.75) / rest).abs() < 1e-6,
            "{t:?} {lost}"
        );
        assert!((t.weight.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn the_last_taps_clamp_to_the_plane() {
        let t = chroma_taps(63, 64, 128);
        assert!(t.index.iter().all(|&i| i < 32));
        assert_eq!(t.index[4], 31);
    }

    #[test]
    fn codes_carry_both_positions() {
        assert_eq!(ChromaFilter::Replicate.code(), 0);
        assert_eq!(ChromaFilter::Cubic { x: 0, y: 128 }.code(), 1 | (128 << 10));
        assert_eq!(ChromaFilter::default().code(), 1 | (128 << 1) | (128 << 10));
    }
}
