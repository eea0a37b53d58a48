//! The clip loader on the GPU: every frame of every clip (random access, stream access,
//! multi-camera) equals decoding that frame alone; resume, bad clips and shutdown.
#![allow(clippy::unwrap_used)]

mod video_common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gm_codec::nvdec::DecoderSession;
use gm_cuda::{DType, Device, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_demux::{IndexOptions, IndexingDemuxer};
use gm_loader::{
    BadSamplePolicy, ClipBatch, ClipLoader, LoaderError, LoaderState, Sampler, VideoDataset,
    surface_source,
};
use gm_transforms::{
    Blur, BlurKernel, Compose, ErasingValue, FusedKernel, GaussianBlur, GaussianNoise,
    HorizontalFlip, Layout, RandomErasing, RandomResizedCrop, RandomRotation, RandomSolarize,
    SampleRng, ToDtype, erase_image,
};
use video_common::{fixture, videos};

fn chain() -> Compose {
    Compose::new()
        .then(RandomResizedCrop::new(40, 32))
        .then(HorizontalFlip(0.5))
        .then(ToDtype(DType::U8, Layout::Hwc))
}

const PER_FRAME: usize = 32 * 40 * 3;

/// Decodes one frame alone and runs the clip's transform on it.
struct Reference {
    session: DecoderSession,
    kernel: FusedKernel,
    pool: DevicePool,
    compose: Compose,
    demuxers: HashMap<PathBuf, IndexingDemuxer>,
}

impl Reference {
    fn new(device: &Device) -> Reference {
        Reference::with_chain(device, chain())
    }

    /// Frames through `compose`, which must give 40x32 u8 HWC.
    fn with_chain(device: &Device, compose: Compose) -> Reference {
        Reference {
            session: DecoderSession::new(device, None).unwrap(),
            kernel: FusedKernel::new(device).unwrap(),
            pool: DevicePool::new(device, PoolConfig::unbounded("reference")),
            compose,
            demuxers: HashMap::new(),
        }
    }

    fn frame(
        &mut self,
        path: &Path,
        frame: usize,
        seed: u64,
        epoch: u64,
        episode: usize,
    ) -> Vec<u8> {
        let demux = self
            .demuxers
            .entry(path.to_path_buf())
            .or_insert_with(|| IndexingDemuxer::open(path, IndexOptions::default()).unwrap());
        let (w, h) = (demux.index().codec.width, demux.index().codec.height);
        let (op, spec, passes) = self
            .compose
            .plan_post(w, h, &mut SampleRng::new(seed, epoch, episode as u64))
            .unwrap();
        let out = Tensor::empty(
            &self.pool,
            self.session.stream(),
            &[1, 32, 40, 3],
            DType::U8,
        )
        .unwrap();
        let plan = demux.plan(&[frame]).unwrap();
        let kernel = &mut self.kernel;
        self.session
            .decode(demux, &plan, &mut |d| {
                let src = surface_source(d);
                let pre = [passes.pre.as_slice()];
                kernel.run_passes(d.stream, &[src], &pre, &[op], &spec, &out, 0)?;
                Ok(())
            })
            .unwrap();
        out.to_host_bytes(self.session.stream()).unwrap()
    }

    /// One frame decoded alone through `chain` (which blurs): the fused kernel into u8 HWC,
    /// then the blur pass, as the image loader runs them.
    #[allow(clippy::too_many_arguments)]
    fn blurred_frame(
        &mut self,
        chain: &Compose,
        blur: &mut BlurKernel,
        path: &Path,
        frame: usize,
        seed: u64,
        epoch: u64,
        episode: usize,
    ) -> Vec<u8> {
        let demux = self
            .demuxers
            .entry(path.to_path_buf())
            .or_insert_with(|| IndexingDemuxer::open(path, IndexOptions::default()).unwrap());
        let (w, h) = (demux.index().codec.width, demux.index().codec.height);
        let (op, spec, post) = chain
            .plan_post(w, h, &mut SampleRng::new(seed, epoch, episode as u64))
            .unwrap();
        let fspec = Blur::fused_spec(&spec);
        let stream = self.session.stream().clone();
        let dims =
            |s: &gm_transforms::OutputSpec| [1, s.height as usize, s.width as usize, s.channels()];
        let scratch = Tensor::empty(&self.pool, &stream, &dims(&fspec), DType::U8).unwrap();
        let out = Tensor::empty(&self.pool, &stream, &dims(&spec), spec.dtype).unwrap();
        let plan = demux.plan(&[frame]).unwrap();
        let kernel = &mut self.kernel;
        self.session
            .decode(demux, &plan, &mut |d| {
                kernel.run(d.stream, &[surface_source(d)], &[op], &fspec, &scratch, 0)?;
                Ok(())
            })
            .unwrap();
        blur.run(&stream, &scratch, &spec, &[post.blur], &out)
            .unwrap();
        out.to_host_bytes(&stream).unwrap()
    }

    /// Every frame of every clip of `batch` (made with `seed`) against decoding it alone.
    fn check(&mut self, dataset: &VideoDataset, batch: &ClipBatch, seed: u64, host: &[u8]) {
        let mut slot = 0;
        for (b, &e) in batch.episodes.iter().enumerate() {
            assert_eq!(
                batch.sources[b],
                dataset.clip(e).unwrap().cameras,
                "clip {e}: its sources"
            );
            for (v, frames) in &batch.sources[b] {
                for &f in frames {
                    let want = self.frame(dataset.path(*v), f, seed, batch.epoch, e);
                    let got = &host[slot * PER_FRAME..(slot + 1) * PER_FRAME];
                    assert!(
                        got == &want[..],
                        "epoch {} clip {e} ({}) frame {f}",
                        batch.epoch,
                        dataset.path(*v).display()
                    );
                    slot += 1;
                }
            }
        }
        assert_eq!(slot * PER_FRAME, host.len(), "no frames beyond the clips");
    }
}

/// `(position, episodes, bytes)` of every batch of `epoch`.
fn collect(
    loader: &mut ClipLoader,
    epoch: u64,
    stream: &Stream,
) -> Vec<(usize, Vec<usize>, Vec<u8>)> {
    loader
        .epoch(epoch)
        .map(|b| {
            let b = b.unwrap();
            let bytes = b.frames.to_host_bytes(Some(stream)).unwrap();
            (b.position, b.episodes, bytes)
        })
        .collect()
}

fn assert_same(a: &[(usize, Vec<usize>, Vec<u8>)], b: &[(usize, Vec<usize>, Vec<u8>)], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: batch count");
    for (x, y) in a.iter().zip(b) {
        assert_eq!((x.0, &x.1), (y.0, &y.1), "{what}: batch order");
        assert!(x.2 == y.2, "{what}: batch {} differs", x.0);
    }
}

#[test]
fn clip_batches_equal_decoding_every_frame_alone() {
    let device = gpu_test_device!("clip_batches_equal_decoding_every_frame_alone");
    let dataset = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let reference_set = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let mut loader =
        ClipLoader::new(dataset, &device, 2, chain(), Sampler::shuffled(9), 5, 4).unwrap();
    let mut reference = Reference::new(&device);
    let stream = Stream::new(&device).unwrap();
    for epoch in 0..2u64 {
        let mut seen = Vec::new();
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            assert_eq!(&batch.frames.shape()[1..], &[4, 32, 40, 3]);
            let host = batch.frames.to_host_bytes(Some(&stream)).unwrap();
            reference.check(&reference_set, &batch, 4, &host);
            seen.extend(batch.episodes.iter().copied());
        }
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..reference_set.len()).collect::<Vec<_>>(),
            "every clip once"
        );
    }
    let s = loader.stats();
    assert_eq!(s.clips, 2 * reference_set.len() as u64);
    assert_eq!(s.frames, s.clips * 4);
    assert!(s.packets_decoded >= s.frames, "{s:?}");
    // Where the sessions' time went: every part was met, the callbacks ran inside the parse
    // calls, and the parts fit in the jobs' time (which is counted in whole microseconds).
    let t = s.session_time;
    assert!(
        s.runs > 0 && t.parse_ns > 0 && t.map_ns > 0 && t.consume_ns > 0,
        "{s:?}"
    );
    assert!(
        t.parse_ns >= t.submit_ns + t.map_ns + t.consume_ns + t.retire_ns,
        "{t:?}"
    );
    let jobs_ns = (s.decode_us + s.batches) * 1000;
    assert!(jobs_ns >= t.read_ns + t.parse_ns + t.drain_ns, "{s:?}");
    assert!(jobs_ns >= (s.start_us + s.finish_us) * 1000, "{s:?}");
}

