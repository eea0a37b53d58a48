//! The steps `gm.transforms` objects plan into (tuples built by `gm/transforms.py`), as the
//! Rust transform chain that the fused kernel and its CPU twin run.

use gm_cuda::DType;
use gm_transforms::targets::SanitizeBoundingBoxes;
use gm_transforms::{AutoAugment, AutoAugmentPolicy, RandAugment};
use gm_transforms::{BatchMix, ErasingValue, RandomErasing};
use gm_transforms::{
    CenterCrop, ColorJitter, Compose, Filter, FixedSizeCrop, GaussianBlur, GaussianNoise, Grey,
    HorizontalFlip, Interp, Layout, Normalize, Pad, PlanError, RandomAdjustSharpness, RandomAffine,
    RandomAutocontrast, RandomEqualize, RandomGrayscale, RandomInvert, RandomIoUCrop,
    RandomPerspective, RandomPosterize, RandomResizedCrop, RandomRotation, RandomShortestSize,
    RandomSolarize, RandomZoomOut, Resize, ScaleJitter, ToDtype, TrivialAugmentWide, VerticalFlip,
};
use gm_transforms::{RandomCrop, RandomResize};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// `("rand_augment", num_ops, magnitude, num_magnitude_bins, interpolation, fill)`'s arguments.
type RandArgs = (usize, usize, usize, String, Option<[f32; 3]>);

