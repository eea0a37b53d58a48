//! The fused kernel against its CPU twin on random inputs of odd sizes, every source format
//! (RGB, BGR, NV12/P016 and their 4:2:2 and 4:4:4 forms),
//! dtype, layout, filter, crop and flip: equal, element for element. fused.cu is compiled
//! without FMA contraction (`gm-nvrtc-options: --fmad=false`) and does the twin's f32
//! operations in the twin's order, so nothing is left to round differently; a difference of
//! any size is a bug. (Before that option, fractional bilinear, bicubic and antialiased taps
//! were 1 u8 step off the twin.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod colour_fixtures;
mod common;

use gm_cuda::{DType, DeviceBuffer, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::cpu::{HostImage, fused, place_in_slot};
use gm_transforms::targets::{GeoStep, MaskStack, TargetGeometry};
use gm_transforms::{
    ChromaFilter, Crop, FusedKernel, FusedOp, Interp, Layout, MaskGather, Matrix, Orientation,
    OutputSpec, Padding, PixelFormat, Slot, SourceImage,
};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

struct Case {
    format: PixelFormat,
    width: u32,
    height: u32,
    pitch: usize,
    data: Vec<u8>,
    chroma: Vec<u8>,
    matrix: Matrix,
    full_range: bool,
    orientation: Orientation,
    chroma_filter: ChromaFilter,
    op: FusedOp,
}

impl Case {
    /// The case as the CPU twin reads it.
    fn host(&self) -> HostImage<'_> {
        HostImage {
            data: &self.data,
            chroma: &self.chroma,
            pitch: self.pitch,
            width: self.width,
            height: self.height,
            format: self.format,
            matrix: self.matrix,
            full_range: self.full_range,
            orientation: self.orientation,
            chroma_filter: self.chroma_filter,
        }
    }
}

