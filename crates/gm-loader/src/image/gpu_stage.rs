//! The GPU stage: one batched decode, then one fused transform launch into a pooled batch
//! tensor, both on the decoder's stream.

use std::sync::Arc;
use std::time::Instant;

use gm_codec::jpeg::{DecodedBatch, DecoderOptions, EncodedImage, ImageDecoder, Roi};
use gm_cuda::{Device, DevicePool, Event, PoolConfig, PoolStats, Tensor, nvtx};
use gm_transforms::{
    BatchOpsKernel, Blur, BlurKernel, FusedKernel, FusedOp, OutputSpec, Passes, PrePass, SampleRng,
    SourceImage,
};

use super::augment::{draw_erases, draw_mix};
use super::batch::Batch;
use super::cache::{Cache, Entry};
use super::context::Shared;
use super::device_targets;
use super::masks::{BatchMasks, MaskStaging, SampleMasks, StageMasks};
use super::output::batch_shape;
use super::read::Prepared;
use super::sizes::{BatchSizes, place};
use crate::bad_samples::{Next, Tally};
use crate::error::{LoaderError, SampleErrorKind};
use crate::tensors::Images;

/// The decoder, the kernel and the batch pool of one loader.
pub(crate) struct GpuStage {
    pub(crate) device: Device,
    pub(crate) decoder: ImageDecoder,
    pub(crate) kernel: FusedKernel,
    /// RandomErasing and MixUp/CutMix on the finished batch.
    batch_ops: BatchOpsKernel,
    /// GaussianBlur and GaussianNoise, the passes after the fused kernel.
    post: BlurKernel,
    pool: DevicePool,
    /// Pinned staging for the masks moved with the images.
    masks: MaskStaging,
}

/// A slot of the batch still waiting for an image.
struct Pending {
    slot: usize,
    index: usize,
    bytes: Result<Vec<u8>, SampleErrorKind>,
    masks: Option<SampleMasks>,
    attempt: u32,
}

impl Pending {
    /// Slot `slot`'s try `attempt` with sample `index`, read now (a substitute).
    fn read(shared: &Shared, slot: usize, index: usize, attempt: u32) -> Pending {
        let (bytes, masks) = match super::masks::read(shared, index) {
            Ok(masks) => (shared.read(index), masks.map(SampleMasks::Host)),
            Err(reason) => (Err(reason), None),
        };
        Pending {
            slot,
            index,
            bytes,
            masks,
            attempt,
        }
    }
}

/// A sample's masks ready for the fused launch.
type PreparedMasks = Option<StageMasks>;

/// What a slot's image and plan come to: ready, or the reason it is bad.
type Planned = Result<(SourceImage, FusedOp, OutputSpec, Passes), SampleErrorKind>;

/// A slot with its decoded image and planned transform.
struct Ready {
    slot: usize,
    index: usize,
    source: SourceImage,
    op: FusedOp,
    spec: OutputSpec,
    post: Passes,
    masks: PreparedMasks,
}

impl GpuStage {
    /// The pool every stage of a loader takes batch tensors from.
    pub(crate) fn new_batch_pool(device: &Device) -> DevicePool {
        DevicePool::new(device, PoolConfig::unbounded("gm-loader batches"))
    }

    pub(crate) fn new(
        device: &Device,
        options: DecoderOptions,
        pool: DevicePool,
    ) -> Result<GpuStage, LoaderError> {
        Ok(GpuStage {
            device: device.clone(),
            decoder: ImageDecoder::new(device, options)?,
            kernel: FusedKernel::new(device)?,
            batch_ops: BatchOpsKernel::new(device)?,
            post: BlurKernel::new(device)?,
            pool,
            masks: MaskStaging::new(device)?,
        })
    }

    pub(crate) fn decoder_pool_stats(&self) -> PoolStats {
        self.decoder.pool_stats()
    }

