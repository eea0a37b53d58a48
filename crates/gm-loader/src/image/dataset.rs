//! Indexable sources of samples: encoded image bytes and a label.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use gm_storage::{Location, Storage};
use gm_transforms::targets::{BoundingBoxes, MaskStack, TargetGeometry};

use super::files::{Base, Entry, Files, list_folder};
use super::mask_source::MaskSource;
use crate::coco::{CocoError, MovedCoco};
use crate::error::{DatasetError, SampleErrorKind};
use crate::progress::Progress;

/// A class label (an index into the dataset's class names).
pub type Label = i64;

/// File extensions an [`ImageFolder`] picks up (compared without case).
pub const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "bmp", "webp", "tif", "tiff"];

/// Samples by index: a label, a name for errors, and the encoded bytes.
///
/// `read` fills a caller-owned buffer so that workers reuse their allocations.
pub trait Dataset: Send + Sync {
    /// Number of samples.
    fn len(&self) -> usize;
    /// Whether there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The label of sample `index` (`index < len()`).
    fn label(&self, index: usize) -> Label;
    /// A name for sample `index` in errors: its path, usually.
    fn name(&self, index: usize) -> String;
    /// Replaces the contents of `buf` with the encoded bytes of sample `index`.
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()>;
    /// Reads samples `indices` into `bufs` (one buffer each), one result per sample: a failed
    /// read affects only its sample. Remote datasets send the reads at once; by default this
    /// is one [`read`](Self::read) after another.
    fn read_batch(&self, indices: &[usize], bufs: &mut [Vec<u8>]) -> Vec<std::io::Result<()>> {
        indices
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&i, buf)| self.read(i, buf))
            .collect()
    }
    /// Sample `index`'s bounding boxes on its image's canvas, for transforms that draw from
    /// them ([`Transform::needs_boxes`](gm_transforms::Transform::needs_boxes):
    /// RandomIoUCrop); `None` for a dataset without targets (the default), an error for a
    /// sample whose annotations are bad.
    fn boxes(&self, index: usize) -> Result<Option<BoundingBoxes>, SampleErrorKind> {
        let _ = index;
        Ok(None)
    }
    /// Sample `index`'s masks on its image's canvas (a label map, or one mask per object in
    /// the order of [`boxes`](Self::boxes)), for a loader that moves them with the pixels
    /// ([`LoaderBuilder::masks`](crate::LoaderBuilder::masks)); `None` for a sample without
    /// masks (the default), an error for one whose masks cannot be read.
    fn masks(&self, index: usize) -> Result<Option<MaskStack>, SampleErrorKind> {
        let _ = index;
        Ok(None)
    }
    /// Whether [`mask_source`](Self::mask_source) gives its masks as runs
    /// ([`MaskSource::runs`]: COCO's outlines), a few bytes an object that the GPU writes out,
    /// so that a GPU loader's host workers do little for them and the loader keeps the plan of
    /// a loader without masks. `false` by default: masks as pixels (a label map's PNG, decoded
    /// by the workers), for which the loader plans more workers and the engines alone.
    fn masks_as_runs(&self) -> bool {
        false
    }
    /// Sample `index`'s masks as [`masks`](Self::masks) gives them, their pixels written
    /// where and when the caller asks: a GPU loader's host worker decodes only the masks the
    /// sample's geometry keeps, into the pinned memory it uploads them from. By default the
    /// masks of [`masks`](Self::masks), copied.
    fn mask_source(&self, index: usize) -> Result<Option<Box<dyn MaskSource>>, SampleErrorKind> {
        Ok(self
            .masks(index)?
            .map(|m| Box::new(m) as Box<dyn MaskSource>))
    }
    /// Sample `index`'s targets (boxes, labels, keypoints, crowd regions; not its masks,
    /// which the loader moves with the pixels) moved through `geometry`, for a loader that
    /// moves them on its stages ([`LoaderBuilder::targets`](crate::LoaderBuilder::targets));
    /// `None` for a dataset without such targets (the default).
    fn moved_targets(
        &self,
        index: usize,
        geometry: &TargetGeometry,
    ) -> Option<Result<MovedCoco, CocoError>> {
        let _ = (index, geometry);
        None
    }
}

