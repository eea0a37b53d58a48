//! The paths of a batch at the same time: the engines' thread (and the batched GPU-Huffman
//! one), the CUDA workers and the CPU threads.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use gm_cuda::{Event, nvtx};
use parking_lot::Mutex;

use super::super::cpu::{decode_rgb, to_layout};
use super::super::error::ImageErrorKind;
use super::super::formats::decode_other_rgb;
use super::super::nvjpeg::{CudaWorker, GpuJob, HardwareDecoder, NvJpegError};
use super::super::options::DecoderOptions;
use super::super::output::EncodedImage;
use super::super::plan::{BatchPlan, Jobs, Plan};
use super::super::split::EngineQueue;
use super::ImageDecoder;

/// What went wrong on a path, where the results do not say it yet.
#[derive(Debug)]
pub(super) enum Failure {
    /// Input `.0` could not be decoded.
    Image(usize, ImageErrorKind),
    /// A CUDA worker could not start: its images never ran.
    WorkerStart(NvJpegError),
}

/// What the engines' thread did with its share.
pub(super) struct EngineOutcome {
    /// Host time in the thread, µs.
    pub(super) us: u64,
    /// Positions in the engines' queue that nvJPEG's check refused.
    pub(super) refused: Vec<usize>,
    /// Positions in the engines' queue of images in a failed call, to decode again elsewhere.
    pub(super) redo: Vec<usize>,
    /// The first failed call's error.
    pub(super) error: Option<String>,
}

/// An engines' thread's outcome: `None` where it did not run, `Some(Err)` where it panicked.
pub(super) type Joined = Option<std::thread::Result<EngineOutcome>>;

/// What the paths did.
pub(super) struct PathsRun {
    /// The engines' thread.
    pub(super) hw: Joined,
    /// The batched GPU-Huffman thread.
    pub(super) gpu: Joined,
    /// Images that failed, and workers that did not start.
    pub(super) failures: Vec<Failure>,
    /// The CPU threads' output, in the output layout.
    pub(super) cpu_out: Vec<(usize, Vec<u8>)>,
    /// Images a CUDA worker could not decode, for the CPU.
    pub(super) retry: Vec<usize>,
    /// The longest CUDA worker, µs.
    pub(super) cuda_us: u64,
    /// The longest CPU thread, µs.
    pub(super) cpu_us: u64,
    /// The engines' images from this position on were taken by the CUDA workers.
    pub(super) taken_back: usize,
}

/// What the threads of a batch share.
struct Shared<'s, 'a> {
    inputs: &'s [EncodedImage<'a>],
    plans: &'s [Plan],
    jobs: &'s Jobs<'a>,
    options: &'s DecoderOptions,
    start: &'s Event,
    queue: &'s Mutex<EngineQueue>,
    next_cuda: AtomicUsize,
    next_cpu: AtomicUsize,
    failures: Mutex<Vec<Failure>>,
    cpu_out: Mutex<Vec<(usize, Vec<u8>)>>,
    retry: Mutex<Vec<usize>>,
    cuda_us: AtomicU64,
    cpu_us: AtomicU64,
}

