//! The detection recipes' random geometry with torchvision's names, arguments and draws
//! (torchvision.transforms.v2 `RandomShortestSize`, `ScaleJitter`, `RandomZoomOut`,
//! `RandomIoUCrop`, `SanitizeBoundingBoxes`; the detection references' `FixedSizeCrop`), planned
//! like every step, so that boxes and keypoints follow them ([`crate::targets`]). The draws come
//! from the sample's [`SampleRng`] in torchvision's order, not from torch's generator.

use crate::plan::{Pad, PlanError, PlanState, Resize, SampleRng, Transform};
use crate::targets::{BoxFormat, GeoStep, KeepRule, SanitizeBoundingBoxes};

fn err(step: &'static str, reason: impl Into<String>) -> PlanError {
    PlanError::Step {
        step,
        reason: reason.into(),
    }
}

/// torchvision's `RandomShortestSize`: the shorter side becomes one of `min_size` (drawn
/// uniformly), unless the longer would then exceed `max_size`.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomShortestSize {
    min_size: Vec<u32>,
    max_size: Option<u32>,
}

impl RandomShortestSize {
    /// The shorter side drawn from `min_size` (at least one, none zero), the longer capped by
    /// `max_size`.
    pub fn new(min_size: &[u32], max_size: Option<u32>) -> Result<RandomShortestSize, PlanError> {
        if min_size.is_empty() || min_size.contains(&0) || max_size == Some(0) {
            return Err(err(
                "RandomShortestSize",
                format!("min_size {min_size:?}, max_size {max_size:?}"),
            ));
        }
        Ok(RandomShortestSize {
            min_size: min_size.to_vec(),
            max_size,
        })
    }
}

impl Transform for RandomShortestSize {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let pick = rng.below(self.min_size.len() as u64) as usize;
        let (w, h) = (f64::from(st.width), f64::from(st.height));
        let mut r = f64::from(self.min_size[pick]) / w.min(h);
        if let Some(m) = self.max_size {
            r = r.min(f64::from(m) / w.max(h));
        }
        resize_to(
            st,
            rng,
            "RandomShortestSize",
            (w * r) as u32,
            (h * r) as u32,
        )
    }
}

/// Resizes to `w` x `h`, refusing an empty image.
fn resize_to(
    st: &mut PlanState,
    rng: &mut SampleRng,
    step: &'static str,
    w: u32,
    h: u32,
) -> Result<(), PlanError> {
    if w == 0 || h == 0 {
        return Err(err(
            step,
            format!("a {}x{} image resized to {w}x{h}", st.width, st.height),
        ));
    }
    Resize::Exact(w, h).plan(st, rng)
}

/// torchvision's `ScaleJitter` (large-scale jitter): the image fitted into `target` (width,
/// height), times a scale uniform in `scale_range`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaleJitter {
    target: (u32, u32),
    scale_range: (f64, f64),
}

impl ScaleJitter {
    /// `target` (width, height), scales uniform in `scale_range` (torchvision: 0.1..2.0).
    pub fn new(target: (u32, u32), scale_range: (f64, f64)) -> Result<ScaleJitter, PlanError> {
        let (lo, hi) = scale_range;
        if target.0 == 0 || target.1 == 0 || !(lo > 0.0 && lo <= hi && hi.is_finite()) {
            return Err(err(
                "ScaleJitter",
                format!("target {target:?}, scale_range {scale_range:?}"),
            ));
        }
        Ok(ScaleJitter {
            target,
            scale_range,
        })
    }
}

impl Transform for ScaleJitter {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let scale = rng.uniform(self.scale_range.0, self.scale_range.1);
        let (w, h) = (f64::from(st.width), f64::from(st.height));
        let fit = (f64::from(self.target.1) / h).min(f64::from(self.target.0) / w);
        let r = fit * scale;
        resize_to(st, rng, "ScaleJitter", (w * r) as u32, (h * r) as u32)
    }
}

/// torchvision's `RandomZoomOut`: with probability `p`, the image placed at a random spot of a
/// canvas `side_range` times its size, filled with `fill`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomZoomOut {
    fill: [f32; 3],
    side_range: (f64, f64),
    p: f64,
}

impl RandomZoomOut {
    /// Canvas sides `side_range` times the image's (from 1; torchvision: 1..4), with
    /// probability `p` (torchvision: 0.5), filled with `fill` (per RGB channel, 0..255).
    pub fn new(fill: [f32; 3], side_range: (f64, f64), p: f64) -> Result<RandomZoomOut, PlanError> {
        let (lo, hi) = side_range;
        let valid = lo >= 1.0 && lo <= hi && hi.is_finite() && (0.0..=1.0).contains(&p);
        if !valid {
            return Err(err(
                "RandomZoomOut",
                format!("side_range {side_range:?}, p {p}"),
            ));
        }
        Ok(RandomZoomOut {
            fill,
            side_range,
            p,
        })
    }
}

