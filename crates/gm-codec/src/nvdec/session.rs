//! One NVDEC decoding session: an nvcuvid parser and decoder that execute gm-demux plans.
//!
//! The parser calls back synchronously on the thread that feeds it: the sequence callback
//! sizes (or reconfigures) the decoder from the stream's sequence header, the decode callback
//! submits pictures, and the display callback, for each requested frame, maps the decoded
//! surface, hands it to the consumer on our stream, and queues it for unmapping once the
//! consumer's work is done (an event per mapping; no host synchronization per frame).

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gm_cuda::{Device, DevicePtr, Event, Stream, nvtx};
use gm_demux::{Codec, CodecInfo, DecodePlan, IndexingDemuxer, Keep};

use super::api::{Nvcuvid, nvcuvid};
use super::frame::{ColourInfo, DecodedFrame, FrameStatus, SurfaceFormat};
use super::sys;
use crate::error::{CodecError, Result};

/// Output surfaces per decoder: how many frames can be mapped at once.
const OUTPUT_SURFACES: u32 = 4;
const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;

/// GPU memory shared by the decoders of a pool.
#[derive(Debug)]
pub struct DecoderBudget {
    limit: usize,
    used: AtomicUsize,
}

impl DecoderBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(DecoderBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    fn reserve(&self, bytes: usize) -> Result<()> {
        let mut cur = self.used.load(Ordering::Acquire);
        loop {
            if cur + bytes > self.limit {
                return Err(CodecError::OutOfDecoderMemory {
                    requested: bytes,
                    in_use: cur,
                    budget: self.limit,
                });
            }
            match self
                .used
                .compare_exchange(cur, cur + bytes, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(now) => cur = now,
            }
        }
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Bytes held by live decoders.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// Counters of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Decoders created.
    pub decoders_created: u64,
    /// Decoders reconfigured for a new sequence instead of re-created.
    pub reconfigurations: u64,
    /// Packets fed to the parser.
    pub packets: u64,
    /// Frames handed to consumers.
    pub frames: u64,
    /// GPU memory of the current decoder (estimate), bytes.
    pub decoder_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DecoderFormat {
    codec: u32,
    chroma: u32,
    depth_minus8: u32,
    max_width: u32,
    max_height: u32,
    max_surfaces: u32,
    coded_width: u32,
    coded_height: u32,
    surfaces: u32,
    display: [i32; 4],
    target_width: u32,
    target_height: u32,
}

type Consumer = dyn FnMut(&DecodedFrame<'_>) -> Result<()>;

struct State {
    api: &'static Nvcuvid,
    device: Device,
    stream: Stream,
    lock: sys::CUvideoctxlock,
    decoder: sys::CUvideodecoder,
    format: Option<DecoderFormat>,
    budget: Option<Arc<DecoderBudget>>,
    reserved: usize,
    caps: HashMap<(u32, u32, u32), sys::CUVIDDECODECAPS>,
    colour: ColourInfo,
    file: PathBuf,
    codec: Option<CodecInfo>,
    // The run being decoded.
    keeps: Vec<Keep>,
    wanted: HashMap<i64, usize>,
    delivered: Vec<bool>,
    /// Timestamps the decoder displayed in this run, for diagnostics.
    displayed: Vec<i64>,
    consumer: Option<*mut Consumer>,
    error: Option<CodecError>,
    ring: VecDeque<(u64, usize)>,
    events: Vec<Event>,
    next_event: usize,
    stats: SessionStats,
}

/// A parser and decoder on one device, fed with gm-demux plans. Not shareable between
/// threads; a [`DecoderPool`](super::DecoderPool) runs one per worker thread.
pub struct DecoderSession {
    state: Box<State>,
    parser: sys::CUvideoparser,
    parser_codec: Option<Codec>,
}

fn cu(code: sys::CUresult, op: &'static str, file: &std::path::Path) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(CodecError::Nvdec {
            file: file.to_path_buf(),
            op,
            code,
        })
    }
}