    /// Makes the device current on the stage thread.
    pub(crate) fn bind(&self) -> Result<(), LoaderError> {
        Ok(self.device.bind_to_thread()?)
    }

    /// Decodes and transforms one batch (or serves it from the device cache).
    pub(crate) fn run_batch(
        &mut self,
        shared: &Shared,
        epoch: u64,
        position: usize,
        items: Vec<(usize, Prepared)>,
    ) -> Result<Option<Batch>, LoaderError> {
        if let Some(cache) = shared.cache.as_deref() {
            return self.run_cached(shared, cache, epoch, position, items);
        }
        let mut round: Vec<Pending> = items
            .into_iter()
            .enumerate()
            .map(|(slot, (index, p))| {
                let (bytes, masks) = match p {
                    Prepared::Bytes { data, masks } => (Ok(data), masks),
                    Prepared::Failed(r) => (Err(r), None),
                    Prepared::Pixels { .. } | Prepared::Cached => (
                        Err(SampleErrorKind::Internal(
                            "host pixels or a cache slot on the decoding path",
                        )),
                        None,
                    ),
                };
                Pending {
                    slot,
                    index,
                    bytes,
                    masks,
                    attempt: 0,
                }
            })
            .collect();
        // Decoded batches stay alive until the kernel that reads them is queued: dropping
        // them then fences their memory behind it on this same stream.
        let mut decoded: Vec<DecodedBatch> = Vec::new();
        let mut ready: Vec<Ready> = Vec::with_capacity(round.len());
        let mut tally = Tally::default();
        let (mut decode_us, mut plan_us, mut mask_prepare_us) = (0u64, 0u64, 0u64);
        while !round.is_empty() {
            let batch = self.decode_round(shared, epoch, &round, &mut decode_us)?;
            let _nvtx = nvtx::range(c"gm-loader: plan transforms");
            let t = Instant::now();
            let next = plan_round(
                shared,
                epoch,
                position,
                round,
                batch.as_ref(),
                &mut ready,
                (&mut tally, &mut mask_prepare_us),
            )?;
            plan_us += t.elapsed().as_micros() as u64;
            if let Some(b) = batch {
                record_decode(shared, &b);
                decoded.push(b);
            }
            round = next;
        }
        let t = Instant::now();
        let result = self.launch(shared, epoch, position, ready, &decoded);
        drop(decoded);
        let mut s = shared.stats.lock();
        s.skipped += tally.skipped;
        s.substituted += tally.substituted;
        s.decode_us += decode_us;
        s.transform_us += plan_us + t.elapsed().as_micros() as u64;
        s.mask_prepare_us += mask_prepare_us;
        result
    }

    /// Decodes the readable samples of `round` in one batch, each only in the region its
    /// transform reads when region decoding is on; `None` when none is readable.
    fn decode_round(
        &mut self,
        shared: &Shared,
        epoch: u64,
        round: &[Pending],
        decode_us: &mut u64,
    ) -> Result<Option<DecodedBatch>, LoaderError> {
        let names: Vec<String> = round.iter().map(|p| shared.dataset.name(p.index)).collect();
        let inputs: Vec<EncodedImage<'_>> = round
            .iter()
            .zip(&names)
            .filter_map(|(p, name)| {
                p.bytes
                    .as_ref()
                    .ok()
                    .map(|data| EncodedImage { name, data })
            })
            .collect();
        if inputs.is_empty() {
            return Ok(None);
        }
        let t = Instant::now();
        let _nvtx = nvtx::range(c"gm-loader: decode batch");
        // The samples behind `inputs` (the readable ones), for planning their regions.
        let samples: Vec<usize> = round
            .iter()
            .filter(|p| p.bytes.is_ok())
            .map(|p| p.index)
            .collect();
        let mut region = |k: usize, w: u32, h: u32| {
            if !shared.region_decode {
                return None;
            }
            let mut rng = SampleRng::new(shared.seed, epoch, *samples.get(k)? as u64);
            let (mut op, _, mut passes) = shared.plan(samples[k], (w, h), &mut rng).ok()?;
            let [x0, y0, x1, y1] = passes.source_op(&mut op).source_window(w, h)?;
            Some(Roi {
                x: x0,
                y: y0,
                width: x1 - x0,
                height: y1 - y0,
            })
        };
        let b = self.decoder.decode_regions(&inputs, &mut region)?;
        *decode_us += t.elapsed().as_micros() as u64;
        Ok(Some(b))
    }

