//! What a decoding job runs on: an NVDEC session writing through the fused kernel into GPU
//! memory, or, on a machine without a GPU, a CPU decoder writing through the kernels' CPU
//! twins into host memory. The job logic (plans, bad clips, substitutes) is the same.

use gm_codec::avcodec::{CpuDecoder, HostFrame};
use gm_codec::nvdec::{DecoderPool, DecoderSession, SessionStats};
use gm_codec::{CodecError, WorkerPool};
use gm_cuda::Tensor;
use gm_transforms::cpu::HostImage;
use gm_transforms::{FusedOp, Matrix, Orientation, OutputSpec, PrePass};

/// The decoders of a clip loader: on a GPU, NVDEC sessions and, beside them, sessions for
/// the videos routed to the CPU (a host thread per core of the loader's budget, so that CPU
/// decoding gets the cores and NVDEC keeps its engines fed); on a machine without a GPU, host
/// threads each with a CPU decoder.
pub(crate) enum Decoders {
    /// NVDEC sessions and CPU-route sessions, either absent when no video goes that way.
    Gpu {
        /// Sessions for jobs whose frames are mostly NVDEC's.
        nvdec: Option<DecoderPool>,
        /// Sessions for jobs whose frames are mostly the CPU's. Each pool hands a job's
        /// videos of the other route to the other pool, so every video keeps its route.
        cpu: Option<DecoderPool>,
    },
    /// CPU decoders, the loader running on the host.
    Cpu(WorkerPool<CpuDecoder>),
}

/// The decoder a job was handed.
pub(crate) enum JobDecoder<'a> {
    /// An NVDEC session.
    Gpu(&'a mut DecoderSession),
    /// A CPU decoder.
    Cpu(&'a mut CpuDecoder),
}

impl Decoders {
    /// NVDEC sessions and CPU-route sessions (on the CPU: none and the CPU decoders).
    pub(crate) fn split(&self) -> (usize, usize) {
        match self {
            Decoders::Gpu { nvdec, cpu } => (
                nvdec.as_ref().map_or(0, DecoderPool::sessions),
                cpu.as_ref().map_or(0, DecoderPool::sessions),
            ),
            Decoders::Cpu(p) => (0, p.workers()),
        }
    }

    /// Runs `job` on the next free decoder of the CPU-route pool when `on_cpu` (else of the
    /// NVDEC pool), or of the other pool where the loader has only one.
    pub(crate) fn submit<F>(
        &self,
        on_cpu: bool,
        job: F,
    ) -> crossbeam_channel::Receiver<gm_codec::Result<()>>
    where
        F: FnOnce(JobDecoder<'_>) + Send + 'static,
    {
        match self {
            Decoders::Gpu { nvdec, cpu } => {
                let (first, second) = if on_cpu { (cpu, nvdec) } else { (nvdec, cpu) };
                match first.as_ref().or(second.as_ref()) {
                    Some(p) => p.submit(move |s| {
                        job(JobDecoder::Gpu(s));
                        Ok(())
                    }),
                    None => {
                        let (tx, rx) = crossbeam_channel::bounded(1);
                        let _ = tx.send(Err(CodecError::Pool("a loader without decoders".into())));
                        rx
                    }
                }
            }
            Decoders::Cpu(p) => p.submit(move |d| {
                job(JobDecoder::Cpu(d));
                Ok(())
            }),
        }
    }
}

/// A CPU decoder's counters in a session's terms, so that a job counts the same way on both.
pub(crate) fn cpu_session_stats(d: &CpuDecoder) -> SessionStats {
    let cpu = d.stats();
    SessionStats {
        packets: cpu.packets,
        frames: cpu.delivered,
        runs: cpu.runs,
        cpu,
        ..SessionStats::default()
    }
}

/// A batch's frames while they are written.
pub(crate) enum Slab {
    /// GPU memory from the loader's pool.
    Device(Tensor),
    /// Host memory (the loader runs on the CPU).
    Host(Vec<u8>),
}

impl Slab {
    /// Host memory for `n` frames of `spec`.
    pub(crate) fn host(n: usize, spec: &OutputSpec) -> Slab {
        Slab::Host(vec![0u8; n * spec.image_bytes()])
    }

    /// Moves frame slab `from` (a batch of `clips` equal slabs) to `to`'s place, on the host;
    /// device slabs are moved by the caller on its stream.
    pub(crate) fn move_host_clip(&mut self, clips: usize, from: usize, to: usize) {
        if let Slab::Host(v) = self {
            let per = v.len() / clips.max(1);
            v.copy_within(from * per..(from + 1) * per, to * per);
        }
    }
}

/// A CPU-decoded frame packed as NVDEC lays out surfaces (NV12 or P016), the same bytes the
/// GPU path uploads, so that the kernels' CPU twins read what the kernel reads: the host
/// counterpart of [`surface_source`](crate::surface_source). The buffer is reused from frame
/// to frame.
#[derive(Debug, Default)]
pub struct PackedFrame {
    bytes: Vec<u8>,
    pitch: usize,
}

impl PackedFrame {
    /// An empty buffer.
    pub fn new() -> PackedFrame {
        PackedFrame {
            bytes: Vec::new(),
            pitch: 0,
        }
    }

    /// Packs `f` (4:2:0, 4:2:2, 4:4:4 or grey) and gives the twins' view of it (its colour
    /// matrix and range), shown with `shown`.
    pub fn pack<'a>(
        &'a mut self,
        f: &HostFrame<'_>,
        shown: Orientation,
    ) -> gm_codec::Result<HostImage<'a>> {
        self.pitch = f.semi_planar_pitch();
        let h = f.height as usize;
        self.bytes.resize(f.semi_planar_bytes(self.pitch), 0);
        f.write_semi_planar(&mut self.bytes, self.pitch)
            .ok_or_else(|| CodecError::Consumer(format!("frame {}: cannot pack", f.frame)))?;
        let (luma, chroma) = self.bytes.split_at(self.pitch * h.next_multiple_of(2));
        let format = super::decode::surface_format(f.surface_format(), f.bit_depth);
        Ok(HostImage {
            data: luma,
            chroma,
            pitch: self.pitch,
            width: f.width,
            height: f.height,
            format,
            matrix: Matrix::from_code(f.colour.matrix_coefficients, f.height),
            full_range: f.colour.full_range,
            orientation: shown,
            chroma_filter: super::decode::chroma_filter(f.colour.chroma_location),
        })
    }
}

/// The twin of one slot's fused passes: `pre` then `op` from `src` into frame `slot` of
/// `out` (frames of `spec`).
pub(crate) fn write_host_slot(
    src: &HostImage<'_>,
    pre: &[PrePass],
    op: &FusedOp,
    spec: &OutputSpec,
    out: &mut [u8],
    slot: usize,
) {
    let n = spec.image_bytes();
    if let Some(dst) = out.get_mut(slot * n..(slot + 1) * n) {
        gm_transforms::cpu::fused_passes(src, pre, op, spec, dst);
    }
}
