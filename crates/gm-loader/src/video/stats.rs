//! Counters of a clip loader.

use gm_codec::nvdec::{SessionStats, SessionTime};

use crate::error::SampleError;

/// What a [`ClipLoader`](super::ClipLoader) has done so far (all epochs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClipStats {
    /// Batches delivered.
    pub batches: u64,
    /// Clips delivered.
    pub clips: u64,
    /// Frames delivered (clips x cameras x frames per clip).
    pub frames: u64,
    /// Packets fed to the decoders: frames decoded, delivered or not. Over `frames`, the
    /// decoding each delivered frame cost.
    pub packets_decoded: u64,
    /// Bad clips met (a file that could not be read, a frame the decoder could not decode).
    pub bad_clips: u64,
    /// Bad clips replaced under [`BadSamplePolicy::Substitute`](crate::BadSamplePolicy).
    pub substituted: u64,
    /// Clips left out of their batch.
    pub skipped: u64,
    /// The first 16 distinct bad clips, with file and reason.
    pub first_bad: Vec<SampleError>,
    /// Time the decoding jobs took, summed over sessions, microseconds. Sessions times the
    /// epoch's wall time less this is the time sessions waited for jobs.
    pub decode_us: u64,
    /// Of `decode_us`: planning the jobs' batches and taking their memory from the pool.
    pub start_us: u64,
    /// Of `decode_us`: finishing batches (bad clips replaced, blur, ready events) and handing
    /// them to the consumer's queue.
    pub finish_us: u64,
    /// Of `decode_us`: where the NVDEC sessions' time went (reading packets, parsing,
    /// submitting, mapping, the fused kernel's launches, waiting on mapped frames).
    pub session_time: SessionTime,
    /// Decode runs (a keyframe to the last frame wanted; each ends with a parser flush).
    pub runs: u64,
    /// Time the consumer waited for batches, microseconds.
    pub wait_us: u64,
    /// NVDEC decoders created, summed over sessions.
    pub decoders_created: u64,
    /// NVDEC decoders destroyed to make room for others, summed over sessions.
    pub decoders_destroyed: u64,
    /// Switches to another live NVDEC decoder instead of creating one, summed over sessions.
    pub decoder_reuses: u64,
    /// NVDEC parsers created, summed over sessions.
    pub parsers_created: u64,
    /// Frames decoded on the CPU (libavcodec) for streams routed there, requested or not.
    pub cpu_frames_decoded: u64,
    /// Decode runs on the CPU.
    pub cpu_runs: u64,
    /// Time in libavcodec, summed over sessions, microseconds.
    pub cpu_decode_us: u64,
    /// Of `cpu_decode_us`: staging CPU-decoded frames for the GPU (packing into pinned
    /// memory, queueing the copy), microseconds.
    pub cpu_stage_us: u64,
    /// Of `cpu_stage_us`: waiting for a staging buffer's previous copy, microseconds.
    pub cpu_stage_wait_us: u64,
    /// Of `cpu_decode_us`: enqueuing the GPU work for CPU-decoded frames, microseconds.
    pub cpu_consume_us: u64,
    /// Videos of NVDEC jobs handed to the CPU-route sessions (a job's CPU-routed videos
    /// decode there while the job's session decodes its own on NVDEC).
    pub cpu_parts: u64,
    /// Of `cpu_parts`: parts the job decoded itself after all (the part failed to run).
    pub cpu_parts_taken_back: u64,
    /// Of `cpu_parts`: parts not decoded because the consumer dropped their epoch first.
    pub cpu_parts_dropped: u64,
    /// Videos of CPU-route jobs handed to the NVDEC sessions (a job's NVDEC-routed videos
    /// decode there while the job's CPU decoder decodes its own).
    pub nvdec_parts: u64,
    /// Of `nvdec_parts`: parts the job decoded itself after all (the part failed to run).
    pub nvdec_parts_taken_back: u64,
    /// Of `nvdec_parts`: parts not decoded because the consumer dropped their epoch first.
    pub nvdec_parts_dropped: u64,
    /// Jobs whose own videos were decoded before their parts: the last part finished their
    /// batches on its session while the job's session took the next job.
    pub parked_jobs: u64,
    /// NVDEC decode-status reads while sessions slept for pictures to decode (each wakes a
    /// session thread; 0 with `GM_NVDEC_WAIT=nvcuvid`).
    pub nvdec_status_reads: u64,
}

impl ClipStats {
    /// Counts a bad clip; true when it is kept in `first_bad` (not seen before, while there
    /// is room).
    pub(crate) fn record_bad(&mut self, e: SampleError) -> bool {
        self.bad_clips += 1;
        let new = self.first_bad.len() < 16 && !self.first_bad.contains(&e);
        if new {
            self.first_bad.push(e);
        }
        new
    }

    /// Adds what a decoder did between two readings of its counters.
    pub(crate) fn count_sessions(&mut self, before: &SessionStats, after: &SessionStats) {
        self.packets_decoded += after.packets - before.packets;
        self.decoders_created += after.decoders_created - before.decoders_created;
        self.decoders_destroyed += after.decoders_destroyed - before.decoders_destroyed;
        self.decoder_reuses += after.decoder_reuses - before.decoder_reuses;
        self.parsers_created += after.parsers_created - before.parsers_created;
        self.nvdec_status_reads += after.status_reads - before.status_reads;
        self.cpu_frames_decoded += after.cpu.frames - before.cpu.frames;
        self.cpu_runs += after.cpu.runs - before.cpu.runs;
        self.cpu_decode_us += (after.cpu.decode_ns - before.cpu.decode_ns) / 1000;
        self.cpu_stage_us += (after.cpu.stage_ns - before.cpu.stage_ns) / 1000;
        self.cpu_stage_wait_us += (after.cpu.stage_wait_ns - before.cpu.stage_wait_ns) / 1000;
        self.cpu_consume_us += (after.cpu.consume_ns - before.cpu.consume_ns) / 1000;
        self.runs += after.runs - before.runs;
        self.session_time.add(&after.time.since(&before.time));
    }

    /// Frames decoded per frame delivered (1.0: nothing decoded in vain).
    pub fn decode_amplification(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.packets_decoded as f64 / self.frames as f64
        }
    }
}