impl DecoderSession {
    /// A session on `device`, working on its own stream. `budget`, when given, bounds the GPU
    /// memory of this and other sessions' decoders.
    pub fn new(device: &Device, budget: Option<Arc<DecoderBudget>>) -> Result<DecoderSession> {
        let api = nvcuvid().map_err(|e| CodecError::Pool(format!("NVDEC unavailable: {e}")))?;
        device.bind_to_thread()?;
        let stream = Stream::named(device, c"NVDEC session")?;
        let mut lock: sys::CUvideoctxlock = std::ptr::null_mut();
        // SAFETY: creates a lock for our (current) primary context.
        let code = unsafe { (api.ctx_lock_create)(&mut lock, device.raw_context().cast()) };
        cu(code, "cuvidCtxLockCreate", std::path::Path::new("-"))?;
        let events = (0..OUTPUT_SURFACES as usize)
            .map(|_| Event::new(device))
            .collect::<gm_cuda::Result<Vec<_>>>()?;
        Ok(DecoderSession {
            state: Box::new(State {
                api,
                device: device.clone(),
                stream,
                lock,
                decoder: std::ptr::null_mut(),
                format: None,
                budget,
                reserved: 0,
                caps: HashMap::new(),
                colour: ColourInfo::default(),
                file: PathBuf::new(),
                codec: None,
                keeps: Vec::new(),
                wanted: HashMap::new(),
                delivered: Vec::new(),
                displayed: Vec::new(),
                consumer: None,
                error: None,
                ring: VecDeque::new(),
                events,
                next_event: 0,
                stats: SessionStats::default(),
            }),
            parser: std::ptr::null_mut(),
            parser_codec: None,
        })
    }

    /// The stream consumers' work is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.state.stream
    }

    /// Counters so far.
    pub fn stats(&self) -> SessionStats {
        self.state.stats
    }

    /// Checks with `cuvidGetDecoderCaps` that this GPU can decode the stream `codec`
    /// describes, before any packet is fed; an error names codec, profile, chroma format, bit
    /// depth and the GPU.
    pub fn check_support(&mut self, file: &std::path::Path, codec: &CodecInfo) -> Result<()> {
        let st = &mut *self.state;
        st.file = file.to_path_buf();
        st.codec = Some(codec.clone());
        let c = match codec.codec {
            Codec::H264 => sys::cudaVideoCodec_enum_cudaVideoCodec_H264,
            Codec::Hevc => sys::cudaVideoCodec_enum_cudaVideoCodec_HEVC,
        };
        st.check_caps(
            c,
            u32::from(codec.chroma_format),
            u32::from(codec.bit_depth.saturating_sub(8)),
            codec.width,
            codec.height,
        )
    }

    /// Decodes `plan` from `demux`, calling `consumer` for every requested frame (in display
    /// order within each run; `DecodedFrame::slots` says where each belongs in the request).
    /// The consumer's GPU work must be enqueued on [`DecodedFrame::stream`]; the surface stays
    /// mapped until that work is done.
    pub fn decode(
        &mut self,
        demux: &IndexingDemuxer,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&DecodedFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let idx = demux.index();
        self.check_support(&idx.path, &idx.codec)?;
        self.ensure_parser(idx.codec.codec)?;
        self.state.device.bind_to_thread()?;
        let result = self.run_plan(demux, plan, consumer);
        let drained = self.state.drain_ring();
        self.state.consumer = None;
        if result.is_err() {
            // A run cut short leaves pictures in the parser; the next plan starts clean.
            self.destroy_parser();
        }
        result.and(drained)
    }

    fn run_plan(
        &mut self,
        demux: &IndexingDemuxer,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&DecodedFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        // SAFETY: only the lifetime is erased; the pointer is cleared before `decode` returns
        // and is only used by callbacks that run inside the parse calls below.
        let ptr: *mut Consumer = unsafe {
            std::mem::transmute::<
                *mut (dyn FnMut(&DecodedFrame<'_>) -> Result<()> + '_),
                *mut Consumer,
            >(consumer)
        };
        self.state.consumer = Some(ptr);
        for run in &plan.runs {
            let packets = {
                let _nvtx = nvtx::range(c"gm-codec: read a run's packets");
                demux.read_run(run)?
            };
            let _nvtx = nvtx::range(c"NVDEC: decode a run");
            self.state.begin_run(&run.keep);
            for p in &packets {
                // Each run ends with end-of-stream, which resets the parser: no discontinuity
                // flag is needed at the next run's start.
                let flags = sys::CUvideopacketflags_CUVID_PKT_TIMESTAMP
                    | sys::CUvideopacketflags_CUVID_PKT_ENDOFPICTURE;
                self.parse(&p.data, flags, p.pts)?;
                self.state.stats.packets += 1;
            }
            self.parse(&[], sys::CUvideopacketflags_CUVID_PKT_ENDOFSTREAM, 0)?;
            if let Some(missing) = self.state.delivered.iter().position(|d| !d) {
                let k = &self.state.keeps[missing];
                return Err(CodecError::Decode {
                    file: self.state.file.clone(),
                    frame: k.frame,
                    reason: format!(
                        "the decoder did not output it (pts {}, packet {}); it output pts {:?}",
                        k.pts, k.decode_index, self.state.displayed
                    ),
                });
            }
        }
        Ok(())
    }

    fn parse(&mut self, data: &[u8], flags: u32, pts: i64) -> Result<()> {
        let mut packet = sys::CUVIDSOURCEDATAPACKET {
            flags: flags.into(),
            payload_size: data.len() as _,
            payload: if data.is_empty() {
                std::ptr::null()
            } else {
                data.as_ptr()
            },
            timestamp: pts,
        };
        // SAFETY: the parser is live; the payload outlives the call; callbacks get our state.
        let code = unsafe { (self.state.api.parse_video_data)(self.parser, &mut packet) };
        if let Some(e) = self.state.error.take() {
            return Err(e);
        }
        cu(code, "cuvidParseVideoData", &self.state.file)
    }

    fn ensure_parser(&mut self, codec: Codec) -> Result<()> {
        if self.parser_codec == Some(codec) && !self.parser.is_null() {
            return Ok(());
        }
        self.destroy_parser();
        self.state.destroy_decoder();
        let mut params = sys::CUVIDPARSERPARAMS {
            CodecType: match codec {
                Codec::H264 => sys::cudaVideoCodec_enum_cudaVideoCodec_H264,
                Codec::Hevc => sys::cudaVideoCodec_enum_cudaVideoCodec_HEVC,
            },
            ulMaxNumDecodeSurfaces: 1,
            ulMaxDisplayDelay: 0,
            pUserData: (&mut *self.state as *mut State).cast(),
            pfnSequenceCallback: Some(on_sequence),
            pfnDecodePicture: Some(on_decode),
            pfnDisplayPicture: Some(on_display),
            ..Default::default()
        };
        // SAFETY: params point at callbacks and at our boxed state, which outlives the parser.
        let code = unsafe { (self.state.api.create_video_parser)(&mut self.parser, &mut params) };
        cu(code, "cuvidCreateVideoParser", &self.state.file)?;
        self.parser_codec = Some(codec);
        Ok(())
    }

    fn destroy_parser(&mut self) {
        if !self.parser.is_null() {
            // SAFETY: created by us, destroyed once.
            unsafe { (self.state.api.destroy_video_parser)(self.parser) };
            self.parser = std::ptr::null_mut();
            self.parser_codec = None;
        }
    }
}

