//! Planning transform chains into one fused operation: the geometry equals doing the steps
//! one by one, random parameters follow torchvision's rules and repeat per (seed, epoch,
//! index), and nested samples get one set of parameters for all their images.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_cuda::DType;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::sample::{Image, Label, plan_sample};
use gm_transforms::{
    CenterCrop, Compose, Crop, CropBox, Filter, Grey, HorizontalFlip, Interp, Layout, Matrix,
    Normalize, Pad, PixelFormat, PlanError, RandomResizedCrop, Resize, SampleRng, ToDtype,
    Transform, VerticalFlip,
};
use proptest::prelude::*;

fn chain(steps: Vec<Box<dyn Transform>>) -> Compose {
    Compose(steps)
}

#[test]
fn resize_and_center_crop_map_back_to_the_source() {
    let mut rng = SampleRng::new(1, 0, 0);
    let (op, spec) = chain(vec![Box::new(Resize::Shorter(4))])
        .plan_image(8, 6, &mut rng)
        .unwrap();
    assert_eq!(
        (spec.width, spec.height),
        (5, 4),
        "torchvision truncates the long side"
    );
    assert_eq!(op.crop, Crop::full(8, 6));
    let (op, spec) = chain(vec![
        Box::new(Resize::Exact(50, 25)),
        Box::new(CenterCrop(20, 10)),
    ])
    .plan_image(100, 50, &mut rng)
    .unwrap();
    assert_eq!((spec.width, spec.height), (20, 10));
    // Offsets 15 and round(7.5) = 8 in the resized image; twice that in the source.
    assert_eq!(
        op.crop,
        Crop {
            x: 30.0,
            y: 16.0,
            w: 40.0,
            h: 20.0
        }
    );
    // Larger than the image: torchvision pads with zeros, then crops the centre.
    let (op, spec) = chain(vec![Box::new(CenterCrop(200, 10))])
        .plan_image(100, 50, &mut rng)
        .unwrap();
    assert_eq!((spec.width, spec.height), (200, 10));
    assert_eq!(
        op.crop,
        Crop {
            x: -50.0,
            y: 20.0,
            w: 200.0,
            h: 10.0
        }
    );
    let pad = op.pad.unwrap();
    assert_eq!((pad.x0, pad.x1, pad.valid), (-50, 150, (0, 0, 100, 50)));
}

#[test]
fn normalize_and_dtype_set_the_output() {
    let mut rng = SampleRng::new(1, 0, 0);
    let (_, spec) = chain(vec![
        Box::new(Normalize {
            mean: [0.5, 0.25, 0.0],
            std: [0.5, 0.25, 1.0],
        }),
        Box::new(ToDtype(DType::BF16, Layout::Chw)),
        Box::new(Filter(Interp::Nearest)),
    ])
    .plan_image(4, 4, &mut rng)
    .unwrap();
    assert_eq!(
        (spec.dtype, spec.layout, spec.interp),
        (DType::BF16, Layout::Chw, Interp::Nearest)
    );
    // 255 -> (1 - 0.5) / 0.5 = 1; 0 -> -1.
    assert!((255.0 * spec.scale[0] + spec.bias[0] - 1.0).abs() < 1e-6);
    assert!((spec.bias[0] + 1.0).abs() < 1e-6);
    assert!((255.0 * spec.scale[1] + spec.bias[1] - 3.0).abs() < 1e-5);
}

#[test]
fn uint16_is_not_a_transform_output() {
    let mut rng = SampleRng::new(1, 0, 0);
    let err = chain(vec![Box::new(ToDtype(DType::U16, Layout::Chw))])
        .plan_image(4, 4, &mut rng)
        .unwrap_err();
    assert!(err.to_string().contains("uint16"), "{err}");
}

/// Steps on real pixels one at a time: the reference for the fused geometry.
#[derive(Clone, Debug)]
enum Step {
    Crop(u32, u32, u32, u32),
    FlipH,
    FlipV,
    Pad(u32, u32, u32, u32),
}

const FILL: [u8; 3] = [7, 80, 250];

