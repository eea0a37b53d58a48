//! Resize against OpenCV 5.0 and torchvision (torch 2.11), computed on the GPU machine by
//! tests/media/resize/make_references.py from two 200x133 crops of real photos and committed
//! (rounded to u8). The CPU twin is checked here, everywhere; the GPU kernel in the GPU test.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_cuda::DType;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{Crop, FusedOp, Interp, Layout, Matrix, OutputSpec, PixelFormat};

const W: u32 = 200;
const H: u32 = 133;
/// (mode, width, height, libraries with a reference).
const CASES: [(&str, u32, u32, &[&str]); 7] = [
    ("bilinear", 97, 61, &["opencv", "torch"]),
    ("bilinear", 233, 151, &["opencv", "torch"]),
    ("nearest", 97, 61, &["opencv", "torch"]),
    ("bicubic", 97, 61, &["opencv", "torch"]),
    ("bicubic", 233, 151, &["opencv", "torch"]),
    ("antialias", 97, 61, &["torch"]),
    ("antialias", 61, 40, &["torch"]),
];

fn interp(mode: &str) -> Interp {
    match mode {
        "bilinear" => Interp::Bilinear,
        "nearest" => Interp::Nearest,
        "bicubic" => Interp::Bicubic,
        _ => Interp::Antialias,
    }
}

fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("resize")
}

#[test]
fn cpu_twin_resizes_like_opencv_and_torchvision() {
    let mut compared = 0;
    for name in ["baboon", "fruits"] {
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
        };
        let op = FusedOp {
            crop: Crop::full(W, H),
            flip_h: false,
            flip_v: false,
            pad: None,
        };
        for (mode, w, h, libs) in CASES {
            let spec = OutputSpec {
                width: w,
                height: h,
                layout: Layout::Hwc,
                dtype: DType::F32,
                bgr: false,
                grey: false,
                interp: interp(mode),
                scale: [1.0; 3],
                bias: [0.0; 3],
            };
            let mut out = vec![0u8; spec.image_bytes()];
            fused(&host, &op, &spec, &mut out);
            for &lib in libs {
                let reference =
                    std::fs::read(dir().join(format!("{name}_{mode}_{w}x{h}_{lib}.u8"))).unwrap();
                let worst = out
                    .chunks(4)
                    .zip(&reference)
                    .map(|(o, &r)| {
                        (f32::from_le_bytes([o[0], o[1], o[2], o[3]]).clamp(0.0, 255.0)
                            - f32::from(r))
                        .abs()
                    })
                    .fold(0.0f32, f32::max);
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
