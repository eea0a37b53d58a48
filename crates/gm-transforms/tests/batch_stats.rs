//! The distributions of the drawn batch operations, with fixed seeds: MixUp/CutMix's lambda
//! follows Beta(alpha, alpha) (Kolmogorov-Smirnov against the closed-form CDFs of alpha 1 and
//! 1/2, moments for other alphas), RandomChoice picks each half the time, soft labels sum to
//! 1; RandomErasing's rectangles match torchvision's `make_params` statistics (committed by
//! make_batch_references.py from 20000 torchvision draws) within sampling error, `p` is the
//! erased share, and the "random" noise is standard normal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod batch_fixtures;

use gm_cuda::DType;
use gm_transforms::{BatchMix, EraseFill, ErasingValue, OutputSpec, RandomErasing, erase_noise};

const DRAWS: u64 = 20_000;

fn lambdas(mix: &BatchMix, seed: u64) -> Vec<f64> {
    (0..DRAWS)
        .map(|b| f64::from(mix.draw(224, 224, &mut BatchMix::rng(seed, 3, b)).lambda))
        .collect()
}

/// The Kolmogorov-Smirnov distance between the sample and `cdf`.
fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    (
        m,
        xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0),
    )
}

#[test]
fn mixup_lambda_follows_beta_alpha_alpha() {
    // 1.95 / sqrt(n): the 0.1% critical value of the one-sample KS test.
    let critical = 1.95 / (DRAWS as f64).sqrt();
    let uniform = lambdas(&BatchMix::new(Some(1.0), None, 10).unwrap(), 11);
    let d = ks(uniform, |x| x.clamp(0.0, 1.0));
    assert!(d < critical, "Beta(1, 1): KS {d} >= {critical}");
    // Beta(1/2, 1/2) is the arcsine distribution.
    let arcsine = lambdas(&BatchMix::new(Some(0.5), None, 10).unwrap(), 12);
    let d = ks(arcsine, |x| {
        2.0 / std::f64::consts::PI * x.clamp(0.0, 1.0).sqrt().asin()
    });
    assert!(d < critical, "Beta(1/2, 1/2): KS {d} >= {critical}");
    // A wrong alpha is caught: Beta(2, 2) is far from uniform.
    let wrong = lambdas(&BatchMix::new(Some(2.0), None, 10).unwrap(), 13);
    assert!(ks(wrong, |x| x.clamp(0.0, 1.0)) > 5.0 * critical);
    for alpha in [0.1, 0.2, 0.8, 2.0, 5.0] {
        let xs = lambdas(&BatchMix::new(Some(alpha), None, 10).unwrap(), 14);
        let (m, v) = moments(&xs);
        // Beta(a, a): mean 1/2, variance 1 / (4 (2a + 1)).
        let want_v = 1.0 / (4.0 * (2.0 * alpha + 1.0));
        let se_m = (want_v / DRAWS as f64).sqrt();
        assert!((m - 0.5).abs() < 4.0 * se_m, "alpha {alpha}: mean {m}");
        assert!(
            (v - want_v).abs() < 0.05 * want_v,
            "alpha {alpha}: variance {v} vs {want_v}"
        );
        assert!(xs.iter().all(|x| (0.0..=1.0).contains(x)));
    }
}

#[test]
fn cutmix_lambda_is_the_share_outside_the_box_and_choice_is_even() {
    let both = BatchMix::new(Some(0.8), Some(1.0), 5).unwrap();
    let (w, h) = (61u32, 37u32);
    let mut cut = 0u64;
    for b in 0..DRAWS {
        let mix = both.draw(w, h, &mut BatchMix::rng(5, 0, b));
        if let Some([x1, y1, x2, y2]) = mix.cut {
            cut += 1;
            assert!(x1 <= x2 && x2 <= w && y1 <= y2 && y2 <= h);
            let outside = 1.0 - f64::from((x2 - x1) * (y2 - y1)) / f64::from(w * h);
            assert!((f64::from(mix.lambda) - outside).abs() < 1e-6);
        }
        let labels = [0i64, 4, 2, 2, 1];
        for row in mix.soft_labels(&labels, 5).unwrap().chunks(5) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{row:?}");
        }
    }
    let share = cut as f64 / DRAWS as f64;
    assert!(
        (share - 0.5).abs() < 4.0 * (0.25 / DRAWS as f64).sqrt(),
        "CutMix share {share}"
    );
}

#[test]
fn mix_draws_are_deterministic_per_batch_and_differ_between_batches() {
    let mix = BatchMix::new(Some(1.0), Some(1.0), 3).unwrap();
    let a = mix.draw(32, 32, &mut BatchMix::rng(9, 2, 17));
    assert_eq!(a, mix.draw(32, 32, &mut BatchMix::rng(9, 2, 17)));
    let others: Vec<_> = (0..8)
        .map(|b| mix.draw(32, 32, &mut BatchMix::rng(9, 2, b)))
        .collect();
    assert!(others.iter().all(|o| *o != a));
}

fn spec(w: u32, h: u32) -> OutputSpec {
    OutputSpec::normalized(
        w,
        h,
        DType::F32,
        [0.485, 0.456, 0.406],
        [0.229, 0.224, 0.225],
    )
}

