//! A folder of JPEG images beside a folder of PNG label maps.

use std::path::{Path, PathBuf};

use gm_transforms::targets::{Mask, MaskStack};

use super::SegmentationError;
use super::png::label_map;
use crate::error::SampleErrorKind;
use crate::image::{Dataset, Label};

/// The extensions an image may have, tried in turn.
const IMAGE_EXTENSIONS: [&str; 4] = ["jpg", "jpeg", "JPG", "JPEG"];

/// Images and their label maps, paired by path: `masks/a/b<suffix>.png` belongs to
/// `images/a/b.jpg` (or `.jpeg`), as ADE20K (`images/` and `annotations/`) and Pascal VOC
/// (`JPEGImages/` and `SegmentationClass/`) lay them out. Every label map needs its image;
/// images without a label map are not samples. Samples are sorted by path.
#[derive(Debug, Clone)]
pub struct SegmentationFolder {
    pairs: Vec<(PathBuf, PathBuf)>,
}

impl SegmentationFolder {
    /// The pairs under `images` and `masks`; `mask_suffix` is stripped from a label map's
    /// file stem to find its image (`""` when the stems are equal).
    pub fn open(
        images: &Path,
        masks: &Path,
        mask_suffix: &str,
    ) -> Result<SegmentationFolder, SegmentationError> {
        let mut maps = Vec::new();
        walk(masks, &mut maps)?;
        maps.retain(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("png")));
        maps.sort();
        if maps.is_empty() {
            return Err(SegmentationError::Pairing {
                path: masks.to_path_buf(),
                reason: "no PNG label maps".into(),
            });
        }
        let pairs = maps
            .into_iter()
            .map(|m| Ok((image_of(images, masks, &m, mask_suffix)?, m)))
            .collect::<Result<Vec<_>, SegmentationError>>()?;
        Ok(SegmentationFolder { pairs })
    }

    /// Sample `index`'s image path.
    pub fn image_path(&self, index: usize) -> Option<&Path> {
        self.pairs.get(index).map(|(i, _)| i.as_path())
    }

    /// Sample `index`'s label map path.
    pub fn mask_path(&self, index: usize) -> Option<&Path> {
        self.pairs.get(index).map(|(_, m)| m.as_path())
    }

    /// Sample `index`'s label map, on its image's canvas.
    pub fn mask(&self, index: usize) -> Result<Mask, SegmentationError> {
        let path = self
            .mask_path(index)
            .ok_or_else(|| SegmentationError::Pairing {
                path: PathBuf::new(),
                reason: format!("sample {index} of {}", self.pairs.len()),
            })?;
        let bytes = std::fs::read(path).map_err(|source| SegmentationError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        label_map(&bytes, path)
    }
}

/// Every file under `dir`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SegmentationError> {
    let io = |source| SegmentationError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The image of label map `mask` (under `masks`), under `images`.
fn image_of(
    images: &Path,
    masks: &Path,
    mask: &Path,
    suffix: &str,
) -> Result<PathBuf, SegmentationError> {
    let missing = |reason: String| SegmentationError::Pairing {
        path: mask.to_path_buf(),
        reason,
    };
    let rel = mask
        .strip_prefix(masks)
        .map_err(|_| missing("outside the label-map folder".into()))?;
    let stem = rel
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| missing("a file name that is not UTF-8".into()))?;
    let stem = stem.strip_suffix(suffix).unwrap_or(stem);
    let base = images
        .join(rel.parent().unwrap_or(Path::new("")))
        .join(stem);
    IMAGE_EXTENSIONS
        .iter()
        .map(|e| base.with_extension(e))
        .find(|p| p.is_file())
        .ok_or_else(|| missing(format!("no image {}.jpg (or .jpeg)", base.display())))
}

impl Dataset for SegmentationFolder {
    fn len(&self) -> usize {
        self.pairs.len()
    }

    /// No class label: the label map is the target.
    fn label(&self, _: usize) -> Label {
        -1
    }

    fn name(&self, index: usize) -> String {
        self.image_path(index)
            .map_or_else(|| format!("sample {index}"), |p| p.display().to_string())
    }

    /// The label map, one plane.
    fn masks(&self, index: usize) -> Result<Option<MaskStack>, SampleErrorKind> {
        match self.mask(index) {
            Ok(m) => Ok(Some(MaskStack::single(m))),
            Err(e) => Err(SampleErrorKind::Targets(e.to_string())),
        }
    }

    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let path = self.image_path(index).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("sample {index}"))
        })?;
        crate::image::read_file(path, buf)
    }
}
