//! The committed torchvision colour references (tests/media/transforms, made by its
//! make_references.py), shared by the CPU-twin test (colour.rs) and the GPU test
//! (fused_gpu.rs), and the uint8 resize references (references.rs, fused_gpu.rs).
#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};

use gm_transforms::{ColourOp, ColourOps, Crop};
use serde_json::Value;

/// One reference: a source image, the operations applied in order, torchvision's result.
pub struct Case {
    /// The source image's name.
    pub source: String,
    /// `<source>_<case>`, for messages.
    pub name: String,
    /// Width of the source and the result.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// The source, HWC RGB u8.
    pub input: Vec<u8>,
    /// The operations.
    pub ops: ColourOps,
    /// torchvision's output, HWC RGB u8.
    pub expected: Vec<u8>,
}

/// tests/media/transforms, or GM_FIXTURES/transforms in the GPU bundle.
pub fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms")
}

fn op(pair: &Value) -> ColourOp {
    let name = pair[0].as_str().expect("op name");
    let value = pair[1].as_f64();
    let factor = || value.expect("op value");
    match name {
        "brightness" => ColourOp::Brightness(factor()),
        "contrast" => ColourOp::Contrast(factor()),
        "saturation" => ColourOp::Saturation(factor()),
        "hue" => ColourOp::Hue(factor()),
        "grayscale" => ColourOp::Grayscale,
        "solarize" => ColourOp::Solarize(factor()),
        "posterize" => ColourOp::Posterize(factor() as u8),
        "invert" => ColourOp::Invert,
        "autocontrast" => ColourOp::Autocontrast,
        "equalize" => ColourOp::Equalize,
        "sharpness" => ColourOp::Sharpness(factor()),
        other => panic!("unknown op {other}"),
    }
}

/// Every (source, case) pair of cases.json, files read.
pub fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("cases.json")).expect("cases.json");
    let manifest: Value = serde_json::from_str(&text).expect("cases.json parses");
    let sources = manifest["sources"].as_object().expect("sources");
    let mut out = Vec::new();
    for (source, size) in sources {
        let (width, height) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).expect("source");
        assert_eq!(input.len(), (width * height * 3) as usize, "{source}");
        for case in manifest["cases"].as_array().expect("cases") {
            let cname = case["name"].as_str().expect("case name");
            let ops: Vec<ColourOp> = case["ops"].as_array().unwrap().iter().map(op).collect();
            let expected = std::fs::read(dir().join(format!("{source}_{cname}.u8"))).unwrap();
            assert_eq!(expected.len(), input.len(), "{source}_{cname}");
            out.push(Case {
                source: source.clone(),
                name: format!("{source}_{cname}"),
                width,
                height,
                input: input.clone(),
                ops: ColourOps::from_ops(&ops).expect("at most 8 ops"),
                expected,
            });
        }
    }
    out
}

/// Largest absolute difference and how many values differ at all.
pub fn difference(got: &[u8], want: &[u8]) -> (u8, usize) {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).fold((0, 0), |(worst, n), (&a, &b)| {
        let d = a.abs_diff(b);
        (worst.max(d), n + usize::from(d > 0))
    })
}

/// One torchvision uint8 resize reference (tests/media/resize/make_u8_references.py): a crop
/// of a 200x133 source resized with antialiasing, then colour operations.
pub struct U8Resize {
    /// `<source>_<case>`, for messages.
    pub name: String,
    /// The 200x133 source, HWC RGB u8.
    pub input: Vec<u8>,
    /// The crop box: the whole source when the case has none.
    pub crop: Crop,
    /// Output width and height.
    pub size: (u32, u32),
    /// The operations after the resize.
    pub ops: ColourOps,
    /// torchvision's output, HWC RGB u8.
    pub expected: Vec<u8>,
}

/// Every (source, case) of tests/media/resize/u8_cases.json, files read.
pub fn u8_resizes() -> Vec<U8Resize> {
    let resize = dir().with_file_name("resize");
    let text = std::fs::read_to_string(resize.join("u8_cases.json")).expect("u8_cases.json");
    let manifest: Value = serde_json::from_str(&text).expect("u8_cases.json parses");
    let mut out = Vec::new();
    for source in ["baboon", "fruits"] {
        let input = std::fs::read(resize.join(format!("{source}.rgb"))).expect("source");
        for case in manifest["cases"].as_array().expect("cases") {
            let cname = case["case"].as_str().expect("case name");
            let n = |v: &Value| v.as_u64().expect("a size") as u32;
            // torchvision's box is (top, left, height, width).
            let crop = match case["box"].as_array() {
                Some(b) => Crop {
                    x: n(&b[1]) as f32,
                    y: n(&b[0]) as f32,
                    w: n(&b[3]) as f32,
                    h: n(&b[2]) as f32,
                },
                None => Crop::full(200, 133),
            };
            let size = (n(&case["size"][0]), n(&case["size"][1]));
            let ops: Vec<ColourOp> = case["ops"].as_array().unwrap().iter().map(op).collect();
            let expected = std::fs::read(resize.join(format!("{source}_u8_{cname}.u8"))).unwrap();
            assert_eq!(
                expected.len(),
                (size.0 * size.1 * 3) as usize,
                "{source}_{cname}"
            );
            out.push(U8Resize {
                name: format!("{source}_{cname}"),
                input: input.clone(),
                crop,
                size,
                ops: ColourOps::from_ops(&ops).expect("at most 8 ops"),
                expected,
            });
        }
    }
    out
}
