//! The clip loader on the CPU (no GPU, or `.cpu()`): every frame of every clip equals that
//! frame decoded alone by the CPU decoder (itself checked frame-exact against ffmpeg's
//! framemd5 in gm-codec) and converted by the kernels' CPU twin, repacked by an independent
//! path; stream jobs, scenes, resume, bad clips. On a GPU machine the CPU loader's batches
//! also equal the GPU loader's within one step.
#![allow(clippy::unwrap_used)]

mod video_common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gm_codec::avcodec::testing::{ffmpeg_or_skip, libavcodec_or_skip};
use gm_codec::avcodec::{ChromaLayout, CpuDecoder};
use gm_codec::{DecoderChoice, nvdec::FrameStatus};
use gm_cuda::{DType, Stream, gpu_test_device};
use gm_demux::{IndexOptions, IndexingDemuxer};
use gm_loader::{
    BadSamplePolicy, ClipBatch, ClipLoader, ClipLoaderBuilder, Images, Sampler, VideoDataset,
    kernel_orientation,
};
use gm_transforms::cpu::SemiPlanar;
use gm_transforms::{
    Compose, ErasingValue, GaussianBlur, HorizontalFlip, Layout, Matrix, RandomErasing,
    RandomResizedCrop, RandomRotation, RandomSolarize, SampleRng, ToDtype,
};
use video_common::{fixture, videos};

const PER_FRAME: usize = 32 * 40 * 3;

fn chain() -> Compose {
    Compose::new()
        .then(RandomResizedCrop::new(40, 32))
        .then(HorizontalFlip(0.5))
        .then(ToDtype(DType::U8, Layout::Hwc))
}

/// A chain in two passes: the rotation reads the resized u8 frame, as torchvision's does.
fn warped() -> Compose {
    Compose::new()
        .then(RandomResizedCrop::new(40, 32))
        .then(RandomRotation::new(30.0).unwrap())
        .then(RandomSolarize {
            threshold: 100.0,
            p: 0.5,
        })
        .then(ToDtype(DType::U8, Layout::Hwc))
}

fn cpu_loader(dataset: VideoDataset, compose: Compose) -> ClipLoaderBuilder {
    ClipLoader::builder(dataset)
        .cpu()
        .sessions(2)
        .transforms(compose)
        .batch_size(5)
        .seed(4)
}

/// Decodes one frame alone on the CPU and runs the clip's transform through the twin.
struct Reference {
    decoder: CpuDecoder,
    compose: Compose,
    demuxers: HashMap<PathBuf, IndexingDemuxer>,
}

