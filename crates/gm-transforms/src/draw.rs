//! Continuous distributions drawn from a [`SampleRng`]: normal, gamma and beta, for
//! MixUp/CutMix's mixing weight. Written here rather than taken from `rand_distr` so that
//! every draw comes from the project's generator (seeded by seed, epoch, batch) with a fixed
//! number of calls per algorithm step, the same in every build.

use crate::plan::SampleRng;

/// A standard normal draw (Marsaglia's polar method; the second value is thrown away so
/// that one call is one draw, whatever happened before).
pub fn normal(rng: &mut SampleRng) -> f64 {
    loop {
        let u = rng.uniform(-1.0, 1.0);
        let v = rng.uniform(-1.0, 1.0);
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * s.ln() / s).sqrt();
        }
    }
}

/// A Gamma(`shape`, 1) draw, `shape > 0` (Marsaglia and Tsang, "A simple method for
/// generating gamma variables", 2000; for `shape < 1`, Gamma(shape + 1) * U^(1/shape)).
/// Returns 0 for a shape that is not positive and finite.
pub fn gamma(rng: &mut SampleRng, shape: f64) -> f64 {
    if !(shape > 0.0 && shape.is_finite()) {
        return 0.0;
    }
    if shape < 1.0 {
        // U in (0, 1]: 1 - [0, 1).
        let u = 1.0 - rng.uniform(0.0, 1.0);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = 1.0 - rng.uniform(0.0, 1.0);
        let x2 = x * x;
        // The squeeze accepts ~98% without a logarithm.
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A Beta(`a`, `b`) draw as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b). With both gammas
/// 0 (underflow at tiny shapes) it is 0 or 1 with even odds, the limit of Beta(a, a) as a
/// goes to 0.
pub fn beta(rng: &mut SampleRng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    if x + y > 0.0 {
        x / (x + y)
    } else if rng.bernoulli(0.5) {
        1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        (mean, var)
    }

    #[test]
    fn normal_and_gamma_have_their_moments() {
        let mut rng = SampleRng::new(1, 2, 3);
        let z: Vec<f64> = (0..200_000).map(|_| normal(&mut rng)).collect();
        let (m, v) = moments(&z);
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.015, "normal {m} {v}");
        for shape in [0.2, 0.7, 1.0, 2.5, 9.0] {
            let g: Vec<f64> = (0..200_000).map(|_| gamma(&mut rng, shape)).collect();
            let (m, v) = moments(&g);
            // Gamma(k, 1): mean k, variance k.
            assert!(
                (m - shape).abs() < 0.02 * shape.max(1.0),
                "gamma {shape}: mean {m}"
            );
            assert!(
                (v - shape).abs() < 0.05 * shape.max(1.0),
                "gamma {shape}: var {v}"
            );
        }
    }

    #[test]
    fn bad_shapes_give_zero_not_a_hang() {
        let mut rng = SampleRng::new(0, 0, 0);
        assert_eq!(gamma(&mut rng, 0.0), 0.0);
        assert_eq!(gamma(&mut rng, f64::NAN), 0.0);
        let b = beta(&mut rng, 0.0, 0.0);
        assert!(b == 0.0 || b == 1.0);
    }
}
