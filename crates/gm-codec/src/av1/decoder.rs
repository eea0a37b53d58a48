//! `Rav1d`: gm-demux plans executed by rav1d through its dav1d API.

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::path::Path;
use std::ptr::NonNull;
use std::time::Instant;

use gm_demux::{DecodePlan, DecodeRun, Keep, PacketSource};
use rav1d::include::dav1d::data::Dav1dData;
use rav1d::include::dav1d::dav1d::{Dav1dContext, Dav1dSettings};
use rav1d::include::dav1d::headers::{
    DAV1D_PIXEL_LAYOUT_I400, DAV1D_PIXEL_LAYOUT_I420, DAV1D_PIXEL_LAYOUT_I422,
    DAV1D_PIXEL_LAYOUT_I444,
};
use rav1d::include::dav1d::picture::Dav1dPicture;
use rav1d::src::lib as dav1d;

use crate::avcodec::run::RunState;
use crate::avcodec::{ChromaLayout, CpuDecoderStats, HostFrame};
use crate::error::{CodecError, Result};
use crate::nvdec::{ColourInfo, FrameStatus};

/// dav1d's "give me pictures first" answer (`DAV1D_ERR(EAGAIN)`).
const AGAIN: c_int = -libc::EAGAIN;

/// Sends of one packet answered `EAGAIN` before it is given up: dav1d takes a packet once
/// the pictures before it are out, so more than a few means it is stuck.
const MAX_SEND_RETRIES: usize = 64;

/// Largest frame accepted, in pixels: the limit the libavcodec path sets (`max_pixels`), so
/// that a forged header cannot make the decoder allocate gigabytes.
const FRAME_SIZE_LIMIT: u32 = 1 << 26;

/// One rav1d context, reused for every file: each run starts at a key frame, whose temporal
/// unit carries the sequence header (AV1 in MP4 requires it there; encoders write it there in
/// WebM too), after a flush.
pub(crate) struct Rav1d {
    /// The open context; `None` after a decoding error closed it, until the next run.
    ctx: Option<Dav1dContext>,
    stats: CpuDecoderStats,
}

// SAFETY: rav1d's context is an `Arc` of a `Send + Sync` state; we use it only through
// `&mut Rav1d`, from one thread at a time.
unsafe impl Send for Rav1d {}

impl Rav1d {
    /// A single-threaded context (see [`open`]); `file` only names the error.
    pub(crate) fn new(file: &Path) -> Result<Rav1d> {
        let mut decoder = Rav1d {
            ctx: None,
            stats: CpuDecoderStats::default(),
        };
        decoder.context(file)?;
        Ok(decoder)
    }

    /// The open context, opening one if a failed run closed it.
    fn context(&mut self, file: &Path) -> Result<Dav1dContext> {
        if let Some(ctx) = self.ctx {
            return Ok(ctx);
        }
        let ctx = open().map_err(|code| CodecError::Decode {
            file: file.to_path_buf(),
            frame: 0,
            reason: format!(
                "opening the bundled AV1 decoder (rav1d): {}",
                error_text(code)
            ),
        })?;
        tracing::debug!("rav1d decoder opened");
        self.stats.opened += 1;
        self.ctx = Some(ctx);
        Ok(ctx)
    }

    /// Closes the context. After a decoding error it is not asked for more pictures: a fresh
    /// one starts the next run from a clean state.
    fn close(&mut self) {
        if let Some(ctx) = self.ctx.take() {
            let mut ctx = Some(ctx);
            // SAFETY: closes the context we opened, once (it left `self.ctx` above).
            unsafe { dav1d::dav1d_close(Some(NonNull::from(&mut ctx))) };
        }
    }

    /// Counters so far.
    pub(crate) fn stats(&self) -> CpuDecoderStats {
        self.stats
    }

    /// Decodes `plan` with packets from `source`, calling `consumer` for every requested frame.
    pub(crate) fn decode(
        &mut self,
        source: &dyn PacketSource,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        for run in &plan.runs {
            self.decode_run(source, run, consumer)?;
        }
        Ok(())
    }

