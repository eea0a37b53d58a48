//! `gm frames`: decode chosen frames on the GPU and write them as files.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use gm_codec::nvdec::{ColourInfo, DecoderSession, FrameStatus};
use gm_demux::{BitstreamScan, IndexOptions, IndexingDemuxer, VideoIndex};

/// Arguments of `gm frames`.
#[derive(clap::Args)]
pub struct FramesArgs {
    /// The video: a path or a URL (`s3://`, `gs://`, `az://`, `http(s)://`), read by ranged
    /// GETs of the index's boxes and the planned packets.
    file: PathBuf,
    /// Frame indices in presentation order, comma-separated (e.g. 0,17,250).
    #[arg(long, value_delimiter = ',', required = true)]
    frames: Vec<usize>,
    /// Output folder (created if needed).
    #[arg(long)]
    out: PathBuf,
    /// yuv: ffmpeg's yuv420p / yuv420p10le bytes (MD5-comparable with framemd5); rgb: packed
    /// 8-bit RGB; png: an image to look at.
    #[arg(long, default_value = "yuv", value_parser = ["yuv", "rgb", "png"])]
    format: String,
    #[command(flatten)]
    storage: crate::source::StorageArgs,
}

pub fn run(args: &FramesArgs) -> Result<()> {
    let device = gm_cuda::Device::new(0).context("gm frames decodes on the GPU")?;
    let opened = crate::source::open(&args.file, &args.storage.storage()?)?;
    let options = IndexOptions {
        scan: BitstreamScan::Full,
        ..Default::default()
    };
    let index = VideoIndex::from_source(opened.source.as_ref(), options)?;
    let demux = IndexingDemuxer::new(Arc::new(index), opened.source);
    let plan = demux.plan(&args.frames)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut session = DecoderSession::new(&device, None)?;
    let mut written = Vec::new();
    let mut damaged = Vec::new();
    session.decode(&demux, &plan, &mut |f| {
        if f.status != FrameStatus::Ok {
            damaged.push(f.frame);
        }
        let yuv = f.to_yuv420p()?;
        let (w, h) = (f.width as usize, f.height as usize);
        let name = |ext: &str| args.out.join(format!("{:06}.{ext}", f.frame));
        let io = |e: std::io::Error| gm_codec::CodecError::Consumer(e.to_string());
        match args.format.as_str() {
            "yuv" => std::fs::write(name("yuv"), &yuv).map_err(io)?,
            "rgb" => std::fs::write(
                name("rgb"),
                yuv420p_to_rgb(&yuv, w, h, f.bit_depth, f.colour),
            )
            .map_err(io)?,
            _ => write_png(
                &name("png"),
                &yuv420p_to_rgb(&yuv, w, h, f.bit_depth, f.colour),
                w,
                h,
            )
            .map_err(|e| gm_codec::CodecError::Consumer(e.to_string()))?,
        }
        written.push(f.frame);
        Ok(())
    })?;
    written.sort_unstable();
    written.dedup();
    println!(
        "{}: wrote {} frame(s) to {} as {}",
        args.file.display(),
        written.len(),
        args.out.display(),
        args.format
    );
    if !damaged.is_empty() {
        bail!("the decoder reported errors in frames {damaged:?}");
    }
    Ok(())
}

pub(crate) fn write_png(path: &std::path::Path, rgb: &[u8], w: usize, h: usize) -> Result<()> {
    let file = std::fs::File::create(path)?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w as u32, h as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(rgb)?;
    Ok(())
}

/// Planar 4:2:0 to packed 8-bit RGB on the CPU, BT.709 when the stream says so and BT.601
/// otherwise, limited or full range as signalled. For looking at frames; the GPU path is
/// gm-transforms'.
fn yuv420p_to_rgb(yuv: &[u8], w: usize, h: usize, bit_depth: u8, colour: ColourInfo) -> Vec<u8> {
    let bps = if bit_depth > 8 { 2 } else { 1 };
    let max = f32::from((1u16 << bit_depth) - 1);
    let sample = |i: usize| -> f32 {
        if bps == 2 {
            f32::from(u16::from_le_bytes([yuv[2 * i], yuv[2 * i + 1]])) / max
        } else {
            f32::from(yuv[i]) / 255.0
        }
    };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let (u0, v0) = (w * h, w * h + cw * ch);
    let (kr, kb) = if colour.matrix_coefficients == 1 {
        (0.2126, 0.0722)
    } else {
        (0.299, 0.114)
    };
    let kg = 1.0 - kr - kb;
    let mut out = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let c = (y / 2) * cw + x / 2;
            let (mut l, mut cb, mut cr) = (
                sample(y * w + x),
                sample(u0 + c) - 0.5,
                sample(v0 + c) - 0.5,
            );
            if !colour.full_range {
                l = (l - 16.0 / 255.0) * 255.0 / 219.0;
                cb *= 255.0 / 224.0;
                cr *= 255.0 / 224.0;
            }
            let r = l + 2.0 * (1.0 - kr) * cr;
            let b = l + 2.0 * (1.0 - kb) * cb;
            let g = (l - kr * r - kb * b) / kg;
            out.extend([r, g, b].map(|v| (v * 255.0).round().clamp(0.0, 255.0) as u8));
        }
    }
    out
}