impl ImageDecoder {
    /// Engines, CUDA workers and CPU threads at the same time; returns when all are done
    /// with the host side of their work.
    pub(super) fn run_paths(
        &mut self,
        inputs: &[EncodedImage<'_>],
        plan: &BatchPlan,
        jobs: &Jobs<'_>,
        start: &Event,
    ) -> PathsRun {
        let balanced = plan.balanced;
        let floor = if balanced {
            plan.hw_quota
        } else {
            jobs.hw.len()
        };
        let queue = Mutex::new(EngineQueue::new(jobs.hw.len(), floor));
        let gpu_queue = Mutex::new(EngineQueue::new(jobs.cuda.len(), jobs.cuda.len()));
        let shared = Shared {
            inputs,
            plans: &plan.plans,
            jobs,
            options: &self.options,
            start,
            queue: &queue,
            next_cuda: AtomicUsize::new(0),
            next_cpu: AtomicUsize::new(0),
            failures: Mutex::new(Vec::new()),
            cpu_out: Mutex::new(Vec::new()),
            retry: Mutex::new(Vec::new()),
            cuda_us: AtomicU64::new(0),
            cpu_us: AtomicU64::new(0),
        };
        let hardware = self.hardware.as_mut();
        let gpu_batched = self.gpu_batched.as_mut();
        let batched = gpu_batched.is_some();
        let cuda = &mut self.cuda;
        let (hw, gpu) = std::thread::scope(|s| {
            let sh = &shared;
            let (hw_jobs, cuda_jobs) = (&jobs.hw[..], &jobs.cuda[..]);
            let hw = hardware.filter(|_| !hw_jobs.is_empty()).map(|h| {
                let queue = &queue;
                s.spawn(move || run_engines(h, hw_jobs, queue, balanced, true, start))
            });
            let gpu_queue = &gpu_queue;
            let gpu = gpu_batched.filter(|_| !cuda_jobs.is_empty()).map(|g| {
                s.spawn(move || run_engines(g, cuda_jobs, gpu_queue, false, false, start))
            });
            // With the batched GPU-Huffman call the workers only stay for retries.
            let cuda_jobs: &[(usize, GpuJob<'_>)] = if batched { &[] } else { cuda_jobs };
            let workers = cuda.len().min(if balanced {
                cuda_jobs.len() + hw_jobs.len()
            } else {
                cuda_jobs.len()
            });
            for w in cuda.iter_mut().take(workers) {
                s.spawn(move || sh.cuda_worker(w, cuda_jobs));
            }
            let cpu_threads = sh.options.cpu_threads.max(1).min(jobs.cpu.len());
            for _ in 0..cpu_threads {
                s.spawn(move || sh.cpu_thread());
            }
            (hw.map(|h| h.join()), gpu.map(|g| g.join()))
        });
        PathsRun {
            hw,
            gpu,
            failures: shared.failures.into_inner(),
            cpu_out: shared.cpu_out.into_inner(),
            retry: shared.retry.into_inner(),
            cuda_us: shared.cuda_us.into_inner(),
            cpu_us: shared.cpu_us.into_inner(),
            taken_back: queue.into_inner().back(),
        }
    }
}

impl Shared<'_, '_> {
    /// A CUDA worker: the CUDA-only images first (`cuda_jobs`, taken in turn with the other
    /// workers), then the engines' from the back of their queue.
    fn cuda_worker(&self, w: &mut CudaWorker, cuda_jobs: &[(usize, GpuJob<'_>)]) {
        let _nvtx = nvtx::range(c"nvJPEG CUDA backend: worker");
        let t = Instant::now();
        if let Err(e) = w.begin(self.start) {
            self.failures.lock().push(Failure::WorkerStart(e));
            return;
        }
        loop {
            let k = self.next_cuda.fetch_add(1, Ordering::Relaxed);
            let (i, job) = match cuda_jobs.get(k) {
                Some(j) => j,
                None => match self.queue.lock().take_back() {
                    Some(b) => &self.jobs.hw[b],
                    None => break,
                },
            };
            let mut job = *job;
            if let Err(e) = w.decode(&mut job) {
                tracing::debug!(input = self.inputs[*i].name, error = %e, "CUDA backend failed; trying the CPU");
                self.retry.lock().push(*i);
            }
        }
        self.cuda_us
            .fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    /// A CPU thread: the CPU's images, taken in turn with the other CPU threads.
    fn cpu_thread(&self) {
        let _nvtx = nvtx::range(c"gm-codec: CPU decode");
        let t = Instant::now();
        loop {
            let k = self.next_cpu.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = self.jobs.cpu.get(k) else {
                break;
            };
            match cpu_decode(&self.plans[i], self.inputs[i].data, self.options) {
                Ok(px) => self.cpu_out.lock().push((i, px)),
                Err(e) => self.failures.lock().push(Failure::Image(i, e)),
            }
        }
        self.cpu_us
            .fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
    }
}

/// The engines' thread (or the batched GPU-Huffman one): takes chunks from the front of
/// `jobs` until the queue is empty, running nvJPEG's engine check on each image first when
/// `check`, and (when `balanced`) waits for each call
/// before taking the next so that the CUDA workers can take the rest meanwhile.
fn run_engines(
    h: &mut HardwareDecoder,
    jobs: &[(usize, GpuJob<'_>)],
    queue: &Mutex<EngineQueue>,
    balanced: bool,
    check: bool,
    start: &Event,
) -> EngineOutcome {
    let _nvtx = nvtx::range(if check {
        c"nvJPEG engines: batch"
    } else {
        c"nvJPEG GPU Huffman: batch"
    });
    let t = Instant::now();
    let mut out = EngineOutcome {
        us: 0,
        refused: Vec::new(),
        redo: Vec::new(),
        error: None,
    };
    let mut chunk: Vec<GpuJob<'_>> = Vec::new();
    let mut at: Vec<usize> = Vec::new();
    loop {
        let Some(range) = queue.lock().take_front(balanced) else {
            break;
        };
        chunk.clear();
        at.clear();
        let checking = check.then(|| nvtx::range(c"nvJPEG engines: check images"));
        for k in range {
            let job = jobs[k].1;
            if check && !h.supports(job.data, job.orientation) {
                out.refused.push(k);
            } else {
                chunk.push(job);
                at.push(k);
            }
        }
        drop(checking);
        if chunk.is_empty() {
            continue;
        }
        let mut r = h.decode(&mut chunk, start);
        if balanced && r.is_ok() {
            r = h.wait();
        }
        if let Err(e) = r {
            out.error.get_or_insert_with(|| e.to_string());
            out.redo.extend_from_slice(&at);
        }
    }
    out.us = t.elapsed().as_micros() as u64;
    out
}

/// A CPU decode of a planned image into the output layout.
pub(super) fn cpu_decode(
    plan: &Plan,
    data: &[u8],
    o: &DecoderOptions,
) -> Result<Vec<u8>, ImageErrorKind> {
    let img = match plan {
        Plan::Gpu { info, .. } | Plan::CpuJpeg(info) => {
            decode_rgb(data, info, o.apply_orientation)?
        }
        Plan::CpuOther(f) => decode_other_rgb(data, *f, o.max_pixels)?,
        Plan::Failed(k) => return Err(k.clone()),
    };
    Ok(to_layout(&img, o.format))
}
