//! The COCO annotation JSON, checked object by object.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::polygon::polygon_mask;
use super::rle::Rle;
use super::{CocoError, CocoIssue};

/// How far (pixels) a box may reach past its image's edge: COCO's own boxes overshoot by
/// rounding; anything further is a bad annotation.
const EDGE_SLACK: f64 = 1.0;

#[derive(Deserialize)]
struct RawFile {
    images: Vec<RawImage>,
    #[serde(default)]
    annotations: Vec<RawObject>,
    #[serde(default)]
    categories: Vec<RawCategory>,
}

#[derive(Deserialize)]
struct RawImage {
    id: i64,
    file_name: String,
    width: u32,
    height: u32,
}

/// One sample's record in a WebDataset shard: its image and that image's annotations.
#[derive(Deserialize)]
struct RawRecord {
    image: RawRecordImage,
    #[serde(default)]
    annotations: Vec<RawObject>,
}

/// A record's image: the file name and id are optional (the sample's key and position).
#[derive(Deserialize)]
struct RawRecordImage {
    #[serde(default)]
    id: Option<i64>,
    #[serde(default)]
    file_name: Option<String>,
    width: u32,
    height: u32,
}

/// The categories of a COCO file (anything else in it is not read).
#[derive(Deserialize)]
struct RawCategories {
    categories: Vec<RawCategory>,
}

#[derive(Deserialize)]
struct RawObject {
    #[serde(default)]
    id: i64,
    image_id: i64,
    category_id: i64,
    #[serde(default)]
    bbox: Option<Vec<f64>>,
    #[serde(default)]
    iscrowd: u8,
    #[serde(default)]
    segmentation: Option<Value>,
    #[serde(default)]
    keypoints: Option<Vec<f64>>,
}

#[derive(Deserialize)]
struct RawCategory {
    id: i64,
    name: String,
    #[serde(default)]
    keypoints: Vec<String>,
}

/// One image of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct CocoImage {
    /// COCO's id.
    pub id: i64,
    /// Its file, relative to the image folder.
    pub file_name: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// An object's outline.
#[derive(Debug, Clone, PartialEq)]
pub enum Segmentation {
    /// Polygons (x0, y0, x1, y1, ...), their union is the object.
    Polygons(Vec<Vec<f64>>),
    /// Runs (crowd objects, and files written from masks).
    Rle(Rle),
}

impl Segmentation {
    /// The mask on an `height` x `width` image, as pycocotools' `annToRLE`.
    pub fn mask(&self, height: u32, width: u32) -> Result<Rle, CocoIssue> {
        match self {
            Segmentation::Rle(r) => Ok(r.clone()),
            Segmentation::Polygons(ps) => {
                let rles = ps
                    .iter()
                    .map(|p| polygon_mask(p, height, width))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Rle::union(&rles)?.unwrap_or(Rle {
                    height,
                    width,
                    counts: vec![height * width],
                }))
            }
        }
    }
}

/// One annotated object.
#[derive(Debug, Clone, PartialEq)]
pub struct CocoObject {
    /// COCO's id.
    pub id: i64,
    /// Its category's id.
    pub category_id: i64,
    /// Its box, x, y, width, height (COCO's XYWH).
    pub bbox: [f64; 4],
    /// A crowd region (`iscrowd`), not one object.
    pub crowd: bool,
    /// Its outline, where the file has one.
    pub segmentation: Option<Segmentation>,
    /// x, y, visibility per keypoint, where the file has them.
    pub keypoints: Option<Vec<[f32; 3]>>,
}

/// A COCO annotation file: images, categories and each image's objects, every object
/// checked; an image with a bad object carries the first problem found.
#[derive(Debug, Clone)]
pub struct CocoAnnotations {
    /// The file read (for records from shards: the categories file).
    pub path: PathBuf,
    /// The images, in the file's order.
    pub images: Vec<CocoImage>,
    /// Category ids and names, in the file's order.
    pub categories: Vec<(i64, String)>,
    objects: Vec<Vec<CocoObject>>,
    issues: Vec<Option<Problem>>,
    /// Per image, where its record came from (shards: `shard#key`); empty for a file.
    sources: Vec<String>,
}

/// Why an image's targets cannot be given.
#[derive(Debug, Clone)]
enum Problem {
    /// The first bad object: its id and what is wrong.
    Object(i64, CocoIssue),
    /// The image's record itself (shards: missing, not JSON, not COCO's fields).
    Record(String),
}

/// Category ids and names, and each category's keypoint count.
type Categories = (Vec<(i64, String)>, HashMap<i64, usize>);

fn categories_of(raw: Vec<RawCategory>) -> Categories {
    let keypoints = raw.iter().map(|c| (c.id, c.keypoints.len())).collect();
    (raw.into_iter().map(|c| (c.id, c.name)).collect(), keypoints)
}

