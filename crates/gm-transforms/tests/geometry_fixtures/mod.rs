//! The committed torchvision warp references (tests/media/transforms/geometry, made by its
//! make_references.py), shared by the CPU-twin test (geometry.rs) and the GPU test
//! (geometry_gpu.rs).

use std::path::{Path, PathBuf};

use gm_transforms::geometry::{corners, perspective_coefficients};
use gm_transforms::{Affine, Interp, Perspective, Rotate, Transform};
use serde_json::Value;

/// One reference: a source image, one warp step, torchvision's result.
pub struct Case {
    /// `<source>_<case>`, for messages.
    pub name: String,
    /// Width of the source and the result.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// The source, HWC RGB u8.
    pub input: Vec<u8>,
    /// The step with the case's arguments.
    pub step: Box<dyn Transform>,
    /// torchvision's output, HWC RGB u8.
    pub expected: Vec<u8>,
}

/// tests/media/transforms/geometry, or GM_FIXTURES/transforms/geometry in the GPU bundle.
pub fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms")
}

fn pair(v: &Value) -> (f64, f64) {
    (
        v[0].as_f64().expect("number"),
        v[1].as_f64().expect("number"),
    )
}

fn step(op: &str, args: &Value, w: u32, h: u32) -> (Box<dyn Transform>, Option<[f32; 8]>) {
    let interpolation = match args["interpolation"].as_str().expect("interpolation") {
        "nearest" => Interp::Nearest,
        _ => Interp::Bilinear,
    };
    let f = &args["fill"];
    // null: torchvision's fill=None.
    let fill = (!f.is_null()).then(|| [0, 1, 2].map(|c| f[c].as_f64().expect("fill") as f32));
    let center = args.get("center").map(pair);
    match op {
        "affine" => (
            Box::new(Affine {
                angle: args["angle"].as_f64().expect("angle"),
                translate: pair(&args["translate"]),
                scale: args["scale"].as_f64().expect("scale"),
                shear: pair(&args["shear"]),
                interpolation,
                fill,
                center,
                mask_fill: 0,
            }),
            None,
        ),
        "rotate" => (
            Box::new(Rotate {
                angle: args["angle"].as_f64().expect("angle"),
                interpolation,
                center,
                fill,
                mask_fill: 0,
            }),
            None,
        ),
        _ => {
            let start = corners(w, h);
            let off = &args["offsets"];
            let end: [[f64; 2]; 4] = std::array::from_fn(|k| {
                let (dx, dy) = pair(&off[k]);
                [start[k][0] + dx, start[k][1] + dy]
            });
            let coefficients = perspective_coefficients(start, end).expect("not degenerate");
            (
                Box::new(Perspective {
                    coefficients,
                    interpolation,
                    fill,
                    mask_fill: 0,
                }),
                Some(coefficients),
            )
        }
    }
}

/// Every (source, case) pair of cases.json, files read.
pub fn cases() -> Vec<Case> {
    let geometry = dir().join("geometry");
    let text = std::fs::read_to_string(geometry.join("cases.json")).expect("cases.json");
    let manifest: Value = serde_json::from_str(&text).expect("cases.json parses");
    let mut out = Vec::new();
    for (source, size) in manifest["sources"].as_object().expect("sources") {
        let (width, height) = (
            size[0].as_u64().expect("width") as u32,
            size[1].as_u64().expect("height") as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).expect("source");
        assert_eq!(input.len(), (width * height * 3) as usize, "{source}");
        for case in manifest["cases"].as_array().expect("cases") {
            let cname = case["name"].as_str().expect("case name");
            let op = case["op"].as_str().expect("op");
            let (step, coefficients) = step(op, &case["args"], width, height);
            let name = format!("{source}_{cname}");
            let expected = std::fs::read(geometry.join(format!("{name}.u8"))).expect("reference");
            assert_eq!(expected.len(), input.len(), "{name}");
            if let Some(ours) = coefficients {
                let theirs = &manifest["coefficients"][&name];
                for (k, c) in ours.iter().enumerate() {
                    let t = theirs[k].as_f64().expect("coefficient") as f32;
                    assert!(
                        (c - t).abs() <= 1e-6 * t.abs().max(1.0),
                        "{name} coefficient {k}: {c} vs torchvision's {t}"
                    );
                }
            }
            out.push(Case {
                name,
                width,
                height,
                input: input.clone(),
                step,
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
