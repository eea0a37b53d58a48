//! RandomErasing, MixUp and CutMix of the CPU twins against torchvision.transforms.v2 with
//! the same parameters (tests/media/transforms/make_batch_references.py): real photo crops
//! and random odd-size images, f32 (normalized) and u8; within 1 u8 step or 1e-3 relative.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod batch_fixtures;

use batch_fixtures::{erase_cases, mix_cases, worst};
use gm_transforms::{erase_image, mix_batch};

#[test]
fn erasing_matches_torchvision_erase() {
    let cases = erase_cases();
    assert_eq!(cases.len(), 5);
    for c in &cases {
        let mut got = c.input.clone();
        erase_image(&mut got, &c.spec, &c.erase);
        let d = worst(c.spec.dtype, &got, &c.expected);
        assert!(d <= 1.0, "{}: difference {d} of the allowed", c.name);
        // The reference really erased something: a twin doing nothing would fail.
        assert_ne!(c.input, c.expected, "{}", c.name);
        // u8 values are torch's truncating cast: exact.
        if c.spec.dtype == gm_cuda::DType::U8 {
            assert_eq!(got, c.expected, "{}", c.name);
        }
    }
}

#[test]
fn cutmix_boxes_are_torchvisions_for_the_same_lambda_and_centre() {
    let cases = mix_cases();
    let cut: Vec<_> = cases.iter().filter(|c| c.centre.is_some()).collect();
    assert_eq!(cut.len(), 3);
    for c in cut {
        let mix = c.mix();
        assert_eq!(mix.cut, c.torch_box, "{}", c.name);
        assert!(
            (mix.lambda - c.torch_lambda).abs() < 1e-6,
            "{}: {} vs {}",
            c.name,
            mix.lambda,
            c.torch_lambda
        );
    }
}

#[test]
fn mixup_and_cutmix_match_torchvision_images_and_soft_labels() {
    let cases = mix_cases();
    assert_eq!(cases.len(), 5);
    for c in &cases {
        let mix = c.mix();
        let mut got = c.input.clone();
        mix_batch(&mut got, c.n, &c.spec, &mix);
        let d = worst(c.spec.dtype, &got, &c.expected);
        assert!(d <= 1.0, "{}: difference {d} of the allowed", c.name);
        assert_ne!(c.input, c.expected, "{}", c.name);
        let soft = mix.soft_labels(&c.labels, 10).unwrap();
        assert_eq!(soft.len(), c.soft.len(), "{}", c.name);
        for (k, (a, b)) in soft.iter().zip(&c.soft).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6,
                "{}: soft label {k}: {a} vs {b}",
                c.name
            );
        }
        for row in soft.chunks(10) {
            assert!(
                (row.iter().sum::<f32>() - 1.0).abs() < 1e-6,
                "{}: {row:?}",
                c.name
            );
        }
    }
}

#[test]
fn labels_outside_the_classes_are_errors_naming_the_position() {
    let mix = gm_transforms::Mix {
        lambda: 0.5,
        cut: None,
    };
    let e = mix.soft_labels(&[1, 10, 2], 10).unwrap_err().to_string();
    assert!(e.contains("label 10 of batch position 1"), "{e}");
    assert!(mix.soft_labels(&[-1], 10).is_err());
}
