//! Composable transforms, planned on the CPU into the parameters of one fused kernel launch.
//!
//! A chain (`Resize`, crops, flips, `Normalize`, `ToDtype`...) never touches pixels itself: each
//! step updates a [`PlanState`] (the source region shown, the current size, the flips, the
//! output format), and the final state is one [`FusedOp`] plus an [`OutputSpec`], so the whole
//! chain costs one read of each source pixel and one write of each output element. Random steps
//! draw from a [`SampleRng`] seeded by (seed, epoch, sample index): the GPU and the CPU twin,
//! any worker, any run, get the same parameters for the same sample.

use gm_cuda::DType;

use crate::colour::{ColourOp, ColourOps};
use crate::geometry::{Mat3, affine, mul};
use crate::targets::{GeoStep, TargetGeometry};
use crate::types::{Crop, FusedOp, Interp, Layout, OutputSpec, Padding, PrePass, Warp};

/// Why a chain cannot be planned for an image.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A step needs something the image does not have.
    #[error("{step}: {reason}")]
    Step {
        /// The step.
        step: &'static str,
        /// Why.
        reason: String,
    },
    /// Images of one sample differ in size, so one set of random parameters cannot serve all.
    #[error("images of one sample differ in size: {0}x{1} and {2}x{3}")]
    MixedSizes(u32, u32, u32, u32),
}

/// Deterministic randomness for one sample (SplitMix64 over a hash of seed, epoch, index).
#[derive(Debug, Clone)]
pub struct SampleRng {
    state: u64,
}

impl SampleRng {
    /// The generator of sample `index` in `epoch` of a run seeded with `seed`.
    pub fn new(seed: u64, epoch: u64, index: u64) -> SampleRng {
        let mut r = SampleRng { state: seed };
        r.state ^= r
            .next_u64()
            .wrapping_add(epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.state ^= r
            .next_u64()
            .wrapping_add(index.wrapping_mul(0xbf58_476d_1ce4_e5b9));
        r
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }

    /// Uniform integer in `[0, n)` (n > 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform(0.0, 1.0) < p
    }
}

/// The plan of one image so far.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanState {
    /// Source size.
    pub src_w: u32,
    /// Source height.
    pub src_h: u32,
    /// The source region shown.
    pub crop: Crop,
    /// Current width (what the next step sees).
    pub width: u32,
    /// Current height.
    pub height: u32,
    /// Mirrored left-right so far.
    pub flip_h: bool,
    /// Mirrored top-bottom so far.
    pub flip_v: bool,
    /// Output format.
    pub spec: OutputSpec,
    /// Padding added so far, in source pixels.
    pub pad: Option<crate::types::Padding>,
    /// Colour operations so far (applied after the geometry).
    pub colour: ColourOps,
    /// The sampling grid once an affine or perspective step has run: its matrix maps
    /// positions in the current image to the source, and later crops, resizes and flips
    /// compose with it (`crop` and the flips then no longer change).
    pub warp: Option<Warp>,
    /// The passes cut off before this state's (see [`PrePass`]): the last one's output is
    /// this state's source.
    pub pre: Vec<PrePass>,
    /// The Gaussian blur drawn for this image, run after the fused pass on its u8 output
    /// ([`crate::GaussianBlur`]); later steps may only flip or set the output's values.
    pub blur: Option<crate::Blur>,
    /// The Gaussian noise drawn for this image, added in place to the finished float output
    /// ([`crate::GaussianNoise`]); later steps may only flip or set the output's layout.
    pub noise: Option<crate::Noise>,
    /// Every geometric step so far as torchvision applies it to boxes and keypoints
    /// ([`crate::targets`]).
    pub geometry: TargetGeometry,
    /// The sample's boxes on the source's canvas, for steps that draw from them
    /// ([`crate::RandomIoUCrop`]; [`Compose::plan_with_boxes`]).
    pub boxes: Option<crate::targets::BoundingBoxes>,
}

impl PlanState {
    /// The untouched image: all of it, u8 RGB HWC, values unchanged.
    pub fn new(src_w: u32, src_h: u32) -> PlanState {
        PlanState {
            src_w,
            src_h,
            crop: Crop::full(src_w, src_h),
            width: src_w,
            height: src_h,
            flip_h: false,
            flip_v: false,
            pad: None,
            colour: ColourOps::NONE,
            warp: None,
            pre: Vec::new(),
            blur: None,
            noise: None,
            geometry: TargetGeometry::new(src_w, src_h),
            boxes: None,
            spec: OutputSpec {
                width: src_w,
                height: src_h,
                layout: Layout::Hwc,
                dtype: DType::U8,
                bgr: false,
                grey: false,
                interp: Interp::Bilinear,
                scale: [1.0; 3],
                bias: [0.0; 3],
            },
        }
    }

