//! Streams NVDEC cannot take, decoded on the CPU (libavcodec) and staged into device memory in
//! NVDEC's surface layout (NV12, or P016 for 10-bit; 4:2:2 and 4:4:4 frames in the same layout
//! at their chroma resolution, NV16/P216 and NV24/P416), so that a session's consumers see one
//! kind of frame whichever decoder made it.

use std::collections::HashSet;

use gm_cuda::{Device, DeviceBuffer, Event, PinnedBuffer, Stream};
use gm_demux::{DecodePlan, PacketSource};

use super::frame::DecodedFrame;
use super::stats::timed;
use crate::avcodec::{CpuDecoder, CpuDecoderStats, HostFrame};
use crate::error::{CodecError, Result};
use crate::route::StreamKind;

/// Pinned staging buffers in turn: the host fills one while the previous one's copy runs.
const STAGING: usize = 2;

/// A session's CPU decoder and its staging.
pub(super) struct CpuRoute {
    decoder: CpuDecoder,
    stager: Stager,
    /// Streams already reported as falling back (one warning each).
    warned: HashSet<StreamKind>,
    /// Time staging frames, nanoseconds.
    stage_ns: u64,
    /// Time in the consumer, nanoseconds.
    consume_ns: u64,
}

/// Pinned buffers and the device surface frames are copied through.
#[derive(Default)]
struct Stager {
    staging: Vec<PinnedBuffer>,
    /// Recorded after each buffer's last copy: the host waits for it before writing the buffer
    /// again, since the copy may still be queued behind other work on a busy GPU.
    copied: Vec<Event>,
    next: usize,
    /// Time waiting for `copied`, nanoseconds.
    wait_ns: u64,
    /// One device surface: the copy into it is ordered on the session's stream after the
    /// consumers' work on the previous frame, which the consumer contract puts there too.
    surface: Option<DeviceBuffer>,
}

impl CpuRoute {
    pub(super) fn new(threads: usize) -> Result<CpuRoute> {
        Ok(CpuRoute {
            decoder: CpuDecoder::new(threads)?,
            stager: Stager::default(),
            warned: HashSet::new(),
            stage_ns: 0,
            consume_ns: 0,
        })
    }

    pub(super) fn stats(&self) -> CpuDecoderStats {
        CpuDecoderStats {
            stage_ns: self.stage_ns,
            stage_wait_ns: self.stager.wait_ns,
            consume_ns: self.consume_ns,
            ..self.decoder.stats()
        }
    }

    /// Warns once per kind of stream that goes to the CPU without being asked to.
    pub(super) fn warn_once(&mut self, kind: StreamKind, reason: &str) {
        if self.warned.insert(kind) {
            tracing::warn!(stream = %kind, %reason, "decoding on the CPU (FFmpeg's libavcodec, or the bundled AV1 decoder): NVDEC cannot take this stream");
        }
    }

    /// Decodes `plan` on the CPU, handing each requested frame to `consumer` as a device
    /// surface on `stream`.
    pub(super) fn decode(
        &mut self,
        device: &Device,
        stream: &Stream,
        source: &dyn PacketSource,
        plan: &DecodePlan,
        consumer: &mut dyn FnMut(&DecodedFrame<'_>) -> Result<()>,
    ) -> Result<()> {
        let file = source.name();
        let stager = &mut self.stager;
        let (stage_ns, consume_ns) = (&mut self.stage_ns, &mut self.consume_ns);
        self.decoder.decode(source, plan, &mut |host| {
            let staged =
                timed(stage_ns, || stager.stage(device, stream, host)).map_err(|e| match e {
                    CodecError::Decode { frame, reason, .. } => CodecError::Decode {
                        file: file.to_path_buf(),
                        frame,
                        reason,
                    },
                    other => other,
                })?;
            let frame = DecodedFrame {
                frame: host.frame,
                pts: host.pts,
                slots: host.slots,
                luma: staged.0,
                chroma: staged
                    .0
                    .offset(staged.1 * (host.height as usize).next_multiple_of(2)),
                pitch: staged.1,
                width: host.width,
                height: host.height,
                format: host.surface_format(),
                bit_depth: host.bit_depth,
                colour: host.colour,
                status: host.status,
                stream,
            };
            timed(consume_ns, || consumer(&frame))
        })
    }
}

impl Stager {
    /// Copies `host` into the device surface in NVDEC's layout; gives its address and pitch.
    fn stage(
        &mut self,
        device: &Device,
        stream: &Stream,
        host: &HostFrame<'_>,
    ) -> Result<(gm_cuda::DevicePtr, usize)> {
        let pitch = host.semi_planar_pitch().next_multiple_of(256);
        let bytes = host.semi_planar_bytes(pitch);
        if self.staging.len() < STAGING {
            for _ in self.staging.len()..STAGING {
                self.staging.push(PinnedBuffer::alloc(device, bytes, true)?);
                self.copied.push(Event::new(device)?);
            }
        }
        let slot = self.next;
        self.next = (self.next + 1) % STAGING;
        // An event never recorded counts as complete.
        timed(&mut self.wait_ns, || self.copied[slot].synchronize())?;
        if self.staging[slot].len() < bytes {
            self.staging[slot] = PinnedBuffer::alloc(device, bytes, true)?;
        }
        if self.surface.as_ref().is_none_or(|s| s.len() < bytes) {
            // The old surface may still be read by queued work.
            stream.synchronize()?;
            self.surface = Some(DeviceBuffer::alloc(device, bytes)?);
        }
        let pinned = &mut self.staging[slot];
        let written = host.write_semi_planar(&mut pinned.as_mut_slice()?[..bytes], pitch);
        if written.is_none() {
            return Err(CodecError::Decode {
                file: Default::default(),
                frame: host.frame,
                reason: format!(
                    "a {} frame of {}x{} does not fit its staging surface",
                    host.layout.pixel_format(host.bit_depth),
                    host.width,
                    host.height
                ),
            });
        }
        let surface = self
            .surface
            .as_mut()
            .ok_or_else(|| CodecError::Pool("no staging surface".into()))?;
        stream.copy_to_device(pinned, 0, surface, 0, bytes)?;
        self.copied[slot].record(stream)?;
        Ok((surface.device_ptr(), pitch))
    }
}
