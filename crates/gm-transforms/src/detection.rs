//! The detection recipes' random geometry with torchvision's names, arguments and draws
//! (torchvision.transforms.v2 `RandomShortestSize`, `ScaleJitter`, `RandomZoomOut`), planned
//! like every step, so that boxes and keypoints follow them ([`crate::targets`]). The draws come
//! from the sample's [`SampleRng`] in torchvision's order, not from torch's generator.

use crate::plan::{Pad, PlanError, PlanState, Resize, SampleRng, Transform};

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
