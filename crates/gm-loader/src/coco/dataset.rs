//! A COCO file and its image folder as a dataset of images with targets.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gm_transforms::targets::{
    BoundingBoxes, BoxFormat, KeyPoints, MaskRuns, MaskStack, TargetGeometry,
};

use super::annotations::{CocoAnnotations, CocoImage, CocoObject};
use super::mask_cache::{DEFAULT_MASK_CACHE_BYTES, MaskCache};
use super::rle::Rle;
use super::{CocoError, CocoIssue};
use crate::error::SampleErrorKind;
use crate::image::{Dataset, Label, MaskSource};
use crate::shards::{ShardError, WebDataset, WebDatasetBuilder};

/// What to do with images that have no object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyImages {
    /// Keep them (torchvision's `CocoDetection`; negatives for the detector).
    Keep,
    /// Leave them out (torchvision's detection references do, for training).
    Drop,
}

/// The targets of one image, in torchvision's layout: boxes XYXY on the image's canvas,
/// `labels` the category ids, one mask per object and `keypoints` per object where the file
/// has them. Crowd regions are apart (`crowd_*`), as COCO's evaluation keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct CocoTargets {
    /// COCO's image id.
    pub image_id: i64,
    /// One box per object, XYXY.
    pub boxes: BoundingBoxes,
    /// Category id per object.
    pub labels: Vec<i64>,
    /// One mask per object (runs; [`Rle::decode`] gives the pixels), where every object has
    /// an outline; `None` otherwise.
    pub masks: Option<Vec<Rle>>,
    /// Every object's keypoints in turn (`keypoints_per_object` each; visible where COCO's
    /// `v > 0`), where the objects have them.
    pub keypoints: Option<KeyPoints>,
    /// Keypoints per object.
    pub keypoints_per_object: usize,
    /// Crowd regions' boxes, XYXY.
    pub crowd_boxes: BoundingBoxes,
    /// Crowd regions' category ids.
    pub crowd_labels: Vec<i64>,
    /// Crowd regions' masks, where they have outlines.
    pub crowd_masks: Option<Vec<Rle>>,
}

/// Images of a COCO annotation file, read from a folder, or the samples of WebDataset shards
/// whose `.json` members carry each image's annotations ([`CocoDataset::from_shards`]), with
/// their targets ([`CocoDataset::targets`]). As a [`Dataset`] its label is the image's first
/// object's category (-1 without one) and its name the image's path (shards: `shard#key`).
#[derive(Debug, Clone)]
pub struct CocoDataset {
    annotations: Arc<CocoAnnotations>,
    images: Images,
    /// Image index in the annotations per sample.
    order: Vec<usize>,
    /// The images' masks after their first rasterizing (shared by clones).
    masks: Arc<MaskCache>,
}

/// Where a COCO dataset's images are.
#[derive(Debug, Clone)]
enum Images {
    /// Files under a folder, by the annotations' file names.
    Folder(PathBuf),
    /// The samples of shards, one image per sample, in the shards' order.
    Shards(WebDataset),
}

impl CocoDataset {
    /// The images of `annotations` (a COCO JSON) under `root`, those without objects kept or
    /// left out.
    pub fn open(
        annotations: &Path,
        root: &Path,
        empty: EmptyImages,
    ) -> Result<CocoDataset, CocoError> {
        Ok(CocoDataset::new(
            Arc::new(CocoAnnotations::open(annotations)?),
            root,
            empty,
        ))
    }

    /// The images of checked annotations under `root`.
    pub fn new(annotations: Arc<CocoAnnotations>, root: &Path, empty: EmptyImages) -> CocoDataset {
        let order = kept(&annotations, empty);
        let masks = Arc::new(MaskCache::new(
            annotations.images.len(),
            DEFAULT_MASK_CACHE_BYTES,
        ));
        CocoDataset {
            annotations,
            images: Images::Folder(root.to_path_buf()),
            order,
            masks,
        }
    }

