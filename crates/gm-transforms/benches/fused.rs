//! The fused kernel on the workloads of issue 6: 256 1080p NV12 frames, and 256 ImageNet-style
//! RGB images (500x375), each to 224x224 normalized f16 CHW with a crop and a flip. Reports the
//! median kernel time (device events, 20 runs after warm-up), the bytes it must move (output
//! written, plus the source bytes its bilinear taps read), and the device's copy bandwidth
//! measured in the same run. The torch chain it is compared with is
//! bench/peers/torch_transforms_bench.py. The RGB workload runs again with colour operations
//! (issue 23): ColorJitter(0.4, 0.4, 0.4, 0.1) drawn per image (its contrast adds one
//! statistics pre-pass), and ColorJitter plus equalize (a histogram pre-pass and the LUT
//! kernel); the bytes counted stay those of the plain chain, so `of_copy_bandwidth` shows the
//! extra passes' cost. And with warps (issue 23): the same crop, resize and flip folded with a
//! bilinear RandomAffine(15, translate 0.1, scale 0.9..1.1) per image (the gm_fused_warp_*
//! kernels), and with TrivialAugmentWide drawn per image (warps, colour ops and their
//! pre-passes mixed in one batch); the warps read the resized image, as torchvision's do, so
//! a warped image runs two fused passes (`run_passes`). It runs once more with bicubic resampling and no colour
//! (the same bytes counted).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use gm_cuda::{DType, Device, DeviceBuffer, DevicePool, Event, PoolConfig, Stream, Tensor};
use gm_transforms::{
    ColorJitter, ColourOp, ColourOps, Compose, Crop, CropBox, FusedKernel, FusedOp, HorizontalFlip,
    Interp, Matrix, OutputSpec, PixelFormat, PrePass, RandomAffine, Resize, SampleRng, SourceImage,
    TrivialAugmentWide,
};

/// Per-image plans of the bench's crop, resize to 224 and flip, then a RandomAffine or a
/// TrivialAugmentWide, as planned for sample k of a `w` x `h` image: the warp reads the
/// resized image, so a warped image runs two passes (the resize's, then the warp's).
fn warp_variants(batch: usize, w: u32, h: u32) -> Vec<(&'static str, Vec<Planned>)> {
    let base = || {
        let (cw, ch) = (w * 7 / 8, h * 7 / 8);
        Compose::new()
            .then(CropBox {
                left: w / 16,
                top: h / 16,
                width: cw,
                height: ch,
            })
            .then(Resize::Exact(224, 224))
            .then(HorizontalFlip(0.5))
    };
    let affine = RandomAffine::new(15.0)
        .unwrap()
        .translate(0.1, 0.1)
        .unwrap()
        .scale(0.9, 1.1)
        .unwrap()
        .interpolation(Interp::Bilinear)
        .unwrap();
    let chains = [
        (" + RandomAffine", base().then(affine)),
        (
            " + TrivialAugmentWide",
            base().then(TrivialAugmentWide::new()),
        ),
    ];
    chains
        .into_iter()
        .map(|(label, chain)| {
            let plans = (0..batch as u64)
                .map(|k| {
                    let (op, _, passes) =
                        chain.plan_post(w, h, &mut SampleRng::new(1, 0, k)).unwrap();
                    (passes.pre, op)
                })
                .collect();
            (label, plans)
        })
        .collect()
}

/// An image's pre-passes and last pass.
type Planned = (Vec<PrePass>, FusedOp);