/// The chain for a list of step tuples such as `("resize", w, h)`.
pub(crate) fn compose(steps: &[Bound<'_, PyTuple>]) -> PyResult<Compose> {
    let mut chain = Compose::new();
    for step in steps {
        let kind: String = step.get_item(0)?.extract()?;
        let args = step.get_slice(1, step.len());
        match kind.as_str() {
            "resize" => {
                let (w, h): (u32, u32) = args.extract()?;
                chain.push(Resize::Exact(w, h));
            }
            "resize_shorter" => {
                let (s,): (u32,) = args.extract()?;
                chain.push(Resize::Shorter(s));
            }
            "resize_shorter_max" => {
                let (shorter, max_size): (u32, u32) = args.extract()?;
                chain.push(Resize::ShorterMax { shorter, max_size });
            }
            "resize_longer" => {
                let (n,): (u32,) = args.extract()?;
                chain.push(Resize::Longer(n));
            }
            "random_shortest_size" => {
                let (min_size, max_size): (Vec<u32>, Option<u32>) = args.extract()?;
                let t = RandomShortestSize::new(&min_size, max_size)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(t);
            }
            "random_iou_crop" => {
                let (lo, hi, alo, ahi, options, trials): (f32, f32, f64, f64, Vec<f32>, u32) =
                    args.extract()?;
                chain.push(RandomIoUCrop {
                    scale: (lo, hi),
                    aspect_ratio: (alo, ahi),
                    options,
                    trials,
                });
            }
            "random_crop" => {
                type Args = (u32, u32, [u32; 4], bool, [f32; 3], u8);
                let (width, height, padding, pad_if_needed, fill, mask_fill): Args =
                    args.extract()?;
                chain.push(RandomCrop {
                    width,
                    height,
                    padding,
                    pad_if_needed,
                    fill,
                    mask_fill,
                });
            }
            "random_resize" => {
                let (lo, hi): (u32, u32) = args.extract()?;
                let t =
                    RandomResize::new(lo, hi).map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(t);
            }
            "fixed_size_crop" => {
                let (w, h, fill): (u32, u32, [f32; 3]) = args.extract()?;
                let t = FixedSizeCrop::new(w, h, fill)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(t);
            }
            "random_zoom_out" => {
                let (fill, lo, hi, p): ([f32; 3], f64, f64, f64) = args.extract()?;
                let t = RandomZoomOut::new(fill, (lo, hi), p)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(t);
            }
            "sanitize_boxes" => {
                let (min_size, min_area): (f32, f32) = args.extract()?;
                chain.push(SanitizeBoundingBoxes { min_size, min_area });
            }
            "scale_jitter" => {
                let (w, h, lo, hi): (u32, u32, f64, f64) = args.extract()?;
                let t = ScaleJitter::new((w, h), (lo, hi))
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(t);
            }
            "center_crop" => {
                let (w, h): (u32, u32) = args.extract()?;
                chain.push(CenterCrop(w, h));
            }
            "random_resized_crop" => {
                let (w, h, scale, ratio): (u32, u32, (f64, f64), (f64, f64)) = args.extract()?;
                chain.push(RandomResizedCrop {
                    width: w,
                    height: h,
                    scale,
                    ratio,
                });
            }
            "hflip" => {
                let (p,): (f64,) = args.extract()?;
                chain.push(HorizontalFlip(p));
            }
            "vflip" => {
                let (p,): (f64,) = args.extract()?;
                chain.push(VerticalFlip(p));
            }
            "normalize" => {
                let (mean, std): ([f32; 3], [f32; 3]) = args.extract()?;
                chain.push(Normalize { mean, std });
            }
            "dtype" => {
                let (dtype, layout): (String, String) = args.extract()?;
                chain.push(ToDtype(dtype_named(&dtype)?, layout_named(&layout)?));
            }
            "filter" => {
                let (name,): (String,) = args.extract()?;
                chain.push(Filter(interp_named(&name)?));
            }
            "pad" => {
                let (left, top, right, bottom, fill): (u32, u32, u32, u32, [f32; 3]) =
                    args.extract()?;
                chain.push(Pad {
                    left,
                    top,
                    right,
                    bottom,
                    fill,
                });
            }
            "grey" => chain.push(Grey),
            "color_jitter" => {
                let (brightness, contrast, saturation, hue) = args.extract()?;
                chain.push(ColorJitter {
                    brightness,
                    contrast,
                    saturation,
                    hue,
                });
            }
            "random_grayscale" => chain.push(RandomGrayscale(args.extract::<(f64,)>()?.0)),
            "random_invert" => chain.push(RandomInvert(args.extract::<(f64,)>()?.0)),
            "random_autocontrast" => chain.push(RandomAutocontrast(args.extract::<(f64,)>()?.0)),
            "random_equalize" => chain.push(RandomEqualize(args.extract::<(f64,)>()?.0)),
            "random_solarize" => {
                let (threshold, p): (f64, f64) = args.extract()?;
                chain.push(RandomSolarize { threshold, p });
            }
            "random_adjust_sharpness" => {
                let (sharpness_factor, p): (f64, f64) = args.extract()?;
                chain.push(RandomAdjustSharpness {
                    sharpness_factor,
                    p,
                });
            }
            "random_posterize" => {
                let (bits, p): (u8, f64) = args.extract()?;
                chain.push(RandomPosterize { bits, p });
            }
            "trivial_augment_wide" => {
                let (bins, interp, fill): (usize, String, Option<[f32; 3]>) = args.extract()?;
                let step = TrivialAugmentWide::with(bins, interp_named(&interp)?, fill)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(step);
            }
            "rand_augment" => {
                let (num_ops, magnitude, bins, interp, fill): RandArgs = args.extract()?;
                let step =
                    RandAugment::with(num_ops, magnitude, bins, interp_named(&interp)?, fill)
                        .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(step);
            }
            "auto_augment" => {
                let (policy, interp, fill): (String, String, Option<[f32; 3]>) = args.extract()?;
                let policy = match policy.as_str() {
                    "imagenet" => AutoAugmentPolicy::ImageNet,
                    "cifar10" => AutoAugmentPolicy::Cifar10,
                    "svhn" => AutoAugmentPolicy::Svhn,
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "AutoAugment: unknown policy {other:?}"
                        )));
                    }
                };
                let step = AutoAugment::with(policy, interp_named(&interp)?, fill)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(step);
            }
            "gaussian_blur" => {
                let (kernel, sigma): ((u32, u32), (f64, f64)) = args.extract()?;
                let step = GaussianBlur::new(kernel, sigma)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(step);
            }
            "gaussian_noise" => {
                let (mean, sigma, clip): (f32, f32, bool) = args.extract()?;
                let step = GaussianNoise::new(mean, sigma, clip)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                chain.push(step);
            }
            "random_affine" | "random_rotation" | "random_perspective" => {
                warp_step(&mut chain, &kind, &args)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown transform step {other:?}"
                )));
            }
        }
    }
    Ok(chain)
}