impl Transform for RandomZoomOut {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if !rng.bernoulli(self.p) {
            return Ok(());
        }
        let r = rng.uniform(self.side_range.0, self.side_range.1);
        let (w, h) = (st.width, st.height);
        let canvas = ((f64::from(w) * r) as u32, (f64::from(h) * r) as u32);
        let (rx, ry) = (rng.uniform(0.0, 1.0), rng.uniform(0.0, 1.0));
        let left = (f64::from(canvas.0 - w) * rx) as u32;
        let top = (f64::from(canvas.1 - h) * ry) as u32;
        Pad {
            left,
            top,
            right: canvas.0 - (left + w),
            bottom: canvas.1 - (top + h),
            fill: self.fill,
        }
        .plan(st, rng)
    }
}

/// The FixedSizeCrop of torchvision's detection references (large-scale jitter's second
/// step): a random `width` x `height` window of a larger image (one draw places it on both
/// axes), objects whose boxes it leaves empty dropped, and a smaller image padded on the
/// right and bottom with `fill` (per RGB channel, 0..255).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedSizeCrop {
    width: u32,
    height: u32,
    fill: [f32; 3],
    position: Option<f32>,
}

impl FixedSizeCrop {
    /// A `width` x `height` output, padded with `fill`.
    pub fn new(width: u32, height: u32, fill: [f32; 3]) -> Result<FixedSizeCrop, PlanError> {
        if width == 0 || height == 0 {
            return Err(err("FixedSizeCrop", format!("size {width}x{height}")));
        }
        Ok(FixedSizeCrop {
            width,
            height,
            fill,
            position: None,
        })
    }

    /// The window placed at fraction `r` (0..1) of the room on each axis instead of a drawn
    /// one (a fixed crop, and torchvision's arithmetic for a given draw).
    pub fn with_position(self, r: f32) -> FixedSizeCrop {
        FixedSizeCrop {
            position: Some(r.clamp(0.0, 1.0)),
            ..self
        }
    }
}

impl Transform for FixedSizeCrop {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("FixedSizeCrop")?;
        let (w, h) = (st.width, st.height);
        let (new_w, new_h) = (w.min(self.width), h.min(self.height));
        if (new_w, new_h) != (w, h) {
            let r = self
                .position
                .unwrap_or_else(|| rng.uniform(0.0, 1.0) as f32);
            let left = ((w - new_w) as f32 * r) as u32;
            let top = ((h - new_h) as f32 * r) as u32;
            st.crop_current(left as f32, top as f32, new_w as f32, new_h as f32);
            st.geometry.steps.push(GeoStep::Keep(KeepRule::NonEmpty));
        }
        let (right, bottom) = (self.width - new_w, self.height - new_h);
        if right == 0 && bottom == 0 {
            return Ok(());
        }
        // The references pad masks with 0 whatever the image's fill.
        Pad {
            left: 0,
            top: 0,
            right,
            bottom,
            fill: self.fill,
        }
        .plan_with_mask_fill(st, 0)
    }
}

/// torchvision's `SanitizeBoundingBoxes` in a chain: the objects whose boxes fail it at this
/// point are dropped with their labels, masks and keypoints
/// ([`crate::targets::TargetGeometry::kept`]); the pixels do not change.
impl Transform for SanitizeBoundingBoxes {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.geometry
            .steps
            .push(GeoStep::Keep(KeepRule::Sanitize(*self)));
        Ok(())
    }
}

/// torchvision's `RandomIoUCrop` (SSD): a crop of random scale and aspect ratio whose overlap
/// with at least one box whose centre it holds reaches a drawn threshold, or no crop at all;
/// boxes whose centre it leaves become zeros, for a later [`SanitizeBoundingBoxes`] to drop.
/// It draws from the sample's boxes ([`PlanState::boxes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RandomIoUCrop {
    /// Smallest and largest scale of each side (torchvision: 0.3..1).
    pub scale: (f32, f32),
    /// Smallest and largest width / height (torchvision: 0.5..2).
    pub aspect_ratio: (f64, f64),
    /// IoU thresholds drawn from; 1 or more means no crop (torchvision: 0, .1, .3, .5, .7,
    /// .9, 1).
    pub options: Vec<f32>,
    /// Crops tried per drawn threshold (torchvision: 40).
    pub trials: u32,
}

impl Default for RandomIoUCrop {
    fn default() -> Self {
        RandomIoUCrop {
            scale: (0.3, 1.0),
            aspect_ratio: (0.5, 2.0),
            options: vec![0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0],
            trials: 40,
        }
    }
}

