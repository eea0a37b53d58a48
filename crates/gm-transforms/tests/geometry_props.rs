//! Properties of the warps in the CPU twin: identity parameters give the input; a chain with
//! a warp gives what its steps give one after another where the math is exact (whole-pixel
//! translations, crops and flips); torchvision's argument checks; the draws.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_transforms::cpu::{HostImage, fused, fused_passes};
use gm_transforms::{
    Affine, Compose, CropBox, HorizontalFlip, Interp, PlanState, RandomAffine, RandomPerspective,
    RandomRotation, Resize, Rotate, SampleRng, Transform, VerticalFlip,
};
use proptest::prelude::*;

/// The twin's u8 HWC output of `steps` on a `w` x `h` RGB image, and its size.
fn run(img: &[u8], w: u32, h: u32, steps: &[&dyn Transform]) -> (Vec<u8>, u32, u32) {
    let mut st = PlanState::new(w, h);
    let mut rng = SampleRng::new(1, 2, 3);
    for s in steps {
        s.plan(&mut st, &mut rng).unwrap();
    }
    let (op, spec) = st.finish();
    let mut out = vec![0u8; spec.image_bytes()];
    fused_passes(&HostImage::rgb8(img, w, h), &st.pre, &op, &spec, &mut out);
    (out, spec.width, spec.height)
}

fn image(w: u32, h: u32, seed: u64) -> Vec<u8> {
    let mut rng = SampleRng::new(seed, 0, 0);
    (0..w * h * 3).map(|_| rng.below(256) as u8).collect()
}

fn translate(dx: f64, dy: f64, interp: Interp, fill: [f32; 3]) -> Affine {
    Affine {
        translate: (dx, dy),
        interpolation: interp,
        fill: Some(fill),
        ..Affine::identity()
    }
}