    /// A batch from the device cache: no reading, no decoding; bad entries (found while the
    /// cache was filled) follow the policy like any bad sample.
    fn run_cached(
        &mut self,
        shared: &Shared,
        cache: &Cache,
        epoch: u64,
        position: usize,
        items: Vec<(usize, Prepared)>,
    ) -> Result<Option<Batch>, LoaderError> {
        let t = Instant::now();
        let mut ready = Vec::with_capacity(items.len());
        let mut tally = Tally::default();
        for (slot, (first, _)) in items.into_iter().enumerate() {
            let (mut index, mut attempt) = (first, 0u32);
            loop {
                let planned = match &cache.entries[index] {
                    Err(reason) => Err(reason.clone()),
                    Ok(e) => plan_cached(shared, cache, e, epoch, index).and_then(|p| {
                        let masks = super::masks::read(shared, index)?.map(SampleMasks::Host);
                        let masks = super::masks::prepare(shared, index, &p.3.geometry, masks)?;
                        Ok((p, masks))
                    }),
                };
                match planned {
                    Ok(((source, op, spec, post), masks)) => {
                        tally.filled(attempt);
                        ready.push(Ready {
                            slot,
                            index,
                            source,
                            op,
                            spec,
                            post,
                            masks,
                        });
                        break;
                    }
                    Err(reason) => {
                        shared.bad_sample(index, reason)?;
                        match shared.bad.next(epoch, position, slot, attempt) {
                            Next::Skip => {
                                tally.skip();
                                break;
                            }
                            Next::Substitute(i) => index = i,
                        }
                        attempt += 1;
                    }
                }
            }
        }
        let result = self.launch(shared, epoch, position, ready, &[]);
        let mut s = shared.stats.lock();
        s.skipped += tally.skipped;
        s.substituted += tally.substituted;
        s.transform_us += t.elapsed().as_micros() as u64;
        result
    }

