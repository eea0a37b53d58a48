//! `cargo xtask bench`: the project against its peers, prepared here and run on the GPU
//! machine in one go.
//!
//! The GPU machine has no Rust and no network, and the device tool carries at most 64 MiB per
//! call. So this builds the release benches, the data sets (from real media, by the scripts in
//! `bench/data`) and the peers' Python packages here, and splits them into parts of at most
//! 60 MiB under `target/bench-bundle/partN`. Carried one after the other to the same machine,
//! the parts are put back together by `part1/run.sh`, which runs every workload and writes
//! JSON lines under `$OUT/bench`. `cargo xtask bench --report DIR` turns those into the report.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::bundle::{cargo_artifacts, copy_exe, copy_tree, set_executable, tree_size};
use crate::{rel, run_cmd};

const PART_LIMIT: u64 = 60 << 20;
/// Large archives are cut into chunks of this size so that parts can be packed full.
const CHUNK: u64 = 48 << 20;

/// The peers' packages: (file under target/bench-peers, how to get it when it is missing).
const PEERS: &[(&str, &str)] = &[
    (
        "dali.tar.xz",
        "NVIDIA DALI 2.4.0 for CUDA 13 and its pure-Python dependencies (pypi.nvidia.com)",
    ),
    (
        "nvimgcodec.tar.xz",
        "nvImageCodec 0.9.0 for CUDA 13 (pypi.org nvidia-nvimgcodec-cu13)",
    ),
    (
        "pynvvideocodec-2.2.4-cp312-cp312-manylinux_2_28_x86_64.whl",
        "PyNvVideoCodec 2.2.4 (pypi.org)",
    ),
];

pub fn run(root: &Path) -> Result<()> {
    let data = root.join("target/bench-data");
    ensure_data(root, &data)?;
    let peers = root.join("target/bench-peers");
    ensure_peers(&peers)?;

    let out = root.join("target/bench-bundle");
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let stage = out.join("part1");
    std::fs::create_dir_all(stage.join("bin"))?;
    let built = cargo_artifacts(
        root,
        &[
            "build",
            "-p",
            "gm-codec",
            "-p",
            "gm-loader",
            "-p",
            "gm-demux",
            "--benches",
        ],
    )?;
    for a in &built {
        if let Some(bench) = a.name.strip_prefix("bench:") {
            copy_exe(&a.path, &stage.join("bin").join(bench))?;
        }
    }
    for name in [
        "gm-codec--jpeg",
        "gm-codec--nvdec",
        "gm-loader--pipeline",
        "gm-loader--clips",
        "gm-demux--index",
    ] {
        if !stage.join("bin").join(name).exists() {
            bail!("bench {name} was not built");
        }
    }
    copy_tree(&root.join("bench/peers"), &stage.join("peers"))?;
    copy_tree(&data, &stage.join("data"))?;
    let run_sh = stage.join("run.sh");
    std::fs::copy(root.join("bench/run.sh"), &run_sh)?;
    set_executable(&run_sh)?;

    // The peers' archives, cut into chunks and packed into the parts, largest first.
    let mut chunks: Vec<(PathBuf, u64)> = Vec::new();
    let chunk_dir = out.join("chunks");
    std::fs::create_dir_all(&chunk_dir)?;
    for (file, _) in PEERS {
        let src = peers.join(file);
        let len = std::fs::metadata(&src)?.len();
        let mut f = std::fs::File::open(&src)?;
        for k in 0..len.div_ceil(CHUNK) {
            let dst = chunk_dir.join(format!("{file}.{k:02}"));
            let mut o = std::fs::File::create(&dst)?;
            std::io::copy(&mut (&mut f).take(CHUNK), &mut o)?;
            chunks.push((dst, CHUNK.min(len - k * CHUNK)));
        }
    }
    chunks.sort_by_key(|c| std::cmp::Reverse(c.1));
    let mut parts: Vec<u64> = vec![tree_size(&stage)?];
    if parts[0] > PART_LIMIT {
        bail!(
            "part1 (benches and data) is {} bytes, over {PART_LIMIT}",
            parts[0]
        );
    }
    for (path, len) in chunks {
        let k = match parts.iter().position(|&used| used + len <= PART_LIMIT) {
            Some(k) => k,
            None => {
                parts.push(0);
                parts.len() - 1
            }
        };
        parts[k] += len;
        let dir = out.join(format!("part{}/peers-chunks", k + 1));
        std::fs::create_dir_all(&dir)?;
        let name = path.file_name().context("a chunk has a name")?;
        std::fs::rename(&path, dir.join(name))?;
    }
    std::fs::remove_dir_all(&chunk_dir)?;

    println!("{}: {} parts", rel(root, &out), parts.len());
    for (k, used) in parts.iter().enumerate() {
        println!(
            "  part{}: {:.1} MiB",
            k + 1,
            *used as f64 / (1 << 20) as f64
        );
    }
    println!(
        "on the GPU machine (2 GPUs give the scaling rows too): carry target/bench-bundle/part2 .. \
         part{n} in consecutive calls, each running `mkdir -p /tmp/gm-parts && cp \
         target/bench-bundle/part*/peers-chunks/* /tmp/gm-parts/` (a call's carried paths go when \
         it ends; /tmp stays while the machine is warm), then carry part1 and run \
         `target/bench-bundle/part1/run.sh images` and `target/bench-bundle/part1/run.sh video` \
         (each under 10 minutes; results in $OUT/bench), and on a machine of several GPUs \
         `target/bench-bundle/part1/run.sh host`; then here: \
         cargo xtask bench --report DIR",
        n = parts.len()
    );
    Ok(())
}