fn random_case(rng: &mut StdRng, sizes: &[(u32, u32)]) -> Case {
    let (width, height) = sizes[rng.random_range(0..sizes.len())];
    let depth = if rng.random_bool(0.5) { 10 } else { 16 };
    let format = match rng.random_range(0..9) {
        8 => PixelFormat::Rgb8Planar { plane: 0 },
        0 => PixelFormat::Rgb8,
        1 => PixelFormat::Bgr8,
        2 => PixelFormat::Nv12,
        3 => PixelFormat::P016 { bit_depth: depth },
        4 => PixelFormat::Nv16,
        5 => PixelFormat::P216 { bit_depth: depth },
        6 => PixelFormat::Nv24,
        _ => PixelFormat::P416 { bit_depth: depth },
    };
    // Both planes share the pitch: the wider row (4:4:4's chroma row is twice luma's).
    let (row, chroma_rows) = match format.semi_planar() {
        None => (format.row_bytes(width), 0),
        Some(((sx, sy), bps)) => (
            2 * bps * (width as usize).div_ceil(1 << sx),
            (height as usize).div_ceil(1 << sy),
        ),
    };
    let pitch = row + 2 * rng.random_range(0..9);
    // Planar RGB: planes a little more than a plane apart, or all one plane (a grey image
    // broadcast to three channels).
    let format = match format {
        PixelFormat::Rgb8Planar { .. } if rng.random_bool(0.2) => format,
        PixelFormat::Rgb8Planar { .. } => PixelFormat::Rgb8Planar {
            plane: pitch * height as usize + rng.random_range(0..64),
        },
        f => f,
    };
    let planes = match format {
        PixelFormat::Rgb8Planar { plane } => 2 * plane,
        _ => 0,
    };
    let mut data = vec![0u8; planes + pitch * height as usize];
    rng.fill_bytes(&mut data);
    let mut chroma = vec![0u8; pitch * chroma_rows.max(1)];
    rng.fill_bytes(&mut chroma);
    // Any of the eight turns and mirrors; crops and padding are in displayed coordinates.
    let orientation =
        Orientation::rotated(90 * rng.random_range(0..4), rng.random_bool(0.5)).unwrap();
    let chroma_filter = match rng.random_range(0..5) {
        0 => ChromaFilter::Replicate,
        1 => ChromaFilter::Cubic { x: 0, y: 128 },
        2 => ChromaFilter::Cubic { x: 128, y: 128 },
        3 => ChromaFilter::Cubic { x: 0, y: 0 },
        _ => ChromaFilter::Cubic { x: 128, y: 256 },
    };
    let stored = (width, height);
    let (width, height) = orientation.displayed_size(width, height);
    let w = width as f32;
    let h = height as f32;
    let crop = if rng.random_bool(0.3) {
        Crop::full(width, height)
    } else {
        let cw = rng.random_range(0.05..=1.0f32) * w;
        let ch = rng.random_range(0.05..=1.0f32) * h;
        Crop {
            x: rng.random_range(0.0..=(w - cw)),
            y: rng.random_range(0.0..=(h - ch)),
            w: cw,
            h: ch,
        }
    };
    // A quarter of the cases are padded: the crop may reach up to 20 pixels past the source,
    // where the fill is read.
    let pad = rng.random_bool(0.25).then(|| {
        let [l, t, r, b] = [0, 1, 2, 3].map(|_| rng.random_range(0..=20i32));
        Padding {
            x0: -l,
            y0: -t,
            x1: width as i32 + r,
            y1: height as i32 + b,
            valid: (0, 0, width as i32, height as i32),
            fill: [rng.random_range(0.0..255.0f32), 0.0, 255.0],
        }
    });
    let crop = match pad {
        Some(p) => {
            let (pw, ph) = ((p.x1 - p.x0) as f32, (p.y1 - p.y0) as f32);
            let cw = rng.random_range(0.05..=1.0f32) * pw;
            let ch = rng.random_range(0.05..=1.0f32) * ph;
            Crop {
                x: p.x0 as f32 + rng.random_range(0.0..=(pw - cw)),
                y: p.y0 as f32 + rng.random_range(0.0..=(ph - ch)),
                w: cw,
                h: ch,
            }
        }
        None => crop,
    };
    Case {
        format,
        width: stored.0,
        height: stored.1,
        pitch,
        data,
        chroma,
        matrix: [Matrix::Bt601, Matrix::Bt709, Matrix::Bt2020][rng.random_range(0..3)],
        full_range: rng.random_bool(0.3),
        orientation,
        chroma_filter,
        op: FusedOp {
            crop,
            flip_h: rng.random_bool(0.5),
            flip_v: rng.random_bool(0.2),
            pad,
            colour: gm_transforms::ColourOps::NONE,
            warp: None,
        },
    }
}

fn random_spec(rng: &mut StdRng) -> OutputSpec {
    let dtype = [DType::U8, DType::F16, DType::BF16, DType::F32][rng.random_range(0..4)];
    let mean = [0.485, 0.456, 0.406];
    let std = [0.229, 0.224, 0.225];
    let mut s = OutputSpec::normalized(
        rng.random_range(1..=97),
        rng.random_range(1..=61),
        dtype,
        mean,
        std,
    );
    if dtype == DType::U8 {
        s.scale = [1.0; 3];
        s.bias = [0.0; 3];
    }
    s.layout = if rng.random_bool(0.5) {
        Layout::Chw
    } else {
        Layout::Hwc
    };
    s.interp = [
        Interp::Bilinear,
        Interp::Nearest,
        Interp::Bicubic,
        Interp::Antialias,
    ][rng.random_range(0..4)];
    s.bgr = rng.random_bool(0.2);
    s.grey = rng.random_bool(0.2);
    s
}

