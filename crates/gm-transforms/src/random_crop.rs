//! torchvision's `RandomCrop`: a window of a fixed size at a random place, after optional
//! padding (CIFAR's `RandomCrop(32, padding=4)`; the segmentation references' crop with
//! `pad_if_needed` and an ignore-index fill for masks).

use crate::plan::{Pad, PlanError, PlanState, SampleRng, Transform};

/// torchvision's `RandomCrop(size, padding, pad_if_needed, fill)` with constant padding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomCrop {
    /// Output width.
    pub width: u32,
    /// Output height.
    pub height: u32,
    /// Padding added first: left, top, right, bottom.
    pub padding: [u32; 4],
    /// Pad both sides of an axis further when the image is still smaller than the crop.
    pub pad_if_needed: bool,
    /// The image's padding value, per RGB channel, 0..255.
    pub fill: [f32; 3],
    /// A mask's padding value (torchvision's `fill={tv_tensors.Mask: 255, ...}`; the
    /// segmentation references' ignore index).
    pub mask_fill: u8,
}

impl RandomCrop {
    /// A `width` x `height` crop without padding.
    pub fn new(width: u32, height: u32) -> RandomCrop {
        RandomCrop {
            width,
            height,
            padding: [0; 4],
            pad_if_needed: false,
            fill: [0.0; 3],
            mask_fill: 0,
        }
    }
}

impl Transform for RandomCrop {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("RandomCrop")?;
        let [mut left, mut top, mut right, mut bottom] = self.padding;
        let mut ph = st.height + top + bottom;
        let mut pw = st.width + left + right;
        let (cw, ch) = (self.width, self.height);
        if self.pad_if_needed {
            if ph < ch {
                let diff = ch - ph;
                (top, bottom, ph) = (top + diff, bottom + diff, ph + 2 * diff);
            }
            if pw < cw {
                let diff = cw - pw;
                (left, right, pw) = (left + diff, right + diff, pw + 2 * diff);
            }
        }
        if ph < ch || pw < cw || cw == 0 || ch == 0 {
            return Err(PlanError::Step {
                step: "RandomCrop",
                reason: format!("a {cw}x{ch} crop of a {pw}x{ph} (padded) image"),
            });
        }
        if left + top + right + bottom > 0 {
            let pad = Pad {
                left,
                top,
                right,
                bottom,
                fill: self.fill,
            };
            pad.plan_with_mask_fill(st, self.mask_fill)?;
        }
        // torchvision draws the top before the left.
        let y = if ph > ch {
            rng.below(u64::from(ph - ch + 1))
        } else {
            0
        };
        let x = if pw > cw {
            rng.below(u64::from(pw - cw + 1))
        } else {
            0
        };
        if ph > ch || pw > cw {
            st.crop_current(x as f32, y as f32, cw as f32, ch as f32);
        }
        Ok(())
    }
}
