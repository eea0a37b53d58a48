//! `Libav`: executes gm-demux plans with libavcodec on the host, as `DecoderSession` does on
//! NVDEC; [`CpuDecoder`](super::CpuDecoder) drives it.

use std::ffi::{CString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::time::Instant;

use gm_demux::{Codec, DecodePlan, DecodeRun, Keep, PacketSource};

use super::ffi::{AVERROR_EAGAIN, AVERROR_EOF, Ffmpeg, Frame, Packet, ffmpeg};
use super::frame::{ChromaLayout, HostFrame};
use super::run::RunState;
use crate::error::{CodecError, Result};
use crate::nvdec::{ColourInfo, FrameStatus};

/// Largest frame a CPU decoder accepts, in pixels (FFmpeg's `max_pixels`): 8K and more, so
/// that a forged header cannot make it allocate gigabytes.
const MAX_PIXELS: &str = "67108864";

/// Files a decoder keeps a context open for: a loader's session alternates between the
/// cameras of a scene and the videos of a batch, and opening libdav1d (its threads and
/// buffers) costs more than decoding a GOP of 2.
const OPEN_FILES: usize = 8;

/// Counters of a CPU decoder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuDecoderStats {
    /// Runs decoded.
    pub runs: u64,
    /// Packets sent.
    pub packets: u64,
    /// Frames the decoder output (requested or not).
    pub frames: u64,
    /// Frames handed to consumers.
    pub delivered: u64,
    /// Time in the decoding library (send, receive, flush), nanoseconds.
    pub decode_ns: u64,
    /// Decoder contexts opened (libavcodec: one per file and codec while it stays among the
    /// last `OPEN_FILES` files used; the bundled AV1 decoder: one, reused).
    pub opened: u64,
    /// Of `decode_ns`, for an NVDEC session's CPU route: staging frames for the GPU (packing
    /// them into pinned memory in NVDEC's layout and queueing the copy).
    pub stage_ns: u64,
    /// Of `stage_ns`: waiting for a staging buffer's previous copy to finish.
    pub stage_wait_ns: u64,
    /// Of `decode_ns`, for an NVDEC session's CPU route: in the session's consumer (enqueuing
    /// its GPU work for a frame).
    pub consume_ns: u64,
}

impl std::ops::Add for CpuDecoderStats {
    type Output = CpuDecoderStats;

    fn add(self, o: CpuDecoderStats) -> CpuDecoderStats {
        CpuDecoderStats {
            runs: self.runs + o.runs,
            packets: self.packets + o.packets,
            frames: self.frames + o.frames,
            delivered: self.delivered + o.delivered,
            decode_ns: self.decode_ns + o.decode_ns,
            opened: self.opened + o.opened,
            stage_ns: self.stage_ns + o.stage_ns,
            stage_wait_ns: self.stage_wait_ns + o.stage_wait_ns,
            consume_ns: self.consume_ns + o.consume_ns,
        }
    }
}

/// libavcodec executing gm-demux plans on the host, a context kept open per file for the last
/// few files; frames equal ffmpeg's software decode (the same library: AV1 through its
/// libdav1d wrapper, film grain applied as ffmpeg applies it). Not shareable between threads.
pub(crate) struct Libav {
    ff: &'static Ffmpeg,
    threads: usize,
    /// Open contexts, least recently used first; the last is the current one.
    open: Vec<OpenDecoder>,
    stats: CpuDecoderStats,
}

struct OpenDecoder {
    file: PathBuf,
    codec: Codec,
    ctx: *mut c_void,
    name: &'static str,
}

// SAFETY: the contexts are used only through `&mut Libav`, by one thread at a time.
unsafe impl Send for Libav {}

impl Libav {
    /// libavcodec with `threads` decoding threads per file (0: libavcodec picks from the
    /// machine's cores). Fails with a one-line error naming what to install when FFmpeg's
    /// libraries are not found.
    pub(crate) fn new(threads: usize) -> Result<Libav> {
        Ok(Libav {
            ff: ffmpeg()?,
            threads,
            open: Vec::new(),
            stats: CpuDecoderStats::default(),
        })
    }

