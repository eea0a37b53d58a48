//! The fused kernel's warp variants (gm_*_warp_*) on the GPU: against the committed
//! torchvision references (tests/media/transforms/geometry, within 1 u8 step) and against the
//! CPU twin (equal values) on random batches of odd sizes that mix warped images (RandomAffine,
//! RandomRotation, RandomPerspective after a random crop and flips, some followed by a crop or
//! a flip) with unwarped ones (the plain path inside a warp launch), with and without colour
//! operations (point ops, statistics pre-passes, sharpness re-sampling through the grid), in
//! u8 HWC and normalized f32 CHW, nearest and bilinear.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod geometry_fixtures;
mod passes_fixtures;

use geometry_fixtures::{cases, difference};
use gm_cuda::{DType, DeviceBuffer, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::cpu::{HostImage, fused, fused_passes};
use gm_transforms::{
    CenterCrop, ColorJitter, Compose, Filter, FusedKernel, FusedOp, HorizontalFlip, Interp, Layout,
    Normalize, OutputSpec, Passes, PlanState, PrePass, RandomAdjustSharpness, RandomAffine,
    RandomEqualize, RandomPerspective, RandomResizedCrop, RandomRotation, SampleRng, SourceImage,
    ToDtype, VerticalFlip,
};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

/// The output filters, for the images of a warp batch without a warp.
const FILTERS: [Interp; 4] = [
    Interp::Nearest,
    Interp::Bilinear,
    Interp::Bicubic,
    Interp::Antialias,
];

#[test]
fn gpu_warps_match_torchvision() {
    let device = gpu_test_device!("gpu_warps_match_torchvision");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("geometry refs"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let mut compared = 0;
    for case in cases() {
        let (w, h) = (case.width, case.height);
        let mut st = PlanState::new(w, h);
        case.step
            .plan(&mut st, &mut SampleRng::new(0, 0, 0))
            .unwrap();
        let (op, spec) = st.finish();
        let mut d = DeviceBuffer::alloc(&device, case.input.len()).unwrap();
        stream.upload(&case.input, &mut d, 0).unwrap();
        // The warped image beside an unwarped copy: one launch, both paths.
        let images = [SourceImage::rgb8(d.device_ptr(), w, h); 2];
        let ops = [op, FusedOp::full(w, h)];
        let out =
            Tensor::empty(&pool, &stream, &[2, h as usize, w as usize, 3], DType::U8).unwrap();
        kernel.run(&stream, &images, &ops, &spec, &out, 0).unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let n = spec.image_bytes();
        let (worst, differ) = difference(&got[..n], &case.expected);
        assert!(
            worst <= 1,
            "{}: max difference {worst} ({differ} values)",
            case.name
        );
        let mut twin = vec![0u8; n];
        fused(&HostImage::rgb8(&case.input, w, h), &op, &spec, &mut twin);
        let (worst, differ) = difference(&got[..n], &twin);
        assert!(
            worst <= 1,
            "{} vs twin: {worst} ({differ} values)",
            case.name
        );
        assert_eq!(
            &got[n..],
            &case.input[..],
            "{}: the unwarped image is copied",
            case.name
        );
        compared += 1;
    }
    assert_eq!(compared, 42);
}

/// Runs `chain` on a `w` x `h` image with `run_passes` (u8 HWC output); the output's size
/// and bytes, and the twin's bytes.
fn gpu_and_twin(
    device: &gm_cuda::Device,
    chain: &Compose,
    input: &[u8],
    (w, h): (u32, u32),
) -> (u32, u32, Vec<u8>, Vec<u8>) {
    let stream = Stream::new(device).unwrap();
    let pool = DevicePool::new(device, PoolConfig::unbounded("passes"));
    let mut kernel = FusedKernel::new(device).unwrap();
    let (op, spec, passes) = chain.plan_post(w, h, &mut SampleRng::new(0, 0, 0)).unwrap();
    let mut d = DeviceBuffer::alloc(device, input.len()).unwrap();
    stream.upload(input, &mut d, 0).unwrap();
    let shape = [1, spec.height as usize, spec.width as usize, 3];
    let out = Tensor::empty(&pool, &stream, &shape, DType::U8).unwrap();
    let src = [SourceImage::rgb8(d.device_ptr(), w, h)];
    kernel
        .run_passes(&stream, &src, &[&passes.pre], &[op], &spec, &out, 0)
        .unwrap();
    let got = out.to_host_bytes(&stream).unwrap();
    let mut want = vec![0u8; spec.image_bytes()];
    fused_passes(
        &HostImage::rgb8(input, w, h),
        &passes.pre,
        &op,
        &spec,
        &mut want,
    );
    (spec.width, spec.height, got, want)
}

/// The torchvision chains of several resamplings (tests/media/transforms/passes) through
/// `run_passes`: equal to the twin's passes, and, run on torchvision's output of their first
/// resampling, to torchvision's result (within a step where they resample bilinear).
#[test]
fn gpu_chains_of_several_passes_match_the_twin_and_torchvision() {
    let device = gpu_test_device!("gpu_chains_of_several_passes_match_the_twin_and_torchvision");
    let mut compared = 0;
    for c in passes_fixtures::chains() {
        let (.., got, twin) = gpu_and_twin(&device, &c.chain, &c.input, (c.width, c.height));
        let (worst, differ) = difference(&got, &twin);
        assert_eq!(worst, 0, "{}: {differ} values differ from the twin", c.name);
        let (input, size) = match &c.head {
            Some((_, (w, h, px))) => (px.clone(), (*w, *h)),
            None => (c.input.clone(), (c.width, c.height)),
        };
        let (w, h, got, twin) = gpu_and_twin(&device, &c.tail, &input, size);
        let (ew, eh, want) = &c.expected;
        assert_eq!((w, h), (*ew, *eh), "{}", c.name);
        assert_eq!(got, twin, "{}: the tail differs from the twin", c.name);
        let (worst, differ) = difference(&got, want);
        assert!(
            worst <= u8::from(c.tail_bilinear),
            "{}: tail vs torchvision {worst} ({differ} values)",
            c.name
        );
        compared += 1;
    }
    assert_eq!(compared, 22);
}

/// A random chain around one warp step (or none), ending at a fixed output size: the
/// output's filter is `filter` (for the images without a warp), the warp's own `interp`.
fn random_chain(
    rng: &mut StdRng,
    ow: u32,
    oh: u32,
    (filter, interp): (Interp, Interp),
    float: bool,
) -> Compose {
    let mut chain = Compose::new().then(Filter(filter));
    if rng.random_bool(0.5) {
        chain.push(RandomResizedCrop::new(ow + 6, oh + 4));
    } else {
        chain.push(CenterCrop(ow + 6, oh + 4));
    }
    chain.push(HorizontalFlip(0.5));
    // The crop to the output size before the warp (which then ends the last pass) or after it.
    let crop_first = rng.random_bool(0.5);
    if crop_first {
        chain.push(CenterCrop(ow, oh));
    }
    let fill = [0, 1, 2].map(|_| f32::from(rng.random_range(0u8..=255)));
    match rng.random_range(0..4) {
        0 => chain.push(
            RandomAffine::new(rng.random_range(0.0..60.0))
                .unwrap()
                .translate(0.2, 0.1)
                .unwrap()
                .scale(0.7, 1.3)
                .unwrap()
                .shear(&[-10.0, 10.0, -5.0, 5.0])
                .unwrap()
                .interpolation(interp)
                .unwrap()
                .fill(fill)
                .unwrap(),
        ),
        1 => chain.push(
            RandomRotation::new(rng.random_range(0.0..180.0))
                .unwrap()
                .interpolation(interp)
                .unwrap()
                .fill(fill)
                .unwrap(),
        ),
        2 => chain.push(
            RandomPerspective::new(rng.random_range(0.0..0.8), 0.8)
                .unwrap()
                .interpolation(interp)
                .unwrap()
                .fill(fill)
                .unwrap(),
        ),
        _ => {}
    }
    // A crop after the warp cuts the chain (it crops the warped uint8 image); a flip after
    // the warp folds into its grid.
    if !crop_first {
        chain.push(CenterCrop(ow, oh));
    }
    chain.push(VerticalFlip(0.3));
    match rng.random_range(0..4) {
        0 => chain.push(ColorJitter::new(0.5, 0.5, 0.5, 0.2).unwrap()),
        1 => chain.push(RandomEqualize(0.7)),
        2 => chain.push(RandomAdjustSharpness {
            sharpness_factor: rng.random_range(0.0..3.0),
            p: 0.7,
        }),
        _ => {}
    }
    if float {
        chain.push(Normalize::IMAGENET);
        chain.push(ToDtype(DType::F32, Layout::Chw));
    }
    chain
}

/// Largest difference in units of the allowed error: 1 u8 step, or 1e-3 relative for f32.
fn worst(dtype: DType, gpu: &[u8], cpu: &[u8]) -> f64 {
    match dtype {
        DType::U8 => f64::from(difference(gpu, cpu).0),
        _ => gpu
            .chunks(4)
            .zip(cpu.chunks(4))
            .map(|(a, b)| {
                let a = f32::from_le_bytes(a.try_into().unwrap());
                let b = f32::from_le_bytes(b.try_into().unwrap());
                f64::from((a - b).abs()) / (1e-3 * f64::from(b.abs().max(1.0)))
            })
            .fold(0.0, f64::max),
    }
}

/// Every chain random_chain builds plans for every image (no GPU needed: runs in CI).
#[test]
fn random_warp_chains_always_plan() {
    for seed in 0..300u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (ow, oh) = (rng.random_range(2..=67), rng.random_range(2..=45));
        let interp = if rng.random_bool(0.5) {
            Interp::Nearest
        } else {
            Interp::Bilinear
        };
        let filter = FILTERS[rng.random_range(0..4)];
        let float = rng.random_bool(0.5);
        let chain = random_chain(&mut rng, ow, oh, (filter, interp), float);
        for k in 0..16 {
            let (w, h) = (
                ow + 6 + rng.random_range(0..40),
                oh + 4 + rng.random_range(0..30),
            );
            if let Err(e) = chain.plan_post(w, h, &mut SampleRng::new(seed, 0, k)) {
                panic!("seed {seed}, image {k}: {e:?}");
            }
        }
    }
}

#[test]
fn gpu_warps_match_their_cpu_twin_on_random_batches() {
    let device = gpu_test_device!("gpu_warps_match_their_cpu_twin_on_random_batches");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("geometry test"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let (mut warped, mut plain, mut cut) = (0, 0, 0);
    for round in 0..40u64 {
        let (ow, oh) = (rng.random_range(2..=67), rng.random_range(2..=45));
        let float = rng.random_bool(0.5);
        let filter = FILTERS[rng.random_range(0..4)];
        let batch = rng.random_range(1..=6);
        let mut sources = Vec::new();
        let mut plans: Vec<(FusedOp, OutputSpec, Passes)> = Vec::new();
        for k in 0..batch {
            // Each image its own chain kind (warped or not) and warp interpolation, one output
            // filter and format per batch.
            let interp = if rng.random_bool(0.5) {
                Interp::Nearest
            } else {
                Interp::Bilinear
            };
            let chain = random_chain(&mut rng, ow, oh, (filter, interp), float);
            let (w, h) = (
                ow + 6 + rng.random_range(0..40),
                oh + 4 + rng.random_range(0..30),
            );
            let mut px = vec![0u8; (w * h * 3) as usize];
            rng.fill_bytes(&mut px);
            plans.push(
                chain
                    .plan_post(w, h, &mut SampleRng::new(seed, round, k))
                    .unwrap(),
            );
            sources.push((w, h, px));
        }
        let spec = plans[0].1;
        assert!(
            plans.iter().all(|p| p.1 == spec),
            "a random warp leaves the output alone"
        );
        let bufs: Vec<DeviceBuffer> = sources
            .iter()
            .map(|(_, _, px)| {
                let mut d = DeviceBuffer::alloc(&device, px.len()).unwrap();
                stream.upload(px, &mut d, 0).unwrap();
                d
            })
            .collect();
        let images: Vec<SourceImage> = sources
            .iter()
            .zip(&bufs)
            .map(|((w, h, _), d)| SourceImage::rgb8(d.device_ptr(), *w, *h))
            .collect();
        let ops: Vec<FusedOp> = plans.iter().map(|p| p.0).collect();
        let pre: Vec<&[PrePass]> = plans.iter().map(|p| p.2.pre.as_slice()).collect();
        // Warped: a warp in any pass; plain: one pass, no warp.
        let is_plain = |k: usize| pre[k].is_empty() && ops[k].warp.is_none();
        plain += (0..ops.len()).filter(|&k| is_plain(k)).count();
        warped += (0..ops.len()).filter(|&k| !is_plain(k)).count();
        cut += pre.iter().filter(|p| !p.is_empty()).count();
        let shape = match spec.layout {
            Layout::Chw => [batch as usize, 3, oh as usize, ow as usize],
            Layout::Hwc => [batch as usize, oh as usize, ow as usize, 3],
        };
        let out = Tensor::empty(&pool, &stream, &shape, spec.dtype).unwrap();
        kernel
            .run_passes(&stream, &images, &pre, &ops, &spec, &out, 0)
            .unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let slot = spec.image_bytes();
        // Images without a warp take the plain kernels' path inside the warp kernels: run alone
        // (a batch with no warp, so the plain kernels), they must give the same bytes. The plain
        // kernels' own distance to the twin (none: fused_gpu checks equality) is fused_gpu's
        // and colour_gpu's to check, not this test's.
        let unwarped: Vec<usize> = (0..ops.len()).filter(|&k| is_plain(k)).collect();
        let alone = (!unwarped.is_empty()).then(|| {
            let shape: Vec<usize> = [unwarped.len()]
                .into_iter()
                .chain(shape[1..].iter().copied())
                .collect();
            let out = Tensor::empty(&pool, &stream, &shape, spec.dtype).unwrap();
            let imgs: Vec<SourceImage> = unwarped.iter().map(|&k| images[k]).collect();
            let plain_ops: Vec<FusedOp> = unwarped.iter().map(|&k| ops[k]).collect();
            kernel
                .run(&stream, &imgs, &plain_ops, &spec, &out, 0)
                .unwrap();
            out.to_host_bytes(&stream).unwrap()
        });
        for (k, (w, h, px)) in sources.iter().enumerate() {
            if let Some(j) = unwarped.iter().position(|&u| u == k) {
                let alone = alone.as_ref().unwrap();
                assert!(
                    got[k * slot..(k + 1) * slot] == alone[j * slot..(j + 1) * slot],
                    "round {round} image {k}: an unwarped image differs from the plain kernels'"
                );
                continue;
            }
            let mut want = vec![0u8; slot];
            fused_passes(
                &HostImage::rgb8(px, *w, *h),
                pre[k],
                &ops[k],
                &spec,
                &mut want,
            );
            // The twin's values exactly: the grid is torchvision's explicitly rounded
            // arithmetic in both, and fused.cu contracts nothing else.
            let d = worst(spec.dtype, &got[k * slot..(k + 1) * slot], &want);
            assert!(
                d == 0.0,
                "round {round} image {k} ({w}x{h} -> {ow}x{oh} {:?} {:?}): {:?} {:?}: difference {d}",
                spec.dtype,
                spec.interp,
                ops[k].warp,
                ops[k].colour
            );
        }
    }
    eprintln!("{warped} warped ({cut} in several passes), {plain} plain images");
    assert!(
        warped >= 40 && plain >= 10 && cut >= 20,
        "{warped} warped ({cut} in several passes), {plain} plain images"
    );
}
