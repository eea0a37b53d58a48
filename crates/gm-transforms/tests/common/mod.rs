//! The committed OpenCV / torchvision resize references, shared by the CPU-twin test
//! (references.rs) and the GPU test (fused_gpu.rs).

use std::path::{Path, PathBuf};

use gm_cuda::DType;
use gm_transforms::{Interp, Layout, OutputSpec};

/// Size of the two source crops.
pub const W: u32 = 200;
/// Size of the two source crops.
pub const H: u32 = 133;
/// The source crops, `<name>.rgb` in the reference directory.
pub const SOURCES: [&str; 2] = ["baboon", "fruits"];
/// (mode, width, height, libraries with a reference).
pub const CASES: [(&str, u32, u32, &[&str]); 7] = [
    ("bilinear", 97, 61, &["opencv", "torch"]),
    ("bilinear", 233, 151, &["opencv", "torch"]),
    ("nearest", 97, 61, &["opencv", "torch"]),
    ("bicubic", 97, 61, &["opencv", "torch"]),
    ("bicubic", 233, 151, &["opencv", "torch"]),
    ("antialias", 97, 61, &["torch"]),
    ("antialias", 61, 40, &["torch"]),
];

/// The interpolation a reference file's mode names.
pub fn interp(mode: &str) -> Interp {
    match mode {
        "bilinear" => Interp::Bilinear,
        "nearest" => Interp::Nearest,
        "bicubic" => Interp::Bicubic,
        _ => Interp::Antialias,
    }
}

/// tests/media/resize, or GM_FIXTURES/resize in the GPU bundle.
pub fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("resize")
}

/// Largest difference between f32 output (little-endian bytes, clamped to 0..255) and the
/// reference `<name>_<mode>_<w>x<h>_<lib>.u8`.
pub fn max_difference(got: &[u8], name: &str, mode: &str, w: u32, h: u32, lib: &str) -> f32 {
    let reference = std::fs::read(dir().join(format!("{name}_{mode}_{w}x{h}_{lib}.u8")))
        .expect("reference file");
    assert_eq!(
        got.len(),
        reference.len() * 4,
        "{name} {mode} {w}x{h} {lib}"
    );
    got.chunks(4)
        .zip(&reference)
        .map(|(o, &r)| {
            (f32::from_le_bytes([o[0], o[1], o[2], o[3]]).clamp(0.0, 255.0) - f32::from(r)).abs()
        })
        .fold(0.0f32, f32::max)
}

/// Float HWC RGB output of `w`x`h`, unnormalized, resized by `mode`.
pub fn spec(mode: &str, w: u32, h: u32) -> OutputSpec {
    OutputSpec {
        width: w,
        height: h,
        layout: Layout::Hwc,
        dtype: DType::F32,
        bgr: false,
        grey: false,
        interp: interp(mode),
        scale: [1.0; 3],
        bias: [0.0; 3],
    }
}
