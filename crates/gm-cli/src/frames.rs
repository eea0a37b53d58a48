//! `gm frames`: decode chosen frames (NVDEC, or libavcodec on the CPU where NVDEC cannot or
//! there is no GPU) and write them as files.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use gm_codec::avcodec::CpuDecoder;
use gm_codec::nvdec::{DecodedFrame, DecoderSession, FrameStatus};
use gm_codec::{CodecError, DecoderChoice, Routing};
use gm_cuda::{DType, DeviceBuffer, Tensor};
use gm_demux::{BitstreamScan, IndexOptions, IndexingDemuxer, PacketSource, VideoIndex};
use gm_loader::{PackedFrame, kernel_orientation, surface_source};
use gm_transforms::{FusedKernel, FusedOp, Orientation, OutputSpec};

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
    /// yuv: ffmpeg's yuv420p / yuv420p10le bytes as stored (MD5-comparable with framemd5 of
    /// `-noautorotate`; a 4:2:2 or 4:4:4 stream decoded on the CPU keeps its own format, as
    /// `gm probe` names it); rgb: packed 8-bit RGB; png: an image to look at. RGB and PNG frames
    /// are turned upright as the track's display matrix says.
    #[arg(long, default_value = "yuv", value_parser = ["yuv", "rgb", "png"])]
    format: String,
    /// Keep RGB and PNG frames as stored, not turned by the display matrix (ffmpeg's
    /// `-noautorotate`).
    #[arg(long)]
    no_autorotate: bool,
    /// Which decoder: auto (NVDEC where it takes the stream, else the CPU; the CPU without a
    /// GPU), gpu (NVDEC or a clear refusal) or cpu (FFmpeg's libavcodec).
    #[arg(long, default_value = "auto")]
    decoder: DecoderChoice,
    #[command(flatten)]
    storage: crate::source::StorageArgs,
}

pub fn run(args: &FramesArgs) -> Result<()> {
    let device = match args.decoder {
        DecoderChoice::Cpu => None,
        DecoderChoice::Gpu => Some(gm_cuda::Device::new(0).context("--decoder gpu needs a GPU")?),
        DecoderChoice::Auto => match gm_cuda::Device::new(0) {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::info!("no GPU ({e}): decoding on the CPU");
                None
            }
        },
    };
    let opened = crate::source::open(&args.file, &args.storage.storage()?)?;
    let options = IndexOptions {
        scan: BitstreamScan::Full,
        ..Default::default()
    };
    let index = VideoIndex::from_source(opened.source.as_ref(), options)?;
    let shown = if args.no_autorotate {
        Orientation::STORED
    } else {
        kernel_orientation(index.orientation)
    };
    let demux = IndexingDemuxer::new(Arc::new(index), opened.source);
    let plan = demux.plan(&args.frames)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let Some(device) = device else {
        let (written, damaged) = cpu_frames(args, &demux, &plan, shown)?;
        return report(args, written, damaged, "cpu");
    };
    let mut session = DecoderSession::new(&device, None)?;
    session.set_routing(Routing {
        choice: args.decoder,
        cpu_threads: 0,
    });
    let route = session.route(demux.name(), demux.codec())?;
    let mut rgb = match args.format.as_str() {
        "yuv" => None,
        _ => Some(RgbFrames::new(&device, shown)?),
    };
    let mut written = Vec::new();
    let mut damaged = Vec::new();
    session.decode(&demux, &plan, &mut |f| {
        if f.status != FrameStatus::Ok {
            damaged.push(f.frame);
        }
        let (w, h) = shown.displayed_size(f.width, f.height);
        let (w, h) = (w as usize, h as usize);
        let name = |ext: &str| args.out.join(format!("{:06}.{ext}", f.frame));
        let consumer = |e: &dyn std::fmt::Display| CodecError::Consumer(e.to_string());
        match (args.format.as_str(), rgb.as_mut()) {
            ("rgb", Some(conv)) => {
                std::fs::write(name("rgb"), conv.convert(f)?).map_err(|e| consumer(&e))?
            }
            (_, Some(conv)) => {
                write_png(&name("png"), &conv.convert(f)?, w, h).map_err(|e| consumer(&e))?
            }
            _ => std::fs::write(name("yuv"), f.to_planar()?).map_err(|e| consumer(&e))?,
        }
        written.push(f.frame);
        Ok(())
    })?;
    report(args, written, damaged, &route.to_string())
}

