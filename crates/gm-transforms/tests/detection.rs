//! The detection recipes' random steps: sizes and draws as torchvision's `RandomShortestSize`,
//! `ScaleJitter`, `RandomZoomOut` and `RandomIoUCrop` and the references' `FixedSizeCrop` make
//! them (their effect on boxes, for given draws, is in targets.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::collections::BTreeSet;

use gm_transforms::targets::{BoundingBoxes, BoxFormat, GeoStep};
use gm_transforms::{
    Compose, FixedSizeCrop, PlanState, RandomCrop, RandomIoUCrop, RandomResize, RandomShortestSize,
    RandomZoomOut, Resize, SampleRng, ScaleJitter, Transform,
};

/// The planned (width, height) and the geometry's steps for sample `i`.
fn planned(step: &dyn Transform, w: u32, h: u32, i: u64) -> PlanState {
    let mut st = PlanState::new(w, h);
    step.plan(&mut st, &mut SampleRng::new(3, 1, i)).unwrap();
    st
}

#[test]
fn random_shortest_size_draws_each_size_and_caps_the_longer_side() {
    let sizes = [480u32, 512, 544, 576, 608];
    let step = RandomShortestSize::new(&sizes, Some(800)).unwrap();
    // torchvision's sizes for each draw: r = min(size / shorter, max_size / longer), each
    // side truncated. On 640x427 the longer side reaches 800 before the shorter reaches 544.
    let candidates: BTreeSet<(u32, u32)> = sizes
        .iter()
        .map(|&s| {
            let r = (f64::from(s) / 427.0).min(800.0 / 640.0);
            ((640.0 * r) as u32, (427.0 * r) as u32)
        })
        .collect();
    assert_eq!(candidates.len(), 3);
    let mut seen = BTreeSet::new();
    for i in 0..300 {
        let st = planned(&step, 640, 427, i);
        assert!(candidates.contains(&(st.width, st.height)), "sample {i}");
        seen.insert((st.width, st.height));
    }
    assert_eq!(seen, candidates, "every size drawn");
    assert!(RandomShortestSize::new(&[], None).is_err());
    assert!(RandomShortestSize::new(&[0, 3], None).is_err());
}

#[test]
fn scale_jitter_fits_the_target_then_scales_uniformly() {
    let step = ScaleJitter::new((1024, 1024), (0.1, 2.0)).unwrap();
    let fit = (1024.0f64 / 480.0).min(1024.0 / 640.0);
    let mut scales = Vec::new();
    for i in 0..500 {
        let st = planned(&step, 640, 480, i);
        let scale = f64::from(st.width) / 640.0 / fit;
        assert!((0.1 - 0.01..=2.0).contains(&scale), "sample {i}: {scale}");
        // The aspect ratio kept, to the truncation of each side.
        let h = f64::from(st.width) * 480.0 / 640.0;
        assert!((h - f64::from(st.height)).abs() <= 1.0, "sample {i}");
        scales.push(scale);
    }
    let mean = scales.iter().sum::<f64>() / scales.len() as f64;
    assert!((mean - 1.05).abs() < 0.08, "mean scale {mean}");
    assert!(ScaleJitter::new((0, 10), (0.1, 2.0)).is_err());
    assert!(ScaleJitter::new((10, 10), (2.0, 1.0)).is_err());
}

#[test]
fn random_zoom_out_pads_to_a_canvas_in_range_half_the_time() {
    let step = RandomZoomOut::new([124.0, 116.0, 104.0], (1.0, 4.0), 0.5).unwrap();
    let mut zoomed = 0;
    for i in 0..400 {
        let st = planned(&step, 300, 200, i);
        if (st.width, st.height) == (300, 200) {
            assert!(st.geometry.steps.is_empty(), "sample {i}");
            continue;
        }
        zoomed += 1;
        let (rw, rh) = (f64::from(st.width) / 300.0, f64::from(st.height) / 200.0);
        assert!(
            (1.0..=4.0).contains(&rw) && (rw - rh).abs() < 0.01,
            "sample {i}: {rw} {rh}"
        );
        let pad = st.pad.expect("padded");
        // The image lies inside the canvas where the pad puts it.
        assert!(
            pad.valid.0 - pad.x0 >= 0 && pad.x1 - pad.valid.2 >= 0,
            "sample {i}"
        );
    }
    assert!((160..=240).contains(&zoomed), "{zoomed} of 400 zoomed out");
    assert!(RandomZoomOut::new([0.0; 3], (0.5, 2.0), 0.5).is_err());
    assert!(RandomZoomOut::new([0.0; 3], (1.0, 2.0), 1.5).is_err());
}

