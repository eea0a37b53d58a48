//! Decodes a JPEG (or PNG, BMP, WebP, TIFF) on the CPU, and on the GPU as well when there is
//! one, and prints what came out.
//!
//! `cargo run -p gm-codec --example decode_jpeg [IMAGE]` (default: a fixture of `tests/media`)
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;

use gm_codec::jpeg::{DEFAULT_MAX_PIXELS, DecoderOptions, EncodedImage, ImageDecoder, decode_host};
use gm_cuda::Device;

fn main() -> anyhow::Result<()> {
    let path = std::env::args_os().nth(1).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/media/jpeg/baboon-201x151-420.jpg")
        },
        PathBuf::from,
    );
    let data = std::fs::read(&path)?;

    // The CPU path: the same checks and error kinds as the batched decoder's.
    let image = decode_host(&data, DEFAULT_MAX_PIXELS, true)?;
    println!(
        "CPU: {}x{} RGB, {} bytes",
        image.width,
        image.height,
        image.rgb.len()
    );

    // The GPU path: a batch of one, on whichever decoder its header picks.
    let device = match gm_cuda::available() {
        Ok(n) if n > 0 => Device::new(0)?,
        Ok(_) => return Ok(()),
        Err(e) => {
            println!("GPU: skipped ({e})");
            return Ok(());
        }
    };
    let mut decoder = ImageDecoder::new(&device, DecoderOptions::default())?;
    let name = path.display().to_string();
    let batch = decoder.decode(&[EncodedImage {
        name: &name,
        data: &data,
    }])?;
    match &batch.images[0] {
        Ok(img) => {
            let pixels = batch.download(0)?.unwrap_or_default();
            let diff = pixels
                .iter()
                .zip(&image.rgb)
                .map(|(a, b)| a.abs_diff(*b))
                .max()
                .unwrap_or(0);
            println!(
                "GPU: {}x{} on the {} path; largest difference from the CPU decode: {diff}",
                img.width,
                img.height,
                img.path.name()
            );
        }
        Err(e) => println!("GPU: {e}"),
    }
    Ok(())
}
