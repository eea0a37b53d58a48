//! TrivialAugmentWide in the CPU twin against torchvision (tests/media/transforms/policies:
//! torchvision's own `_apply_image_or_video_transform` for each operation, given the drawn
//! bin and sign, nearest and fill=None as its defaults), within 1 u8 step; its magnitude table
//! and its draw order.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_transforms::cpu::{HostImage, fused, fused_passes};
use gm_transforms::policies::{plan_sequence, standard_magnitudes};
use gm_transforms::{
    AugmentOp, AutoAugment, AutoAugmentPolicy, Interp, PlanState, RandAugment, SampleRng,
    Transform, TrivialAugmentWide,
};
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
/// and RandomAffine shares one plan: the resize's pass, then the warp reading its output.
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
        let first = clip[0].planned.clone().unwrap();
        assert!(first.0.warp.is_some());
        assert_eq!(first.2.pre.len(), 1, "the resize is its own pass");
        assert!(clip.iter().all(|img| img.planned.as_ref() == Some(&first)));
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
            assert_eq!(m as f32, want.as_f64().unwrap() as f32, "{o}");
            (op, m)
        })
        .collect()
}

/// RandAugment's and AutoAugment's operation sequences (tests/media/transforms/policies/
/// sequences, torchvision applying each operation to the previous one's output) through
/// `plan_sequence` and the CPU twin: bit for bit with nearest warps, within 1 step with
/// bilinear ones (as a single bilinear warp), including the sequences cut into two passes
/// (two warps, any colour operation before a warp, two sharpness operations).
#[test]
fn twin_policy_sequences_match_torchvision() {
    let dir = dir().join("policies");
    let text = std::fs::read_to_string(dir.join("sequences.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let (mut compared, mut cut, mut report) = (0, 0, Vec::new());
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
            fused_passes(
                &HostImage::rgb8(&input, w, h),
                &st.pre,
                &fop,
                &spec,
                &mut out,
            );
            let want = std::fs::read(dir.join(format!("sequences/{source}_{k}.u8"))).unwrap();
            assert_eq!(out.len(), want.len());
            let worst = out.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
            let pixels = out.len() / 3;
            let differ = (0..pixels)
                .filter(|&p| out[3 * p..3 * p + 3] != want[3 * p..3 * p + 3])
                .count();
            let share = differ as f64 / pixels as f64;
            let mean = out
                .iter()
                .zip(&want)
                .map(|(a, b)| f64::from(a.abs_diff(*b)))
                .sum::<f64>()
                / out.len() as f64;
            let names: Vec<_> = ops
                .iter()
                .map(|(o, m)| format!("{}({m:.3})", o.name()))
                .collect();
            report.push(format!(
                "{source} {k} {} {} fill {:?} {}: worst {worst:?}, {:.2}% pixels differ, mean {mean:.2}",
                if st.pre.is_empty() { "one pass " } else { "two passes" },
                names.join(" > "),
                fill,
                case["interpolation"],
                100.0 * share
            ));
            // grid_sample's bilinear blend rounds differently from ours in a few pixels (1 step,
            // as a single bilinear warp: tests/geometry.rs); nearest taps are exact.
            let bound = u8::from(interp == Interp::Bilinear);
            assert!(worst <= Some(bound), "{}", report.join("\n"));
            compared += 1;
            cut += usize::from(!st.pre.is_empty());
        }
    }
    eprintln!("{}", report.join("\n"));
    assert_eq!((compared, cut), (80, 44));
}

