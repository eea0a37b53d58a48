//! The batch operations after the fused kernel on the timm-style batch of issue 23: 256 images
//! of 224x224 normalized f16 CHW. RandomErasing (p 0.25, torchvision's scale and ratio; a
//! constant and "random" noise), MixUp (a read and write of the whole batch) and CutMix (of
//! the drawn box only). Reports the median time per batch (device events, 20 runs after
//! warm-up), the bytes each must move and that as a share of the device's copy bandwidth
//! measured in the same run, as JSON lines like benches/fused.rs.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use gm_cuda::{DType, Device, DeviceBuffer, DevicePool, Event, PoolConfig, Stream, Tensor};
use gm_transforms::{
    BatchMix, BatchOpsKernel, Erase, ErasingValue, Mix, OutputSpec, RandomErasing,
};

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
        b.synchronize().unwrap();
        ms.push(a.elapsed_ms(&b).unwrap());
    }
    median(ms)
}

fn report(workload: &str, ms: f32, bytes: f64, copy_gbs: f64) {
    let gbs = bytes / (f64::from(ms) * 1e-3) / 1e9;
    println!(
        "{{\"workload\":\"{workload}\",\"ms\":{ms:.4},\"bytes\":{bytes:.0},\"gb_per_s\":{gbs:.0},\"of_copy_bandwidth\":{:.2}}}",
        gbs / copy_gbs
    );
}

fn main() {
    let device = Device::new(0).unwrap();
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("bench"));
    let mut kernel = BatchOpsKernel::new(&device).unwrap();

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
    let elem = spec.dtype.size() as f64;
    for (name, value) in [
        ("0", ErasingValue::Number(0.0)),
        ("random", ErasingValue::Random),
    ] {
        let erasing = RandomErasing::new(0.25, (0.02, 0.33), (0.3, 3.3), value).unwrap();
        let erases: Vec<Option<Erase>> = (0..batch as u64)
            .map(|k| {
                erasing
                    .draw(&spec, &mut RandomErasing::rng(1, 0, k))
                    .unwrap()
            })
            .collect();
        let written: f64 = erases
            .iter()
            .flatten()
            .map(|e| f64::from(e.width * e.height) * 3.0 * elem)
            .sum();
        let ms = time(&stream, &device, 20, || {
            kernel.erase(&stream, &spec, &out, &erases).unwrap()
        });
        report(
            &format!("256 x 224x224 f16 RandomErasing(0.25, value={name})"),
            ms,
            written,
            copy_gbs,
        );
    }
    let whole = (batch * spec.image_bytes()) as f64 * 2.0;
    let mixup = Mix {
        lambda: 0.3,
        cut: None,
    };
    let ms = time(&stream, &device, 20, || {
        kernel.mix(&stream, &spec, &out, batch, &mixup).unwrap()
    });
    report("256 x 224x224 f16 MixUp", ms, whole, copy_gbs);
    let cutmix = BatchMix::new(None, Some(1.0), 1000).unwrap();
    // A box of about half the image: lambda's mean under Beta(1, 1).
    let mix = (0..64u64)
        .map(|b| cutmix.draw(224, 224, &mut BatchMix::rng(1, 0, b)))
        .find(|m| (0.4..0.6).contains(&m.lambda))
        .unwrap_or(Mix {
            lambda: 0.5,
            cut: Some([56, 30, 214, 188]),
        });
    let moved = whole * (1.0 - f64::from(mix.lambda));
    let ms = time(&stream, &device, 20, || {
        kernel.mix(&stream, &spec, &out, batch, &mix).unwrap()
    });
    report(
        &format!("256 x 224x224 f16 CutMix (box {:?})", mix.cut),
        ms,
        moved,
        copy_gbs,
    );
}