    /// Keeps the region `(left, top, w, h)` of the current image (current pixel units),
    /// taking earlier flips into account.
    pub fn crop_current(&mut self, left: f32, top: f32, w: f32, h: f32) {
        self.geometry.steps.push(GeoStep::Crop {
            left,
            top,
            width: w.round() as u32,
            height: h.round() as u32,
        });
        if self.warp.is_some() {
            // torchvision crops the warped uint8 image: a grid composed with the crop would
            // land between its pixels' positions.
            self.cut();
        }
        let (cw, ch) = (self.width as f32, self.height as f32);
        // In a mirrored view, the region's left edge is the source's right.
        let left = if self.flip_h { cw - left - w } else { left };
        let top = if self.flip_v { ch - top - h } else { top };
        let (sx, sy) = (self.crop.w / cw, self.crop.h / ch);
        self.crop = Crop {
            x: self.crop.x + left * sx,
            y: self.crop.y + top * sy,
            w: w * sx,
            h: h * sy,
        };
        self.width = w.round() as u32;
        self.height = h.round() as u32;
    }

    /// Mirrors the current image left-right (`horizontal`) or top-bottom.
    pub fn flip(&mut self, horizontal: bool) {
        self.geometry.steps.push(GeoStep::Flip { horizontal });
        if self.warp.is_some() {
            let (w, h) = (f64::from(self.width), f64::from(self.height));
            self.compose(if horizontal {
                affine([-1.0, 0.0, w, 0.0, 1.0, 0.0])
            } else {
                affine([1.0, 0.0, 0.0, 0.0, -1.0, h])
            });
        } else if horizontal {
            self.flip_h = !self.flip_h;
        } else {
            self.flip_v = !self.flip_v;
        }
    }

    /// Resizes the current image to `w` x `h`.
    pub fn resize_current(&mut self, w: u32, h: u32) {
        self.geometry.steps.push(GeoStep::Resize {
            width: w,
            height: h,
        });
        if self.warp.is_some() {
            // torchvision resamples the warped uint8 image again.
            self.cut();
        }
        self.width = w;
        self.height = h;
    }

    /// Maps the warp's output through `m` first: `m` takes positions in the new current
    /// image (pixel `i` spans `i..i + 1`) to positions in the old one.
    fn compose(&mut self, m: Mat3) {
        if let Some(w) = &mut self.warp {
            // The grid's u = x + origin is the position - 0.5 + origin.
            let (dx, dy) = (0.5 - w.origin[0], 0.5 - w.origin[1]);
            let to_pos = affine([1.0, 0.0, dx, 0.0, 1.0, dy]);
            let to_u = affine([1.0, 0.0, -dx, 0.0, 1.0, -dy]);
            w.matrix = mul(&w.matrix, &mul(&to_u, &mul(&m, &to_pos)));
        }
    }

    /// Per axis (x, y): the current image's positions to source positions as the crop and
    /// flips so far define them, `source = a * position + b`, as ((ax, bx), (ay, by)).
    fn plain_map(&self) -> ((f64, f64), (f64, f64)) {
        let axis = |start: f32, len: f32, size: u32, flip: bool| {
            let a = f64::from(len) / f64::from(size);
            if flip {
                (-a, f64::from(start) + f64::from(len))
            } else {
                (a, f64::from(start))
            }
        };
        let c = self.crop;
        (
            axis(c.x, c.w, self.width, self.flip_h),
            axis(c.y, c.h, self.height, self.flip_v),
        )
    }