#[test]
fn resize_with_max_size_refuses_a_limit_below_the_shorter_side() {
    let c = Compose::new().then(Resize::ShorterMax {
        shorter: 800,
        max_size: 800,
    });
    assert!(c.plan_post(640, 480, &mut SampleRng::new(0, 0, 0)).is_err());
    // torchvision: 640x427 with size 800, max_size 1333 -> 1199x800.
    assert_eq!(
        Resize::ShorterMax {
            shorter: 800,
            max_size: 1333
        }
        .output_size(640, 427)
        .unwrap(),
        (1199, 800)
    );
}

/// Random XYXY boxes on a `w` x `h` canvas.
fn random_boxes(w: u32, h: u32, n: usize, seed: u64) -> BoundingBoxes {
    let mut rng = SampleRng::new(seed, 0, 0);
    let boxes = (0..n)
        .map(|_| {
            let x = rng.uniform(0.0, f64::from(w) - 2.0) as f32;
            let y = rng.uniform(0.0, f64::from(h) - 2.0) as f32;
            let bw = rng.uniform(1.0, f64::from(w) / 2.0) as f32;
            let bh = rng.uniform(1.0, f64::from(h) / 2.0) as f32;
            [x, y, (x + bw).min(w as f32), (y + bh).min(h as f32)]
        })
        .collect();
    BoundingBoxes::new(BoxFormat::Xyxy, (w, h), boxes).unwrap()
}

fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let area = |x: &[f32; 4]| (x[2] - x[0]) * (x[3] - x[1]);
    let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    iw * ih / (area(a) + area(b) - iw * ih)
}

#[test]
fn random_iou_crop_keeps_torchvisions_constraints() {
    let step = RandomIoUCrop::default();
    let chain = Compose::new().then(step.clone());
    assert!(chain.needs_boxes());
    let (w, h) = (200u32, 150u32);
    let mut whole = 0;
    for i in 0..1500u64 {
        let boxes = random_boxes(w, h, 1 + (i % 5) as usize, i);
        let (_, spec, passes) = chain
            .plan_with_boxes(w, h, Some(&boxes), &mut SampleRng::new(8, 0, i))
            .unwrap();
        let g = &passes.geometry;
        let [zero, crop] = g.steps.as_slice() else {
            assert!(g.steps.is_empty() && (spec.width, spec.height) == (w, h));
            whole += 1;
            continue;
        };
        let (
            GeoStep::ZeroOutside {
                left,
                top,
                right,
                bottom,
            },
            GeoStep::Crop { width, height, .. },
        ) = (zero, crop)
        else {
            panic!("sample {i}: {:?}", g.steps);
        };
        let (cw, ch) = (*width, *height);
        assert_eq!((spec.width, spec.height), (cw, ch));
        // Each side 0.3..1 of the image's, aspect ratio 0.5..2, inside the image.
        assert!(cw >= (w as f32 * 0.3) as u32 && ch >= (h as f32 * 0.3) as u32);
        let aspect = f64::from(cw) / f64::from(ch);
        assert!((0.5..=2.0).contains(&aspect), "sample {i}: {cw}x{ch}");
        assert!(*right <= w as f32 && *bottom <= h as f32);
        // Some box's centre is inside; the others become zeros after the crop.
        let region = [*left, *top, *right, *bottom];
        let centred: Vec<bool> = boxes
            .boxes
            .iter()
            .map(|b| {
                let (cx, cy) = (0.5 * (b[0] + b[2]), 0.5 * (b[1] + b[3]));
                region[0] < cx && cx < region[2] && region[1] < cy && cy < region[3]
            })
            .collect();
        assert!(centred.contains(&true), "sample {i}");
        let moved = g.boxes(&boxes).unwrap();
        for (b, c) in moved.boxes.iter().zip(&centred) {
            if !c {
                assert_eq!(*b, [0.0; 4], "sample {i}");
            }
        }
        // The best overlap reaches at least the lowest threshold that is not "no crop".
        let best = boxes
            .boxes
            .iter()
            .zip(&centred)
            .filter(|(_, c)| **c)
            .map(|(b, _)| iou(b, &region))
            .fold(0.0f32, f32::max);
        assert!(best > 0.0, "sample {i}");
    }
    // Whole images come from the "no crop" threshold, drawn again after every threshold
    // that found no crop in 40 trials: torchvision's own RandomIoUCrop leaves 31.8% of 3,000
    // samples of this box distribution whole (torchvision 0.29.2, its generator).
    let share = f64::from(whole) / 1500.0;
    assert!(
        (0.27..0.37).contains(&share),
        "no crop for {share} of samples"
    );
}

#[test]
fn random_iou_crop_needs_boxes_and_ends_without_any() {
    let step = RandomIoUCrop::default();
    let mut st = PlanState::new(64, 48);
    let err = step
        .plan(&mut st, &mut SampleRng::new(0, 0, 0))
        .unwrap_err();
    assert!(err.to_string().contains("bounding boxes"), "{err}");
    // No box, thresholds all below 1: torchvision would draw forever; gm leaves it whole.
    let hopeless = RandomIoUCrop {
        options: vec![0.5],
        ..RandomIoUCrop::default()
    };
    let none = BoundingBoxes::new(BoxFormat::Xyxy, (64, 48), Vec::new()).unwrap();
    let (_, spec, passes) = Compose::new()
        .then(hopeless)
        .plan_with_boxes(64, 48, Some(&none), &mut SampleRng::new(0, 0, 1))
        .unwrap();
    assert_eq!((spec.width, spec.height), (64, 48));
    assert!(passes.geometry.steps.is_empty());
}