/// A chain cut into passes (a rotation and a random solarize after RandomResizedCrop: the
/// rotation reads the resized uint8 frame, as torchvision's does): each frame's pre-pass runs
/// into the session kernel's scratch inside the decode callback, then the final pass into its
/// slot, and every frame equals that frame decoded alone through the same passes.
#[test]
fn clips_in_several_passes_equal_decoding_every_frame_alone() {
    let device = gpu_test_device!("clips_in_several_passes_equal_decoding_every_frame_alone");
    let warped = || {
        Compose::new()
            .then(RandomResizedCrop::new(40, 32))
            .then(RandomRotation::new(30.0).unwrap())
            .then(RandomSolarize {
                threshold: 100.0,
                p: 0.5,
            })
            .then(ToDtype(DType::U8, Layout::Hwc))
    };
    let (w, h) = (1280, 720);
    let (_, _, passes) = warped()
        .plan_post(w, h, &mut SampleRng::new(4, 0, 0))
        .unwrap();
    assert_eq!(passes.pre.len(), 1, "the resize is a pass of its own");
    let dataset = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let reference_set = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let mut loader =
        ClipLoader::new(dataset, &device, 2, warped(), Sampler::shuffled(9), 5, 4).unwrap();
    let mut reference = Reference::with_chain(&device, warped());
    let stream = Stream::new(&device).unwrap();
    let mut clips = 0;
    for batch in loader.epoch(1) {
        let batch = batch.unwrap();
        let host = batch.frames.to_host_bytes(Some(&stream)).unwrap();
        reference.check(&reference_set, &batch, 4, &host);
        clips += batch.episodes.len();
    }
    assert_eq!(clips, reference_set.len());
}