    /// Warps the current image with torchvision's grid (see [`Warp`]: `matrix`, `origin`,
    /// `post` as `_affine_grid` / `_perspective_grid` build them for the current size),
    /// sampled with `interp` (nearest or bilinear); pixels mapped from outside it read `fill`
    /// (zero, unblended, with `None`). The size stays; the output's filter stays, for the
    /// images that draw no warp. The grid folds in the crops and flips before it where they
    /// only pick source pixels; after a resize, a pad, a colour operation or another warp
    /// the chain is cut ([`PrePass`]) and the warp reads the uint8 image torchvision warps.
    pub fn warp_current(
        &mut self,
        step: &'static str,
        (matrix, origin, post): (Mat3, [f64; 2], f64),
        interp: Interp,
        fill: Option<[f32; 3]>,
    ) -> Result<(), PlanError> {
        self.check_geometry(step)?;
        let err = |reason: &str| {
            Err(PlanError::Step {
                step,
                reason: reason.into(),
            })
        };
        // A warp, a pad or a resize before: not a pick of source pixels.
        if !self.colour.is_empty() || !self.picks_source_pixels() {
            self.cut();
        }
        let nearest = match interp {
            Interp::Nearest => true,
            Interp::Bilinear => false,
            _ => return err("a warp samples nearest or bilinear"),
        };
        let (bounds, ..) = FusedOp {
            crop: self.crop,
            ..FusedOp::full(self.src_w, self.src_h)
        }
        .windows(self.src_w, self.src_h);
        // grid_sample's tap position in the current image is (g + 1) * size / 2 - 0.5; the
        // crop and flips take it (+ 0.5, a position) to the source.
        let ((ax, bx), (ay, by)) = self.plain_map();
        let half = [f64::from(self.width) / 2.0, f64::from(self.height) / 2.0];
        self.warp = Some(Warp {
            matrix,
            origin,
            post,
            scale: [ax * half[0], ay * half[1]],
            shift: [bx - 0.5, by - 0.5],
            bounds,
            nearest,
            fill,
        });
        Ok(())
    }

    /// Refuses geometry after GaussianBlur or GaussianNoise, which run after the fused
    /// passes.
    pub fn check_geometry(&self, step: &'static str) -> Result<(), PlanError> {
        self.check_after_noise(step)?;
        if self.blur.is_some() {
            return Err(PlanError::Step {
                step,
                reason: "geometry after GaussianBlur; put crops and resizes first".into(),
            });
        }
        Ok(())
    }

    /// Before a crop, resize or pad: [`PlanState::check_geometry`], then a cut after colour
    /// operations (they apply to the geometry's output; a contrast mean or a solarized edge
    /// would change if the geometry moved behind them). Flips commute with every colour
    /// operation and need neither.
    pub fn begin_geometry(&mut self, step: &'static str) -> Result<(), PlanError> {
        self.check_geometry(step)?;
        if !self.colour.is_empty() {
            self.cut();
        }
        Ok(())
    }

    /// Whether each current pixel is one source pixel (a crop at whole pixels, flips, no
    /// resize, no padding or warp): a sampling grid then folds in exactly.
    fn picks_source_pixels(&self) -> bool {
        let c = self.crop;
        self.warp.is_none()
            && self.pad.is_none()
            && c.w == self.width as f32
            && c.h == self.height as f32
            && c.x.fract() == 0.0
            && c.y.fract() == 0.0
    }

    /// Ends the current pass: it writes the image as it is now (u8 RGB HWC, this size), and
    /// the next pass starts from that image, whole, as torchvision's next step sees it.
    fn cut(&mut self) {
        let spec = OutputSpec {
            width: self.width,
            height: self.height,
            layout: Layout::Hwc,
            dtype: DType::U8,
            bgr: false,
            grey: false,
            interp: self.spec.interp,
            scale: [1.0; 3],
            bias: [0.0; 3],
        };
        self.pre.push(PrePass {
            op: self.current_op(),
            spec,
        });
        self.src_w = self.width;
        self.src_h = self.height;
        self.crop = Crop::full(self.width, self.height);
        (self.flip_h, self.flip_v) = (false, false);
        self.pad = None;
        self.colour = ColourOps::NONE;
        self.warp = None;
    }

    /// Refuses a step that changes values after GaussianNoise, which is added to the finished
    /// output (in torchvision the later step would change the noise too).
    pub fn check_after_noise(&self, step: &'static str) -> Result<(), PlanError> {
        if self.noise.is_none() {
            return Ok(());
        }
        Err(PlanError::Step {
            step,
            reason: "after GaussianNoise, which is added to the finished output; put it last"
                .into(),
        })
    }

