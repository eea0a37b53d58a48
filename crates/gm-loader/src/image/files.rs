//! The files of a dataset, local or remote, with their labels; and the remote version of the
//! ImageFolder walk.

use std::path::{Path, PathBuf};

use gm_storage::{Location, RemoteUrl, Storage, StorageError};

use super::dataset::{IMAGE_EXTENSIONS, Label};
use crate::error::DatasetError;
use crate::progress::Progress;

/// One sample's file.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    Local(PathBuf),
    /// `name` is the URL as a path, for `path()` and errors.
    Remote {
        name: PathBuf,
        url: RemoteUrl,
    },
}

impl Entry {
    pub(crate) fn remote(url: RemoteUrl) -> Entry {
        Entry::Remote {
            name: PathBuf::from(url.url().as_str()),
            url,
        }
    }

    /// A path or URL from a list file or the user.
    pub(crate) fn parse(text: &str, base: &Base) -> Result<Entry, StorageError> {
        Ok(match Location::parse(text)? {
            Location::Remote(url) => Entry::remote(url),
            Location::Local(path) if path.is_absolute() => Entry::Local(path),
            Location::Local(path) => match base {
                Base::Dir(dir) => Entry::Local(dir.join(path)),
                Base::Url(url) => Entry::remote(url.with_key(&join_key(url.key(), text))),
            },
        })
    }

    pub(crate) fn path(&self) -> &Path {
        match self {
            Entry::Local(p) => p,
            Entry::Remote { name, .. } => name,
        }
    }
}

/// Where relative entries of a list file resolve.
#[derive(Debug, Clone)]
pub(crate) enum Base {
    Dir(PathBuf),
    /// A prefix URL ("folder" of the list file).
    Url(RemoteUrl),
}

fn join_key(prefix: &str, rel: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        rel.to_string()
    } else {
        format!("{prefix}/{rel}")
    }
}

/// Files with their labels.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    pub entries: Vec<Entry>,
    pub labels: Vec<Label>,
    pub storage: Storage,
}

impl Files {
    pub(crate) fn new(storage: Storage) -> Files {
        Files {
            entries: Vec::new(),
            labels: Vec::new(),
            storage,
        }
    }

    pub(crate) fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        match &self.entries[index] {
            Entry::Local(path) => super::dataset::read_file(path, buf),
            Entry::Remote { url, .. } => {
                let (bytes, _) = self.storage.get(url, None, None)?;
                *buf = bytes;
                Ok(())
            }
        }
    }

    /// Local files are read one after another; remote ones with concurrent GETs, under the
    /// storage's limits.
    pub(crate) fn read_batch(
        &self,
        indices: &[usize],
        bufs: &mut [Vec<u8>],
    ) -> Vec<std::io::Result<()>> {
        let urls: Vec<RemoteUrl> = indices
            .iter()
            .filter_map(|&i| match &self.entries[i] {
                Entry::Remote { url, .. } => Some(url.clone()),
                Entry::Local(_) => None,
            })
            .collect();
        let mut fetched = self.storage.get_many(&urls).into_iter();
        let mut results = Vec::with_capacity(indices.len());
        for (&i, buf) in indices.iter().zip(bufs.iter_mut()) {
            results.push(match &self.entries[i] {
                Entry::Local(path) => super::dataset::read_file(path, buf),
                Entry::Remote { .. } => match fetched.next() {
                    Some(Ok(bytes)) => {
                        *buf = bytes;
                        Ok(())
                    }
                    Some(Err(e)) => Err(e.into()),
                    None => Err(std::io::Error::other("a batch read lost a sample")),
                },
            });
        }
        results
    }
}

fn is_image(key: &str) -> bool {
    Path::new(key).extension().is_some_and(|e| {
        IMAGE_EXTENSIONS
            .iter()
            .any(|x| e.to_string_lossy().eq_ignore_ascii_case(x))
    })
}

/// The ImageFolder walk over a bucket prefix: classes are the first key component under
/// `root`, sorted as strings; files are sorted as paths (component by component), exactly as
/// the local walk sorts, so that a folder and its upload give the same order.
pub(crate) fn list_folder(
    storage: &Storage,
    root: &RemoteUrl,
    progress: Option<&Progress>,
) -> Result<(Vec<String>, Files), DatasetError> {
    let io = |e: StorageError| DatasetError::Io {
        path: PathBuf::from(root.url().as_str()),
        source: e.into(),
    };
    let prefix = root.key().trim_end_matches('/');
    let mut found: Vec<(String, PathBuf, RemoteUrl)> = Vec::new();
    // A class is any "directory" under the root: a key with a `/` after it, image or not
    // (locally a folder holding no image is still a class). Empty folders do not exist in
    // object stores.
    let mut classes: Vec<String> = Vec::new();
    let listed = progress.map(Progress::listing_counter);
    for entry in storage.list_counted(root, listed).map_err(io)? {
        let key = entry.url.key();
        let rel = key
            .strip_prefix(prefix)
            .unwrap_or(key)
            .trim_start_matches('/');
        let Some((class, rest)) = rel.split_once('/') else {
            continue;
        };
        if class.is_empty() || rest.is_empty() {
            continue;
        }
        classes.push(class.to_string());
        if is_image(rest) {
            found.push((class.to_string(), PathBuf::from(rest), entry.url));
        }
    }
    classes.sort();
    classes.dedup();
    found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut files = Files::new(storage.clone());
    for (class, _, url) in found {
        let label = classes.binary_search(&class).unwrap_or_default() as Label;
        files.entries.push(Entry::remote(url));
        files.labels.push(label);
    }
    Ok((classes, files))
}