fn interp(bilinear: bool) -> Interp {
    if bilinear {
        Interp::Bilinear
    } else {
        Interp::Nearest
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Identity parameters (with either filter, about any centre) give the input.
    #[test]
    fn identity_warps_give_the_input(w in 1u32..40, h in 1u32..40, seed: u64, bilinear: bool,
                                     cx in -5.0f64..45.0, cy in -5.0f64..45.0) {
        let img = image(w, h, seed);
        let id = Affine { interpolation: interp(bilinear), center: Some((cx, cy)), ..Affine::identity() };
        prop_assert_eq!(run(&img, w, h, &[&id]).0, img.clone());
        let rot = Rotate { angle: 360.0, interpolation: interp(bilinear), center: None, fill: Some([9.0; 3]), mask_fill: 0 };
        prop_assert_eq!(run(&img, w, h, &[&rot]).0, img);
    }

    /// A whole-pixel translation (torchvision's grid arithmetic, so the positions are whole
    /// up to f32 rounding) between crops and flips: the chain's one sampling equals the steps
    /// applied one after another, the fill included.
    #[test]
    fn chains_equal_their_steps(w in 6u32..40, h in 6u32..40, seed: u64, bilinear: bool,
                                dx in -8i32..8, dy in -8i32..8, flip_h: bool, flip_v: bool,
                                fill in 0u8..=255) {
        let img = image(w, h, seed);
        let (cw, ch) = (w - 3, h - 2);
        let crop = CropBox { left: 2, top: 1, width: cw, height: ch };
        let t = translate(f64::from(dx), f64::from(dy), interp(bilinear), [f32::from(fill), 3.0, 250.0]);
        let (fh, fv) = (HorizontalFlip(if flip_h { 1.0 } else { 0.0 }), VerticalFlip(if flip_v { 1.0 } else { 0.0 }));
        // Crop and flips before the warp.
        let (a, aw, ah) = run(&img, w, h, &[&crop, &fh, &fv]);
        let (stepwise, ..) = run(&a, aw, ah, &[&t]);
        let (chained, ..) = run(&img, w, h, &[&crop, &fh, &fv, &t]);
        prop_assert_eq!(chained, stepwise);
        // Crop and flips after the warp.
        let (b, bw, bh) = run(&img, w, h, &[&t]);
        let (stepwise, ..) = run(&b, bw, bh, &[&fh, &crop, &fv]);
        let (chained, ..) = run(&img, w, h, &[&t, &fh, &crop, &fv]);
        prop_assert_eq!(chained, stepwise);
    }

    /// The region a decoder may decode alone (source_window) and the op shifted onto it give
    /// the same pixels as the whole source, up to the rounding of the shifted positions (as
    /// FusedOp::shifted documents): within 1 step.
    #[test]
    fn shifted_warps_read_only_their_window(w in 8u32..40, h in 8u32..40, seed: u64, angle in -40.0f64..40.0) {
        let img = image(w, h, seed);
        let steps = Compose::new()
            .then(CropBox { left: 3, top: 2, width: w - 5, height: h - 4 })
            .then(Affine { angle, interpolation: Interp::Bilinear, ..Affine::identity() });
        let (op, spec) = steps.plan_image(w, h, &mut SampleRng::new(0, 0, 0)).unwrap();
        let [x0, y0, x1, y1] = op.source_window(w, h).unwrap();
        let mut region = Vec::new();
        for y in y0..y1 {
            let row = (y * w * 3) as usize;
            region.extend_from_slice(&img[row + (x0 * 3) as usize..row + (x1 * 3) as usize]);
        }
        let mut whole = vec![0u8; spec.image_bytes()];
        fused(&HostImage::rgb8(&img, w, h), &op, &spec, &mut whole);
        let mut part = vec![0u8; spec.image_bytes()];
        fused(&HostImage::rgb8(&region, x1 - x0, y1 - y0), &op.shifted(x0, y0), &spec, &mut part);
        let worst = part.iter().zip(&whole).map(|(a, b)| a.abs_diff(*b)).max();
        prop_assert!(worst <= Some(1), "worst difference {:?}", worst);
    }
}

/// torchvision's fast path for 180 degrees is both flips; a quarter turn of a square image
/// with nearest taps is torch.rot90.
#[test]
fn half_and_quarter_turns_are_exact() {
    let (w, h) = (13, 13);
    let img = image(w, h, 5);
    let half = Rotate {
        angle: 180.0,
        interpolation: Interp::Bilinear,
        center: None,
        fill: Some([0.0; 3]),
        mask_fill: 0,
    };
    let flips = run(&img, w, h, &[&HorizontalFlip(1.0), &VerticalFlip(1.0)]).0;
    assert_eq!(run(&img, w, h, &[&half]).0, flips);
    let quarter = Rotate {
        angle: 90.0,
        interpolation: Interp::Nearest,
        center: None,
        fill: Some([0.0; 3]),
        mask_fill: 0,
    };
    let out = run(&img, w, h, &[&quarter]).0;
    for y in 0..h as usize {
        for x in 0..w as usize {
            // rot90(k=1): out[y][x] = in[x][w - 1 - y] (counter-clockwise).
            let src = (x * w as usize + (w as usize - 1 - y)) * 3;
            assert_eq!(
                &out[(y * w as usize + x) * 3..][..3],
                &img[src..src + 3],
                "({x}, {y})"
            );
        }
    }
}

#[test]
fn torchvision_argument_checks() {
    assert!(RandomAffine::new(-1.0).is_err(), "negative degrees");
    assert!(RandomAffine::with_range((10.0, -10.0)).is_err());
    let ok = RandomAffine::new(10.0).unwrap();
    assert!(ok.translate(1.2, 0.1).is_err(), "translate past 1");
    assert!(ok.scale(0.0, 1.0).is_err(), "scale not positive");
    assert!(ok.shear(&[1.0, 2.0, 3.0]).is_err(), "three shear values");
    assert!(ok.shear(&[-3.0]).is_err(), "negative single shear");
    assert!(ok.interpolation(Interp::Bicubic).is_err());
    assert!(ok.fill([0.0, 300.0, 0.0]).is_err());
    assert!(RandomRotation::new(f64::NAN).is_err());
    assert!(RandomPerspective::new(1.5, 0.5).is_err());
    assert!(RandomPerspective::new(0.5, 1.5).is_err());
    // A chain warps once.
    let r = Rotate {
        angle: 10.0,
        interpolation: Interp::Bilinear,
        center: None,
        fill: Some([0.0; 3]),
        mask_fill: 0,
    };
    let twice = Compose::new().then(r).then(r);
    assert!(
        twice
            .plan_image(20, 20, &mut SampleRng::new(0, 0, 0))
            .is_err()
    );
    // The warp's interpolation is its own: the output's filter stays (a random warp that
    // only some images of a batch draw must not change the batch's output).
    let antialias = Compose::new()
        .then(gm_transforms::Filter(Interp::Antialias))
        .then(r);
    let (op, spec) = antialias
        .plan_image(20, 20, &mut SampleRng::new(0, 0, 0))
        .unwrap();
    assert_eq!(spec.interp, Interp::Antialias);
    assert!(!op.warp.unwrap().nearest);
}

/// RandomAffine draws in torchvision's order: angle, tx, ty (rounded half to even), scale,
/// shear x, shear y; each sample's draws are its own and repeat with its seed.
#[test]
fn random_affine_draws_in_torchvisions_order() {
    let step = RandomAffine::new(30.0)
        .unwrap()
        .translate(0.2, 0.1)
        .unwrap()
        .scale(0.8, 1.2)
        .unwrap()
        .shear(&[-5.0, 5.0, -3.0, 3.0])
        .unwrap();
    let (w, h) = (50, 40);
    for index in 0..20 {
        let mut rng = SampleRng::new(9, 1, index);
        let got = step.draw(w, h, &mut rng.clone());
        assert_eq!(got.angle, rng.uniform(-30.0, 30.0));
        assert_eq!(got.translate.0, rng.uniform(-10.0, 10.0).round_ties_even());
        assert_eq!(got.translate.1, rng.uniform(-4.0, 4.0).round_ties_even());
        assert_eq!(got.scale, rng.uniform(0.8, 1.2));
        assert_eq!(got.shear, (rng.uniform(-5.0, 5.0), rng.uniform(-3.0, 3.0)));
    }
    let a = step.draw(w, h, &mut SampleRng::new(9, 1, 0));
    let b = step.draw(w, h, &mut SampleRng::new(9, 1, 1));
    assert_ne!(a, b, "samples draw their own parameters");
}

/// RandomPerspective: p = 0 leaves the plan alone; otherwise every corner stays within its
/// bound (distortion_scale of half the size, plus one) of the image corner.
#[test]
fn random_perspective_corners_stay_in_their_bounds() {
    let (w, h) = (41u32, 30u32);
    let never = RandomPerspective::new(0.6, 0.0).unwrap();
    let (op, _) = Compose::new()
        .then(never)
        .plan_image(w, h, &mut SampleRng::new(0, 0, 0))
        .unwrap();
    assert!(op.warp.is_none());
    let always = RandomPerspective::new(0.6, 1.0).unwrap();
    let (bw, bh) = ((0.6f64 * 20.0).trunc() + 1.0, (0.6f64 * 15.0).trunc() + 1.0);
    let mut seen_moved = false;
    for index in 0..50 {
        let end = always.draw(w, h, &mut SampleRng::new(3, 0, index)).unwrap();
        let start = gm_transforms::geometry::corners(w, h);
        for (s, e) in start.iter().zip(&end) {
            assert!(
                (s[0] - e[0]).abs() < bw && (s[1] - e[1]).abs() < bh,
                "{end:?}"
            );
            assert!(e[0] >= 0.0 && e[0] < f64::from(w) && e[1] >= 0.0 && e[1] < f64::from(h));
            seen_moved |= s != e;
        }
    }
    assert!(seen_moved);
    let (op, _) = Compose::new()
        .then(always)
        .plan_image(w, h, &mut SampleRng::new(0, 0, 0))
        .unwrap();
    assert!(op.warp.is_some());
}

/// A warp after a resize reads the resized uint8 image, as torchvision's second step does:
/// the chain is cut into two passes, and gives what the two steps give one after the other
/// (a nearest translation by 2 then moves the resized pixels by exactly 2 columns).
#[test]
fn a_warp_after_a_resize_reads_the_resized_image() {
    let (w, h) = (10u32, 8u32);
    let img = image(w, h, 11);
    let up = Resize::Exact(2 * w, 2 * h);
    let shift = translate(2.0, 0.0, Interp::Nearest, [0.0; 3]);
    let (resized, rw, rh) = run(&img, w, h, &[&up]);
    let (stepwise, ..) = run(&resized, rw, rh, &[&shift]);
    let (out, ow, _) = run(&img, w, h, &[&up, &shift]);
    assert_eq!(out, stepwise);
    let ow = ow as usize;
    for y in 0..rh as usize {
        assert_eq!(
            &out[(y * ow + 2) * 3..(y * ow + ow) * 3],
            &resized[y * ow * 3..(y * ow + ow - 2) * 3],
            "row {y}"
        );
        assert_eq!(&out[y * ow * 3..][..6], &[0; 6], "filled left columns");
    }
}
