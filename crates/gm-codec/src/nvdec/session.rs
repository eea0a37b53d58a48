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
use gm_demux::{Codec, CodecInfo, DecodePlan, Keep, PacketSource};

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

impl DecoderFormat {
    /// Whether a decoder created as `self` can take the sequence `want`, reconfigured if need
    /// be: same codec and format, no larger than it was created for.
    fn fits(&self, want: &SequenceFormat) -> bool {
        self.codec == want.codec
            && self.chroma == want.chroma
            && self.depth_minus8 == want.depth_minus8
            && want.coded_width <= self.max_width
            && want.coded_height <= self.max_height
            && want.surfaces <= self.max_surfaces
    }

    /// Whether the decoder is already configured exactly for `want`.
    fn same_size(&self, want: &SequenceFormat) -> bool {
        self.coded_width == want.coded_width
            && self.coded_height == want.coded_height
            && self.display == want.display
            && self.surfaces == want.surfaces
    }
}

/// What a sequence header asks of the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SequenceFormat {
    codec: u32,
    chroma: u32,
    depth_minus8: u32,
    coded_width: u32,
    coded_height: u32,
    /// Display area: left, top, right, bottom.
    display: [i32; 4],
    target_width: u32,
    target_height: u32,
    surfaces: u32,
    progressive: bool,
}

impl SequenceFormat {
    fn of(fmt: &sys::CUVIDEOFORMAT) -> SequenceFormat {
        let d = fmt.display_area;
        SequenceFormat {
            codec: fmt.codec,
            chroma: fmt.chroma_format,
            depth_minus8: u32::from(fmt.bit_depth_luma_minus8),
            coded_width: fmt.coded_width,
            coded_height: fmt.coded_height,
            display: [d.left, d.top, d.right, d.bottom],
            target_width: (d.right - d.left).max(0) as u32,
            target_height: (d.bottom - d.top).max(0) as u32,
            surfaces: u32::from(fmt.min_num_decode_surfaces).max(1),
            progressive: fmt.progressive_sequence != 0,
        }
    }

    /// GPU memory of a decoder for this sequence (estimate): its decode surfaces and output
    /// surfaces, 4:2:0, one or two bytes a sample.
    fn decoder_bytes(&self) -> usize {
        let bytes_per_sample = if self.depth_minus8 > 0 { 2 } else { 1 };
        ((self.surfaces as usize * self.coded_width as usize * self.coded_height as usize)
            + OUTPUT_SURFACES as usize * self.target_width as usize * self.target_height as usize)
            * 3
            / 2
            * bytes_per_sample
    }

    /// nvcuvid's creation parameters for this sequence, locking with `lock`.
    fn create_info(&self, lock: sys::CUvideoctxlock) -> sys::CUVIDDECODECREATEINFO {
        let mut ci = sys::CUVIDDECODECREATEINFO {
            ulWidth: self.coded_width.into(),
            ulHeight: self.coded_height.into(),
            ulNumDecodeSurfaces: self.surfaces.into(),
            CodecType: self.codec,
            ChromaFormat: self.chroma,
            ulCreationFlags: sys::cudaVideoCreateFlags_enum_cudaVideoCreate_PreferCUVID.into(),
            bitDepthMinus8: self.depth_minus8.into(),
            ulMaxWidth: self.coded_width.into(),
            ulMaxHeight: self.coded_height.into(),
            OutputFormat: if self.depth_minus8 > 0 {
                sys::cudaVideoSurfaceFormat_enum_cudaVideoSurfaceFormat_P016
            } else {
                sys::cudaVideoSurfaceFormat_enum_cudaVideoSurfaceFormat_NV12
            },
            DeinterlaceMode: if self.progressive {
                sys::cudaVideoDeinterlaceMode_enum_cudaVideoDeinterlaceMode_Weave
            } else {
                sys::cudaVideoDeinterlaceMode_enum_cudaVideoDeinterlaceMode_Adaptive
            },
            ulTargetWidth: self.target_width.into(),
            ulTargetHeight: self.target_height.into(),
            ulNumOutputSurfaces: OUTPUT_SURFACES.into(),
            vidLock: lock,
            ..Default::default()
        };
        let d = self.display;
        ci.display_area.left = d[0] as i16;
        ci.display_area.top = d[1] as i16;
        ci.display_area.right = d[2] as i16;
        ci.display_area.bottom = d[3] as i16;
        ci
    }
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
/// threads; a [`DecoderPool`](crate::nvdec::DecoderPool) runs one per worker thread.
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