    /// The samples of WebDataset `shards` (opened without labels), each an image with a
    /// `.json` member holding its COCO record: `{"image": {"width": W, "height": H, "id": ..,
    /// "file_name": ..}, "annotations": [...]}` (id and file name optional: the sample's
    /// position and `shard#key`), the annotations as a COCO instances or keypoints file writes
    /// them. The categories (and keypoint names) come from `categories`, a COCO file's JSON
    /// (the instances file itself will do). The records are read once, here; a sample
    /// without a record, or with a record that is not one, is a bad sample like a bad
    /// annotation, named `shard#key`.
    pub fn from_shards(
        shards: WebDatasetBuilder,
        categories: &Path,
        empty: EmptyImages,
    ) -> Result<CocoDataset, CocoShardsError> {
        let shards = shards.unlabelled().open()?;
        let bytes = std::fs::read(categories).map_err(|source| CocoError::Io {
            path: categories.to_path_buf(),
            source,
        })?;
        let names = (0..shards.len()).map(|i| shards.name(i)).collect();
        let annotations =
            CocoAnnotations::from_records(categories, &bytes, shards.json_members(), names)?;
        let annotations = Arc::new(annotations);
        let order = kept(&annotations, empty);
        let masks = Arc::new(MaskCache::new(
            annotations.images.len(),
            DEFAULT_MASK_CACHE_BYTES,
        ));
        Ok(CocoDataset {
            annotations,
            images: Images::Shards(shards),
            order,
            masks,
        })
    }

    /// Keeps at most `bytes` of the objects' masks after their first rasterizing (default
    /// [`DEFAULT_MASK_CACHE_BYTES`]; 0: rasterize every time). A polygon costs a host worker
    /// tens of µs an object each epoch; its runs a few hundred bytes. Images kept are those
    /// met first, never evicted; the targets are the same either way.
    pub fn mask_cache(mut self, bytes: usize) -> CocoDataset {
        self.masks = Arc::new(MaskCache::new(self.annotations.images.len(), bytes));
        self
    }

    /// Bytes of masks kept by [`CocoDataset::mask_cache`] so far.
    pub fn mask_cache_bytes(&self) -> usize {
        self.masks.bytes()
    }

    /// The annotation file's contents.
    pub fn annotations(&self) -> &CocoAnnotations {
        &self.annotations
    }

    /// Sample `index`'s image record.
    pub fn image(&self, index: usize) -> Option<&CocoImage> {
        self.order.get(index).map(|&i| &self.annotations.images[i])
    }

    /// Each sample's aspect-ratio group (torchvision's `create_aspect_ratio_groups` with
    /// factor `k`, from the records' sizes), for
    /// [`LoaderBuilder::batch_groups`](crate::LoaderBuilder::batch_groups).
    pub fn aspect_ratio_groups(&self, k: usize) -> Vec<usize> {
        let sizes: Vec<(u32, u32)> = self
            .order
            .iter()
            .map(|&i| {
                let im = &self.annotations.images[i];
                (im.width, im.height)
            })
            .collect();
        crate::aspect_ratio_groups(&sizes, k)
    }

    /// Sample `index`'s file (the image's path under the folder; shards: `shard#key`).
    pub fn path(&self, index: usize) -> Option<PathBuf> {
        let i = *self.order.get(index)?;
        Some(match &self.images {
            Images::Folder(root) => root.join(&self.annotations.images[i].file_name),
            Images::Shards(_) => self.annotations.source(i),
        })
    }

    /// Sample `index`'s targets, or why one of its annotations is bad.
    pub fn targets(&self, index: usize) -> Result<CocoTargets, CocoError> {
        self.targets_decoding(index, true)
    }

    /// [`CocoDataset::targets`] without rasterizing the objects' outlines: `masks` and
    /// `crowd_masks` are `Some(vec![])` where the objects have outlines (for a caller that
    /// moves the masks another way, [`Dataset::masks`] through the loader).
    pub fn targets_without_masks(&self, index: usize) -> Result<CocoTargets, CocoError> {
        self.targets_decoding(index, false)
    }