    fn launch(
        &mut self,
        shared: &Shared,
        epoch: u64,
        position: usize,
        mut ready: Vec<Ready>,
        decoded: &[DecodedBatch],
    ) -> Result<Option<Batch>, LoaderError> {
        ready.sort_by_key(|r| r.slot);
        let specs: Vec<OutputSpec> = ready.iter().map(|r| r.spec).collect();
        let placed = match place(shared.sizes, &specs) {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(None),
            Err((k, reason)) => return Err(shared.plan_error(ready[k].index, reason)),
        };
        let spec = placed.spec;
        let stream = self.decoder.stream().clone();
        let mut tensor = Tensor::empty(&self.pool, &stream, &placed.shape, spec.dtype)?;
        let masks = if shared.masks {
            let prepared: Vec<PreparedMasks> = ready.iter_mut().map(|r| r.masks.take()).collect();
            let sizes: Vec<(u32, u32)> = specs.iter().map(|s| (s.width, s.height)).collect();
            let t = Instant::now();
            let staged = self.masks.stage(&self.pool, &stream, prepared, &sizes)?;
            let mut stats = shared.stats.lock();
            stats.mask_upload_us += t.elapsed().as_micros() as u64;
            stats.masks_from_spans += staged.from_spans;
            Some(staged)
        } else {
            None
        };
        for d in decoded {
            stream.wait(d.ready_event())?;
        }
        let _nvtx = nvtx::range(c"gm-loader: launch fused transform");
        let sources: Vec<SourceImage> = ready.iter().map(|r| r.source).collect();
        let ops: Vec<FusedOp> = ready.iter().map(|r| r.op).collect();
        let pre: Vec<&[PrePass]> = ready.iter().map(|r| r.post.pre.as_slice()).collect();
        let blurs: Vec<Option<Blur>> = ready.iter().map(|r| r.post.blur).collect();
        let noisy = ready.iter().any(|r| r.post.noise.is_some());
        let gathers = masks.as_ref().map_or(&[][..], |m| m.gathers.as_slice());
        if shared.sizes != BatchSizes::Uniform {
            if noisy || blurs.iter().any(Option::is_some) {
                return Err(LoaderError::Config(
                    "GaussianBlur and GaussianNoise run on batches of one size on the GPU; \
                     this loader's batches hold images of many sizes"
                        .into(),
                ));
            }
            self.kernel.run_slots(
                &stream,
                &sources,
                &pre,
                &ops,
                &specs,
                &placed.slots,
                &tensor,
                gathers,
            )?;
        } else if blurs.iter().any(Option::is_some) {
            // The fused kernel writes the pre-blur u8 HWC images; the blur pass the batch.
            // Dropping the scratch fences it on the stream (pool buffers carry a fence).
            let fspec = Blur::fused_spec(&spec);
            let shape = batch_shape(ready.len(), &fspec);
            let scratch = Tensor::empty(&self.pool, &stream, &shape, fspec.dtype)?;
            let out = (&scratch, 0);
            self.kernel
                .run_passes_masked(&stream, &sources, &pre, &ops, &fspec, out, gathers)?;
            self.post.run(&stream, &scratch, &spec, &blurs, &tensor)?;
        } else {
            let out = (&tensor, 0);
            self.kernel
                .run_passes_masked(&stream, &sources, &pre, &ops, &spec, out, gathers)?;
        }
        let noises: Vec<_> = ready.iter().map(|r| r.post.noise).collect();
        if noisy {
            self.post.noise(&stream, &spec, &tensor, &noises)?;
        }
        let indices: Vec<usize> = ready.iter().map(|r| r.index).collect();
        let geometry: Vec<_> = ready.into_iter().map(|r| r.post.geometry).collect();
        let labels: Vec<_> = indices.iter().map(|&i| shared.dataset.label(i)).collect();
        if let Some(erases) = draw_erases(shared, epoch, &spec, &indices)? {
            self.batch_ops.erase(&stream, &spec, &tensor, &erases)?;
        }
        let soft = match draw_mix(shared, epoch, position, &spec, &indices, &labels)? {
            Some((mix, soft)) => {
                self.batch_ops
                    .mix(&stream, &spec, &tensor, indices.len(), &mix)?;
                Some(soft)
            }
            None => None,
        };
        // The targets move on this thread while the GPU runs the batch, and go up before
        // the batch's event.
        let targets = shared.moved_targets(&indices, &geometry);
        let mut on_device = match &targets {
            Some(t) => Some(device_targets::upload(
                t,
                &self.pool,
                self.masks.pinned(),
                &stream,
            )?),
            None => None,
        };
        let event = Arc::new(Event::new(&self.device)?);
        event.record(&stream)?;
        tensor.set_ready_event(event.clone());
        if let Some(t) = &mut on_device {
            t.data.set_ready_event(event.clone());
        }
        let masks = masks.map(|m| {
            let mut out = m.out;
            out.set_ready_event(event.clone());
            BatchMasks {
                data: Images::Device(out),
                parts: m.parts,
            }
        });
        let batch = Batch::new(
            Images::Device(tensor),
            labels,
            indices,
            epoch,
            position,
            Some((event, stream)),
        );
        let names = shared.names_of(&batch.indices);
        let batch = batch
            .with_soft_labels(soft)
            .with_names(names)
            .with_masks(masks);
        let batch = batch
            .with_targets(targets)
            .with_device_targets(on_device)
            .with_geometry(geometry);
        Ok(Some(batch.with_placement(placed)))
    }
}

