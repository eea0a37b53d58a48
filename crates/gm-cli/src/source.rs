//! A video named by a path or a URL (`s3://`, `gs://`, `az://`, `http(s)://`), opened as a byte
//! source: local files by `pread`, remote objects by ranged GETs through gm-storage.
//! Credentials and endpoints come from the usual environment variables (`AWS_ENDPOINT_URL`,
//! `AWS_ACCESS_KEY_ID`, `GOOGLE_*`, `AZURE_*`, ...).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use gm_demux::{ByteSource, FileSource};
use gm_storage::{Location, RemoteSource, Storage, StorageOptions};

/// An opened video and, for a remote one, its request counters.
pub struct Opened {
    /// The bytes, for indexing and decode plans.
    pub source: Arc<dyn ByteSource>,
    /// The same source when it is remote (for `bytes_fetched`).
    pub remote: Option<Arc<RemoteSource>>,
}

/// `--storage KEY=VALUE`, shared by the commands that read URLs.
#[derive(clap::Args, Debug, Default)]
pub struct StorageArgs {
    /// A storage option for URLs, repeatable: gm's (concurrency, retries, timeout,
    /// connect_timeout, block_size, open_bytes, ...) or object_store's (endpoint, region,
    /// allow_http, ...), applied after the environment.
    #[arg(long = "storage", value_name = "KEY=VALUE", value_parser = key_value)]
    pub options: Vec<(String, String)>,
}

impl StorageArgs {
    /// The storage these options describe: the process's shared one when there are none.
    pub fn storage(&self) -> Result<Storage> {
        if self.options.is_empty() {
            return Ok(Storage::global());
        }
        Ok(Storage::new(StorageOptions::from_pairs(
            self.options.iter().map(|(k, v)| (k, v)),
        )?))
    }
}

fn key_value(text: &str) -> Result<(String, String)> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => anyhow::bail!("{text:?}: expected KEY=VALUE"),
    }
}

/// Opens `arg`: a local path, or a URL read through `storage`.
pub fn open(arg: &Path, storage: &Storage) -> Result<Opened> {
    let text = arg.to_string_lossy();
    let location = Location::parse(&text).with_context(|| format!("{text}: not a path or URL"))?;
    Ok(match location {
        Location::Local(path) => {
            let file = FileSource::open(&path).with_context(|| format!("opening {text}"))?;
            Opened {
                source: Arc::new(file),
                remote: None,
            }
        }
        Location::Remote(url) => {
            let remote = Arc::new(RemoteSource::open(storage, &url)?);
            Opened {
                source: Arc::clone(&remote) as Arc<dyn ByteSource>,
                remote: Some(remote),
            }
        }
    })
}
