//! Semantic segmentation datasets: JPEG images and their label maps (PNG, one class index per
//! pixel), paired by path, as ADE20K and Pascal VOC lay them out. The label map moves with its
//! image through the plan's geometry ([`gm_transforms::targets::TargetGeometry::mask`]:
//! nearest, pads filling the pad's mask fill, e.g. RandomCrop's ignore index).
//!
//! - [`label_map`]: a PNG's class indices (8-bit or packed grey or palette), refusing colour
//!   and 16-bit maps with the reason.
//! - [`SegmentationFolder`]: the pairs by index (the loaders' [`Dataset`](crate::Dataset)) and
//!   each image's label map.

mod folder;
mod png;

pub use folder::SegmentationFolder;
pub use png::label_map;

/// Why a segmentation folder or one of its label maps cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SegmentationError {
    /// A file or folder cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A label map is not a PNG of class indices.
    #[error("{path}: {reason}")]
    LabelMap {
        /// The label map.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A label map without its image, or a folder without label maps.
    #[error("{path}: {reason}")]
    Pairing {
        /// The label map or folder.
        path: std::path::PathBuf,
        /// What is missing.
        reason: String,
    },
}