#[test]
fn random_erasing_takes_the_same_rectangle_from_every_frame_of_a_clip() {
    let device =
        gpu_test_device!("random_erasing_takes_the_same_rectangle_from_every_frame_of_a_clip");
    let stream = Stream::new(&device).unwrap();
    let (seed, epoch) = (4, 1);
    for value in [
        ErasingValue::Random,
        ErasingValue::PerChannel([0.0, 0.5, 1.0]),
    ] {
        let erasing = RandomErasing::new(0.6, (0.02, 0.33), (0.3, 3.3), value).unwrap();
        let build = |erase: bool| {
            let b = ClipLoader::builder(VideoDataset::open(&videos(), 4, 3, 2).unwrap())
                .device(&device)
                .sessions(2)
                .transforms(chain())
                .sampler(Sampler::shuffled(9))
                .batch_size(5)
                .seed(seed);
            if erase { b.random_erasing(erasing) } else { b }
                .build()
                .unwrap()
        };
        let plain = collect(&mut build(false), epoch, &stream);
        let erased = collect(&mut build(true), epoch, &stream);
        let spec = chain()
            .plan_image(64, 48, &mut SampleRng::new(0, 0, 0))
            .unwrap()
            .1;
        let (mut clips, mut hit, mut changed) = (0, 0, 0);
        assert_eq!(plain.len(), erased.len());
        for (p, e) in plain.iter().zip(&erased) {
            assert_eq!((p.0, &p.1), (e.0, &e.1), "the same clips in the same order");
            let mut want = p.2.clone();
            for (c, &episode) in p.1.iter().enumerate() {
                clips += 1;
                let mut rng = RandomErasing::rng(seed, epoch, episode as u64);
                let Some(d) = erasing.draw(&spec, &mut rng).unwrap() else {
                    continue;
                };
                hit += 1;
                for f in 0..4 {
                    let frame = &mut want[(c * 4 + f) * PER_FRAME..(c * 4 + f + 1) * PER_FRAME];
                    erase_image(frame, &spec, &d);
                }
            }
            assert!(
                want == e.2,
                "{value:?}: batch {} differs from the twin's erasing",
                p.0
            );
            changed += usize::from(want != p.2);
        }
        // p = 0.6 over the epoch's clips: some erased, some not.
        assert!(hit > 0 && hit < clips, "{hit} of {clips} clips erased");
        assert!(changed > 0, "no batch changed by erasing");
    }
}

