//! Plans a training chain (random-resized crop, flip, normalize, f16) for a generated image
//! and runs it through the CPU twin of the fused kernel: the same plan the GPU kernel takes.
//!
//! `cargo run -p gm-transforms --example cpu_chain`
#![allow(clippy::print_stdout)] // an example reports on stdout

use gm_cuda::DType;
use gm_transforms::cpu::{HostImage, fused};
use gm_transforms::{
    Compose, HorizontalFlip, Layout, Normalize, RandomResizedCrop, SampleRng, ToDtype, Transform,
};

fn main() -> anyhow::Result<()> {
    // A 500x375 RGB gradient stands in for a decoded photo.
    let (width, height) = (500u32, 375u32);
    let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
    for y in 0..height {
        for x in 0..width {
            pixels.extend([(x * 255 / width) as u8, (y * 255 / height) as u8, 128]);
        }
    }
    let steps: Vec<Box<dyn Transform>> = vec![
        Box::new(RandomResizedCrop::new(224, 224)),
        Box::new(HorizontalFlip(0.5)),
        Box::new(Normalize::IMAGENET),
        Box::new(ToDtype(DType::F32, Layout::Chw)),
    ];
    let chain = Compose(steps);
    for index in 0..3 {
        // Each sample's randomness comes from (seed, epoch, index) alone.
        let mut rng = SampleRng::new(7, 0, index);
        let (op, spec) = chain.plan_image(width, height, &mut rng)?;
        let mut out = vec![0u8; spec.image_bytes()];
        fused(
            &HostImage::rgb8(&pixels, width, height),
            &op,
            &spec,
            &mut out,
        );
        let values: Vec<f32> = out
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let mean = values.iter().sum::<f32>() / values.len() as f32;
        println!(
            "sample {index}: crop {:?} -> {}x{} {:?} {:?}, mean {mean:.3}",
            op.crop, spec.width, spec.height, spec.dtype, spec.layout
        );
    }
    Ok(())
}