    fn targets_decoding(&self, index: usize, decode: bool) -> Result<CocoTargets, CocoError> {
        let i = *self.order.get(index).ok_or_else(|| CocoError::Format {
            path: self.annotations.path.clone(),
            reason: format!("sample {index} of {}", self.order.len()),
        })?;
        let im = &self.annotations.images[i];
        let objects = self.annotations.objects(i)?;
        let fail = |o: &CocoObject, issue: CocoIssue| CocoError::Annotation {
            file: self.annotations.source(i),
            image_id: im.id,
            image: im.file_name.clone(),
            annotation_id: o.id,
            issue,
        };
        let (crowd, single): (Vec<&CocoObject>, Vec<&CocoObject>) =
            objects.iter().partition(|o| o.crowd);
        let cached = decode.then(|| self.masks.get(i)).flatten();
        let rasterize = decode && cached.is_none();
        let (boxes, labels, masks) = group(&single, im, rasterize).map_err(|(o, e)| fail(o, e))?;
        let (crowd_boxes, crowd_labels, crowd_masks) =
            group(&crowd, im, rasterize).map_err(|(o, e)| fail(o, e))?;
        let (masks, crowd_masks) = match cached {
            Some(kept) => kept.as_ref().clone(),
            None => {
                let made = (masks, crowd_masks);
                if rasterize {
                    self.masks.offer(i, &made);
                }
                made
            }
        };
        let per_object = single
            .iter()
            .find_map(|o| o.keypoints.as_ref().map(Vec::len))
            .unwrap_or(0);
        let keypoints = keypoints(&single, im, per_object);
        Ok(CocoTargets {
            image_id: im.id,
            boxes,
            labels,
            masks,
            keypoints,
            keypoints_per_object: per_object,
            crowd_boxes,
            crowd_labels,
            crowd_masks,
        })
    }
}

/// The images of `annotations` a dataset keeps.
fn kept(annotations: &CocoAnnotations, empty: EmptyImages) -> Vec<usize> {
    (0..annotations.images.len())
        .filter(|&i| empty == EmptyImages::Keep || !annotations.is_empty_image(i))
        .collect()
}

