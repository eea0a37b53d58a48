//! The Gaussian blur pass on the GPU (kernels/blur.cu after the fused kernel) against
//! torchvision's references (tests/media/transforms/blur) within 1 u8 step, and against the
//! CPU twin element for element on planned chains (random crops, drawn sigmas, unblurred
//! images in the batch, grey, every dtype and layout); the noise pass against its twin within
//! 1e-3 relative (f32; one step of f16/bf16).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod blur_fixtures;

use blur_fixtures::{cases, difference};
use gm_cuda::{DType, DeviceBuffer, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{
    Blur, BlurKernel, Compose, FusedKernel, FusedOp, GaussianBlur, GaussianNoise, Grey,
    HorizontalFlip, Layout, Normalize, OutputSpec, PlanState, RandomResizedCrop, SampleRng,
    SourceImage, ToDtype, blur_batch, noise_batch,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn shape(n: usize, s: &OutputSpec) -> Vec<usize> {
    let (h, w, c) = (s.height as usize, s.width as usize, s.channels());
    match s.layout {
        Layout::Chw => vec![n, c, h, w],
        Layout::Hwc => vec![n, h, w, c],
    }
}

/// The fused kernel then the blur pass on `images` (one source each), as a loader would run
/// them; returns the output batch's bytes.
#[allow(clippy::too_many_arguments)]
fn gpu_run(
    device: &gm_cuda::Device,
    stream: &Stream,
    pool: &DevicePool,
    sources: &[(Vec<u8>, u32, u32)],
    ops: &[FusedOp],
    spec: &OutputSpec,
    blurs: &[Option<Blur>],
) -> Vec<u8> {
    let bufs: Vec<DeviceBuffer> = sources
        .iter()
        .map(|(px, _, _)| {
            let mut d = DeviceBuffer::alloc(device, px.len()).unwrap();
            stream.upload(px, &mut d, 0).unwrap();
            d
        })
        .collect();
    let images: Vec<SourceImage> = sources
        .iter()
        .zip(&bufs)
        .map(|((_, w, h), d)| SourceImage::rgb8(d.device_ptr(), *w, *h))
        .collect();
    let fspec = Blur::fused_spec(spec);
    let n = ops.len();
    let mid = Tensor::empty(pool, stream, &shape(n, &fspec), DType::U8).unwrap();
    FusedKernel::new(device)
        .unwrap()
        .run(stream, &images, ops, &fspec, &mid, 0)
        .unwrap();
    let out = Tensor::empty(pool, stream, &shape(n, spec), spec.dtype).unwrap();
    let mut blur = BlurKernel::new(device).unwrap();
    blur.run(stream, &mid, spec, blurs, &out).unwrap();
    out.to_host_bytes(stream).unwrap()
}

/// The CPU twin of [`gpu_run`].
fn twin_run(
    sources: &[(Vec<u8>, u32, u32)],
    ops: &[FusedOp],
    spec: &OutputSpec,
    blurs: &[Option<Blur>],
) -> Vec<u8> {
    let fspec = Blur::fused_spec(spec);
    let mut mid = vec![0u8; ops.len() * fspec.image_bytes()];
    for ((chunk, (px, w, h)), op) in mid
        .chunks_exact_mut(fspec.image_bytes())
        .zip(sources)
        .zip(ops)
    {
        fused(&HostImage::rgb8(px, *w, *h), op, &fspec, chunk);
    }
    let mut out = vec![0u8; ops.len() * spec.image_bytes()];
    blur_batch(&mid, spec, blurs, &mut out);
    out
}

#[test]
fn gpu_blurs_match_torchvision_and_the_twin() {
    let device = gpu_test_device!("gpu_blurs_match_torchvision_and_the_twin");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("blur refs"));
    let all: Vec<_> = cases()
        .into_iter()
        .filter(|c| c.expected.is_some())
        .collect();
    let mut compared = 0;
    for source in ["baboon", "random"] {
        let batch: Vec<_> = all.iter().filter(|c| c.name.starts_with(source)).collect();
        let (w, h) = (batch[0].width, batch[0].height);
        let (_, spec) = PlanState::new(w, h).finish();
        let ops = vec![FusedOp::full(w, h); batch.len()];
        let blurs: Vec<Option<Blur>> = batch
            .iter()
            .map(|c| {
                Some(Blur {
                    kernel: c.kernel,
                    sigma: c.sigma as f32,
                })
            })
            .collect();
        let sources: Vec<_> = batch.iter().map(|c| (c.input.clone(), w, h)).collect();
        let got = gpu_run(&device, &stream, &pool, &sources, &ops, &spec, &blurs);
        let twin = twin_run(&sources, &ops, &spec, &blurs);
        assert_eq!(got, twin, "{source}: the kernel and the twin");
        for (k, c) in batch.iter().enumerate() {
            let n = spec.image_bytes();
            let (worst, differ) =
                difference(&got[k * n..(k + 1) * n], c.expected.as_ref().unwrap());
            assert!(
                worst <= 1,
                "{}: max difference {worst} ({differ} values)",
                c.name
            );
            compared += 1;
        }
    }
    assert_eq!(compared, all.len());
}

#[test]
fn gpu_blur_pass_matches_the_twin_on_planned_chains() {
    let device = gpu_test_device!("gpu_blur_pass_matches_the_twin_on_planned_chains");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("blur chains"));
    let mut rng = StdRng::seed_from_u64(23);
    let configs = [
        (DType::U8, Layout::Hwc, false),
        (DType::F32, Layout::Chw, false),
        (DType::F16, Layout::Hwc, true),
        (DType::BF16, Layout::Chw, false),
        (DType::F32, Layout::Hwc, true),
    ];
    for (dtype, layout, grey) in configs {
        let mut chain = Compose::new()
            .then(RandomResizedCrop::new(29, 19))
            .then(GaussianBlur::new((5, 7), (0.1, 2.0)).unwrap())
            .then(HorizontalFlip(0.5));
        if grey {
            chain.push(Grey);
        }
        if dtype != DType::U8 {
            chain.push(Normalize::IMAGENET);
        }
        chain.push(ToDtype(dtype, layout));
        let mut sources = Vec::new();
        let (mut ops, mut blurs, mut spec) = (Vec::new(), Vec::new(), None);
        for i in 0..6u64 {
            let (w, h) = (rng.random_range(31..90), rng.random_range(23..70));
            let px: Vec<u8> = (0..w * h * 3).map(|_| rng.random()).collect();
            let (op, s, b) = chain
                .plan_blurred(w, h, &mut SampleRng::new(5, 0, i))
                .unwrap();
            sources.push((px, w, h));
            ops.push(op);
            // Every third image unblurred: the pass still converts it.
            blurs.push(if i % 3 == 2 { None } else { b });
            spec = Some(s);
        }
        let spec = spec.unwrap();
        let got = gpu_run(&device, &stream, &pool, &sources, &ops, &spec, &blurs);
        let twin = twin_run(&sources, &ops, &spec, &blurs);
        assert_eq!(got.len(), twin.len());
        // The fused pass before the blur rounds as its twin does (fused.cu has no FMA
        // contraction), the blur's sums are the twin's fused multiply-adds and its normalize
        // is unfused in both: after a fractional resize, every value is the twin's.
        let (g, t) = (load(dtype, &got), load(dtype, &twin));
        let differ = g.iter().zip(&t).filter(|(a, b)| a != b).count();
        let worst = relative(&g, &t);
        assert_eq!(
            differ,
            0,
            "{dtype:?} {layout:?} grey {grey}: {differ} of {} values differ (worst relative {worst})",
            g.len()
        );
    }
}