pub(crate) fn read_file(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    buf.clear();
    buf.reserve(usize::try_from(len).unwrap_or(0));
    f.read_to_end(buf)?;
    Ok(())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// torchvision's `ImageFolder`: `root/<class>/**/<image>`, classes sorted by name, labels are
/// class indices, files sorted by path within each class.
#[derive(Debug, Clone)]
pub struct ImageFolder {
    root: PathBuf,
    classes: Vec<String>,
    files: Files,
}

impl ImageFolder {
    /// Scans `root`, a directory or a URL prefix (`s3://bucket/train`, `gs://`, `az://`;
    /// `http(s)://` cannot be listed). Files whose extension is not in [`IMAGE_EXTENSIONS`]
    /// are ignored. Remote data goes through [`Storage::global`].
    pub fn new(root: impl AsRef<Path>) -> Result<ImageFolder, DatasetError> {
        ImageFolder::with_storage(root, &Storage::global())
    }

    /// [`new`](Self::new), reading remote data through `storage`.
    pub fn with_storage(
        root: impl AsRef<Path>,
        storage: &Storage,
    ) -> Result<ImageFolder, DatasetError> {
        ImageFolder::with_progress(root, storage, None)
    }

    /// [`with_storage`](Self::with_storage), counting the objects listed under a bucket
    /// prefix in [`Progress::listed`] as the pages arrive (for a progress bar; a local walk
    /// counts nothing).
    pub fn with_progress(
        root: impl AsRef<Path>,
        storage: &Storage,
        progress: Option<&Progress>,
    ) -> Result<ImageFolder, DatasetError> {
        let root = root.as_ref().to_path_buf();
        if let Location::Remote(url) = location(&root)? {
            let (classes, files) = list_folder(storage, &url, progress)?;
            if files.entries.is_empty() {
                return Err(DatasetError::Empty(root));
            }
            return Ok(ImageFolder {
                root,
                classes,
                files,
            });
        }
        let mut classes = Vec::new();
        for entry in std::fs::read_dir(&root).map_err(io(&root))? {
            let entry = entry.map_err(io(&root))?;
            if entry.file_type().map_err(io(&entry.path()))?.is_dir() {
                classes.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        classes.sort();
        let mut files = Files::new(storage.clone());
        for (label, class) in classes.iter().enumerate() {
            let mut found = Vec::new();
            walk(&root.join(class), &mut found)?;
            found.sort();
            files
                .labels
                .extend(std::iter::repeat_n(label as Label, found.len()));
            files.entries.extend(found.into_iter().map(Entry::Local));
        }
        if files.entries.is_empty() {
            return Err(DatasetError::Empty(root));
        }
        Ok(ImageFolder {
            root,
            classes,
            files,
        })
    }

    /// Class names, sorted; label `i` is `classes()[i]`.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The directory (or URL) scanned.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of sample `index` (its URL, for remote data).
    pub fn path(&self, index: usize) -> &Path {
        self.files.entries[index].path()
    }
}

/// Where `path` points: a URL given as a path is remote.
fn location(path: &Path) -> Result<Location, DatasetError> {
    let text = path.to_string_lossy();
    Location::parse(&text).map_err(|e| DatasetError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DatasetError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        // Follows links, as torchvision does.
        let meta = std::fs::metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| {
            let e = e.to_string_lossy();
            IMAGE_EXTENSIONS.iter().any(|x| e.eq_ignore_ascii_case(x))
        }) {
            out.push(path);
        }
    }
    Ok(())
}

impl Dataset for ImageFolder {
    fn len(&self) -> usize {
        self.files.entries.len()
    }
    fn label(&self, index: usize) -> Label {
        self.files.labels[index]
    }
    fn name(&self, index: usize) -> String {
        self.files.entries[index].path().display().to_string()
    }
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        self.files.read(index, buf)
    }
    fn read_batch(&self, indices: &[usize], bufs: &mut [Vec<u8>]) -> Vec<std::io::Result<()>> {
        self.files.read_batch(indices, bufs)
    }
}

/// A list file: one `path label` per line (the label is the last whitespace-separated field,
/// so paths may hold spaces); blank lines and lines starting with `#` are skipped. Relative
/// paths are taken from the list file's directory, or from `root` with
/// [`ListFile::with_root`]. The list and its entries may be URLs; relative entries of a remote
/// list resolve against the list's URL.
#[derive(Debug, Clone)]
pub struct ListFile {
    files: Files,
}

impl ListFile {
    /// Reads `list`, resolving relative paths against its directory.
    pub fn new(list: impl AsRef<Path>) -> Result<ListFile, DatasetError> {
        ListFile::with_storage(list, &Storage::global())
    }

    /// [`new`](Self::new), reading remote data through `storage`.
    pub fn with_storage(
        list: impl AsRef<Path>,
        storage: &Storage,
    ) -> Result<ListFile, DatasetError> {
        let list = list.as_ref();
        let root = match location(list)? {
            Location::Remote(url) => {
                let key = url.key();
                let parent = key.rsplit_once('/').map_or("", |(dir, _)| dir);
                return ListFile::read(list, Base::Url(url.with_key(parent)), storage);
            }
            Location::Local(path) => path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        };
        ListFile::read(list, Base::Dir(root), storage)
    }

    /// Reads `list`, resolving relative paths against `root`.
    pub fn with_root(
        list: impl AsRef<Path>,
        root: impl AsRef<Path>,
    ) -> Result<ListFile, DatasetError> {
        let base = match location(root.as_ref())? {
            Location::Remote(url) => Base::Url(url),
            Location::Local(dir) => Base::Dir(dir),
        };
        ListFile::read(list.as_ref(), base, &Storage::global())
    }

    fn read(list: &Path, base: Base, storage: &Storage) -> Result<ListFile, DatasetError> {
        let text = match location(list)? {
            Location::Local(path) => std::fs::read_to_string(path).map_err(io(list))?,
            Location::Remote(url) => {
                let (bytes, _) = storage
                    .get(&url, None, None)
                    .map_err(|e| io(list)(e.into()))?;
                String::from_utf8(bytes).map_err(|e| {
                    io(list)(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })?
            }
        };
        let mut files = Files::new(storage.clone());
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parse = |reason: String| DatasetError::Parse {
                path: list.to_path_buf(),
                line: n + 1,
                reason,
            };
            let Some((path, label)) = line.rsplit_once(char::is_whitespace) else {
                return Err(parse("expected `path label`".into()));
            };
            let label: Label = label
                .parse()
                .map_err(|e| parse(format!("label {label:?}: {e}")))?;
            let entry = Entry::parse(path.trim_end(), &base).map_err(|e| parse(e.to_string()))?;
            files.entries.push(entry);
            files.labels.push(label);
        }
        if files.entries.is_empty() {
            return Err(DatasetError::Empty(list.to_path_buf()));
        }
        Ok(ListFile { files })
    }
}

impl Dataset for ListFile {
    fn len(&self) -> usize {
        self.files.entries.len()
    }
    fn label(&self, index: usize) -> Label {
        self.files.labels[index]
    }
    fn name(&self, index: usize) -> String {
        self.files.entries[index].path().display().to_string()
    }
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        self.files.read(index, buf)
    }
    fn read_batch(&self, indices: &[usize], bufs: &mut [Vec<u8>]) -> Vec<std::io::Result<()>> {
        self.files.read_batch(indices, bufs)
    }
}

/// Samples held in memory: `(name, bytes, label)`.
#[derive(Debug, Clone, Default)]
pub struct InMemory {
    samples: Vec<(String, std::sync::Arc<[u8]>, Label)>,
}

impl InMemory {
    /// A dataset of `samples`.
    pub fn new(samples: impl IntoIterator<Item = (String, Vec<u8>, Label)>) -> InMemory {
        InMemory {
            samples: samples
                .into_iter()
                .map(|(n, b, l)| (n, b.into(), l))
                .collect(),
        }
    }
}

impl Dataset for InMemory {
    fn len(&self) -> usize {
        self.samples.len()
    }
    fn label(&self, index: usize) -> Label {
        self.samples[index].2
    }
    fn name(&self, index: usize) -> String {
        self.samples[index].0.clone()
    }
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        buf.clear();
        buf.extend_from_slice(&self.samples[index].1);
        Ok(())
    }
}