/// Builds the data sets with the documented scripts when they are not there yet.
fn ensure_data(root: &Path, data: &Path) -> Result<()> {
    if !data.join("jpeg/imagenet").is_dir() || !data.join("jpeg/large").is_dir() {
        println!("building the JPEG sets (bench/data/make_jpeg_sets.sh)");
        run_cmd(Command::new(root.join("bench/data/make_jpeg_sets.sh")).arg(data.join("jpeg")))?;
    }
    let videos = [
        "bench_1080p_h264.mp4",
        "bench_1080p_hevc.mp4",
        "bench_1080p_h264_gop250.mp4",
        "long_1080p_10min.mp4",
    ];
    if !data.join("scenes/scene_cam5.mp4").is_file() {
        println!("encoding the multi-camera scene (bench/data/make_scenes.sh)");
        run_cmd(Command::new(root.join("bench/data/make_scenes.sh")).arg(data.join("scenes")))?;
    }
    if videos.iter().any(|v| !data.join("video").join(v).is_file()) {
        println!(
            "encoding the videos (bench/data/make_videos.sh; the 10-minute one takes minutes)"
        );
        run_cmd(Command::new(root.join("bench/data/make_videos.sh")).arg(data.join("video")))?;
    }
    Ok(())
}

/// Downloads the peers' packages that are not in `dir` yet (needs network and pip).
fn ensure_peers(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for (file, what) in PEERS {
        if dir.join(file).is_file() {
            continue;
        }
        println!("fetching {what}");
        let tmp = dir.join("download");
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        let pip = |args: &[&str]| {
            run_cmd(
                Command::new("python3")
                    .args(["-m", "pip", "download", "--quiet", "--only-binary=:all:"])
                    .args([
                        "--python-version",
                        "3.12",
                        "--platform",
                        "manylinux_2_28_x86_64",
                    ])
                    .args(["-d"])
                    .arg(&tmp)
                    .args(args),
            )
        };
        match *file {
            "dali.tar.xz" => {
                // DALI with the dependencies the GPU machine lacks, named one by one: pip
                // cannot resolve nvImageCodec's `all` extra (no nvTIFF for CUDA 13 on PyPI),
                // which only TIFF and JPEG 2000 need.
                pip(&[
                    "--no-deps",
                    "nvidia-dali-cuda130==2.4.0",
                    "nvidia-nvimgcodec-cu13==0.9.0.20",
                    "nvidia-libnvcomp-cu13==5.3.0.16",
                    "astunparse==1.6.3",
                    "gast==0.6.0",
                    "optree==0.20.0",
                    "nvtx==0.2.17",
                    "makefun==1.16.0",
                    "libcst==1.9.0",
                ])?;
                unpack_wheels(&tmp, &[])?;
                keep_python_312(&tmp.join("site"))?;
                pack(&tmp.join("site"), &dir.join(file))?;
            }
            "nvimgcodec.tar.xz" => {
                pip(&["--no-deps", "nvidia-nvimgcodec-cu13==0.9.0"])?;
                unpack_wheels(&tmp, &[])?;
                pack(&tmp.join("site"), &dir.join(file))?;
            }
            _ => {
                pip(&["--no-deps", "pynvvideocodec==2.2.4"])?;
                std::fs::rename(tmp.join(file), dir.join(file))?;
            }
        }
        std::fs::remove_dir_all(&tmp)?;
    }
    Ok(())
}

/// Unzips every wheel in `dir` (but those whose names start with one of `skip`) into
/// `dir/site`, which is what `pip install --target` would make for pure unpacking.
fn unpack_wheels(dir: &Path, skip: &[&str]) -> Result<()> {
    let site = dir.join("site");
    std::fs::create_dir_all(&site)?;
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = file_name(&p);
        if name.ends_with(".whl") && !skip.iter().any(|s| name.starts_with(s)) {
            run_cmd(
                Command::new("python3")
                    .args(["-m", "zipfile", "-e"])
                    .arg(&p)
                    .arg(&site),
            )?;
        }
    }
    Ok(())
}

/// `p`'s last component as a string ("" for none).
fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Deletes the extension modules built for other Pythons than the GPU machine's 3.12 (DALI
/// and nvImageCodec ship one per version: a fifth of the archive).
fn keep_python_312(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = file_name(&p);
        if p.is_dir() {
            keep_python_312(&p)?;
        } else if name.contains(".cpython-3") && !name.contains(".cpython-312-") {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(())
}

fn pack(dir: &Path, out: &Path) -> Result<()> {
    run_cmd(
        Command::new("tar")
            .args(["-cJf"])
            .arg(out)
            .args(["-C"])
            .arg(dir)
            .arg("."),
    )
}
