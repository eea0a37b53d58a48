//! Helpers shared by the JPEG and video tests: where the media is, ffmpeg's goldens, and forged
//! files.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a subset

use std::path::{Path, PathBuf};

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn shared_jpeg() -> Option<PathBuf> {
    let p = std::env::var_os("GM_SHARED_MEDIA")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/media"))
        .join("jpeg");
    p.is_dir().then_some(p)
}

pub fn file(jpeg: &Path, name: &str) -> Vec<u8> {
    let odd = jpeg.join("odd").join(name);
    std::fs::read(if odd.exists() {
        odd
    } else {
        jpeg.join("photos").join(name)
    })
    .unwrap()
}

/// `jpeg` with an APP1 EXIF segment holding `orientation` inserted after the SOI marker.
pub fn with_orientation(jpeg: &[u8], orientation: u16, little_endian: bool) -> Vec<u8> {
    let mut tiff = Vec::new();
    let w16 = |v: u16| {
        if little_endian {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        }
    };
    let w32 = |v: u32| {
        if little_endian {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        }
    };
    tiff.extend_from_slice(if little_endian { b"II" } else { b"MM" });
    tiff.extend_from_slice(&w16(42));
    tiff.extend_from_slice(&w32(8));
    tiff.extend_from_slice(&w16(1)); // one IFD entry
    tiff.extend_from_slice(&w16(0x0112));
    tiff.extend_from_slice(&w16(3)); // SHORT
    tiff.extend_from_slice(&w32(1));
    tiff.extend_from_slice(&w16(orientation));
    tiff.extend_from_slice(&[0, 0]);
    tiff.extend_from_slice(&w32(0));
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2..]);
    out
}

pub fn minimal_jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8];
    v.extend_from_slice(&height.to_be_bytes());
    v.extend_from_slice(&width.to_be_bytes());
    v.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    v.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0]);
    v
}

/// `tests/media`, or `$GM_FIXTURES` in the GPU bundle.
pub fn fixtures() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("tests/media"))
}

