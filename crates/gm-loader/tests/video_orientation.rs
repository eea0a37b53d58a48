//! Clips come out upright on the GPU: each fixture of tests/media/rotated (one clip stored
//! as is, turned 90, 180, 270 degrees and mirrored by its display matrix) through the clip
//! loader, frame 0 against the CPU twin's conversion of the frame ffmpeg autorotated (NVDEC
//! decodes the stored frame bit-exactly; the kernel reads it turned). With `autorotate(false)`
//! every file comes out as stored.
#![allow(clippy::unwrap_used)]

mod video_common;

use gm_cuda::{DType, Stream, gpu_test_device};
use gm_loader::{ClipLoader, Sampler, VideoDataset};
use gm_transforms::cpu::SemiPlanar;
use gm_transforms::{ChromaFilter, Filter, Interp, Layout, Matrix, Orientation, ToDtype};

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
    for name in ["plain", "rotate_90", "rotate_180", "rotate_270", "mirror"] {
        let path = video_common::rotated(&format!("{name}.mp4"));
        for autorotate in [true, false] {
            let dataset = VideoDataset::builder()
                .videos(std::slice::from_ref(&path))
                .frames(2, 2)
                .autorotate(autorotate)
                .open()
                .unwrap();
            let (w, h) = dataset.frame_size(0);
            let mut loader = ClipLoader::builder(dataset)
                .device(&device)
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
                "{name}"
            );
            let host = batch.frames.to_host_bytes(Some(&stream)).unwrap();
            let first = &host[..(w * h * 3) as usize];
            let want = if autorotate {
                twin(&format!("{name}.yuv"), w, h)
            } else {
                assert_eq!((w, h), (96, 64), "{name}: stored size");
                twin("plain.yuv", w, h)
            };
            let worst = first.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
            assert!(
                worst <= Some(1),
                "{name} autorotate={autorotate}: off by {worst:?}"
            );
        }
    }
}