/// Per-image colour lists: none, ColorJitter as drawn for sample k, or that plus equalize.
fn colour_variants(batch: usize) -> Vec<(&'static str, Vec<ColourOps>)> {
    let jitter = Compose::new().then(ColorJitter::new(0.4, 0.4, 0.4, 0.1).unwrap());
    let drawn: Vec<ColourOps> = (0..batch as u64)
        .map(|k| {
            let (op, _) = jitter
                .plan_image(224, 224, &mut SampleRng::new(1, 0, k))
                .unwrap();
            op.colour
        })
        .collect();
    let equalized = drawn
        .iter()
        .map(|c| {
            let mut c = *c;
            c.push(ColourOp::Equalize).unwrap();
            c
        })
        .collect();
    vec![
        ("", vec![ColourOps::NONE; batch]),
        (" + ColorJitter", drawn),
        (" + ColorJitter + equalize", equalized),
    ]
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

fn time(stream: &Stream, device: &Device, reps: usize, mut f: impl FnMut()) -> f32 {
    let (a, b) = (
        Event::timing(device).unwrap(),
        Event::timing(device).unwrap(),
    );
    for _ in 0..3 {
        f();
    }
    let mut ms = Vec::new();
    for _ in 0..reps {
        a.record(stream).unwrap();
        f();
        b.record(stream).unwrap();
        ms.push(a.elapsed_ms(&b).unwrap());
    }
    median(ms)
}

fn main() {
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("bench"));
    let mut kernel = FusedKernel::new(&device).unwrap();

    // Copy bandwidth: 1 GiB device to device, bytes read + written.
    let n = 1usize << 30;
    let src = DeviceBuffer::alloc(&device, n).unwrap();
    let mut dst = DeviceBuffer::alloc(&device, n).unwrap();
    let copy_ms = time(&stream, &device, 10, || {
        stream.copy_on_device(&src, 0, &mut dst, 0, n).unwrap()
    });
    let copy_gbs = 2.0 * n as f64 / (f64::from(copy_ms) * 1e-3) / 1e9;
    println!("{{\"workload\":\"device copy\",\"ms\":{copy_ms:.3},\"gb_per_s\":{copy_gbs:.0}}}");
    drop((src, dst));

    let spec = OutputSpec::normalized(
        224,
        224,
        DType::F16,
        [0.485, 0.456, 0.406],
        [0.229, 0.224, 0.225],
    );
    let batch = 256usize;
    let out = Tensor::empty(&pool, &stream, &[batch, 3, 224, 224], DType::F16).unwrap();
    for (workload, w, h, format) in [
        ("256 x 1080p NV12", 1920u32, 1080u32, PixelFormat::Nv12),
        ("256 x 500x375 RGB", 500, 375, PixelFormat::Rgb8),
    ] {
        let (pitch, frame_bytes) = match format {
            PixelFormat::Nv12 => (w as usize, w as usize * h as usize * 3 / 2),
            _ => (3 * w as usize, 3 * w as usize * h as usize),
        };
        let mut data = DeviceBuffer::alloc(&device, frame_bytes * batch).unwrap();
        // Not zeros: a gradient pattern in every byte.
        let host: Vec<u8> = (0..frame_bytes * batch)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        stream.upload(&host, &mut data, 0).unwrap();
        let images: Vec<SourceImage> = (0..batch)
            .map(|k| {
                let base = data.device_ptr().offset(k * frame_bytes);
                SourceImage {
                    data: base,
                    chroma: base.offset(pitch * h as usize),
                    pitch,
                    width: w,
                    height: h,
                    format,
                    matrix: Matrix::Bt709,
                    full_range: false,
                    orientation: Default::default(),
                    chroma_filter: Default::default(),
                }
            })
            .collect();
        // A central crop of 87.5% and a flip on every other image, as an eval/train mix.
        let ops: Vec<FusedOp> = (0..batch)
            .map(|k| FusedOp {
                crop: Crop {
                    x: w as f32 * 0.0625,
                    y: h as f32 * 0.0625,
                    w: w as f32 * 0.875,
                    h: h as f32 * 0.875,
                },
                flip_h: k % 2 == 1,
                flip_v: false,
                pad: None,
                colour: ColourOps::NONE,
                warp: None,
            })
            .collect();
        let rgb = format == PixelFormat::Rgb8;
        let one_pass = |ops: Vec<FusedOp>| ops.into_iter().map(|op| (Vec::new(), op)).collect();
        let mut variants: Vec<(&str, Vec<Planned>, Interp)> = colour_variants(batch)
            .into_iter()
            .filter(|v| rgb || v.0.is_empty())
            .map(|(label, colours)| {
                let ops = ops
                    .iter()
                    .zip(colours)
                    .map(|(op, colour)| FusedOp { colour, ..*op })
                    .collect();
                (label, one_pass(ops), Interp::Bilinear)
            })
            .collect();
        if rgb {
            let warps = warp_variants(batch, w, h).into_iter();
            variants.extend(warps.map(|(label, plans)| (label, plans, Interp::Bilinear)));
            variants.push((" bicubic", one_pass(ops.clone()), Interp::Bicubic));
        }
        for (label, plans, interp) in variants {
            let spec = OutputSpec { interp, ..spec };
            let pre: Vec<&[PrePass]> = plans.iter().map(|p| p.0.as_slice()).collect();
            let ops: Vec<FusedOp> = plans.iter().map(|p| p.1).collect();
            let ms = time(&stream, &device, 20, || {
                kernel
                    .run_passes(&stream, &images, &pre, &ops, &spec, &out, 0)
                    .unwrap()
            });
            let written = (batch * spec.image_bytes()) as f64;
            // Bilinear taps of a downscale touch about 2x2 source pixels per output pixel; count the
            // whole cropped source instead when that is smaller.
            let per_px: f64 = if format == PixelFormat::Nv12 {
                1.5
            } else {
                3.0
            };
            let touched = (4.0 * 224.0 * 224.0 * per_px)
                .min(0.875 * 0.875 * f64::from(w) * f64::from(h) * per_px)
                * batch as f64;
            let gbs = (written + touched) / (f64::from(ms) * 1e-3) / 1e9;
            println!(
                "{{\"workload\":\"{workload}{label}\",\"ms\":{ms:.3},\"images_per_s\":{:.0},\"gb_per_s\":{gbs:.0},\"of_copy_bandwidth\":{:.2}}}",
                batch as f64 / (f64::from(ms) * 1e-3),
                gbs / copy_gbs
            );
        }
    }
}