impl CocoAnnotations {
    /// Reads and checks `path`.
    pub fn open(path: &Path) -> Result<CocoAnnotations, CocoError> {
        let bytes = std::fs::read(path).map_err(|source| CocoError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        CocoAnnotations::parse(path, &bytes)
    }

    /// Checks COCO JSON `bytes`, named `path` in errors.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<CocoAnnotations, CocoError> {
        let format = |reason: String| CocoError::Format {
            path: path.to_path_buf(),
            reason,
        };
        let raw: RawFile = serde_json::from_slice(bytes).map_err(|e| format(e.to_string()))?;
        let mut index = HashMap::with_capacity(raw.images.len());
        for (i, im) in raw.images.iter().enumerate() {
            if index.insert(im.id, i).is_some() {
                return Err(format(format!("image id {} appears twice", im.id)));
            }
        }
        let (categories, keypoints) = categories_of(raw.categories);
        let images: Vec<CocoImage> = raw
            .images
            .into_iter()
            .map(|r| CocoImage {
                id: r.id,
                file_name: r.file_name,
                width: r.width,
                height: r.height,
            })
            .collect();
        let mut objects: Vec<Vec<CocoObject>> = vec![Vec::new(); images.len()];
        let mut issues: Vec<Option<Problem>> = vec![None; images.len()];
        for o in raw.annotations {
            let Some(&i) = index.get(&o.image_id) else {
                return Err(format(format!(
                    "annotation {} is of image {}, which the file does not list",
                    o.id, o.image_id
                )));
            };
            match object(o, &images[i], &keypoints) {
                Ok(obj) => objects[i].push(obj),
                Err((id, issue)) => {
                    issues[i].get_or_insert(Problem::Object(id, issue));
                }
            }
        }
        Ok(CocoAnnotations {
            path: path.to_path_buf(),
            images,
            categories,
            objects,
            issues,
            sources: Vec::new(),
        })
    }

    /// One image per record, as WebDataset shards carry them: each record is a sample's
    /// `.json` member (`{"image": {"width", "height", "id"?, "file_name"?}, "annotations":
    /// [...]}`, the annotations as a COCO file writes them), or why the sample has none;
    /// `sources` name the samples (`shard#key`, also the file name where the record gives
    /// none). The categories come from `categories`, a COCO file's JSON (`path` in errors).
    /// A record that cannot be read is that image's problem, not the whole set's.
    pub(crate) fn from_records(
        path: &Path,
        categories: &[u8],
        records: Vec<Result<Vec<u8>, String>>,
        sources: Vec<String>,
    ) -> Result<CocoAnnotations, CocoError> {
        let raw: RawCategories =
            serde_json::from_slice(categories).map_err(|e| CocoError::Format {
                path: path.to_path_buf(),
                reason: format!("no categories: {e}"),
            })?;
        let (categories, keypoints) = categories_of(raw.categories);
        let n = records.len();
        let mut a = CocoAnnotations {
            path: path.to_path_buf(),
            images: Vec::with_capacity(n),
            categories,
            objects: vec![Vec::new(); n],
            issues: vec![None; n],
            sources,
        };
        for (i, record) in records.into_iter().enumerate() {
            let source = a.sources.get(i).cloned().unwrap_or_default();
            let raw = record.and_then(|b| {
                serde_json::from_slice::<RawRecord>(&b).map_err(|e| format!("its .json: {e}"))
            });
            let raw = match raw {
                Ok(raw) => raw,
                Err(why) => {
                    a.images.push(CocoImage {
                        id: i as i64,
                        file_name: source,
                        width: 0,
                        height: 0,
                    });
                    a.issues[i] = Some(Problem::Record(why));
                    continue;
                }
            };
            let im = CocoImage {
                id: raw.image.id.unwrap_or(i as i64),
                file_name: raw.image.file_name.unwrap_or(source),
                width: raw.image.width,
                height: raw.image.height,
            };
            for o in raw.annotations {
                match object(o, &im, &keypoints) {
                    Ok(obj) => a.objects[i].push(obj),
                    Err((id, issue)) => {
                        a.issues[i].get_or_insert(Problem::Object(id, issue));
                    }
                }
            }
            a.images.push(im);
        }
        Ok(a)
    }

    /// Where image `i`'s annotations come from, as errors name it: the file, or for records
    /// from shards the sample (`shard#key`).
    pub fn source(&self, i: usize) -> PathBuf {
        match self.sources.get(i) {
            Some(source) => PathBuf::from(source),
            None => self.path.clone(),
        }
    }