    /// Decodes `plan` with packets from `source` (any container: an
    /// [`IndexingDemuxer`](gm_demux::IndexingDemuxer), or packets in memory), calling
    /// `consumer` for every requested frame (in display order within each run;
    /// `DecodedFrame::slots` says where each belongs in the request).
    /// The consumer's GPU work must be enqueued on [`DecodedFrame::stream`]; the surface stays
    /// mapped until that work is done.
    pub fn decode(
        &mut self,
        source: &dyn PacketSource,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&DecodedFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let codec = source.codec();
        self.check_support(source.name(), codec)?;
        self.ensure_parser(codec.codec)?;
        self.state.device.bind_to_thread()?;
        let result = self.run_plan(source, plan, consumer);
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
        source: &dyn PacketSource,
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
                source.read_run(run)?
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

    /// The parser's sequence callback: checks the stream against the GPU's caps, then keeps
    /// the decoder when the new sequence fits it (reconfiguring it if its size changed) or
    /// creates one. Returns the decode surfaces the parser should use.
    fn sequence(&mut self, fmt: &sys::CUVIDEOFORMAT) -> Result<c_int> {
        let want = SequenceFormat::of(fmt);
        self.check_caps(
            want.codec,
            want.chroma,
            want.depth_minus8,
            want.coded_width,
            want.coded_height,
        )?;
        let vs = fmt.video_signal_description;
        self.colour = ColourInfo {
            matrix_coefficients: vs.matrix_coefficients,
            full_range: vs.video_full_range_flag() != 0,
        };
        match self.format {
            Some(f) if f.fits(&want) => {
                if !f.same_size(&want) {
                    self.reconfigure(f, &want)?;
                }
            }
            _ => {
                self.destroy_decoder();
                self.create_decoder(&want)?;
            }
        }
        Ok(want.surfaces as c_int)
    }

    /// Resizes the live decoder (created as `f`) for the sequence `want`, which fits it.
    fn reconfigure(&mut self, f: DecoderFormat, want: &SequenceFormat) -> Result<()> {
        let d = want.display;
        let mut rc = sys::CUVIDRECONFIGUREDECODERINFO {
            ulWidth: want.coded_width,
            ulHeight: want.coded_height,
            ulTargetWidth: want.target_width,
            ulTargetHeight: want.target_height,
            ulNumDecodeSurfaces: want.surfaces,
            ..Default::default()
        };
        rc.display_area.left = d[0] as i16;
        rc.display_area.top = d[1] as i16;
        rc.display_area.right = d[2] as i16;
        rc.display_area.bottom = d[3] as i16;
        // SAFETY: the decoder is live; `rc` is ours.
        let code = unsafe { (self.api.reconfigure_decoder)(self.decoder, &mut rc) };
        cu(code, "cuvidReconfigureDecoder", &self.file)?;
        self.format = Some(DecoderFormat {
            coded_width: want.coded_width,
            coded_height: want.coded_height,
            surfaces: want.surfaces,
            display: want.display,
            target_width: want.target_width,
            target_height: want.target_height,
            ..f
        });
        self.stats.reconfigurations += 1;
        Ok(())
    }

    /// Creates a decoder for `want` (none is live), within the budget when there is one.
    fn create_decoder(&mut self, want: &SequenceFormat) -> Result<()> {
        let bytes = want.decoder_bytes();
        if let Some(b) = &self.budget {
            b.reserve(bytes)?;
        }
        let mut ci = want.create_info(self.lock);
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
            return cu(code, "cuvidCreateDecoder", &self.file);
        }
        self.reserved = bytes;
        self.stats.decoders_created += 1;
        self.stats.decoder_bytes = bytes;
        self.format = Some(DecoderFormat {
            codec: want.codec,
            chroma: want.chroma,
            depth_minus8: want.depth_minus8,
            max_width: want.coded_width,
            max_height: want.coded_height,
            max_surfaces: want.surfaces,
            coded_width: want.coded_width,
            coded_height: want.coded_height,
            surfaces: want.surfaces,
            display: want.display,
            target_width: want.target_width,
            target_height: want.target_height,
        });
        Ok(())
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
