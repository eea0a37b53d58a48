//! The committed torchvision colour references (tests/media/transforms, made by its
//! make_references.py), shared by the CPU-twin test (colour.rs) and the GPU test
//! (fused_gpu.rs).

use std::path::{Path, PathBuf};

use gm_transforms::{ColourOp, ColourOps};
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
