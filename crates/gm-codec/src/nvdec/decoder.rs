//! The parser's callbacks and the decoder they drive: sizing (or reconfiguring) the decoder
//! from each sequence header, submitting pictures, and handing each requested frame, mapped,
//! to the consumer on our stream, unmapping it once the consumer's work is done (an event per
//! mapping; no host synchronization per frame).

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use gm_cuda::{Device, DevicePtr, Event, Stream, nvtx};
use gm_demux::{CodecInfo, Keep};

use super::api::{Nvcuvid, cu};
use super::budget::DecoderBudget;
use super::choice::{Action, Slot, choose};
use super::format::{Capacity, DecoderFormat, SequenceFormat, chroma_name};
use super::frame::{ColourInfo, DecodedFrame, FrameStatus, SurfaceFormat};
use super::stats::{SessionStats, timed};
use super::sys;
use super::waits::{self, InDecode};
use crate::error::{CodecError, Result};

const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;

pub(super) type Consumer = dyn FnMut(&DecodedFrame<'_>) -> Result<()>;

/// A decoder the session keeps, idle or in use.
pub(super) struct LiveDecoder {
    /// Unique within the session (handles may be reused by nvcuvid once destroyed).
    pub(super) id: u64,
    pub(super) handle: sys::CUvideodecoder,
    pub(super) slot: Slot,
}

/// A frame mapped for a consumer, unmapped (against the decoder that mapped it) once the
/// consumer's work, which `event` follows, is done.
pub(super) struct Mapped {
    decoder: sys::CUvideodecoder,
    ptr: u64,
    event: usize,
}

/// The decoders and the run being decoded: what the parser's callbacks work on.
/// nvcuvid's limit on a decoder's decode surfaces.
const MAX_DECODE_SURFACES: u32 = 32;

pub(super) struct State {
    pub(super) api: &'static Nvcuvid,
    pub(super) device: Device,
    pub(super) stream: Stream,
    pub(super) lock: sys::CUvideoctxlock,
    /// Live decoders, at most `max_live`, one per key.
    pub(super) live: Vec<LiveDecoder>,
    pub(super) max_live: usize,
    /// The id of the decoder pictures go to (0: none).
    pub(super) current: u64,
    /// Counts sequences, for least-recently-used eviction, and gives decoders their ids.
    pub(super) tick: u64,
    pub(super) budget: Option<Arc<DecoderBudget>>,
    pub(super) caps: HashMap<(u32, u32, u32), sys::CUVIDDECODECAPS>,
    pub(super) colour: ColourInfo,
    /// The colour the run's bitstream signals where NVDEC's parser reports it otherwise
    /// (VP9 numbers its colour spaces its own way): used instead of `colour`.
    pub(super) signalled: Option<ColourInfo>,
    pub(super) file: PathBuf,
    pub(super) codec: Option<CodecInfo>,
    // The run being decoded.
    pub(super) keeps: Vec<Keep>,
    pub(super) wanted: HashMap<i64, usize>,
    pub(super) delivered: Vec<bool>,
    /// Timestamps the decoder displayed in this run, for diagnostics.
    pub(super) displayed: Vec<i64>,
    /// For VP9 and AV1, the pts of the run's packets in the order fed: every packet shows
    /// exactly one frame, in decode order, so the k-th display is the k-th packet's frame.
    /// nvcuvid's display timestamps are not reliable there (after a superframe with a hidden
    /// frame, it reported the previous packet's for the rest of a run).
    pub(super) ordinal: Option<Vec<i64>>,
    /// Displays so far in this run.
    pub(super) shown: usize,
    pub(super) consumer: Option<*mut Consumer>,
    pub(super) error: Option<CodecError>,
    pub(super) ring: VecDeque<Mapped>,
    pub(super) events: Vec<Event>,
    pub(super) next_event: usize,
    pub(super) stats: SessionStats,
    /// Pictures submitted and perhaps still decoding (see [`waits`]).
    pub(super) in_decode: InDecode,
    /// Pictures the parser keeps submitted ahead of the one it displays (see
    /// [`display_delay`](super::session::display_delay)).
    pub(super) display_delay: u32,
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

    pub(super) fn check_caps(
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

    /// Starts a run that must deliver `keep`; `ordinal` as [`State::ordinal`] says.
    pub(super) fn begin_run(&mut self, keep: &[Keep], ordinal: Option<Vec<i64>>) {
        self.keeps = keep.to_vec();
        self.wanted = keep.iter().enumerate().map(|(i, k)| (k.pts, i)).collect();
        self.delivered = vec![false; keep.len()];
        self.displayed.clear();
        self.ordinal = ordinal;
        self.shown = 0;
    }

    /// The pts of the frame a display callback hands over.
    fn display_pts(&mut self, disp: &sys::CUVIDPARSERDISPINFO) -> i64 {
        let k = self.shown;
        self.shown += 1;
        match self.ordinal.as_ref().and_then(|o| o.get(k)) {
            Some(&pts) => {
                if pts != disp.timestamp {
                    tracing::trace!(pts, reported = disp.timestamp, "display timestamp differs");
                }
                pts
            }
            None => disp.timestamp,
        }
    }

    /// The parser's sequence callback: checks the stream against the GPU's caps, then lets
    /// [`choose`] pick a live decoder (reconfigured if its size changed) or create one.
    /// Returns the decode surfaces the parser should use.
    fn sequence(&mut self, fmt: &sys::CUVIDEOFORMAT) -> Result<c_int> {
        let mut want = SequenceFormat::of(fmt);
        // Pictures queued ahead of display hold decode surfaces of their own.
        want.surfaces = (want.surfaces + self.display_delay).min(MAX_DECODE_SURFACES);
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
            chroma_location: self.colour.chroma_location,
        };
        self.tick += 1;
        let slots: Vec<Slot> = self.live.iter().map(|d| d.slot).collect();
        let free = self
            .budget
            .as_ref()
            .map(|b| b.limit().saturating_sub(b.used()));
        match choose(&slots, &want, self.max_live, free) {
            Action::Reuse(i) => self.use_decoder(i),
            Action::Reconfigure(i) => {
                self.reconfigure(i, &want)?;
                self.use_decoder(i);
            }
            Action::Create {
                evict,
                capacity,
                bytes,
            } => {
                let handles: Vec<_> = evict.iter().map(|&i| self.live[i].handle).collect();
                for h in handles {
                    self.destroy_decoder(h);
                }
                self.create_decoder(&want, capacity, bytes)?;
            }
        }
        Ok(want.surfaces as c_int)
    }

    /// Makes the live decoder `i` the one pictures go to.
    fn use_decoder(&mut self, i: usize) {
        let d = &mut self.live[i];
        d.slot.last_used = self.tick;
        if d.id != self.current {
            self.current = d.id;
            self.stats.decoder_reuses += 1;
        }
    }

    /// The decoder pictures go to.
    fn current(&self) -> Option<&LiveDecoder> {
        self.live.iter().find(|d| d.id == self.current)
    }

    /// The codec (nvcuvid's code) of the decoder pictures go to.
    pub(super) fn current_codec(&self) -> Option<u32> {
        self.current().map(|d| d.slot.format.codec)
    }

    /// Makes the decoder `id` the one pictures go to, when it is still live; false otherwise.
    pub(super) fn bind(&mut self, id: u64) -> bool {
        let live = self.live.iter().any(|d| d.id == id);
        if live && id != self.current {
            self.current = id;
            self.stats.decoder_reuses += 1;
        }
        live
    }

    /// Resizes the live decoder `i` for the sequence `want`, which fits it.
    fn reconfigure(&mut self, i: usize, want: &SequenceFormat) -> Result<()> {
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
        let live = &mut self.live[i];
        // SAFETY: the decoder is live and idle; `rc` is ours.
        let code = unsafe { (self.api.reconfigure_decoder)(live.handle, &mut rc) };
        cu(code, "cuvidReconfigureDecoder", &self.file)?;
        live.slot.format = live.slot.format.reconfigured(want);
        self.stats.reconfigurations += 1;
        Ok(())
    }

    /// Reserves `bytes` in the budget, if there is one; when another session took the room
    /// since [`choose`] looked, evicts this session's least recently used decoders first.
    fn reserve(&mut self, bytes: usize) -> Result<()> {
        let Some(b) = self.budget.clone() else {
            return Ok(());
        };
        loop {
            match b.reserve(bytes) {
                Ok(()) => return Ok(()),
                Err(e) => match self.live.iter().min_by_key(|d| d.slot.last_used) {
                    Some(d) => {
                        let h = d.handle;
                        self.destroy_decoder(h);
                    }
                    None => return Err(e),
                },
            }
        }
    }

    /// Creates a decoder of capacity `capacity` for `want` (no live one has its key) and
    /// makes it current, within the budget when there is one.
    fn create_decoder(
        &mut self,
        want: &SequenceFormat,
        capacity: Capacity,
        bytes: usize,
    ) -> Result<()> {
        self.reserve(bytes)?;
        let mut ci = want.create_info(capacity, self.lock);
        let mut handle: sys::CUvideodecoder = std::ptr::null_mut();
        // SAFETY: `ci` is fully initialized; the decoder handle is ours to destroy.
        let code = unsafe { (self.api.create_decoder)(&mut handle, &mut ci) };
        if code != 0 {
            if let Some(b) = &self.budget {
                b.release(bytes);
            }
            if code == CUDA_ERROR_OUT_OF_MEMORY {
                return Err(CodecError::OutOfDecoderMemory {
                    requested: bytes,
                    in_use: self.budget.as_ref().map(|b| b.used()).unwrap_or(0),
                    budget: self.budget.as_ref().map(|b| b.limit()).unwrap_or(0),
                });
            }
            return cu(code, "cuvidCreateDecoder", &self.file);
        }
        self.tick += 1;
        self.live.push(LiveDecoder {
            id: self.tick,
            handle,
            slot: Slot {
                format: DecoderFormat::created(want, capacity),
                bytes,
                last_used: self.tick,
            },
        });
        self.current = self.tick;
        self.stats.decoders_created += 1;
        self.stats.decoder_bytes += bytes;
        Ok(())
    }

    /// Destroys the live decoder `handle`, after unmapping every mapped frame.
    fn destroy_decoder(&mut self, handle: sys::CUvideodecoder) {
        let _ = self.drain_ring();
        let Some(i) = self.live.iter().position(|d| d.handle == handle) else {
            return;
        };
        let d = self.live.swap_remove(i);
        self.in_decode.forget(d.handle);
        // SAFETY: created by us, destroyed once, nothing mapped (ring drained).
        unsafe { (self.api.destroy_decoder)(d.handle) };
        if let Some(b) = &self.budget {
            b.release(d.slot.bytes);
        }
        if self.current == d.id {
            self.current = 0;
        }
        self.stats.decoder_bytes -= d.slot.bytes;
        self.stats.decoders_destroyed += 1;
    }

    /// Destroys every live decoder.
    pub(super) fn destroy_decoders(&mut self) {
        while let Some(h) = self.live.last().map(|d| d.handle) {
            self.destroy_decoder(h);
        }
    }

    fn decode_picture(&mut self, pic: *mut sys::CUVIDPICPARAMS) -> Result<()> {
        let Some(decoder) = self.current().map(|d| d.handle) else {
            return Err(CodecError::Decode {
                file: self.file.clone(),
                frame: 0,
                reason: "picture data before any sequence header".into(),
            });
        };
        let api = self.api;
        let sleeping = waits::sleeping();
        // SAFETY: the parser hands us valid picture parameters for our decoder.
        let index = unsafe { (*pic).CurrPicIdx };
        if sleeping {
            let in_decode = &mut self.in_decode;
            self.stats.status_reads += timed(&mut self.stats.time.decoded_wait_ns, || {
                in_decode.make_room(&mut |d, i| waits::status(api, d, i), decoder, index)
            });
        }
        // SAFETY: the parser hands us valid picture parameters for our decoder.
        let code = timed(&mut self.stats.time.submit_ns, || unsafe {
            (api.decode_picture)(decoder, pic)
        });
        cu(code, "cuvidDecodePicture", &self.file)?;
        if sleeping {
            self.in_decode.push(decoder, index);
        }
        Ok(())
    }

    fn display(&mut self, disp: &sys::CUVIDPARSERDISPINFO) -> Result<()> {
        let pts = self.display_pts(disp);
        if self.displayed.len() < 64 {
            self.displayed.push(pts);
        }
        let Some(&k) = self.wanted.get(&pts) else {
            return Ok(());
        };
        let Some((decoder, f)) = self.current().map(|d| (d.handle, d.slot.format)) else {
            return Ok(());
        };
        let api = self.api;
        // Mapped only once decoded, so that the map does not wait inside nvcuvid.
        let in_decode = &mut self.in_decode;
        let (status, reads) = match waits::sleeping() {
            true => timed(&mut self.stats.time.decoded_wait_ns, || {
                in_decode.decoded(
                    &mut |d, i| waits::status(api, d, i),
                    decoder,
                    disp.picture_index,
                )
            }),
            false => (waits::status(api, decoder, disp.picture_index), 0),
        };
        self.stats.status_reads += reads;
        let frame_status = match status {
            Some(sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_Error) => FrameStatus::Error,
            Some(sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_Error_Concealed) => {
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
        let code = timed(&mut self.stats.time.map_ns, || {
            let _nvtx = nvtx::range(c"NVDEC: map a picture");
            // SAFETY: maps a displayed picture of our decoder; unmapped in `retire`/`drain_ring`.
            unsafe {
                (api.map_video_frame)(decoder, disp.picture_index, &mut ptr, &mut pitch, &mut proc)
            }
        });
        cu(code, "cuvidMapVideoFrame64", &self.file)?;
        let keep = &self.keeps[k];
        let frame = DecodedFrame {
            frame: keep.frame,
            pts: keep.pts,
            slots: &keep.slots,
            luma: DevicePtr(ptr),
            // The chroma plane starts at an even row (NVIDIA's NvDecoder does the same): a
            // 321x181 VP9 stream's chroma read from row 181 came out wrong.
            chroma: DevicePtr(
                ptr + u64::from(pitch) * u64::from(f.target_height.next_multiple_of(2)),
            ),
            pitch: pitch as usize,
            width: f.target_width,
            height: f.target_height,
            format: if f.depth_minus8 > 0 {
                SurfaceFormat::P016
            } else {
                SurfaceFormat::Nv12
            },
            bit_depth: (f.depth_minus8 + 8) as u8,
            colour: ColourInfo {
                chroma_location: self.colour.chroma_location,
                ..self.signalled.unwrap_or(self.colour)
            },
            status: frame_status,
            stream: &self.stream,
        };
        let mut consume_ns = 0;
        let result = match self.consumer {
            Some(c) => timed(&mut consume_ns, || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    // SAFETY: set by `decode` for the duration of the parse calls that reach
                    // here.
                    unsafe { (*c)(&frame) }
                }))
            })
            .unwrap_or_else(|_| Err(CodecError::Consumer("the consumer panicked".into()))),
            None => Ok(()),
        };
        self.stats.time.consume_ns += consume_ns;
        self.delivered[k] = true;
        self.stats.frames += 1;
        let slot = self.next_event;
        self.next_event = (self.next_event + 1) % self.events.len();
        let recorded = self.events[slot].record(&self.stream);
        self.ring.push_back(Mapped {
            decoder,
            ptr,
            event: slot,
        });
        if self.ring.len() >= self.events.len() {
            let mut retire_ns = 0;
            let retired = timed(&mut retire_ns, || self.retire_oldest());
            self.stats.time.retire_ns += retire_ns;
            retired?;
        }
        recorded?;
        result
    }

    fn retire_oldest(&mut self) -> Result<()> {
        if let Some(m) = self.ring.pop_front() {
            let _nvtx = nvtx::range(c"NVDEC: wait for a mapped frame's consumers, unmap");
            let waited = self.events[m.event].synchronize();
            // SAFETY: mapped by `display` on `m.decoder` (live: decoders are destroyed only
            // after the ring is drained), unmapped once, after the consumer's work finished.
            let code = unsafe { (self.api.unmap_video_frame)(m.decoder, m.ptr) };
            waited?;
            cu(code, "cuvidUnmapVideoFrame64", &self.file)?;
        }
        Ok(())
    }

    pub(super) fn drain_ring(&mut self) -> Result<()> {
        let mut first = Ok(());
        while !self.ring.is_empty() {
            if let Err(e) = self.retire_oldest() {
                first = first.and(Err(e));
            }
        }
        first
    }
}

pub(super) unsafe extern "C" fn on_sequence(
    user: *mut c_void,
    fmt: *mut sys::CUVIDEOFORMAT,
) -> c_int {
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

pub(super) unsafe extern "C" fn on_decode(
    user: *mut c_void,
    pic: *mut sys::CUVIDPICPARAMS,
) -> c_int {
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

pub(super) unsafe extern "C" fn on_display(
    user: *mut c_void,
    disp: *mut sys::CUVIDPARSERDISPINFO,
) -> c_int {
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
