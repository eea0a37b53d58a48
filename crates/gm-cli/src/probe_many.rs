//! `gm probe DIR` / `gm probe s3://bucket/prefix/`: every video in a folder or under a bucket
//! prefix indexed (in parallel, by gm-loader's VideoDataset), with a progress bar, one summary
//! per video, and what it cost: time, and for URLs requests and bytes per video.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use gm_demux::IndexOptions;
use gm_loader::VideoDataset;
use gm_storage::Storage;
use serde_json::{Value, json};

/// Whether `gm probe` was given many videos: a local directory, or a URL ending in `/`.
pub fn is_many(target: &Path) -> bool {
    let text = target.to_string_lossy();
    if gm_storage::looks_like_url(&text) {
        return text.ends_with('/');
    }
    target.is_dir()
}

/// Indexes every video in `dir` and prints the summaries (JSON: one object with `videos`,
/// `skipped` and `total`).
pub fn run(dir: &Path, options: IndexOptions, storage: &Storage, json_out: bool) -> Result<()> {
    let start = Instant::now();
    // One-frame episodes: the dataset is only the indexes.
    let builder = VideoDataset::builder()
        .directory(dir)
        .storage(storage)
        .index_options(options)
        .frames(1, 1);
    let dataset = crate::bars::open_videos(builder, &dir.display().to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    let remote = gm_storage::looks_like_url(&dir.to_string_lossy());
    let videos: Vec<Value> = (0..dataset.scenes())
        .map(|v| {
            let idx = dataset.video_index(v);
            let mut s = crate::probe::summary(idx, f64::NAN);
            if let Some(o) = s.as_object_mut() {
                // The time is the whole folder's (in `total`): videos index in parallel.
                o.remove("index_ms");
                if remote {
                    o.insert("requests".into(), json!(idx.requests));
                }
            }
            s
        })
        .collect();
    let skipped: Vec<Value> = dataset
        .skipped()
        .iter()
        .map(|e| json!({"file": e.name, "reason": e.reason.to_string()}))
        .collect();
    let sum = |field: &str| -> u64 { videos.iter().filter_map(|v| v[field].as_u64()).sum() };
    let n = videos.len().max(1) as f64;
    let mut total = json!({
        "videos": videos.len(),
        "skipped": skipped.len(),
        "seconds": seconds,
        "bytes_read": sum("bytes_read"),
        "file_size": sum("file_size"),
        "bytes_read_per_video": sum("bytes_read") as f64 / n,
    });
    if remote {
        total["requests"] = json!(sum("requests"));
        total["requests_per_video"] = json!(sum("requests") as f64 / n);
    }
    if json_out {
        println!(
            "{}",
            json!({"videos": videos, "skipped": skipped, "total": total})
        );
        return Ok(());
    }
    let requests = |v: &Value| match v["requests"].as_u64() {
        Some(r) => format!(", {r} requests"),
        None => String::new(),
    };
    for v in &videos {
        println!(
            "{} {} {}x{} {} frames, {} GOPs, {} of {} bytes read{}",
            v["file"].as_str().unwrap_or("?"),
            v["codec"].as_str().unwrap_or("?"),
            v["width"],
            v["height"],
            v["frame_count"],
            v["gop_count"],
            v["bytes_read"],
            v["file_size"],
            requests(v)
        );
    }
    for s in &skipped {
        println!(
            "left out: {} ({})",
            s["file"].as_str().unwrap_or("?"),
            s["reason"].as_str().unwrap_or("?")
        );
    }
    let per_video = match total["requests_per_video"].as_f64() {
        Some(r) => format!("{r:.1} requests and "),
        None => String::new(),
    };
    println!(
        "{} videos indexed in {seconds:.2} s ({} left out): {per_video}{:.0} bytes read per video",
        videos.len(),
        skipped.len(),
        total["bytes_read_per_video"].as_f64().unwrap_or(0.0)
    );
    Ok(())
}
