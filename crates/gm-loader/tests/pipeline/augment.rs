//! RandomErasing and MixUp/CutMix in the loader: on the CPU path the batch is exactly the
//! plain batch with the twins applied with the draws of (seed, epoch, sample) and (seed,
//! epoch, batch position), with soft labels beside the labels, deterministic and resumable;
//! on the GPU, the same draws and soft labels, images close to the CPU path's.

use std::sync::Arc;

use super::common::*;
use gm_cuda::{DType, gpu_test_device};
use gm_loader::{Batch, Dataset, InMemory, Loader, LoaderBuilder, LoaderError, Sampler};
use gm_transforms::{
    BatchMix, ErasingValue, Layout, OutputSpec, RandomErasing, erase_batch, mix_batch,
};

const SEED: u64 = 21;

fn classes() -> usize {
    demo_folder().classes().len()
}

fn erasing() -> RandomErasing {
    RandomErasing::new(0.6, (0.02, 0.33), (0.3, 3.3), ErasingValue::Random).unwrap()
}

fn mixing() -> BatchMix {
    BatchMix::new(Some(0.8), Some(1.0), classes()).unwrap()
}

fn builder(data: Arc<dyn Dataset>) -> LoaderBuilder {
    Loader::builder_shared(data)
        .cpu()
        .sampler(Sampler::shuffled(4))
        .seed(SEED)
        .batch_size(5)
        .workers(2)
        .transforms(train_chain(40))
}

/// A batch with its soft labels as f32.
fn seen_mixed(b: &Batch) -> (Seen, Option<Vec<f32>>) {
    let soft = b.soft_labels.as_ref().map(|t| {
        assert_eq!(t.shape, [b.len(), classes()]);
        assert_eq!(t.dtype, DType::F32);
        t.data
            .chunks(4)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    });
    (seen(b), soft)
}

#[test]
fn erasing_and_mixing_are_the_twins_with_the_seeded_draws() {
    let data: Arc<dyn Dataset> = Arc::new(photos(2));
    let plain = run_epoch(&mut builder(data.clone()).build().unwrap(), 1);
    let mut loader = builder(data)
        .random_erasing(erasing())
        .batch_mix(mixing())
        .build()
        .unwrap();
    let mixed: Vec<_> = loader.epoch(1).map(|b| seen_mixed(&b.unwrap())).collect();
    assert_eq!(plain.len(), mixed.len());
    let spec = OutputSpec {
        layout: Layout::Chw,
        ..OutputSpec::normalized(40, 40, DType::F16, [0.0; 3], [1.0; 3])
    };
    let mut erased = 0;
    for (p, (m, soft)) in plain.iter().zip(&mixed) {
        assert_eq!(
            (p.position, &p.indices, &p.labels),
            (m.position, &m.indices, &m.labels)
        );
        let erases: Vec<_> = p
            .indices
            .iter()
            .map(|&i| {
                erasing()
                    .draw(&spec, &mut RandomErasing::rng(SEED, 1, i as u64))
                    .unwrap()
            })
            .collect();
        erased += erases.iter().flatten().count();
        let mix = mixing().draw(40, 40, &mut BatchMix::rng(SEED, 1, p.position as u64));
        let mut want = p.bytes.clone();
        erase_batch(&mut want, &spec, &erases);
        mix_batch(&mut want, p.indices.len(), &spec, &mix);
        assert!(
            want == m.bytes,
            "batch {}: not the twins' result",
            p.position
        );
        assert!(p.bytes != m.bytes, "batch {}: unchanged", p.position);
        let soft = soft.as_ref().expect("soft labels");
        assert_eq!(*soft, mix.soft_labels(&p.labels, classes()).unwrap());
        for row in soft.chunks(classes()) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
    }
    assert!(erased > 0, "p = 0.6 erased nothing");
}

#[test]
fn mixed_batches_are_deterministic_and_resumable() {
    let build = || {
        builder(Arc::new(photos(2)))
            .random_erasing(erasing())
            .batch_mix(mixing())
            .build()
            .unwrap()
    };
    let mut a = build();
    let all: Vec<_> = a.epoch(2).map(|b| seen_mixed(&b.unwrap())).collect();
    let state = {
        let mut e = a.epoch(2);
        e.next().unwrap().unwrap();
        e.next().unwrap().unwrap();
        e.state()
    };
    let mut b = build();
    let rest: Vec<_> = b
        .resume(&state)
        .unwrap()
        .map(|b| seen_mixed(&b.unwrap()))
        .collect();
    assert_eq!(rest.len(), all.len() - 2);
    for (x, y) in all[2..].iter().zip(&rest) {
        assert!(
            x.0 == y.0 && x.1 == y.1,
            "batch {} differs after resume",
            x.0.position
        );
    }
    // Another epoch draws differently.
    let other: Vec<_> = build().epoch(3).map(|b| seen_mixed(&b.unwrap())).collect();
    assert!(other.iter().zip(&all).any(|(x, y)| x.1 != y.1));
}

#[test]
fn a_label_outside_the_classes_ends_the_epoch_naming_the_sample() {
    let folder = demo_folder();
    let mut buf = Vec::new();
    folder.read(0, &mut buf).unwrap();
    let data = InMemory::new([
        ("fine.jpg".to_string(), buf.clone(), 0),
        ("too-big.jpg".to_string(), buf, 3),
    ]);
    let mut loader = Loader::builder(data)
        .cpu()
        .batch_size(2)
        .transforms(eval_chain(16))
        .batch_mix(BatchMix::new(Some(1.0), None, 3).unwrap())
        .build()
        .unwrap();
    let err = loader.epoch(0).next().unwrap().unwrap_err();
    assert!(matches!(err, LoaderError::Plan(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("too-big.jpg") && msg.contains("label 3"),
        "{msg}"
    );
}

#[test]
fn gpu_erasing_and_mixing_follow_the_cpu_path() {
    let device = gpu_test_device!("gpu_erasing_and_mixing_follow_the_cpu_path");
    let data: Arc<dyn Dataset> = Arc::new(photos(2));
    let build = |gpu: bool| {
        let b = Loader::builder_shared(data.clone())
            .sampler(Sampler::shuffled(6))
            .seed(SEED)
            .batch_size(6)
            .transforms(eval_chain(64))
            .random_erasing(
                RandomErasing::new(0.8, (0.02, 0.33), (0.3, 3.3), ErasingValue::Number(0.0))
                    .unwrap(),
            )
            .batch_mix(mixing());
        let b = if gpu { b.device(&device) } else { b.cpu() };
        b.build().unwrap()
    };
    let collect =
        |mut l: Loader| -> Vec<_> { l.epoch(0).map(|b| seen_mixed(&b.unwrap())).collect() };
    let (g, c) = (collect(build(true)), collect(build(false)));
    assert_eq!(g.len(), c.len());
    let mut worst = f64::INFINITY;
    for ((gs, gsoft), (cs, csoft)) in g.iter().zip(&c) {
        assert_eq!(gs.indices, cs.indices);
        assert_eq!(gsoft, csoft, "batch {}: soft labels", gs.position);
        let mse = gs
            .bytes
            .iter()
            .zip(&cs.bytes)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
            .sum::<f64>()
            / gs.bytes.len() as f64;
        worst = worst.min(10.0 * (255.0f64 * 255.0 / mse.max(1e-9)).log10());
    }
    // As gpu_output_is_close_to_the_cpu_pipeline: the paths differ by decoder only.
    assert!(worst >= 35.0, "worst PSNR {worst:.1} dB");
}
