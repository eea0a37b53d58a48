//! The colour operations of the CPU twin against torchvision.transforms.v2.functional on uint8
//! images (two real photo crops, one random 37x53 image), committed by
//! tests/media/transforms/make_references.py: within 1 u8 step per value.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod colour_fixtures;

use colour_fixtures::{cases, difference};
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{FusedOp, PlanState};

#[test]
fn cpu_twin_colour_ops_match_torchvision_within_one_step() {
    let all = cases();
    assert_eq!(all.len(), 3 * 21, "every source with every case");
    let sources: std::collections::HashSet<&str> = all.iter().map(|c| c.source.as_str()).collect();
    assert_eq!(sources.len(), 3, "two photo crops and a random image");
    let mut report = Vec::new();
    for case in &all {
        let (_, spec) = PlanState::new(case.width, case.height).finish();
        let op = FusedOp {
            colour: case.ops,
            ..FusedOp::full(case.width, case.height)
        };
        let mut got = vec![0u8; spec.image_bytes()];
        fused(
            &HostImage::rgb8(&case.input, case.width, case.height),
            &op,
            &spec,
            &mut got,
        );
        let (worst, differ) = difference(&got, &case.expected);
        assert!(worst <= 1, "{}: max difference {worst}", case.name);
        // The references really are changed images: a twin that did nothing would fail.
        assert_ne!(case.expected, case.input, "{}", case.name);
        report.push(format!("{} {differ}", case.name));
    }
    eprintln!("values off by one, per case: {}", report.join(", "));
}