fn naive(img: &[u8], mut w: usize, mut h: usize, steps: &[Step]) -> (Vec<u8>, usize, usize) {
    let mut px: Vec<[u8; 3]> = img.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
    for s in steps {
        match *s {
            Step::FlipH => {
                px = (0..h)
                    .flat_map(|y| (0..w).map(move |x| (y, x)))
                    .map(|(y, x)| px[y * w + (w - 1 - x)])
                    .collect()
            }
            Step::FlipV => {
                px = (0..h)
                    .flat_map(|y| (0..w).map(move |x| (y, x)))
                    .map(|(y, x)| px[(h - 1 - y) * w + x])
                    .collect()
            }
            Step::Pad(l, t, r, b) => {
                let (l, t, r, b) = (l as usize, t as usize, r as usize, b as usize);
                let (nw, nh) = (w + l + r, h + t + b);
                let mut n = vec![FILL; nw * nh];
                for y in 0..h {
                    for x in 0..w {
                        n[(y + t) * nw + x + l] = px[y * w + x];
                    }
                }
                px = n;
                w = nw;
                h = nh;
            }
            Step::Crop(l, t, cw, ch) => {
                let (l, t, cw, ch) = (l as usize, t as usize, cw as usize, ch as usize);
                px = (t..t + ch)
                    .flat_map(|y| (l..l + cw).map(move |x| (y, x)))
                    .map(|(y, x)| px[y * w + x])
                    .collect();
                w = cw;
                h = ch;
            }
        }
    }
    (px.into_iter().flatten().collect(), w, h)
}

proptest! {
    #[test]
    fn planned_crops_and_flips_equal_the_steps_done_one_by_one(
        w in 1u32..24, h in 1u32..24, seeds in proptest::collection::vec((0u8..4, any::<u64>()), 0..6), pixels in any::<u64>()
    ) {
        let mut rng = SampleRng::new(pixels, 0, 0);
        let img: Vec<u8> = (0..w * h * 3).map(|_| rng.next_u64() as u8).collect();
        let (mut cw, mut ch) = (w, h);
        let mut padded = false;
        let mut steps = Vec::new();
        let mut transforms: Vec<Box<dyn Transform>> = Vec::new();
        for (kind, r) in seeds {
            let mut r = SampleRng::new(r, 0, 0);
            match kind {
                0 => { steps.push(Step::FlipH); transforms.push(Box::new(HorizontalFlip(1.0))); }
                1 => { steps.push(Step::FlipV); transforms.push(Box::new(VerticalFlip(1.0))); }
                3 if !padded => {
                    let p = [0, 1, 2, 3].map(|_| r.below(4) as u32);
                    steps.push(Step::Pad(p[0], p[1], p[2], p[3]));
                    transforms.push(Box::new(Pad { left: p[0], top: p[1], right: p[2], bottom: p[3], fill: FILL.map(f32::from) }));
                    cw += p[0] + p[2];
                    ch += p[1] + p[3];
                    padded = true;
                }
                3 => {}
                _ => {
                    let nw = 1 + r.below(u64::from(cw)) as u32;
                    let nh = 1 + r.below(u64::from(ch)) as u32;
                    let l = r.below(u64::from(cw - nw) + 1) as u32;
                    let t = r.below(u64::from(ch - nh) + 1) as u32;
                    steps.push(Step::Crop(l, t, nw, nh));
                    transforms.push(Box::new(CropBox { left: l, top: t, width: nw, height: nh }));
                    cw = nw;
                    ch = nh;
                }
            }
        }
        transforms.push(Box::new(Filter(Interp::Nearest)));
        let (op, spec) = Compose(transforms).plan_image(w, h, &mut SampleRng::new(0, 0, 0)).unwrap();
        let (want, ww, wh) = naive(&img, w as usize, h as usize, &steps);
        prop_assert_eq!((spec.width as usize, spec.height as usize), (ww, wh));
        let host = HostImage { data: &img, chroma: &[], pitch: 3 * w as usize, width: w, height: h, format: PixelFormat::Rgb8, matrix: Matrix::Bt601, full_range: false, orientation: Default::default(), chroma_filter: Default::default() };
        let mut got = vec![0u8; spec.image_bytes()];
        fused(&host, &op, &spec, &mut got);
        prop_assert_eq!(got, want);
    }

    #[test]
    fn random_resized_crop_follows_torchvisions_rules(iw in 1u32..2000, ih in 1u32..2000, seed in any::<u64>(), index in 0u64..1000) {
        let rrc = RandomResizedCrop::new(224, 224);
        let (l, t, w, h) = rrc.region(iw, ih, &mut SampleRng::new(seed, 3, index));
        prop_assert!(w >= 1 && h >= 1 && l + w <= iw && t + h <= ih, "{l} {t} {w} {h} in {iw}x{ih}");
        // Same seed, epoch and index: same region, whoever asks.
        prop_assert_eq!(rrc.region(iw, ih, &mut SampleRng::new(seed, 3, index)), (l, t, w, h));
        // Sides are rounded from the drawn area and ratio, so allow half a pixel each way.
        let (wf, hf) = (f64::from(w), f64::from(h));
        let area_ok = (wf + 0.5) * (hf + 0.5) >= 0.08 * f64::from(iw) * f64::from(ih);
        let ratio_ok = (wf + 0.5) / (hf - 0.5).max(0.5) >= 0.75 && (wf - 0.5) / (hf + 0.5) <= 4.0 / 3.0;
        let fallback = (l, t) == ((iw - w) / 2, (ih - h) / 2);
        prop_assert!((area_ok && ratio_ok) || fallback, "{w}x{h} in {iw}x{ih}");
    }
}

