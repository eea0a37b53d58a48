//! `VideoDecoder` without a GPU: the frames decode on the CPU decoder (FFmpeg's libavcodec,
//! the bundled AV1 decoder) and become RGB through the fused kernel's CPU twin, or packed
//! NV12, in host memory: the same frames the GPU path gives, within the twin's rounding.

use gm_codec::CodecError;
use gm_codec::avcodec::{CpuDecoder, HostFrame};
use gm_codec::nvdec::FrameStatus;
use gm_loader::PackedFrame;
use gm_transforms::{Compose, Filter, Interp, Layout, OutputSpec, Resize, SampleRng, ToDtype};

use super::Output;
use super::sessions::Setup;

/// The CPU decoder of one `VideoDecoder` and its packing buffer, kept between requests.
pub(super) struct HostDecoder {
    decoder: CpuDecoder,
    packed: PackedFrame,
}

impl HostDecoder {
    pub(super) fn new(threads: usize) -> Result<HostDecoder, CodecError> {
        Ok(HostDecoder {
            decoder: CpuDecoder::new(threads)?,
            packed: PackedFrame::new(),
        })
    }

    /// Frames `frames` (any order, repeats allowed) as `(shape, bytes)` of a u8 tensor:
    /// `[N, 3, H, W]` RGB or `[N, H * 3 / 2, W]` NV12.
    pub(super) fn decode(
        &mut self,
        setup: &Setup,
        frames: &[usize],
    ) -> Result<(Vec<usize>, Vec<u8>), CodecError> {
        let (w, h) = (setup.width as usize, setup.height as usize);
        let (shape, per) = match setup.output {
            Output::Rgb => (vec![frames.len(), 3, h, w], 3 * w * h),
            Output::Nv12 => (vec![frames.len(), h * 3 / 2, w], w * (h * 3 / 2)),
            Output::P016 => (vec![frames.len(), h * 3 / 2, w], 2 * w * (h * 3 / 2)),
        };
        let mut out = vec![0u8; per * frames.len()];
        let chain = rgb_chain(setup.size);
        let plan = setup
            .demux
            .plan(frames)
            .map_err(|e| CodecError::Consumer(e.to_string()))?;
        let mut bad = Vec::new();
        let packed = &mut self.packed;
        self.decoder.decode(&*setup.demux, &plan, &mut |f| {
            if f.status != FrameStatus::Ok {
                bad.push(f.frame);
            }
            for &slot in f.slots {
                let dst = &mut out[slot as usize * per..(slot as usize + 1) * per];
                match setup.output {
                    Output::Rgb => rgb_into(packed, f, setup, &chain, dst)?,
                    Output::Nv12 | Output::P016 => planes_into(f, setup.output, w, h, dst)?,
                }
            }
            Ok(())
        })?;
        if !bad.is_empty() {
            return Err(CodecError::Consumer(format!(
                "the decoder reported errors in frames {bad:?}"
            )));
        }
        Ok((shape, out))
    }
}

/// The GPU path's chain: an exact resize when asked for, torchvision's antialiased filters,
/// u8 CHW.
pub(super) fn rgb_chain(size: Option<(u32, u32)>) -> Compose {
    match size {
        Some((h, w)) => Compose::new().then(Resize::Exact(w, h)),
        None => Compose::new(),
    }
    .then(Filter(Interp::Antialias))
    .then(ToDtype(gm_cuda::DType::U8, Layout::Chw))
}

/// Frame `f` as RGB into `dst`, through the fused kernel's twin.
fn rgb_into(
    packed: &mut PackedFrame,
    f: &HostFrame<'_>,
    setup: &Setup,
    chain: &Compose,
    dst: &mut [u8],
) -> Result<(), CodecError> {
    let image = packed.pack(f, setup.shown)?;
    let (w, h) = image.displayed_size();
    let (op, spec): (_, OutputSpec) = chain
        .plan_image(w, h, &mut SampleRng::new(0, 0, 0))
        .map_err(|e| CodecError::Consumer(e.to_string()))?;
    if (spec.width, spec.height) != (setup.width, setup.height) {
        return Err(CodecError::Consumer(format!(
            "frame {} decoded at {}x{}, the video's index says {}x{}",
            f.frame, f.width, f.height, setup.width, setup.height
        )));
    }
    gm_transforms::cpu::fused(&image, &op, &spec, dst);
    Ok(())
}

/// Frame `f`'s NV12 (8-bit) or P016 (above 8 bits, samples in the high bits) planes, tightly
/// packed (`w` x `h`, then `w` x `h / 2` interleaved chroma), into `dst`.
fn planes_into(
    f: &HostFrame<'_>,
    output: Output,
    w: usize,
    h: usize,
    dst: &mut [u8],
) -> Result<(), CodecError> {
    let (name, fits) = match output {
        Output::P016 => ("P016", f.bit_depth > 8),
        _ => ("NV12", f.bit_depth == 8),
    };
    if !fits || f.chroma_shifts() != (1, 1) {
        return Err(CodecError::Consumer(format!(
            "{} frames have no {name} form: ask for output=\"rgb\"",
            f.layout.pixel_format(f.bit_depth)
        )));
    }
    if (f.width as usize, f.height as usize) != (w, h) {
        return Err(CodecError::Consumer(format!(
            "frame {} decoded at {}x{}, the video's index says {w}x{h}",
            f.frame, f.width, f.height
        )));
    }
    let pitch = f.semi_planar_pitch();
    let mut packed = vec![0u8; f.semi_planar_bytes(pitch)];
    f.write_semi_planar(&mut packed, pitch)
        .ok_or_else(|| CodecError::Consumer(format!("frame {}: cannot pack", f.frame)))?;
    let row = w * if f.bit_depth > 8 { 2 } else { 1 };
    let chroma_at = pitch * h.next_multiple_of(2);
    for y in 0..h {
        dst[y * row..(y + 1) * row].copy_from_slice(&packed[y * pitch..y * pitch + row]);
    }
    for y in 0..h / 2 {
        let (from, to) = (chroma_at + y * pitch, row * h + y * row);
        dst[to..to + row].copy_from_slice(&packed[from..from + row]);
    }
    Ok(())
}