impl Reference {
    fn new(compose: Compose) -> Reference {
        Reference {
            decoder: CpuDecoder::new(1).unwrap(),
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
        let shown = kernel_orientation(demux.index().orientation);
        let (op, spec, passes) = self
            .compose
            .plan_post(w, h, &mut SampleRng::new(seed, epoch, episode as u64))
            .unwrap();
        let plan = demux.plan(&[frame]).unwrap();
        let mut out = vec![0u8; spec.image_bytes()];
        let mut got = 0;
        self.decoder
            .decode(demux, &plan, &mut |f| {
                assert_eq!(f.status, FrameStatus::Ok);
                assert_eq!(f.layout, ChromaLayout::Yuv420);
                let sp = SemiPlanar::from_yuv420p(&f.to_planar(), f.width, f.height, f.bit_depth)
                    .unwrap();
                let matrix = Matrix::from_code(f.colour.matrix_coefficients, f.height);
                let image = sp
                    .host_image(matrix, f.colour.full_range, shown)
                    .with_chroma(gm_loader::chroma_filter(f.colour.chroma_location));
                gm_transforms::cpu::fused_passes(&image, &passes.pre, &op, &spec, &mut out);
                got += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(got, 1, "{} frame {frame}", path.display());
        out
    }

    /// Every frame of every clip of `batch` against its reference.
    fn check(&mut self, dataset: &VideoDataset, batch: &ClipBatch, seed: u64) {
        let host = host_bytes(batch);
        let mut slot = 0;
        for (e, cams) in batch.episodes.iter().zip(&batch.sources) {
            for (v, frames) in cams {
                for &f in frames {
                    let want = self.frame(dataset.path(*v), f, seed, batch.epoch, *e);
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

fn host_bytes(batch: &ClipBatch) -> Vec<u8> {
    match &batch.frames {
        Images::Host(h) => h.data.clone(),
        Images::Device(_) => panic!("a CPU loader gave device frames"),
    }
}

/// Scenes of two cameras (fixture names), sampled at 10 fps in clips of 0.4 s every 0.2 s.
fn two_camera_scenes(scenes: [[&str; 2]; 2]) -> VideoDataset {
    let scenes: Vec<Vec<PathBuf>> = scenes
        .iter()
        .map(|cams| cams.iter().map(|n| fixture(n)).collect())
        .collect();
    VideoDataset::builder()
        .scenes(scenes)
        .timed(0.4, 10.0, 0.2)
        .open()
        .unwrap()
}

fn open() -> VideoDataset {
    VideoDataset::open(&videos(), 4, 3, 2).unwrap()
}

#[test]
fn cpu_clip_batches_equal_decoding_every_frame_alone() {
    if !libavcodec_or_skip("cpu_clip_batches_equal_decoding_every_frame_alone") {
        return;
    }
    let reference_set = open();
    for (name, compose) in [
        ("one pass", chain as fn() -> Compose),
        ("two passes", warped),
    ] {
        let mut loader = cpu_loader(open(), compose())
            .sampler(Sampler::shuffled(9))
            .build()
            .unwrap();
        assert!(loader.on_cpu(), "{name}");
        assert!(
            loader.placement().starts_with("CPU"),
            "{}",
            loader.placement()
        );
        assert_eq!(loader.cpu_videos(), reference_set.scenes());
        let mut reference = Reference::new(compose());
        let mut seen = Vec::new();
        for batch in loader.epoch(1) {
            let batch = batch.unwrap();
            assert_eq!(&batch.frames.shape()[1..], &[4, 32, 40, 3], "{name}");
            assert!(batch.ready_event().is_none());
            reference.check(&reference_set, &batch, 4);
            seen.extend(batch.episodes.iter().copied());
        }
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..reference_set.len()).collect::<Vec<_>>(),
            "{name}: every clip once"
        );
        let s = loader.stats();
        assert_eq!(s.clips, reference_set.len() as u64);
        assert_eq!(s.frames, s.clips * 4);
        assert!(s.cpu_frames_decoded >= s.frames && s.cpu_runs > 0, "{s:?}");
        assert!(s.packets_decoded >= s.frames, "{s:?}");
    }
}

/// `(position, episodes, bytes)` of every batch of `epoch`.
fn collect(loader: &mut ClipLoader, epoch: u64) -> Vec<(usize, Vec<usize>, Vec<u8>)> {
    loader
        .epoch(epoch)
        .map(|b| {
            let b = b.unwrap();
            let bytes = host_bytes(&b);
            (b.position, b.episodes, bytes)
        })
        .collect()
}

#[test]
fn cpu_stream_jobs_equal_one_batch_jobs_and_resume_exactly() {
    if !libavcodec_or_skip("cpu_stream_jobs_equal_one_batch_jobs_and_resume_exactly") {
        return;
    }
    let build = |per_job: usize| {
        cpu_loader(open(), chain())
            .batch_size(3)
            .batches_per_job(per_job)
            .build()
            .unwrap()
    };
    let (mut stream, mut single) = (build(8), build(1));
    let a = collect(&mut stream, 0);
    let b = collect(&mut single, 0);
    // Jobs in flight and decoder threads change what runs at once, never what is delivered
    // or in which order.
    for (ahead, threads) in [(1, 2), (64, 2), (4, 5)] {
        let mut l = cpu_loader(open(), chain())
            .batch_size(3)
            .batches_per_job(1)
            .jobs_in_flight(ahead)
            .cpu_decoders(threads)
            .build()
            .unwrap();
        assert_eq!(l.decoder_threads(), (0, threads));
        assert!(
            collect(&mut l, 0) == b,
            "{ahead} jobs in flight, {threads} decoders"
        );
    }
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.0, &x.1), (y.0, &y.1), "batch order");
        assert!(x.2 == y.2, "batch {} differs between job sizes", x.0);
    }
    assert!(
        stream.stats().packets_decoded < single.stats().packets_decoded,
        "stream jobs share GOPs: {} vs {}",
        stream.stats().packets_decoded,
        single.stats().packets_decoded
    );
    // Resume after two batches: the rest of the epoch, byte for byte.
    let state = stream.state(0, 2);
    let rest: Vec<_> = stream
        .resume(&state)
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            (b.position, b.episodes.clone(), host_bytes(&b))
        })
        .collect();
    assert_eq!(rest.len(), a.len() - 2);
    for (x, y) in rest.iter().zip(&a[2..]) {
        assert!(x == y, "resumed batch {} differs", x.0);
    }
}

#[test]
fn cpu_multi_camera_clips_equal_each_camera_decoded_alone() {
    if !libavcodec_or_skip("cpu_multi_camera_clips_equal_each_camera_decoded_alone") {
        return;
    }
    let scenes = [
        ["h264_no_bframes.mp4", "hevc_closed_gop.mp4"],
        ["hevc_closed_gop.mp4", "h264_bpyramid.mp4"],
    ];
    let open = || two_camera_scenes(scenes);
    let dataset = open();
    let mut loader = cpu_loader(open(), chain())
        .sampler(Sampler::shuffled(2))
        .batch_size(3)
        .seed(11)
        .build()
        .unwrap();
    let mut reference = Reference::new(chain());
    let mut clips = 0;
    for batch in loader.epoch(0) {
        let batch = batch.unwrap();
        assert_eq!(&batch.frames.shape()[1..], &[2, 4, 32, 40, 3]);
        reference.check(&dataset, &batch, 11);
        clips += batch.episodes.len();
    }
    assert_eq!(clips, dataset.len());
}

#[test]
fn cpu_bad_clips_are_skipped_with_the_file_named() {
    if !libavcodec_or_skip("cpu_bad_clips_are_skipped_with_the_file_named") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gm-cpu-clips-{}", std::process::id()));
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
    let dataset = VideoDataset::open(&paths, 4, 2, 1).unwrap();
    let len = dataset.len();
    // Packets from 60% of the file on cannot be read any more.
    let index = dataset.video_index(0).clone();
    let at = index.packets[index.packets.len() * 6 / 10].offset;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&paths[0])
        .unwrap();
    f.set_len(at).unwrap();
    let mut loader = cpu_loader(dataset, chain())
        .batch_size(3)
        .bad_samples(BadSamplePolicy::Skip)
        .build()
        .unwrap();
    let mut delivered = 0;
    for b in loader.epoch(0) {
        let b = b.unwrap();
        assert_eq!(
            b.frames.shape()[0],
            b.episodes.len(),
            "bad clips leave the batch"
        );
        delivered += b.episodes.len();
    }
    let s = loader.stats();
    assert!(s.bad_clips > 0 && delivered < len, "{s:?}");
    assert_eq!(delivered as u64 + s.skipped, len as u64);
    let first = &s.first_bad[0];
    assert!(
        first.to_string().contains("h264_bpyramid.mp4"),
        "the error names the file: {first}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn decoder_gpu_on_the_cpu_is_refused() {
    let err = cpu_loader(open(), chain())
        .decoder(DecoderChoice::Gpu)
        .build()
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("decoder = gpu asks for NVDEC"),
        "{err}"
    );
}

