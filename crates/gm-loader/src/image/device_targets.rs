//! A GPU batch's moved targets (boxes, labels, keypoints, crowd regions) in one device buffer:
//! packed by the stage that ran the batch and uploaded from its pinned staging in one copy
//! before the batch's ready event, so that the training loop makes no copy and no CUDA call
//! for them. Each kind lies image after image (every image's boxes, then every image's crowd
//! boxes, ...), so that a consumer can cut a kind with one split.

use gm_cuda::{DType, DevicePool, PinnedPool, Stream, Tensor};

use super::batch::MovedSample;
use super::masks::Region;
use crate::error::LoaderError;

/// Where one tensor of one image's targets lies in [`DeviceTargets::data`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPlace {
    /// First byte (a multiple of 8).
    pub offset: usize,
    /// Shape, in elements.
    pub shape: Vec<usize>,
}

/// One image's targets in [`DeviceTargets::data`], in torchvision's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPlaces {
    /// `f32 [N, 4]` XYXY, where the move had boxes.
    pub boxes: Option<TargetPlace>,
    /// `i64 [N]`.
    pub labels: TargetPlace,
    /// `f32 [N, K, 2]`, where the objects have keypoints.
    pub keypoints: Option<TargetPlace>,
    /// `bool [N, K]` (one byte each), with `keypoints`.
    pub keypoints_visible: Option<TargetPlace>,
    /// `f32 [M, 4]` XYXY.
    pub crowd_boxes: TargetPlace,
    /// `i64 [M]`.
    pub crowd_labels: TargetPlace,
}

/// A batch's targets on the device ([`Batch::device_targets`](crate::Batch)): one `u8`
/// buffer, ready on the batch's event, and each image's places in it (`None` for an image
/// whose targets could not be moved).
#[derive(Debug)]
pub struct DeviceTargets {
    /// The bytes, native-endian.
    pub data: Tensor,
    /// Each image's places, in batch order.
    pub places: Vec<Option<TargetPlaces>>,
}

/// The bytes of every image's targets, kind after kind, each tensor on 8 bytes, and where
/// each lies.
pub(crate) fn pack(targets: &[MovedSample]) -> (Vec<u8>, Vec<Option<TargetPlaces>>) {
    let mut bytes = Vec::new();
    let mut put = |data: Vec<u8>, shape: Vec<usize>| {
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        let offset = bytes.len();
        bytes.extend_from_slice(&data);
        TargetPlace { offset, shape }
    };
    let ok = || targets.iter().map(|t| t.as_ref().ok());
    let i64s = |v: &[i64]| v.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let boxes: Vec<_> = ok()
        .map(|t| {
            let b = t?.boxes.as_ref()?;
            Some(put(f32_bytes(&b.boxes), vec![b.boxes.len(), 4]))
        })
        .collect();
    let crowd_boxes: Vec<_> = ok()
        .map(|t| {
            t.map(|t| {
                put(
                    f32_bytes(&t.crowd_boxes.boxes),
                    vec![t.crowd_boxes.boxes.len(), 4],
                )
            })
        })
        .collect();
    let keypoints: Vec<_> = ok()
        .map(|t| {
            let (k, per) = t?.keypoints.as_ref()?;
            Some(put(
                f32_bytes(&k.points),
                vec![k.points.len() / per.max(&1), *per, 2],
            ))
        })
        .collect();
    let labels: Vec<_> = ok()
        .map(|t| t.map(|t| put(i64s(&t.labels), vec![t.labels.len()])))
        .collect();
    let crowd_labels: Vec<_> = ok()
        .map(|t| t.map(|t| put(i64s(&t.crowd_labels), vec![t.crowd_labels.len()])))
        .collect();
    let visible: Vec<_> = ok()
        .map(|t| {
            let (k, per) = t?.keypoints.as_ref()?;
            let v = k.visible.iter().map(|&v| u8::from(v)).collect();
            Some(put(v, vec![k.visible.len() / per.max(&1), *per]))
        })
        .collect();
    let places = (0..targets.len())
        .map(|i| {
            Some(TargetPlaces {
                boxes: boxes[i].clone(),
                labels: labels[i].clone()?,
                keypoints: keypoints[i].clone(),
                keypoints_visible: visible[i].clone(),
                crowd_boxes: crowd_boxes[i].clone()?,
                crowd_labels: crowd_labels[i].clone()?,
            })
        })
        .collect();
    (bytes, places)
}

/// Rows of `f32`s as their native-endian bytes.
fn f32_bytes<const N: usize>(rows: &[[f32; N]]) -> Vec<u8> {
    rows.iter()
        .flatten()
        .flat_map(|v| v.to_ne_bytes())
        .collect()
}

