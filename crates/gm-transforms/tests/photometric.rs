//! Planning the photometric steps: ColorJitter draws torchvision's factors and random order
//! from the sample's seeded generator (the same for the same sample, the same for every frame
//! of a clip), the `Random*` steps fire at their probability, and misplaced steps are errors.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::collections::HashSet;

use gm_transforms::sample::{Image, Label, plan_sample};
use gm_transforms::{
    ColorJitter, ColourOp, Compose, HorizontalFlip, Normalize, PlanError, RandomAdjustSharpness,
    RandomAutocontrast, RandomEqualize, RandomGrayscale, RandomInvert, RandomPosterize,
    RandomResizedCrop, RandomSolarize, Resize, SampleRng,
};

fn jitter() -> ColorJitter {
    ColorJitter::new(0.4, 0.4, 0.4, 0.1).unwrap()
}

fn colour_of(chain: &Compose, index: u64) -> Vec<ColourOp> {
    let (op, _) = chain
        .plan_image(64, 48, &mut SampleRng::new(5, 2, index))
        .unwrap();
    op.colour.as_slice().to_vec()
}

fn kind(op: &ColourOp) -> usize {
    match op {
        ColourOp::Brightness(_) => 0,
        ColourOp::Contrast(_) => 1,
        ColourOp::Saturation(_) => 2,
        _ => 3,
    }
}

#[test]
fn color_jitter_draws_factors_in_range_and_every_order() {
    let chain = Compose::new().then(jitter());
    let mut orders = HashSet::new();
    for index in 0..2000 {
        let ops = colour_of(&chain, index);
        assert_eq!(ops.len(), 4, "sample {index}: {ops:?}");
        for op in &ops {
            let ok = match *op {
                ColourOp::Brightness(f) | ColourOp::Contrast(f) | ColourOp::Saturation(f) => {
                    (0.6..1.4).contains(&f)
                }
                ColourOp::Hue(h) => (-0.1..0.1).contains(&h),
                _ => false,
            };
            assert!(ok, "sample {index}: {op:?} outside its range");
        }
        orders.insert(ops.iter().map(kind).collect::<Vec<_>>());
    }
    // 24 orders, each drawn ~83 times in 2000 samples: all of them show up.
    assert_eq!(orders.len(), 24);
    assert_eq!(
        colour_of(&chain, 17),
        colour_of(&chain, 17),
        "same sample, same draws"
    );
    assert_ne!(colour_of(&chain, 17), colour_of(&chain, 18));
}

#[test]
fn color_jitter_arguments_follow_torchvision() {
    let j = ColorJitter::new(0.0, 1.5, 0.25, 0.5).unwrap();
    assert_eq!(j.brightness, None, "0 leaves brightness alone");
    assert_eq!(j.contrast, Some((0.0, 2.5)), "the low end is clipped at 0");
    assert_eq!(j.saturation, Some((0.75, 1.25)));
    assert_eq!(j.hue, Some((-0.5, 0.5)));
    assert!(ColorJitter::new(-0.1, 0.0, 0.0, 0.0).is_err());
    assert!(
        ColorJitter::new(0.0, 0.0, 0.0, 0.6).is_err(),
        "hue past half a turn"
    );
    let backwards = ColorJitter {
        brightness: Some((1.2, 0.8)),
        ..j
    };
    let err = Compose::new()
        .then(backwards)
        .plan_image(8, 8, &mut SampleRng::new(0, 0, 0));
    assert!(
        matches!(
            err,
            Err(PlanError::Step {
                step: "ColorJitter",
                ..
            })
        ),
        "{err:?}"
    );
}

#[test]
fn every_frame_of_a_clip_gets_the_same_colour_draws() {
    let chain = Compose::new()
        .then(RandomResizedCrop::new(32, 32))
        .then(HorizontalFlip(0.5))
        .then(jitter())
        .then(RandomGrayscale(0.5));
    let mut distinct = HashSet::new();
    for index in 0..20 {
        let mut clip = (
            (0..8).map(|t| Image::new(64, 48, t)).collect::<Vec<_>>(),
            Label(index),
        );
        plan_sample(&mut clip, &chain, &mut SampleRng::new(9, 0, index)).unwrap();
        let first = clip.0[0].planned.clone().unwrap();
        assert!(
            clip.0.iter().all(|f| f.planned.as_ref() == Some(&first)),
            "clip {index}"
        );
        distinct.insert(format!("{:?}", first.0.colour));
    }
    assert_eq!(distinct.len(), 20, "each clip draws its own colours");
}