/// Thresholds drawn before RandomIoUCrop gives up and leaves the image whole. torchvision
/// draws until it finds a crop or the "no crop" option, which never ends for a sample
/// without a box inside any crop and options all below 1.
const IOU_CROP_ROUNDS: u32 = 1000;

impl RandomIoUCrop {
    /// The crop (left, top, width, height) drawn for `boxes` (XYXY) on a `w` x `h` image;
    /// `None` for no crop.
    fn draw(
        &self,
        boxes: &[[f32; 4]],
        (w, h): (u32, u32),
        rng: &mut SampleRng,
    ) -> Option<[u32; 4]> {
        let (lo, hi) = self.scale;
        for _ in 0..IOU_CROP_ROUNDS {
            let option = *self
                .options
                .get(rng.below(self.options.len() as u64) as usize)?;
            if option >= 1.0 {
                return None;
            }
            for _ in 0..self.trials {
                let rw = lo + (hi - lo) * rng.uniform(0.0, 1.0) as f32;
                let rh = lo + (hi - lo) * rng.uniform(0.0, 1.0) as f32;
                let (new_w, new_h) = ((w as f32 * rw) as u32, (h as f32 * rh) as u32);
                // torchvision divides by zero here; an empty crop is no crop.
                let aspect = f64::from(new_w) / f64::from(new_h.max(1));
                let sized = new_w > 0 && new_h > 0;
                if !sized || !(self.aspect_ratio.0..=self.aspect_ratio.1).contains(&aspect) {
                    continue;
                }
                let (ax, ay) = (rng.uniform(0.0, 1.0) as f32, rng.uniform(0.0, 1.0) as f32);
                let left = ((w - new_w) as f32 * ax) as u32;
                let top = ((h - new_h) as f32 * ay) as u32;
                let crop = [left, top, left + new_w, top + new_h].map(|v| v as f32);
                let best = boxes
                    .iter()
                    .filter(|b| centred(b, &crop))
                    .map(|b| iou(b, &crop))
                    .fold(None, |m: Option<f32>, v| Some(m.map_or(v, |m| m.max(v))));
                if best.is_some_and(|b| b >= option) {
                    return Some([left, top, new_w, new_h]);
                }
            }
        }
        None
    }
}

/// Whether `b`'s centre (XYXY) lies strictly inside `crop`.
fn centred(b: &[f32; 4], crop: &[f32; 4]) -> bool {
    let (cx, cy) = (0.5 * (b[0] + b[2]), 0.5 * (b[1] + b[3]));
    crop[0] < cx && cx < crop[2] && crop[1] < cy && cy < crop[3]
}

/// torchvision's `box_iou` of two XYXY boxes.
fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let area = |x: &[f32; 4]| (x[2] - x[0]) * (x[3] - x[1]);
    let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = iw * ih;
    inter / (area(a) + area(b) - inter)
}

impl Transform for RandomIoUCrop {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("RandomIoUCrop")?;
        let Some(source) = &st.boxes else {
            return Err(err(
                "RandomIoUCrop",
                "it draws from the sample's bounding boxes: load a dataset with targets \
                 (CocoDataset)",
            ));
        };
        let now = st
            .geometry
            .boxes(source)
            .map_err(|e| err("RandomIoUCrop", e.to_string()))?
            .to_format(BoxFormat::Xyxy);
        let Some([left, top, w, h]) = self.draw(&now.boxes, (st.width, st.height), rng) else {
            return Ok(());
        };
        let [l, t] = [left, top].map(|v| v as f32);
        st.geometry.steps.push(GeoStep::ZeroOutside {
            left: l,
            top: t,
            right: l + w as f32,
            bottom: t + h as f32,
        });
        st.crop_current(l, t, w as f32, h as f32);
        Ok(())
    }

    fn needs_boxes(&self) -> bool {
        true
    }
}

/// torchvision's `RandomResize` (the segmentation references' random scale): the shorter side
/// becomes a size drawn uniformly from `min_size..max_size` (the upper end excluded, as
/// `torch.randint`), the aspect ratio kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomResize {
    min_size: u32,
    max_size: u32,
}

impl RandomResize {
    /// Sizes `min_size..max_size` (at least one size, none zero).
    pub fn new(min_size: u32, max_size: u32) -> Result<RandomResize, PlanError> {
        if min_size == 0 || max_size <= min_size {
            return Err(err(
                "RandomResize",
                format!("min_size {min_size}, max_size {max_size}: need 0 < min_size < max_size"),
            ));
        }
        Ok(RandomResize { min_size, max_size })
    }
}

impl Transform for RandomResize {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        let size = self.min_size + rng.below(u64::from(self.max_size - self.min_size)) as u32;
        Resize::Shorter(size).plan(st, rng)
    }
}
