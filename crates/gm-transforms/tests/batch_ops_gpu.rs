//! The batch-operation kernels (RandomErasing, MixUp/CutMix) against their CPU twins on random
//! batches of every dtype, layout and channel count, odd sizes, and against the torchvision
//! references: within 1 u8 step, one unit in the last place of f16/bf16, 1e-3 relative f32.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod batch_fixtures;

use batch_fixtures::{erase_cases, mix_cases, worst};
use gm_cuda::{DType, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_transforms::{
    BatchMix, BatchOpsKernel, Erase, ErasingValue, Layout, OutputSpec, RandomErasing, erase_batch,
    mix_batch,
};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

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

fn shape(n: usize, s: &OutputSpec) -> Vec<usize> {
    let (h, w, c) = (s.height as usize, s.width as usize, s.channels());
    match s.layout {
        Layout::Chw => vec![n, c, h, w],
        Layout::Hwc => vec![n, h, w, c],
    }
}

fn upload(pool: &DevicePool, stream: &Stream, n: usize, spec: &OutputSpec, bytes: &[u8]) -> Tensor {
    let t = Tensor::empty(pool, stream, &shape(n, spec), spec.dtype).unwrap();
    stream
        .upload(bytes, &mut View(t.data_ptr(), bytes.len()), 0)
        .unwrap();
    t
}

/// Random elements of `dtype`: bytes for u8, values in -3..3 for floats.
fn random_batch(rng: &mut StdRng, n: usize, spec: &OutputSpec) -> Vec<u8> {
    let elems = n * spec.image_bytes() / spec.dtype.size();
    let mut out = Vec::with_capacity(n * spec.image_bytes());
    for _ in 0..elems {
        let v: f32 = rng.random_range(-3.0..3.0);
        match spec.dtype {
            DType::U8 => out.push(rng.next_u32() as u8),
            DType::U16 => out.extend((rng.next_u32() as u16).to_le_bytes()),
            DType::F16 => out.extend(half::f16::from_f32(v).to_le_bytes()),
            DType::BF16 => out.extend(half::bf16::from_f32(v).to_le_bytes()),
            DType::F32 => out.extend(v.to_le_bytes()),
        }
    }
    out
}

fn random_spec(rng: &mut StdRng) -> OutputSpec {
    let dtype = [DType::U8, DType::F16, DType::BF16, DType::F32][rng.random_range(0..4)];
    let mut s = OutputSpec::normalized(
        rng.random_range(1..=131),
        rng.random_range(1..=77),
        dtype,
        [0.0; 3],
        [1.0; 3],
    );
    s.layout = if rng.random_bool(0.5) {
        Layout::Chw
    } else {
        Layout::Hwc
    };
    s.grey = rng.random_bool(0.2);
    s
}

#[test]
fn batch_ops_kernels_match_their_cpu_twins_on_random_batches() {
    let device = gpu_test_device!("batch_ops_kernels_match_their_cpu_twins_on_random_batches");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("batch ops test"));
    let mut kernel = BatchOpsKernel::new(&device).unwrap();
    for round in 0..80 {
        let spec = random_spec(&mut rng);
        let n = rng.random_range(1..=6);
        let host = random_batch(&mut rng, n, &spec);
        let value = match rng.random_range(0..3) {
            0 => ErasingValue::Random,
            1 if !spec.grey => ErasingValue::PerChannel([-1.5, 0.25, 200.7]),
            _ => ErasingValue::Number(rng.random_range(-2.0..300.0)),
        };
        let erasing = RandomErasing::new(0.7, (0.02, 0.6), (0.3, 3.3), value).unwrap();
        let erases: Vec<Option<Erase>> = (0..n)
            .map(|k| {
                erasing
                    .draw(&spec, &mut RandomErasing::rng(seed, round, k as u64))
                    .unwrap()
            })
            .collect();
        let mixing = BatchMix::new(Some(0.4), Some(1.0), 4).unwrap();
        let mix = mixing.draw(spec.width, spec.height, &mut BatchMix::rng(seed, round, 0));
        let t = upload(&pool, &stream, n, &spec, &host);
        kernel.erase(&stream, &spec, &t, &erases).unwrap();
        kernel.mix(&stream, &spec, &t, n, &mix).unwrap();
        let got = t.to_host_bytes(&stream).unwrap();
        let mut want = host.clone();
        erase_batch(&mut want, &spec, &erases);
        mix_batch(&mut want, n, &spec, &mix);
        let d = worst(spec.dtype, &got, &want);
        assert!(
            d <= 1.0,
            "round {round}: {n} x {:?} {}x{} {:?} grey {}: {erases:?} {mix:?}: difference {d}",
            spec.dtype,
            spec.width,
            spec.height,
            spec.layout,
            spec.grey
        );
    }
}

#[test]
fn batch_ops_kernels_match_torchvision() {
    let device = gpu_test_device!("batch_ops_kernels_match_torchvision");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("batch ops refs"));
    let mut kernel = BatchOpsKernel::new(&device).unwrap();
    for c in erase_cases() {
        let t = upload(&pool, &stream, 1, &c.spec, &c.input);
        kernel
            .erase(&stream, &c.spec, &t, &[Some(c.erase)])
            .unwrap();
        let d = worst(
            c.spec.dtype,
            &t.to_host_bytes(&stream).unwrap(),
            &c.expected,
        );
        assert!(d <= 1.0, "{}: difference {d}", c.name);
    }
    for c in mix_cases() {
        let t = upload(&pool, &stream, c.n, &c.spec, &c.input);
        kernel.mix(&stream, &c.spec, &t, c.n, &c.mix()).unwrap();
        let d = worst(
            c.spec.dtype,
            &t.to_host_bytes(&stream).unwrap(),
            &c.expected,
        );
        assert!(d <= 1.0, "{}: difference {d}", c.name);
    }
}

#[test]
fn batch_ops_refuse_rectangles_and_tensors_that_do_not_fit() {
    let device = gpu_test_device!("batch_ops_refuse_rectangles_and_tensors_that_do_not_fit");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("batch ops errors"));
    let mut kernel = BatchOpsKernel::new(&device).unwrap();
    let spec = OutputSpec::normalized(8, 8, DType::F32, [0.0; 3], [1.0; 3]);
    let t = Tensor::empty(&pool, &stream, &[2, 3, 8, 8], DType::F32).unwrap();
    let outside = Erase {
        top: 4,
        left: 0,
        height: 5,
        width: 2,
        fill: gm_transforms::EraseFill::Value([0.0; 3]),
    };
    assert!(
        kernel
            .erase(&stream, &spec, &t, &[None, Some(outside)])
            .is_err()
    );
    assert!(
        kernel
            .erase(&stream, &spec, &t, &[None, None, None])
            .is_err()
    );
    let bad_box = gm_transforms::Mix {
        lambda: 0.5,
        cut: Some([2, 2, 9, 3]),
    };
    assert!(kernel.mix(&stream, &spec, &t, 2, &bad_box).is_err());
    let mut u8_spec = spec;
    u8_spec.dtype = DType::U8;
    let mix = gm_transforms::Mix {
        lambda: 0.5,
        cut: None,
    };
    assert!(kernel.mix(&stream, &u8_spec, &t, 2, &mix).is_err());
}