    /// The objects of image `i` (in the file's order), or the first bad one's problem.
    pub fn objects(&self, i: usize) -> Result<&[CocoObject], CocoError> {
        let Some(Some(problem)) = self.issues.get(i) else {
            return Ok(self.objects.get(i).map_or(&[], Vec::as_slice));
        };
        let im = &self.images[i];
        let file = self.source(i);
        Err(match problem {
            Problem::Object(annotation_id, issue) => CocoError::Annotation {
                file,
                image_id: im.id,
                image: im.file_name.clone(),
                annotation_id: *annotation_id,
                issue: issue.clone(),
            },
            Problem::Record(reason) => CocoError::Record {
                sample: file.display().to_string(),
                reason: reason.clone(),
            },
        })
    }

    /// Whether image `i` has no object (a bad object counts as one).
    pub fn is_empty_image(&self, i: usize) -> bool {
        self.objects.get(i).is_none_or(Vec::is_empty)
            && self.issues.get(i).is_none_or(Option::is_none)
    }
}

/// One raw object checked against its image and the categories' keypoint counts.
fn object(
    o: RawObject,
    im: &CocoImage,
    keypoints: &HashMap<i64, usize>,
) -> Result<CocoObject, (i64, CocoIssue)> {
    let id = o.id;
    let fail = |issue| (id, issue);
    let Some(&kp_len) = keypoints.get(&o.category_id) else {
        return Err(fail(CocoIssue::Category(o.category_id)));
    };
    let bbox = check_box(o.bbox.as_deref(), im).map_err(fail)?;
    let segmentation = match &o.segmentation {
        None => None,
        Some(v) => segmentation(v, im).map_err(fail)?,
    };
    let keypoints = match o.keypoints {
        None => None,
        Some(k) => Some(check_keypoints(&k, kp_len).map_err(fail)?),
    };
    Ok(CocoObject {
        id,
        category_id: o.category_id,
        bbox,
        crowd: o.iscrowd != 0,
        segmentation,
        keypoints,
    })
}

fn check_box(b: Option<&[f64]>, im: &CocoImage) -> Result<[f64; 4], CocoIssue> {
    let b: [f64; 4] = b
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| CocoIssue::Box([f64::NAN; 4], "not four numbers".into()))?;
    let bad = |why: &str| Err(CocoIssue::Box(b, why.into()));
    if !b.iter().all(|v| v.is_finite()) || b[2] < 0.0 || b[3] < 0.0 {
        return bad("not finite, or of negative size");
    }
    let (w, h) = (f64::from(im.width), f64::from(im.height));
    if b[0] < -EDGE_SLACK
        || b[1] < -EDGE_SLACK
        || b[0] + b[2] > w + EDGE_SLACK
        || b[1] + b[3] > h + EDGE_SLACK
    {
        return bad(&format!("outside its {}x{} image", im.width, im.height));
    }
    Ok(b)
}

/// Polygons (a list of lists) or runs (`{"counts": [..] | "..", "size": [h, w]}`); an
/// empty list is no outline.
fn segmentation(v: &Value, im: &CocoImage) -> Result<Option<Segmentation>, CocoIssue> {
    let bad = |why: &str| CocoIssue::Mask(why.into());
    match v {
        Value::Array(ps) if ps.is_empty() => Ok(None),
        Value::Array(ps) => {
            let polys = ps
                .iter()
                .map(|p| {
                    p.as_array()
                        .and_then(|p| p.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>())
                        .ok_or_else(|| bad("a polygon that is not a list of numbers"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(Segmentation::Polygons(polys)))
        }
        Value::Object(m) => {
            let size = m
                .get("size")
                .and_then(Value::as_array)
                .and_then(|s| Some((s.first()?.as_u64()?, s.get(1)?.as_u64()?)))
                .ok_or_else(|| bad("runs without a [height, width] size"))?;
            if size != (u64::from(im.height), u64::from(im.width)) {
                return Err(bad(&format!(
                    "runs of {}x{} on a {}x{} image",
                    size.1, size.0, im.width, im.height
                )));
            }
            let rle = match m.get("counts") {
                Some(Value::String(s)) => Rle::from_text(im.height, im.width, s)?,
                Some(Value::Array(c)) => {
                    let counts = c
                        .iter()
                        .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
                        .collect::<Option<Vec<u32>>>()
                        .ok_or_else(|| bad("run lengths that are not counts"))?;
                    Rle::new(im.height, im.width, counts)?
                }
                _ => return Err(bad("runs without counts")),
            };
            Ok(Some(Segmentation::Rle(rle)))
        }
        _ => Err(bad("neither polygons nor runs")),
    }
}

fn check_keypoints(k: &[f64], expected: usize) -> Result<Vec<[f32; 3]>, CocoIssue> {
    if k.len() != 3 * expected {
        return Err(CocoIssue::KeyPoints(format!(
            "{} numbers for a category of {expected} keypoints",
            k.len()
        )));
    }
    if !k.iter().all(|v| v.is_finite()) {
        return Err(CocoIssue::KeyPoints("a value that is not finite".into()));
    }
    Ok(k.chunks_exact(3)
        .map(|p| [p[0] as f32, p[1] as f32, p[2] as f32])
        .collect())
}
