//! The detection recipes' random steps: sizes and draws as torchvision's `RandomShortestSize`,
//! `ScaleJitter` and `RandomZoomOut` make them (their effect on boxes is in targets.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::collections::BTreeSet;

use gm_transforms::{
    Compose, PlanState, RandomShortestSize, RandomZoomOut, Resize, SampleRng, ScaleJitter,
    Transform,
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
