//! LeRobot v3 datasets (tests/media/lerobot, written by its make.py the way LeRobot writes
//! them: two SVT-AV1 cameras at GOP 2, episodes concatenated into files): every sample's
//! frames, padding and timestamps equal what LeRobot's `__getitem__` would decode, as
//! make.py computed from ffprobe's frame times; errors as LeRobot raises them. The chosen
//! frames, decoded on the CPU, equal ffmpeg's decode of those frames.
#![allow(clippy::unwrap_used)]

mod video_common;

use std::path::{Path, PathBuf};

use gm_codec::avcodec::CpuDecoder;
use gm_demux::{BitstreamScan, IndexOptions, IndexingDemuxer};
use gm_loader::{LeRobotDataset, LeRobotError, LoaderError};
use md5::{Digest, Md5};
use serde_json::Value;
use video_common::fixtures;

fn root() -> PathBuf {
    fixtures().join("lerobot/dataset")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("lerobot/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

const CAMERAS: [&str; 2] = ["observation.images.front", "observation.images.wrist"];

fn open_with_deltas(root: &Path, deltas: &[f64]) -> Result<LeRobotDataset, LoaderError> {
    let mut b = LeRobotDataset::builder(root);
    for c in CAMERAS {
        b = b.delta_timestamps(c, deltas.to_vec());
    }
    b.open()
}

#[test]
fn every_sample_reads_the_frames_lerobot_would_decode() {
    let want = expected();
    let deltas: Vec<f64> = want["delta_timestamps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let d = open_with_deltas(&root(), &deltas).unwrap();
    let samples = want["samples"].as_array().unwrap();
    assert_eq!(d.len(), samples.len());
    assert_eq!(d.cameras(), CAMERAS);
    assert_eq!(d.info().fps, 10.0);
    let videos = d.videos();
    assert_eq!(videos.len(), d.len(), "one clip per sample");
    assert!(videos.is_multi_camera());
    for (i, s) in samples.iter().enumerate() {
        let got = d.sample(i).unwrap();
        assert_eq!(got.index, i);
        assert_eq!(
            got.episode_index as u64,
            s["episode_index"].as_u64().unwrap()
        );
        let pad: Vec<bool> = s["is_pad"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_bool().unwrap())
            .collect();
        let clip = videos.clip(i).unwrap();
        for (c, cam) in CAMERAS.iter().enumerate() {
            assert_eq!(got.is_pad[c], pad, "sample {i} {cam}");
            let w = &s["cameras"][cam];
            let (v, frames) = &clip.cameras[c];
            let path = videos.path(*v);
            assert!(
                path.ends_with(w["video"].as_str().unwrap()),
                "sample {i} {cam}: {}",
                path.display()
            );
            let want_frames: Vec<usize> = w["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(frames, &want_frames, "sample {i} {cam}");
        }
        // The query times are the data's timestamps of the clamped rows (float32 values).
        let ts = &got.query_timestamps[0];
        assert_eq!(ts.len(), deltas.len());
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "sample {i}: {ts:?}");
    }
    // Samples of episode 1 (rows 12..19) read file 0 after episode 0's 12 frames.
    let s13 = videos.clip(13).unwrap();
    assert_eq!(s13.cameras[0].1, vec![12, 12, 13, 14]);
}

/// Without delta timestamps a sample is its own frame of each camera.
#[test]
fn without_deltas_a_sample_is_its_own_frame() {
    let d = LeRobotDataset::builder(root()).open().unwrap();
    let want = expected();
    for i in [0, 11, 12, 18, 19, 33] {
        let clip = d.videos().clip(i).unwrap();
        for (c, cam) in CAMERAS.iter().enumerate() {
            // The third delta of make.py's list is 0: the sample's own frame.
            let own = want["samples"][i]["cameras"][cam]["frames"][2]
                .as_u64()
                .unwrap() as usize;
            assert_eq!(clip.cameras[c].1, vec![own], "sample {i} {cam}");
            assert_eq!(d.sample(i).unwrap().is_pad[c], vec![false]);
        }
    }
}

/// A copy of the dataset with one file replaced.
fn variant(tag: &str, replace: &str, with: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gm-lerobot-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&root(), &dir);
    std::fs::write(dir.join(replace), with).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

#[test]
fn a_frame_beyond_the_tolerance_is_lerobots_error_naming_sample_camera_and_times() {
    let shifted =
        std::fs::read(fixtures().join("lerobot/variants/episodes_shifted.parquet")).unwrap();
    let dir = variant(
        "shifted",
        "meta/episodes/chunk-000/file-000.parquet",
        &shifted,
    );
    let err = LeRobotDataset::builder(&dir).open().err().unwrap();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            LoaderError::LeRobot(LeRobotError::Tolerance {
                sample: 12,
                episode: 1,
                ..
            })
        ),
        "{msg}"
    );
    for part in [
        "observation.images.front",
        "file-000.mp4",
        "1.250000",
        "tolerance_s 0.0001",
    ] {
        assert!(msg.contains(part), "'{part}' missing: {msg}");
    }
    // A tolerance of half a frame takes it.
    let d = LeRobotDataset::builder(&dir)
        .tolerance_s(0.051)
        .open()
        .unwrap();
    assert_eq!(d.len(), 34);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn settings_lerobot_refuses_are_refused_with_its_reasons() {
    let e = open_with_deltas(&root(), &[0.0, 0.033])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("0.033") && e.contains("multiple of 1/fps"),
        "{e}"
    );
    let e = LeRobotDataset::builder(root())
        .delta_timestamps("observation.images.side", vec![0.0])
        .open()
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("observation.images.side") && e.contains("not a camera"),
        "{e}"
    );
    let e = LeRobotDataset::builder(root())
        .delta_timestamps(CAMERAS[0], vec![-0.1, 0.0])
        .open()
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("as many delta timestamps"), "{e}");
    let info = std::fs::read_to_string(root().join("meta/info.json")).unwrap();
    let old = info.replace("\"v3.0\"", "\"v2.1\"");
    let dir = variant("v21", "meta/info.json", old.as_bytes());
    let e = LeRobotDataset::builder(&dir)
        .open()
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("v2.1") && e.contains("convert_dataset_v21_to_v30"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
    let e = LeRobotDataset::builder("/nonexistent/lerobot")
        .open()
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("/nonexistent/lerobot/meta/info.json"), "{e}");
}

