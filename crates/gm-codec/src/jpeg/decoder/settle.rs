//! The outcomes of a batch's paths: the engines' images the CUDA workers took, what the
//! engines refused or a failed call left undone (decoded again on the CUDA backend), and the
//! CPU's final word on everything a GPU path could not decode.

use gm_cuda::{Event, nvtx};

use super::super::error::{ImageError, ImageErrorKind};
use super::super::nvjpeg::GpuJob;
use super::super::options::{BackendChoice, DecoderOptions};
use super::super::output::{BatchTimings, DecodePath, DecodedImage, EncodedImage};
use super::super::plan::{BatchPlan, Jobs};
use super::super::types::Roi;
use super::ImageDecoder;
use super::run::{Failure, Joined, PathsRun, cpu_decode};

/// What a batch reports besides its images: where the host time went, and problems the
/// results do not show.
#[derive(Debug, Default)]
pub(super) struct BatchLog {
    pub(super) timings: BatchTimings,
    pub(super) notes: Vec<String>,
}

impl ImageDecoder {
    /// Settles the paths' outcomes into `plan.results`; returns the CPU-decoded images to
    /// upload, in the output layout.
    pub(super) fn settle(
        &mut self,
        inputs: &[EncodedImage<'_>],
        plan: &mut BatchPlan,
        jobs: &Jobs<'_>,
        ran: PathsRun,
        start: &Event,
        log: &mut BatchLog,
    ) -> Vec<(usize, Vec<u8>)> {
        let PathsRun {
            hw,
            gpu,
            failures,
            cpu_out,
            mut retry,
            cuda_us,
            cpu_us,
            taken_back,
        } = ran;
        log.timings.cuda_us = cuda_us;
        log.timings.cpu_us = cpu_us;
        // The engines' images the CUDA workers took.
        for (i, _) in jobs.hw.iter().skip(taken_back) {
            if let Ok(img) = &mut plan.results[*i] {
                img.path = DecodePath::Cuda;
            }
        }
        let mut redo = self.engines_outcome(inputs, plan, jobs, hw, taken_back, log);
        redo.extend(gpu_huffman_outcome(jobs, gpu, log));
        if !redo.is_empty() {
            self.retry_on_cuda(&redo, start, &mut retry, &mut plan.results);
        }
        let (mut image_failures, mut worker_failures) = (Vec::new(), Vec::new());
        for f in failures {
            match f {
                Failure::Image(i, kind) => image_failures.push((i, kind)),
                Failure::WorkerStart(e) => worker_failures.push(e),
            }
        }
        if let Some(e) = worker_failures.first() {
            // A worker could not even start: its images never ran.
            tracing::warn!(error = %e, "a CUDA worker could not start");
            for (i, _) in &jobs.cuda {
                retry.push(*i);
            }
            retry.sort_unstable();
            retry.dedup();
        }
        let cpu_out = cpu_fallback(
            inputs,
            plan,
            &self.options,
            retry,
            cpu_out,
            &mut image_failures,
        );
        for (i, kind) in image_failures {
            plan.results[i] = Err(ImageError {
                input: inputs[i].name.to_string(),
                kind,
            });
        }
        cpu_out
    }

    /// The engines' thread's outcome: refused images are errors with only the engines
    /// allowed, else decoded again on the CUDA backend, with the images of failed calls.
    fn engines_outcome<'a>(
        &self,
        inputs: &[EncodedImage<'_>],
        plan: &mut BatchPlan,
        jobs: &Jobs<'a>,
        hw: Joined,
        taken_back: usize,
        log: &mut BatchLog,
    ) -> Vec<(usize, GpuJob<'a>)> {
        match hw {
            None => Vec::new(),
            Some(Ok(out)) => {
                log.timings.hardware_us = out.us;
                if let Some(e) = &out.error {
                    log.notes.push(format!(
                        "a hardware batch failed ({e}); its images were decoded one by one"
                    ));
                    tracing::warn!(error = %e, "hardware batch failed; decoding its images one by one");
                }
                let mut refused: Vec<usize> = Vec::new();
                for &k in &out.refused {
                    let i = jobs.hw[k].0;
                    if self.options.backend == BackendChoice::Hardware {
                        plan.results[i] = Err(ImageError {
                            input: inputs[i].name.to_string(),
                            kind: ImageErrorKind::Unsupported(
                                "nvJPEG's hardware backend refuses this image".into(),
                            ),
                        });
                    } else {
                        refused.push(k);
                    }
                }
                out.redo
                    .iter()
                    .chain(&refused)
                    .map(|&k| jobs.hw[k])
                    .collect()
            }
            Some(Err(_)) => {
                log.notes
                    .push("the hardware decode thread panicked; decoded image by image".into());
                tracing::error!("hardware decode thread panicked; decoding its images one by one");
                jobs.hw[..taken_back].to_vec()
            }
        }
    }

    /// Decodes a failed hardware batch's images one by one on the first CUDA worker; those
    /// it refuses go to `retry` (the CPU).
    fn retry_on_cuda(
        &mut self,
        jobs: &[(usize, GpuJob<'_>)],
        start: &Event,
        retry: &mut Vec<usize>,
        results: &mut [Result<DecodedImage, ImageError>],
    ) {
        let _nvtx = nvtx::range(c"nvJPEG: engines' failed batch, one by one on CUDA");
        let Some(w) = self.cuda.first_mut() else {
            retry.extend(jobs.iter().map(|(i, _)| *i));
            return;
        };
        if w.begin(start).is_err() {
            retry.extend(jobs.iter().map(|(i, _)| *i));
            return;
        }
        for (i, j) in jobs {
            let mut job = *j;
            match w.decode(&mut job) {
                Ok(()) => {
                    if let Ok(img) = &mut results[*i] {
                        img.path = DecodePath::Cuda;
                    }
                }
                Err(_) => retry.push(*i),
            }
        }
    }
}

/// The batched GPU-Huffman thread's outcome: the images of a failed call (all of them if
/// the thread panicked), to decode again one by one.
fn gpu_huffman_outcome<'a>(
    jobs: &Jobs<'a>,
    gpu: Joined,
    log: &mut BatchLog,
) -> Vec<(usize, GpuJob<'a>)> {
    match gpu {
        None => Vec::new(),
        Some(Ok(out)) => {
            log.timings.cuda_us = log.timings.cuda_us.max(out.us);
            if let Some(e) = &out.error {
                log.notes.push(format!(
                    "a batched GPU-Huffman call failed ({e}); its images were decoded one by one"
                ));
                tracing::warn!(error = %e, "batched GPU-Huffman call failed; decoding its images one by one");
            }
            out.redo.iter().map(|&k| jobs.cuda[k]).collect()
        }
        Some(Err(_)) => {
            log.notes
                .push("the GPU-Huffman decode thread panicked; decoded image by image".into());
            tracing::error!("GPU-Huffman decode thread panicked; decoding its images one by one");
            jobs.cuda.clone()
        }
    }
}

/// Images a GPU path refused: the CPU decoder's verdict is final. Returns `cpu_out` with
/// their output added; their errors go to `failures`.
fn cpu_fallback(
    inputs: &[EncodedImage<'_>],
    plan: &mut BatchPlan,
    o: &DecoderOptions,
    retry: Vec<usize>,
    mut cpu_out: Vec<(usize, Vec<u8>)>,
    failures: &mut Vec<(usize, ImageErrorKind)>,
) -> Vec<(usize, Vec<u8>)> {
    let ch = o.format.channels();
    for i in retry {
        match cpu_decode(&plan.plans[i], inputs[i].data, o) {
            Ok(px) => {
                // A region asked of the CUDA backend: the CPU decoded the whole image.
                let px = match (&plan.results[i], plan.rois[i]) {
                    (Ok(img), Some(r)) => crop_rows(&px, img.full_size.0, ch, r),
                    _ => px,
                };
                if let Ok(img) = &mut plan.results[i] {
                    img.path = DecodePath::Cpu;
                }
                cpu_out.push((i, px));
            }
            Err(e) => failures.push((i, e)),
        }
    }
    cpu_out
}

/// The rows of `r` from a packed image `width` pixels wide with `ch` bytes per pixel.
pub(crate) fn crop_rows(px: &[u8], width: u32, ch: usize, r: Roi) -> Vec<u8> {
    let (stride, row) = (width as usize * ch, r.width as usize * ch);
    (r.y as usize..(r.y + r.height) as usize)
        .flat_map(|y| {
            let at = y * stride + r.x as usize * ch;
            px.get(at..at + row).unwrap_or_default()
        })
        .copied()
        .collect()
}
