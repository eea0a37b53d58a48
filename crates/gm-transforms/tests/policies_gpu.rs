//! TrivialAugmentWide's operations in the fused kernel on the GPU: one launch per source with
//! every committed case (tests/media/transforms/policies) as an image of the batch (warps,
//! point colour ops, the statistics pre-passes and sharpness together, so the warp variants
//! with sharpness and statistics run), against torchvision's output within 1 u8 step and the
//! CPU twin exactly. RandAugment and AutoAugment (two operations in sequence, cut into two
//! passes where torchvision's second operation reads the first's uint8 output: two warps, a
//! colour operation before a warp) on random batches of both sources, against the CPU twin,
//! exactly, and torchvision's sequences.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_cuda::{DType, DeviceBuffer, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::cpu::{HostImage, fused, fused_passes};
use gm_transforms::policies::plan_sequence;
use gm_transforms::{
    AugmentOp, AutoAugment, AutoAugmentPolicy, FusedKernel, FusedOp, Interp, OutputSpec, PlanState,
    PrePass, RandAugment, SampleRng, SourceImage, Transform, TrivialAugmentWide,
};
use serde_json::Value;

fn dir() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("transforms")
}

#[test]
fn gpu_trivial_augment_ops_match_torchvision() {
    let device = gpu_test_device!("gpu_trivial_augment_ops_match_torchvision");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("policy refs"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let text = std::fs::read_to_string(dir().join("policies/cases.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let mut compared = 0;
    for (source, size) in manifest["sources"].as_object().unwrap() {
        let (w, h) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).unwrap();
        let (mut ops, mut wants, mut names) = (Vec::new(), Vec::new(), Vec::new());
        let mut spec = None;
        for case in manifest["cases"].as_array().unwrap() {
            let name = case["op"].as_str().unwrap();
            let op = *TrivialAugmentWide::OPS
                .iter()
                .find(|o| o.name() == name)
                .unwrap();
            let (bin, negative) = (
                case["bin"].as_u64().unwrap(),
                case["negative"].as_bool().unwrap(),
            );
            let mut st = PlanState::new(w, h);
            op.plan(
                &mut st,
                case["magnitude"].as_f64().unwrap(),
                Interp::Nearest,
                None,
            )
            .unwrap();
            let (fop, s) = st.finish();
            assert_eq!(*spec.get_or_insert(s), s, "one output for every draw");
            ops.push(fop);
            let sign = if negative { "neg" } else { "pos" };
            let file = format!("{source}_{name}_{bin}_{sign}");
            wants.push(std::fs::read(dir().join(format!("policies/{file}.u8"))).unwrap());
            names.push(file);
        }
        let spec = spec.unwrap();
        let mut d = DeviceBuffer::alloc(&device, input.len()).unwrap();
        stream.upload(&input, &mut d, 0).unwrap();
        let images = vec![SourceImage::rgb8(d.device_ptr(), w, h); ops.len()];
        let shape = [ops.len(), h as usize, w as usize, 3];
        let out = Tensor::empty(&pool, &stream, &shape, DType::U8).unwrap();
        kernel.run(&stream, &images, &ops, &spec, &out, 0).unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let n = spec.image_bytes();
        for (k, want) in wants.iter().enumerate() {
            let have = &got[k * n..(k + 1) * n];
            let mut twin = vec![0u8; n];
            fused(&HostImage::rgb8(&input, w, h), &ops[k], &spec, &mut twin);
            // Within a step of torchvision; the twin's bytes exactly (fused.cu rounds as the
            // twin does).
            for (what, other, allowed) in [("torchvision", want, 1), ("twin", &twin, 0)] {
                let worst = have
                    .iter()
                    .zip(other.iter())
                    .map(|(a, b)| a.abs_diff(*b))
                    .max();
                assert!(
                    worst <= Some(allowed),
                    "{} vs {what}: worst {worst:?}",
                    names[k]
                );
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 50);
}

/// A planned image: its pre-passes and its last pass.
type Plan = (Vec<PrePass>, FusedOp);

/// Runs `plans` (one output spec) on as many copies of `input` with `run_passes`; returns
/// the batch's bytes.
fn run_batch(
    device: &gm_cuda::Device,
    input: &[u8],
    (w, h): (u32, u32),
    plans: &[Plan],
    spec: &OutputSpec,
) -> Vec<u8> {
    let device = device.clone();
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("policy batches"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let mut d = DeviceBuffer::alloc(&device, input.len()).unwrap();
    stream.upload(input, &mut d, 0).unwrap();
    let images = vec![SourceImage::rgb8(d.device_ptr(), w, h); plans.len()];
    let shape = [plans.len(), spec.height as usize, spec.width as usize, 3];
    let out = Tensor::empty(&pool, &stream, &shape, DType::U8).unwrap();
    let pre: Vec<&[PrePass]> = plans.iter().map(|p| p.0.as_slice()).collect();
    let ops: Vec<FusedOp> = plans.iter().map(|p| p.1).collect();
    kernel
        .run_passes(&stream, &images, &pre, &ops, spec, &out, 0)
        .unwrap();
    out.to_host_bytes(&stream).unwrap()
}

/// The twin of one planned image.
fn twin(input: &[u8], (w, h): (u32, u32), plan: &Plan, spec: &OutputSpec) -> Vec<u8> {
    let mut out = vec![0u8; spec.image_bytes()];
    fused_passes(
        &HostImage::rgb8(input, w, h),
        &plan.0,
        &plan.1,
        spec,
        &mut out,
    );
    out
}

/// RandAugment (defaults, and bilinear with a fill) and AutoAugment (ImageNet, and SVHN
/// bilinear with a fill) planned for 64 samples of each source, one `run_passes` per policy
/// and source: the kernel equals the CPU twin.
#[test]
fn gpu_rand_and_auto_augment_match_the_twin() {
    let device = gpu_test_device!("gpu_rand_and_auto_augment_match_the_twin");
    let text = std::fs::read_to_string(dir().join("policies/cases.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let policies: Vec<(&str, Box<dyn Transform>)> = vec![
        ("RandAugment", Box::new(RandAugment::new())),
        (
            "RandAugment bilinear",
            Box::new(
                RandAugment::with(2, 15, 31, Interp::Bilinear, Some([40.0, 90.0, 200.0])).unwrap(),
            ),
        ),
        ("AutoAugment", Box::new(AutoAugment::new())),
        (
            "AutoAugment SVHN",
            Box::new(
                AutoAugment::with(AutoAugmentPolicy::Svhn, Interp::Bilinear, Some([7.0; 3]))
                    .unwrap(),
            ),
        ),
    ];
    let (mut compared, mut cut) = (0, 0);
    for (source, size) in manifest["sources"].as_object().unwrap() {
        let (w, h) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).unwrap();
        for (name, policy) in &policies {
            let mut plans = Vec::new();
            let mut spec = None;
            for index in 0..64 {
                let mut st = PlanState::new(w, h);
                policy
                    .plan(&mut st, &mut SampleRng::new(11, 0, index))
                    .unwrap();
                let (op, s) = st.finish();
                assert_eq!(*spec.get_or_insert(s), s);
                cut += usize::from(!st.pre.is_empty());
                plans.push((st.pre, op));
            }
            let spec = spec.unwrap();
            let got = run_batch(&device, &input, (w, h), &plans, &spec);
            let n = spec.image_bytes();
            for (k, plan) in plans.iter().enumerate() {
                let twin = twin(&input, (w, h), plan, &spec);
                let have = &got[k * n..(k + 1) * n];
                let worst = have.iter().zip(&twin).map(|(a, b)| a.abs_diff(*b)).max();
                assert!(
                    worst <= Some(0),
                    "{source} {name} sample {k} ({plan:?}): worst {worst:?}"
                );
                compared += 1;
            }
        }
    }
    eprintln!("{compared} samples, {cut} in two passes or more");
    assert_eq!(compared, 2 * 4 * 64);
    assert!(cut >= 50, "{cut} samples in two passes or more");
}

/// The torchvision sequences (tests/media/transforms/policies/sequences) in one `run_passes`
/// per source: the kernel equals the twin, and torchvision's output (within 1 step with
/// bilinear warps, as a single bilinear warp).
#[test]
fn gpu_policy_sequences_match_torchvision() {
    let device = gpu_test_device!("gpu_policy_sequences_match_torchvision");
    let text = std::fs::read_to_string(dir().join("policies/sequences.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let mut compared = 0;
    for (source, size) in manifest["sources"].as_object().unwrap() {
        let (w, h) = (
            size[0].as_u64().unwrap() as u32,
            size[1].as_u64().unwrap() as u32,
        );
        let input = std::fs::read(dir().join(format!("{source}.rgb"))).unwrap();
        let cases = manifest["cases"].as_array().unwrap();
        let (mut plans, mut spec, mut interps) = (Vec::new(), None, Vec::new());
        for case in cases {
            let steps: Vec<(AugmentOp, f64)> = case["ops"]
                .as_array()
                .unwrap()
                .iter()
                .zip(case["magnitudes"][source].as_array().unwrap())
                .map(|(o, m)| {
                    let op = AugmentOp::from_name(o["op"].as_str().unwrap()).unwrap();
                    (op, f64::from(m.as_f64().unwrap() as f32))
                })
                .collect();
            let interp = if case["interpolation"] == "nearest" {
                Interp::Nearest
            } else {
                Interp::Bilinear
            };
            let fill = case["fill"]
                .as_array()
                .map(|f| [0, 1, 2].map(|c| f[c].as_f64().unwrap() as f32));
            let mut st = PlanState::new(w, h);
            plan_sequence(&mut st, "test", &steps, interp, fill).unwrap();
            let (op, s) = st.finish();
            assert_eq!(*spec.get_or_insert(s), s);
            plans.push((st.pre, op));
            interps.push(interp);
        }
        let spec = spec.unwrap();
        let got = run_batch(&device, &input, (w, h), &plans, &spec);
        let n = spec.image_bytes();
        for k in 0..cases.len() {
            let have = &got[k * n..(k + 1) * n];
            let twin = twin(&input, (w, h), &plans[k], &spec);
            let want =
                std::fs::read(dir().join(format!("policies/sequences/{source}_{k}.u8"))).unwrap();
            let bilinear = u8::from(interps[k] == Interp::Bilinear);
            for (what, other, allowed) in [("twin", &twin, 0), ("torchvision", &want, bilinear)] {
                let worst = have
                    .iter()
                    .zip(other.iter())
                    .map(|(a, b)| a.abs_diff(*b))
                    .max();
                assert!(
                    worst <= Some(allowed),
                    "{source} case {k} vs {what}: worst {worst:?}"
                );
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * 40);
}
