//! `gm jpeg`: decode images on the GPU (or the CPU) and write PNGs to look at.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use gm_codec::jpeg::{BackendChoice, ChromaUpsampling, DecoderOptions, EncodedImage, ImageDecoder};

/// Arguments of `gm jpeg`.
#[derive(Args)]
pub struct JpegArgs {
    /// Images to decode (JPEG, and PNG/BMP/WebP/TIFF on the CPU).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Folder for the PNGs (one per input, named after it).
    #[arg(long)]
    out: PathBuf,
    /// Decoders to use: auto (engines, CUDA backend, CPU as each image needs), hw, cuda, cpu.
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// Keep images as stored instead of turning them upright (EXIF orientation).
    #[arg(long)]
    no_orientation: bool,
    /// Subsampled chroma on the GPU: smooth (interpolated, as CPU decoders do) or replicate
    /// (nvJPEG's own conversion).
    #[arg(long, default_value = "smooth")]
    chroma: ChromaUpsampling,
}

/// Runs `gm jpeg`: one batch, a line per image, PNGs under `--out`. Fails if any input failed.
pub fn run(args: &JpegArgs) -> Result<()> {
    let device = gm_cuda::Device::new(0).context("gm jpeg needs a CUDA device")?;
    let options = DecoderOptions {
        backend: args.backend,
        apply_orientation: !args.no_orientation,
        chroma: args.chroma,
        ..DecoderOptions::default()
    };
    let mut decoder = ImageDecoder::new(&device, options)?;
    let names: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
    let data: Vec<Vec<u8>> = args
        .files
        .iter()
        .map(|p| std::fs::read(p).with_context(|| format!("reading {}", p.display())))
        .collect::<Result<_>>()?;
    let inputs: Vec<EncodedImage<'_>> = names
        .iter()
        .zip(&data)
        .map(|(name, data)| EncodedImage { name, data })
        .collect();
    let batch = decoder.decode(&inputs)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut failed = 0;
    for (i, path) in args.files.iter().enumerate() {
        match &batch.images[i] {
            Ok(img) => {
                let rgb = batch.download(i)?.context("decoded image without pixels")?;
                let stem = path.file_stem().map_or_else(
                    || format!("image-{i}"),
                    |s| s.to_string_lossy().into_owned(),
                );
                let out = args.out.join(format!("{stem}.png"));
                crate::frames::write_png(&out, &rgb, img.width as usize, img.height as usize)?;
                println!(
                    "{}: {}x{} {} via {} -> {}",
                    path.display(),
                    img.width,
                    img.height,
                    img.source.name(),
                    img.path.name(),
                    out.display()
                );
            }
            Err(e) => {
                failed += 1;
                println!("{e}");
            }
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} images could not be decoded",
            args.files.len()
        );
    }
    Ok(())
}
