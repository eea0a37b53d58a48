//! The committed torchvision chains that resample or round a uint8 image several times
//! (tests/media/transforms/passes, made by its make_references.py), as `Compose` chains:
//! shared by the CPU-twin test (passes.rs) and the GPU test (geometry_gpu.rs).

use std::path::{Path, PathBuf};

use gm_transforms::{
    Affine, CenterCrop, ColourOp, Compose, CropBox, Filter, HorizontalFlip, Interp, Pad, PlanError,
    PlanState, RandomAdjustSharpness, RandomAutocontrast, RandomEqualize, Resize, Rotate,
    SampleRng, Transform,
};
use serde_json::Value;

/// An image: width, height, HWC RGB u8 pixels.
pub type Pixels = (u32, u32, Vec<u8>);

/// One reference: a source image, a chain, torchvision's result.
pub struct Chain {
    /// `<source>_<chain>`, for messages.
    pub name: String,
    /// Source width.
    pub width: u32,
    /// Source height.
    pub height: u32,
    /// The source, HWC RGB u8.
    pub input: Vec<u8>,
    /// The chain, with torchvision's antialiased bilinear resizes.
    pub chain: Compose,
    /// Its first step where that resamples, and torchvision's output of it (size, pixels):
    /// torch resizes uint8 in fixed point, within a step of our float resize.
    pub head: Option<(Compose, Pixels)>,
    /// The steps after the head (all of them without one).
    pub tail: Compose,
    /// Whether the tail resamples bilinear (a bilinear warp or a resize): torchvision rounds
    /// a few of those values a step away from ours, as for a single step.
    pub tail_bilinear: bool,
    /// torchvision's output size and pixels, HWC RGB u8.
    pub expected: Pixels,
}

/// A fixed colour operation, as torchvision's `adjust_*` functions apply it.
#[derive(Debug)]
struct Colour(ColourOp);

impl Transform for Colour {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.push_colour("colour", self.0)
    }
}

/// tests/media/transforms, or GM_FIXTURES/transforms in the GPU bundle.
fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms")
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn int(v: &Value) -> u32 {
    v.as_u64().expect("integer") as u32
}

fn interp(step: &Value) -> Interp {
    match step["interpolation"].as_str() {
        Some("nearest") => Interp::Nearest,
        _ => Interp::Bilinear,
    }
}

fn fill(step: &Value) -> Option<[f32; 3]> {
    let f = &step["fill"];
    (!f.is_null()).then(|| [0, 1, 2].map(|c| num(&f[c]) as f32))
}

/// Appends `step` (with the pixel box torchvision used for a resized crop).
fn push(chain: &mut Compose, step: &Value, boxes: &mut std::slice::Iter<'_, Value>) {
    let pair = |v: &Value| (num(&v[0]), num(&v[1]));
    match step["op"].as_str().expect("op") {
        "resized_crop" => {
            let b = boxes.next().expect("a box per resized crop");
            let size = &step["size"];
            chain.push(CropBox {
                left: int(&b[1]),
                top: int(&b[0]),
                width: int(&b[3]),
                height: int(&b[2]),
            });
            chain.push(Resize::Exact(int(&size[1]), int(&size[0])));
        }
        "affine" => chain.push(Affine {
            angle: num(&step["angle"]),
            translate: pair(&step["translate"]),
            scale: num(&step["scale"]),
            shear: pair(&step["shear"]),
            interpolation: interp(step),
            fill: fill(step),
            center: None,
            mask_fill: 0,
        }),
        "rotate" => chain.push(Rotate {
            angle: num(&step["angle"]),
            interpolation: interp(step),
            center: None,
            fill: fill(step),
            mask_fill: 0,
        }),
        "equalize" => chain.push(RandomEqualize(1.0)),
        "autocontrast" => chain.push(RandomAutocontrast(1.0)),
        "hflip" => chain.push(HorizontalFlip(1.0)),
        "center_crop" => chain.push(CenterCrop(int(&step["size"][1]), int(&step["size"][0]))),
        "resize" => chain.push(Resize::Exact(int(&step["size"][1]), int(&step["size"][0]))),
        "pad" => {
            let p = &step["padding"];
            chain.push(Pad {
                left: int(&p[0]),
                top: int(&p[1]),
                right: int(&p[2]),
                bottom: int(&p[3]),
                fill: fill(step).expect("a pad fill"),
            });
        }
        "sharpness" => chain.push(RandomAdjustSharpness {
            sharpness_factor: num(&step["factor"]),
            p: 1.0,
        }),
        "brightness" => chain.push(Colour(ColourOp::Brightness(num(&step["factor"])))),
        "contrast" => chain.push(Colour(ColourOp::Contrast(num(&step["factor"])))),
        other => panic!("unknown step {other}"),
    }
}

/// Every (source, chain) pair of chains.json, files read.
pub fn chains() -> Vec<Chain> {
    let passes = dir().join("passes");
    let text = std::fs::read_to_string(passes.join("chains.json")).expect("chains.json");
    let manifest: Value = serde_json::from_str(&text).expect("chains.json parses");
    let mut out = Vec::new();
    for (source, size) in manifest["sources"].as_object().expect("sources") {
        let (width, height) = (int(&size[0]), int(&size[1]));
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).expect("source");
        for c in manifest["chains"].as_array().expect("chains") {
            let steps = c["steps"].as_array().expect("steps");
            let split = c["split"].as_u64().expect("split") as usize;
            let boxes = c["boxes"][source].as_array().expect("boxes");
            let compose = |steps: &[Value]| {
                let mut chain = Compose::new().then(Filter(Interp::Antialias));
                let mut boxes = boxes.iter();
                steps.iter().for_each(|s| push(&mut chain, s, &mut boxes));
                chain
            };
            let name = format!("{source}_{}", c["name"].as_str().expect("name"));
            let read = |file: String, size: &Value| {
                let pixels = std::fs::read(passes.join(file)).expect("reference");
                (int(&size[0]), int(&size[1]), pixels)
            };
            let head = (split > 0).then(|| {
                let size = &c["head_sizes"][source];
                (
                    compose(&steps[..split]),
                    read(format!("{name}_head.u8"), size),
                )
            });
            let tail_bilinear = steps[split..]
                .iter()
                .any(|s| s["interpolation"] == "bilinear" || s["op"] == "resize");
            out.push(Chain {
                chain: compose(steps),
                head,
                tail: compose(&steps[split..]),
                tail_bilinear,
                expected: read(format!("{name}.u8"), &c["sizes"][source]),
                name,
                width,
                height,
                input: input.clone(),
            });
        }
    }
    out
}