    /// Appends a colour operation (dropping one that changes nothing), refusing one after
    /// `Normalize` (colour works on 0..255 values, torchvision's uint8 path) or past the
    /// plan's capacity.
    pub fn push_colour(&mut self, step: &'static str, op: ColourOp) -> Result<(), PlanError> {
        let err = |reason: &str| {
            Err(PlanError::Step {
                step,
                reason: reason.into(),
            })
        };
        if self.spec.scale != [1.0; 3] || self.spec.bias != [0.0; 3] {
            return err("a colour operation after Normalize; put Normalize last");
        }
        self.check_after_noise(step)?;
        if self.blur.is_some() {
            // The blur runs after the fused pass, which applies the colour operations.
            return err("a colour operation after GaussianBlur is not supported; put it first");
        }
        if op.is_identity() {
            // It would cost the kernel work (and contrast a pre-pass) for nothing.
            return Ok(());
        }
        let neighbours = self.colour.as_slice().iter().any(|o| o.reads_neighbours());
        if neighbours && op.reads_neighbours() {
            // A pass sharpens once (it re-samples the neighbours of each pixel).
            self.cut();
        }
        if self.colour.push(op).is_none() {
            self.cut();
            if self.colour.push(op).is_none() {
                return err("a colour operation that does not fit an empty plan");
            }
        }
        Ok(())
    }

    /// The kernel parameters for the final state (the pre-passes stay in `pre`).
    pub fn finish(&self) -> (FusedOp, OutputSpec) {
        let spec = OutputSpec {
            width: self.width,
            height: self.height,
            ..self.spec
        };
        (self.current_op(), spec)
    }

    /// The current pass's operation.
    fn current_op(&self) -> FusedOp {
        FusedOp {
            crop: self.crop,
            flip_h: self.flip_h,
            flip_v: self.flip_v,
            pad: self.pad,
            colour: self.colour,
            warp: self.warp,
        }
    }
}

/// The passes around the final fused pass of one image.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Passes {
    /// Fused passes before the final one, in order ([`PrePass`]): the first reads the
    /// image, each later one (and the final pass) the one before's output.
    pub pre: Vec<PrePass>,
    /// The blur pass's blur (the fused kernel then writes u8 HWC for it).
    pub blur: Option<crate::Blur>,
    /// The noise added in place to the finished output.
    pub noise: Option<crate::Noise>,
    /// The geometry the image went through, to move its boxes and keypoints
    /// ([`TargetGeometry::boxes`], [`TargetGeometry::keypoints`]).
    pub geometry: TargetGeometry,
}

impl Passes {
    /// The operation that reads the image itself: the first pre-pass's, or `last` (the final
    /// pass's) when there is none. Region decoding takes its window and shifts it.
    pub fn source_op<'a>(&'a mut self, last: &'a mut FusedOp) -> &'a mut FusedOp {
        match self.pre.first_mut() {
            Some(p) => &mut p.op,
            None => last,
        }
    }
}

/// Refuses a plan cut into several passes, for the consumers that launch only the final one.
fn refuse_pre(passes: &Passes) -> Result<(), PlanError> {
    if passes.pre.is_empty() {
        return Ok(());
    }
    Err(PlanError::Step {
        step: "chain",
        reason: format!(
            "the chain resamples {} more time(s) before its last pass (as torchvision does), \
             which this consumer does not launch (plan with Compose::plan_post)",
            passes.pre.len()
        ),
    })
}

/// One step of a chain.
pub trait Transform: std::fmt::Debug + Send + Sync {
    /// Updates the plan; random steps draw from `rng`.
    fn plan(&self, state: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError>;

    /// Whether planning draws from the sample's boxes ([`PlanState::boxes`]), which the
    /// loaders then fetch from the dataset.
    fn needs_boxes(&self) -> bool {
        false
    }
}

/// Steps applied in order.
#[derive(Debug, Default)]
pub struct Compose(pub Vec<Box<dyn Transform>>);

impl Compose {
    /// An empty chain.
    pub fn new() -> Compose {
        Compose(Vec::new())
    }

    /// The chain with `step` appended: `Compose::new().then(Resize..).then(CenterCrop..)`.
    #[must_use]
    pub fn then(mut self, step: impl Transform + 'static) -> Compose {
        self.push(step);
        self
    }

    /// Appends `step`.
    pub fn push(&mut self, step: impl Transform + 'static) {
        self.0.push(Box::new(step));
    }

    /// Appends every step of `other`, in order.
    pub fn extend(&mut self, other: Compose) {
        self.0.extend(other.0);
    }

