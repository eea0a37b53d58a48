//! The fused kernel's colour operations on the GPU: against the committed torchvision
//! references (tests/media/transforms: within 1 u8 step of torchvision, equal to the twin) and
//! against the CPU twin on random batches of odd sizes whose images each draw their own
//! ColorJitter order, factors and `Random*` steps (a random subset of them per chain, within a
//! plan's 8 operations; up to four statistics pre-passes per launch: contrast, autocontrast,
//! equalize with its lookup-table kernel, contrast; and a sharpness that re-samples its
//! neighbours, before a contrast half the time), in u8 HWC and normalized f32 CHW. Half the
//! chains have exact geometry (integral crops, flips, no resampling), the other half a
//! RandomResizedCrop with fractional bilinear, bicubic or antialiased taps first: the kernel's
//! resampling rounds as the twin's (fused.cu has no FMA contraction), so the colour ops see
//! the same pixels and every value must equal the twin's either way (first measured on an
//! H100, 2026-11-24: 0 of 2.5 million values differed over 8 seeds; the bar was one step).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod colour_fixtures;

use colour_fixtures::{cases, difference};
use gm_cuda::{DType, DeviceBuffer, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::colour::MAX_COLOUR_OPS;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{
    CenterCrop, ColorJitter, ColourOp, ColourOps, Compose, Filter, FusedKernel, FusedOp,
    HorizontalFlip, Interp, Layout, Normalize, OutputSpec, PlanState, RandomAdjustSharpness,
    RandomAutocontrast, RandomEqualize, RandomGrayscale, RandomInvert, RandomPosterize,
    RandomResizedCrop, RandomSolarize, SampleRng, SourceImage, ToDtype, VerticalFlip,
};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

#[test]
fn gpu_colour_ops_match_torchvision() {
    let device = gpu_test_device!("gpu_colour_ops_match_torchvision");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("colour refs"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let all = cases();
    let mut compared = 0;
    // One launch per source: its cases are the images of one batch, each with its own ops.
    for chunk in all.chunk_by(|a, b| a.source == b.source) {
        let (w, h) = (chunk[0].width, chunk[0].height);
        let mut d = DeviceBuffer::alloc(&device, chunk[0].input.len()).unwrap();
        stream.upload(&chunk[0].input, &mut d, 0).unwrap();
        let images = vec![SourceImage::rgb8(d.device_ptr(), w, h); chunk.len()];
        let ops: Vec<FusedOp> = chunk
            .iter()
            .map(|c| FusedOp {
                colour: c.ops,
                ..FusedOp::full(w, h)
            })
            .collect();
        let (_, spec) = PlanState::new(w, h).finish();
        let shape = [chunk.len(), h as usize, w as usize, 3];
        let out = Tensor::empty(&pool, &stream, &shape, DType::U8).unwrap();
        kernel.run(&stream, &images, &ops, &spec, &out, 0).unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        for (k, case) in chunk.iter().enumerate() {
            assert_eq!(case.input, chunk[0].input, "a chunk is one source");
            let have = &got[k * spec.image_bytes()..(k + 1) * spec.image_bytes()];
            let (worst, differ) = difference(have, &case.expected);
            assert!(
                worst <= 1,
                "{}: max difference {worst} ({differ} values)",
                case.name
            );
            let mut twin = vec![0u8; spec.image_bytes()];
            fused(
                &HostImage::rgb8(&case.input, w, h),
                &ops[k],
                &spec,
                &mut twin,
            );
            let (worst, differ) = difference(have, &twin);
            assert!(
                differ == 0,
                "{} vs twin: {worst} ({differ} values)",
                case.name
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 63);
    // The kernel re-samples a sharpness's neighbours once; a second one is refused, not run.
    let (w, h) = (all[0].width, all[0].height);
    let d = DeviceBuffer::alloc(&device, all[0].input.len()).unwrap();
    let twice = FusedOp {
        colour: ColourOps::from_ops(&[ColourOp::Sharpness(2.0), ColourOp::Sharpness(0.5)]).unwrap(),
        ..FusedOp::full(w, h)
    };
    let (_, spec) = PlanState::new(w, h).finish();
    let out = Tensor::empty(&pool, &stream, &[1, h as usize, w as usize, 3], DType::U8).unwrap();
    let src = SourceImage::rgb8(d.device_ptr(), w, h);
    assert!(
        kernel
            .run(&stream, &[src], &[twice], &spec, &out, 0)
            .is_err()
    );
}

/// A chain of geometry (an exact centre crop, or a RandomResizedCrop with a random fractional
/// filter) and random colour steps, with a second ColorJitter half the time
/// (two contrast pre-passes), ending in normalized f32 CHW or u8 HWC; and whether it resamples. At most
/// `MAX_COLOUR_OPS` (8) colour operations whatever is drawn: the first ColorJitter (up to 4),
/// the second (brightness and contrast, up to 2) and as many of the single-op `Random*` steps,
/// picked at random and kept in their order, as the rest of the budget holds.
fn random_chain(rng: &mut StdRng, w: u32, h: u32, float: bool) -> (Compose, bool) {
    let second_jitter = rng.random_bool(0.5);
    let budget = MAX_COLOUR_OPS - 4 - if second_jitter { 2 } else { 0 };
    // Each single-op step, drawn whether or not it is picked (one draw order per chain).
    let threshold = rng.random_range(0.0..=255.0);
    let bits = rng.random_range(0..=8);
    let sharpness_factor = rng.random_range(0.0..3.0);
    let mut picked = [false; 7];
    let mut order: Vec<usize> = (0..7).collect();
    for k in (1..order.len()).rev() {
        order.swap(k, rng.random_range(0..=k));
    }
    for &k in order.iter().take(budget) {
        picked[k] = true;
    }
    let filters = [Interp::Bilinear, Interp::Bicubic, Interp::Antialias];
    let resample = rng
        .random_bool(0.5)
        .then(|| filters[rng.random_range(0..filters.len())]);
    let mut chain = match resample {
        Some(f) => Compose::new()
            .then(Filter(f))
            .then(RandomResizedCrop::new(w, h)),
        None => Compose::new().then(CenterCrop(w, h)),
    };
    chain = chain
        .then(HorizontalFlip(0.5))
        .then(ColorJitter::new(0.8, 0.9, 0.9, 0.5).unwrap());
    if picked[0] {
        chain.push(RandomGrayscale(0.2));
    }
    if picked[1] {
        chain.push(RandomSolarize { threshold, p: 0.3 });
    }
    if picked[2] {
        chain.push(RandomPosterize { bits, p: 0.3 });
    }
    if picked[3] {
        chain.push(RandomInvert(0.2));
    }
    if picked[4] {
        chain.push(RandomAutocontrast(0.5));
    }
    if picked[5] {
        chain.push(RandomEqualize(0.4));
    }
    if picked[6] {
        chain.push(RandomAdjustSharpness {
            sharpness_factor,
            p: 0.6,
        });
    }
    if second_jitter {
        chain.push(ColorJitter::new(0.3, 0.5, 0.0, 0.0).unwrap());
    }
    chain.push(VerticalFlip(0.3));
    if float {
        chain.push(Normalize::IMAGENET);
        chain.push(ToDtype(DType::F32, Layout::Chw));
    }
    (chain, resample.is_some())
}

/// Every chain random_chain builds plans for every image (no GPU needed: this runs in CI and
/// catches a chain past the plan's capacity before a GPU run draws one).
#[test]
fn random_chains_always_plan() {
    for seed in 0..400u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (ow, oh) = (rng.random_range(1..=67), rng.random_range(1..=45));
        let float = rng.random_bool(0.5);
        let (chain, _) = random_chain(&mut rng, ow, oh, float);
        for k in 0..32 {
            let (w, h) = (ow + rng.random_range(0..40), oh + rng.random_range(0..30));
            if let Err(e) = chain.plan_image(w, h, &mut SampleRng::new(seed, 0, k)) {
                panic!("seed {seed}, image {k}: {e:?}");
            }
        }
    }
}

/// Largest difference in units of the allowed error (1 u8 step, or 1e-3 relative for f32),
/// and how many values differ at all.
fn worst(dtype: DType, gpu: &[u8], cpu: &[u8]) -> (f64, usize) {
    match dtype {
        DType::U8 => {
            let (w, n) = difference(gpu, cpu);
            (f64::from(w), n)
        }
        _ => gpu
            .chunks(4)
            .zip(cpu.chunks(4))
            .map(|(a, b)| {
                let a = f32::from_le_bytes(a.try_into().unwrap());
                let b = f32::from_le_bytes(b.try_into().unwrap());
                f64::from((a - b).abs()) / (1e-3 * f64::from(b.abs().max(1.0)))
            })
            .fold((0.0, 0), |(w, n), d| {
                (f64::max(w, d), n + usize::from(d > 0.0))
            }),
    }
}

#[test]
fn gpu_colour_matches_its_cpu_twin_on_random_batches() {
    let device = gpu_test_device!("gpu_colour_matches_its_cpu_twin_on_random_batches");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("colour test"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let mut stats_ops = 0;
    // Values compared and values that differ, for exact geometry [0] and resampled [1].
    let (mut values, mut differ) = ([0usize; 2], [0usize; 2]);
    for round in 0..40u64 {
        let (ow, oh) = (rng.random_range(1..=67), rng.random_range(1..=45));
        let float = rng.random_bool(0.5);
        let (chain, resampled) = random_chain(&mut rng, ow, oh, float);
        let batch = rng.random_range(1..=6);
        let mut sources = Vec::new();
        let mut plans: Vec<(FusedOp, OutputSpec)> = Vec::new();
        for k in 0..batch {
            let (w, h) = (ow + rng.random_range(0..40), oh + rng.random_range(0..30));
            let mut px = vec![0u8; (w * h * 3) as usize];
            rng.fill_bytes(&mut px);
            plans.push(
                chain
                    .plan_image(w, h, &mut SampleRng::new(seed, round, k))
                    .unwrap(),
            );
            sources.push((w, h, px));
        }
        let spec = plans[0].1;
        stats_ops += plans
            .iter()
            .map(|p| p.0.colour.stats_passes())
            .sum::<usize>();
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
        let shape = match spec.layout {
            Layout::Chw => [batch as usize, 3, oh as usize, ow as usize],
            Layout::Hwc => [batch as usize, oh as usize, ow as usize, 3],
        };
        let out = Tensor::empty(&pool, &stream, &shape, spec.dtype).unwrap();
        kernel.run(&stream, &images, &ops, &spec, &out, 0).unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let slot = spec.image_bytes();
        for (k, (w, h, px)) in sources.iter().enumerate() {
            let mut want = vec![0u8; slot];
            fused(&HostImage::rgb8(px, *w, *h), &ops[k], &spec, &mut want);
            let (d, n) = worst(spec.dtype, &got[k * slot..(k + 1) * slot], &want);
            let kind = usize::from(resampled);
            differ[kind] += n;
            values[kind] += want.len() / spec.dtype.size();
            assert!(
                n == 0,
                "round {round} image {k} ({w}x{h} -> {ow}x{oh} {:?}): {:?}: {n} values differ, worst {d}",
                spec.dtype,
                ops[k].colour
            );
        }
    }
    eprintln!(
        "values that differ from the twin: exact geometry {} of {}, resampled {} of {}",
        differ[0], values[0], differ[1], values[1]
    );
    assert!(values[1] > 0, "no chain resampled");
    // ColorJitter draws contrast for every image: the pre-pass really ran.
    assert!(stats_ops >= 40, "{stats_ops} contrast operations");
}
