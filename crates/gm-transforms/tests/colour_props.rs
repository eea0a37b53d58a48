//! Properties of the colour operations in the CPU twin: identity parameters give the input,
//! and a chain gives what its steps give applied one after another (each step's output
//! stored as u8 and read back, as torchvision chains uint8 tensors).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{ColourOp, ColourOps, FusedOp, PlanState};
use proptest::prelude::*;

/// The CPU twin's u8 HWC output of `ops` on a `w` x `h` RGB image, no geometry.
fn run(pixels: &[u8], w: u32, h: u32, ops: &[ColourOp]) -> Vec<u8> {
    let (_, spec) = PlanState::new(w, h).finish();
    let op = FusedOp {
        colour: ColourOps::from_ops(ops).expect("at most 8 ops"),
        ..FusedOp::full(w, h)
    };
    let mut out = vec![0u8; spec.image_bytes()];
    fused(&HostImage::rgb8(pixels, w, h), &op, &spec, &mut out);
    out
}

fn image() -> impl Strategy<Value = (u32, u32, Vec<u8>)> {
    (1u32..24, 1u32..24).prop_flat_map(|(w, h)| {
        (
            Just(w),
            Just(h),
            prop::collection::vec(any::<u8>(), (w * h * 3) as usize),
        )
    })
}

fn colour_op() -> impl Strategy<Value = ColourOp> {
    prop_oneof![
        (0.0f64..2.5).prop_map(ColourOp::Brightness),
        (0.0f64..2.5).prop_map(ColourOp::Contrast),
        (0.0f64..2.5).prop_map(ColourOp::Saturation),
        (-0.5f64..=0.5).prop_map(ColourOp::Hue),
        Just(ColourOp::Grayscale),
        (0.0f64..=255.0).prop_map(ColourOp::Solarize),
        (0u8..=8).prop_map(ColourOp::Posterize),
        Just(ColourOp::Invert),
        Just(ColourOp::Autocontrast),
        Just(ColourOp::Equalize),
        (0.0f64..3.0).prop_map(ColourOp::Sharpness),
    ]
}

proptest! {
    #[test]
    fn identity_parameters_give_the_input((w, h, pixels) in image()) {
        let identities = [
            ColourOp::Brightness(1.0),
            ColourOp::Contrast(1.0),
            ColourOp::Saturation(1.0),
            ColourOp::Hue(0.0),
            ColourOp::Posterize(8),
            ColourOp::Solarize(256.0),
            ColourOp::Sharpness(1.0),
        ];
        for op in identities {
            prop_assert_eq!(&run(&pixels, w, h, &[op]), &pixels, "{:?}", op);
        }
        prop_assert_eq!(&run(&pixels, w, h, &identities), &pixels);
        // Inverting twice is the identity too, through a real change in between.
        prop_assert_eq!(&run(&pixels, w, h, &[ColourOp::Invert, ColourOp::Invert]), &pixels);
    }

    #[test]
    fn a_chain_equals_its_steps_one_after_another(
        (w, h, pixels) in image(),
        ops in prop::collection::vec(colour_op(), 1..=8),
    ) {
        let chained = run(&pixels, w, h, &ops);
        let stepwise = ops.iter().fold(pixels.clone(), |img, &op| run(&img, w, h, &[op]));
        prop_assert_eq!(chained, stepwise);
    }
}