    fn decode_run(
        &mut self,
        source: &dyn PacketSource,
        run: &DecodeRun,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let file = source.name();
        let packets = source.read_run(run)?;
        let mut state = RunState::new(&run.keep);
        let started = Instant::now();
        let ctx = self.context(file)?;
        // SAFETY: our open context; drops whatever the last run left.
        unsafe { dav1d::dav1d_flush(ctx) };
        let mut failed = false;
        for p in &packets {
            let mut data = Dav1dData::default();
            // SAFETY: allocates `len` bytes owned by `data`.
            let buf =
                unsafe { dav1d::dav1d_data_create(Some(NonNull::from(&mut data)), p.data.len()) };
            if buf.is_null() {
                return Err(self.fail(file, &run.keep, "rav1d could not allocate a packet"));
            }
            // SAFETY: `buf` has room for `len` bytes, and `p.data` is another allocation.
            unsafe { std::ptr::copy_nonoverlapping(p.data.as_ptr(), buf, p.data.len()) };
            data.m.timestamp = p.pts;
            let sent = self.send(ctx, file, &mut data, &mut state, consumer);
            if data.sz > 0 {
                // SAFETY: releases what the decoder did not take (after an error).
                unsafe { dav1d::dav1d_data_unref(Some(NonNull::from(&mut data))) };
            }
            self.stats.packets += 1;
            let error = match sent? {
                Err(code) => Some(code),
                Ok(()) => self.receive(ctx, file, &mut state, consumer)?,
            };
            if let Some(code) = error {
                // Unlike libavcodec, the run stops at the first error (see `close`): the frames
                // not out yet are reported missing below, never decoded from damaged state.
                state.last_error = Some((p.decode_index, code));
                failed = true;
                break;
            }
        }
        if failed {
            self.close();
        } else {
            // Pictures still in the decoder come out until it says there are none.
            if let Some(code) = self.receive(ctx, file, &mut state, consumer)? {
                state.last_error = Some((u32::MAX, code));
                self.close();
            }
        }
        self.stats.decode_ns += started.elapsed().as_nanos() as u64;
        self.stats.runs += 1;
        state.finish(file, "the bundled AV1 decoder (rav1d)", error_text)
    }