    /// Steps in the chain.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the chain has no step.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The fused-kernel parameters of the chain for a `width` x `height` image. A chain with
    /// a [`GaussianBlur`](crate::GaussianBlur) needs a pass after the fused kernel, so it is
    /// refused here: plan it with [`Compose::plan_blurred`]; one that is cut into several
    /// passes ([`crate::PrePass`]) is refused too: plan it with [`Compose::plan_post`].
    pub fn plan_image(
        &self,
        width: u32,
        height: u32,
        rng: &mut SampleRng,
    ) -> Result<(FusedOp, OutputSpec), PlanError> {
        let (op, spec, post) = self.plan_post(width, height, rng)?;
        refuse_pre(&post)?;
        if post.blur.is_some() {
            return Err(PlanError::Step {
                step: "GaussianBlur",
                reason: "the blur runs as a pass after the fused kernel, which this consumer \
                         does not launch (plan with Compose::plan_blurred)"
                    .into(),
            });
        }
        if post.noise.is_some() {
            return Err(PlanError::Step {
                step: "GaussianNoise",
                reason: "the noise is added by a pass after the fused kernel, which this \
                         consumer does not launch (plan with Compose::plan_post)"
                    .into(),
            });
        }
        Ok((op, spec))
    }

    /// The chain's plan for a `width` x `height` image: the fused-kernel parameters, the final
    /// output, and the drawn blur if the chain has a [`GaussianBlur`](crate::GaussianBlur).
    /// With a blur, the fused kernel writes [`Blur::fused_spec`](crate::Blur::fused_spec)`
    /// (spec)` (u8 HWC), and the blur pass ([`crate::BlurKernel`], CPU twin
    /// [`crate::blur_image`]) turns it into `spec`.
    pub fn plan_blurred(
        &self,
        width: u32,
        height: u32,
        rng: &mut SampleRng,
    ) -> Result<(FusedOp, OutputSpec, Option<crate::Blur>), PlanError> {
        let (op, spec, post) = self.plan_post(width, height, rng)?;
        refuse_pre(&post)?;
        if post.noise.is_some() {
            return Err(PlanError::Step {
                step: "GaussianNoise",
                reason: "the noise is added by a pass this consumer does not launch (plan \
                         with Compose::plan_post)"
                    .into(),
            });
        }
        Ok((op, spec, post.blur))
    }

    /// The chain's plan with every pass: the final fused pass's parameters and output, and
    /// in [`Passes`] the fused passes before it (where the chain is cut, see
    /// [`crate::PrePass`]; run them with [`crate::FusedKernel::run_passes`], CPU twin
    /// [`crate::cpu::fused_passes`]), the blur (as [`Compose::plan_blurred`]) and the noise,
    /// added in place to the finished float batch ([`crate::BlurKernel::noise`], CPU twin
    /// [`crate::noise_batch`]).
    pub fn plan_post(
        &self,
        width: u32,
        height: u32,
        rng: &mut SampleRng,
    ) -> Result<(FusedOp, OutputSpec, Passes), PlanError> {
        self.plan_with_boxes(width, height, None, rng)
    }

    /// [`Compose::plan_post`] for a sample whose `boxes` (on its `width` x `height` canvas)
    /// steps may draw from ([`Transform::needs_boxes`]: RandomIoUCrop).
    pub fn plan_with_boxes(
        &self,
        width: u32,
        height: u32,
        boxes: Option<&crate::targets::BoundingBoxes>,
        rng: &mut SampleRng,
    ) -> Result<(FusedOp, OutputSpec, Passes), PlanError> {
        let mut st = PlanState::new(width, height);
        st.boxes = boxes.cloned();
        self.plan(&mut st, rng)?;
        if st.width == 0 || st.height == 0 {
            return Err(PlanError::Step {
                step: "chain",
                reason: format!("the output would be {}x{}", st.width, st.height),
            });
        }
        let (op, spec) = st.finish();
        if st.noise.is_some() {
            crate::Noise::check(&spec)?;
        }
        let post = Passes {
            pre: st.pre,
            blur: st.blur,
            noise: st.noise,
            geometry: st.geometry,
        };
        Ok((op, spec, post))
    }
}

impl From<Vec<Box<dyn Transform>>> for Compose {
    fn from(steps: Vec<Box<dyn Transform>>) -> Compose {
        Compose(steps)
    }
}

impl Transform for Compose {
    fn plan(&self, state: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        self.0.iter().try_for_each(|t| t.plan(state, rng))
    }