/// On a GPU machine: the CPU loader and the GPU loader give the same batches, within one
/// step (the kernel's and the twin's float rounding), through blur, erasing, a second pass
/// and two cameras.
#[test]
fn cpu_batches_equal_gpu_batches() {
    let device = gpu_test_device!("cpu_batches_equal_gpu_batches");
    let compose = || warped().then(GaussianBlur::new((3, 5), (0.8, 1.2)).unwrap());
    let erasing =
        || RandomErasing::new(1.0, (0.05, 0.2), (0.3, 3.3), ErasingValue::Number(0.0)).unwrap();
    let scenes = [
        ["h264_bpyramid.mp4", "hevc_open_gop.mp4"],
        ["hevc_closed_gop.mp4", "h264_no_bframes.mp4"],
    ];
    let open = || two_camera_scenes(scenes);
    let build = |b: ClipLoaderBuilder| {
        b.transforms(compose())
            .random_erasing(erasing())
            .sampler(Sampler::shuffled(3))
            .batch_size(3)
            .seed(5)
            .build()
            .unwrap()
    };
    let mut gpu = build(ClipLoader::builder(open()).device(&device).sessions(2));
    let mut cpu = build(ClipLoader::builder(open()).cpu().sessions(2));
    let stream = Stream::new(&device).unwrap();
    let (mut frames, mut off) = (0usize, 0usize);
    for (g, c) in gpu.epoch(0).zip(cpu.epoch(0)) {
        let (g, c) = (g.unwrap(), c.unwrap());
        assert_eq!(g.episodes, c.episodes);
        assert_eq!(g.frames.shape(), c.frames.shape());
        let gb = g.frames.to_host_bytes(Some(&stream)).unwrap();
        let cb = host_bytes(&c);
        for (a, b) in gb.iter().zip(&cb) {
            assert!(a.abs_diff(*b) <= 1, "batch {}: {a} vs {b}", g.position);
            off += usize::from(a != b);
        }
        frames += gb.len();
    }
    assert!(frames > 0);
    assert!(off * 100 < frames, "{off} of {frames} bytes differ by one");
}

