//! The mask-writing kernel (`kernels/mask_runs.cu`) against its CPU twin,
//! `MaskRuns::to_stack`: random masks of odd sizes (a 1-pixel plane, a 1-wide column, a
//! photo's size), spans that cross columns or reach past the plane, planes at unaligned
//! addresses in poisoned memory: equal, byte for byte, and nothing written outside them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gm_cuda::{DeviceBuffer, Stream, gpu_test_device};
use gm_transforms::targets::MaskRuns;
use gm_transforms::{MaskRunJob, MaskRunsKernel};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const POISON: u8 = 0xab;

/// `planes` random masks of `w` x `h`: blobs of a few columns, or noise, or nothing, or all.
fn random_runs(rng: &mut StdRng, w: u32, h: u32, planes: usize) -> MaskRuns {
    let mut runs = MaskRuns::new(w, h);
    let pixels = w * h;
    for _ in 0..planes {
        let mut spans = Vec::new();
        match rng.random_range(0..4) {
            0 => {}
            1 => spans.push([0, pixels + rng.random_range(0..3)]),
            _ => {
                let mut at = 0u32;
                while at < pixels {
                    at += rng.random_range(0..=h.max(2) * 2);
                    let len = rng.random_range(1..=h.max(1) * 3);
                    spans.push([at, len]);
                    at += len;
                }
            }
        }
        runs.push(spans);
    }
    runs
}

#[test]
fn masks_written_from_runs_equal_the_cpu_twin() {
    let device = gpu_test_device!("masks_written_from_runs_equal_the_cpu_twin");
    let stream = Stream::new(&device).unwrap();
    let mut kernel = MaskRunsKernel::new(&device).unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    let sizes = [
        (1, 1),
        (1, 300),
        (300, 1),
        (7, 5),
        (33, 17),
        (640, 480),
        (481, 333),
    ];
    for round in 0..6 {
        let cases: Vec<MaskRuns> = (0..12)
            .map(|_| {
                let (w, h) = sizes[rng.random_range(0..sizes.len())];
                let planes = rng.random_range(0..5);
                random_runs(&mut rng, w, h, planes)
            })
            .collect();
        // Spans first (4-aligned), then the planes one after another from an odd offset.
        let span_bytes: usize = cases.iter().map(MaskRuns::span_bytes).sum();
        let plane_bytes: usize = cases.iter().map(|r| r.to_stack().data.len()).sum();
        let planes_at = span_bytes + 1 + round;
        let total = planes_at + plane_bytes + 64;
        let mut host = vec![POISON; total];
        let mut at = 0;
        for r in &cases {
            r.write_spans(&mut host[at..]);
            at += r.span_bytes();
        }
        let mut buf = DeviceBuffer::alloc(&device, total).unwrap();
        stream.upload(&host, &mut buf, 0).unwrap();
        let base = buf.device_ptr();
        let (mut jobs, mut spans_at, mut dst_at) = (Vec::new(), 0, planes_at);
        for r in &cases {
            for &count in &r.counts {
                jobs.push(MaskRunJob {
                    spans: base.offset(spans_at),
                    dst: base.offset(dst_at),
                    count,
                    width: r.width,
                    height: r.height,
                });
                spans_at += 8 * count as usize;
                dst_at += (r.width * r.height) as usize;
            }
        }
        kernel.run(&stream, &jobs).unwrap();
        let mut got = vec![0u8; total];
        stream.download(&buf, 0, &mut got).unwrap();
        assert_eq!(
            got[..span_bytes],
            host[..span_bytes],
            "round {round}: spans kept"
        );
        assert!(got[span_bytes..planes_at].iter().all(|&b| b == POISON));
        let mut at = planes_at;
        for (k, r) in cases.iter().enumerate() {
            let want = r.to_stack().data;
            assert_eq!(
                got[at..at + want.len()],
                want[..],
                "round {round}, case {k}: {}x{}, {} masks",
                r.width,
                r.height,
                r.planes()
            );
            at += want.len();
        }
        assert!(
            got[at..].iter().all(|&b| b == POISON),
            "round {round}: past the planes"
        );
    }
}
