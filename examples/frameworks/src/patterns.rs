//! A seeded ImageFolder of striped and checkered JPEGs in four classes: real JPEG files a
//! small CNN separates within a few hundred steps, made anywhere without downloads.

use std::path::Path;

use image::codecs::jpeg::JpegEncoder;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// The class folders, in ImageFolder (sorted) order.
pub const CLASSES: [&str; 4] = ["0_horizontal", "1_vertical", "2_diagonal", "3_checkered"];

/// Writes `count` JPEGs of `size`x`size` into `dir/<class>/NNNNN.jpg`, classes in turn.
/// The same seed writes the same files.
pub fn write_dataset(dir: &Path, count: usize, size: u32, seed: u64) -> anyhow::Result<()> {
    for class in CLASSES {
        std::fs::create_dir_all(dir.join(class))?;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        let jobs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> anyhow::Result<()> {
                    for i in (t..count).step_by(threads) {
                        let class = i % CLASSES.len();
                        let jpeg =
                            pattern_jpeg(class, size, seed ^ (i as u64).wrapping_mul(0x9E37))?;
                        std::fs::write(dir.join(CLASSES[class]).join(format!("{i:05}.jpg")), jpeg)?;
                    }
                    Ok(())
                })
            })
            .collect();
        jobs.into_iter().try_for_each(|j| {
            j.join()
                .map_err(|_| anyhow::anyhow!("a writer thread failed"))?
        })
    })
}

/// One image of `class`: two random colours in stripes or checks of a random period and
/// phase, plus noise, JPEG-encoded at quality 90.
pub fn pattern_jpeg(class: usize, size: u32, seed: u64) -> anyhow::Result<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let period = rng.random_range(8..32u32);
    let phase = rng.random_range(0..period);
    let a: [u8; 3] = rng.random();
    let b: [u8; 3] = rng.random();
    let mut rgb = Vec::with_capacity((size * size * 3) as usize);
    for y in 0..size {
        for x in 0..size {
            let band = |v: u32| ((v + phase) / (period / 2).max(1)).is_multiple_of(2);
            let on = match class {
                0 => band(y),
                1 => band(x),
                2 => band(x + y),
                _ => band(x) ^ band(y),
            };
            let c = if on { a } else { b };
            for ch in c {
                let noise = rng.random_range(-12i16..=12);
                rgb.push((ch as i16 + noise).clamp(0, 255) as u8);
            }
        }
    }
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, 90).encode(
        &rgb,
        size,
        size,
        image::ExtendedColorType::Rgb8,
    )?;
    Ok(out)
}
