//! One image's COCO targets moved onto its output canvas through the geometry its pixels went
//! through: what a loader batch carries beside its images ([`Batch::targets`](crate::Batch)).

use gm_transforms::apply::{MovedTargets, Targets, move_targets};
use gm_transforms::targets::{
    BoundingBoxes, KeyPoints, Mask, TargetError, TargetGeometry, kept_objects,
};

use super::{CocoDataset, CocoError, CocoTargets};
use crate::image::Dataset;

/// One image's targets on its output canvas, in torchvision's layout: the objects the
/// geometry kept (SanitizeBoundingBoxes, FixedSizeCrop) with their labels, masks and
/// keypoints; crowd regions apart and never dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct MovedCoco {
    /// COCO's image id.
    pub image_id: i64,
    /// The kept objects' boxes, XYXY on the output canvas (`None` only where the move had
    /// no boxes to move, which a COCO image always has).
    pub boxes: Option<BoundingBoxes>,
    /// The kept objects' category ids.
    pub labels: Vec<i64>,
    /// Where every object has an outline: how many objects were kept, and their masks one
    /// after the other on the output canvas (`u8`, `canvas` sized), empty bytes where the
    /// loader moved the masks with the pixels ([`CocoDataset::moved_targets`]'s
    /// `with_masks`); `None` for objects without outlines.
    pub masks: Option<(usize, Vec<u8>)>,
    /// The kept objects' keypoints and how many each has, where the objects have them.
    pub keypoints: Option<(KeyPoints, usize)>,
    /// Crowd regions' boxes on the output canvas.
    pub crowd_boxes: BoundingBoxes,
    /// Crowd regions' category ids.
    pub crowd_labels: Vec<i64>,
    /// The output canvas, (width, height).
    pub canvas: (u32, u32),
}

impl CocoDataset {
    /// Sample `index`'s targets moved through `geometry` (its pixels' crops, resizes, flips,
    /// pads and warps), with its masks rasterized and moved here only `with_masks` (a loader
    /// moves them with the pixels instead); or why its annotations cannot be read or moved.
    pub fn moved_targets(
        &self,
        index: usize,
        geometry: &TargetGeometry,
        with_masks: bool,
    ) -> Result<MovedCoco, CocoError> {
        let t: CocoTargets = if with_masks {
            self.targets(index)?
        } else {
            self.targets_without_masks(index)?
        };
        let fail = |source: TargetError| CocoError::Moved {
            image: self.name(index),
            source,
        };
        // The masks are decoded only for the objects kept.
        let parts = Targets {
            boxes: Some(t.boxes),
            masks: Vec::new(),
            keypoints: t.keypoints,
            keypoints_per_object: t.keypoints_per_object,
        };
        let MovedTargets {
            kept,
            boxes,
            keypoints,
            ..
        } = move_targets(geometry, &parts).map_err(fail)?;
        let masks = match &t.masks {
            Some(m) => {
                let mut bytes = Vec::new();
                for r in kept_objects(m, &kept, 1) {
                    let moved: Mask = geometry.mask(&r.to_mask()).map_err(fail)?;
                    bytes.extend_from_slice(&moved.data);
                }
                Some((kept.iter().filter(|k| **k).count(), bytes))
            }
            None => None,
        };
        Ok(MovedCoco {
            image_id: t.image_id,
            boxes,
            labels: kept_objects(&t.labels, &kept, 1),
            masks,
            keypoints: keypoints.map(|k| (k, t.keypoints_per_object)),
            crowd_boxes: geometry.boxes(&t.crowd_boxes).map_err(fail)?,
            crowd_labels: t.crowd_labels,
            canvas: geometry.canvas(),
        })
    }
}
