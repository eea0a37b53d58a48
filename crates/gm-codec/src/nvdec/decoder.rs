//! The parser's callbacks and the decoder they drive: sizing (or reconfiguring) the decoder
//! from each sequence header, submitting pictures, and handing each requested frame, mapped,
//! to the consumer on our stream, unmapping it once the consumer's work is done (an event per
//! mapping; no host synchronization per frame).

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use gm_cuda::{Device, DevicePtr, Event, Stream};
use gm_demux::{CodecInfo, Keep};

use super::api::{Nvcuvid, cu};
use super::budget::DecoderBudget;
use super::format::{DecoderFormat, SequenceFormat, chroma_name};
use super::frame::{ColourInfo, DecodedFrame, FrameStatus, SurfaceFormat};
use super::stats::SessionStats;
use super::sys;
use crate::error::{CodecError, Result};

const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;

pub(super) type Consumer = dyn FnMut(&DecodedFrame<'_>) -> Result<()>;

/// The decoder and the run being decoded: what the parser's callbacks work on.
pub(super) struct State {
    pub(super) api: &'static Nvcuvid,
    pub(super) device: Device,
    pub(super) stream: Stream,
    pub(super) lock: sys::CUvideoctxlock,
    pub(super) decoder: sys::CUvideodecoder,
    pub(super) format: Option<DecoderFormat>,
    pub(super) budget: Option<Arc<DecoderBudget>>,
    pub(super) reserved: usize,
    pub(super) caps: HashMap<(u32, u32, u32), sys::CUVIDDECODECAPS>,
    pub(super) colour: ColourInfo,
    pub(super) file: PathBuf,
    pub(super) codec: Option<CodecInfo>,
    // The run being decoded.
    pub(super) keeps: Vec<Keep>,
    pub(super) wanted: HashMap<i64, usize>,
    pub(super) delivered: Vec<bool>,
    /// Timestamps the decoder displayed in this run, for diagnostics.
    pub(super) displayed: Vec<i64>,
    pub(super) consumer: Option<*mut Consumer>,
    pub(super) error: Option<CodecError>,
    pub(super) ring: VecDeque<(u64, usize)>,
    pub(super) events: Vec<Event>,
    pub(super) next_event: usize,
    pub(super) stats: SessionStats,
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

    pub(super) fn begin_run(&mut self, keep: &[Keep]) {
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
                    budget: self.budget.as_ref().map(|b| b.limit()).unwrap_or(0),
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

    pub(super) fn destroy_decoder(&mut self) {
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
