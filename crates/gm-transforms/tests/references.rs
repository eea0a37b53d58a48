//! Resize against OpenCV 5.0 and torchvision (torch 2.11), computed on the GPU machine by
//! tests/media/resize/make_references.py from two 200x133 crops of real photos and committed
//! (rounded to u8). The CPU twin is checked here, everywhere; the GPU kernel in the GPU test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod colour_fixtures;
mod common;

use common::{CASES, H, SOURCES, W, dir, max_difference, spec};
use gm_cuda::DType;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{Crop, FusedOp, Matrix, OutputSpec, PixelFormat};

#[test]
fn cpu_twin_resizes_like_opencv_and_torchvision() {
    let mut compared = 0;
    for name in SOURCES {
        let src = std::fs::read(dir().join(format!("{name}.rgb"))).unwrap();
        let host = HostImage {
            data: &src,
            chroma: &[],
            pitch: 3 * W as usize,
            width: W,
            height: H,
            format: PixelFormat::Rgb8,
            matrix: Matrix::Bt601,
            full_range: false,
            orientation: Default::default(),
            chroma_filter: Default::default(),
        };
        let op = FusedOp {
            crop: Crop::full(W, H),
            flip_h: false,
            flip_v: false,
            pad: None,
            colour: gm_transforms::ColourOps::NONE,
            warp: None,
        };
        for (mode, w, h, libs) in CASES {
            let spec = spec(mode, w, h);
            let mut out = vec![0u8; spec.image_bytes()];
            fused(&host, &op, &spec, &mut out);
            for &lib in libs {
                let worst = max_difference(&out, name, mode, w, h, lib);
                // The references are float resizes rounded to integers: 0.5 plus float noise.
                // A u8 image's antialiased resize is torchvision's uint8 one instead (checked
                // exactly below), a step from the float one at most.
                let bound = if mode == "antialias" { 1.0 } else { 0.51 };
                assert!(
                    worst <= bound,
                    "{name} {mode} {w}x{h} vs {lib}: max difference {worst}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 24);
}

/// The antialiased resize of a u8 image equals torchvision's uint8 resize (its CPU integer
/// arithmetic) byte for byte, crops, upscales and one-axis resizes included, and so do the
/// chains after it: equalize, autocontrast, sharpness and a colour jitter.
#[test]
fn cpu_twin_resizes_uint8_exactly_like_torchvision() {
    let all = colour_fixtures::u8_resizes();
    assert_eq!(all.len(), 28);
    let mut report = Vec::new();
    for case in &all {
        let op = FusedOp {
            crop: case.crop,
            colour: case.ops,
            ..FusedOp::full(W, H)
        };
        let spec = OutputSpec {
            dtype: DType::U8,
            ..spec("antialias", case.size.0, case.size.1)
        };
        let mut got = vec![0u8; spec.image_bytes()];
        fused(&HostImage::rgb8(&case.input, W, H), &op, &spec, &mut got);
        let (worst, differ) = colour_fixtures::difference(&got, &case.expected);
        report.push(format!("{} {differ} (max {worst})", case.name));
    }
    assert!(
        report.iter().all(|r| r.ends_with(" 0 (max 0)")),
        "values differing per case: {}",
        report.join(", ")
    );
}
