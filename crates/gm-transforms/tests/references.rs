//! Resize against OpenCV 5.0 and torchvision (torch 2.11), computed on the GPU machine by
//! tests/media/resize/make_references.py from two 200x133 crops of real photos and committed
//! (rounded to u8). The CPU twin is checked here, everywhere; the GPU kernel in the GPU test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{CASES, H, SOURCES, W, dir, max_difference, spec};
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{Crop, FusedOp, Matrix, PixelFormat};

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
                // The references are rounded to integers: 0.5 plus float noise.
                assert!(
                    worst <= 0.51,
                    "{name} {mode} {w}x{h} vs {lib}: max difference {worst}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 24);
}