/// The largest |a - b| / max(|b|, 1) over two outputs.
fn relative(got: &[f32], want: &[f32]) -> f32 {
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
        .fold(0.0f32, f32::max)
}

fn load(dtype: DType, b: &[u8]) -> Vec<f32> {
    match dtype {
        DType::F32 => b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        DType::F16 => b
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        DType::BF16 => b
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        DType::U8 => b.iter().map(|&v| f32::from(v)).collect(),
        DType::U16 => b
            .chunks_exact(2)
            .map(|c| f32::from(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
    }
}

#[test]
fn gpu_noise_pass_matches_the_twin() {
    let device = gpu_test_device!("gpu_noise_pass_matches_the_twin");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("noise"));
    let mut kernel = BlurKernel::new(&device).unwrap();
    let mut rng = StdRng::seed_from_u64(29);
    let unit = Normalize {
        mean: [0.0; 3],
        std: [1.0; 3],
    };
    for (dtype, layout, clip, tol) in [
        (DType::F32, Layout::Chw, true, 1e-3f32),
        (DType::F32, Layout::Hwc, false, 1e-3),
        (DType::F16, Layout::Chw, true, 2e-3),
        (DType::BF16, Layout::Hwc, false, 1e-2),
    ] {
        let chain = Compose::new()
            .then(RandomResizedCrop::new(37, 21))
            .then(GaussianBlur::square(3).unwrap())
            .then(unit)
            .then(ToDtype(dtype, layout))
            .then(GaussianNoise::new(0.05, 0.2, clip).unwrap());
        let (mut sources, mut ops, mut blurs, mut noises, mut spec) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), None);
        for i in 0..5u64 {
            let (w, h) = (rng.random_range(40..80), rng.random_range(30..60));
            let px: Vec<u8> = (0..w * h * 3).map(|_| rng.random()).collect();
            let (op, s, post) = chain.plan_post(w, h, &mut SampleRng::new(8, 3, i)).unwrap();
            sources.push((px, w, h));
            ops.push(op);
            blurs.push(post.blur);
            noises.push(if i == 3 { None } else { post.noise });
            spec = Some(s);
        }
        let spec = spec.unwrap();
        let blurred = gpu_run(&device, &stream, &pool, &sources, &ops, &spec, &blurs);
        let out = Tensor::empty(&pool, &stream, &shape(ops.len(), &spec), dtype).unwrap();
        stream
            .upload(&blurred, &mut View(out.data_ptr(), blurred.len()), 0)
            .unwrap();
        kernel.noise(&stream, &spec, &out, &noises).unwrap();
        let got = load(dtype, &out.to_host_bytes(&stream).unwrap());
        // The twin's noise on the kernel's own blurred batch (the blurred batch itself is
        // the twin's: the chain test above), so only the noise's logf/cosf can differ.
        let mut twin = blurred.clone();
        noise_batch(&mut twin, &spec, &noises);
        let twin = load(dtype, &twin);
        let before = load(dtype, &blurred);
        let worst = relative(&got, &twin);
        assert!(
            worst <= tol,
            "{dtype:?} {layout:?}: relative difference {worst}"
        );
        // The unnoised image stayed, the others changed.
        let n = got.len() / ops.len();
        assert_eq!(&got[3 * n..4 * n], &before[3 * n..4 * n]);
        assert_ne!(&got[..n], &before[..n]);
    }
}

/// A borrowed view of device memory, for uploading into a tensor's storage.
struct View(gm_cuda::DevicePtr, usize);
impl gm_cuda::DeviceMemory for View {
    fn device_ptr(&self) -> gm_cuda::DevicePtr {
        self.0
    }
    fn byte_len(&self) -> usize {
        self.1
    }
}
