//! Chains that torchvision runs as several resamplings or roundings of a uint8 image, cut into
//! passes ([`gm_transforms::PrePass`]) and run by the CPU twin, against torchvision
//! (tests/media/transforms/passes). A chain's first resampling (torch's fixed-point uint8
//! resize) is within a step of ours; the rest of the chain, run on torchvision's output of
//! that step, equals torchvision's result (within a step where it resamples bilinear, as a
//! single step does); and the whole chain's passes give what its two parts give one after
//! the other.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod passes_fixtures;

use gm_transforms::cpu::{HostImage, fused_passes};
use gm_transforms::{Compose, SampleRng};

/// The twin's output of `chain` on a `w` x `h` image: size, pixels, passes.
fn twin(chain: &Compose, input: &[u8], (w, h): (u32, u32)) -> (u32, u32, Vec<u8>, usize) {
    let (op, spec, passes) = chain.plan_post(w, h, &mut SampleRng::new(0, 0, 0)).unwrap();
    let mut out = vec![0u8; spec.image_bytes()];
    let src = HostImage::rgb8(input, w, h);
    fused_passes(&src, &passes.pre, &op, &spec, &mut out);
    (spec.width, spec.height, out, passes.pre.len() + 1)
}

/// The largest difference and how many values differ, after checking the sizes.
fn compare(
    name: &str,
    got: &(u32, u32, Vec<u8>, usize),
    want: &(u32, u32, Vec<u8>),
) -> (u8, usize) {
    assert_eq!((got.0, got.1), (want.0, want.1), "{name}: size");
    let worst = got.2.iter().zip(&want.2).map(|(a, b)| a.abs_diff(*b)).max();
    let differ = got.2.iter().zip(&want.2).filter(|(a, b)| a != b).count();
    (worst.unwrap_or(0), differ)
}

#[test]
fn twin_chains_of_several_passes_match_torchvision() {
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for c in passes_fixtures::chains() {
        let whole = twin(&c.chain, &c.input, (c.width, c.height));
        assert!(whole.3 >= 2, "{}: one pass", c.name);
        let (worst, differ) = compare(&c.name, &whole, &c.expected);
        report.push(format!(
            "{}: {} passes; whole chain: worst {worst}, {differ} of {} values differ",
            c.name,
            whole.3,
            whole.2.len()
        ));
        // The tail on torchvision's head (or on the source when the chain has no head).
        let (tail_input, (tw, th)) = match &c.head {
            Some((head, want)) => {
                let ours = twin(head, &c.input, (c.width, c.height));
                let (worst, differ) = compare(&c.name, &ours, want);
                report.push(format!("  head: worst {worst}, {differ} values differ"));
                if worst > 1 {
                    failures.push(format!("{}: head {worst}", c.name));
                }
                // The passes compose as the steps do: head then tail gives the whole chain.
                let stepwise = twin(&c.tail, &ours.2, (ours.0, ours.1));
                if stepwise.2 != whole.2 {
                    failures.push(format!("{}: whole chain != head then tail", c.name));
                }
                (want.2.clone(), (want.0, want.1))
            }
            None => (c.input.clone(), (c.width, c.height)),
        };
        let tail = twin(&c.tail, &tail_input, (tw, th));
        let (worst, differ) = compare(&c.name, &tail, &c.expected);
        report.push(format!(
            "  tail on torchvision's head: worst {worst}, {differ} values differ"
        ));
        if worst > u8::from(c.tail_bilinear) {
            failures.push(format!("{}: tail {worst}", c.name));
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{failures:?}\n{}", report.join("\n"));
    assert_eq!(report.iter().filter(|l| l.contains("passes;")).count(), 22);
}
