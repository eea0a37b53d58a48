//! `gm shard`: pack an image folder or a video directory into WebDataset tar shards with their
//! DALI `.idx` indexes, or build the indexes of existing shards.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use gm_loader::shards::{ShardWriter, expand, index_path, index_shard, sample_key};
use gm_loader::{Dataset, ImageFolder, VIDEO_EXTENSIONS};
use gm_storage::{Location, RemoteUrl, Storage};
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `gm shard`.
#[derive(clap::Args)]
pub struct ShardArgs {
    /// An image folder (`<class>/<image>`, labels in `.cls`) or a directory of videos.
    #[arg(long, requires = "to", conflicts_with = "index")]
    from: Option<PathBuf>,
    /// The directory to write `<prefix>-000000.tar`, ... and their `.idx` into, or a URL
    /// prefix (`s3://bucket/train/`, ...): each shard and its `.idx` is uploaded as soon as it
    /// is finished, from a temporary copy that is removed after the upload.
    #[arg(long)]
    to: Option<String>,
    /// Target shard size: bytes, or with a unit (KB, MB, GB, KiB, MiB, GiB).
    #[arg(long, default_value = "1GB", value_parser = parse_size)]
    size: u64,
    /// Shard names' prefix.
    #[arg(long, default_value = "shard")]
    prefix: String,
    /// Build the `.idx` of these shards (paths or URLs; brace patterns such as
    /// `train-{000000..000099}.tar`), written next to each.
    #[arg(long, num_args = 1.., required_unless_present = "from")]
    index: Vec<String>,
    #[command(flatten)]
    storage: crate::source::StorageArgs,
}

/// `1GB`, `512MiB`, `1000`.
fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.parse().map_err(|e| anyhow::anyhow!("{text:?}: {e}"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => bail!("{text:?}: unknown unit {other:?}"),
    };
    let bytes = num * scale;
    if !(1.0..=1e15).contains(&bytes) {
        bail!("{text:?}: out of range");
    }
    Ok(bytes as u64)
}

pub fn run(args: &ShardArgs) -> Result<()> {
    let storage = args.storage.storage()?;
    match (&args.from, &args.to) {
        (Some(from), Some(to)) => match Location::parse(to)? {
            Location::Local(dir) => pack(from, &Target::Dir(dir), args),
            Location::Remote(url) => {
                let staging = std::env::temp_dir().join(format!("gm-shard-{}", std::process::id()));
                let target = Target::Url {
                    prefix: url,
                    staging: staging.clone(),
                    storage,
                };
                let done = pack(from, &target, args);
                let _ = std::fs::remove_dir_all(&staging);
                done
            }
        },
        _ => index_all(&args.index, &storage),
    }
}

/// One sample to pack: its key, its files with their extension, and its label.
struct Item {
    key: String,
    path: PathBuf,
    ext: String,
    label: Option<i64>,
}

