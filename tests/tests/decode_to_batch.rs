//! The video data path of the design: NVDEC decodes planned frames and, while each surface is
//! mapped, the fused kernel converts, crops, resizes, flips and normalizes it straight into its
//! slot of a batch tensor. Checked against the CPU twin applied to the same decoded frame.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_codec::nvdec::{DecoderSession, SurfaceFormat};
use gm_cuda::{DType, DevicePool, PoolConfig, Tensor, gpu_test_device};
use gm_demux::{IndexOptions, IndexingDemuxer};
use gm_transforms::cpu::{SemiPlanar, fused};
use gm_transforms::{Crop, FusedKernel, FusedOp, Matrix, OutputSpec, PixelFormat, SourceImage};

fn fixtures() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("media"))
}

#[test]
fn decoded_surfaces_go_straight_into_normalized_batches() {
    let device = gpu_test_device!("decoded_surfaces_go_straight_into_normalized_batches");
    let pool = DevicePool::new(&device, PoolConfig::unbounded("batches"));
    let mut session = DecoderSession::new(&device, None).unwrap();
    let mut kernel = FusedKernel::new(&device).unwrap();
    for (name, frames) in [
        ("hevc_open_gop", vec![17usize, 3, 29, 9]),
        ("hevc_main10", vec![0, 12, 5]),
        ("h264_1366x766", vec![7, 0]),
    ] {
        let demux = IndexingDemuxer::open(
            &fixtures().join(format!("video/{name}.mp4")),
            IndexOptions::default(),
        )
        .unwrap();
        let spec = OutputSpec::normalized(
            96,
            72,
            DType::F16,
            [0.485, 0.456, 0.406],
            [0.229, 0.224, 0.225],
        );
        let out = Tensor::empty(
            &pool,
            session.stream(),
            &[frames.len(), 3, 72, 96],
            DType::F16,
        )
        .unwrap();
        let plan = demux.plan(&frames).unwrap();
        let mut references = vec![Vec::new(); frames.len()];
        session
            .decode(&demux, &plan, &mut |f| {
                let op = FusedOp {
                    crop: Crop {
                        x: f.width as f32 * 0.1,
                        y: 3.5,
                        w: f.width as f32 * 0.75,
                        h: f.height as f32 * 0.8,
                    },
                    flip_h: f.frame % 2 == 1,
                    flip_v: false,
                    pad: None,
                    colour: gm_transforms::ColourOps::NONE,
                    warp: None,
                };
                let format = match f.format {
                    SurfaceFormat::Nv12 => PixelFormat::Nv12,
                    SurfaceFormat::P016 => PixelFormat::P016 {
                        bit_depth: f.bit_depth,
                    },
                    other => panic!("NVDEC gave a {other:?} surface"),
                };
                let src = SourceImage {
                    data: f.luma,
                    chroma: f.chroma,
                    pitch: f.pitch,
                    width: f.width,
                    height: f.height,
                    format,
                    matrix: Matrix::from_code(f.colour.matrix_coefficients, f.height),
                    full_range: f.colour.full_range,
                    orientation: Default::default(),
                    chroma_filter: {
                        let (x, y) = f.colour.chroma_location.position();
                        gm_transforms::ChromaFilter::Cubic { x, y }
                    },
                };
                for &slot in f.slots {
                    kernel.run(f.stream, &[src], &[op], &spec, &out, slot as usize)?;
                }
                // The reference: the same decoded frame, through the CPU twin.
                let yuv = f.to_planar()?;
                let frame = SemiPlanar::from_yuv420p(&yuv, f.width, f.height, f.bit_depth).unwrap();
                assert_eq!(frame.format, format);
                let host = frame
                    .host_image(src.matrix, src.full_range, src.orientation)
                    .with_chroma(src.chroma_filter);
                let mut want = vec![0u8; spec.image_bytes()];
                fused(&host, &op, &spec, &mut want);
                for &slot in f.slots {
                    references[slot as usize] = want.clone();
                }
                Ok(())
            })
            .unwrap();
        let got = out.to_host_bytes(session.stream()).unwrap();
        for (slot, want) in references.iter().enumerate() {
            let have = &got[slot * spec.image_bytes()..(slot + 1) * spec.image_bytes()];
            let worst = have
                .chunks(2)
                .zip(want.chunks(2))
                .map(|(a, b)| {
                    let (a, b) = (
                        half::f16::from_le_bytes([a[0], a[1]]).to_f32(),
                        half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                    );
                    (a - b).abs() / (1e-3 * b.abs().max(1.0)).max(b.abs() * 2f32.powi(-10))
                })
                .fold(0.0f32, f32::max);
            assert!(
                worst <= 1.0,
                "{name}: request {slot} (frame {}): error {worst} of the tolerance",
                frames[slot]
            );
        }
    }
}