    /// Sends one packet, taking pictures out while the decoder asks for that first. The inner
    /// result is the decoder's refusal of the packet: an error code from the send, or from
    /// the pictures it wanted taken first (after an error dav1d answers every send with
    /// `EAGAIN` until the packet is dropped, so retrying would spin).
    fn send(
        &mut self,
        ctx: Dav1dContext,
        file: &Path,
        data: &mut Dav1dData,
        state: &mut RunState,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<std::result::Result<(), c_int>> {
        for _ in 0..MAX_SEND_RETRIES {
            // SAFETY: our context and a packet it owns a reference to.
            let code =
                unsafe { dav1d::dav1d_send_data(Some(ctx), Some(NonNull::from(&mut *data))) };
            match code.0 {
                AGAIN => {
                    if let Some(error) = self.receive(ctx, file, state, consumer)? {
                        return Ok(Err(error));
                    }
                }
                c if c < 0 => return Ok(Err(c)),
                _ => return Ok(Ok(())),
            }
        }
        Ok(Err(AGAIN))
    }

    /// Takes every picture the decoder has, handing the requested ones to `consumer`; the
    /// decoder's error code if it ended with one rather than with "no picture now".
    fn receive(
        &mut self,
        ctx: Dav1dContext,
        file: &Path,
        state: &mut RunState,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<Option<c_int>> {
        loop {
            let mut pic = Dav1dPicture::default();
            // SAFETY: our context and an empty picture it fills.
            let code =
                unsafe { dav1d::dav1d_get_picture(Some(ctx), Some(NonNull::from(&mut pic))) };
            if code.0 < 0 {
                // Unlike dav1d, rav1d fills the picture even when it has none to give (an
                // empty metadata reference): released here too, or it leaks (found by the
                // fuzzer's leak checker).
                // SAFETY: releases what the call wrote, once.
                unsafe { dav1d::dav1d_picture_unref(Some(NonNull::from(&mut pic))) };
                return Ok((code.0 != AGAIN).then_some(code.0));
            }
            self.stats.frames += 1;
            let result = match state.take(pic.m.timestamp) {
                Some(keep) => {
                    self.stats.delivered += 1;
                    hand_over(file, &pic, keep, consumer)
                }
                None => Ok(()),
            };
            // SAFETY: releases the picture the decoder gave us, once.
            unsafe { dav1d::dav1d_picture_unref(Some(NonNull::from(&mut pic))) };
            result?;
        }
    }

    fn fail(&self, file: &Path, keeps: &[Keep], why: &str) -> CodecError {
        CodecError::Decode {
            file: file.to_path_buf(),
            frame: keeps.first().map_or(0, |k| k.frame),
            reason: why.to_string(),
        }
    }
}

/// A rav1d context set as FFmpeg's libdav1d wrapper sets dav1d, or dav1d's error code.
fn open() -> std::result::Result<Dav1dContext, c_int> {
    let mut s = MaybeUninit::<Dav1dSettings>::uninit();
    // SAFETY: writes a whole default settings struct into `s`.
    unsafe { dav1d::dav1d_default_settings(NonNull::from(&mut s).cast()) };
    // SAFETY: initialised just above.
    let mut s = unsafe { s.assume_init() };
    // One thread, one frame context. rav1d 1.1's frame threading deadlocked after decoding
    // errors in gm's damaged-packet test; with one frame context it aborted on every decoding
    // error (memorysafety/rav1d#1497), which the vendored copy fixes. Its threads are not
    // needed: parallelism comes from one decoder per host thread, as the loaders run them.
    s.n_threads = 1;
    s.max_frame_delay = 1;
    s.all_layers = 0;
    s.frame_size_limit = FRAME_SIZE_LIMIT;
    // SAFETY: the logger is a cookie and a callback, both optional pointers: all-zero is "no
    // logger" (rav1d's messages would go to stderr; its errors come back as codes).
    s.logger = unsafe { std::mem::zeroed() };
    let mut ctx: Option<Dav1dContext> = None;
    // SAFETY: both pointers are to live locals; `ctx` receives the new context.
    let code =
        unsafe { dav1d::dav1d_open(Some(NonNull::from(&mut ctx)), Some(NonNull::from(&mut s))) };
    match ctx {
        Some(ctx) if code.0 >= 0 => Ok(ctx),
        _ => Err(code.0.min(-1)),
    }
}

impl Drop for Rav1d {
    fn drop(&mut self) {
        self.close();
    }
}

/// The picture as a host frame, while the consumer runs.
fn hand_over(
    file: &Path,
    pic: &Dav1dPicture,
    keep: &Keep,
    consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
) -> Result<()> {
    let unsupported = |why: String| CodecError::Decode {
        file: file.to_path_buf(),
        frame: keep.frame,
        reason: format!("the bundled AV1 decoder (rav1d) gave {why}"),
    };
    let layout = match pic.p.layout {
        DAV1D_PIXEL_LAYOUT_I400 => ChromaLayout::Gray,
        DAV1D_PIXEL_LAYOUT_I420 => ChromaLayout::Yuv420,
        DAV1D_PIXEL_LAYOUT_I422 => ChromaLayout::Yuv422,
        DAV1D_PIXEL_LAYOUT_I444 => ChromaLayout::Yuv444,
        other => return Err(unsupported(format!("pixel layout {other}"))),
    };
    let bit_depth = u8::try_from(pic.p.bpc)
        .ok()
        .filter(|b| (8..=16).contains(b))
        .ok_or_else(|| unsupported(format!("{} bits a sample", pic.p.bpc)))?;
    let (w, h) = match (usize::try_from(pic.p.w), usize::try_from(pic.p.h)) {
        (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
        _ => return Err(unsupported(format!("a {}x{} picture", pic.p.w, pic.p.h))),
    };
    let (cw, ch) = layout.chroma_size(w, h);
    let bps = if bit_depth > 8 { 2 } else { 1 };
    let sizes = [(w, h), (cw, ch), (cw, ch)];
    let mut planes: [&[u8]; 3] = [&[]; 3];
    let mut strides = [0usize; 3];
    for (i, &(pw, ph)) in sizes.iter().enumerate() {
        if ph == 0 {
            continue;
        }
        let stride = usize::try_from(pic.stride[i.min(1)]).unwrap_or(0);
        let ptr = pic.data[i].map(|p| p.as_ptr().cast::<u8>());
        let Some(ptr) = ptr.filter(|_| stride >= pw * bps) else {
            return Err(unsupported(format!(
                "plane {i} with {stride} bytes a row for {pw} samples"
            )));
        };
        // SAFETY: rav1d's planes hold `ph` rows `stride` bytes apart, each of at least `pw`
        // samples; the picture stays referenced until it is unreferenced after the consumer.
        planes[i] = unsafe { std::slice::from_raw_parts(ptr, stride * (ph - 1) + pw * bps) };
        strides[i] = stride;
    }
    // SAFETY: a picture's sequence header lives as long as the picture's reference.
    let seq = pic.seq_hdr.map(|s| unsafe { s.as_ref() });
    let host = HostFrame {
        frame: keep.frame,
        pts: keep.pts,
        slots: &keep.slots,
        width: w as u32,
        height: h as u32,
        layout,
        bit_depth,
        planes,
        strides,
        colour: ColourInfo {
            // Unspecified (2) where there is no header, as FFmpeg's wrapper leaves it.
            matrix_coefficients: seq.map_or(2, |s| u8::try_from(s.mtrx).unwrap_or(2)),
            full_range: seq.is_some_and(|s| s.color_range != 0),
            // `CpuDecoder::decode` sets the source's, which ffmpeg's frames carry.
            chroma_location: Default::default(),
        },
        status: FrameStatus::Ok,
    };
    consumer(&host)
}

/// dav1d's error codes are negative errnos.
fn error_text(code: c_int) -> String {
    match -code {
        libc::EINVAL => "invalid data (EINVAL)".into(),
        libc::ENOMEM => "out of memory (ENOMEM)".into(),
        libc::ENOPROTOOPT => "an AV1 feature the decoder does not support (ENOPROTOOPT)".into(),
        libc::ERANGE => format!("a frame larger than {FRAME_SIZE_LIMIT} pixels (ERANGE)"),
        e => std::io::Error::from_raw_os_error(e).to_string(),
    }
}
