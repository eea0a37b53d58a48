//! `gm shard` on the demo images: the shards hold the folder's samples in its order with its
//! labels, their `.idx` equal a fresh index of each tar, and `gm shard --index` rebuilds them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};

use common::gm;
use gm_loader::shards::TarIndex;
use gm_loader::{Dataset, ImageFolder, WebDataset};

/// The demo images (GM_DEMO_IMAGES in the GPU bundle).
fn demo_images() -> PathBuf {
    std::env::var_os("GM_DEMO_IMAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/images"))
}

fn shards_in(dir: &Path) -> Vec<PathBuf> {
    let mut tars: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tar"))
        .collect();
    tars.sort();
    tars
}

#[test]
fn gm_shard_packs_a_folder_that_reads_back_as_the_folder() {
    let dir = std::env::temp_dir().join(format!("gm-shard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = gm()
        .args(["shard", "--from"])
        .arg(demo_images())
        .arg("--to")
        .arg(&dir)
        .args(["--size", "0.4MB", "--prefix", "demo"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    let tars = shards_in(&dir);
    assert!(tars.len() >= 3, "{report}");
    assert!(
        report.contains(&format!("{} shards", tars.len())),
        "{report}"
    );
    for tar in &tars {
        assert!(
            std::fs::metadata(tar).unwrap().len() <= 400_000 + 600_000,
            "{}",
            tar.display()
        );
    }
    let folder = ImageFolder::new(demo_images()).unwrap();
    let names: Vec<String> = tars.iter().map(|t| t.display().to_string()).collect();
    let shards = WebDataset::from_shards(names.clone()).open().unwrap();
    assert_eq!(shards.len(), folder.len());
    for i in 0..folder.len() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        folder.read(i, &mut a).unwrap();
        shards.read(i, &mut b).unwrap();
        assert!(a == b, "sample {i}: {}", shards.name(i));
        assert_eq!(shards.label(i), folder.label(i), "sample {i}");
    }
    // The written .idx are the tars' indexes; `--index` writes them again, the same.
    let mut written = Vec::new();
    for tar in &tars {
        let idx = tar.with_extension("idx");
        let text = std::fs::read_to_string(&idx).unwrap();
        let built = TarIndex::build(std::fs::File::open(tar).unwrap());
        assert_eq!(text, built.index.to_dali(), "{}", idx.display());
        std::fs::remove_file(&idx).unwrap();
        written.push(text);
    }
    let pattern = format!(
        "{}/demo-{{000000..{:06}}}.tar",
        dir.display(),
        tars.len() - 1
    );
    let out = gm().args(["shard", "--index", &pattern]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (tar, text) in tars.iter().zip(&written) {
        assert_eq!(
            &std::fs::read_to_string(tar.with_extension("idx")).unwrap(),
            text
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gm_shard_packs_videos_and_refuses_a_cut_shard_when_indexing() {
    let videos = common::fixtures().join("video");
    let dir = std::env::temp_dir().join(format!("gm-shard-video-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = gm()
        .args(["shard", "--from"])
        .arg(&videos)
        .arg("--to")
        .arg(&dir)
        .args(["--size", "1MiB"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tars = shards_in(&dir);
    let mut members = Vec::new();
    for tar in &tars {
        let built = TarIndex::build(std::fs::File::open(tar).unwrap());
        for s in &built.index.samples {
            members.extend(s.members.iter().map(|m| m.name.clone()));
        }
    }
    let mut want: Vec<String> = std::fs::read_dir(&videos)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            [".mp4", ".mkv", ".webm", ".mov", ".m4v"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .collect();
    want.sort();
    assert_eq!(members, want);
    // Cut the first shard: indexing it fails and says so.
    let first = &tars[0];
    let len = std::fs::metadata(first).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(first)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let out = gm().args(["shard", "--index"]).arg(first).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut short") && err.contains(&first.display().to_string()),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