#[test]
fn blurred_clips_equal_each_frame_blurred_alone_and_noise_differs_per_frame() {
    let device = gpu_test_device!(
        "blurred_clips_equal_each_frame_blurred_alone_and_noise_differs_per_frame"
    );
    let stream = Stream::new(&device).unwrap();
    let blurred = || {
        Compose::new()
            .then(RandomResizedCrop::new(40, 32))
            .then(GaussianBlur::new((5, 3), (0.5, 2.0)).unwrap())
            .then(HorizontalFlip(0.5))
    };
    let load = |chain: Compose| {
        let mut l = ClipLoader::builder(VideoDataset::open(&videos(), 4, 3, 2).unwrap())
            .device(&device)
            .sessions(2)
            .transforms(chain)
            .sampler(Sampler::shuffled(9))
            .batch_size(5)
            .seed(4)
            .build()
            .unwrap();
        collect(&mut l, 1, &stream)
    };
    // The blur: every frame equals that frame decoded alone, fused and blurred.
    let chain = blurred().then(ToDtype(DType::U8, Layout::Hwc));
    let got = load(blurred().then(ToDtype(DType::U8, Layout::Hwc)));
    let dataset = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let mut reference = Reference::new(&device);
    let mut blur = BlurKernel::new(&device).unwrap();
    let unblurred = load(chain_u8_without_blur());
    let mut differs_from_unblurred = false;
    for ((_, episodes, bytes), (_, _, plain)) in got.iter().zip(&unblurred) {
        differs_from_unblurred |= bytes != plain;
        let mut slot = 0;
        for &e in episodes {
            for (v, frames) in dataset.clip(e).unwrap().cameras {
                for f in frames {
                    let want =
                        reference.blurred_frame(&chain, &mut blur, dataset.path(v), f, 4, 1, e);
                    let mine = &bytes[slot * PER_FRAME..(slot + 1) * PER_FRAME];
                    assert!(mine == &want[..], "clip {e} frame {f}: blurred differently");
                    slot += 1;
                }
            }
        }
    }
    assert!(differs_from_unblurred, "the blur changed nothing");
    // The noise: float frames, N(0.1, 0.05) added, no clip; each frame its own noise.
    let floats = |noise: bool| {
        let c = blurred().then(ToDtype(DType::F32, Layout::Hwc));
        load(if noise {
            c.then(GaussianNoise::new(0.1, 0.05, false).unwrap())
        } else {
            c
        })
    };
    let (clean, noisy) = (floats(false), floats(true));
    let as_f32 = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let mut all = Vec::new();
    for ((_, _, a), (_, _, b)) in clean.iter().zip(&noisy) {
        let delta: Vec<f32> = as_f32(b)
            .iter()
            .zip(as_f32(a))
            .map(|(x, y)| x - y)
            .collect();
        // Frames 0 and 1 of the first clip: different noise.
        assert_ne!(delta[..PER_FRAME], delta[PER_FRAME..2 * PER_FRAME]);
        all.extend(delta);
    }
    let n = all.len() as f64;
    let mean = all.iter().map(|&d| f64::from(d)).sum::<f64>() / n;
    let sd = (all
        .iter()
        .map(|&d| (f64::from(d) - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    assert!((mean - 0.1).abs() < 0.002, "noise mean {mean}");
    assert!((sd - 0.05).abs() < 0.0025, "noise standard deviation {sd}");
}

fn chain_u8_without_blur() -> Compose {
    Compose::new()
        .then(RandomResizedCrop::new(40, 32))
        .then(HorizontalFlip(0.5))
        .then(ToDtype(DType::U8, Layout::Hwc))
}

/// A mixed dataset as a crawl holds it: H.264, HEVC (8- and 10-bit), VP9 (8- and 10-bit) and
/// AV1, in MP4, Matroska and WebM, at different sizes, shuffled together. AV1 decodes on NVDEC
/// where this GPU has it, else on the CPU route (Hopper) when FFmpeg is installed; every other
/// codec must decode on NVDEC.
fn mixed_videos(device: &Device) -> Vec<PathBuf> {
    let mut session = DecoderSession::new(device, None).unwrap();
    let cpu = gm_codec::avcodec::CpuDecoder::library().is_ok();
    [
        "h264_bframes.mkv",
        "hevc_main10.mp4",
        "vp9_altref.webm",
        "h264_1366x766.mp4",
        "vp9_10bit.webm",
        "hevc_bframes.mkv",
        "vp9.mp4",
        "av1_svt.webm",
    ]
    .iter()
    .map(|n| fixture(n))
    .filter(|path| {
        let demux = IndexingDemuxer::open(path, IndexOptions::default()).unwrap();
        let codec = demux.index().codec.clone();
        match session.check_support(path, &codec) {
            Ok(()) => true,
            Err(e) => {
                assert_eq!(codec.codec, gm_demux::Codec::Av1, "{}: {e}", path.display());
                cpu
            }
        }
    })
    .collect()
}

/// A loader of `paths` (clips of 3 frames 2 apart, one every 4 frames) shuffled in batches of
/// 7 with seed 4, `sessions` NVDEC sessions beside `cpu_decoders` CPU decoders.
fn shuffled_loader(
    paths: &[PathBuf],
    device: &Device,
    sessions: usize,
    cpu_decoders: usize,
) -> ClipLoader {
    ClipLoader::builder(VideoDataset::open(paths, 3, 4, 2).unwrap())
        .device(device)
        .sessions(sessions)
        .cpu_decoders(cpu_decoders)
        .transforms(chain())
        .sampler(Sampler::shuffled(5))
        .batch_size(7)
        .seed(4)
        .build()
        .unwrap()
}

/// Every batch of `epoch` checked against decoding its frames alone; the episodes the epoch
/// returned, sorted.
fn checked_episodes(
    loader: &mut ClipLoader,
    epoch: u64,
    reference: &mut Reference,
    reference_set: &VideoDataset,
    stream: &Stream,
) -> Vec<usize> {
    let mut seen = Vec::new();
    for batch in loader.epoch(epoch) {
        let batch = batch.unwrap();
        let host = batch.frames.to_host_bytes(Some(stream)).unwrap();
        reference.check(reference_set, &batch, 4, &host);
        seen.extend(batch.episodes.iter().copied());
    }
    seen.sort_unstable();
    seen
}

#[test]
fn mixed_codec_clip_batches_equal_decoding_every_frame_alone() {
    let device = gpu_test_device!("mixed_codec_clip_batches_equal_decoding_every_frame_alone");
    let paths = mixed_videos(&device);
    // Clips of 3 frames 2 apart, one every 4 frames: about 45 clips, in batches of 7.
    let reference_set = VideoDataset::open(&paths, 3, 4, 2).unwrap();
    let mut reference = Reference::new(&device);
    let stream = Stream::new(&device).unwrap();
    // Shuffled, one batch per job; then in order, jobs of up to 3 batches cut per route (a
    // CPU job's batches are not consecutive in the epoch), 2 CPU decoders.
    let sequential = ClipLoader::builder(VideoDataset::open(&paths, 3, 4, 2).unwrap())
        .device(&device)
        .sessions(3)
        .cpu_decoders(2)
        .transforms(chain())
        .batch_size(7)
        .seed(4)
        .batches_per_job(3)
        .build()
        .unwrap();
    let shuffled = VideoDataset::open(&paths, 3, 4, 2).unwrap();
    let shuffled = ClipLoader::new(shuffled, &device, 3, chain(), Sampler::shuffled(5), 7, 4);
    for (mut loader, in_order) in [(shuffled.unwrap(), false), (sequential, true)] {
        let mut seen = Vec::new();
        for (k, batch) in loader.epoch(1).enumerate() {
            let batch = batch.unwrap();
            assert_eq!(batch.position, k, "batches in the epoch's order");
            assert_eq!(&batch.frames.shape()[1..], &[3, 32, 40, 3]);
            let host = batch.frames.to_host_bytes(Some(&stream)).unwrap();
            reference.check(&reference_set, &batch, 4, &host);
            seen.extend(batch.episodes.iter().copied());
        }
        if !in_order {
            seen.sort_unstable();
        }
        let all: Vec<usize> = (0..reference_set.len()).collect();
        assert_eq!(seen, all, "every clip once");
    }
    let dataset = VideoDataset::open(&paths, 3, 4, 2).unwrap();
    let mut loader =
        ClipLoader::new(dataset, &device, 3, chain(), Sampler::shuffled(5), 7, 4).unwrap();
    assert_eq!(loader.epoch(1).count(), reference_set.len().div_ceil(7));
    let s = loader.stats();
    assert_eq!(s.frames, s.clips * 3, "{s:?}");
    // Each video was routed on its own: AV1 to the CPU where NVDEC lacks it, the rest to
    // NVDEC, and the CPU decoded frames in the same epoch.
    let mut cpu_videos = 0;
    for (v, path) in paths.iter().enumerate() {
        let route = loader.route(v).unwrap();
        let av1 = path.to_string_lossy().contains("av1");
        if route.is_cpu() {
            assert!(av1, "{}: {route}", path.display());
            cpu_videos += 1;
        }
    }
    assert_eq!(loader.cpu_videos(), cpu_videos);
    assert_eq!(s.cpu_frames_decoded > 0, cpu_videos > 0, "{s:?}");
    // Shuffled batches mix routes: jobs on NVDEC sessions handed their AV1 videos to the
    // CPU-route sessions as parts (the batches checked above are the same either way).
    assert_eq!(s.cpu_parts > 0, cpu_videos > 0, "{s:?}");
    assert_eq!(s.cpu_parts_taken_back, 0, "{s:?}");
    // CPU decoders beside the 3 NVDEC sessions only where some video needs them.
    let (nvdec, cpu) = loader.decoder_threads();
    assert_eq!(nvdec, 3);
    assert_eq!(cpu > 0, cpu_videos > 0, "{cpu} CPU decoders");
    // Beside CPU decoders the sessions run under SCHED_BATCH, so that their status reads do
    // not preempt the decoders; asked not to, or with NVDEC alone, at the default policy.
    let placement = loader.placement();
    assert_eq!(
        placement.contains("SCHED_BATCH"),
        cpu_videos > 0,
        "{placement}"
    );
    if cpu_videos > 0 {
        assert!(threads_under_batch("gm-nvdec") >= 3, "{placement}");
    }
    let plain = ClipLoader::builder(VideoDataset::open(&paths, 3, 4, 2).unwrap())
        .device(&device)
        .sessions(3)
        .transforms(chain())
        .nvdec_batch_scheduling(false)
        .build()
        .unwrap();
    assert!(!plain.placement().contains("SCHED_BATCH"));
    let h264 = ClipLoader::new(
        VideoDataset::open(&paths[..1], 3, 4, 2).unwrap(),
        &device,
        3,
        chain(),
        Sampler::shuffled(5),
        7,
        4,
    )
    .unwrap();
    assert!(!h264.placement().contains("SCHED_BATCH"));
    eprintln!(
        "{cpu_videos} of {} videos on the CPU route, {s:?}",
        paths.len()
    );
}

/// A dataset mostly of AV1 (the CPU's where NVDEC lacks it) with one H.264 video: most jobs
/// run on the CPU-route sessions and hand their H.264 videos to the NVDEC sessions as parts,
/// so a CPU decoder's core does not idle while the engine decodes. Every frame equals
/// decoding it alone, every clip comes once, and no part is taken back.
#[test]
fn cpu_route_jobs_hand_their_nvdec_videos_to_the_sessions() {
    let device = gpu_test_device!("cpu_route_jobs_hand_their_nvdec_videos_to_the_sessions");
    if gm_codec::avcodec::CpuDecoder::library().is_err() {
        eprintln!("SKIP cpu_route_jobs_hand_their_nvdec_videos_to_the_sessions: no libavcodec");
        return;
    }
    let paths: Vec<PathBuf> = [
        "av1_svt.webm",
        "av1_grain.webm",
        "av1_odd.mp4",
        "av1_10bit.webm",
        "h264_bframes.mkv",
    ]
    .iter()
    .map(|n| fixture(n))
    .collect();
    let reference_set = VideoDataset::open(&paths, 3, 4, 2).unwrap();
    let mut reference = Reference::new(&device);
    let stream = Stream::new(&device).unwrap();
    let mut loader = shuffled_loader(&paths, &device, 2, 3);
    let seen = checked_episodes(&mut loader, 1, &mut reference, &reference_set, &stream);
    assert_eq!(
        seen,
        (0..reference_set.len()).collect::<Vec<_>>(),
        "every clip once"
    );
    let s = loader.stats();
    if loader.cpu_videos() == 0 {
        eprintln!("this GPU decodes AV1 on NVDEC: no route to hand across, {s:?}");
        return;
    }
    assert!(s.nvdec_parts > 0, "{s:?}");
    assert_eq!(s.nvdec_parts_taken_back, 0, "{s:?}");
    assert_eq!(s.cpu_parts_taken_back, 0, "{s:?}");
    eprintln!(
        "{} NVDEC parts, {} CPU parts, {} parked jobs",
        s.nvdec_parts, s.cpu_parts, s.parked_jobs
    );
}

/// An epoch dropped after its first batch leaves parts queued behind one CPU decoder: those
/// not begun are dropped, not decoded for nobody, and the next epoch's batches are whole.
#[test]
fn parts_of_a_dropped_epoch_do_not_run_and_the_next_epoch_is_whole() {
    let device = gpu_test_device!("parts_of_a_dropped_epoch_do_not_run");
    let paths = mixed_videos(&device);
    let reference_set = VideoDataset::open(&paths, 3, 4, 2).unwrap();
    let mut reference = Reference::new(&device);
    let stream = Stream::new(&device).unwrap();
    let mut loader = shuffled_loader(&paths, &device, 3, 1);
    for epoch in 0..4 {
        let first = loader.epoch(epoch).next().unwrap().unwrap();
        let host = first.frames.to_host_bytes(Some(&stream)).unwrap();
        reference.check(&reference_set, &first, 4, &host);
    }
    let seen = checked_episodes(&mut loader, 9, &mut reference, &reference_set, &stream);
    assert_eq!(seen, (0..reference_set.len()).collect::<Vec<_>>());
    let s = loader.stats();
    assert!(s.cpu_parts_dropped <= s.cpu_parts, "{s:?}");
    assert_eq!(s.cpu_parts_taken_back, 0, "{s:?}");
    eprintln!(
        "{} of {} parts dropped with their epochs",
        s.cpu_parts_dropped, s.cpu_parts
    );
}

/// `decoder = cpu` for every video: the same batches as NVDEC gives (both are bit-exact), and
/// no NVDEC packet fed. `decoder = gpu`: a stream NVDEC lacks is a bad clip naming NVDEC's
/// reason, and the rest of the epoch goes on.
#[test]
fn cpu_routed_clip_batches_equal_nvdec_ones_and_gpu_refusals_are_bad_clips() {
    let device = gpu_test_device!("cpu_routed_clip_batches_equal_nvdec_ones");
    if !gm_codec::avcodec::testing::libavcodec_or_skip("cpu_routed_clip_batches_equal_nvdec_ones") {
        return;
    }
    let paths = [
        fixture("h264_bframes.mkv"),
        fixture("vp9_altref.webm"),
        fixture("hevc_open_gop.mp4"),
    ];
    let stream = Stream::new(&device).unwrap();
    let mut batches = Vec::new();
    for choice in [gm_codec::DecoderChoice::Gpu, gm_codec::DecoderChoice::Cpu] {
        let dataset = VideoDataset::open(&paths, 4, 3, 1).unwrap();
        let mut loader = ClipLoader::builder(dataset)
            .device(&device)
            .sessions(2)
            .transforms(chain())
            .sampler(Sampler::shuffled(3))
            .batch_size(5)
            .seed(8)
            .decoder(choice)
            .build()
            .unwrap();
        batches.push(collect(&mut loader, 2, &stream));
        let s = loader.stats();
        match choice {
            gm_codec::DecoderChoice::Cpu => {
                assert_eq!((s.packets_decoded, loader.cpu_videos()), (0, 3), "{s:?}");
                // No NVDEC session started; the CPU decoders take the core budget.
                assert_eq!(
                    loader.decoder_threads(),
                    (0, gm_loader::default_core_budget())
                );
                assert!(s.cpu_frames_decoded >= s.frames, "{s:?}");
            }
            _ => assert_eq!(s.cpu_frames_decoded, 0, "{s:?}"),
        }
    }
    assert_same(&batches[0], &batches[1], "NVDEC against the CPU route");
    let av1 = [fixture("av1_svt.webm"), fixture("h264_bframes.mkv")];
    let dataset = VideoDataset::open(&av1, 4, 3, 1).unwrap();
    let episodes = dataset.len();
    let mut loader = ClipLoader::builder(dataset)
        .device(&device)
        .transforms(chain())
        .batch_size(4)
        .decoder(gm_codec::DecoderChoice::Gpu)
        .build()
        .unwrap();
    if loader.route(0).is_ok() {
        eprintln!("this GPU's NVDEC decodes AV1: nothing to refuse");
        return;
    }
    let delivered: usize = loader.epoch(0).map(|b| b.unwrap().episodes.len()).sum();
    let s = loader.stats();
    assert_eq!(delivered as u64 + s.skipped, episodes as u64, "{s:?}");
    assert!(s.skipped > 0, "{s:?}");
    let reason = s.first_bad[0].to_string();
    assert!(
        reason.contains("av1_svt.webm") && reason.contains("not decodable by NVDEC"),
        "{reason}"
    );
}

#[test]
fn stream_jobs_equal_one_batch_jobs_and_decode_less() {
    let device = gpu_test_device!("stream_jobs_equal_one_batch_jobs_and_decode_less");
    let stream = Stream::new(&device).unwrap();
    let run = |per_job: usize, gop_cache: Option<usize>| {
        let mut b = VideoDataset::builder().videos(&videos()).frames(6, 4);
        if let Some(bytes) = gop_cache {
            b = b.gop_cache(bytes);
        }
        let mut loader = ClipLoader::builder(b.open().unwrap())
            .device(&device)
            .sessions(3)
            .transforms(chain())
            .batch_size(2)
            .seed(5)
            .batches_per_job(per_job)
            .build()
            .unwrap();
        let batches = collect(&mut loader, 0, &stream);
        let cache = loader.dataset().gop_cache_stats();
        (batches, loader.stats(), cache)
    };
    let (one, s1, _) = run(1, None);
    let (many, s6, _) = run(6, None);
    let (cached, _, cache) = run(1, Some(8 << 20));
    assert_same(&one, &many, "6 batches per job against 1");
    assert_same(&one, &cached, "with the GOP cache against without");
    assert_eq!(s1.frames, s6.frames);
    assert!(
        s6.packets_decoded < s1.packets_decoded,
        "stream jobs decode less: {} against {}",
        s6.packets_decoded,
        s1.packets_decoded
    );
    // Overlapping clips of consecutive one-batch jobs read their shared GOPs from the cache.
    assert!(cache.unwrap().hits > 0, "{cache:?}");
    // And the stream's clips are right frame by frame.
    let dataset = VideoDataset::builder()
        .videos(&videos())
        .frames(6, 4)
        .open()
        .unwrap();
    let mut reference = Reference::new(&device);
    let mut loader = ClipLoader::builder(
        VideoDataset::builder()
            .videos(&videos())
            .frames(6, 4)
            .open()
            .unwrap(),
    )
    .device(&device)
    .sessions(2)
    .transforms(chain())
    .batch_size(2)
    .seed(5)
    .batches_per_job(6)
    .build()
    .unwrap();
    for batch in loader.epoch(3) {
        let batch = batch.unwrap();
        let host = batch.frames.to_host_bytes(Some(&stream)).unwrap();
        reference.check(&dataset, &batch, 5, &host);
    }
}

#[test]
fn multi_camera_clips_equal_each_camera_decoded_alone() {
    let device = gpu_test_device!("multi_camera_clips_equal_each_camera_decoded_alone");
    let scenes = vec![
        vec![
            fixture("h264_no_bframes.mp4"),
            fixture("hevc_closed_gop.mp4"),
        ],
        vec![fixture("hevc_closed_gop.mp4"), fixture("h264_bpyramid.mp4")],
    ];
    let open = || {
        VideoDataset::builder()
            .scenes(scenes.clone())
            .timed(0.4, 10.0, 0.2)
            .open()
            .unwrap()
    };
    let dataset = open();
    assert_eq!(dataset.cameras(), 2);
    assert_eq!(dataset.frames_per_clip(), 4);
    assert!(dataset.len() >= 4, "{} clips", dataset.len());
    let mut loader = ClipLoader::builder(open())
        .device(&device)
        .sessions(2)
        .transforms(chain())
        .sampler(Sampler::shuffled(2))
        .batch_size(3)
        .seed(11)
        .build()
        .unwrap();
    let stream = Stream::new(&device).unwrap();
    let mut reference = Reference::new(&device);
    let mut clips = 0;
    for batch in loader.epoch(0) {
        let batch = batch.unwrap();
        assert_eq!(&batch.frames.shape()[1..], &[2, 4, 32, 40, 3]);
        let host = batch.frames.to_host_bytes(Some(&stream)).unwrap();
        reference.check(&dataset, &batch, 11, &host);
        for s in &batch.sources {
            // Same recording, same timestamps: both cameras take the same frames.
            assert_eq!(s[0].1, s[1].1);
        }
        clips += batch.episodes.len();
    }
    assert_eq!(clips, dataset.len());
}

#[test]
fn resumed_clip_epochs_continue_exactly() {
    let device = gpu_test_device!("resumed_clip_epochs_continue_exactly");
    let stream = Stream::new(&device).unwrap();
    let make = |batch: usize| {
        ClipLoader::builder(VideoDataset::open(&videos(), 4, 2, 1).unwrap())
            .device(&device)
            .sessions(2)
            .transforms(chain())
            .sampler(Sampler::shuffled(3))
            .batch_size(batch)
            .seed(8)
            .build()
            .unwrap()
    };
    let mut loader = make(3);
    let full = collect(&mut loader, 1, &stream);
    assert!(full.len() > 3);
    let saved = {
        let mut epoch = loader.epoch(1);
        epoch.next().unwrap().unwrap();
        epoch.next().unwrap().unwrap();
        assert_eq!(epoch.remaining(), full.len() - 2);
        epoch.state().to_json()
    };
    let mut resumed = make(3);
    let state = LoaderState::from_json(&saved).unwrap();
    let rest: Vec<_> = resumed
        .resume(&state)
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            (
                b.position,
                b.episodes,
                b.frames.to_host_bytes(Some(&stream)).unwrap(),
            )
        })
        .collect();
    assert_same(&full[2..], &rest, "resumed");
    assert!(matches!(
        make(4).resume(&state),
        Err(LoaderError::Resume(_))
    ));
}

/// A copy of two fixtures in a fresh directory; the first is cut at 60% of its packets
/// after the dataset has indexed it. Returns the dataset's paths and the cut length.
fn damaged_copy(tag: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = std::env::temp_dir().join(format!("gm-clips-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<PathBuf> = ["h264_bpyramid.mp4", "hevc_open_gop.mp4"]
        .iter()
        .map(|n| {
            let p = dir.join(n);
            std::fs::copy(fixture(n), &p).unwrap();
            p
        })
        .collect();
    (dir, paths)
}

/// Cuts `path` so that packets from 60% of decode order on cannot be read; returns the
/// episodes of `dataset` (video 0) whose plans need a lost packet.
fn cut(dataset: &VideoDataset, path: &Path) -> BTreeSet<usize> {
    let index = dataset.video_index(0).clone();
    let at = index.packets[index.packets.len() * 6 / 10].offset;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(at).unwrap();
    let demux =
        IndexingDemuxer::open(&fixture("h264_bpyramid.mp4"), IndexOptions::default()).unwrap();
    (0..dataset.len())
        .filter(|&e| {
            let clip = dataset.clip(e).unwrap();
            let (v, frames) = &clip.cameras[0];
            *v == 0
                && demux.plan(frames).unwrap().runs.iter().any(|r| {
                    r.packets.iter().any(|&p| {
                        let p = &index.packets[p as usize];
                        p.offset + u64::from(p.size) > at
                    })
                })
        })
        .collect()
}

#[test]
fn bad_clips_are_skipped_substituted_or_fail() {
    let device = gpu_test_device!("bad_clips_are_skipped_substituted_or_fail");
    for policy in [
        BadSamplePolicy::Skip,
        BadSamplePolicy::Substitute,
        BadSamplePolicy::Fail,
    ] {
        let (dir, paths) = damaged_copy(&format!("{policy:?}"));
        let dataset = VideoDataset::open(&paths, 4, 2, 1).unwrap();
        let check = VideoDataset::open(&paths, 4, 2, 1).unwrap();
        let len = dataset.len();
        let bad = cut(&check, &paths[0]);
        assert!(!bad.is_empty() && bad.len() < len / 2, "{bad:?} of {len}");
        let mut loader = ClipLoader::builder(dataset)
            .device(&device)
            .sessions(2)
            .transforms(chain())
            .sampler(Sampler::shuffled(5))
            .batch_size(3)
            .bad_samples(policy)
            .build()
            .unwrap();
        let mut delivered = Vec::new();
        let mut sizes = Vec::new();
        let mut error = None;
        for b in loader.epoch(0) {
            match b {
                Ok(b) => {
                    assert_eq!(b.frames.shape()[0], b.episodes.len());
                    sizes.push(b.episodes.len());
                    delivered.extend(b.episodes);
                }
                Err(e) => error = Some(e),
            }
        }
        let s = loader.stats();
        let named = s
            .first_bad
            .first()
            .map(|e| e.name.clone())
            .unwrap_or_default();
        assert!(
            named.contains("h264_bpyramid"),
            "{policy:?}: {:?}",
            s.first_bad
        );
        assert!(
            delivered.iter().all(|e| !bad.contains(e)),
            "{policy:?}: a bad clip came through"
        );
        match policy {
            BadSamplePolicy::Skip => {
                assert_eq!(s.bad_clips, bad.len() as u64, "{policy:?}");
                let mut got = delivered.clone();
                got.sort_unstable();
                let want: Vec<usize> = (0..len).filter(|e| !bad.contains(e)).collect();
                assert_eq!(got, want, "every good clip once");
                assert!(error.is_none());
            }
            BadSamplePolicy::Substitute => {
                assert!(s.substituted >= bad.len() as u64, "{s:?}");
                let n = sizes.len();
                assert!(sizes[..n - 1].iter().all(|&x| x == 3), "{sizes:?}");
                assert!(error.is_none());
            }
            BadSamplePolicy::Fail => {
                let e = error.expect("the epoch ends with the bad clip");
                assert!(matches!(e, LoaderError::BadSample(_)), "{e}");
                assert!(e.to_string().contains("h264_bpyramid"), "{e}");
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn dropping_a_clip_epoch_stops_its_jobs() {
    let device = gpu_test_device!("dropping_a_clip_epoch_stops_its_jobs");
    let mut loader = ClipLoader::builder(VideoDataset::open(&videos(), 2, 1, 1).unwrap())
        .device(&device)
        .sessions(3)
        .transforms(chain())
        .batch_size(2)
        .build()
        .unwrap();
    let total = loader.epoch(0).count();
    let t = Instant::now();
    {
        let mut epoch = loader.epoch(1);
        epoch.next().unwrap().unwrap();
    }
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // The loader is still usable after an early drop.
    assert_eq!(loader.epoch(2).count(), total);
}

/// This process's threads whose names start with one of `prefixes`: name and /proc folder.
fn threads_named(prefixes: &[&str]) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let name = name.trim().to_string();
        if prefixes.iter().any(|p| name.starts_with(p)) {
            out.push((name, t.path()));
        }
    }
    out
}

/// This process's threads named `prefix...` that run under SCHED_BATCH.
fn threads_under_batch(prefix: &str) -> usize {
    let batch = |task: &Path| {
        let tid = task
            .file_name()
            .and_then(|n| n.to_str()?.parse::<i32>().ok());
        // SAFETY: reads a thread's policy; a thread gone meanwhile gives -1.
        tid.is_some_and(|tid| unsafe { libc::sched_getscheduler(tid) } == libc::SCHED_BATCH)
    };
    threads_named(&[prefix])
        .iter()
        .filter(|(_, task)| batch(task))
        .count()
}

/// The CPUs allowed to this process's threads whose names start with one of `prefixes`.
fn thread_cpus(prefixes: &[&str]) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    for (name, task) in threads_named(prefixes) {
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        if let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            out.push((name, gm_loader::parse_cpulist(list).unwrap()));
        }
    }
    out
}

/// Where the GPU's NUMA node holds part of the host's CPUs, the clip loader's NVDEC sessions
/// and job thread run there; on a one-node host they keep every CPU. Batches are the same
/// either way.
#[test]
fn clip_loader_threads_run_on_the_gpus_numa_node() {
    let device = gpu_test_device!("clip_loader_threads_run_on_the_gpus_numa_node");
    let info = device.info().unwrap();
    let node = gm_loader::NodeCpus::of_gpu(&info.pci_bus_id);
    let allowed = gm_loader::allowed_cpus().unwrap();
    let expected = node.as_ref().map_or(allowed.clone(), |n| n.cpus.clone());
    eprintln!(
        "GPU at {}: {}",
        info.pci_bus_id,
        node.as_ref().map_or("one node".into(), |n| n.describe())
    );
    let build = |numa: bool| {
        ClipLoader::builder(VideoDataset::open(&videos(), 4, 3, 2).unwrap())
            .device(&device)
            .sessions(2)
            .transforms(chain())
            .sampler(Sampler::shuffled(9))
            .batch_size(5)
            .seed(4)
            .numa_placement(numa)
            .build()
            .unwrap()
    };
    let stream = Stream::new(&device).unwrap();
    let mut placed = build(true);
    assert_eq!(
        placed.placement().contains("threads on"),
        node.is_some(),
        "{}",
        placed.placement()
    );
    let mut epoch = placed.epoch(0);
    let first = epoch.next().unwrap().unwrap();
    let threads = thread_cpus(&["gm-nvdec", "gm-loader-clips"]);
    assert!(threads.len() >= 3, "{threads:?}");
    for (name, cpus) in &threads {
        assert_eq!(cpus, &expected, "thread {name}'s CPUs");
    }
    let mut a = vec![(
        first.position,
        first.episodes.clone(),
        first.frames.to_host_bytes(Some(&stream)).unwrap(),
    )];
    a.extend(epoch.map(|b| {
        let b = b.unwrap();
        let bytes = b.frames.to_host_bytes(Some(&stream)).unwrap();
        (b.position, b.episodes, bytes)
    }));
    drop(placed);
    let mut unplaced = build(false);
    assert_same(
        &a,
        &collect(&mut unplaced, 0, &stream),
        "placed and unplaced loaders",
    );
}