/// Largest disagreement as a multiple of the allowed error: 1 for u8; for floats 1e-3
/// relative (at least 1e-3 absolute), or one unit in the last place of the output format where
/// that is coarser (f16, bf16), so values on either side of a rounding boundary pass.
fn compare(dtype: DType, gpu: &[u8], cpu: &[u8]) -> (f64, usize) {
    let mut worst = (0.0f64, 0usize);
    let n = gpu.len() / dtype.size();
    let value = |b: &[u8]| -> f64 {
        match dtype {
            DType::U8 => f64::from(b[0]),
            DType::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
            DType::F16 => f64::from(half::f16::from_le_bytes([b[0], b[1]]).to_f32()),
            DType::BF16 => f64::from(half::bf16::from_le_bytes([b[0], b[1]]).to_f32()),
            DType::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        }
    };
    for i in 0..n {
        let e = dtype.size();
        let (a, b) = (
            value(&gpu[i * e..(i + 1) * e]),
            value(&cpu[i * e..(i + 1) * e]),
        );
        let tol = match dtype {
            DType::U8 | DType::U16 => 1.0,
            DType::F32 => 1e-3 * b.abs().max(1.0),
            DType::F16 => (1e-3 * b.abs().max(1.0)).max(b.abs() * 2f64.powi(-10)),
            DType::BF16 => (1e-3 * b.abs().max(1.0)).max(b.abs() * 2f64.powi(-7)),
        };
        let d = if a.is_nan() || b.is_nan() {
            f64::INFINITY
        } else {
            (a - b).abs() / tol
        };
        if d > worst.0 {
            worst = (d, i);
        }
    }
    worst
}

