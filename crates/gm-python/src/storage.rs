//! `storage={...}` and URL sources: how the loaders reach object storage (S3, GCS, Azure,
//! HTTP) through gm-storage, and how its failures reach Python.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gm_loader::{Dataset, DatasetError, ImageFolder, ListFile, ShardError, WebDataset};
use gm_storage::{Storage, StorageOptions, looks_like_url};
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The storage a `storage=` dict describes: `None` (the process's shared storage, configured
/// from the environment) when no dict is given.
pub(crate) fn from_dict(dict: Option<&Bound<'_, PyDict>>) -> PyResult<Option<Storage>> {
    let Some(dict) = dict else {
        return Ok(None);
    };
    let mut pairs = Vec::with_capacity(dict.len());
    for (key, value) in dict.iter() {
        let key: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("storage= keys are strings"))?;
        pairs.push((key.clone(), option_text(&key, &value)?));
    }
    let options =
        StorageOptions::from_pairs(pairs).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Some(Storage::new(options)))
}

/// A value of `storage=` as the option parser reads it: strings as given, booleans as
/// `true`/`false`, numbers in decimal (durations in seconds, sizes in bytes).
fn option_text(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        return Ok(if value.is_truthy()? { "true" } else { "false" }.to_string());
    }
    if value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyInt>()
        || value.is_instance_of::<PyFloat>()
    {
        return Ok(value.str()?.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "storage[{key:?}]: a str, int, float or bool, not {}",
        value.get_type().name()?
    )))
}

/// The dataset behind `ImageLoader(source=...)`: a folder or list file on disk, or a URL: a
/// prefix (`s3://bucket/train/`) lists as an ImageFolder, an object is read as a list file;
/// WebDataset shards (a path or URL ending in `.tar`, with brace ranges and `::` lists, or a
/// list of them) open with their `.idx` indexes (given beside them, cached, or built).
/// Runs without the GIL (listing a bucket or indexing shards takes seconds).
pub(crate) fn image_dataset(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    storage: Option<Storage>,
) -> PyResult<Arc<dyn Dataset>> {
    let storage = storage.unwrap_or_else(Storage::global);
    if source.is_instance_of::<PyList>() || source.is_instance_of::<PyTuple>() {
        let shards: Vec<String> = source.extract()?;
        if let Some(bad) = shards.iter().find(|s| !is_shard(s)) {
            return Err(PyValueError::new_err(format!(
                "{bad}: a list source holds WebDataset shards (.tar)"
            )));
        }
        let builder = WebDataset::from_shards(shards).storage(storage);
        return open_shards(py, builder);
    }
    let path: PathBuf = source.extract()?;
    let text = path.to_string_lossy().into_owned();
    if is_shard(&text) || is_gzip_shard(&text) {
        if is_gzip_shard(&text) {
            return Err(PyValueError::new_err(format!(
                "{text}: a .tar.gz shard cannot be indexed for random access; repack it as .tar"
            )));
        }
        let builder = WebDataset::builder(&text).map_err(shard_error)?;
        return open_shards(py, builder.storage(storage));
    }
    if looks_like_url(&text) {
        let opened = py.detach(|| remote_images(&text, &storage));
        return opened.map_err(dataset_error);
    }
    if !path.is_dir() && !path.is_file() {
        return Err(PyValueError::new_err(format!(
            "{}: no such folder or list file",
            path.display()
        )));
    }
    let opened = py.detach(|| -> Result<Arc<dyn Dataset>, DatasetError> {
        Ok(if path.is_dir() {
            Arc::new(ImageFolder::with_storage(&path, &storage)?)
        } else {
            Arc::new(ListFile::with_storage(&path, &storage)?)
        })
    });
    opened.map_err(dataset_error)
}

/// The shards of `ImageLoader(source, stream=True)`: a pattern (brace ranges, `::` lists) or
/// a list of `.tar` or `.tar.gz` paths or URLs.
pub(crate) fn stream_shards(source: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let names: Vec<String> =
        if source.is_instance_of::<PyList>() || source.is_instance_of::<PyTuple>() {
            source.extract()?
        } else {
            let path: PathBuf = source.extract()?;
            gm_loader::shards::expand(&path.to_string_lossy()).map_err(shard_error)?
        };
    if let Some(bad) = names.iter().find(|s| !is_shard(s) && !is_gzip_shard(s)) {
        return Err(PyValueError::new_err(format!(
            "{bad}: stream=True reads WebDataset shards (.tar or .tar.gz)"
        )));
    }
    Ok(names)
}

/// A WebDataset shard or a pattern of them: its last name ends in `.tar`.
fn is_shard(text: &str) -> bool {
    text.rsplit("::")
        .next()
        .is_some_and(|last| last.ends_with(".tar"))
}

fn is_gzip_shard(text: &str) -> bool {
    let last = text.rsplit("::").next().unwrap_or(text);
    last.ends_with(".tar.gz") || last.ends_with(".tgz")
}

/// A WebDataset builder for `source`: a shard pattern (`train-{000..099}.tar`, a URL) or a
/// list of shard paths or URLs, reading through `storage`.
pub(crate) fn shards_builder(
    source: &Bound<'_, PyAny>,
    storage: Option<Storage>,
) -> PyResult<gm_loader::WebDatasetBuilder> {
    let storage = storage.unwrap_or_else(Storage::global);
    if source.is_instance_of::<PyList>() || source.is_instance_of::<PyTuple>() {
        let shards: Vec<String> = source.extract()?;
        return Ok(WebDataset::from_shards(shards).storage(storage));
    }
    let pattern: String = source.extract()?;
    Ok(WebDataset::builder(&pattern)
        .map_err(shard_error)?
        .storage(storage))
}

fn open_shards(
    py: Python<'_>,
    builder: gm_loader::WebDatasetBuilder,
) -> PyResult<Arc<dyn Dataset>> {
    let opened = py.detach(|| builder.open());
    Ok(Arc::new(opened.map_err(shard_error)?))
}

/// Shards that could not be opened: `OSError` when they could not be read, `ValueError` for
/// a bad pattern or index.
pub(crate) fn shard_error(e: ShardError) -> PyErr {
    match &e {
        ShardError::Io { .. } => PyOSError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// A URL ending in `/` is a prefix; another is a list file if such an object exists, else a
/// prefix (`s3://bucket/train` lists `train/`).
fn remote_images(url: &str, storage: &Storage) -> Result<Arc<dyn Dataset>, DatasetError> {
    if !url.ends_with('/') {
        match ListFile::with_storage(url, storage) {
            Ok(list) => return Ok(Arc::new(list)),
            Err(DatasetError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Arc::new(ImageFolder::with_storage(
        Path::new(url),
        storage,
    )?))
}

/// A dataset that could not be opened: `OSError` when its files or objects could not be read
/// (the message names the path or URL and the reason), `ValueError` for a bad URL or storage
/// option, a bad list file or an empty one.
pub(crate) fn dataset_error(e: DatasetError) -> PyErr {
    match &e {
        DatasetError::Io { source, .. } if source.kind() != std::io::ErrorKind::InvalidInput => {
            PyOSError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}
