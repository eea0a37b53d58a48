//! The committed torchvision RandomErasing / MixUp / CutMix references
//! (tests/media/transforms/make_batch_references.py), shared by the CPU-twin test
//! (batch_references.rs) and the GPU test (batch_ops_gpu.rs).
#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};

use gm_cuda::DType;
use gm_transforms::{Erase, EraseFill, Layout, Mix, OutputSpec};
use serde_json::Value;

/// tests/media/transforms/batch, or GM_FIXTURES/transforms/batch in the GPU bundle.
pub fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms/batch")
}

pub fn cases() -> Value {
    let text = std::fs::read_to_string(dir().join("cases.json")).expect("cases.json");
    serde_json::from_str(&text).expect("cases.json parses")
}

pub fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn dtype(s: &str) -> DType {
    if s == "u8" { DType::U8 } else { DType::F32 }
}

/// A CHW three-channel output of `w` x `h` of the fixture's dtype.
pub fn spec(w: u32, h: u32, dtype_name: &str) -> OutputSpec {
    let mut s = OutputSpec::normalized(w, h, dtype(dtype_name), [0.0; 3], [1.0; 3]);
    s.layout = Layout::Chw;
    s
}

/// One erase case: the spec, the input image, the drawn erasure, the expected image.
pub struct EraseCase {
    pub name: String,
    pub spec: OutputSpec,
    pub input: Vec<u8>,
    pub erase: Erase,
    pub expected: Vec<u8>,
}

pub fn erase_cases() -> Vec<EraseCase> {
    let all = cases();
    let mut out = Vec::new();
    for c in all["erase"].as_array().expect("erase cases") {
        let name = c["name"].as_str().unwrap().to_string();
        let src = c["source"].as_str().unwrap();
        let d = c["dtype"].as_str().unwrap();
        let (w, h) = if src == "random" { (37, 53) } else { (64, 48) };
        let v: Vec<f32> = c["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let value = if v.len() == 1 {
            [v[0]; 3]
        } else {
            [v[0], v[1], v[2]]
        };
        let u = |k: &str| c[k].as_u64().unwrap() as u32;
        out.push(EraseCase {
            spec: spec(w, h, d),
            input: read(&format!("{src}_in.{d}")),
            erase: Erase {
                top: u("i"),
                left: u("j"),
                height: u("h"),
                width: u("w"),
                fill: EraseFill::Value(value),
            },
            expected: read(&format!("erase_{name}.{d}")),
            name,
        });
    }
    out
}

/// One mix case: the spec, batch size, input batch, the drawn mix (CutMix's box from our
/// `cut_box`), the labels, expected batch and soft labels, and torchvision's box.
pub struct MixCase {
    pub name: String,
    pub spec: OutputSpec,
    pub n: usize,
    pub input: Vec<u8>,
    pub lambda: f32,
    pub centre: Option<(i64, i64)>,
    pub torch_box: Option<[u32; 4]>,
    pub torch_lambda: f32,
    pub labels: Vec<i64>,
    pub expected: Vec<u8>,
    pub soft: Vec<f32>,
}

impl MixCase {
    /// The mix as our code draws it from lambda and the centre.
    pub fn mix(&self) -> Mix {
        match self.centre {
            None => Mix {
                lambda: self.lambda,
                cut: None,
            },
            Some((x, y)) => {
                gm_transforms::cut_box(self.lambda, x, y, self.spec.width, self.spec.height)
            }
        }
    }
}

pub fn mix_cases() -> Vec<MixCase> {
    let all = cases();
    let mut out = Vec::new();
    for c in all["mix"].as_array().expect("mix cases") {
        let name = c["name"].as_str().unwrap().to_string();
        let d = c["dtype"].as_str().unwrap();
        let shape: Vec<u64> = c["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let (n, h, w) = (shape[0] as usize, shape[2] as u32, shape[3] as u32);
        let lambda = c["lam"].as_f64().unwrap() as f32;
        let centre = c
            .get("centre")
            .map(|v| (v[0].as_i64().unwrap(), v[1].as_i64().unwrap()));
        let torch_box = c
            .get("box")
            .map(|b| [0, 1, 2, 3].map(|k| b[k].as_u64().unwrap() as u32));
        let torch_lambda = c
            .get("lam_adjusted")
            .map_or(lambda, |v| v.as_f64().unwrap() as f32);
        let labels = c["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let soft = read(&format!("mix_{name}_labels.f32"))
            .chunks(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        out.push(MixCase {
            spec: spec(w, h, d),
            n,
            input: read(&format!("mix_{}_in_{d}.{d}", c["batch"].as_str().unwrap())),
            lambda,
            centre,
            torch_box,
            torch_lambda,
            labels,
            expected: read(&format!("mix_{name}.{d}")),
            soft,
            name,
        });
    }
    out
}

/// Largest difference as a multiple of the allowed error: 1 u8 step, or 1e-3 relative (at
/// least 1e-3 absolute) for f32.
pub fn worst(dtype: DType, got: &[u8], want: &[u8]) -> f64 {
    assert_eq!(got.len(), want.len());
    let e = dtype.size();
    let value = |b: &[u8]| -> f64 {
        match dtype {
            DType::U8 => f64::from(b[0]),
            DType::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
            DType::F16 => f64::from(half::f16::from_le_bytes([b[0], b[1]]).to_f32()),
            DType::BF16 => f64::from(half::bf16::from_le_bytes([b[0], b[1]]).to_f32()),
            DType::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        }
    };
    got.chunks(e)
        .zip(want.chunks(e))
        .map(|(a, b)| {
            let (a, b) = (value(a), value(b));
            let tol = match dtype {
                DType::U8 | DType::U16 => 1.0,
                DType::F32 => 1e-3 * b.abs().max(1.0),
                DType::F16 => (1e-3 * b.abs().max(1.0)).max(b.abs() * 2f64.powi(-10)),
                DType::BF16 => (1e-3 * b.abs().max(1.0)).max(b.abs() * 2f64.powi(-7)),
            };
            if a.is_nan() || b.is_nan() {
                f64::INFINITY
            } else {
                (a - b).abs() / tol
            }
        })
        .fold(0.0, f64::max)
}