#[test]
fn fused_kernel_matches_its_cpu_twin_on_random_batches() {
    let device = gpu_test_device!("fused_kernel_matches_its_cpu_twin_on_random_batches");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("fused test"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let sizes = [
        (1, 1),
        (3, 7),
        (2, 2),
        (17, 9),
        (64, 48),
        (333, 211),
        (1917, 1079),
    ];
    let mut checked = 0usize;
    for round in 0..60 {
        let spec = random_spec(&mut rng);
        let batch = rng.random_range(1..=4);
        let cases: Vec<Case> = (0..batch).map(|_| random_case(&mut rng, &sizes)).collect();
        let mut spec = spec;
        // The CPU twin of a strong antialiased shrink sums thousands of taps per pixel; keep the
        // shrink factor moderate so the reference stays quick.
        if spec.interp == Interp::Antialias
            && cases.iter().any(|c| {
                c.op.crop.w / spec.width as f32 > 12.0 || c.op.crop.h / spec.height as f32 > 12.0
            })
        {
            spec.interp = Interp::Bilinear;
        }
        let (bufs, images) = upload_cases(&device, &stream, &cases);
        let shape = match spec.layout {
            Layout::Chw => [
                batch + 1,
                spec.channels(),
                spec.height as usize,
                spec.width as usize,
            ],
            Layout::Hwc => [
                batch + 1,
                spec.height as usize,
                spec.width as usize,
                spec.channels(),
            ],
        };
        let out = Tensor::empty(&pool, &stream, &shape, spec.dtype).unwrap();
        // Poison every slot so an unwritten element cannot pass.
        let poison = vec![0xA5u8; out.numel() * spec.dtype.size()];
        stream
            .upload(&poison, &mut PoolView(out.data_ptr(), poison.len()), 0)
            .unwrap();
        let ops: Vec<FusedOp> = cases.iter().map(|c| c.op).collect();
        kernel.run(&stream, &images, &ops, &spec, &out, 1).unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let slot = spec.image_bytes();
        assert!(
            got[..slot].iter().all(|&b| b == 0xA5),
            "round {round}: slot 0 was not to be written"
        );
        for (k, c) in cases.iter().enumerate() {
            let host = c.host();
            let mut want = vec![0u8; slot];
            fused(&host, &c.op, &spec, &mut want);
            let have = &got[(k + 1) * slot..(k + 2) * slot];
            let (d, at) = compare(spec.dtype, have, &want);
            assert!(
                d == 0.0,
                "round {round} image {k}: {:?} {}x{} -> {:?} {}x{} {:?} {:?}, crop {:?}: difference {d} at element {at}",
                c.format,
                c.width,
                c.height,
                spec.dtype,
                spec.width,
                spec.height,
                spec.layout,
                spec.interp,
                c.op
            );
            checked += spec.width as usize * spec.height as usize * 3;
        }
        drop(bufs);
    }
    eprintln!("{checked} output elements compared");
}

/// A borrowed view of device memory, for uploading into a tensor's storage.
struct PoolView(gm_cuda::DevicePtr, usize);
impl gm_cuda::DeviceMemory for PoolView {
    fn device_ptr(&self) -> gm_cuda::DevicePtr {
        self.0
    }
    fn byte_len(&self) -> usize {
        self.1
    }
}

#[test]
fn invalid_arguments_are_errors_before_launching() {
    let device = gpu_test_device!("invalid_arguments_are_errors_before_launching");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("fused errors"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let spec = OutputSpec::normalized(8, 8, DType::F32, [0.5; 3], [0.5; 3]);
    let out = Tensor::empty(&pool, &stream, &[2, 3, 8, 8], DType::F32).unwrap();
    // Initialised: the last run below reads it (compute-sanitizer's initcheck).
    let mut src = DeviceBuffer::alloc(&device, 3 * 4 * 4).unwrap();
    stream.upload(&[0x80u8; 3 * 4 * 4], &mut src, 0).unwrap();
    let img = SourceImage {
        data: src.device_ptr(),
        chroma: src.device_ptr(),
        pitch: 12,
        width: 4,
        height: 4,
        format: PixelFormat::Rgb8,
        matrix: Matrix::Bt601,
        full_range: false,
        orientation: Default::default(),
        chroma_filter: Default::default(),
    };
    let op = FusedOp {
        crop: Crop::full(4, 4),
        flip_h: false,
        flip_v: false,
        pad: None,
        colour: gm_transforms::ColourOps::NONE,
        warp: None,
    };
    assert!(
        kernel.run(&stream, &[img], &[op], &spec, &out, 2).is_err(),
        "slot past the batch"
    );
    assert!(
        kernel
            .run(
                &stream,
                &[SourceImage { pitch: 5, ..img }],
                &[op],
                &spec,
                &out,
                0
            )
            .is_err(),
        "short pitch"
    );
    let empty = FusedOp {
        crop: Crop { w: 0.0, ..op.crop },
        ..op
    };
    assert!(
        kernel
            .run(&stream, &[img], &[empty], &spec, &out, 0)
            .is_err(),
        "empty crop"
    );
    let hwc = OutputSpec {
        layout: Layout::Hwc,
        ..spec
    };
    assert!(
        kernel.run(&stream, &[img], &[op], &hwc, &out, 0).is_err(),
        "layout mismatch"
    );
    kernel.run(&stream, &[img], &[op], &spec, &out, 1).unwrap();
}

/// The committed OpenCV / torchvision resizes (see tests/references.rs), on the GPU.
#[test]
fn gpu_resizes_like_opencv_and_torchvision() {
    let device = gpu_test_device!("gpu_resizes_like_opencv_and_torchvision");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("resize refs"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let (w, h) = (common::W, common::H);
    let mut compared = 0;
    for name in common::SOURCES {
        let src = std::fs::read(common::dir().join(format!("{name}.rgb"))).unwrap();
        let mut d = DeviceBuffer::alloc(&device, src.len()).unwrap();
        stream.upload(&src, &mut d, 0).unwrap();
        let img = SourceImage::rgb8(d.device_ptr(), w, h);
        for (mode, ow, oh, libs) in common::CASES {
            let spec = common::spec(mode, ow, oh);
            let out = Tensor::empty(
                &pool,
                &stream,
                &[1, oh as usize, ow as usize, 3],
                DType::F32,
            )
            .unwrap();
            kernel
                .run(
                    &stream,
                    &[img],
                    &[FusedOp {
                        crop: Crop::full(w, h),
                        flip_h: false,
                        flip_v: false,
                        pad: None,
                        colour: gm_transforms::ColourOps::NONE,
                        warp: None,
                    }],
                    &spec,
                    &out,
                    0,
                )
                .unwrap();
            let got = out.to_host_bytes(&stream).unwrap();
            for &lib in libs {
                let worst = common::max_difference(&got, name, mode, ow, oh, lib);
                // As in references.rs: a u8 image's antialiased resize is torchvision's uint8
                // one, a step from the float reference at most.
                let bound = if mode == "antialias" { 1.0 } else { 0.51 };
                assert!(
                    worst <= bound,
                    "{name} {mode} {ow}x{oh} vs {lib}: max difference {worst}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 24);
}

/// Frames from another library, handed over through DLPack (versioned and legacy), feed the
/// fused kernel as gm's own memory does, and equal the CPU twin.
#[test]
fn dlpack_imported_frames_feed_the_fused_kernel() {
    let device = gpu_test_device!("dlpack_imported_frames_feed_the_fused_kernel");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("import test"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let (w, h) = (97u32, 61u32);
    let mut rng = StdRng::seed_from_u64(19);
    let pixels: Vec<u8> = (0..w * h * 3).map(|_| rng.random()).collect();
    let mut buf = DeviceBuffer::alloc(&device, pixels.len()).unwrap();
    stream.upload(&pixels, &mut buf, 0).unwrap();
    stream.synchronize().unwrap();
    let producer = Tensor::new(buf, &[h as usize, w as usize, 3], DType::U8).unwrap();
    let spec = OutputSpec::normalized(32, 24, DType::F32, [0.5; 3], [0.25; 3]);
    let op = FusedOp::full(w, h);
    let mut want = vec![0u8; spec.image_bytes()];
    let host = HostImage {
        data: &pixels,
        chroma: &[],
        pitch: w as usize * 3,
        width: w,
        height: h,
        format: PixelFormat::Rgb8,
        matrix: Matrix::default(),
        full_range: true,
        orientation: Default::default(),
        chroma_filter: Default::default(),
    };
    fused(&host, &op, &spec, &mut want);
    let imports = [
        Tensor::from_dlpack(producer.to_dlpack(None).unwrap(), &device, None).unwrap(),
        Tensor::from_dlpack(producer.to_dlpack_legacy(None).unwrap(), &device, None).unwrap(),
    ];
    drop(producer); // the imports keep the memory alive through the DLPack deleters
    for t in imports {
        assert_eq!(
            (t.shape(), t.strides(), t.dtype()),
            (&[61, 97, 3][..], &[291, 3, 1][..], DType::U8)
        );
        assert_eq!(t.to_host_bytes(&stream).unwrap(), pixels);
        let out = Tensor::empty(&pool, &stream, &[1, 3, 24, 32], DType::F32).unwrap();
        let src = SourceImage::rgb8(t.data_ptr(), w, h);
        kernel.run(&stream, &[src], &[op], &spec, &out, 0).unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let (d, at) = compare(DType::F32, &got, &want);
        assert!(d <= 1.0, "difference {d} at element {at}");
    }
}

/// Uploads `cases` and describes them as kernel sources (the buffers must outlive the launch).
fn upload_cases(
    device: &gm_cuda::Device,
    stream: &Stream,
    cases: &[Case],
) -> (Vec<(DeviceBuffer, DeviceBuffer)>, Vec<SourceImage>) {
    let mut bufs = Vec::new();
    let mut images = Vec::new();
    for c in cases {
        let mut d = DeviceBuffer::alloc(device, c.data.len()).unwrap();
        stream.upload(&c.data, &mut d, 0).unwrap();
        let mut ch = DeviceBuffer::alloc(device, c.chroma.len()).unwrap();
        stream.upload(&c.chroma, &mut ch, 0).unwrap();
        images.push(SourceImage {
            data: d.device_ptr(),
            chroma: ch.device_ptr(),
            pitch: c.pitch,
            width: c.width,
            height: c.height,
            format: c.format,
            matrix: c.matrix,
            full_range: c.full_range,
            orientation: c.orientation,
            chroma_filter: c.chroma_filter,
        });
        bufs.push((d, ch));
    }
    (bufs, images)
}

/// The slots of a padded batch (each the largest size rounded up to `multiple`) or, with
/// `multiple == 0`, of a ragged one (each image packed after the one before).
fn slots_for(specs: &[OutputSpec], multiple: u32, fill: f32) -> (Vec<Slot>, usize) {
    let mut slots = Vec::new();
    let mut offset = 0;
    let w = specs.iter().map(|s| s.width).max().unwrap();
    let h = specs.iter().map(|s| s.height).max().unwrap();
    for s in specs {
        let (sw, sh) = if multiple == 0 {
            (s.width, s.height)
        } else {
            (w.next_multiple_of(multiple), h.next_multiple_of(multiple))
        };
        let slot = Slot {
            offset,
            width: sw,
            height: sh,
            fill,
        };
        offset += slot.bytes(s);
        slots.push(slot);
    }
    (slots, offset)
}

/// Images of many output sizes written into padded and packed slots in one launch: every
/// element equals the CPU twin's image placed in the same slot (fill included).
#[test]
fn slots_of_many_sizes_match_the_cpu_twin() {
    let device = gpu_test_device!("slots_of_many_sizes_match_the_cpu_twin");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("slots test"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let sizes = [(3, 7), (17, 9), (64, 48), (333, 211)];
    for round in 0..40 {
        let mut base = random_spec(&mut rng);
        if base.interp == Interp::Antialias {
            base.interp = Interp::Bilinear;
        }
        let n = rng.random_range(1..=5);
        let cases: Vec<Case> = (0..n).map(|_| random_case(&mut rng, &sizes)).collect();
        let specs: Vec<OutputSpec> = (0..n)
            .map(|_| OutputSpec {
                width: rng.random_range(1..=70),
                height: rng.random_range(1..=50),
                ..base
            })
            .collect();
        let multiple = [0, 1, 8, 32][rng.random_range(0..4)];
        let fill = [0.0, -1.5, 114.0][rng.random_range(0..3)];
        let (slots, bytes) = slots_for(&specs, multiple, fill);
        let (bufs, images) = upload_cases(&device, &stream, &cases);
        let out = Tensor::empty(&pool, &stream, &[bytes / base.dtype.size()], base.dtype).unwrap();
        let poison = vec![0xA5u8; bytes];
        stream
            .upload(&poison, &mut PoolView(out.data_ptr(), bytes), 0)
            .unwrap();
        let ops: Vec<FusedOp> = cases.iter().map(|c| c.op).collect();
        let pre: Vec<&[gm_transforms::PrePass]> = vec![&[]; n];
        kernel
            .run_slots(&stream, &images, &pre, &ops, &specs, &slots, &out, &[])
            .unwrap();
        let got = out.to_host_bytes(&stream).unwrap();
        let mut want = vec![0u8; bytes];
        for ((c, spec), slot) in cases.iter().zip(&specs).zip(&slots) {
            let host = c.host();
            let mut image = vec![0u8; spec.image_bytes()];
            fused(&host, &c.op, spec, &mut image);
            place_in_slot(&image, spec, slot, &mut want).unwrap();
        }
        let (d, at) = compare(base.dtype, &got, &want);
        assert!(
            d == 0.0,
            "round {round}: {:?} {:?} multiple {multiple}, sizes {:?}: difference {d} at element {at}",
            base.dtype,
            base.layout,
            specs
                .iter()
                .map(|s| (s.width, s.height))
                .collect::<Vec<_>>()
        );
        drop(bufs);
    }
}

/// A random mask stack and the axis-aligned geometry (crops past the edges, pads with a
/// fill, flips, then a resize) that takes it to `out`.
fn random_masks(rng: &mut StdRng, out: (u32, u32)) -> (MaskStack, TargetGeometry) {
    let (w, h) = (rng.random_range(1..=90), rng.random_range(1..=70));
    let planes = rng.random_range(0..=3);
    let mut data = vec![0u8; (w * h * planes) as usize];
    rng.fill_bytes(&mut data);
    let mut steps = Vec::new();
    for _ in 0..rng.random_range(0..3) {
        steps.push(match rng.random_range(0..3) {
            0 => GeoStep::Crop {
                left: rng.random_range(-4..8) as f32,
                top: rng.random_range(-4..8) as f32,
                width: rng.random_range(1..=w + 4),
                height: rng.random_range(1..=h + 4),
            },
            1 => GeoStep::Pad {
                left: rng.random_range(0..4),
                top: rng.random_range(0..4),
                right: rng.random_range(0..4),
                bottom: rng.random_range(0..4),
                mask_fill: [0, 255, 7][rng.random_range(0..3)],
            },
            _ => GeoStep::Flip {
                horizontal: rng.random_bool(0.5),
            },
        });
    }
    steps.push(GeoStep::Resize {
        width: out.0,
        height: out.1,
    });
    let stack = MaskStack::new(w, h, planes, data).unwrap();
    (
        stack,
        TargetGeometry {
            source: (w, h),
            steps,
        },
    )
}

/// Masks gathered in the launch that writes their images (padded and packed slots, and a
/// uniform batch): every byte equals the CPU twin's gather, fills of crops and pads included;
/// the images are unchanged by it.
#[test]
fn masks_move_in_the_launch_like_the_cpu_twin() {
    let device = gpu_test_device!("masks_move_in_the_launch_like_the_cpu_twin");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("masks test"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let sizes = [(3, 7), (17, 9), (64, 48), (333, 211)];
    for round in 0..40 {
        let mut base = random_spec(&mut rng);
        if base.interp == Interp::Antialias {
            base.interp = Interp::Bilinear;
        }
        let n = rng.random_range(1..=5);
        let uniform = round % 2 == 1;
        let cases: Vec<Case> = (0..n).map(|_| random_case(&mut rng, &sizes)).collect();
        let specs: Vec<OutputSpec> = (0..n)
            .map(|_| OutputSpec {
                width: if uniform {
                    base.width
                } else {
                    rng.random_range(1..=70)
                },
                height: if uniform {
                    base.height
                } else {
                    rng.random_range(1..=50)
                },
                ..base
            })
            .collect();
        // A uniform batch is tight slots in a [B, ..] tensor; the others pad or pack.
        let (slots, bytes) = slots_for(&specs, if uniform { 0 } else { 8 }, 0.0);
        let (bufs, images) = upload_cases(&device, &stream, &cases);
        let (w, h, c) = (base.width as usize, base.height as usize, base.channels());
        let shape = match (uniform, base.layout) {
            (false, _) => vec![bytes / base.dtype.size()],
            (true, Layout::Chw) => vec![n, c, h, w],
            (true, Layout::Hwc) => vec![n, h, w, c],
        };
        let out = Tensor::empty(&pool, &stream, &shape, base.dtype).unwrap();
        // Each image's source masks, taps and output, in device buffers of their own.
        let mut want = Vec::new();
        let mut keep = Vec::new();
        let mut gathers = Vec::new();
        for spec in &specs {
            let (stack, g) = random_masks(&mut rng, (spec.width, spec.height));
            let taps = g.mask_taps().unwrap();
            let moved = taps.gather(&stack).unwrap();
            if stack.planes == 0 && rng.random_bool(0.5) {
                gathers.push(None);
                want.push(None);
                continue;
            }
            let mut src = DeviceBuffer::alloc(&device, stack.data.len().max(1)).unwrap();
            stream.upload(&stack.data, &mut src, 0).unwrap();
            let tap_bytes: Vec<u8> = taps.encoded().flat_map(i32::to_ne_bytes).collect();
            let mut tb = DeviceBuffer::alloc(&device, tap_bytes.len()).unwrap();
            stream.upload(&tap_bytes, &mut tb, 0).unwrap();
            let mut dst = DeviceBuffer::alloc(&device, moved.data.len().max(1)).unwrap();
            stream
                .upload(&vec![0xA5u8; moved.data.len().max(1)], &mut dst, 0)
                .unwrap();
            gathers.push(Some(MaskGather {
                src: src.device_ptr(),
                width: stack.width,
                height: stack.height,
                planes: stack.planes,
                taps: tb.device_ptr(),
                dst: dst.device_ptr(),
            }));
            want.push(Some(moved));
            keep.push((src, tb, dst));
        }
        let ops: Vec<FusedOp> = cases.iter().map(|c| c.op).collect();
        let pre: Vec<&[gm_transforms::PrePass]> = vec![&[]; n];
        if uniform {
            kernel
                .run_passes_masked(&stream, &images, &pre, &ops, &base, (&out, 0), &gathers)
                .unwrap();
        } else {
            kernel
                .run_slots(&stream, &images, &pre, &ops, &specs, &slots, &out, &gathers)
                .unwrap();
        }
        let got = out.to_host_bytes(&stream).unwrap();
        let mut images_want = vec![0u8; bytes];
        for ((c, spec), slot) in cases.iter().zip(&specs).zip(&slots) {
            let mut image = vec![0u8; spec.image_bytes()];
            fused(&c.host(), &c.op, spec, &mut image);
            place_in_slot(&image, spec, slot, &mut images_want).unwrap();
        }
        let (d, at) = compare(base.dtype, &got, &images_want);
        assert!(d == 0.0, "round {round}: image difference {d} at {at}");
        let mut held = keep.iter();
        for (k, w) in want.iter().enumerate() {
            let Some(w) = w else { continue };
            let (_, _, dst) = held.next().unwrap();
            let mut host = vec![0u8; w.data.len()];
            stream.download(dst, 0, &mut host).unwrap();
            assert_eq!(host, w.data, "round {round} image {k}: {} planes", w.planes);
        }
        drop(bufs);
    }
}

/// torchvision's uint8 resize references (tests/media/resize/make_u8_references.py) on the
/// GPU: the kernel's integer antialiased resize, and the chains after it, byte for byte, and
/// mirrored when the op flips (torchvision's flip after the resize).
#[test]
fn gpu_resizes_uint8_exactly_like_torchvision() {
    let device = gpu_test_device!("gpu_resizes_uint8_exactly_like_torchvision");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("u8 resize refs"));
    let mut kernel = FusedKernel::new(&device).unwrap();
    let (w, h) = (common::W, common::H);
    let all = colour_fixtures::u8_resizes();
    assert_eq!(all.len(), 28);
    for case in &all {
        let mut d = DeviceBuffer::alloc(&device, case.input.len()).unwrap();
        stream.upload(&case.input, &mut d, 0).unwrap();
        let img = SourceImage::rgb8(d.device_ptr(), w, h);
        let (ow, oh) = case.size;
        let spec = OutputSpec {
            dtype: DType::U8,
            ..common::spec("antialias", ow, oh)
        };
        for flip in [false, true] {
            let op = FusedOp {
                crop: case.crop,
                flip_h: flip,
                colour: case.ops,
                ..FusedOp::full(w, h)
            };
            let out = Tensor::empty(&pool, &stream, &[1, oh as usize, ow as usize, 3], DType::U8)
                .unwrap();
            kernel.run(&stream, &[img], &[op], &spec, &out, 0).unwrap();
            let got = out.to_host_bytes(&stream).unwrap();
            let mut want = case.expected.clone();
            if flip {
                for row in want.chunks_mut(3 * ow as usize) {
                    let px: Vec<[u8; 3]> =
                        row.chunks(3).rev().map(|p| [p[0], p[1], p[2]]).collect();
                    row.copy_from_slice(px.concat().as_slice());
                }
            }
            let (worst, differ) = colour_fixtures::difference(&got, &want);
            assert_eq!(
                differ, 0,
                "{} (flip {flip}): {differ} values differ, by up to {worst}",
                case.name
            );
        }
    }
}