    /// Counters so far.
    pub(crate) fn stats(&self) -> CpuDecoderStats {
        self.stats
    }

    /// Decodes `plan` with packets from `source`, calling `consumer` for every requested frame
    /// (in display order within each run; [`HostFrame::slots`] says where each belongs).
    pub(crate) fn decode(
        &mut self,
        source: &dyn PacketSource,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let file = source.name();
        let codec = source.codec().codec;
        self.ensure_open(file, codec)?;
        let mut packet = Packet::new(self.ff).ok_or_else(|| self.fail(file, "av_packet_alloc"))?;
        let mut frame = Frame::new(self.ff).ok_or_else(|| self.fail(file, "av_frame_alloc"))?;
        for run in &plan.runs {
            let result = self.decode_run(source, run, &mut packet, &mut frame, consumer);
            if result.is_err() {
                // A run cut short leaves the context mid-stream: the next plan opens afresh.
                self.close();
                return result;
            }
        }
        Ok(())
    }

    fn decode_run(
        &mut self,
        source: &dyn PacketSource,
        run: &DecodeRun,
        packet: &mut Packet<'_>,
        frame: &mut Frame<'_>,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let file = source.name();
        let packets = source.read_run(run)?;
        let ctx = self.context(file)?;
        let mut run_state = RunState::new(&run.keep);
        let started = Instant::now();
        // SAFETY: our open context; a flush resets it after the previous run's drain.
        unsafe { (self.ff.flush_buffers)(ctx) };
        for p in &packets {
            packet
                .fill(&p.data, p.pts)
                .map_err(|c| self.error(file, &run.keep, p.decode_index, c))?;
            loop {
                // SAFETY: our context and packet; the packet's payload is copied or referenced
                // by libavcodec before the call returns.
                let code = unsafe { (self.ff.send_packet)(ctx, packet.raw()) };
                if code == AVERROR_EAGAIN {
                    self.receive(file, ctx, frame, &mut run_state, consumer)?;
                    continue;
                }
                if code < 0 {
                    // ffmpeg goes on after a damaged packet; so do we, and the frames it
                    // spoils come out flagged or not at all (an error below).
                    run_state.last_error = Some((p.decode_index, code));
                }
                break;
            }
            self.stats.packets += 1;
            self.receive(file, ctx, frame, &mut run_state, consumer)?;
        }
        // SAFETY: a null packet starts draining.
        unsafe { (self.ff.send_packet)(ctx, std::ptr::null()) };
        self.receive(file, ctx, frame, &mut run_state, consumer)?;
        self.stats.decode_ns += started.elapsed().as_nanos() as u64;
        self.stats.runs += 1;
        run_state.finish(file, "libavcodec", |code| self.ff.error_text(code))
    }

    /// Takes every frame the decoder has ready, handing the requested ones to `consumer`.
    fn receive(
        &mut self,
        file: &Path,
        ctx: *mut c_void,
        frame: &mut Frame<'_>,
        run: &mut RunState,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        loop {
            // SAFETY: our context and frame.
            let code = unsafe { (self.ff.receive_frame)(ctx, frame.raw()) };
            if code == AVERROR_EAGAIN || code == AVERROR_EOF {
                return Ok(());
            }
            if code < 0 {
                run.last_error = Some((u32::MAX, code));
                return Ok(());
            }
            self.stats.frames += 1;
            let result = match run.take(frame.pts()) {
                Some(keep) => {
                    self.stats.delivered += 1;
                    self.hand_over(file, frame, keep, consumer)
                }
                None => Ok(()),
            };
            frame.unref();
            result?;
        }
    }

