//! The committed torchvision Gaussian-blur references (tests/media/transforms/blur, made by its
//! make_blur_references.py), shared by the CPU-twin test (blur.rs) and the GPU test
//! (blur_gpu.rs).
#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One reference: a source image, a kernel and sigma, torchvision's result (`None`: refused).
pub struct Case {
    /// `<source>_<case>`, for messages.
    pub name: String,
    /// Width of the source and the result.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// The source, HWC RGB u8.
    pub input: Vec<u8>,
    /// Kernel width and height.
    pub kernel: (u32, u32),
    /// Sigma (both axes).
    pub sigma: f64,
    /// torchvision's output, HWC RGB u8, or `None` where torch refused the padding.
    pub expected: Option<Vec<u8>>,
}

/// tests/media/transforms/blur, or GM_FIXTURES/transforms/blur in the GPU bundle.
pub fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms")
        .join("blur")
}

pub fn manifest() -> Value {
    let text = std::fs::read_to_string(dir().join("cases.json")).expect("cases.json");
    serde_json::from_str(&text).expect("cases.json parses")
}

/// Every (source, case) pair, files read.
pub fn cases() -> Vec<Case> {
    let m = manifest();
    let mut out = Vec::new();
    for (source, size) in m["sources"].as_object().expect("sources") {
        let (width, height) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).expect("source");
        assert_eq!(input.len(), (width * height * 3) as usize, "{source}");
        for case in m["cases"].as_array().expect("cases") {
            let cname = case["name"].as_str().expect("case name");
            let k = case["kernel"].as_array().unwrap();
            let refused = m["refused"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["source"] == source.as_str() && r["case"] == cname);
            let expected = (!refused).then(|| {
                let e = std::fs::read(dir().join(format!("{source}_{cname}.u8"))).unwrap();
                assert_eq!(e.len(), input.len(), "{source}_{cname}");
                e
            });
            out.push(Case {
                name: format!("{source}_{cname}"),
                width,
                height,
                input: input.clone(),
                kernel: (k[0].as_u64().unwrap() as u32, k[1].as_u64().unwrap() as u32),
                sigma: case["sigma"].as_f64().unwrap(),
                expected,
            });
        }
    }
    out
}

/// The largest difference and how many values differ.
pub fn difference(a: &[u8], b: &[u8]) -> (u8, usize) {
    let d = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y));
    d.fold((0, 0), |(m, n), d| (m.max(d), n + usize::from(d > 0)))
}
