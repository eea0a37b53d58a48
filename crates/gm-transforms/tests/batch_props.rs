//! Properties of the erase and mix twins over the layouts and types the fused kernel writes:
//! HWC gives the CHW result transposed (noise included: it is indexed by position in the
//! rectangle), f16/bf16 give the f32 result rounded, a one-image batch and lambda 1 leave the
//! batch as it is, and CutMix with the whole image is the batch rolled by one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_cuda::DType;
use gm_transforms::{Erase, EraseFill, Layout, Mix, OutputSpec, erase_batch, mix_batch};
use proptest::prelude::*;

fn spec(w: u32, h: u32, dtype: DType, layout: Layout, grey: bool) -> OutputSpec {
    let mut s = OutputSpec::normalized(w, h, dtype, [0.0; 3], [1.0; 3]);
    s.layout = layout;
    s.grey = grey;
    s
}

/// f32 values of `n` CHW images to `dtype` bytes in `layout`.
fn encode(values: &[f32], n: usize, s: &OutputSpec) -> Vec<u8> {
    let (w, h, c) = (s.width as usize, s.height as usize, s.channels());
    let mut out = vec![0u8; n * w * h * c * s.dtype.size()];
    for i in 0..n {
        for ch in 0..c {
            for y in 0..h {
                for x in 0..w {
                    let v = values[((i * c + ch) * h + y) * w + x];
                    let e = i * w * h * c
                        + match s.layout {
                            Layout::Chw => (ch * h + y) * w + x,
                            Layout::Hwc => (y * w + x) * c + ch,
                        };
                    let o = &mut out[e * s.dtype.size()..(e + 1) * s.dtype.size()];
                    match s.dtype {
                        DType::U8 => o[0] = v as u8,
                        DType::U16 => o.copy_from_slice(&(v as u16).to_le_bytes()),
                        DType::F16 => o.copy_from_slice(&half::f16::from_f32(v).to_le_bytes()),
                        DType::BF16 => o.copy_from_slice(&half::bf16::from_f32(v).to_le_bytes()),
                        DType::F32 => o.copy_from_slice(&v.to_le_bytes()),
                    }
                }
            }
        }
    }
    out
}

/// `dtype` bytes in `layout` back to CHW f32 values.
fn decode(bytes: &[u8], n: usize, s: &OutputSpec) -> Vec<f32> {
    let (w, h, c) = (s.width as usize, s.height as usize, s.channels());
    let mut out = vec![0f32; n * w * h * c];
    let size = s.dtype.size();
    for i in 0..n {
        for ch in 0..c {
            for y in 0..h {
                for x in 0..w {
                    let e = i * w * h * c
                        + match s.layout {
                            Layout::Chw => (ch * h + y) * w + x,
                            Layout::Hwc => (y * w + x) * c + ch,
                        };
                    let b = &bytes[e * size..(e + 1) * size];
                    out[((i * c + ch) * h + y) * w + x] = match s.dtype {
                        DType::U8 => f32::from(b[0]),
                        DType::U16 => f32::from(u16::from_le_bytes([b[0], b[1]])),
                        DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                        DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
                        DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                    };
                }
            }
        }
    }
    out
}

fn case() -> impl Strategy<Value = (u32, u32, usize, bool, Vec<f32>, Erase, Mix)> {
    (1u32..20, 1u32..20, 1usize..5, any::<bool>()).prop_flat_map(|(w, h, n, grey)| {
        let c = if grey { 1 } else { 3 };
        let values = prop::collection::vec(0u8..=255, n * c * (w * h) as usize)
            .prop_map(|v| v.into_iter().map(f32::from).collect::<Vec<_>>());
        let erase =
            (0..w, 0..h, any::<bool>(), any::<u64>()).prop_flat_map(move |(l, t, noise, key)| {
                (1..=w - l, 1..=h - t).prop_map(move |(ew, eh)| Erase {
                    top: t,
                    left: l,
                    height: eh,
                    width: ew,
                    fill: if noise {
                        EraseFill::Noise(key)
                    } else {
                        EraseFill::Value([7.0, 19.0, 250.0])
                    },
                })
            });
        let mix =
            (0.0f32..=1.0, any::<bool>(), 0..=w, 0..=h).prop_flat_map(move |(lam, cut, x1, y1)| {
                (x1..=w, y1..=h).prop_map(move |(x2, y2)| Mix {
                    lambda: lam,
                    cut: cut.then_some([x1, y1, x2, y2]),
                })
            });
        (Just(w), Just(h), Just(n), Just(grey), values, erase, mix)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn layouts_and_float_types_agree((w, h, n, grey, values, erase, mix) in case()) {
        let erases: Vec<_> = (0..n).map(|i| (i % 2 == 0).then_some(erase)).collect();
        let run = |dtype: DType, layout: Layout| {
            let s = spec(w, h, dtype, layout, grey);
            let mut b = encode(&values, n, &s);
            erase_batch(&mut b, &s, &erases);
            mix_batch(&mut b, n, &s, &mix);
            decode(&b, n, &s)
        };
        let reference = run(DType::F32, Layout::Chw);
        prop_assert_eq!(&run(DType::F32, Layout::Hwc), &reference);
        for (dtype, ulp) in [(DType::F16, 2f32.powi(-10)), (DType::BF16, 2f32.powi(-7))] {
            for layout in [Layout::Chw, Layout::Hwc] {
                let got = run(dtype, layout);
                for (a, b) in got.iter().zip(&reference) {
                    // The input rounds once (exact for 0..255 in f16, not in bf16) and the
                    // result once more.
                    prop_assert!((a - b).abs() <= 2.0 * ulp * b.abs().max(1.0) + 1e-6, "{:?} {:?}: {} vs {}", dtype, layout, a, b);
                }
            }
        }
    }

    #[test]
    fn identity_mixes_and_full_cuts((w, h, n, grey, values, _erase, _mix) in case()) {
        let s = spec(w, h, DType::F32, Layout::Chw, grey);
        let input = encode(&values, n, &s);
        let mut same = input.clone();
        mix_batch(&mut same, n, &s, &Mix { lambda: 1.0, cut: None });
        prop_assert_eq!(&same, &input);
        let mut one = input[..s.image_bytes()].to_vec();
        mix_batch(&mut one, 1, &s, &Mix { lambda: 0.3, cut: None });
        prop_assert_eq!(&one[..], &input[..s.image_bytes()]);
        let mut rolled = input.clone();
        mix_batch(&mut rolled, n, &s, &Mix { lambda: 0.0, cut: Some([0, 0, w, h]) });
        let size = s.image_bytes();
        for i in 0..n {
            let from = (i + n - 1) % n;
            prop_assert_eq!(&rolled[i * size..(i + 1) * size], &input[from * size..(from + 1) * size]);
        }
    }
}