impl Drop for DecoderSession {
    fn drop(&mut self) {
        let _ = self.state.device.bind_to_thread();
        let _ = self.state.drain_ring();
        self.destroy_parser();
        self.state.destroy_decoder();
        if !self.state.lock.is_null() {
            // SAFETY: created in `new`, destroyed once, after the decoder that used it.
            unsafe { (self.state.api.ctx_lock_destroy)(self.state.lock) };
        }
    }
}

fn chroma_name(c: u32) -> &'static str {
    match c {
        0 => "monochrome",
        1 => "4:2:0",
        2 => "4:2:2",
        3 => "4:4:4",
        _ => "unknown",
    }
}

impl State {
    fn unsupported(
        &self,
        width: u32,
        height: u32,
        chroma: u32,
        depth_minus8: u32,
        reason: String,
    ) -> CodecError {
        let (codec, profile) = self
            .codec
            .as_ref()
            .map(|c| (c.codec.name().to_string(), c.profile_name()))
            .unwrap_or_default();
        CodecError::Unsupported(Box::new(crate::error::UnsupportedStream {
            file: self.file.clone(),
            codec,
            profile,
            chroma: chroma_name(chroma).into(),
            bit_depth: (depth_minus8 + 8) as u8,
            width,
            height,
            gpu: self.device.name().to_string(),
            reason,
        }))
    }