#[test]
fn fixed_size_crop_places_one_draw_on_both_axes_and_pads_the_rest() {
    let step = FixedSizeCrop::new(100, 80, [1.0, 2.0, 3.0]).unwrap();
    let mut offsets = BTreeSet::new();
    for i in 0..200 {
        // Larger on both axes: a crop at the same fraction of the room on each.
        let st = planned(&step, 300, 180, i);
        assert_eq!((st.width, st.height), (100, 80));
        let [GeoStep::Crop { left, top, .. }, GeoStep::Keep(_)] = st.geometry.steps.as_slice()
        else {
            panic!("{:?}", st.geometry.steps);
        };
        let (rx, ry) = (left / 200.0, top / 100.0);
        assert!((rx - ry).abs() <= 0.01 + 1.0 / 100.0, "{left}, {top}");
        offsets.insert(*left as u32);
        // Larger across, smaller down: cropped across, padded below.
        let st = planned(&step, 130, 50, i);
        assert_eq!((st.width, st.height), (100, 80));
        assert!(matches!(
            st.geometry.steps.as_slice(),
            [
                GeoStep::Crop {
                    top: 0.0,
                    height: 50,
                    ..
                },
                GeoStep::Keep(_),
                GeoStep::Pad {
                    right: 0,
                    bottom: 30,
                    ..
                }
            ]
        ));
        // Smaller: only padded.
        let st = planned(&step, 60, 70, i);
        assert_eq!(
            st.geometry.steps,
            vec![GeoStep::Pad {
                left: 0,
                top: 0,
                right: 40,
                bottom: 10,
                mask_fill: 0,
            }]
        );
    }
    assert!(offsets.len() > 50, "the window moves: {}", offsets.len());
    assert!(FixedSizeCrop::new(0, 5, [0.0; 3]).is_err());
}

#[test]
fn random_crop_pads_as_torchvision_then_draws_every_offset() {
    // CIFAR's RandomCrop(32, padding=4): 9 x 9 offsets of the 40 x 40 padded image.
    let cifar = RandomCrop {
        padding: [4; 4],
        mask_fill: 255,
        ..RandomCrop::new(32, 32)
    };
    let mut offsets = BTreeSet::new();
    for i in 0..3000 {
        let st = planned(&cifar, 32, 32, i);
        assert_eq!((st.width, st.height), (32, 32));
        let [
            GeoStep::Pad {
                left: 4,
                top: 4,
                right: 4,
                bottom: 4,
                mask_fill: 255,
            },
            GeoStep::Crop {
                left,
                top,
                width: 32,
                height: 32,
            },
        ] = st.geometry.steps.as_slice()
        else {
            panic!("{:?}", st.geometry.steps);
        };
        offsets.insert((*left as u32, *top as u32));
    }
    assert_eq!(offsets.len(), 81);
    assert!(offsets.iter().all(|&(x, y)| x <= 8 && y <= 8));
    // pad_if_needed pads both sides of the short axis by the difference (torchvision's
    // arithmetic: 20 wide + 2 * 20 = 60 for a 40 crop), then crops.
    let seg = RandomCrop {
        pad_if_needed: true,
        ..RandomCrop::new(40, 40)
    };
    for i in 0..200 {
        let st = planned(&seg, 20, 50, i);
        let [
            GeoStep::Pad {
                left: 20,
                top: 0,
                right: 20,
                bottom: 0,
                ..
            },
            GeoStep::Crop { left, top, .. },
        ] = st.geometry.steps.as_slice()
        else {
            panic!("{:?}", st.geometry.steps);
        };
        assert!(*left <= 20.0 && *top <= 10.0);
    }
    // Larger than the image without pad_if_needed: refused, as torchvision raises.
    let mut st = PlanState::new(20, 50);
    let e = RandomCrop::new(40, 40).plan(&mut st, &mut SampleRng::new(0, 0, 0));
    assert!(e.unwrap_err().to_string().contains("RandomCrop"));
}

#[test]
fn random_resize_draws_shorter_sides_below_max() {
    let step = RandomResize::new(20, 25).unwrap();
    let mut seen = BTreeSet::new();
    for i in 0..400 {
        let st = planned(&step, 100, 60, i);
        assert!((20..25).contains(&st.height), "{}", st.height);
        assert_eq!(st.width, st.height * 100 / 60);
        seen.insert(st.height);
    }
    assert_eq!(seen.len(), 5);
    assert!(RandomResize::new(5, 5).is_err());
}
