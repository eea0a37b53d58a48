//! COCO datasets for detection, instance segmentation and keypoints: an instances (or
//! person keypoints) JSON and its image folder, read as torchvision's `CocoDetection`
//! wrapped for transforms v2 reads it, with each bad annotation reported for its image.
//!
//! - [`CocoAnnotations`]: the JSON, checked object by object (boxes inside their image and not
//!   of negative size, masks decodable, keypoints of the category's length).
//! - [`Rle`] and [`polygon_mask`]: masks exactly as the COCO API (pycocotools) makes them.
//! - [`CocoDataset`]: images by index (the loaders' [`Dataset`](crate::Dataset)) with their
//!   targets ([`CocoTargets`]): boxes, category labels, masks and keypoints; crowd objects
//!   kept apart, as COCO's evaluation and torchvision's detection references treat them.
//!   From a folder, or from WebDataset shards whose samples carry their records
//!   ([`CocoDataset::from_shards`]).

mod annotations;
mod dataset;
mod mask_cache;
mod moved;
mod polygon;
mod rle;

pub use annotations::{CocoAnnotations, CocoImage, CocoObject, Segmentation};
pub use dataset::{CocoDataset, CocoShardsError, CocoTargets, EmptyImages};
pub use mask_cache::DEFAULT_MASK_CACHE_BYTES;
pub use moved::MovedCoco;
pub use polygon::polygon_mask;
pub use rle::{MAX_MASK_PIXELS, Rle};

/// What is wrong with one annotation (see [`CocoError`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CocoIssue {
    /// A box with a negative or non-finite size or position, or outside its image.
    #[error("box {0:?}: {1}")]
    Box([f64; 4], String),
    /// A mask that cannot be decoded.
    #[error("mask: {0}")]
    Mask(String),
    /// Keypoints of the wrong length or values.
    #[error("keypoints: {0}")]
    KeyPoints(String),
    /// A category the file does not list.
    #[error("category {0} is not in the file's categories")]
    Category(i64),
}

/// Why a COCO file or one of its images cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CocoError {
    /// The annotation file cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not COCO's JSON.
    #[error("{path}: not a COCO annotation file: {reason}")]
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A sample of WebDataset shards has no usable annotation record.
    #[error("{sample}: no COCO record: {reason}")]
    Record {
        /// The sample, `shard#key`.
        sample: String,
        /// What is wrong.
        reason: String,
    },
    /// One annotation of one image is bad.
    #[error("{file}: image {image_id} ({image}), annotation {annotation_id}: {issue}")]
    Annotation {
        /// The annotation file (shards: the sample, `shard#key`).
        file: std::path::PathBuf,
        /// The image's id.
        image_id: i64,
        /// The image's file name.
        image: String,
        /// The annotation's id.
        annotation_id: i64,
        /// What is wrong.
        issue: CocoIssue,
    },
    /// An image's targets do not fit the geometry its pixels went through (another canvas
    /// than the image's).
    #[error("{image}: {source}")]
    Moved {
        /// The image (its path, or `shard#key`).
        image: String,
        /// Why.
        source: gm_transforms::targets::TargetError,
    },
}