    fn check_caps(
        &mut self,
        codec: u32,
        chroma: u32,
        depth_minus8: u32,
        width: u32,
        height: u32,
    ) -> Result<()> {
        let key = (codec, chroma, depth_minus8);
        let caps = match self.caps.get(&key) {
            Some(c) => *c,
            None => {
                let mut c = sys::CUVIDDECODECAPS {
                    eCodecType: codec,
                    eChromaFormat: chroma,
                    nBitDepthMinus8: depth_minus8,
                    ..Default::default()
                };
                self.device.bind_to_thread()?;
                // SAFETY: fills the caps struct we own.
                let code = unsafe { (self.api.get_decoder_caps)(&mut c) };
                cu(code, "cuvidGetDecoderCaps", &self.file)?;
                self.caps.insert(key, c);
                c
            }
        };
        let fail =
            |reason: String| Err(self.unsupported(width, height, chroma, depth_minus8, reason));
        if caps.bIsSupported == 0 {
            return fail(
                "the decoder reports this codec, chroma format and bit depth unsupported".into(),
            );
        }
        if width > caps.nMaxWidth || height > caps.nMaxHeight {
            return fail(format!(
                "larger than the maximum {}x{}",
                caps.nMaxWidth, caps.nMaxHeight
            ));
        }
        if width < u32::from(caps.nMinWidth) || height < u32::from(caps.nMinHeight) {
            return fail(format!(
                "smaller than the minimum {}x{}",
                caps.nMinWidth, caps.nMinHeight
            ));
        }
        let mbs = width.div_ceil(16) * height.div_ceil(16);
        if mbs > caps.nMaxMBCount {
            return fail(format!("{mbs} macroblocks, more than {}", caps.nMaxMBCount));
        }
        Ok(())
    }

    fn begin_run(&mut self, keep: &[Keep]) {
        self.keeps = keep.to_vec();
        self.wanted = keep.iter().enumerate().map(|(i, k)| (k.pts, i)).collect();
        self.delivered = vec![false; keep.len()];
        self.displayed.clear();
    }

