//! `gm jpeg`: decode images on the GPU (or the CPU) and write PNGs to look at.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use gm_codec::jpeg::{
    BackendChoice, ChromaUpsampling, DecodePath, DecoderOptions, EncodedImage, ImageDecoder,
    ImageError, SourceFormat, Truncated, decode_host_with, sniff,
};

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
    /// JPEGs cut before their end marker: refuse (as PIL does), or decode what is there with
    /// the rest grey (as libjpeg-turbo does, with a warning).
    #[arg(long, default_value = "refuse")]
    truncated: Truncated,
}

/// One image as `gm jpeg` reports it.
struct Decoded {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
    /// The stored format (jpeg, png, ...).
    source: &'static str,
    /// The decoder that ran (hw, cuda, cpu).
    path: &'static str,
}

/// Runs `gm jpeg`: one batch, a line per image, PNGs under `--out`. Fails if any input failed.
///
/// `--backend cpu` needs no GPU; `auto` falls back to the CPU, with a note, on a machine
/// without one; `hw` and `cuda` need one.
pub fn run(args: &JpegArgs) -> Result<()> {
    let names: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
    let data: Vec<Vec<u8>> = args
        .files
        .iter()
        .map(|p| std::fs::read(p).with_context(|| format!("reading {}", p.display())))
        .collect::<Result<_>>()?;
    let results = match gpu_for(args.backend)? {
        Some(device) => decode_gpu(args, &device, &names, &data)?,
        None => decode_cpu(args, &names, &data),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut failed = 0;
    for (i, (path, result)) in args.files.iter().zip(results).enumerate() {
        match result {
            Ok(img) => {
                let stem = path.file_stem().map_or_else(
                    || format!("image-{i}"),
                    |s| s.to_string_lossy().into_owned(),
                );
                let out = args.out.join(format!("{stem}.png"));
                crate::frames::write_png(&out, &img.rgb, img.width as usize, img.height as usize)?;
                println!(
                    "{}: {}x{} {} via {} -> {}",
                    path.display(),
                    img.width,
                    img.height,
                    img.source,
                    img.path,
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

/// The GPU to decode on: none for the CPU backend, or for `auto` where there is no GPU.
fn gpu_for(backend: BackendChoice) -> Result<Option<gm_cuda::Device>> {
    if backend == BackendChoice::Cpu {
        return Ok(None);
    }
    match gm_cuda::Device::new(0) {
        Ok(device) => Ok(Some(device)),
        Err(e) if backend == BackendChoice::Auto && e.is_unavailable() => {
            eprintln!("gm jpeg: no CUDA device ({e}); decoding on the CPU");
            Ok(None)
        }
        Err(e) => Err(e).context(
            "gm jpeg needs a CUDA device for --backend hw and cuda (--backend cpu decodes \
             without one)",
        ),
    }
}

fn decode_gpu(
    args: &JpegArgs,
    device: &gm_cuda::Device,
    names: &[String],
    data: &[Vec<u8>],
) -> Result<Vec<Result<Decoded, ImageError>>> {
    let options = DecoderOptions {
        backend: args.backend,
        apply_orientation: !args.no_orientation,
        chroma: args.chroma,
        truncated: args.truncated,
        ..DecoderOptions::default()
    };
    let mut decoder = ImageDecoder::new(device, options)?;
    let inputs: Vec<EncodedImage<'_>> = names
        .iter()
        .zip(data)
        .map(|(name, data)| EncodedImage { name, data })
        .collect();
    let batch = decoder.decode(&inputs)?;
    let mut out = Vec::with_capacity(inputs.len());
    for (i, result) in batch.images.iter().enumerate() {
        out.push(match result {
            Ok(img) => Ok(Decoded {
                width: img.width,
                height: img.height,
                rgb: batch.download(i)?.context("decoded image without pixels")?,
                source: img.source.name(),
                path: img.path.name(),
            }),
            Err(e) => Err(e.clone()),
        });
    }
    Ok(out)
}

/// The CPU decoder with the batched decoder's checks (`decode_host`), one image at a time.
fn decode_cpu(
    args: &JpegArgs,
    names: &[String],
    data: &[Vec<u8>],
) -> Vec<Result<Decoded, ImageError>> {
    let options = DecoderOptions {
        apply_orientation: !args.no_orientation,
        truncated: args.truncated,
        ..DecoderOptions::default()
    };
    names
        .iter()
        .zip(data)
        .map(|(name, data)| {
            let source = sniff(data).map_or("unknown", SourceFormat::name);
            decode_host_with(data, &options)
                .map(|img| Decoded {
                    width: img.width,
                    height: img.height,
                    rgb: img.rgb,
                    source,
                    path: DecodePath::Cpu.name(),
                })
                .map_err(|kind| ImageError {
                    input: name.clone(),
                    kind,
                })
        })
        .collect()
}
