//! `gm frames` on the GPU and on the CPU decoder: the written yuv files' MD5s equal ffmpeg's
//! framemd5, and its RGB files are gm-transforms' conversion of those frames (the CPU twin of
//! the fused kernel).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{fixtures, gm};

use md5::{Digest, Md5};

#[test]
fn gm_frames_writes_frames_equal_to_ffmpeg() {
    let _device = gm_cuda::gpu_test_device!("gm_frames_writes_frames_equal_to_ffmpeg");
    // AV1 goes to NVDEC where the GPU has it, else to the CPU decoder (auto).
    let names = [
        "hevc_open_gop",
        "hevc_main10",
        "h264_1366x766",
        "av1_10bit.webm",
    ];
    frames_equal_ffmpeg("auto", &names);
}

/// Without a GPU (CI), `--decoder cpu` through libavcodec and the twin; needs FFmpeg's
/// libraries (GM_REQUIRE_LIBAVCODEC=1 fails instead of skipping without them).
#[test]
fn gm_frames_on_the_cpu_decoder_equal_ffmpeg() {
    if !gm_codec::avcodec::testing::libavcodec_or_skip("gm_frames_on_the_cpu_decoder") {
        return;
    }
    let names = [
        "hevc_open_gop",
        "hevc_main10",
        "h264_1366x766",
        "av1_10bit.webm",
        "vp9_odd.webm",
    ];
    frames_equal_ffmpeg("cpu", &names);
}

fn frames_equal_ffmpeg(decoder: &str, names: &[&str]) {
    let dir = std::env::temp_dir().join(format!("gm-frames-{decoder}-{}", std::process::id()));
    for file in names {
        let (name, file) = match file.split_once('.') {
            Some((stem, _)) => (stem.to_string(), file.to_string()),
            None => (file.to_string(), format!("{file}.mp4")),
        };
        let name = name.as_str();
        let video = fixtures().join(format!("video/{file}"));
        let golden: Vec<String> =
            std::fs::read_to_string(fixtures().join(format!("golden/{name}.framemd5")))
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
                .collect();
        let frames = [0, golden.len() / 2, golden.len() - 1];
        let list = frames.map(|f| f.to_string()).join(",");
        let out = gm()
            .args(["frames", "--decoder", decoder])
            .arg(&video)
            .args(["--frames", &list, "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("(decoder: "), "{said}");
        if decoder == "cpu" {
            assert!(said.contains("(decoder: cpu"), "{said}");
        }
        for f in frames {
            let bytes = std::fs::read(dir.join(format!("{f:06}.yuv"))).unwrap();
            assert_eq!(
                format!("{:x}", Md5::digest(&bytes)),
                golden[f],
                "{name} frame {f}"
            );
        }
        let rgb = gm()
            .args(["frames", "--decoder", decoder])
            .arg(&video)
            .args(["--frames", &list, "--format", "rgb", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            rgb.status.success(),
            "{}",
            String::from_utf8_lossy(&rgb.stderr)
        );
        let (w, h, bits) = stream_geometry(name);
        for f in frames {
            let yuv = std::fs::read(dir.join(format!("{f:06}.yuv"))).unwrap();
            let got = std::fs::read(dir.join(format!("{f:06}.rgb"))).unwrap();
            let want = twin_rgb(&yuv, w, h, bits);
            let worst = got.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).max();
            assert_eq!(got.len(), want.len(), "{name} frame {f}");
            assert!(worst <= Some(1), "{name} frame {f}: off by {worst:?}");
        }
        let png = gm()
            .args(["frames", "--decoder", decoder])
            .arg(&video)
            .args(["--frames", "1", "--format", "png", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            png.status.success(),
            "{}",
            String::from_utf8_lossy(&png.stderr)
        );
        assert!(
            std::fs::read(dir.join("000001.png"))
                .unwrap()
                .starts_with(b"\x89PNG")
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// (width, height, bits per sample) of fixture `name`, from its ffprobe golden.
fn stream_geometry(name: &str) -> (u32, u32, u8) {
    let text =
        std::fs::read_to_string(fixtures().join(format!("golden/{name}.stream.txt"))).unwrap();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap()
            .to_string()
    };
    let bits = if field("pix_fmt").contains("10") {
        10
    } else {
        8
    };
    (
        field("width").parse().unwrap(),
        field("height").parse().unwrap(),
        bits,
    )
}

/// The CPU twin of the fused kernel converting ffmpeg's yuv420p / yuv420p10le bytes to RGB,
/// BT.709 limited range, chroma sited left (H.264 and HEVC's default): what every fixture of
/// the frames tests signals.
fn twin_rgb(yuv: &[u8], w: u32, h: u32, bits: u8) -> Vec<u8> {
    use gm_transforms::cpu::SemiPlanar;
    use gm_transforms::{ChromaFilter, Matrix, Orientation};
    let frame = SemiPlanar::from_yuv420p(yuv, w, h, bits).unwrap();
    frame
        .host_image(Matrix::Bt709, false, Orientation::STORED)
        .with_chroma(ChromaFilter::Cubic { x: 0, y: 128 })
        .to_rgb8()
}

/// `gm frames URL`: the index and the planned packets read by ranged GETs (small blocks, so
/// that nothing is read whole) decode to ffmpeg's frames.
#[test]
fn gm_frames_of_a_url_equal_ffmpeg() {
    let _device = gm_cuda::gpu_test_device!("gm_frames_of_a_url_equal_ffmpeg");
    let server = gm_storage::testing::FaultServer::start().unwrap();
    let dir = std::env::temp_dir().join(format!("gm-frames-url-{}", std::process::id()));
    for name in ["hevc_open_gop", "h264_1366x766"] {
        let video = fixtures().join(format!("video/{name}.mp4"));
        server.insert(&format!("{name}.mp4"), std::fs::read(&video).unwrap());
        let golden: Vec<String> =
            std::fs::read_to_string(fixtures().join(format!("golden/{name}.framemd5")))
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
                .collect();
        let frames = [0, golden.len() / 2 + 1, golden.len() - 1];
        let list = frames.map(|f| f.to_string()).join(",");
        let url = server.url(&format!("{name}.mp4")).to_string();
        let out = gm()
            .args(["frames", &url, "--frames", &list])
            .args([
                "--storage",
                "open_bytes=8KiB",
                "--storage",
                "block_size=4KiB",
            ])
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for f in frames {
            let bytes = std::fs::read(dir.join(format!("{f:06}.yuv"))).unwrap();
            assert_eq!(
                format!("{:x}", Md5::digest(&bytes)),
                golden[f],
                "{name} frame {f} from {url}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