    fn sequence(&mut self, fmt: &sys::CUVIDEOFORMAT) -> Result<c_int> {
        let (cw, ch) = (fmt.coded_width, fmt.coded_height);
        let chroma = fmt.chroma_format;
        let depth = u32::from(fmt.bit_depth_luma_minus8);
        self.check_caps(fmt.codec, chroma, depth, cw, ch)?;
        let d = fmt.display_area;
        let display = [d.left, d.top, d.right, d.bottom];
        let tw = (d.right - d.left).max(0) as u32;
        let th = (d.bottom - d.top).max(0) as u32;
        let surfaces = u32::from(fmt.min_num_decode_surfaces).max(1);
        let vs = fmt.video_signal_description;
        self.colour = ColourInfo {
            matrix_coefficients: vs.matrix_coefficients,
            full_range: vs.video_full_range_flag() != 0,
        };
        if let Some(f) = self.format
            && f.codec == fmt.codec
            && f.chroma == chroma
            && f.depth_minus8 == depth
            && cw <= f.max_width
            && ch <= f.max_height
            && surfaces <= f.max_surfaces
        {
            let same = f.coded_width == cw
                && f.coded_height == ch
                && f.display == display
                && f.surfaces == surfaces;
            if !same {
                let mut rc = sys::CUVIDRECONFIGUREDECODERINFO {
                    ulWidth: cw,
                    ulHeight: ch,
                    ulTargetWidth: tw,
                    ulTargetHeight: th,
                    ulNumDecodeSurfaces: surfaces,
                    ..Default::default()
                };
                rc.display_area.left = d.left as i16;
                rc.display_area.top = d.top as i16;
                rc.display_area.right = d.right as i16;
                rc.display_area.bottom = d.bottom as i16;
                // SAFETY: the decoder is live; `rc` is ours.
                let code = unsafe { (self.api.reconfigure_decoder)(self.decoder, &mut rc) };
                cu(code, "cuvidReconfigureDecoder", &self.file)?;
                self.format = Some(DecoderFormat {
                    coded_width: cw,
                    coded_height: ch,
                    surfaces,
                    display,
                    target_width: tw,
                    target_height: th,
                    ..f
                });
                self.stats.reconfigurations += 1;
            }
            return Ok(surfaces as c_int);
        }
        self.destroy_decoder();
        let bytes_per_sample = if depth > 0 { 2 } else { 1 };
        let bytes = ((surfaces as usize * cw as usize * ch as usize)
            + OUTPUT_SURFACES as usize * tw as usize * th as usize)
            * 3
            / 2
            * bytes_per_sample;
        if let Some(b) = &self.budget {
            b.reserve(bytes)?;
        }
        let mut ci = sys::CUVIDDECODECREATEINFO {
            ulWidth: cw.into(),
            ulHeight: ch.into(),
            ulNumDecodeSurfaces: surfaces.into(),
            CodecType: fmt.codec,
            ChromaFormat: chroma,
            ulCreationFlags: sys::cudaVideoCreateFlags_enum_cudaVideoCreate_PreferCUVID.into(),
            bitDepthMinus8: depth.into(),
            ulMaxWidth: cw.into(),
            ulMaxHeight: ch.into(),
            OutputFormat: if depth > 0 {
                sys::cudaVideoSurfaceFormat_enum_cudaVideoSurfaceFormat_P016
            } else {
                sys::cudaVideoSurfaceFormat_enum_cudaVideoSurfaceFormat_NV12
            },
            DeinterlaceMode: if fmt.progressive_sequence != 0 {
                sys::cudaVideoDeinterlaceMode_enum_cudaVideoDeinterlaceMode_Weave
            } else {
                sys::cudaVideoDeinterlaceMode_enum_cudaVideoDeinterlaceMode_Adaptive
            },
            ulTargetWidth: tw.into(),
            ulTargetHeight: th.into(),
            ulNumOutputSurfaces: OUTPUT_SURFACES.into(),
            vidLock: self.lock,
            ..Default::default()
        };
        ci.display_area.left = d.left as i16;
        ci.display_area.top = d.top as i16;
        ci.display_area.right = d.right as i16;
        ci.display_area.bottom = d.bottom as i16;
        // SAFETY: `ci` is fully initialized; the decoder handle is ours to destroy.
        let code = unsafe { (self.api.create_decoder)(&mut self.decoder, &mut ci) };
        if code != 0 {
            if let Some(b) = &self.budget {
                b.release(bytes);
            }
            self.decoder = std::ptr::null_mut();
            if code == CUDA_ERROR_OUT_OF_MEMORY {
                return Err(CodecError::OutOfDecoderMemory {
                    requested: bytes,
                    in_use: self.budget.as_ref().map(|b| b.used()).unwrap_or(0),
                    budget: self.budget.as_ref().map(|b| b.limit).unwrap_or(0),
                });
            }
            return cu(code, "cuvidCreateDecoder", &self.file).map(|()| 0);
        }
        self.reserved = bytes;
        self.stats.decoders_created += 1;
        self.stats.decoder_bytes = bytes;
        self.format = Some(DecoderFormat {
            codec: fmt.codec,
            chroma,
            depth_minus8: depth,
            max_width: cw,
            max_height: ch,
            max_surfaces: surfaces,
            coded_width: cw,
            coded_height: ch,
            surfaces,
            display,
            target_width: tw,
            target_height: th,
        });
        Ok(surfaces as c_int)
    }

    fn destroy_decoder(&mut self) {
        let _ = self.drain_ring();
        if !self.decoder.is_null() {
            // SAFETY: created by us, destroyed once, nothing mapped (ring drained).
            unsafe { (self.api.destroy_decoder)(self.decoder) };
            self.decoder = std::ptr::null_mut();
        }
        if let Some(b) = &self.budget {
            b.release(self.reserved);
        }
        self.reserved = 0;
        self.stats.decoder_bytes = 0;
        self.format = None;
    }

    fn decode_picture(&mut self, pic: *mut sys::CUVIDPICPARAMS) -> Result<()> {
        if self.decoder.is_null() {
            return Err(CodecError::Decode {
                file: self.file.clone(),
                frame: 0,
                reason: "picture data before any sequence header".into(),
            });
        }
        // SAFETY: the parser hands us valid picture parameters for our decoder.
        let code = unsafe { (self.api.decode_picture)(self.decoder, pic) };
        cu(code, "cuvidDecodePicture", &self.file)
    }