/// `targets` packed and copied to the device on `stream` (memory from `pool`, staged through
/// `pinned`).
pub(crate) fn upload(
    targets: &[MovedSample],
    pool: &DevicePool,
    pinned: &PinnedPool,
    stream: &Stream,
) -> Result<DeviceTargets, LoaderError> {
    let (bytes, places) = pack(targets);
    let data = Tensor::empty(pool, stream, &[bytes.len().max(8)], DType::U8)?;
    if !bytes.is_empty() {
        let mut staging = pinned.acquire(bytes.len())?;
        staging.as_mut_slice()?[..bytes.len()].copy_from_slice(&bytes);
        let mut dst = Region(data.data_ptr(), bytes.len());
        stream.copy_to_device(&mut staging, 0, &mut dst, 0, bytes.len())?;
    }
    Ok(DeviceTargets { data, places })
}

#[cfg(test)]
mod tests {
    use gm_transforms::targets::{BoundingBoxes, BoxFormat, KeyPoints};

    use super::*;
    use crate::coco::{CocoError, MovedCoco};

    fn boxes(rows: Vec<[f32; 4]>) -> BoundingBoxes {
        BoundingBoxes {
            format: BoxFormat::Xyxy,
            canvas: (64, 48),
            boxes: rows,
        }
    }

    fn at(bytes: &[u8], p: &TargetPlace, size: usize) -> Vec<u8> {
        let n: usize = p.shape.iter().product();
        bytes[p.offset..p.offset + n * size].to_vec()
    }

    #[test]
    fn each_kind_lies_image_after_image_on_8_bytes() {
        let image = |n: usize, crowd: usize, keypoints: bool| MovedCoco {
            image_id: n as i64,
            boxes: Some(boxes((0..n).map(|i| [i as f32, 1.0, 2.0, 3.5]).collect())),
            labels: (0..n as i64).map(|i| i + 10).collect(),
            masks: None,
            keypoints: keypoints.then(|| {
                let k = KeyPoints {
                    canvas: (64, 48),
                    points: (0..n * 3).map(|i| [i as f32, 0.5]).collect(),
                    visible: (0..n * 3).map(|i| i % 2 == 0).collect(),
                };
                (k, 3)
            }),
            crowd_boxes: boxes(vec![[9.0; 4]; crowd]),
            crowd_labels: vec![7; crowd],
            canvas: (64, 48),
        };
        let bad = Err(CocoError::Format {
            path: "x.json".into(),
            reason: "bad".into(),
        });
        let targets = vec![Ok(image(2, 1, true)), bad, Ok(image(3, 0, true))];
        let (bytes, places) = pack(&targets);
        assert!(places[1].is_none());
        let (a, c) = (places[0].as_ref().unwrap(), places[2].as_ref().unwrap());
        for (p, t) in [(a, &targets[0]), (c, &targets[2])] {
            let t = t.as_ref().unwrap();
            let b = p.boxes.as_ref().unwrap();
            assert_eq!(
                at(&bytes, b, 4),
                f32_bytes(&t.boxes.as_ref().unwrap().boxes)
            );
            let labels: Vec<u8> = t.labels.iter().flat_map(|v| v.to_ne_bytes()).collect();
            assert_eq!(at(&bytes, &p.labels, 8), labels);
            assert_eq!(
                at(&bytes, &p.crowd_boxes, 4),
                f32_bytes(&t.crowd_boxes.boxes)
            );
            let (k, per) = t.keypoints.as_ref().unwrap();
            let xy = p.keypoints.as_ref().unwrap();
            assert_eq!(xy.shape, vec![k.points.len() / per, *per, 2]);
            assert_eq!(at(&bytes, xy, 4), f32_bytes(&k.points));
            let vis: Vec<u8> = k.visible.iter().map(|&v| u8::from(v)).collect();
            assert_eq!(at(&bytes, p.keypoints_visible.as_ref().unwrap(), 1), vis);
            for place in [b, &p.labels, &p.crowd_boxes, &p.crowd_labels, xy] {
                assert_eq!(place.offset % 8, 0);
            }
        }
        // Every image's boxes side by side, then every image's crowd boxes: one region each.
        let b0 = a.boxes.as_ref().unwrap();
        assert_eq!(c.boxes.as_ref().unwrap().offset, b0.offset + 2 * 16);
        assert_eq!(a.crowd_boxes.offset, b0.offset + 5 * 16);
        assert_eq!(c.labels.offset, a.labels.offset + 2 * 8);
    }
}