/// `RandomErasing` from its step tuple `("random_erasing", p, scale, ratio, value)`, `value`
/// being `("number", v)`, `("channels", [r, g, b])` or `("random",)`.
pub(crate) fn erasing(step: &Bound<'_, PyTuple>) -> PyResult<RandomErasing> {
    let (p, scale, ratio, value): (f64, (f64, f64), (f64, f64), Bound<'_, PyTuple>) =
        step.get_slice(1, step.len()).extract()?;
    let kind: String = value.get_item(0)?.extract()?;
    let value = match kind.as_str() {
        "number" => ErasingValue::Number(value.get_item(1)?.extract()?),
        "channels" => ErasingValue::PerChannel(value.get_item(1)?.extract()?),
        "random" => ErasingValue::Random,
        other => {
            return Err(PyValueError::new_err(format!(
                "RandomErasing value kind {other:?}"
            )));
        }
    };
    RandomErasing::new(p, scale, ratio, value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// MixUp/CutMix from `(mixup alpha or None, cutmix alpha or None, num_classes)`.
pub(crate) fn batch_mix(spec: &Bound<'_, PyAny>) -> PyResult<BatchMix> {
    let (mixup, cutmix, classes): (Option<f64>, Option<f64>, usize) = spec.extract()?;
    BatchMix::new(mixup, cutmix, classes).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The arguments of `("random_affine", degrees, translate, scale, shear, interpolation, fill,
/// center, mask_fill)`.
type AffineArgs = (
    (f64, f64),
    Option<(f64, f64)>,
    Option<(f64, f64)>,
    Option<Vec<f64>>,
    String,
    [f32; 3],
    Option<(f64, f64)>,
    u8,
);

/// The arguments of `("random_rotation", degrees, interpolation, fill, center, mask_fill)`.
type RotationArgs = ((f64, f64), String, [f32; 3], Option<(f64, f64)>, u8);

/// Appends a warp step: `random_affine` (as [`AffineArgs`]), `random_rotation` (as
/// [`RotationArgs`]), `random_perspective` (distortion_scale, p, interpolation, fill,
/// mask_fill). The argument checks are gm-transforms' (torchvision's).
fn warp_step(
    chain: &mut Compose,
    kind: &str,
    args: &Bound<'_, PyTuple>,
) -> Result<(), Box<dyn std::error::Error>> {
    let warp_interp = |name: &str| -> Result<Interp, PlanError> {
        match name {
            "nearest" => Ok(Interp::Nearest),
            "bilinear" => Ok(Interp::Bilinear),
            other => Err(PlanError::Step {
                step: "warp",
                reason: format!("interpolation {other:?}: warps sample nearest or bilinear"),
            }),
        }
    };
    match kind {
        "random_affine" => {
            let (degrees, translate, scale, shear, interp, fill, center, mask_fill): AffineArgs =
                args.extract()?;
            let mut step = RandomAffine::with_range(degrees)?;
            if let Some((x, y)) = translate {
                step = step.translate(x, y)?;
            }
            if let Some((lo, hi)) = scale {
                step = step.scale(lo, hi)?;
            }
            if let Some(shear) = shear {
                step = step.shear(&shear)?;
            }
            step = step
                .interpolation(warp_interp(&interp)?)?
                .fill(fill)?
                .mask_fill(mask_fill);
            if let Some((x, y)) = center {
                step = step.center(x, y);
            }
            chain.push(step);
        }
        "random_rotation" => {
            let (degrees, interp, fill, center, mask_fill): RotationArgs = args.extract()?;
            let mut step = RandomRotation::with_range(degrees)?
                .interpolation(warp_interp(&interp)?)?
                .fill(fill)?
                .mask_fill(mask_fill);
            if let Some((x, y)) = center {
                step = step.center(x, y);
            }
            chain.push(step);
        }
        _ => {
            let (distortion, p, interp, fill, mask_fill): (f64, f64, String, [f32; 3], u8) =
                args.extract()?;
            let step = RandomPerspective::new(distortion, p)?
                .interpolation(warp_interp(&interp)?)?
                .fill(fill)?
                .mask_fill(mask_fill);
            chain.push(step);
        }
    }
    Ok(())
}

/// A gm element type from its NumPy/PyTorch name.
pub(crate) fn dtype_named(name: &str) -> PyResult<DType> {
    Ok(match name {
        "uint8" => DType::U8,
        "float16" | "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" | "float" => DType::F32,
        other => {
            return Err(PyValueError::new_err(format!(
                "output dtype {other:?}: gm writes uint8, float16, bfloat16 or float32"
            )));
        }
    })
}

fn layout_named(name: &str) -> PyResult<Layout> {
    match name {
        "CHW" | "chw" => Ok(Layout::Chw),
        "HWC" | "hwc" => Ok(Layout::Hwc),
        other => Err(PyValueError::new_err(format!(
            "layout {other:?}: \"CHW\" or \"HWC\""
        ))),
    }
}

fn interp_named(name: &str) -> PyResult<Interp> {
    match name {
        "nearest" | "nearest-exact" => Ok(Interp::Nearest),
        "bilinear" => Ok(Interp::Bilinear),
        "bicubic" => Ok(Interp::Bicubic),
        "antialias" => Ok(Interp::Antialias),
        other => Err(PyValueError::new_err(format!(
            "interpolation {other:?}: gm has nearest, bilinear (with or without antialias) and \
             bicubic"
        ))),
    }
}