/// A fixture of `tests/media/chroma`, its size and frame count.
fn chroma_fixture(stem: &str) -> (PathBuf, u32, u32, usize) {
    let path = video_common::fixtures()
        .join("chroma")
        .join(format!("{stem}.mp4"));
    let demux = IndexingDemuxer::open(&path, IndexOptions::default()).unwrap();
    let c = &demux.index().codec;
    (path.clone(), c.width, c.height, demux.index().frame_count())
}

/// Every frame of `path` once, in order, as clips of one frame at the video's own size
/// (u8 HWC), from `builder`'s loader.
fn every_frame(
    path: &Path,
    w: u32,
    h: u32,
    builder: impl Fn(VideoDataset) -> ClipLoaderBuilder,
) -> Vec<ClipBatch> {
    let dataset = VideoDataset::open(&[path.to_path_buf()], 1, 1, 1).unwrap();
    let mut loader = builder(dataset)
        .transforms(
            Compose::new()
                .then(gm_transforms::Resize::Exact(w, h))
                .then(ToDtype(DType::U8, Layout::Hwc)),
        )
        .batch_size(4)
        .build()
        .unwrap();
    loader.epoch(0).map(|b| b.unwrap()).collect()
}

/// The CPU loader on 4:4:4 video (8-bit BT.709, 10-bit BT.2020) equals ffmpeg's RGB within one
/// step (no chroma to interpolate there), and with `replicate_chroma` on 4:2:2 (full-range
/// BT.601) equals an independent conversion of the decoded planes, chroma replicated, within
/// one step.
#[test]
fn cpu_clips_of_444_and_replicated_422_video_convert_like_references() {
    if !libavcodec_or_skip("cpu_clips_of_444_and_replicated_422_video_convert_like_references") {
        return;
    }
    for stem in ["h264_444", "hevc_444_10bit"] {
        let (path, w, h, n) = chroma_fixture(stem);
        let want = std::fs::read(path.with_extension("rgb")).unwrap();
        let per = (w * h * 3) as usize;
        assert_eq!(want.len(), n * per, "{stem}");
        let got: Vec<u8> = every_frame(&path, w, h, |d| ClipLoader::builder(d).cpu())
            .iter()
            .flat_map(host_bytes)
            .collect();
        assert_eq!(got.len(), want.len(), "{stem}: every frame once");
        let worst = got.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
        assert!(
            worst <= Some(1),
            "{stem}: {worst:?} steps from ffmpeg's rgb24"
        );
    }
    let (path, w, h, n) = chroma_fixture("h264_422");
    let got: Vec<u8> = every_frame(&path, w, h, |d| {
        ClipLoader::builder(d).cpu().replicate_chroma(true)
    })
    .iter()
    .flat_map(host_bytes)
    .collect();
    let want = replicated_422_reference(&path, w, h, n, got.len());
    let worst = got.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
    assert!(
        worst <= Some(1),
        "h264_422: {worst:?} steps from the planes' conversion"
    );
}

