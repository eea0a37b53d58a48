//! TrivialAugmentWide in the CPU twin against torchvision (tests/media/transforms/policies:
//! torchvision's own `_apply_image_or_video_transform` for each operation, given the drawn
//! bin and sign, nearest and fill=None as its defaults), within 1 u8 step; its magnitude table
//! and its draw order.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::policies::{plan_sequence, standard_magnitudes};
use gm_transforms::{AugmentOp, Interp, PlanState, SampleRng, Transform, TrivialAugmentWide};
use serde_json::Value;

fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms")
}

#[test]
fn twin_trivial_augment_ops_match_torchvision() {
    let text = std::fs::read_to_string(dir().join("policies/cases.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let ta = TrivialAugmentWide::new();
    let mut compared = 0;
    let mut report = Vec::new();
    for (source, size) in manifest["sources"].as_object().unwrap() {
        let (w, h) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).unwrap();
        for case in manifest["cases"].as_array().unwrap() {
            let name = case["op"].as_str().unwrap();
            let op = *TrivialAugmentWide::OPS
                .iter()
                .find(|o| o.name() == name)
                .unwrap();
            let bin = case["bin"].as_u64().unwrap() as usize;
            let negative = case["negative"].as_bool().unwrap();
            // Our magnitude table gives torchvision's magnitude, bit for bit.
            let (table, signed) = ta.magnitudes(op);
            let m = table.map_or(0.0, |t| t[bin]);
            let m = if negative && signed { -m } else { m };
            assert_eq!(m, case["magnitude"].as_f64().unwrap(), "{name} bin {bin}");
            let mut st = PlanState::new(w, h);
            op.plan(&mut st, m, Interp::Nearest, None).unwrap();
            let (fop, spec) = st.finish();
            let mut out = vec![0u8; spec.image_bytes()];
            fused(&HostImage::rgb8(&input, w, h), &fop, &spec, &mut out);
            let sign = if negative { "neg" } else { "pos" };
            let file = format!("{source}_{name}_{bin}_{sign}");
            let want = std::fs::read(dir().join(format!("policies/{file}.u8"))).unwrap();
            let worst = out
                .iter()
                .zip(&want)
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap();
            let differ = out.iter().zip(&want).filter(|(a, b)| a != b).count();
            report.push(format!("{file}: worst {worst}, {differ} values differ"));
            assert!(worst <= 1, "{}", report.join("\n"));
            compared += 1;
        }
    }
    eprintln!("{}", report.join("\n"));
    assert_eq!(compared, 50);
}

/// torchvision's forward: the operation uniformly of 14, then the bin, then the sign
/// (`rand() <= 0.5` negative) for the signed operations; per sample, repeatable.
#[test]
fn trivial_augment_draws_in_torchvisions_order() {
    let ta = TrivialAugmentWide::new();
    let mut seen = [0usize; 14];
    for index in 0..2000 {
        let mut rng = SampleRng::new(4, 0, index);
        let (op, m) = ta.draw(&mut rng.clone());
        let k = rng.below(14) as usize;
        assert_eq!(op, TrivialAugmentWide::OPS[k]);
        seen[k] += 1;
        let (table, signed) = ta.magnitudes(op);
        let want = match table {
            None => 0.0,
            Some(t) => {
                let v = t[rng.below(31) as usize];
                if signed && rng.uniform(0.0, 1.0) <= 0.5 {
                    -v
                } else {
                    v
                }
            }
        };
        assert_eq!(m, want);
    }
    // Uniform over the 14 operations: each near 2000 / 14 = 143.
    assert!(seen.iter().all(|&n| (90..200).contains(&n)), "{seen:?}");
}

/// Planned in a chain, a geometric draw becomes the chain's warp and a photometric one a
/// colour operation; the output (size, filter) never depends on the draw.
#[test]
fn trivial_augment_plans_either_kind() {
    let ta = TrivialAugmentWide::new();
    let (mut warps, mut colours) = (0, 0);
    let mut spec0 = None;
    for index in 0..300 {
        let mut st = PlanState::new(40, 30);
        ta.plan(&mut st, &mut SampleRng::new(1, 0, index)).unwrap();
        let (op, spec) = st.finish();
        warps += usize::from(op.warp.is_some());
        colours += usize::from(!op.colour.is_empty());
        assert_eq!(*spec0.get_or_insert(spec), spec);
    }
    assert!(
        warps > 60 && colours > 90,
        "{warps} warps, {colours} colour ops"
    );
}

/// Every frame of a clip gets the same draws: a clip of 8 frames planned with RandomResizedCrop
/// and RandomAffine shares one FusedOp, warp included.
#[test]
fn frames_of_a_clip_share_the_warp() {
    use gm_transforms::sample::{Image, plan_sample};
    use gm_transforms::{Compose, RandomAffine, RandomResizedCrop};
    let chain = Compose::new()
        .then(RandomResizedCrop::new(32, 32))
        .then(RandomAffine::new(30.0).unwrap().scale(0.8, 1.2).unwrap());
    for index in 0..20 {
        let mut clip: Vec<Image<usize>> = (0..8).map(|k| Image::new(96, 64, k)).collect();
        let n = plan_sample(&mut clip, &chain, &mut SampleRng::new(2, 0, index)).unwrap();
        assert_eq!(n, 8);
        let first = clip[0].planned.unwrap();
        assert!(first.0.warp.is_some());
        assert!(clip.iter().all(|img| img.planned == Some(first)));
    }
}

/// The case's operations with their magnitudes from our tables, checked against the
/// magnitudes torchvision drew for that source.
fn sequence_ops(case: &Value, source: &str, (w, h): (u32, u32)) -> Vec<(AugmentOp, f64)> {
    let bins = if case["space"] == "rand" { 31 } else { 10 };
    let want = case["magnitudes"][source].as_array().unwrap();
    let ops = case["ops"].as_array().unwrap();
    ops.iter()
        .zip(want)
        .map(|(o, want)| {
            let op = AugmentOp::from_name(o["op"].as_str().unwrap()).unwrap();
            let (table, signed) = standard_magnitudes(op, bins, w, h);
            let bin = o["bin"].as_u64().unwrap() as usize;
            let mut m = table.map_or(0.0, |t| t[bin]);
            if signed && o["negative"].as_bool().unwrap() {
                m = -m;
            }
            assert_eq!(m, want.as_f64().unwrap(), "{o}");
            (op, m)
        })
        .collect()
}

/// RandAugment's and AutoAugment's operation sequences (tests/media/transforms/policies/
/// sequences, torchvision applying each operation to the previous one's output) through
/// `plan_sequence` and the CPU twin: bit for bit where the plan is exact (one warp at most,
/// nearest, colour after it or pointwise before it), and within the measured bounds of the
/// documented approximations otherwise (two warps composed, statistics or sharpness before a
/// warp, bilinear).
#[test]
fn twin_policy_sequences_match_torchvision() {
    let dir = dir().join("policies");
    let text = std::fs::read_to_string(dir.join("sequences.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let (mut exact, mut approx, mut report) = (0, 0, Vec::new());
    for (source, size) in manifest["sources"].as_object().unwrap() {
        let (w, h) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir.join(format!("../{source}.rgb"))).unwrap();
        for (k, case) in manifest["cases"].as_array().unwrap().iter().enumerate() {
            let ops = sequence_ops(case, source, (w, h));
            let interp = match case["interpolation"].as_str().unwrap() {
                "nearest" => Interp::Nearest,
                _ => Interp::Bilinear,
            };
            let fill = case["fill"]
                .as_array()
                .map(|f| [0, 1, 2].map(|c| f[c].as_f64().unwrap() as f32));
            let mut st = PlanState::new(w, h);
            plan_sequence(&mut st, "test", &ops, interp, fill).unwrap();
            let (fop, spec) = st.finish();
            let mut out = vec![0u8; spec.image_bytes()];
            fused(&HostImage::rgb8(&input, w, h), &fop, &spec, &mut out);
            let want = std::fs::read(dir.join(format!("sequences/{source}_{k}.u8"))).unwrap();
            assert_eq!(out.len(), want.len());
            let worst = out.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
            let pixels = out.len() / 3;
            let differ = (0..pixels)
                .filter(|&p| out[3 * p..3 * p + 3] != want[3 * p..3 * p + 3])
                .count();
            let share = differ as f64 / pixels as f64;
            let is_exact = case["exact"].as_bool().unwrap();
            let names: Vec<_> = ops.iter().map(|(o, m)| format!("{}({m:.3})", o.name())).collect();
            report.push(format!(
                "{source} {k} {} {} fill {:?} {}: worst {worst:?}, {:.2}% pixels differ",
                if is_exact { "exact " } else { "approx" },
                names.join(" > "),
                fill,
                case["interpolation"],
                100.0 * share
            ));
            if is_exact {
                exact += 1;
                assert_eq!(worst, Some(0), "{}", report.join("\n"));
            } else {
                approx += 1;
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert_eq!((exact, approx), (50, 26));
}
