//! Boxes and keypoints moved through a plan's geometry against torchvision's functional
//! kernels (tests/media/transforms/targets/cases.json, made by its make_references.py), in
//! each box format; and, on random chains, the boxes against where the image's own pixels went.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_transforms::cpu::{HostImage, fused_passes};
use gm_transforms::geometry::{corners, perspective_coefficients};
use gm_transforms::targets::{
    BoundingBoxes, BoxFormat, GeoStep, KeyPoints, Mask, SanitizeBoundingBoxes,
};
use gm_transforms::{
    Affine, CenterCrop, Compose, CropBox, FixedSizeCrop, HorizontalFlip, Interp, Pad, Perspective,
    PlanError, PlanState, RandomAffine, RandomCrop, RandomPerspective, RandomResize,
    RandomResizedCrop, RandomRotation, RandomShortestSize, RandomZoomOut, Resize, Rotate,
    SampleRng, ScaleJitter, Transform, VerticalFlip,
};
use serde_json::Value;

fn fixtures() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms/targets")
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

fn pair(v: &Value) -> Option<(f64, f64)> {
    (!v.is_null()).then(|| (num(&v[0]), num(&v[1])))
}

fn int(v: &Value) -> u32 {
    v.as_u64().expect("a count") as u32
}

/// RandomIoUCrop's steps for a given crop (left, top, width, height), as its plan records
/// them once it has drawn that crop.
#[derive(Debug)]
struct IoUCropAt([f32; 4]);

impl Transform for IoUCropAt {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        let [l, t, w, h] = self.0;
        st.begin_geometry("RandomIoUCrop")?;
        st.geometry.steps.push(GeoStep::ZeroOutside {
            left: l,
            top: t,
            right: l + w,
            bottom: t + h,
        });
        st.crop_current(l, t, w, h);
        Ok(())
    }
}

/// A `*_fill` warp's mask fill, its argument `k` (0 for the plain warps).
fn mask_fill(step: &[Value], k: usize) -> u8 {
    step.get(k).map_or(0, |v| num(v) as u8)
}

/// The gm chain for a case's steps (gm's argument order: x before y, width before height);
/// a perspective comes first, on the `w` x `h` source.
fn chain(steps: &[Value], w: u32, h: u32) -> Compose {
    let mut c = Compose::new();
    for s in steps {
        let a = s.as_array().expect("a step");
        match a[0].as_str().expect("an op") {
            "hflip" => c.push(HorizontalFlip(1.0)),
            "vflip" => c.push(VerticalFlip(1.0)),
            "crop" => c.push(CropBox {
                left: int(&a[1]),
                top: int(&a[2]),
                width: int(&a[3]),
                height: int(&a[4]),
            }),
            "resize" => c.push(Resize::Exact(int(&a[1]), int(&a[2]))),
            "resize_max" => c.push(Resize::ShorterMax {
                shorter: int(&a[1]),
                max_size: int(&a[2]),
            }),
            "resize_longer" => c.push(Resize::Longer(int(&a[1]))),
            "pad" | "pad_fill" => c.push(Pad {
                left: int(&a[1]),
                top: int(&a[2]),
                right: int(&a[3]),
                bottom: int(&a[4]),
                fill: [a.get(5).map_or(0.0, |v| num(v) as f32); 3],
            }),
            "affine" | "affine_fill" => c.push(Affine {
                angle: num(&a[1]),
                translate: pair(&a[2]).expect("translate"),
                scale: num(&a[3]),
                shear: pair(&a[4]).expect("shear"),
                interpolation: Interp::Nearest,
                fill: None,
                center: pair(&a[5]),
                mask_fill: mask_fill(a, 6),
            }),
            "rotate" | "rotate_fill" => c.push(Rotate {
                angle: num(&a[1]),
                interpolation: Interp::Nearest,
                center: pair(&a[2]),
                fill: None,
                mask_fill: mask_fill(a, 3),
            }),
            "center_crop" => c.push(CenterCrop(int(&a[1]), int(&a[2]))),
            "perspective" | "perspective_fill" => {
                let start = corners(w, h);
                let end: [[f64; 2]; 4] = std::array::from_fn(|k| {
                    let (dx, dy) = pair(&a[1][k]).expect("offset");
                    [start[k][0] + dx, start[k][1] + dy]
                });
                c.push(Perspective {
                    coefficients: perspective_coefficients(start, end).expect("not degenerate"),
                    interpolation: Interp::Bilinear,
                    fill: None,
                    mask_fill: mask_fill(a, 2),
                });
            }
            "iou_crop" => c.push(IoUCropAt([1, 2, 3, 4].map(|k| int(&a[k]) as f32))),
            "fixed_size_crop" => c.push(
                FixedSizeCrop::new(int(&a[1]), int(&a[2]), [0.0; 3])
                    .unwrap()
                    .with_position(num(&a[3]) as f32),
            ),
            "sanitize" => c.push(SanitizeBoundingBoxes {
                min_size: num(&a[1]) as f32,
                min_area: num(&a[2]) as f32,
            }),
            other => panic!("unknown step {other}"),
        }
    }
    c
}

