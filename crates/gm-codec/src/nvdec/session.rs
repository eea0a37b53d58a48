//! One NVDEC decoding session: an nvcuvid parser and decoder that execute gm-demux plans,
//! with packets from any [`PacketSource`].
//!
//! The parser calls back synchronously on the thread that feeds it (see the `decoder`
//! module): the sequence callback sizes the decoder, the decode callback submits pictures, and
//! the display callback hands each requested frame to the consumer.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use gm_cuda::{Device, Event, Stream, nvtx};
use gm_demux::{Codec, CodecInfo, DecodePlan, PacketSource};

use super::api::{cu, nvcuvid};
use super::budget::DecoderBudget;
use super::choice::LIVE_DECODERS;
use super::cpu_route::CpuRoute;
use super::decoder::{Consumer, State, on_decode, on_display, on_sequence};
use super::format::OUTPUT_SURFACES;
use super::frame::{ColourInfo, DecodedFrame};
use super::stats::{SessionStats, timed};
use super::sys;
use crate::error::{CodecError, Result};
use crate::route::{DecoderChoice, Route, Routing, StreamKind};

/// Parsers and decoders on one device, fed with gm-demux plans: one parser per codec, and a
/// few live decoders (one per codec, chroma format and bit depth), so that a session going
/// from one kind of video to another and back reuses them instead of re-creating them. Not
/// shareable between threads; a [`DecoderPool`](crate::nvdec::DecoderPool) runs one per
/// worker thread.
pub struct DecoderSession {
    state: Box<State>,
    parsers: Vec<Parser>,
    routing: Routing,
    /// The CPU decoder, opened the first time a stream is routed to it.
    cpu: Option<CpuRoute>,
}