fn report(
    args: &FramesArgs,
    mut written: Vec<u32>,
    damaged: Vec<u32>,
    decoder: &str,
) -> Result<()> {
    written.sort_unstable();
    written.dedup();
    println!(
        "{}: wrote {} frame(s) to {} as {} (decoder: {decoder})",
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

/// The frames decoded by libavcodec and converted by the kernels' CPU twin: (written,
/// damaged).
fn cpu_frames(
    args: &FramesArgs,
    demux: &IndexingDemuxer,
    plan: &gm_demux::DecodePlan,
    shown: Orientation,
) -> Result<(Vec<u32>, Vec<u32>)> {
    let mut decoder = CpuDecoder::new(0)?;
    let mut packed = PackedFrame::new();
    let (mut written, mut damaged) = (Vec::new(), Vec::new());
    decoder.decode(demux, plan, &mut |f| {
        if f.status != FrameStatus::Ok {
            damaged.push(f.frame);
        }
        let name = |ext: &str| args.out.join(format!("{:06}.{ext}", f.frame));
        let consumer = |e: &dyn std::fmt::Display| CodecError::Consumer(e.to_string());
        if args.format == "yuv" {
            std::fs::write(name("yuv"), f.to_planar()).map_err(|e| consumer(&e))?;
        } else {
            let image = packed.pack(f, shown)?;
            let (w, h) = image.displayed_size();
            let rgb = image.to_rgb8();
            if args.format == "rgb" {
                std::fs::write(name("rgb"), rgb).map_err(|e| consumer(&e))?;
            } else {
                write_png(&name("png"), &rgb, w as usize, h as usize).map_err(|e| consumer(&e))?;
            }
        }
        written.push(f.frame);
        Ok(())
    })?;
    Ok((written, damaged))
}

pub(crate) fn write_png(path: &std::path::Path, rgb: &[u8], w: usize, h: usize) -> Result<()> {
    let file = std::fs::File::create(path)?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w as u32, h as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(rgb)?;
    Ok(())
}

/// Frames to packed 8-bit RGB through gm-transforms' fused kernel, the conversion the loaders
/// use (the signalled matrix and range, 8- and 10-bit surfaces, the display orientation; its
/// CPU twin is `gm_transforms::cpu::fused`).
struct RgbFrames {
    kernel: FusedKernel,
    device: gm_cuda::Device,
    shown: Orientation,
}

impl RgbFrames {
    fn new(device: &gm_cuda::Device, shown: Orientation) -> Result<RgbFrames> {
        Ok(RgbFrames {
            kernel: FusedKernel::new(device)?,
            device: device.clone(),
            shown,
        })
    }

    /// The frame's RGB bytes on the host (waits for the frame's stream).
    fn convert(&mut self, f: &DecodedFrame<'_>) -> std::result::Result<Vec<u8>, CodecError> {
        let src = surface_source(f).oriented(self.shown);
        let (width, height) = src.displayed_size();
        let spec = OutputSpec::rgb8(width, height);
        let (w, h) = (width as usize, height as usize);
        let buffer = DeviceBuffer::alloc(&self.device, spec.image_bytes())?;
        let tensor = Tensor::new(buffer, &[1, h, w, 3], DType::U8)?;
        let op = FusedOp::full(width, height);
        self.kernel
            .run(f.stream, &[src], &[op], &spec, &tensor, 0)?;
        Ok(tensor.to_host_bytes(f.stream)?)
    }
}