fn rows<const N: usize>(v: &Value) -> Vec<[f32; N]> {
    v.as_array()
        .expect("rows")
        .iter()
        .map(|r| std::array::from_fn(|k| num(&r[k]) as f32))
        .collect()
}

/// Largest difference, relative to the value's size where above 1.
fn worst<const N: usize>(ours: &[[f32; N]], theirs: &[[f32; N]]) -> f32 {
    assert_eq!(ours.len(), theirs.len());
    ours.iter()
        .flatten()
        .zip(theirs.iter().flatten())
        .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
        .fold(0.0, f32::max)
}

/// The references' label map: labels 0..6 in 5x4 blocks.
fn label_map(w: u32, h: u32) -> Mask {
    let data = (0..h)
        .flat_map(|y| (0..w).map(move |x| ((x / 5 + 3 * (y / 4)) % 7) as u8))
        .collect();
    Mask {
        width: w,
        height: h,
        data,
    }
}

/// FNV-1a (64 bits) of the bytes, as make_references.py hashes torchvision's masks.
fn fnv1a(data: &[u8]) -> String {
    let h = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

#[test]
fn boxes_and_keypoints_move_as_torchvision_moves_them() {
    let text = std::fs::read_to_string(fixtures().join("cases.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    let cases = all["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 72);
    let mut report = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let (w, h) = (int(&case["width"]), int(&case["height"]));
        let steps = case["chain"].as_array().unwrap();
        let (_, _, passes) = chain(steps, w, h)
            .plan_post(w, h, &mut SampleRng::new(0, 0, 0))
            .unwrap();
        let geometry = &passes.geometry;
        let warps = ["affine", "rotate", "perspective"];
        let warped = steps.iter().any(|s| {
            let op = s[0].as_str().unwrap();
            warps
                .iter()
                .any(|w| op.strip_suffix("_fill").unwrap_or(op) == *w)
        });
        // Warps multiply in float32 in another order than torch's matmul: 1e-5 of the value.
        let tolerance = if warped { 1e-5 } else { 0.0 };
        for (key, format) in [
            ("XYXY", BoxFormat::Xyxy),
            ("XYWH", BoxFormat::Xywh),
            ("CXCYWH", BoxFormat::Cxcywh),
        ] {
            let f = &case["boxes"][key];
            let input = BoundingBoxes::new(format, (w, h), rows(&f["input"])).unwrap();
            let mut out = geometry.boxes(&input).unwrap();
            let kept = geometry.kept(&input).unwrap();
            let want: Vec<bool> = f["kept"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_bool().unwrap())
                .collect();
            assert_eq!(kept, want, "{name} {key}: objects kept");
            out.boxes = out
                .boxes
                .iter()
                .zip(&kept)
                .filter(|(_, k)| **k)
                .map(|(b, _)| *b)
                .collect();
            let canvas = (int(&f["canvas"][0]), int(&f["canvas"][1]));
            assert_eq!(out.canvas, canvas, "{name} {key}");
            assert_eq!(geometry.canvas(), canvas, "{name}");
            let expected = rows(&f["expected"]);
            let d = worst(&out.boxes, &expected);
            report.push(format!("{name} {key}: {d:e}"));
            assert!(
                d <= tolerance,
                "{name} {key}: {:?}\n{}",
                out.boxes,
                report.join("\n")
            );
        }
        // Masks: every byte as torchvision's (its hash and sum).
        let m = geometry.mask(&label_map(w, h)).unwrap();
        let want = &case["mask"];
        assert_eq!(
            (m.width, m.height),
            (int(&want["width"]), int(&want["height"])),
            "{name}"
        );
        let sum: u64 = m.data.iter().map(|&v| u64::from(v)).sum();
        assert_eq!(sum, want["sum"].as_u64().unwrap(), "{name} mask sum");
        assert_eq!(
            fnv1a(&m.data),
            want["fnv1a"].as_str().unwrap(),
            "{name} mask"
        );
        let k = &case["keypoints"];
        let pts: Vec<[f32; 2]> = rows(&k["input"]);
        let n = pts.len();
        let input = KeyPoints::new((w, h), pts, vec![true; n]).unwrap();
        let out = geometry.keypoints(&input).unwrap();
        let expected: Vec<[f32; 2]> = rows(&k["expected"]);
        let d = worst(&out.points, &expected);
        assert!(d <= tolerance, "{name} keypoints: {d}");
        let (cw, ch) = (out.canvas.0 as f32, out.canvas.1 as f32);
        for (p, v) in expected.iter().zip(&out.visible) {
            let inside = p[0] >= 0.0 && p[0] < cw && p[1] >= 0.0 && p[1] < ch;
            assert_eq!(*v, inside, "{name}: {p:?} on {cw}x{ch}");
        }
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn sanitize_drops_degenerate_and_outside_boxes() {
    let b = BoundingBoxes::new(
        BoxFormat::Xywh,
        (50, 40),
        vec![
            [1.0, 1.0, 10.0, 10.0],
            [5.0, 5.0, 0.5, 20.0],
            [45.0, 1.0, 6.0, 3.0],
            [0.0, 0.0, 50.0, 40.0],
        ],
    )
    .unwrap();
    assert_eq!(
        SanitizeBoundingBoxes::default().keep(&b),
        vec![true, false, false, true]
    );
    let strict = SanitizeBoundingBoxes {
        min_size: 1.0,
        min_area: 200.0,
    };
    assert_eq!(strict.keep(&b), vec![false, false, false, true]);
    assert!(BoundingBoxes::new(BoxFormat::Xyxy, (5, 5), vec![[3.0, 0.0, 1.0, 2.0]]).is_err());
    assert!(BoundingBoxes::new(BoxFormat::Xywh, (5, 5), vec![[f32::NAN, 0.0, 1.0, 2.0]]).is_err());
}

/// An image of black with one white rectangle: where the fused twin (nearest) puts the
/// rectangle's pixels is where the plan's geometry must put its box.
fn painted(w: u32, h: u32, r: [u32; 4]) -> Vec<u8> {
    let mut img = vec![0u8; (w * h * 3) as usize];
    for y in r[1]..r[3] {
        for x in r[0]..r[2] {
            let i = ((y * w + x) * 3) as usize;
            img[i..i + 3].copy_from_slice(&[255; 3]);
        }
    }
    img
}

/// The bounding box (XYXY, pixel edges) of the white pixels of an HWC RGB image.
fn white_extent(img: &[u8], w: u32, h: u32) -> Option<[f32; 4]> {
    let mut out: Option<[f32; 4]> = None;
    for y in 0..h {
        for x in 0..w {
            if img[((y * w + x) * 3) as usize] > 127 {
                let (x, y) = (x as f32, y as f32);
                let e = out.get_or_insert([x, y, x + 1.0, y + 1.0]);
                *e = [
                    e[0].min(x),
                    e[1].min(y),
                    e[2].max(x + 1.0),
                    e[3].max(y + 1.0),
                ];
            }
        }
    }
    out
}

#[test]
fn random_chains_move_boxes_with_their_pixels() {
    let (w, h) = (96u32, 72u32);
    let rect = [30u32, 20, 61, 45];
    let img = painted(w, h, rect);
    let chains: Vec<(&str, Compose)> = vec![
        (
            "RandomResizedCrop + flips",
            Compose::new()
                .then(RandomResizedCrop::new(64, 48))
                .then(HorizontalFlip(0.5))
                .then(VerticalFlip(0.5)),
        ),
        (
            "Pad + CenterCrop + Resize",
            Compose::new()
                .then(Pad {
                    left: 7,
                    top: 3,
                    right: 0,
                    bottom: 9,
                    fill: [0.0; 3],
                })
                .then(HorizontalFlip(0.5))
                .then(CenterCrop(80, 70))
                .then(Resize::Exact(50, 40)),
        ),
        (
            "RandomShortestSize + RandomZoomOut",
            Compose::new()
                .then(RandomShortestSize::new(&[48, 64, 80], Some(100)).unwrap())
                .then(RandomZoomOut::new([0.0; 3], (1.0, 2.5), 0.5).unwrap()),
        ),
        (
            "ScaleJitter + flip",
            Compose::new()
                .then(ScaleJitter::new((64, 64), (0.3, 1.5)).unwrap())
                .then(HorizontalFlip(0.5)),
        ),
        (
            "RandomPerspective",
            Compose::new().then(RandomPerspective::new(0.4, 1.0).unwrap()),
        ),
        (
            "RandomResize + flip + RandomCrop(pad_if_needed) + FixedSizeCrop",
            Compose::new()
                .then(RandomResize::new(40, 90).unwrap())
                .then(HorizontalFlip(0.5))
                .then(RandomCrop {
                    padding: [3, 0, 5, 2],
                    pad_if_needed: true,
                    ..RandomCrop::new(70, 60)
                })
                .then(FixedSizeCrop::new(64, 64, [0.0; 3]).unwrap()),
        ),
        (
            "RandomRotation",
            Compose::new().then(RandomRotation::new(40.0).unwrap()),
        ),
        (
            "RandomAffine",
            Compose::new().then(
                RandomAffine::new(20.0)
                    .unwrap()
                    .translate(0.1, 0.1)
                    .unwrap()
                    .scale(0.8, 1.2)
                    .unwrap()
                    .shear(&[-10.0, 10.0])
                    .unwrap(),
            ),
        ),
    ];
    for (name, c) in &chains {
        let mut far = 0.0f32;
        for sample in 0..40u64 {
            let mut rng = SampleRng::new(7, 0, sample);
            let (op, spec, passes) = c.plan_post(w, h, &mut rng).unwrap();
            let mut out = vec![0u8; spec.image_bytes()];
            let src = HostImage::rgb8(&img, w, h);
            fused_passes(&src, &passes.pre, &op, &spec, &mut out);
            let r = rect.map(|v| v as f32);
            let input = BoundingBoxes::new(BoxFormat::Xyxy, (w, h), vec![r]).unwrap();
            let moved = passes.geometry.boxes(&input).unwrap();
            assert_eq!(moved.canvas, (spec.width, spec.height), "{name}");
            let b = moved.boxes[0];
            match white_extent(&out, spec.width, spec.height) {
                Some(e) => {
                    let d = (0..4).map(|k| (e[k] - b[k]).abs()).fold(0.0, f32::max);
                    far = far.max(d);
                    // A pixel whose centre lands inside the moved box is white: the edges
                    // differ by less than a pixel (bilinear warps blur one more pixel in,
                    // which the 127 threshold halves).
                    assert!(
                        d <= 1.0,
                        "{name} sample {sample}: pixels at {e:?}, box {b:?}"
                    );
                }
                None => {
                    // The rectangle left the image: its box is degenerate, and sanitized away.
                    assert_eq!(
                        SanitizeBoundingBoxes::default().keep(&moved),
                        vec![false],
                        "{name} sample {sample}: no pixel left but box {b:?}"
                    );
                }
            }
        }
        eprintln!("{name}: box edges within {far} px of the pixels'");
    }
}
