//! COCO outlines rasterized as a host worker rasterizes them (issue 42): `gm-loader--coco_masks
//! [ROUNDS]` makes the detection bench's kind of objects (3-8 twelve-point ellipses a photo, 10-60%
//! of its width and height, on 500x375, 375x500, 500x333 and 640x480 canvases; seeded), runs
//! `polygon_mask` and `Rle::union` over every object of 240 images `ROUNDS` times (default 3),
//! and prints one JSON line per round: images, objects, µs an image and an object.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use gm_loader::coco::{Rle, polygon_mask};

/// A small seeded generator (SplitMix64), so that every run rasterizes the same objects.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// The next image's canvas and its objects' outlines (x0, y0, x1, y1, ... each).
fn image(rng: &mut Seeded) -> ((u32, u32), Vec<Vec<f64>>) {
    let sizes = [(500, 375), (375, 500), (500, 333), (640, 480)];
    let (w, h) = sizes[(rng.next() * 4.0) as usize % 4];
    let objects = 3 + (rng.next() * 6.0) as usize % 6;
    let outlines = (0..objects)
        .map(|_| {
            let (bw, bh) = (
                rng.range(0.1, 0.6) * f64::from(w),
                rng.range(0.1, 0.6) * f64::from(h),
            );
            let (x, y) = (
                rng.range(0.0, f64::from(w) - bw),
                rng.range(0.0, f64::from(h) - bh),
            );
            (0..12)
                .flat_map(|k| {
                    let t = 2.0 * std::f64::consts::PI * f64::from(k) / 12.0;
                    [
                        x + bw / 2.0 * (1.0 + t.cos()),
                        y + bh / 2.0 * (1.0 + t.sin()),
                    ]
                })
                .collect()
        })
        .collect();
    ((w, h), outlines)
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(3, |v| v.parse().expect("a count"));
    let mut rng = Seeded(42);
    let images: Vec<_> = (0..240).map(|_| image(&mut rng)).collect();
    let objects: usize = images.iter().map(|(_, o)| o.len()).sum();
    for round in 0..rounds {
        let t = Instant::now();
        let mut area = 0u64;
        for ((w, h), outlines) in &images {
            for xy in outlines {
                let rle = polygon_mask(xy, *h, *w).unwrap();
                area += Rle::union(&[rle]).unwrap().map_or(0, |r| r.area());
            }
        }
        let us = t.elapsed().as_secs_f64() * 1e6;
        println!(
            "{{\"round\": {round}, \"images\": {}, \"objects\": {objects}, \"area\": {area}, \"us_per_image\": {:.1}, \"us_per_object\": {:.2}}}",
            images.len(),
            us / images.len() as f64,
            us / objects as f64
        );
    }
}
