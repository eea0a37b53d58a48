//! Clips come out upright: each fixture of tests/media/rotated (one clip stored as is, turned
//! 90, 180, 270 degrees and mirrored by its MP4 display matrix or its Matroska Projection)
//! through the clip loader, frame 0 against the CPU twin's conversion of the frame ffmpeg
//! autorotated (NVDEC and libavcodec decode the stored frame bit-exactly; the kernel reads it
//! turned). With `autorotate(false)` every file comes out as stored. On the CPU loader in CI,
//! and on the GPU loader where there is one.
#![allow(clippy::unwrap_used)]

mod video_common;

use gm_codec::avcodec::testing::libavcodec_or_skip;
use gm_cuda::{DType, Device, Stream, gpu_test_device};
use gm_loader::{ClipLoader, Sampler, VideoDataset};
use gm_transforms::cpu::SemiPlanar;
use gm_transforms::{ChromaFilter, Filter, Interp, Layout, Matrix, Orientation, ToDtype};

/// The fixtures, by file name: every MP4 and Matroska file of tests/media/rotated. Each
/// file's reference is `STEM.yuv`, ffmpeg's autorotated frame 0 (make.sh).
const FILES: [&str; 10] = [
    "plain.mp4",
    "rotate_90.mp4",
    "rotate_180.mp4",
    "rotate_270.mp4",
    "mirror.mp4",
    "rotate_90.mkv",
    "rotate_180.mkv",
    "rotate_270.mkv",
    "mirror.mkv",
    "rotate_90_mirror.mkv",
];
/// The twin's u8 HWC RGB of a stored 4:2:0 frame of `name` (ffmpeg's yuv420p), `w` x `h`.
fn twin(name: &str, w: u32, h: u32) -> Vec<u8> {
    let yuv = std::fs::read(video_common::rotated(name)).unwrap();
    let frame = SemiPlanar::from_yuv420p(&yuv, w, h, 8).unwrap();
    // The fixtures signal BT.709, limited range (ffprobe: bt709, tv), as the source they
    // were scaled from; the loader converts with what the stream signals. Chroma replicated
    // (the loader's too): ffmpeg turns the 4:2:0 planes before converting, which moves the
    // chroma siting, while replicated chroma turns with the planes exactly.
    frame
        .host_image(Matrix::Bt709, false, Orientation::STORED)
        .with_chroma(ChromaFilter::Replicate)
        .to_rgb8()
}

#[test]
fn clips_come_out_as_ffmpeg_autorotates_them() {
    let device = gpu_test_device!("clips_come_out_as_ffmpeg_autorotates_them");
    let stream = Stream::new(&device).unwrap();
    check_every_file(Some(&device), Some(&stream));
}

#[test]
fn cpu_clips_come_out_as_ffmpeg_autorotates_them() {
    if !libavcodec_or_skip("cpu_clips_come_out_as_ffmpeg_autorotates_them") {
        return;
    }
    check_every_file(None, None);
}

/// Frame 0 of every fixture through the loader on `device` (the CPU loader where `None`),
/// turned and as stored.
fn check_every_file(device: Option<&Device>, stream: Option<&Stream>) {
    for file in FILES {
        let path = video_common::rotated(file);
        let stem = file.rsplit_once('.').unwrap().0;
        for autorotate in [true, false] {
            let dataset = VideoDataset::builder()
                .videos(std::slice::from_ref(&path))
                .frames(2, 2)
                .autorotate(autorotate)
                .open()
                .unwrap();
            let (w, h) = dataset.frame_size(0);
            let builder = ClipLoader::builder(dataset);
            let builder = match device {
                Some(d) => builder.device(d),
                None => builder.cpu(),
            };
            let mut loader = builder
                .sessions(1)
                .replicate_chroma(true)
                .transform(Filter(Interp::Nearest))
                .transform(ToDtype(DType::U8, Layout::Hwc))
                .sampler(Sampler::sequential())
                .batch_size(1)
                .build()
                .unwrap();
            let batch = loader.epoch(0).next().unwrap().unwrap();
            assert_eq!(
                &batch.frames.shape()[1..],
                &[2, h as usize, w as usize, 3],
                "{file}"
            );
            let host = batch.frames.to_host_bytes(stream).unwrap();
            let first = &host[..(w * h * 3) as usize];
            let want = if autorotate {
                twin(&format!("{stem}.yuv"), w, h)
            } else {
                assert_eq!((w, h), (96, 64), "{file}: stored size");
                twin("plain.yuv", w, h)
            };
            let worst = first.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
            assert!(
                worst <= Some(1),
                "{file} autorotate={autorotate}: off by {worst:?}"
            );
        }
    }
}
