//! `gm probe` as scripts use it: JSON fields checked against ffprobe's goldens.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{fixtures, gm};

#[test]
fn probe_json_frames_match_ffprobe() {
    for name in [
        "h264_bpyramid",
        "hevc_open_gop",
        "h264_fragmented",
        "h264_vfr",
    ] {
        let video = fixtures().join(format!("video/{name}.mp4"));
        let out = gm()
            .args(["probe", "--json", "--frames"])
            .arg(&video)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let golden =
            std::fs::read_to_string(fixtures().join(format!("golden/{name}.packets.csv"))).unwrap();
        let mut want: Vec<Vec<i64>> = golden
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                // pts, dts, offset, size, key
                vec![
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[4].parse().unwrap(),
                    f[3].parse().unwrap(),
                    i64::from(f[5].starts_with('K')),
                ]
            })
            .collect();
        want.sort_by_key(|r| r[0]);
        let frames = v["frames"].as_array().unwrap();
        assert_eq!(
            v["frame_count"].as_u64().unwrap() as usize,
            want.len(),
            "{name}"
        );
        assert_eq!(frames.len(), want.len(), "{name}");
        let stream =
            std::fs::read_to_string(fixtures().join(format!("golden/{name}.stream.txt"))).unwrap();
        let time_base = stream
            .lines()
            .find_map(|l| l.strip_prefix("time_base=1/"))
            .unwrap();
        assert_eq!(
            v["timescale"].as_u64().unwrap().to_string(),
            time_base,
            "{name}"
        );
        assert_eq!(
            (v["width"].as_u64(), v["height"].as_u64()),
            (Some(320), Some(180))
        );
        for (f, w) in frames.iter().zip(&want) {
            let got = vec![
                f["pts"].as_i64().unwrap(),
                f["dts"].as_i64().unwrap(),
                f["offset"].as_i64().unwrap(),
                f["size"].as_i64().unwrap(),
                i64::from(f["keyframe"].as_bool().unwrap()),
            ];
            assert_eq!(&got, w, "{name}");
        }
        let codec = if name.starts_with("hevc") {
            "hevc"
        } else {
            "h264"
        };
        assert_eq!(v["codec"], codec);
        assert_eq!(v["vfr"], name == "h264_vfr", "{name}");
    }
}

#[test]
fn probe_text_summarizes_and_bad_files_fail_naming_the_file() {
    let video = fixtures().join("video/hevc_open_gop.mp4");
    let out = gm().arg("probe").arg(&video).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("hevc (hev1) Main, 320x180"), "{text}");
    assert!(text.contains("30 frames, 30.000 fps"), "{text}");
    assert!(text.contains("B-frames: yes"), "{text}");
    let bad = fixtures().join("golden/hevc_open_gop.framemd5");
    let out = gm().arg("probe").arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hevc_open_gop.framemd5")
            && err.contains("not an MP4/MOV or Matroska/WebM file"),
        "{err}"
    );
}

#[test]
fn probe_reads_webm_and_matroska() {
    for (file, codec, profile, container) in [
        ("vp9_altref.webm", "vp9", "Profile 0", "matroska"),
        ("av1_10bit.webm", "av1", "Main", "matroska"),
        ("h264_bframes.mkv", "h264", "High", "matroska"),
        ("av1_odd.mp4", "av1", "Main", "mp4"),
    ] {
        let video = fixtures().join("video").join(file);
        let out = gm().args(["probe", "--json"]).arg(&video).output().unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["container"], container, "{file}");
        assert_eq!(v["codec"], codec, "{file}");
        assert_eq!(v["profile"], profile, "{file}");
        assert_eq!(v["frame_count"], 30, "{file}");
        assert_eq!(v["sync_mismatches"], 0, "{file}");
        assert_eq!(v["gop_count"], 3, "{file}: a key frame every 10 frames");
    }
}