/// The bundled demo images, or `$GM_DEMO_IMAGES` in the GPU bundle.
pub fn demo_images() -> PathBuf {
    std::env::var_os("GM_DEMO_IMAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("assets/demo/images"))
}

/// Whether ffmpeg runs here (gm-codec's shared check).
#[allow(unused_imports)] // each test binary uses a subset of these helpers
pub use gm_codec::avcodec::testing::ffmpeg_or_skip;

/// (file name, MD5) pairs of an `md5sum`-style list under the fixtures (`MD5  name` lines).
pub fn md5_list(relative: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(fixtures().join(relative))
        .unwrap()
        .lines()
        .map(|l| {
            let (md5, name) = l.split_once("  ").unwrap();
            (name.to_string(), md5.to_string())
        })
        .collect()
}

/// The lowercase hex MD5 of `bytes`.
pub fn md5_hex(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The video fixtures of `tests/media/video` with ffmpeg goldens (`name` alone is `name.mp4`).
pub const VIDEO_FIXTURES: &[&str] = &[
    "h264_no_bframes",
    "h264_bpyramid",
    "h264_open_gop",
    "h264_slices",
    "h264_fragmented",
    "h264_vfr",
    "h264_1366x766",
    "hevc_closed_gop",
    "hevc_open_gop",
    "hevc_main10",
    "hevc_fragmented",
    "h264_bframes.mkv",
    "hevc_bframes.mkv",
    "vp9.mp4",
    "vp9_altref.webm",
    "vp9_10bit.webm",
    "vp9_odd.webm",
    "vp9_no_cues.webm",
    "av1_hidden.webm",
    "av1_svt.webm",
    "av1_10bit.webm",
    "av1_odd.mp4",
    "av1_grain.webm",
];

/// 4:2:2 and 4:4:4 fixtures (`tests/media/chroma`, named `chroma/<stem>` for [`video`]):
/// NVDEC takes none of them from H.264, so they reach the RGB pipelines from the CPU decoder.
#[allow(dead_code)]
pub const CHROMA_FIXTURES: &[&str] = &[
    "chroma/h264_444",
    "chroma/h264_422",
    "chroma/hevc_444_10bit",
];

/// `../shared/media` (or `$GM_SHARED_MEDIA`) when it holds videos.
pub fn shared_media() -> Option<PathBuf> {
    let p = std::env::var_os("GM_SHARED_MEDIA")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/media"));
    p.join("video").is_dir().then_some(p)
}

/// (path, ffmpeg's framemd5 MD5s by presentation index) of fixture `name` (`name` alone is
/// `name.mp4`; goldens are named after the stem), of a shared video `shared_<stem>[.kind]`
/// (golden `golden/shared_<stem>[.kind].framemd5`) or of `chroma/<stem>` (its golden beside
/// it).
pub fn video(name: &str) -> (PathBuf, Vec<String>) {
    if let Some(stem) = name.strip_prefix("chroma/") {
        let dir = fixtures().join("chroma");
        let text = std::fs::read_to_string(dir.join(format!("{stem}.framemd5"))).unwrap();
        return (dir.join(format!("{stem}.mp4")), md5s(&text));
    }
    let (path, golden) = match name.strip_prefix("shared_") {
        Some(n) => {
            let stem = n.split('.').next().unwrap();
            let dir = shared_media().unwrap().join("video");
            (dir.join(format!("{stem}.mp4")), name.to_string())
        }
        None => match name.split_once('.') {
            Some((stem, _)) => (fixtures().join("video").join(name), stem.to_string()),
            None => (
                fixtures().join(format!("video/{name}.mp4")),
                name.to_string(),
            ),
        },
    };
    let text =
        std::fs::read_to_string(fixtures().join(format!("golden/{golden}.framemd5"))).unwrap();
    (path, md5s(&text))
}

/// The MD5s of a framemd5 listing, in order.
fn md5s(framemd5: &str) -> Vec<String> {
    framemd5
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
        .collect()
}

/// The demuxer of `path` with a full bitstream scan.
pub fn video_demuxer(path: &Path) -> gm_demux::IndexingDemuxer {
    let options = gm_demux::IndexOptions {
        scan: gm_demux::BitstreamScan::Full,
        ..Default::default()
    };
    gm_demux::IndexingDemuxer::open(path, options).unwrap()
}

/// The CPU decoder decodes `plan`; the MD5 of each request slot's frame in its own planar format.
pub fn decode_md5_cpu(
    decoder: &mut gm_codec::avcodec::CpuDecoder,
    demux: &dyn gm_demux::PacketSource,
    plan: &gm_demux::DecodePlan,
) -> Result<Vec<String>, gm_codec::CodecError> {
    let mut out = vec![String::new(); plan.requested];
    decoder.decode(demux, plan, &mut |f| {
        assert_eq!(
            f.status,
            gm_codec::nvdec::FrameStatus::Ok,
            "frame {} reported damaged",
            f.frame
        );
        let md5 = format!("{:x}", <md5::Md5 as md5::Digest>::digest(f.to_planar()));
        for &s in f.slots {
            out[s as usize] = md5.clone();
        }
        Ok(())
    })?;
    Ok(out)
}

/// Decodes `frames` of fixture `name` with the CPU decoder and checks each against ffmpeg's
/// MD5; the number of frames checked.
pub fn check_cpu(
    decoder: &mut gm_codec::avcodec::CpuDecoder,
    name: &str,
    frames: &[usize],
) -> usize {
    let (path, golden) = video(name);
    let demux = video_demuxer(&path);
    assert_eq!(demux.index().frame_count(), golden.len(), "{name}");
    let plan = demux.plan(frames).unwrap();
    let got = decode_md5_cpu(decoder, &demux, &plan).unwrap_or_else(|e| panic!("{name}: {e}"));
    for (slot, &f) in frames.iter().enumerate() {
        assert_eq!(
            got[slot], golden[f],
            "{name}: frame {f} (request slot {slot}) differs from ffmpeg"
        );
    }
    frames.len()
}

/// A generator seeded at random, its seed printed with `test` so a failure can be replayed.
pub fn seeded_rng(test: &str) -> rand::rngs::StdRng {
    let seed = rand::RngCore::next_u64(&mut rand::rng());
    eprintln!("{test}: seed {seed}");
    <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed)
}