#[test]
fn random_resized_crop_falls_back_to_a_central_crop_in_the_ratio_range() {
    let rrc = RandomResizedCrop {
        width: 10,
        height: 10,
        scale: (0.5, 1.0),
        ratio: (1.0, 1.0),
    };
    assert_eq!(
        rrc.region(1000, 10, &mut SampleRng::new(5, 0, 0)),
        (495, 0, 10, 10)
    );
    assert_eq!(
        rrc.region(10, 1000, &mut SampleRng::new(5, 0, 0)),
        (0, 495, 10, 10)
    );
    let draws: std::collections::HashSet<_> = (0..50)
        .map(|i| RandomResizedCrop::new(8, 8).region(640, 480, &mut SampleRng::new(9, 0, i)))
        .collect();
    assert!(draws.len() > 45, "different samples get different crops");
}

#[test]
fn nested_samples_share_one_draw_and_keep_their_labels() {
    let rrc = Compose(vec![
        Box::new(RandomResizedCrop::new(32, 32)),
        Box::new(HorizontalFlip(0.5)),
    ]);
    type Sample = (Vec<Image<usize>>, Label<&'static str>, Option<Image<usize>>);
    let make = || -> Sample {
        (
            (0..8).map(|i| Image::new(320, 240, i)).collect(),
            Label("cat"),
            Some(Image::new(320, 240, 99)),
        )
    };
    let mut a = make();
    let n = plan_sample(&mut a, &rrc, &mut SampleRng::new(42, 1, 7)).unwrap();
    assert_eq!(n, 9);
    let first = a.0[0].planned.clone();
    assert!(first.is_some());
    assert!(
        a.0.iter().all(|i| i.planned == first) && a.2.as_ref().unwrap().planned == first,
        "one geometry for the clip and the extra camera"
    );
    assert_eq!(a.1, Label("cat"));
    assert_eq!(
        a.0.iter().map(|i| i.payload).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    let mut b = make();
    plan_sample(&mut b, &rrc, &mut SampleRng::new(42, 1, 7)).unwrap();
    assert_eq!(
        b.0[3].planned, first,
        "same seed, epoch and index: same augmentation"
    );
    let mut c = make();
    plan_sample(&mut c, &rrc, &mut SampleRng::new(42, 2, 7)).unwrap();
    assert_ne!(c.0[0].planned, first, "another epoch draws again");
    let mut mixed: Sample = (
        vec![Image::new(320, 240, 0), Image::new(100, 100, 1)],
        Label("dog"),
        None,
    );
    assert!(matches!(
        plan_sample(&mut mixed, &rrc, &mut SampleRng::new(1, 0, 0)),
        Err(PlanError::MixedSizes(320, 240, 100, 100))
    ));
}

#[test]
fn grey_uses_torchvisions_weights() {
    let img = [255u8, 0, 0, 0, 255, 0, 0, 0, 255, 200, 100, 50];
    let (op, spec) = chain(vec![Box::new(Grey)])
        .plan_image(4, 1, &mut SampleRng::new(0, 0, 0))
        .unwrap();
    assert_eq!(spec.image_bytes(), 4);
    let host = HostImage {
        data: &img,
        chroma: &[],
        pitch: 12,
        width: 4,
        height: 1,
        format: PixelFormat::Rgb8,
        matrix: Matrix::Bt601,
        full_range: false,
        orientation: Default::default(),
        chroma_filter: Default::default(),
    };
    let mut out = vec![0u8; 4];
    fused(&host, &op, &spec, &mut out);
    assert_eq!(out, vec![76, 150, 29, 124]);
}

/// A sample type of the user's own, with named fields: one `Visit` impl lists its images.
struct Episode {
    front: Vec<Image<u64>>,
    wrist: Vec<Image<u64>>,
    action: Label<[f32; 7]>,
}

impl gm_transforms::sample::Visit<u64> for Episode {
    fn visit(&mut self, f: &mut dyn FnMut(&mut Image<u64>)) {
        self.front.visit(f);
        self.wrist.visit(f);
        self.action.visit(f);
    }
}

#[test]
fn user_structs_with_named_fields_take_part() {
    use gm_transforms::sample::Visit;
    let mut ep = Episode {
        front: (0..4).map(|i| Image::new(640, 480, i)).collect(),
        wrist: (0..4).map(|i| Image::new(640, 480, 10 + i)).collect(),
        action: Label([0.5; 7]),
    };
    let chain = Compose(vec![
        Box::new(CenterCrop(480, 480)),
        Box::new(Resize::Exact(224, 224)),
        Box::new(HorizontalFlip(0.5)),
    ]);
    assert_eq!(
        plan_sample(&mut ep, &chain, &mut SampleRng::new(3, 0, 11)).unwrap(),
        8
    );
    let first = ep.front[0].planned.clone().unwrap();
    assert_eq!(
        first.0.crop,
        Crop {
            x: 80.0,
            y: 0.0,
            w: 480.0,
            h: 480.0
        }
    );
    assert!(
        ep.wrist
            .iter()
            .chain(&ep.front)
            .all(|i| i.planned.as_ref() == Some(&first))
    );
    assert_eq!(ep.action, Label([0.5; 7]));
    let mut n = 0;
    ep.visit(&mut |_| n += 1);
    assert_eq!(n, 8);
}

proptest! {
    /// What a decoder that decodes only `source_window` hands the kernel: the region's pixels,
    /// and the op shifted by its origin. The output matches the whole image's, up to rounding
    /// of the sample positions.
    #[test]
    fn an_op_on_its_source_window_equals_the_op_on_the_whole_image(
        w in 1u32..160, h in 1u32..160, seed in any::<u64>(), index in 0u64..1000,
    ) {
        let mut rng = SampleRng::new(seed ^ 0x5eed, 0, index);
        let img: Vec<u8> = (0..w * h * 3).map(|_| rng.next_u64() as u8).collect();
        let chain = Compose(vec![
            Box::new(RandomResizedCrop::new(24, 20)),
            Box::new(HorizontalFlip(0.5)),
            Box::new(ToDtype(DType::F32, Layout::Chw)),
        ]);
        let (op, spec) = chain.plan_image(w, h, &mut SampleRng::new(seed, 1, index)).unwrap();
        let [x0, y0, x1, y1] = op.source_window(w, h).unwrap();
        prop_assert!(x0 < x1 && x1 <= w && y0 < y1 && y1 <= h, "{x0} {y0} {x1} {y1} in {w}x{h}");
        let (rw, rh) = ((x1 - x0) as usize, (y1 - y0) as usize);
        let region: Vec<u8> = (y0 as usize..y1 as usize)
            .flat_map(|y| {
                let row = (y * w as usize + x0 as usize) * 3;
                img[row..row + rw * 3].to_vec()
            })
            .collect();
        let mut whole = vec![0u8; spec.image_bytes()];
        fused(&HostImage::rgb8(&img, w, h), &op, &spec, &mut whole);
        let mut part = vec![0u8; spec.image_bytes()];
        let shifted = op.shifted(x0, y0);
        fused(&HostImage::rgb8(&region, rw as u32, rh as u32), &shifted, &spec, &mut part);
        let (a, b): (&[f32], &[f32]) = (bytemuck::cast_slice(&whole), bytemuck::cast_slice(&part));
        let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        prop_assert!(worst <= 0.02, "largest difference {worst} (of 0..255)");
        // Padding has no source window: it is decoded whole.
        let padded = Compose(vec![Box::new(Pad { left: 1, top: 0, right: 0, bottom: 0, fill: [0.0; 3] })]);
        let (pop, _) = padded.plan_image(w, h, &mut SampleRng::new(seed, 1, index)).unwrap();
        prop_assert_eq!(pop.source_window(w, h), None);
    }
}