#[test]
fn erasing_rectangles_follow_torchvisions_draws() {
    let all = batch_fixtures::cases();
    let stats = all["erase_stats"].as_array().unwrap();
    assert_eq!(stats.len(), 3);
    for s in stats {
        let f = |k: &str| s[k].as_f64().unwrap();
        let pair = |k: &str| (s[k][0].as_f64().unwrap(), s[k][1].as_f64().unwrap());
        let (w, h) = (
            s["width"].as_u64().unwrap() as u32,
            s["height"].as_u64().unwrap() as u32,
        );
        let t = RandomErasing::new(1.0, pair("scale"), pair("ratio"), ErasingValue::Number(0.0))
            .unwrap();
        let sp = spec(w, h);
        let (mut areas, mut logr, mut cy, mut cx, mut none) = (vec![], vec![], vec![], vec![], 0);
        for k in 0..DRAWS {
            match t.draw(&sp, &mut RandomErasing::rng(77, 1, k)).unwrap() {
                None => none += 1,
                Some(e) => {
                    areas.push(f64::from(e.height * e.width) / f64::from(w * h));
                    logr.push((f64::from(e.height) / f64::from(e.width)).ln());
                    cy.push((f64::from(e.top) + f64::from(e.height) / 2.0) / f64::from(h));
                    cx.push((f64::from(e.left) + f64::from(e.width) / 2.0) / f64::from(w));
                    assert!(e.top + e.height <= h && e.left + e.width <= w);
                }
            }
        }
        let label = format!("{w}x{h}");
        let (am, av) = moments(&areas);
        let (rm, rv) = moments(&logr);
        assert!(
            (am - f("area_mean")).abs() < 0.005,
            "{label}: area mean {am} vs {}",
            f("area_mean")
        );
        assert!(
            (av.sqrt() - f("area_std")).abs() < 0.005,
            "{label}: area std {}",
            av.sqrt()
        );
        assert!(
            (rm - f("log_ratio_mean")).abs() < 0.03,
            "{label}: log ratio mean {rm}"
        );
        assert!(
            (rv.sqrt() - f("log_ratio_std")).abs() < 0.02,
            "{label}: log ratio std {}",
            rv.sqrt()
        );
        assert!(
            (moments(&cy).0 - f("centre_y_mean")).abs() < 0.01,
            "{label}: centre y"
        );
        assert!(
            (moments(&cx).0 - f("centre_x_mean")).abs() < 0.01,
            "{label}: centre x"
        );
        let none = f64::from(none) / DRAWS as f64;
        assert!(
            (none - f("none")).abs() < 0.002,
            "{label}: no rectangle {none}"
        );
        areas.sort_by(f64::total_cmp);
        for (k, q) in [0.1, 0.5, 0.9].into_iter().enumerate() {
            let ours = areas[(q * (areas.len() - 1) as f64) as usize];
            let theirs = s["area_q"][k].as_f64().unwrap();
            assert!(
                (ours - theirs).abs() < 0.01,
                "{label}: area quantile {q}: {ours} vs {theirs}"
            );
        }
    }
}

#[test]
fn erasing_p_is_the_share_of_erased_samples_and_noise_is_standard_normal() {
    let sp = spec(224, 224);
    for p in [0.0, 0.25, 0.5, 1.0] {
        let t = RandomErasing::new(p, (0.02, 0.33), (0.3, 3.3), ErasingValue::Random).unwrap();
        let erased = (0..DRAWS)
            .filter(|&k| {
                t.draw(&sp, &mut RandomErasing::rng(3, 0, k))
                    .unwrap()
                    .is_some()
            })
            .count() as f64
            / DRAWS as f64;
        let tol = 4.0 * (p * (1.0 - p) / DRAWS as f64).sqrt() + 1e-12;
        assert!((erased - p).abs() <= tol, "p {p}: erased {erased}");
    }
    let t = RandomErasing::new(1.0, (0.02, 0.33), (0.3, 3.3), ErasingValue::Random).unwrap();
    let e = t
        .draw(&sp, &mut RandomErasing::rng(3, 0, 0))
        .unwrap()
        .unwrap();
    let EraseFill::Noise(key) = e.fill else {
        panic!("{e:?}")
    };
    let z: Vec<f64> = (0..200_000)
        .map(|i| f64::from(erase_noise(key, i)))
        .collect();
    let (m, v) = moments(&z);
    assert!(
        m.abs() < 0.01 && (v - 1.0).abs() < 0.015,
        "noise mean {m} variance {v}"
    );
    let d = ks(z, |x| 0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2)));
    assert!(d < 1.95 / (200_000f64).sqrt(), "noise KS {d}");
}

/// erf with a fractional error below 1.2e-7 (the Chebyshev fit of Numerical Recipes'
/// `erfcc`; Abramowitz and Stegun 7.1.26 is too coarse for a KS test of 200k draws).
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { 1.0 - r } else { r - 1.0 }
}

#[test]
fn bad_arguments_are_errors() {
    assert!(RandomErasing::new(1.5, (0.02, 0.33), (0.3, 3.3), ErasingValue::Random).is_err());
    assert!(RandomErasing::new(0.5, (0.5, 0.2), (0.3, 3.3), ErasingValue::Random).is_err());
    assert!(RandomErasing::new(0.5, (0.02, 0.33), (0.0, 3.3), ErasingValue::Random).is_err());
    assert!(
        RandomErasing::new(
            0.5,
            (0.02, 0.33),
            (0.3, 3.3),
            ErasingValue::Number(f32::NAN)
        )
        .is_err()
    );
    let rgb = RandomErasing::new(
        1.0,
        (0.02, 0.33),
        (0.3, 3.3),
        ErasingValue::PerChannel([1.0, 2.0, 3.0]),
    )
    .unwrap();
    let mut grey = spec(16, 16);
    grey.grey = true;
    assert!(rgb.draw(&grey, &mut RandomErasing::rng(0, 0, 0)).is_err());
    assert!(BatchMix::new(None, None, 10).is_err());
    assert!(BatchMix::new(Some(0.0), None, 10).is_err());
    assert!(BatchMix::new(Some(1.0), None, 0).is_err());
}