/// A parser of one codec, and the decoder its last sequence went to: a parser that meets a
/// sequence header it has seen last may not call the sequence callback again.
struct Parser {
    codec: Codec,
    handle: sys::CUvideoparser,
    /// The id of that decoder (0: none yet).
    decoder: u64,
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
                in_decode: Default::default(),
                api,
                device: device.clone(),
                stream,
                lock,
                live: Vec::new(),
                max_live: LIVE_DECODERS,
                current: 0,
                tick: 0,
                budget,
                caps: HashMap::new(),
                colour: ColourInfo::default(),
                signalled: None,
                file: PathBuf::new(),
                codec: None,
                keeps: Vec::new(),
                wanted: HashMap::new(),
                delivered: Vec::new(),
                displayed: Vec::new(),
                ordinal: None,
                shown: 0,
                consumer: None,
                error: None,
                ring: VecDeque::new(),
                events,
                next_event: 0,
                stats: SessionStats::default(),
                display_delay: display_delay(),
            }),
            parsers: Vec::new(),
            routing: Routing::default(),
            cpu: None,
        })
    }

    /// Sets where streams are decoded ([`DecoderChoice::Auto`] by default: NVDEC where it can,
    /// else the CPU) and the CPU decoder's threads per file.
    pub fn set_routing(&mut self, routing: Routing) {
        if self.cpu.is_some() && routing.cpu_threads != self.routing.cpu_threads {
            self.cpu = None;
        }
        self.routing = routing;
    }

    /// How this session routes streams.
    pub fn routing(&self) -> Routing {
        self.routing
    }

    /// Where the stream `codec` describes is decoded under the session's routing, and why;
    /// `decoder = gpu` gives NVDEC's refusal as the error.
    pub fn route(&mut self, file: &std::path::Path, codec: &CodecInfo) -> Result<Route> {
        match self.routing.choice {
            DecoderChoice::Cpu => Ok(Route::Cpu {
                reason: "decoder = cpu".into(),
            }),
            DecoderChoice::Gpu => self.check_support(file, codec).map(|()| Route::Nvdec),
            DecoderChoice::Auto => match self.check_support(file, codec) {
                Ok(()) => Ok(Route::Nvdec),
                Err(CodecError::Unsupported(u)) => Ok(Route::Cpu {
                    reason: format!("not decodable by NVDEC on {}: {}", u.gpu, u.reason),
                }),
                Err(e) => Err(e),
            },
        }
    }

    /// The stream consumers' work is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.state.stream
    }

    /// Counters so far.
    pub fn stats(&self) -> SessionStats {
        let mut s = self.state.stats;
        if let Some(cpu) = &self.cpu {
            s.cpu = cpu.stats();
        }
        s
    }

    /// Checks with `cuvidGetDecoderCaps` that this GPU can decode the stream `codec`
    /// describes, before any packet is fed; an error names codec, profile, chroma format, bit
    /// depth and the GPU.
    pub fn check_support(&mut self, file: &std::path::Path, codec: &CodecInfo) -> Result<()> {
        let st = &mut *self.state;
        st.file = file.to_path_buf();
        st.codec = Some(codec.clone());
        st.check_caps(
            cuvid_codec(codec.codec),
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
        if let Route::Cpu { reason } = self.route(source.name(), codec)? {
            return self.decode_on_cpu(source, plan, &reason, consumer);
        }
        let p = self.ensure_parser(codec.codec)?;
        self.state.device.bind_to_thread()?;
        let result = self.run_plan(p, source, plan, consumer);
        let mut drain_ns = 0;
        let drained = timed(&mut drain_ns, || self.state.drain_ring());
        self.state.stats.time.drain_ns += drain_ns;
        self.state.consumer = None;
        if result.is_err() {
            // A run cut short leaves pictures in the parser; the next plan starts clean.
            self.destroy_parser(p);
        } else if self.state.current_codec() == Some(cuvid_codec(codec.codec)) {
            // (A plan without runs leaves another codec's decoder current.)
            self.parsers[p].decoder = self.state.current;
        }
        result.and(drained)
    }

    fn decode_on_cpu(
        &mut self,
        source: &dyn PacketSource,
        plan: &DecodePlan,
        reason: &str,
        consumer: &mut dyn FnMut(&DecodedFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let cpu = match &mut self.cpu {
            Some(c) => c,
            None => self.cpu.insert(CpuRoute::new(self.routing.cpu_threads)?),
        };
        if self.routing.choice == DecoderChoice::Auto {
            cpu.warn_once(StreamKind::of(source.codec()), reason);
        }
        self.state.device.bind_to_thread()?;
        cpu.decode(
            &self.state.device,
            &self.state.stream,
            source,
            plan,
            consumer,
        )
    }

    fn run_plan(
        &mut self,
        p: usize,
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
                timed(&mut self.state.stats.time.read_ns, || source.read_run(run))?
            };
            self.state.stats.runs += 1;
            let _nvtx = nvtx::range(c"NVDEC: decode a run");
            let nal = source.codec().codec.is_nal();
            // A VP9 run starts at a key frame, whose header holds the colour space in VP9's
            // own numbering; NVDEC's parser does not translate it (a BT.709 stream came out as
            // BT.601 on an H100).
            // NVDEC's parser does not report the chroma location: the demuxer's is kept.
            self.state.colour.chroma_location = source.chroma_location();
            self.state.signalled = match source.codec().codec {
                Codec::Vp9 => packets
                    .first()
                    .and_then(|p| gm_demux::vp9_key_frame_colour(&p.data))
                    .map(|(matrix, full)| ColourInfo {
                        matrix_coefficients: matrix,
                        full_range: full,
                        chroma_location: Default::default(),
                    }),
                _ => None,
            };
            let ordinal = (!nal).then(|| packets.iter().map(|p| p.pts).collect());
            self.state.begin_run(&run.keep, ordinal);
            // A VP9 superframe or an AV1 temporal unit may hold several frames: not one
            // picture, so no end-of-picture flag.
            let end_of_picture = if nal {
                sys::CUvideopacketflags_CUVID_PKT_ENDOFPICTURE
            } else {
                0
            };
            for packet in &packets {
                // Each run ends with end-of-stream, which resets the parser: no discontinuity
                // flag is needed at the next run's start.
                let flags = sys::CUvideopacketflags_CUVID_PKT_TIMESTAMP | end_of_picture;
                self.parse(p, &packet.data, flags, packet.pts)?;
                self.state.stats.packets += 1;
            }
            self.parse(p, &[], sys::CUvideopacketflags_CUVID_PKT_ENDOFSTREAM, 0)?;
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

    fn parse(&mut self, p: usize, data: &[u8], flags: u32, pts: i64) -> Result<()> {
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
        let (api, parser) = (self.state.api, self.parsers[p].handle);
        let mut parse_ns = 0;
        // SAFETY: the parser is live; the payload outlives the call; callbacks get our state.
        let code = timed(&mut parse_ns, || unsafe {
            (api.parse_video_data)(parser, &mut packet)
        });
        self.state.stats.time.parse_ns += parse_ns;
        if let Some(e) = self.state.error.take() {
            return Err(e);
        }
        cu(code, "cuvidParseVideoData", &self.state.file)
    }

    /// The index of the parser for `codec`, created if there is none (or if the decoder its
    /// last sequence went to is gone, so that it calls the sequence callback again), with
    /// its decoder made current.
    fn ensure_parser(&mut self, codec: Codec) -> Result<usize> {
        if let Some(p) = self.parsers.iter().position(|p| p.codec == codec) {
            let bound = self.parsers[p].decoder;
            if bound == 0 || self.state.bind(bound) {
                return Ok(p);
            }
            self.destroy_parser(p);
        }
        let mut params = sys::CUVIDPARSERPARAMS {
            CodecType: cuvid_codec(codec),
            ulMaxNumDecodeSurfaces: 1,
            ulMaxDisplayDelay: self.state.display_delay,
            pUserData: (&mut *self.state as *mut State).cast(),
            pfnSequenceCallback: Some(on_sequence),
            pfnDecodePicture: Some(on_decode),
            pfnDisplayPicture: Some(on_display),
            ..Default::default()
        };
        let mut handle: sys::CUvideoparser = std::ptr::null_mut();
        // SAFETY: params point at callbacks and at our boxed state, which outlives the parser.
        let code = unsafe { (self.state.api.create_video_parser)(&mut handle, &mut params) };
        cu(code, "cuvidCreateVideoParser", &self.state.file)?;
        self.state.stats.parsers_created += 1;
        self.parsers.push(Parser {
            codec,
            handle,
            decoder: 0,
        });
        Ok(self.parsers.len() - 1)
    }

    fn destroy_parser(&mut self, p: usize) {
        let parser = self.parsers.swap_remove(p);
        // SAFETY: created by us, destroyed once.
        unsafe { (self.state.api.destroy_video_parser)(parser.handle) };
    }
}

/// How many pictures the parser submits ahead of the one it hands to the display callback
/// (nvcuvid's `ulMaxDisplayDelay`). With 0 the engine holds one picture of a session at a time
/// and waits while the host maps it and enqueues the consumer's work; a few pictures ahead keep
/// it busy meanwhile, at the cost of one decode surface each. `GM_NVDEC_DISPLAY_DELAY` (0 to
/// 8) overrides the default, for measuring.
pub(super) fn display_delay() -> u32 {
    static DELAY: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *DELAY.get_or_init(|| {
        std::env::var("GM_NVDEC_DISPLAY_DELAY")
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .map_or(DEFAULT_DISPLAY_DELAY, |d| d.min(8))
    })
}

/// See [`display_delay`].
const DEFAULT_DISPLAY_DELAY: u32 = 1;

/// nvcuvid's code for `codec`.
fn cuvid_codec(codec: Codec) -> u32 {
    match codec {
        Codec::H264 => sys::cudaVideoCodec_enum_cudaVideoCodec_H264,
        Codec::Hevc => sys::cudaVideoCodec_enum_cudaVideoCodec_HEVC,
        Codec::Vp9 => sys::cudaVideoCodec_enum_cudaVideoCodec_VP9,
        Codec::Av1 => sys::cudaVideoCodec_enum_cudaVideoCodec_AV1,
    }
}

impl Drop for DecoderSession {
    fn drop(&mut self) {
        let _ = self.state.device.bind_to_thread();
        let _ = self.state.drain_ring();
        while !self.parsers.is_empty() {
            self.destroy_parser(self.parsers.len() - 1);
        }
        self.state.destroy_decoders();
        if !self.state.lock.is_null() {
            // SAFETY: created in `new`, destroyed once, after the decoder that used it.
            unsafe { (self.state.api.ctx_lock_destroy)(self.state.lock) };
        }
    }
}
