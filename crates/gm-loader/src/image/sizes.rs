//! Batches whose images differ in size: one tensor padded to the largest image, or the
//! images packed one after another (detection resizes to a shorter side, without a crop).

use gm_transforms::{Layout, OutputSpec, Slot};

use super::output::{batch_shape, common_spec};
use crate::error::SampleErrorKind;

/// How a batch holds images whose outputs differ in size
/// ([`LoaderBuilder::batch_sizes`](crate::LoaderBuilder::batch_sizes)).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum BatchSizes {
    /// Every image of a batch has the chain's one output size (a crop or a resize to a fixed
    /// size ends it); an image of another size is a bad sample.
    #[default]
    Uniform,
    /// One `[B, C, H, W]` (or `[B, H, W, C]`) tensor: `H` and `W` the batch's largest height
    /// and width, each rounded up to `multiple`; each image in its slot's top-left corner,
    /// the rest `fill` (an output value, after normalization), as torchvision's
    /// `GeneralizedRCNNTransform` batches images (`multiple` 32, `fill` 0).
    Padded {
        /// The padded height and width are multiples of this (at least 1).
        multiple: u32,
        /// Value of the padding.
        fill: f32,
    },
    /// One flat tensor holding the images one after another, each contiguous in its own
    /// size ([`Batch::image_shape`](crate::Batch::image_shape),
    /// [`Batch::offsets`](crate::Batch::offsets)): no padding at all.
    Ragged,
}

impl BatchSizes {
    /// torchvision's detection batching: padded to multiples of 32 with zeros.
    pub const DETECTION: BatchSizes = BatchSizes::Padded {
        multiple: 32,
        fill: 0.0,
    };
}

/// Where a batch's images lie in its tensor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Placement {
    /// The batch tensor's shape.
    pub shape: Vec<usize>,
    /// What the images share (width and height: the largest slot's).
    pub spec: OutputSpec,
    /// Each image's slot.
    pub slots: Vec<Slot>,
    /// Each image's own (height, width).
    pub sizes: Vec<(u32, u32)>,
    /// Where each image's slot starts, in elements.
    pub offsets: Vec<usize>,
}

impl Placement {
    /// Bytes of the batch tensor.
    pub fn bytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.spec.dtype.size()
    }
}

/// The placement of images of `specs` in a batch of `mode`; `None` for an empty batch, or
/// the first image that cannot join it (its position and why).
pub(crate) fn place(
    mode: BatchSizes,
    specs: &[OutputSpec],
) -> Result<Option<Placement>, (usize, SampleErrorKind)> {
    let Some(first) = specs.first() else {
        return Ok(None);
    };
    if mode == BatchSizes::Uniform {
        let spec = common_spec(specs)?.unwrap_or(*first);
        let slots: Vec<Slot> = (0..specs.len()).map(|k| Slot::tight(&spec, k)).collect();
        return Ok(Some(finish(
            batch_shape(specs.len(), &spec),
            spec,
            specs,
            slots,
        )));
    }
    // The images share everything but their size.
    for (k, s) in specs.iter().enumerate() {
        let sized = OutputSpec {
            width: first.width,
            height: first.height,
            ..*s
        };
        if sized != *first {
            return Err((
                k,
                SampleErrorKind::OutputSize {
                    got: *s,
                    want: *first,
                },
            ));
        }
    }
    let width = specs.iter().map(|s| s.width).max().unwrap_or(0);
    let height = specs.iter().map(|s| s.height).max().unwrap_or(0);
    match mode {
        BatchSizes::Padded { multiple, fill } => {
            let m = multiple.max(1);
            let spec = OutputSpec {
                width: width.next_multiple_of(m),
                height: height.next_multiple_of(m),
                ..*first
            };
            let slots = (0..specs.len())
                .map(|k| Slot {
                    fill,
                    ..Slot::tight(&spec, k)
                })
                .collect();
            Ok(Some(finish(
                batch_shape(specs.len(), &spec),
                spec,
                specs,
                slots,
            )))
        }
        _ => {
            let mut offset = 0;
            let slots: Vec<Slot> = specs
                .iter()
                .map(|s| {
                    let slot = Slot::tight(s, 0);
                    let placed = Slot { offset, ..slot };
                    offset += s.image_bytes();
                    placed
                })
                .collect();
            let spec = OutputSpec {
                width,
                height,
                ..*first
            };
            let elements = offset / first.dtype.size();
            Ok(Some(finish(vec![elements], spec, specs, slots)))
        }
    }
}

fn finish(
    shape: Vec<usize>,
    spec: OutputSpec,
    specs: &[OutputSpec],
    slots: Vec<Slot>,
) -> Placement {
    let e = spec.dtype.size();
    Placement {
        shape,
        spec,
        offsets: slots.iter().map(|s| s.offset / e).collect(),
        sizes: specs.iter().map(|s| (s.height, s.width)).collect(),
        slots,
    }
}

/// The shape of one image of (height, width) with `channels` in `layout`.
pub(crate) fn image_shape(layout: Layout, channels: usize, (h, w): (u32, u32)) -> Vec<usize> {
    match layout {
        Layout::Chw => vec![channels, h as usize, w as usize],
        Layout::Hwc => vec![h as usize, w as usize, channels],
    }
}

#[cfg(test)]
mod tests {
    use gm_cuda::DType;

    use super::*;

    fn spec(width: u32, height: u32) -> OutputSpec {
        OutputSpec::normalized(width, height, DType::F16, [0.5; 3], [0.5; 3])
    }

    #[test]
    fn padded_slots_round_up_and_ragged_slots_pack() {
        let specs = [spec(10, 7), spec(33, 5), spec(4, 40)];
        let p = place(BatchSizes::DETECTION, &specs).unwrap().unwrap();
        assert_eq!(p.shape, vec![3, 3, 64, 64]);
        let slot = 3 * 64 * 64;
        assert_eq!(p.offsets, vec![0, slot, 2 * slot]);
        assert_eq!(p.sizes, vec![(7, 10), (5, 33), (40, 4)]);
        assert!(p.slots.iter().all(|s| (s.width, s.height) == (64, 64)));
        let r = place(BatchSizes::Ragged, &specs).unwrap().unwrap();
        assert_eq!(r.offsets, vec![0, 3 * 70, 3 * 70 + 3 * 165]);
        assert_eq!(r.shape, vec![3 * (70 + 165 + 160)]);
        assert_eq!(r.bytes(), 2 * 3 * (70 + 165 + 160));
        assert_eq!((r.slots[1].width, r.slots[1].height), (33, 5));
    }

    #[test]
    fn images_that_differ_in_more_than_size_are_refused() {
        let mut other = spec(10, 7);
        other.dtype = DType::F32;
        for mode in [BatchSizes::Uniform, BatchSizes::Ragged] {
            let err = place(mode, &[spec(10, 7), other]).unwrap_err();
            assert_eq!(err.0, 1);
        }
        assert_eq!(
            place(BatchSizes::Uniform, &[spec(10, 7), spec(10, 8)])
                .unwrap_err()
                .0,
            1
        );
        assert!(place(BatchSizes::Ragged, &[]).unwrap().is_none());
    }
}