#[test]
fn random_steps_fire_at_their_probability() {
    let chain = Compose::new()
        .then(RandomGrayscale(0.2))
        .then(RandomSolarize {
            threshold: 100.0,
            p: 0.5,
        })
        .then(RandomPosterize { bits: 4, p: 0.7 })
        .then(RandomInvert(0.9))
        .then(RandomAutocontrast(0.35))
        .then(RandomEqualize(0.6));
    let n = 4000;
    let mut counts = [0usize; 6];
    for index in 0..n {
        for op in colour_of(&chain, index) {
            let k = match op {
                ColourOp::Grayscale => 0,
                ColourOp::Solarize(t) => {
                    assert_eq!(t, 100.0);
                    1
                }
                ColourOp::Posterize(4) => 2,
                ColourOp::Invert => 3,
                ColourOp::Autocontrast => 4,
                ColourOp::Equalize => 5,
                other => panic!("{other:?}"),
            };
            counts[k] += 1;
        }
    }
    for (count, p) in counts.iter().zip([0.2, 0.5, 0.7, 0.9, 0.35, 0.6]) {
        let rate = *count as f64 / n as f64;
        // Four standard deviations of a binomial rate at n = 4000 is at most 0.032.
        assert!((rate - p).abs() < 0.032, "rate {rate} for p {p}");
    }
}

/// Geometry after a colour operation cuts the chain (the resize reads the inverted uint8
/// image, as torchvision's does); a colour operation after Normalize is an error.
#[test]
fn colour_before_geometry_cuts_the_chain_and_normalize_ends_it() {
    let mut rng = SampleRng::new(1, 0, 0);
    let late_resize = Compose::new()
        .then(RandomInvert(1.0))
        .then(Resize::Exact(8, 8));
    let (op, spec, passes) = late_resize.plan_post(16, 16, &mut rng).unwrap();
    assert_eq!(passes.pre.len(), 1);
    let first = &passes.pre[0];
    assert_eq!(first.op.colour.as_slice(), [ColourOp::Invert]);
    assert_eq!((first.spec.width, first.spec.height), (16, 16));
    assert!(op.colour.is_empty() && (spec.width, spec.height) == (8, 8));
    // A consumer that launches only the last pass is told so.
    let err = late_resize.plan_image(16, 16, &mut rng).unwrap_err();
    assert!(err.to_string().contains("plan_post"), "{err}");
    let after_normalize = Compose::new()
        .then(Normalize::IMAGENET)
        .then(RandomInvert(1.0));
    let err = after_normalize.plan_image(16, 16, &mut rng).unwrap_err();
    assert!(
        matches!(
            err,
            PlanError::Step {
                step: "RandomInvert",
                ..
            }
        ),
        "{err}"
    );
    // A flip commutes with every colour operation, so it may come after one.
    let flip = Compose::new()
        .then(RandomInvert(1.0))
        .then(HorizontalFlip(1.0));
    let (op, _) = flip.plan_image(16, 16, &mut rng).unwrap();
    assert!(op.flip_h && op.colour.as_slice() == [ColourOp::Invert]);
    // The kernel sharpens by re-sampling the neighbours: once per pass, so a second
    // sharpness starts a pass that reads the first one's uint8 output.
    let sharp = RandomAdjustSharpness {
        sharpness_factor: 2.0,
        p: 1.0,
    };
    let twice = Compose::new().then(sharp).then(sharp);
    let (op, _, passes) = twice.plan_post(16, 16, &mut rng).unwrap();
    assert_eq!(passes.pre.len(), 1);
    assert_eq!(
        passes.pre[0].op.colour.as_slice(),
        [ColourOp::Sharpness(2.0)]
    );
    assert_eq!(op.colour.as_slice(), [ColourOp::Sharpness(2.0)]);
    // Identity draws are dropped: no kernel work for nothing.
    let none = Compose::new().then(RandomSolarize {
        threshold: 255.0,
        p: 0.0,
    });
    assert!(
        none.plan_image(16, 16, &mut rng)
            .unwrap()
            .0
            .colour
            .is_empty()
    );
}
