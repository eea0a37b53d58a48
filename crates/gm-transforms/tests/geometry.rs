//! The warps' CPU twin against torchvision (tests/media/transforms/geometry: F.affine,
//! F.rotate, F.perspective on uint8 tensors, torch's CPU grid_sample), within 1 u8 step.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod geometry_fixtures;

use geometry_fixtures::{cases, difference};
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{PlanState, SampleRng};

#[test]
fn twin_warps_match_torchvision() {
    let mut report = Vec::new();
    let all = cases();
    assert_eq!(all.len(), 42);
    for case in &all {
        let mut st = PlanState::new(case.width, case.height);
        case.step
            .plan(&mut st, &mut SampleRng::new(0, 0, 0))
            .unwrap();
        let (op, spec) = st.finish();
        let mut out = vec![0u8; spec.image_bytes()];
        fused(
            &HostImage::rgb8(&case.input, case.width, case.height),
            &op,
            &spec,
            &mut out,
        );
        let (worst, differ) = difference(&out, &case.expected);
        report.push(format!(
            "{}: worst {worst}, {differ} values differ",
            case.name
        ));
        assert!(worst <= 1, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}