/// Every frame of the full-range BT.601 4:2:2 fixture converted in f64 from its decoded
/// planes, each chroma sample repeated over its two luma samples.
fn replicated_422_reference(path: &Path, w: u32, h: u32, n: usize, len: usize) -> Vec<u8> {
    let demux = IndexingDemuxer::open(path, IndexOptions::default()).unwrap();
    let mut decoder = CpuDecoder::new(1).unwrap();
    let mut want = vec![0u8; len];
    let (wu, hu) = (w as usize, h as usize);
    let plan = demux.plan(&(0..n).collect::<Vec<_>>()).unwrap();
    decoder
        .decode(&demux, &plan, &mut |f| {
            assert_eq!(
                (f.layout, f.colour.full_range),
                (ChromaLayout::Yuv422, true)
            );
            let p = f.to_planar();
            let (y, cw) = (&p[..wu * hu], wu.div_ceil(2));
            let (u, v) = (&p[wu * hu..wu * hu + cw * hu], &p[wu * hu + cw * hu..]);
            for (i, px) in want[f.frame as usize * wu * hu * 3..]
                .chunks_mut(3)
                .take(wu * hu)
                .enumerate()
            {
                let c = (i / wu) * cw + (i % wu) / 2;
                let yn = f64::from(y[i]) / 255.0;
                let (cb, cr) = (
                    (f64::from(u[c]) - 128.0) / 255.0,
                    (f64::from(v[c]) - 128.0) / 255.0,
                );
                let r = yn + 2.0 * (1.0 - 0.299) * cr;
                let b = yn + 2.0 * (1.0 - 0.114) * cb;
                let g = (yn - 0.299 * r - 0.114 * b) / 0.587;
                for (o, x) in px.iter_mut().zip([r, g, b]) {
                    *o = (x.clamp(0.0, 1.0) * 255.0).round() as u8;
                }
            }
            Ok(())
        })
        .unwrap();
    want
}