fn bar(total: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Where `gm shard --to` puts the shards.
enum Target {
    Dir(PathBuf),
    /// A URL prefix; shards are written to `staging` first and uploaded one by one.
    Url {
        prefix: RemoteUrl,
        staging: PathBuf,
        storage: Storage,
    },
}

impl Target {
    /// The directory the writer writes into.
    fn dir(&self) -> &Path {
        match self {
            Target::Dir(d) => d,
            Target::Url { staging, .. } => staging,
        }
    }

    /// Uploads finished shard `n` (and its `.idx`) and removes the local copies; nothing for
    /// a directory.
    fn finished(&self, prefix: &str, n: usize) -> Result<()> {
        let Target::Url {
            prefix: url,
            staging,
            storage,
        } = self
        else {
            return Ok(());
        };
        let tar = format!("{prefix}-{n:06}.tar");
        for name in [tar.clone(), format!("{prefix}-{n:06}.idx")] {
            let local = staging.join(&name);
            let key = match url.key().trim_end_matches('/') {
                "" => name.clone(),
                dir => format!("{dir}/{name}"),
            };
            let dest = url.with_key(&key);
            // Parts of `part_bytes` (32 MiB) for large shards, read from the file as they go.
            storage
                .put_file(&dest, &local)
                .with_context(|| format!("uploading {tar} to {dest}"))?;
            let _ = std::fs::remove_file(&local);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        match self {
            Target::Dir(d) => d.display().to_string(),
            Target::Url { prefix, .. } => prefix.to_string(),
        }
    }
}

fn pack(from: &Path, to: &Target, args: &ShardArgs) -> Result<()> {
    let items = match ImageFolder::new(from) {
        Ok(folder) => image_items(&folder)?,
        Err(_) => video_items(from)?,
    };
    if items.is_empty() {
        bail!(
            "{}: no images in class folders, and no videos",
            from.display()
        );
    }
    let total: u64 = items
        .iter()
        .map(|i| std::fs::metadata(&i.path).map_or(0, |m| m.len()))
        .sum();
    let progress = bar(
        total,
        "  {bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec}, eta {eta} {msg}",
    );
    let started = Instant::now();
    let mut writer = ShardWriter::new(to.dir(), &args.prefix, args.size)
        .with_context(|| format!("creating {}", to.dir().display()))?;
    let mut uploaded = 0;
    for item in &items {
        let bytes = std::fs::read(&item.path)
            .with_context(|| format!("reading {}", item.path.display()))?;
        let label = item.label.map(|l| l.to_string());
        let mut members: Vec<(&str, &[u8])> = vec![(item.ext.as_str(), &bytes)];
        if let Some(label) = &label {
            members.push(("cls", label.as_bytes()));
        }
        writer
            .add(&item.key, &members)
            .with_context(|| format!("writing {} into a shard", item.path.display()))?;
        progress.inc(bytes.len() as u64);
        progress.set_message(format!("shard {}", writer.shards_written()));
        while uploaded < writer.shards_written() {
            to.finished(&args.prefix, uploaded)?;
            uploaded += 1;
        }
    }
    let shards = writer.finish().context("finishing the last shard")?;
    while uploaded < shards.len() {
        to.finished(&args.prefix, uploaded)?;
        uploaded += 1;
    }
    progress.finish_and_clear();
    println!(
        "{} samples ({:.1} MB) -> {} shards with .idx in {} ({:.1} s)",
        items.len(),
        total as f64 / 1e6,
        shards.len(),
        to.describe(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn ext_of(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The folder's images in its order; key `class/stem`.
fn image_items(folder: &ImageFolder) -> Result<Vec<Item>> {
    let root = folder.root();
    (0..folder.len())
        .map(|i| {
            let path = folder.path(i).to_path_buf();
            let rel = path
                .strip_prefix(root)
                .with_context(|| format!("{} is not under {}", path.display(), root.display()))?
                .with_extension("");
            let ext = ext_of(&path);
            Ok(Item {
                key: sample_key(&rel.to_string_lossy()),
                ext,
                path,
                label: Some(folder.label(i)),
            })
        })
        .collect()
}

/// The videos under `dir` (recursively), sorted by path; key: the relative path's stem.
fn video_items(dir: &Path) -> Result<Vec<Item>> {
    let mut found = Vec::new();
    walk(dir, &mut found).with_context(|| format!("listing {}", dir.display()))?;
    found.sort();
    found
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(dir)?.with_extension("");
            Ok(Item {
                key: sample_key(&rel.to_string_lossy()),
                ext: ext_of(&path),
                path,
                label: None,
            })
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if VIDEO_EXTENSIONS.contains(&ext_of(&path).as_str()) {
            out.push(path);
        }
    }
    Ok(())
}

/// Indexes shards and writes each `.idx` next to its shard (a PUT for remote ones).
fn index_all(patterns: &[String], storage: &Storage) -> Result<()> {
    let mut names = Vec::new();
    for p in patterns {
        names.extend(expand(p)?);
    }
    let progress = bar(
        names.len() as u64,
        "  {bar:40} {pos}/{len} shards, {per_sec}, eta {eta}",
    );
    let mut samples = 0;
    for name in &names {
        let (index, cut) = index_shard(name, storage)?;
        if let Some(cut) = cut {
            bail!(
                "{name}: the shard is cut short after {} samples: {cut}",
                index.samples.len()
            );
        }
        samples += index.samples.len();
        let text = index.to_dali();
        match Location::parse(name)? {
            Location::Local(path) => {
                let idx = index_path(&path);
                std::fs::write(&idx, text).with_context(|| format!("writing {}", idx.display()))?
            }
            Location::Remote(url) => {
                let Some(stem) = url.key().strip_suffix(".tar") else {
                    bail!("{name}: a remote shard's name must end in .tar to name its .idx");
                };
                storage.put(&url.with_key(&format!("{stem}.idx")), text.into_bytes())?;
            }
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    println!("{} shards indexed, {samples} samples", names.len());
    Ok(())
}