    fn display(&mut self, disp: &sys::CUVIDPARSERDISPINFO) -> Result<()> {
        if self.displayed.len() < 64 {
            self.displayed.push(disp.timestamp);
        }
        let Some(&k) = self.wanted.get(&disp.timestamp) else {
            return Ok(());
        };
        let Some(f) = self.format else {
            return Ok(());
        };
        let mut status = sys::CUVIDGETDECODESTATUS::default();
        // SAFETY: a picture index the parser just displayed, on our decoder.
        let st_code =
            unsafe { (self.api.get_decode_status)(self.decoder, disp.picture_index, &mut status) };
        let frame_status = match (st_code, status.decodeStatus) {
            (0, sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_Error) => FrameStatus::Error,
            (0, sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_Error_Concealed) => {
                FrameStatus::Concealed
            }
            _ => FrameStatus::Ok,
        };
        let mut proc = sys::CUVIDPROCPARAMS {
            progressive_frame: disp.progressive_frame,
            top_field_first: disp.top_field_first,
            unpaired_field: c_int::from(disp.repeat_first_field < 0),
            output_stream: self.stream.raw().cast(),
            ..Default::default()
        };
        let mut ptr: u64 = 0;
        let mut pitch: u32 = 0;
        // SAFETY: maps a displayed picture of our decoder; unmapped in `retire`/`drain_ring`.
        let code = unsafe {
            (self.api.map_video_frame)(
                self.decoder,
                disp.picture_index,
                &mut ptr,
                &mut pitch,
                &mut proc,
            )
        };
        cu(code, "cuvidMapVideoFrame64", &self.file)?;
        let keep = &self.keeps[k];
        let frame = DecodedFrame {
            frame: keep.frame,
            pts: keep.pts,
            slots: &keep.slots,
            luma: DevicePtr(ptr),
            chroma: DevicePtr(ptr + u64::from(pitch) * u64::from(f.target_height)),
            pitch: pitch as usize,
            width: f.target_width,
            height: f.target_height,
            format: if f.depth_minus8 > 0 {
                SurfaceFormat::P016
            } else {
                SurfaceFormat::Nv12
            },
            bit_depth: (f.depth_minus8 + 8) as u8,
            colour: self.colour,
            status: frame_status,
            stream: &self.stream,
        };
        let result = match self.consumer {
            Some(c) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: set by `decode` for the duration of the parse calls that reach here.
                unsafe { (*c)(&frame) }
            }))
            .unwrap_or_else(|_| Err(CodecError::Consumer("the consumer panicked".into()))),
            None => Ok(()),
        };
        self.delivered[k] = true;
        self.stats.frames += 1;
        let slot = self.next_event;
        self.next_event = (self.next_event + 1) % self.events.len();
        let recorded = self.events[slot].record(&self.stream);
        self.ring.push_back((ptr, slot));
        if self.ring.len() >= self.events.len() {
            self.retire_oldest()?;
        }
        recorded?;
        result
    }

    fn retire_oldest(&mut self) -> Result<()> {
        if let Some((ptr, slot)) = self.ring.pop_front() {
            let waited = self.events[slot].synchronize();
            // SAFETY: mapped by `display`, unmapped once, after the consumer's work finished.
            let code = unsafe { (self.api.unmap_video_frame)(self.decoder, ptr) };
            waited?;
            cu(code, "cuvidUnmapVideoFrame64", &self.file)?;
        }
        Ok(())
    }

    fn drain_ring(&mut self) -> Result<()> {
        let mut first = Ok(());
        while !self.ring.is_empty() {
            if let Err(e) = self.retire_oldest() {
                first = first.and(Err(e));
            }
        }
        first
    }
}

unsafe extern "C" fn on_sequence(user: *mut c_void, fmt: *mut sys::CUVIDEOFORMAT) -> c_int {
    // SAFETY: `user` is our boxed State (set at parser creation); `fmt` is valid for the call.
    let (st, fmt) = unsafe { (&mut *(user as *mut State), &*fmt) };
    match st.sequence(fmt) {
        Ok(n) => n,
        Err(e) => {
            st.error.get_or_insert(e);
            0
        }
    }
}

unsafe extern "C" fn on_decode(user: *mut c_void, pic: *mut sys::CUVIDPICPARAMS) -> c_int {
    // SAFETY: as in `on_sequence`.
    let st = unsafe { &mut *(user as *mut State) };
    match st.decode_picture(pic) {
        Ok(()) => 1,
        Err(e) => {
            st.error.get_or_insert(e);
            0
        }
    }
}

unsafe extern "C" fn on_display(user: *mut c_void, disp: *mut sys::CUVIDPARSERDISPINFO) -> c_int {
    // SAFETY: as in `on_sequence`; a null `disp` marks the end of the stream.
    let (st, disp) = unsafe { (&mut *(user as *mut State), disp.as_ref()) };
    let Some(disp) = disp else {
        return 1;
    };
    match st.display(disp) {
        Ok(()) => 1,
        Err(e) => {
            st.error.get_or_insert(e);
            0
        }
    }
}
