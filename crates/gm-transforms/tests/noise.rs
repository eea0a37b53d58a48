//! GaussianNoise's plan and CPU twin: the added values' distribution (mean, standard
//! deviation, clipping) with fixed seeds, per-sample determinism, and the chains refused.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_cuda::DType;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{
    Compose, GaussianBlur, GaussianNoise, HorizontalFlip, Layout, Normalize, OutputSpec,
    RandomInvert, SampleRng, ToDtype, noise_image,
};

/// torchvision's `ToDtype(float32, scale=True)`: values in 0..1.
const TO_UNIT: Normalize = Normalize {
    mean: [0.0; 3],
    std: [1.0; 3],
};

/// A flat image of `grey` through `chain`, then the noise twin: (before, after) as f32.
fn run(chain: &Compose, grey: u8, sample: u64) -> (Vec<f32>, Vec<f32>, OutputSpec) {
    let (w, h) = (64, 48);
    let (op, spec, post) = chain
        .plan_post(w, h, &mut SampleRng::new(3, 1, sample))
        .unwrap();
    let px = vec![grey; (w * h * 3) as usize];
    let mut out = vec![0u8; spec.image_bytes()];
    fused(&HostImage::rgb8(&px, w, h), &op, &spec, &mut out);
    let before = floats(&out);
    noise_image(&mut out, &spec, &post.noise.unwrap());
    (before, floats(&out), spec)
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn mean_std(d: &[f32]) -> (f64, f64) {
    let n = d.len() as f64;
    let m = d.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let v = d.iter().map(|&x| (f64::from(x) - m).powi(2)).sum::<f64>() / n;
    (m, v.sqrt())
}

fn chain(noise: GaussianNoise) -> Compose {
    Compose::new()
        .then(TO_UNIT)
        .then(ToDtype(DType::F32, Layout::Chw))
        .then(noise)
}

#[test]
fn added_noise_has_the_mean_and_sigma_asked_for() {
    for (mean, sigma, sample) in [(0.0, 0.1, 0), (0.2, 0.05, 1), (-0.1, 0.15, 2)] {
        let noise = GaussianNoise::new(mean, sigma, false).unwrap();
        let (before, after, _) = run(&chain(noise), 128, sample);
        let added: Vec<f32> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        let (m, s) = mean_std(&added);
        // 9216 values: the mean's standard error is sigma / 96.
        assert!(
            (m - f64::from(mean)).abs() < 4.0 * f64::from(sigma) / 96.0,
            "mean {m} for {mean}"
        );
        assert!(
            (s / f64::from(sigma) - 1.0).abs() < 0.03,
            "std {s} for {sigma}"
        );
        // Roughly normal: about 68% within one sigma.
        let within = added
            .iter()
            .filter(|&&x| (f64::from(x) - f64::from(mean)).abs() < f64::from(sigma))
            .count() as f64
            / added.len() as f64;
        assert!((within - 0.6827).abs() < 0.02, "{within} within one sigma");
    }
}

#[test]
fn clip_keeps_values_in_unit_range_and_deterministic_per_sample() {
    let noise = GaussianNoise::new(0.0, 0.5, true).unwrap();
    let (_, after, _) = run(&chain(noise), 240, 0);
    assert!(after.iter().all(|v| (0.0..=1.0).contains(v)));
    // A bright image: about half the values clip at 1.
    let ones = after.iter().filter(|&&v| v == 1.0).count() as f64 / after.len() as f64;
    assert!((0.4..0.6).contains(&ones), "{ones} clipped at 1");
    let again = run(&chain(noise), 240, 0).1;
    assert_eq!(after, again, "same seed, epoch and sample");
    let other = run(&chain(noise), 240, 1).1;
    assert_ne!(after, other, "another sample");
}

#[test]
fn plan_refuses_steps_after_the_noise_and_u8_outputs() {
    let plan = |c: Compose| {
        c.plan_post(32, 32, &mut SampleRng::new(0, 0, 0))
            .map(|p| p.2)
    };
    let n = GaussianNoise::default;
    assert!(plan(chain(n()).then(Normalize::IMAGENET)).is_err());
    assert!(plan(chain(n()).then(RandomInvert(1.0))).is_err());
    assert!(plan(chain(n()).then(GaussianBlur::square(3).unwrap())).is_err());
    assert!(plan(chain(n()).then(n())).is_err());
    assert!(plan(Compose::new().then(n())).is_err(), "u8 output");
    assert!(GaussianNoise::new(0.0, -0.1, true).is_err());
    assert!(GaussianNoise::new(f32::NAN, 0.1, true).is_err());
    let ok = plan(chain(n()).then(HorizontalFlip(0.5))).unwrap();
    assert!(ok.noise.is_some() && ok.blur.is_none());
    let err = chain(n())
        .plan_image(32, 32, &mut SampleRng::new(0, 0, 0))
        .unwrap_err();
    assert!(err.to_string().contains("plan_post"), "{err}");
}
