//! One session's share of a request: decode runs of a plan, each kept frame written into its
//! slots of the request's tensor, as RGB through the fused kernel or as packed NV12.

use gm_codec::CodecError;
use gm_codec::nvdec::{DecodedFrame, DecoderSession, FrameStatus, SurfaceFormat};
use gm_cuda::Tensor as GmTensor;
use gm_demux::DecodePlan;
use gm_loader::surface_source;
use gm_transforms::{
    Compose, Filter, FusedKernel, Interp, Layout, Orientation, OutputSpec, Resize, SampleRng,
    ToDtype,
};

use super::Output;
use super::sessions::Setup;

/// Decodes `plan` on `session`, writing every kept frame into its slots of `out` on the
/// session's stream.
pub(super) fn decode_group(
    session: &mut DecoderSession,
    kernel: &mut FusedKernel,
    setup: &Setup,
    plan: &DecodePlan,
    out: &GmTensor,
) -> Result<(), CodecError> {
    let chain = match setup.size {
        Some((h, w)) => Compose::new().then(Resize::Exact(w, h)),
        None => Compose::new(),
    }
    // Shrinking filters as torchvision's Resize does by default (antialias=True).
    .then(Filter(Interp::Antialias))
    .then(ToDtype(gm_cuda::DType::U8, Layout::Chw));
    let output = setup.output;
    let mut bad = Vec::new();
    session.decode(&*setup.demux, plan, &mut |f: &DecodedFrame<'_>| {
        if f.status != FrameStatus::Ok {
            bad.push(f.frame);
        }
        for &slot in f.slots {
            match output {
                Output::Rgb => rgb_into(kernel, f, setup.shown, &chain, out, slot as usize)?,
                Output::Nv12 | Output::P016 => planes_into(f, output, out, slot as usize)?,
            }
        }
        Ok(())
    })?;
    if !bad.is_empty() {
        return Err(CodecError::Consumer(format!(
            "the decoder reported errors in frames {bad:?}"
        )));
    }
    Ok(())
}

/// Frame `f` as RGB in slot `slot` of `out`, through the fused kernel.
fn rgb_into(
    kernel: &mut FusedKernel,
    f: &DecodedFrame<'_>,
    shown: Orientation,
    chain: &Compose,
    out: &GmTensor,
    slot: usize,
) -> Result<(), CodecError> {
    let src = surface_source(f).oriented(shown);
    let (w, h) = src.displayed_size();
    let (op, spec): (_, OutputSpec) = chain
        .plan_image(w, h, &mut SampleRng::new(0, 0, 0))
        .map_err(|e| CodecError::Consumer(e.to_string()))?;
    let (oh, ow) = (out.shape()[2], out.shape()[3]);
    if (spec.width as usize, spec.height as usize) != (ow, oh) {
        return Err(CodecError::Consumer(format!(
            "frame {} decoded at {}x{}, the video's index says {ow}x{oh}",
            f.frame, f.width, f.height
        )));
    }
    kernel.run(f.stream, &[src], &[op], &spec, out, slot)?;
    Ok(())
}

/// Frame `f`'s NV12 (8-bit) or P016 (above 8 bits) planes, tightly packed, in slot `slot` of
/// `out`.
fn planes_into(
    f: &DecodedFrame<'_>,
    output: Output,
    out: &GmTensor,
    slot: usize,
) -> Result<(), CodecError> {
    let (name, surface) = match output {
        Output::P016 => ("P016", SurfaceFormat::P016),
        _ => ("NV12", SurfaceFormat::Nv12),
    };
    if f.format != surface {
        return Err(CodecError::Consumer(format!(
            "{}-bit {:?} frames have no {name} form: ask for output=\"rgb\"",
            f.bit_depth, f.format
        )));
    }
    let (w, h) = (f.width as usize, f.height as usize);
    if out.shape()[1] != h * 3 / 2 || out.shape()[2] != w {
        return Err(CodecError::Consumer(format!(
            "frame {} decoded at {w}x{h}, the video's index says otherwise",
            f.frame
        )));
    }
    let row = w * f.format.bytes_per_sample();
    let dst = out.data_ptr().offset(slot * row * (h * 3 / 2));
    // SAFETY: the surface is mapped until the session's stream has run this copy, and the
    // destination slot lies inside `out` (shape checked above, rows of `row` bytes).
    unsafe {
        f.stream
            .copy_2d_on_device(f.luma, f.pitch, dst, row, row, h)?;
        f.stream
            .copy_2d_on_device(f.chroma, f.pitch, dst.offset(row * h), row, row, h / 2)?;
    }
    Ok(())
}
