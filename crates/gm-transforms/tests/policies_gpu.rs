//! TrivialAugmentWide's operations in the fused kernel on the GPU: one launch per source with
//! every committed case (tests/media/transforms/policies) as an image of the batch (warps,
//! point colour ops, the statistics pre-passes and sharpness together, so the warp variants
//! with sharpness and statistics run), against torchvision's output and the CPU twin, within
//! 1 u8 step.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_cuda::{DType, DeviceBuffer, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{FusedKernel, Interp, PlanState, SourceImage, TrivialAugmentWide};
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
            for (what, other) in [("torchvision", want), ("twin", &twin)] {
                let worst = have
                    .iter()
                    .zip(other.iter())
                    .map(|(a, b)| a.abs_diff(*b))
                    .max();
                assert!(worst <= Some(1), "{} vs {what}: worst {worst:?}", names[k]);
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 50);
}
