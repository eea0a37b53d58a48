//! The end of a batch on the output stream: the upload of CPU-decoded images, the join of
//! every decoder's stream, and the conversion of decoded planes to RGB.

use gm_cuda::{DevicePtr, Event, PooledDeviceBuffer};

use super::super::color::{self, ColorJob};
use super::super::error::{DecoderError, ImageError};
use super::super::output::{DecodePath, DecodedImage};
use super::super::plan::{BatchPlan, Jobs, Plan};
use super::ImageDecoder;

impl ImageDecoder {
    /// Copies the CPU-decoded images through pinned staging into `buffer`, on the output
    /// stream after `start`.
    pub(super) fn upload_cpu(
        &mut self,
        cpu_out: &[(usize, Vec<u8>)],
        results: &[Result<DecodedImage, ImageError>],
        start: &Event,
        buffer: &mut PooledDeviceBuffer,
    ) -> Result<(), DecoderError> {
        if cpu_out.is_empty() {
            return Ok(());
        }
        let bytes: usize = cpu_out.iter().map(|(_, px)| px.len()).sum();
        let mut staging = self.pinned.acquire(bytes)?;
        let mut at = 0;
        {
            let host = staging.as_mut_slice()?;
            for (_, px) in cpu_out {
                host[at..at + px.len()].copy_from_slice(px);
                at += px.len();
            }
        }
        self.stream.wait(start)?;
        let mut at = 0;
        for (i, px) in cpu_out {
            if let Ok(img) = &results[*i]
                && img.len == px.len()
            {
                self.stream.copy_to_device(
                    &mut staging,
                    at,
                    &mut **buffer,
                    img.offset,
                    px.len(),
                )?;
            }
            at += px.len();
        }
        Ok(())
    }

    /// Orders the output stream after every decoder's stream.
    pub(super) fn join_streams(&self, jobs: &Jobs<'_>) -> Result<(), DecoderError> {
        if let Some(h) = &self.hardware
            && !jobs.hw.is_empty()
        {
            let done = Event::new(&self.device)?;
            done.record(h.stream())?;
            self.stream.wait(&done)?;
        }
        if let Some(g) = &self.gpu_batched
            && !jobs.cuda.is_empty()
        {
            let done = Event::new(&self.device)?;
            done.record(g.stream())?;
            self.stream.wait(&done)?;
        }
        for (w, e) in self.cuda.iter().zip(&self.cuda_done) {
            e.record(w.stream())?;
            self.stream.wait(e)?;
        }
        Ok(())
    }

    /// Planes to RGB for the images a GPU path decoded (a CPU retry wrote its own output):
    /// one launch, its job table at the start of `planes_buf`.
    pub(super) fn convert_planes(
        &self,
        plan: &BatchPlan,
        planes_buf: &mut PooledDeviceBuffer,
        plane_base: u64,
        base: u64,
    ) -> Result<(), DecoderError> {
        let o = &self.options;
        let jobs: Vec<ColorJob> = plan
            .plans
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let (
                    Plan::Gpu {
                        planes: Some(l),
                        info,
                        ..
                    },
                    Ok(img),
                    Some(at),
                ) = (p, &plan.results[i], plan.plane_at[i])
                else {
                    return None;
                };
                (img.path != DecodePath::Cpu).then(|| {
                    ColorJob::new(
                        l,
                        DevicePtr(plane_base + at as u64),
                        DevicePtr(base + img.offset as u64),
                        o.format,
                        if o.apply_orientation {
                            info.orientation
                        } else {
                            1
                        },
                    )
                })
            })
            .collect();
        color::launch(&self.stream, &jobs, &mut **planes_buf, 0)?;
        Ok(())
    }
}