/// The frames the samples name, decoded on the CPU (FFmpeg's libdav1d), equal ffmpeg's decode
/// of those frames of the concatenated files.
#[test]
fn the_chosen_frames_decode_to_ffmpegs_frames() {
    if !gm_codec::avcodec::testing::libavcodec_or_skip("the_chosen_frames_decode_to_ffmpegs_frames")
    {
        return;
    }
    let mut decoder = CpuDecoder::new(1).unwrap();
    let d = open_with_deltas(&root(), &[-0.1, 0.0]).unwrap();
    let videos = d.videos();
    let mut checked = 0;
    for i in (0..d.len()).step_by(3) {
        for (v, frames) in videos.clip(i).unwrap().cameras {
            let path = videos.path(v).to_path_buf();
            let rel = path.strip_prefix(root()).unwrap();
            let key = rel.iter().nth(1).unwrap().to_str().unwrap();
            let file = rel.file_stem().unwrap().to_str().unwrap();
            let golden: Vec<String> = std::fs::read_to_string(
                fixtures().join(format!("lerobot/golden/{key}.{file}.framemd5")),
            )
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
            .collect();
            let demux = IndexingDemuxer::open(
                &path,
                IndexOptions {
                    scan: BitstreamScan::Full,
                    ..Default::default()
                },
            )
            .unwrap();
            let plan = demux.plan(&frames).unwrap();
            decoder
                .decode(&demux, &plan, &mut |f| {
                    let md5 = format!("{:x}", Md5::digest(f.to_planar()));
                    assert_eq!(
                        md5,
                        golden[f.frame as usize],
                        "sample {i}: {}",
                        path.display()
                    );
                    checked += 1;
                    Ok(())
                })
                .unwrap();
        }
    }
    assert!(checked >= 20, "{checked}");
}