/// Plans the transform of each slot of a decoded round; ready slots go to `ready`, bad ones
/// follow the policy, and the substitutes to decode next are returned.
fn plan_round(
    shared: &Shared,
    epoch: u64,
    position: usize,
    round: Vec<Pending>,
    batch: Option<&DecodedBatch>,
    ready: &mut Vec<Ready>,
    (tally, mask_us): (&mut Tally, &mut u64),
) -> Result<Vec<Pending>, LoaderError> {
    let mut next = Vec::new();
    let mut k = 0usize;
    for p in round {
        let planned = match (&p.bytes, batch) {
            (Err(r), _) => Err(r.clone()),
            (Ok(_), Some(b)) => {
                let i = k;
                k += 1;
                plan_decoded(shared, epoch, p.index, b, i)
            }
            (Ok(_), None) => Err(SampleErrorKind::Internal("not decoded")),
        };
        if let Ok(b) = p.bytes {
            shared.give_buffer(b);
        }
        let t = Instant::now();
        let planned = planned.and_then(|(source, op, spec, post)| {
            let masks = super::masks::prepare(shared, p.index, &post.geometry, p.masks)?;
            Ok((source, op, spec, post, masks))
        });
        *mask_us += t.elapsed().as_micros() as u64;
        match planned {
            Ok((source, op, spec, post, masks)) => {
                tally.filled(p.attempt);
                ready.push(Ready {
                    slot: p.slot,
                    index: p.index,
                    source,
                    op,
                    spec,
                    post,
                    masks,
                });
            }
            Err(reason) => {
                shared.bad_sample(p.index, reason)?;
                match shared.bad.next(epoch, position, p.slot, p.attempt) {
                    Next::Skip => tally.skip(),
                    Next::Substitute(index) => {
                        next.push(Pending::read(shared, p.slot, index, p.attempt + 1));
                    }
                }
            }
        }
    }
    Ok(next)
}

/// The source and plan of image `i` of a decoded batch (sample `index`).
fn plan_decoded(shared: &Shared, epoch: u64, index: usize, b: &DecodedBatch, i: usize) -> Planned {
    match (&b.images[i], b.device_ptr(i)) {
        (Ok(img), Some(ptr)) => {
            let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
            let (w, h) = img.full_size;
            let (mut op, spec, mut post) = shared.plan(index, (w, h), &mut rng)?;
            // The same plan as the region's: the op that reads the decoded pixels moves to
            // their origin.
            let first = post.source_op(&mut op);
            *first = first.shifted(img.origin.0, img.origin.1);
            let source = SourceImage::rgb8(ptr, img.width, img.height);
            Ok((source, op, spec, post))
        }
        (Err(e), _) => Err(e.kind.clone().into()),
        (Ok(_), None) => Err(SampleErrorKind::Internal("decoded image without memory")),
    }
}

/// The source and plan of a cached image (sample `index`).
fn plan_cached(shared: &Shared, cache: &Cache, e: &Entry, epoch: u64, index: usize) -> Planned {
    let mut rng = SampleRng::new(shared.seed, epoch, index as u64);
    let (op, spec, post) = shared.plan(index, (e.width, e.height), &mut rng)?;
    Ok((cache.source(e), op, spec, post))
}

/// Adds a decoded batch's timings and paths to the stats.
fn record_decode(shared: &Shared, b: &DecodedBatch) {
    let c = b.counts();
    let mut s = shared.stats.lock();
    s.decode_plan_us += b.timings.plan_us;
    s.decode_hardware_us += b.timings.hardware_us;
    s.decode_cuda_us += b.timings.cuda_us;
    s.paths.hardware += c.hardware as u64;
    s.paths.cuda += c.cuda as u64;
    s.paths.cpu += c.cpu as u64;
    s.regions += b
        .images
        .iter()
        .flatten()
        .filter(|i| (i.width, i.height) != i.full_size)
        .count() as u64;
}