/// Why COCO records in shards cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum CocoShardsError {
    /// The shards cannot be opened or indexed.
    #[error(transparent)]
    Shards(#[from] ShardError),
    /// The categories file cannot be read.
    #[error(transparent)]
    Coco(#[from] CocoError),
}

/// Boxes (XYXY), labels and masks (where every object has an outline) of some objects.
type Group = (BoundingBoxes, Vec<i64>, Option<Vec<Rle>>);

/// [`Group`] of `objects`, or the object whose mask failed and why.
fn group<'a>(
    objects: &[&'a CocoObject],
    im: &CocoImage,
    decode: bool,
) -> Result<Group, (&'a CocoObject, CocoIssue)> {
    let boxes = xyxy_boxes(objects, im);
    let labels = objects.iter().map(|o| o.category_id).collect();
    let masks = if !objects.is_empty() && objects.iter().all(|o| o.segmentation.is_some()) {
        let mut out = Vec::with_capacity(objects.len());
        for o in objects.iter().filter(|_| decode) {
            if let Some(s) = &o.segmentation {
                out.push(s.mask(im.height, im.width).map_err(|e| (*o, e))?);
            }
        }
        Some(out)
    } else {
        None
    };
    Ok((boxes, labels, masks))
}

/// The XYXY boxes of `objects` on `im`'s canvas (COCO's are XYWH).
fn xyxy_boxes(objects: &[&CocoObject], im: &CocoImage) -> BoundingBoxes {
    let boxes = objects
        .iter()
        .map(|o| {
            let b = o.bbox;
            [
                b[0] as f32,
                b[1] as f32,
                (b[0] + b[2]) as f32,
                (b[1] + b[3]) as f32,
            ]
        })
        .collect();
    BoundingBoxes {
        format: BoxFormat::Xyxy,
        canvas: (im.width, im.height),
        boxes,
    }
}

/// Every object's keypoints in turn, where every object has `per_object` of them.
fn keypoints(objects: &[&CocoObject], im: &CocoImage, per_object: usize) -> Option<KeyPoints> {
    if per_object == 0 {
        return None;
    }
    let mut points = Vec::with_capacity(objects.len() * per_object);
    let mut visible = Vec::with_capacity(points.capacity());
    for o in objects {
        let k = o.keypoints.as_ref().filter(|k| k.len() == per_object)?;
        for p in k {
            points.push([p[0], p[1]]);
            visible.push(p[2] > 0.0);
        }
    }
    Some(KeyPoints {
        canvas: (im.width, im.height),
        points,
        visible,
    })
}

impl Dataset for CocoDataset {
    fn len(&self) -> usize {
        self.order.len()
    }

    fn label(&self, index: usize) -> Label {
        self.order
            .get(index)
            .and_then(|&i| self.annotations.objects(i).ok())
            .and_then(|o| o.first())
            .map_or(-1, |o| o.category_id)
    }

    fn name(&self, index: usize) -> String {
        self.path(index)
            .map_or_else(|| format!("sample {index}"), |p| p.display().to_string())
    }

    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let missing =
            || std::io::Error::new(std::io::ErrorKind::NotFound, format!("sample {index}"));
        match &self.images {
            Images::Folder(_) => {
                crate::image::read_file(&self.path(index).ok_or_else(missing)?, buf)
            }
            Images::Shards(shards) => shards.read(*self.order.get(index).ok_or_else(missing)?, buf),
        }
    }

    fn read_batch(&self, indices: &[usize], bufs: &mut [Vec<u8>]) -> Vec<std::io::Result<()>> {
        // Shards read a batch at once (remote ones in concurrent requests); an index past the
        // end (never from a sampler) falls back to reads one by one, each failing alone.
        let samples: Option<Vec<usize>> = indices
            .iter()
            .map(|&i| self.order.get(i).copied())
            .collect();
        match (&self.images, samples) {
            (Images::Shards(shards), Some(samples)) => shards.read_batch(&samples, bufs),
            _ => indices
                .iter()
                .zip(bufs.iter_mut())
                .map(|(&i, buf)| self.read(i, buf))
                .collect(),
        }
    }

    /// One mask per object (crowd regions apart, in the order of `boxes`), decoded from its
    /// runs; `None` where the objects have no outlines.
    fn masks(&self, index: usize) -> Result<Option<MaskStack>, SampleErrorKind> {
        self.mask_source(index)?
            .map(crate::image::into_stack)
            .transpose()
    }

    /// Outlines and runs become runs.
    fn masks_as_runs(&self) -> bool {
        true
    }

    fn moved_targets(
        &self,
        index: usize,
        geometry: &TargetGeometry,
    ) -> Option<Result<super::MovedCoco, CocoError>> {
        Some(CocoDataset::moved_targets(self, index, geometry, false))
    }

    /// The objects' runs; each mask decoded only where it is written.
    fn mask_source(&self, index: usize) -> Result<Option<Box<dyn MaskSource>>, SampleErrorKind> {
        let t = self
            .targets(index)
            .map_err(|e| SampleErrorKind::Targets(e.to_string()))?;
        let Some(runs) = t.masks else {
            return Ok(None);
        };
        let (width, height) = t.boxes.canvas;
        Ok(Some(Box::new(ObjectRuns {
            width,
            height,
            runs,
        })))
    }

    /// The boxes of the sample's objects (crowd regions apart), without decoding masks.
    fn boxes(&self, index: usize) -> Result<Option<BoundingBoxes>, SampleErrorKind> {
        let bad = |e: CocoError| SampleErrorKind::Targets(e.to_string());
        let i = *self.order.get(index).ok_or_else(|| {
            SampleErrorKind::Targets(format!("sample {index} of {}", self.order.len()))
        })?;
        let objects = self.annotations.objects(i).map_err(bad)?;
        let single: Vec<&CocoObject> = objects.iter().filter(|o| !o.crowd).collect();
        Ok(Some(xyxy_boxes(&single, &self.annotations.images[i])))
    }
}

/// A COCO image's object masks as runs, decoded where they are written.
struct ObjectRuns {
    width: u32,
    height: u32,
    runs: Vec<Rle>,
}

impl MaskSource for ObjectRuns {
    fn shape(&self) -> (u32, u32, u32) {
        (self.width, self.height, self.runs.len() as u32)
    }

    fn write(
        self: Box<Self>,
        keep: Option<&[bool]>,
        out: &mut [u8],
    ) -> Result<(), SampleErrorKind> {
        let plane = self.width as usize * self.height as usize;
        for (at, r) in out.chunks_exact_mut(plane.max(1)).zip(self.kept(keep)) {
            r.decode_into(at);
        }
        Ok(())
    }

    fn runs(&self, keep: Option<&[bool]>) -> Option<MaskRuns> {
        let mut runs = MaskRuns::new(self.width, self.height);
        for r in self.kept(keep) {
            runs.push(r.ones());
        }
        Some(runs)
    }
}

impl ObjectRuns {
    /// The objects' runs that `keep` marks, in order.
    fn kept<'a>(&'a self, keep: Option<&'a [bool]>) -> impl Iterator<Item = &'a Rle> + 'a {
        self.runs
            .iter()
            .enumerate()
            .filter(move |(k, _)| crate::image::is_kept(keep, *k))
            .map(|(_, r)| r)
    }
}
