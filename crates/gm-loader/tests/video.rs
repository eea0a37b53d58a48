//! The clip loader: episodes of several videos in batches, each frame written from its
//! decoded surface; checked against decoding every frame alone.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use gm_codec::nvdec::{DecoderSession, SurfaceFormat};
use gm_cuda::{DType, DevicePool, PoolConfig, Stream, Tensor, gpu_test_device};
use gm_demux::{IndexOptions, IndexingDemuxer};
use gm_loader::{ClipLoader, Sampler, VideoDataset};
use gm_transforms::{
    Compose, FusedKernel, HorizontalFlip, Layout, Matrix, PixelFormat, RandomResizedCrop,
    SampleRng, SourceImage, ToDtype, Transform,
};

fn fixture(name: &str) -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("video")
        .join(name)
}

fn videos() -> Vec<PathBuf> {
    ["h264_bpyramid.mp4", "hevc_open_gop.mp4", "h264_vfr.mp4"]
        .iter()
        .map(|n| fixture(n))
        .collect()
}

fn chain() -> Vec<Box<dyn Transform>> {
    vec![
        Box::new(RandomResizedCrop::new(40, 32)),
        Box::new(HorizontalFlip(0.5)),
        Box::new(ToDtype(DType::U8, Layout::Hwc)),
    ]
}

#[test]
fn video_datasets_count_and_locate_episodes() {
    let d = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let mut total = 0;
    for p in videos() {
        let n = IndexingDemuxer::open(&p, IndexOptions::default())
            .unwrap()
            .index()
            .frame_count();
        // Span 7 frames, a new episode every 3.
        total += if n >= 7 { (n - 7) / 3 + 1 } else { 0 };
    }
    assert_eq!(d.len(), total);
    let (v, k) = d.locate(d.len() - 1).unwrap();
    assert_eq!(v, 2);
    assert_eq!(
        d.frames(d.len() - 1).unwrap(),
        (0..4).map(|j| 3 * k + 2 * j).collect::<Vec<_>>()
    );
    assert_eq!(d.locate(0), Some((0, 0)));
    assert!(d.locate(d.len()).is_none());
    assert!(VideoDataset::open(&[fixture("missing.mp4")], 4, 1, 1).is_err());
}

#[test]
fn clip_batches_equal_decoding_every_frame_alone() {
    let device = gpu_test_device!("clip_batches_equal_decoding_every_frame_alone");
    let dataset = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let reference = VideoDataset::open(&videos(), 4, 3, 2).unwrap();
    let mut loader =
        ClipLoader::new(dataset, &device, 2, chain(), Sampler::shuffled(9), 5, 4).unwrap();
    let mut session = DecoderSession::new(&device, None).unwrap();
    let mut kernel = FusedKernel::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("reference"));
    let stream = Stream::new(&device).unwrap();
    let compose = Compose(chain());
    let mut clips = 0;
    for epoch in 0..2u64 {
        let mut seen = Vec::new();
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            assert_eq!(&batch.frames.shape()[1..], &[4, 32, 40, 3]);
            let got = batch.frames.to_host_bytes(&stream).unwrap();
            let per = 32 * 40 * 3;
            for (b, &e) in batch.episodes.iter().enumerate() {
                seen.push(e);
                let (v, frames) = &batch.sources[b];
                assert_eq!(Some(frames.clone()), reference.frames(e));
                let demux =
                    IndexingDemuxer::open(reference.path(*v), IndexOptions::default()).unwrap();
                let (w, h) = (demux.index().codec.width, demux.index().codec.height);
                let (op, spec) = compose
                    .plan_image(w, h, &mut SampleRng::new(4, epoch, e as u64))
                    .unwrap();
                for (j, &f) in frames.iter().enumerate() {
                    let out =
                        Tensor::empty(&pool, session.stream(), &[1, 32, 40, 3], DType::U8).unwrap();
                    let plan = demux.plan(&[f]).unwrap();
                    session
                        .decode(&demux, &plan, &mut |d| {
                            let format = match d.format {
                                SurfaceFormat::Nv12 => PixelFormat::Nv12,
                                SurfaceFormat::P016 => PixelFormat::P016 {
                                    bit_depth: d.bit_depth,
                                },
                            };
                            let src = SourceImage {
                                data: d.luma,
                                chroma: d.chroma,
                                pitch: d.pitch,
                                width: d.width,
                                height: d.height,
                                format,
                                matrix: Matrix::from_code(d.colour.matrix_coefficients, d.height),
                                full_range: d.colour.full_range,
                            };
                            kernel.run(d.stream, &[src], &[op], &spec, &out, 0)?;
                            Ok(())
                        })
                        .unwrap();
                    let want = out.to_host_bytes(session.stream()).unwrap();
                    let slot = (b * 4 + j) * per;
                    assert!(
                        got[slot..slot + per] == want[..],
                        "epoch {epoch} clip {e} ({}) frame {f}",
                        reference.path(*v).display()
                    );
                }
                clips += 1;
            }
        }
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            (0..reference.len()).collect::<Vec<_>>(),
            "every clip once"
        );
    }
    assert_eq!(clips, 2 * reference.len());
}