/// ffmpeg's RGB of every frame of `file` (a path under tests/media), its chroma interpolated
/// by swscale (`accurate_rnd+full_chroma_int`, bicubic) at the location ffprobe reported
/// (`chroma/locations.txt`): positions as ffmpeg's `av_chroma_location_enum_to_pos` gives
/// them, the vertical one 0 where chroma is not subsampled vertically.
fn ffmpeg_rgb(file: &str, full_height_chroma: bool) -> Vec<u8> {
    let listed =
        std::fs::read_to_string(video_common::fixtures().join("chroma/locations.txt")).unwrap();
    let location = listed
        .lines()
        .find_map(|l| l.strip_prefix(file)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{file} is not in locations.txt"));
    let (h, v) = match location.trim() {
        "left" => (0, 128),
        "center" | "unspecified" => (128, 128),
        "topleft" => (0, 0),
        "top" => (128, 0),
        "bottomleft" => (0, 256),
        "bottom" => (128, 256),
        other => panic!("{file}: location {other}"),
    };
    let v = if full_height_chroma { 0 } else { v };
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(video_common::fixtures().join(file))
        .args([
            "-vsync",
            "passthrough",
            "-vf",
            &format!(
                "scale=in_h_chr_pos={h}:in_v_chr_pos={v}:flags=accurate_rnd+full_chroma_int,format=rgb24"
            ),
            "-f",
            "rawvideo",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "ffmpeg on {file}");
    out.stdout
}

/// The CPU loader's RGB (no resize) is within one step of ffmpeg's at each fixture's signalled
/// chroma location: H.264 centre and top-left (VUI), HEVC 10-bit bottom (VUI), AV1 colocated
/// (sequence header), the H.264 and HEVC default (left), VP9 in WebM (Matroska's Colour, odd
/// size), AV1 with none (centre, odd size), 4:2:2 (left, horizontal only); BT.601, BT.709
/// and BT.2020, limited and full range, 8 and 10 bits.
#[test]
fn cpu_clips_convert_like_ffmpeg_at_the_signalled_chroma_location() {
    let test = "cpu_clips_convert_like_ffmpeg_at_the_signalled_chroma_location";
    if !libavcodec_or_skip(test) || !ffmpeg_or_skip(test) {
        return;
    }
    let files = [
        ("chroma/h264_loc_center.mp4", false),
        ("chroma/h264_loc_topleft.mp4", false),
        ("chroma/hevc_loc_bottom_10bit.mp4", false),
        ("chroma/av1_colocated.mp4", false),
        ("chroma/h264_422.mp4", true),
        ("video/hevc_main10.mp4", false),
        ("video/h264_no_bframes.mp4", false),
        ("video/vp9_odd.webm", false),
        ("video/av1_odd.mp4", false),
    ];
    for (file, full_height_chroma) in files {
        let path = video_common::fixtures().join(file);
        let demux = IndexingDemuxer::open(&path, IndexOptions::default()).unwrap();
        let (w, h) = (demux.index().codec.width, demux.index().codec.height);
        let got: Vec<u8> = every_frame(&path, w, h, |d| ClipLoader::builder(d).cpu())
            .iter()
            .flat_map(host_bytes)
            .collect();
        let want = ffmpeg_rgb(file, full_height_chroma);
        assert_eq!(got.len(), want.len(), "{file}: every frame once");
        let worst = got.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
        assert!(
            worst <= Some(1),
            "{file}: {worst:?} steps from ffmpeg's rgb24"
        );
        // Replicated chroma is not ffmpeg's: the option changes the output.
        if file.ends_with("h264_loc_topleft.mp4") {
            let replicated: Vec<u8> = every_frame(&path, w, h, |d| {
                ClipLoader::builder(d).cpu().replicate_chroma(true)
            })
            .iter()
            .flat_map(host_bytes)
            .collect();
            let far = replicated
                .iter()
                .zip(&want)
                .filter(|(a, b)| a.abs_diff(**b) > 1);
            assert!(far.count() > 0, "{file}: replicated chroma equals ffmpeg's");
        }
    }
}

/// On a GPU machine: 4:2:2 and 4:4:4 video, which NVDEC refuses, is decoded on the CPU,
/// staged as NV16/NV24/P416 and converted by the fused kernel, equal to the CPU loader's
/// batches within one step; so are 4:2:0 streams of each signalled chroma location, decoded
/// by NVDEC (H.264, HEVC 10-bit) or routed to the CPU (AV1 on GPUs without AV1 in NVDEC), their
/// chroma interpolated by the kernel where the CPU loader's is ffmpeg's within one step.
#[test]
fn staged_422_and_444_frames_on_the_gpu_equal_the_cpu_loader() {
    let device = gpu_test_device!("staged_422_and_444_frames_on_the_gpu_equal_the_cpu_loader");
    let stream = Stream::new(&device).unwrap();
    for stem in [
        "h264_444",
        "h264_422",
        "hevc_444_10bit",
        "h264_loc_center",
        "h264_loc_topleft",
        "hevc_loc_bottom_10bit",
        "av1_colocated",
    ] {
        let (path, w, h, n) = chroma_fixture(stem);
        let gpu = every_frame(&path, w, h, |d| {
            ClipLoader::builder(d).device(&device).sessions(2)
        });
        let cpu = every_frame(&path, w, h, |d| ClipLoader::builder(d).cpu().sessions(2));
        let g: Vec<u8> = gpu
            .iter()
            .flat_map(|b| b.frames.to_host_bytes(Some(&stream)).unwrap())
            .collect();
        let c: Vec<u8> = cpu.iter().flat_map(host_bytes).collect();
        assert_eq!(g.len(), n * (w * h * 3) as usize, "{stem}");
        assert_eq!(g.len(), c.len(), "{stem}");
        let worst = g.iter().zip(&c).map(|(a, b)| a.abs_diff(*b)).max();
        assert!(
            worst <= Some(1),
            "{stem}: GPU {worst:?} steps from the CPU loader"
        );
    }
}