    fn needs_boxes(&self) -> bool {
        self.0.iter().any(|t| t.needs_boxes())
    }
}

/// Resize, like torchvision's `Resize` (its `size` and `max_size`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resize {
    /// The shorter side becomes this many pixels; the longer keeps the aspect ratio
    /// (truncated, as torchvision does).
    Shorter(u32),
    /// Exactly this width and height.
    Exact(u32, u32),
    /// `Resize(shorter, max_size=max_size)`, the detection recipes' resize: the shorter side
    /// becomes `shorter` unless the longer would then exceed `max_size`, in which case the
    /// longer becomes `max_size` (`max_size` must exceed `shorter`).
    ShorterMax {
        /// The shorter side's target.
        shorter: u32,
        /// The longer side's limit.
        max_size: u32,
    },
    /// `Resize(None, max_size=n)`: the longer side becomes `n`, the aspect ratio kept.
    Longer(u32),
}

impl Resize {
    /// The size (width, height) this resize gives a `width` x `height` image, as
    /// torchvision's `_compute_resized_output_size` computes it.
    pub fn output_size(&self, width: u32, height: u32) -> Result<(u32, u32), PlanError> {
        let (short, long) = (width.min(height), width.max(height));
        let (new_short, new_long) = match *self {
            Resize::Exact(w, h) => return Ok((w, h)),
            Resize::Shorter(s) => (
                s,
                (u64::from(s) * u64::from(long) / u64::from(short.max(1))) as u32,
            ),
            Resize::ShorterMax { shorter, max_size } => {
                if max_size <= shorter {
                    return Err(PlanError::Step {
                        step: "Resize",
                        reason: format!(
                            "max_size {max_size} must exceed the shorter side's {shorter}"
                        ),
                    });
                }
                let new_long = (f64::from(shorter) * f64::from(long) / f64::from(short)) as u32;
                if new_long > max_size {
                    let s = f64::from(max_size) * f64::from(shorter) / f64::from(new_long);
                    (s as u32, max_size)
                } else {
                    (shorter, new_long)
                }
            }
            Resize::Longer(n) => (
                (f64::from(n) * f64::from(short) / f64::from(long)) as u32,
                n,
            ),
        };
        Ok(if width <= height {
            (new_short, new_long)
        } else {
            (new_long, new_short)
        })
    }
}

impl Transform for Resize {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("Resize")?;
        let (w, h) = self.output_size(st.width, st.height)?;
        if w == 0 || h == 0 {
            return Err(PlanError::Step {
                step: "Resize",
                reason: format!("target {w}x{h}"),
            });
        }
        st.resize_current(w, h);
        Ok(())
    }
}

/// Keeps a fixed region (torchvision's `F.crop(top, left, height, width)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CropBox {
    /// Left edge.
    pub left: u32,
    /// Top edge.
    pub top: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Transform for CropBox {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("CropBox")?;
        if self.width == 0
            || self.height == 0
            || self.left + self.width > st.width
            || self.top + self.height > st.height
        {
            return Err(PlanError::Step {
                step: "CropBox",
                reason: format!("{self:?} is not inside a {}x{} image", st.width, st.height),
            });
        }
        st.crop_current(
            self.left as f32,
            self.top as f32,
            self.width as f32,
            self.height as f32,
        );
        Ok(())
    }
}

/// The central region of this size, like torchvision's `CenterCrop` (offsets rounded half to
/// even, as Python's `round`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CenterCrop(pub u32, pub u32);

impl Transform for CenterCrop {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("CenterCrop")?;
        let (w, h) = (self.0, self.1);
        if w == 0 || h == 0 {
            return Err(PlanError::Step {
                step: "CenterCrop",
                reason: format!("size {w}x{h}"),
            });
        }
        if w > st.width || h > st.height {
            // torchvision pads with zeros first, the odd pixel on the right and bottom.
            let (dw, dh) = (w.saturating_sub(st.width), h.saturating_sub(st.height));
            Pad {
                left: dw / 2,
                top: dh / 2,
                right: dw.div_ceil(2),
                bottom: dh.div_ceil(2),
                fill: [0.0; 3],
            }
            .plan(st, rng)?;
        }
        let left = ((st.width - w) as f64 / 2.0).round_ties_even();
        let top = ((st.height - h) as f64 / 2.0).round_ties_even();
        st.crop_current(left as f32, top as f32, w as f32, h as f32);
        Ok(())
    }
}