    fn hand_over(
        &self,
        file: &Path,
        frame: &Frame<'_>,
        keep: &Keep,
        consumer: &mut dyn FnMut(&HostFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let format = frame.format_name();
        let unsupported = |why: String| CodecError::Decode {
            file: file.to_path_buf(),
            frame: keep.frame,
            reason: why,
        };
        let (layout, bit_depth, jpeg_range) = ChromaLayout::of_pixel_format(&format)
            .ok_or_else(|| unsupported(format!("libavcodec gave {format}, not planar YUV")))?;
        let (w, h) = (frame.width(), frame.height());
        let (w, h) = match (usize::try_from(w), usize::try_from(h)) {
            (Ok(w), Ok(h)) if w > 0 && h > 0 => (w, h),
            _ => return Err(unsupported(format!("libavcodec gave a {w}x{h} frame"))),
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
            let (ptr, stride) = frame.plane(i);
            let stride = usize::try_from(stride).unwrap_or(0);
            if ptr.is_null() || stride < pw * bps {
                return Err(unsupported(format!(
                    "libavcodec gave plane {i} with {stride} bytes a row for {pw} samples"
                )));
            }
            // SAFETY: libavcodec's planes hold `ph` rows `stride` bytes apart, each of at
            // least `pw` samples; the frame stays referenced until `unref` after the consumer.
            planes[i] = unsafe { std::slice::from_raw_parts(ptr, stride * (ph - 1) + pw * bps) };
            strides[i] = stride;
        }
        let (space, range) = frame.colour();
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
                matrix_coefficients: u8::try_from(space).unwrap_or(2),
                // AVCOL_RANGE_JPEG is 2; the yuvj formats imply it.
                full_range: range == 2 || jpeg_range,
                // `CpuDecoder::decode` sets the source's, which ffmpeg's frames carry.
                chroma_location: Default::default(),
            },
            status: if frame.damaged() {
                FrameStatus::Concealed
            } else {
                FrameStatus::Ok
            },
        };
        consumer(&host)
    }

    /// Makes the context of `file` current, opening it (and closing the least recently used
    /// beyond [`OPEN_FILES`]) if it is not open.
    fn ensure_open(&mut self, file: &Path, codec: Codec) -> Result<()> {
        if let Some(i) = self
            .open
            .iter()
            .position(|o| o.file == file && o.codec == codec)
        {
            let o = self.open.remove(i);
            self.open.push(o);
            return Ok(());
        }
        if self.open.len() >= OPEN_FILES {
            let mut old = self.open.remove(0);
            Self::free(self.ff, &mut old);
        }
        let (ctx, name) = self.open_context(file, codec)?;
        self.open.push(OpenDecoder {
            file: file.to_path_buf(),
            codec,
            ctx,
            name,
        });
        self.stats.opened += 1;
        Ok(())
    }

    fn context(&self, file: &Path) -> Result<*mut c_void> {
        self.open
            .last()
            .map(|o| o.ctx)
            .ok_or_else(|| self.fail(file, "no open decoder"))
    }

    /// The libavcodec decoder name used for `codec` (AV1: FFmpeg's libdav1d wrapper, as the
    /// ffmpeg tool picks it).
    fn decoder_names(codec: Codec) -> &'static [&'static str] {
        match codec {
            Codec::H264 => &["h264"],
            Codec::Hevc => &["hevc"],
            Codec::Vp9 => &["vp9"],
            Codec::Av1 => &["libdav1d"],
        }
    }

    fn open_context(&self, file: &Path, codec: Codec) -> Result<(*mut c_void, &'static str)> {
        let names = Self::decoder_names(codec);
        let found = names.iter().find_map(|n| {
            let c = CString::new(*n).ok()?;
            // SAFETY: a lookup by NUL-terminated name.
            let dec = unsafe { (self.ff.find_decoder_by_name)(c.as_ptr()) };
            (!dec.is_null()).then_some((dec, *n))
        });
        let Some((dec, name)) = found else {
            return Err(CodecError::Decode {
                file: file.to_path_buf(),
                frame: 0,
                reason: format!(
                    "{} has no {} decoder (wanted {}); install an FFmpeg built with it",
                    self.ff.describe(),
                    codec_name(codec),
                    names.join(" or ")
                ),
            });
        };
        // SAFETY: allocates a context for a decoder libavcodec returned.
        let ctx = unsafe { (self.ff.alloc_context3)(dec) };
        if ctx.is_null() {
            return Err(self.fail(file, "avcodec_alloc_context3"));
        }
        let threads = self.threads.to_string();
        let mut options = vec![("threads", threads.as_str()), ("max_pixels", MAX_PIXELS)];
        if codec == Codec::H264 {
            // Plans start at GOP starts that may be non-IDR I pictures; NVDEC shows those,
            // and so must libavcodec (it otherwise waits for a recovery point).
            options.push(("flags2", "+showall"));
        }
        let code = self.open_with(ctx, dec, &options);
        if code < 0 {
            let mut ctx = ctx;
            // SAFETY: frees the context we allocated.
            unsafe { (self.ff.free_context)(&mut ctx) };
            return Err(CodecError::Decode {
                file: file.to_path_buf(),
                frame: 0,
                reason: format!("opening libavcodec's {name}: {}", self.ff.error_text(code)),
            });
        }
        tracing::debug!(file = %file.display(), decoder = name, threads = self.threads, "libavcodec decoder opened");
        Ok((ctx, name))
    }

    fn open_with(&self, ctx: *mut c_void, dec: *const c_void, options: &[(&str, &str)]) -> c_int {
        let mut dict: *mut c_void = std::ptr::null_mut();
        for (k, v) in options {
            let (Ok(k), Ok(v)) = (CString::new(*k), CString::new(*v)) else {
                continue;
            };
            // SAFETY: copies both strings into the dictionary (flags 0).
            unsafe { (self.ff.dict_set)(&mut dict, k.as_ptr(), v.as_ptr(), 0) };
        }
        // SAFETY: opens our context; unknown options stay in `dict`, which we free.
        let code = unsafe { (self.ff.open2)(ctx, dec, &mut dict) };
        // SAFETY: frees what the open left.
        unsafe { (self.ff.dict_free)(&mut dict) };
        code
    }

    /// Closes the current context.
    fn close(&mut self) {
        if let Some(mut o) = self.open.pop() {
            Self::free(self.ff, &mut o);
        }
    }

    fn free(ff: &Ffmpeg, o: &mut OpenDecoder) {
        tracing::trace!(decoder = o.name, file = %o.file.display(), "libavcodec decoder closed");
        // SAFETY: frees a context we opened, once (it leaves our list here).
        unsafe { (ff.free_context)(&mut o.ctx) };
    }

    fn fail(&self, file: &Path, call: &str) -> CodecError {
        CodecError::Decode {
            file: file.to_path_buf(),
            frame: 0,
            reason: format!("{call} failed in {}", self.ff.describe()),
        }
    }

    fn error(&self, file: &Path, keeps: &[Keep], packet: u32, code: c_int) -> CodecError {
        CodecError::Decode {
            file: file.to_path_buf(),
            frame: keeps.first().map(|k| k.frame).unwrap_or(0),
            reason: format!("packet {packet}: {}", self.ff.error_text(code)),
        }
    }
}

impl Drop for Libav {
    fn drop(&mut self) {
        while !self.open.is_empty() {
            self.close();
        }
    }
}

pub(crate) fn codec_name(codec: Codec) -> &'static str {
    match codec {
        Codec::H264 => "H.264",
        Codec::Hevc => "HEVC",
        Codec::Vp9 => "VP9",
        Codec::Av1 => "AV1",
    }
}

/// Whether the FFmpeg found on this machine has the decoder `name` (false without FFmpeg).
pub(crate) fn has_decoder(name: &str) -> bool {
    let (Ok(ff), Ok(c)) = (ffmpeg(), CString::new(name)) else {
        return false;
    };
    // SAFETY: a lookup by NUL-terminated name.
    !unsafe { (ff.find_decoder_by_name)(c.as_ptr()) }.is_null()
}

/// Which FFmpeg was loaded, or why none was.
pub(crate) fn describe() -> Result<String> {
    Ok(ffmpeg()?.describe())
}