/// Our magnitude tables equal torchvision's `_AUGMENTATION_SPACE` tables (RandAugment's 31
/// bins, AutoAugment's 10, TrivialAugmentWide's 31) bit for bit, for both source sizes (the translations scale with it).
#[test]
fn standard_magnitudes_match_torchvision() {
    let text = std::fs::read_to_string(dir().join("policies/sequences.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for (source, size) in manifest["sources"].as_object().unwrap() {
        let (w, h) = (size[0].as_u64().unwrap(), size[1].as_u64().unwrap());
        for (space, bins) in [("rand", 31), ("auto", 10), ("wide", 31)] {
            let tables = manifest["tables"][source][space].as_object().unwrap();
            for (name, want) in tables {
                let op = AugmentOp::from_name(name).unwrap();
                let (have, _) = if space == "wide" {
                    TrivialAugmentWide::new().magnitudes(op)
                } else {
                    standard_magnitudes(op, bins, w as u32, h as u32)
                };
                // As f32 (torch's values; serde_json may miss the last f64 bit).
                let want = want.as_array().map(|t| {
                    t.iter()
                        .map(|v| v.as_f64().unwrap() as f32)
                        .collect::<Vec<_>>()
                });
                let have = have.map(|t| t.iter().map(|&v| v as f32).collect::<Vec<_>>());
                assert_eq!(have, want, "{source} {space} {name}");
                checked += 1;
            }
        }
    }
    // 14 operations in each of the three spaces, per source.
    assert_eq!(checked, 2 * 3 * 14);
}

/// RandAugment's draws replayed by hand in torchvision's order: per operation, the op
/// uniformly of 14, then the sign for the signed ones (magnitude fixed by the bin).
#[test]
fn rand_augment_draws_in_torchvisions_order() {
    let ra = RandAugment::new();
    let mut seen = [0usize; 14];
    let (mut signed, mut negative) = (0usize, 0usize);
    for index in 0..3000 {
        let mut rng = SampleRng::new(5, 1, index);
        let ops = ra.draw(64, 48, &mut rng.clone());
        assert_eq!(ops.len(), 2);
        for &(op, m) in &ops {
            let k = rng.below(14) as usize;
            assert_eq!(op, RandAugment::OPS[k]);
            seen[k] += 1;
            let (table, is_signed) = standard_magnitudes(op, 31, 64, 48);
            let want = table.as_ref().map_or(0.0, |t| t[9]);
            let flip = table.is_some() && is_signed && rng.uniform(0.0, 1.0) <= 0.5;
            assert_eq!(m, if flip { -want } else { want });
            if is_signed && want != 0.0 {
                signed += 1;
                negative += usize::from(flip);
            }
        }
        // Deterministic per (seed, epoch, index): the same draws again, others elsewhere.
        assert_eq!(ra.draw(64, 48, &mut SampleRng::new(5, 1, index)), ops);
    }
    // 6000 draws over 14 operations (429 each), binomial sd ~20: within 5 sd.
    assert!(seen.iter().all(|&n| (329..530).contains(&n)), "{seen:?}");
    let share = negative as f64 / signed as f64;
    assert!(
        (share - 0.5).abs() < 0.03,
        "{negative} of {signed} negative"
    );
    let differ = (0..200)
        .filter(|&i| {
            let a = ra.draw(64, 48, &mut SampleRng::new(5, 1, i));
            a != ra.draw(64, 48, &mut SampleRng::new(5, 2, i))
        })
        .count();
    assert!(differ > 150, "epochs draw alike: {differ} of 200 differ");
}

/// AutoAugment's draws replayed by hand: the sub-policy uniformly of 25, then per step
/// `rand() <= p` and, when applied and signed with a magnitude, the sign; each step applies
/// with its probability.
#[test]
fn auto_augment_draws_in_torchvisions_order() {
    let aa = AutoAugment::new();
    let policies = AutoAugmentPolicy::ImageNet.sub_policies();
    let mut picked = [0usize; 25];
    let mut applied = [[0usize; 2]; 25];
    for index in 0..5000 {
        let mut rng = SampleRng::new(9, 0, index);
        let (k, ops) = aa.draw(64, 48, &mut rng.clone());
        assert_eq!(k, rng.below(25) as usize);
        picked[k] += 1;
        let mut want = Vec::new();
        for (s, &(op, p, bin)) in policies[k].iter().enumerate() {
            if rng.uniform(0.0, 1.0) > p {
                continue;
            }
            applied[k][s] += 1;
            let (table, signed) = standard_magnitudes(op, 10, 64, 48);
            let m = match (table, bin) {
                (Some(t), Some(b)) => {
                    if signed && rng.uniform(0.0, 1.0) <= 0.5 {
                        -t[b]
                    } else {
                        t[b]
                    }
                }
                _ => 0.0,
            };
            want.push((op, m));
        }
        assert_eq!(ops, want);
    }
    // 5000 samples over 25 sub-policies (200 each, sd ~14).
    assert!(
        picked.iter().all(|&n| (130..270).contains(&n)),
        "{picked:?}"
    );
    for k in 0..25 {
        for s in 0..2 {
            let p = policies[k][s].1;
            let rate = applied[k][s] as f64 / picked[k] as f64;
            // Binomial sd at most 0.5 / sqrt(130) = 0.044: within 4 sd.
            assert!(
                (rate - p).abs() < 0.18,
                "sub-policy {k} step {s}: {rate} vs {p}"
            );
        }
    }
}

/// torchvision's argument checks, as typed errors.
#[test]
fn policy_arguments_are_checked() {
    assert!(RandAugment::with(2, 9, 31, Interp::Nearest, None).is_ok());
    assert!(RandAugment::with(2, 31, 31, Interp::Nearest, None).is_err());
    assert!(RandAugment::with(2, 0, 1, Interp::Nearest, None).is_err());
    assert!(RandAugment::with(9, 9, 31, Interp::Nearest, None).is_err());
    assert!(RandAugment::with(2, 9, 31, Interp::Bicubic, None).is_err());
    assert!(RandAugment::with(2, 9, 31, Interp::Bilinear, Some([0.0, 0.0, 300.0])).is_err());
    assert!(AutoAugment::with(AutoAugmentPolicy::Svhn, Interp::Bilinear, Some([1.0; 3])).is_ok());
    let e = AutoAugment::with(AutoAugmentPolicy::ImageNet, Interp::Bicubic, None).unwrap_err();
    assert!(
        e.to_string().starts_with("AutoAugment: interpolation"),
        "{e}"
    );
}

/// Every sample of both policies plans (two warps, colour before a warp, two sharpness
/// operations included: those are cut into passes), on images of odd sizes, with one output
/// size, every pass at the image's size.
#[test]
fn policies_plan_every_draw() {
    let (mut cut, mut warped) = (0, 0);
    for policy in [
        AutoAugmentPolicy::ImageNet,
        AutoAugmentPolicy::Cifar10,
        AutoAugmentPolicy::Svhn,
    ] {
        let steps: [Box<dyn Transform>; 2] = [
            Box::new(RandAugment::new()),
            Box::new(AutoAugment::with(policy, Interp::Bilinear, Some([9.0; 3])).unwrap()),
        ];
        for step in &steps {
            for index in 0..600 {
                let mut st = PlanState::new(37, 53);
                step.plan(&mut st, &mut SampleRng::new(3, 0, index))
                    .unwrap();
                let (op, spec) = st.finish();
                assert_eq!((spec.width, spec.height), (37, 53));
                assert!(
                    st.pre
                        .iter()
                        .all(|p| (p.spec.width, p.spec.height) == (37, 53))
                );
                cut += usize::from(!st.pre.is_empty());
                let mut ops = st.pre.iter().map(|p| &p.op).chain([&op]);
                warped += usize::from(ops.any(|o| o.warp.is_some()));
            }
        }
    }
    assert!(cut > 150 && warped > 300, "{cut} cut, {warped} warped");
}

/// A clip's frames share the policy's draws: RandAugment and AutoAugment planned for an
/// 8-frame clip give every frame the same plan, and samples differ.
#[test]
fn frames_of_a_clip_share_the_policy_draws() {
    use gm_transforms::sample::{Image, plan_sample};
    let mut plans = Vec::new();
    for chain in [
        gm_transforms::Compose::new().then(RandAugment::new()),
        gm_transforms::Compose::new().then(AutoAugment::new()),
    ] {
        for index in 0..20 {
            let mut clip: Vec<Image<usize>> = (0..8).map(|k| Image::new(96, 64, k)).collect();
            plan_sample(&mut clip, &chain, &mut SampleRng::new(2, 0, index)).unwrap();
            let first = clip[0].planned.clone().unwrap();
            assert!(clip.iter().all(|img| img.planned.as_ref() == Some(&first)));
            plans.push(first);
        }
    }
    let distinct = (1..plans.len())
        .filter(|&i| plans[i] != plans[i - 1])
        .count();
    assert!(distinct > 30, "{distinct} of 39 neighbours differ");
}