/// torchvision's `RandomResizedCrop`: a random region of random area and aspect ratio
/// (10 tries, then a central crop clamped to the ratio range), resized to a fixed size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomResizedCrop {
    /// Output width.
    pub width: u32,
    /// Output height.
    pub height: u32,
    /// Range of the region's area as a fraction of the image's (torchvision: 0.08..1).
    pub scale: (f64, f64),
    /// Range of the region's width/height (torchvision: 3/4..4/3).
    pub ratio: (f64, f64),
}

impl RandomResizedCrop {
    /// torchvision's defaults for a `width` x `height` output.
    pub fn new(width: u32, height: u32) -> Self {
        RandomResizedCrop {
            width,
            height,
            scale: (0.08, 1.0),
            ratio: (3.0 / 4.0, 4.0 / 3.0),
        }
    }

    /// The region `(left, top, w, h)` for an image of `iw` x `ih`, as torchvision's
    /// `get_params` computes it.
    pub fn region(&self, iw: u32, ih: u32, rng: &mut SampleRng) -> (u32, u32, u32, u32) {
        let (w_img, h_img) = (f64::from(iw), f64::from(ih));
        let area = w_img * h_img;
        let (lr0, lr1) = (self.ratio.0.ln(), self.ratio.1.ln());
        for _ in 0..10 {
            let target = area * rng.uniform(self.scale.0, self.scale.1);
            let aspect = rng.uniform(lr0, lr1).exp();
            let w = (target * aspect).sqrt().round_ties_even();
            let h = (target / aspect).sqrt().round_ties_even();
            if w > 0.0 && h > 0.0 && w <= w_img && h <= h_img {
                let (w, h) = (w as u32, h as u32);
                let top = rng.below(u64::from(ih - h) + 1) as u32;
                let left = rng.below(u64::from(iw - w) + 1) as u32;
                return (left, top, w, h);
            }
        }
        let in_ratio = w_img / h_img;
        let (w, h) = if in_ratio < self.ratio.0 {
            (iw, (w_img / self.ratio.0).round_ties_even() as u32)
        } else if in_ratio > self.ratio.1 {
            ((h_img * self.ratio.1).round_ties_even() as u32, ih)
        } else {
            (iw, ih)
        };
        ((iw - w) / 2, (ih - h) / 2, w, h)
    }
}

impl Transform for RandomResizedCrop {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        st.begin_geometry("RandomResizedCrop")?;
        let (left, top, w, h) = self.region(st.width, st.height, rng);
        st.crop_current(left as f32, top as f32, w as f32, h as f32);
        Resize::Exact(self.width, self.height).plan(st, rng)
    }
}

/// Mirrors left-right with probability `p`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HorizontalFlip(pub f64);

impl Transform for HorizontalFlip {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if rng.bernoulli(self.0) {
            st.flip(true);
        }
        Ok(())
    }
}

/// Mirrors top-bottom with probability `p`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerticalFlip(pub f64);

impl Transform for VerticalFlip {
    fn plan(&self, st: &mut PlanState, rng: &mut SampleRng) -> Result<(), PlanError> {
        if rng.bernoulli(self.0) {
            st.flip(false);
        }
        Ok(())
    }
}

/// `(value / 255 - mean) / std` per channel (torchvision's `Normalize` after `ToTensor`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalize {
    /// Per-channel mean of values in 0..1.
    pub mean: [f32; 3],
    /// Per-channel standard deviation.
    pub std: [f32; 3],
}

impl Normalize {
    /// ImageNet's per-channel mean and standard deviation, as torchvision's models expect.
    pub const IMAGENET: Normalize = Normalize {
        mean: [0.485, 0.456, 0.406],
        std: [0.229, 0.224, 0.225],
    };
}

impl Transform for Normalize {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.check_after_noise("Normalize")?;
        if self.std.iter().any(|&s| s == 0.0 || !s.is_finite()) {
            return Err(PlanError::Step {
                step: "Normalize",
                reason: format!("std {:?}", self.std),
            });
        }
        for c in 0..3 {
            // Applies after what earlier steps set: out = (v*s + b) / (255 std) - mean / std.
            let k = 1.0 / (255.0 * self.std[c]);
            st.spec.scale[c] *= k;
            st.spec.bias[c] = st.spec.bias[c] * k - self.mean[c] / self.std[c];
        }
        Ok(())
    }
}

/// Output element type and layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToDtype(pub DType, pub Layout);

impl Transform for ToDtype {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        if self.0 == DType::U16 {
            return Err(PlanError::Step {
                step: "ToDtype",
                reason: "uint16 holds raw 10- to 16-bit video samples (P016 frames), not \
                         transformed images: ask for uint8, float16, bfloat16 or float32"
                    .into(),
            });
        }
        st.spec.dtype = self.0;
        st.spec.layout = self.1;
        Ok(())
    }
}

/// The resampling filter of the resize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filter(pub Interp);

impl Transform for Filter {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        // A warp samples with its own filter (nearest or bilinear), and a resize after it
        // starts a new pass, so any filter may follow a warp.
        st.spec.interp = self.0;
        // The chain's resampling filter wherever it stands: the passes cut off before it
        // resize with it too.
        for p in &mut st.pre {
            p.spec.interp = self.0;
        }
        Ok(())
    }
}

/// Channels stored as B, G, R.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToBgr;

impl Transform for ToBgr {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.spec.bgr = !st.spec.bgr;
        Ok(())
    }
}

/// torchvision's `Pad` with a constant fill: `left`, `top`, `right`, `bottom` pixels around the
/// current image. After a resize, a warp or another pad the chain is cut first ([`PrePass`]):
/// torchvision pads the uint8 image it has then.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pad {
    /// Pixels added on the left.
    pub left: u32,
    /// On the top.
    pub top: u32,
    /// On the right.
    pub right: u32,
    /// On the bottom.
    pub bottom: u32,
    /// Value of the new pixels, per RGB channel, 0..255.
    pub fill: [f32; 3],
}

impl Pad {
    /// The value a mask gets where this pad adds pixels, as torchvision fills a `Mask` given
    /// this pad's fill: the fill itself where it is one number, else 0.
    pub fn mask_fill(&self) -> u8 {
        let [r, g, b] = self.fill;
        if r == g && g == b {
            r.round().clamp(0.0, 255.0) as u8
        } else {
            0
        }
    }

    /// Plans this pad with `mask_fill` for masks (RandomCrop's fill for masks; 0 where
    /// torchvision pads masks with zeros whatever the image's fill).
    pub fn plan_with_mask_fill(&self, st: &mut PlanState, mask_fill: u8) -> Result<(), PlanError> {
        st.begin_geometry("Pad")?;
        st.geometry.steps.push(GeoStep::Pad {
            left: self.left,
            top: self.top,
            right: self.right,
            bottom: self.bottom,
            mask_fill,
        });
        if !st.picks_source_pixels() {
            // After a resize, a warp or another pad, torchvision pads the uint8 image.
            st.cut();
        }
        // In a mirrored view, the left padding is the source's right.
        let (l, r) = if st.flip_h {
            (self.right, self.left)
        } else {
            (self.left, self.right)
        };
        let (t, b) = if st.flip_v {
            (self.bottom, self.top)
        } else {
            (self.top, self.bottom)
        };
        let (x, y) = (st.crop.x as i32, st.crop.y as i32);
        let (w, h) = (st.width as i32, st.height as i32);
        let (x0, y0) = (x - l as i32, y - t as i32);
        let (x1, y1) = (x + w + r as i32, y + h + b as i32);
        st.pad = Some(Padding {
            x0,
            y0,
            x1,
            y1,
            valid: (x, y, x + w, y + h),
            fill: self.fill,
        });
        st.crop = Crop {
            x: x0 as f32,
            y: y0 as f32,
            w: (x1 - x0) as f32,
            h: (y1 - y0) as f32,
        };
        st.width += self.left + self.right;
        st.height += self.top + self.bottom;
        Ok(())
    }
}

impl Transform for Pad {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        self.plan_with_mask_fill(st, self.mask_fill())
    }
}

/// One grey channel (torchvision's `Grayscale(1)` weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grey;

impl Transform for Grey {
    fn plan(&self, st: &mut PlanState, _: &mut SampleRng) -> Result<(), PlanError> {
        st.check_after_noise("Grey")?;
        st.spec.grey = true;
        Ok(())
    }
}
