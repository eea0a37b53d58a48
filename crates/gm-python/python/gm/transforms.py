"""Transforms with torchvision's names and arguments, planned into gm's fused kernel.

A list (or ``Compose``) of these is given to ``gm.ImageLoader(transforms=...)``. gm does not
run them one by one: each sample's geometry (crops, resizes, flips, padding), its colour
conversion, normalization and output type are planned on the host and applied by one CUDA
kernel (or its CPU twin) that reads each source pixel once. So a chain reads as in
torchvision::

    from gm import transforms as T
    train = [
        T.RandomResizedCrop(224),
        T.RandomHorizontalFlip(),
        T.ToDtype("float16", scale=True),     # or torch.float16
        T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD),
    ]

Differences from torchvision, all by design of a fused kernel:

* the output is ``uint8`` CHW until a ``ToDtype`` says otherwise, whatever the order of steps;
  ``Normalize`` needs a float ``ToDtype`` somewhere in the chain (torchvision refuses to
  normalize ``uint8`` too);
* one interpolation serves the whole chain: the last ``Resize``/``RandomResizedCrop`` sets it;
* ``antialias`` is honoured for bilinear resizing; bicubic and nearest resize without it;
* ``RandomErasing`` works on the finished image (after ``Normalize``, as torchvision places
  it) and must be the chain's last step; its ``"random"`` noise is standard normal from gm's
  seeded generator, not torch's;
* ``MixUp`` and ``CutMix`` are not steps of the chain: give them to
  ``gm.ImageLoader(mix=...)``, which mixes each batch and delivers the soft labels.
* ``RandomAffine``, ``RandomRotation`` and ``RandomPerspective`` sample with their own
  interpolation (nearest or bilinear). Where torchvision resamples or rounds the uint8 image
  twice (a warp after a resize, two warps, a warp after a colour step, geometry after a colour
  step, two sharpness steps) gm runs the chain as several fused passes, each reading the one
  before's uint8 output, so the result is torchvision's there too (docs/transforms.md,
  "Passes"); ``TrivialAugmentWide``, ``RandAugment`` and ``AutoAugment`` likewise apply their
  operations one after the other.
"""

from __future__ import annotations

import collections.abc
import numbers
import warnings
from enum import Enum
from typing import Any, List, Optional, Sequence, Tuple, Union

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "AutoAugment",
    "AutoAugmentPolicy",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "CutMix",
    "FixedSizeCrop",
    "GaussianBlur",
    "GaussianNoise",
    "Grayscale",
    "InterpolationMode",
    "MixUp",
    "Normalize",
    "PILToTensor",
    "Pad",
    "RandAugment",
    "RandomAdjustSharpness",
    "RandomAffine",
    "RandomAutocontrast",
    "RandomCrop",
    "RandomEqualize",
    "RandomErasing",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomInvert",
    "RandomIoUCrop",
    "RandomZoomOut",
    "RandomPerspective",
    "RandomPosterize",
    "RandomResize",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomShortestSize",
    "RandomSolarize",
    "RandomVerticalFlip",
    "Resize",
    "SanitizeBoundingBoxes",
    "ScaleJitter",
    "ToDtype",
    "ToImage",
    "Transform",
    "TrivialAugmentWide",
]

#: torchvision's ImageNet mean and standard deviation (RGB, for values in 0..1).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

Size = Union[int, Sequence[int]]


class InterpolationMode:
    """The interpolation names torchvision's ``InterpolationMode`` has and gm runs."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


# PIL's integer codes, which torchvision also takes.
_PIL_CODES = {0: "nearest", 2: "bilinear", 3: "bicubic"}


def _interp_name(mode: Any) -> str:
    """A torchvision ``InterpolationMode``, a PIL code or a name, as gm's name."""
    if isinstance(mode, numbers.Integral):
        if int(mode) not in _PIL_CODES:
            raise ValueError(f"interpolation {mode}: gm has nearest (0), bilinear (2), bicubic (3)")
        return _PIL_CODES[int(mode)]
    name = str(getattr(mode, "value", mode)).lower()
    if name not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"interpolation {mode!r}: gm has nearest, bilinear and bicubic")
    return name


def _hw(size: Size, what: str) -> Tuple[int, int]:
    """torchvision's size argument: an int (square) or (height, width)."""
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    seq = list(size)
    if len(seq) == 1:
        return int(seq[0]), int(seq[0])
    if len(seq) == 2:
        return int(seq[0]), int(seq[1])
    raise ValueError(f"{what}: size {size!r} is neither an int nor (height, width)")


def _dtype_name(dtype: Any) -> str:
    """A ``torch.dtype``, a NumPy dtype or type, or a name, as a NumPy-style name."""
    name = getattr(dtype, "__name__", None) or str(dtype)
    name = name.replace("torch.", "")
    aliases = {"half": "float16", "float": "float32", "f2": "float16", "f4": "float32", "u1": "uint8"}
    return aliases.get(name, name)


class Transform:
    """Base class: a step that plans itself into gm's fused chain.

    A step or a ``Compose`` is also callable on images you already hold, like a
    torchvision v2 transform: see ``Transform.__call__``."""

    def _plan(self, plan: "_Planner") -> None:  # pragma: no cover - every step overrides it
        raise NotImplementedError

    def __call__(self, images: Any, targets: Any = None, *, seed: Optional[int] = None,
                 epoch: int = 0, indices: Optional[Sequence[int]] = None) -> Any:
        """Runs the chain on ``images``, each image with its own random draws, in one fused
        launch on the GPU (or the CPU twins for host images): a drop-in for a torchvision v2
        transform after any decoder (torchcodec, DALI, ``gm.decode_images``, user code).

        ``images``: a uint8 torch tensor ``[3, H, W]`` or ``[B, 3, H, W]``, on a GPU or the CPU;
        a list of such ``[3, H, W]`` tensors of different sizes; ``gm.Tensor`` images from
        ``gm.decode_images`` (``[H, W, 3]``), alone or in a list; NumPy ``[H, W, 3]`` or
        ``[B, H, W, 3]`` arrays. The result is one batch ``[B, C, H, W]`` (or channels-last,
        as ``ToDtype`` says) of the chain's output type on the images' device, as a torch tensor
        for torch input, a NumPy array for NumPy input, a ``gm.Tensor`` otherwise; a single
        image in gives a single image out. Where the images come out in different sizes (a
        chain without a fixed-size step, as detection's), the result is a list of images,
        views of one buffer written by the same launch (GaussianBlur, GaussianNoise and
        RandomErasing need one size there).

        ``targets`` (a dict for one image, a list of dicts for several, as torchvision's
        detection references give them): ``"boxes"`` (``[N, 4]``; a ``tv_tensors.BoundingBoxes``
        says its format, a plain tensor is XYXY), ``"masks"`` (``[N, H, W]``), ``"keypoints"``
        (``[N, K, 2]`` with an optional ``"keypoints_visible"`` ``[N, K]``, or ``[N, K, 3]``
        with COCO's visibility) move with their image; the objects a ``SanitizeBoundingBoxes`` or
        ``FixedSizeCrop`` drops go with their ``"labels"``; other entries pass through. The
        call then returns ``(images, targets)``, the targets in the types they came in (torch
        tensors on their device, tv_tensors rewrapped, NumPy arrays).

        Image ``i`` draws from ``(seed, epoch, indices[i])`` exactly as a loader draws for
        dataset sample ``indices[i]``. By default ``seed`` is this transform's ``seed``
        attribute (0 unless set) and ``indices`` continue a running count of the images this
        transform has seen, so each call draws anew and a run is reproducible.
        """
        from ._apply import apply

        if seed is None:
            seed = getattr(self, "seed", 0)
        return apply(self, images, targets, seed=seed, epoch=epoch, indices=indices)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Compose(Transform):
    """Steps applied in order (torchvision's ``Compose``)."""

    def __init__(self, transforms: Sequence[Transform]):
        self.transforms = list(transforms)

    def _plan(self, plan: "_Planner") -> None:
        for t in self.transforms:
            plan.add(t)


class ToImage(Transform):
    """Accepted for recipes written for torchvision; gm's decoder already makes images."""

    def _plan(self, plan: "_Planner") -> None:
        pass


class PILToTensor(ToImage):
    """Accepted for recipes written for torchvision (a no-op here)."""


class Resize(Transform):
    """Resizes to ``size``: an int resizes the shorter side to it (keeping the aspect ratio),
    ``(height, width)`` resizes to exactly that. ``max_size`` caps the longer side of an int
    ``size`` (or, with ``size=None``, resizes the longer side to it), as torchvision does:
    outputs then differ in size, for a loader with ``batch_sizes="padded"`` or ``"ragged"``."""

    def __init__(self, size: Optional[Size], interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: Optional[int] = None, antialias: bool = True):
        single = size is None or isinstance(size, numbers.Integral) or len(list(size)) == 1
        if max_size is not None and not single:
            raise ValueError("Resize: max_size goes with an int size (or None), not (h, w)")
        if size is None and max_size is None:
            raise ValueError("Resize: size=None needs max_size")
        self.size = size
        self.max_size = max_size
        self.interpolation = _interp_name(interpolation)
        self.antialias = bool(antialias)

    def _plan(self, plan: "_Planner") -> None:
        plan.interp(self.interpolation, self.antialias)
        if self.size is None:
            plan.steps.append(("resize_longer", int(self.max_size)))
        elif isinstance(self.size, numbers.Integral) or len(list(self.size)) == 1:
            side = self.size if isinstance(self.size, numbers.Integral) else list(self.size)[0]
            if self.max_size is None:
                plan.steps.append(("resize_shorter", int(side)))
            else:
                plan.steps.append(("resize_shorter_max", int(side), int(self.max_size)))
        else:
            h, w = _hw(self.size, "Resize")
            plan.steps.append(("resize", w, h))


class RandomShortestSize(Transform):
    """torchvision's detection resize: the shorter side drawn from ``min_size`` per sample,
    the longer capped by ``max_size``."""

    def __init__(self, min_size: Union[int, Sequence[int]], max_size: Optional[int] = None,
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool = True):
        sizes = [min_size] if isinstance(min_size, numbers.Integral) else list(min_size)
        self.min_size = [int(v) for v in sizes]
        self.max_size = None if max_size is None else int(max_size)
        self.interpolation = _interp_name(interpolation)
        self.antialias = bool(antialias)

    def _plan(self, plan: "_Planner") -> None:
        plan.interp(self.interpolation, self.antialias)
        plan.steps.append(("random_shortest_size", self.min_size, self.max_size))


class ScaleJitter(Transform):
    """Large-scale jitter: the image fitted into ``target_size`` ``(height, width)``, times a
    scale drawn per sample from ``scale_range``."""

    def __init__(self, target_size: Sequence[int], scale_range: Sequence[float] = (0.1, 2.0),
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool = True):
        self.target = _hw(target_size, "ScaleJitter")
        lo, hi = scale_range
        self.scale_range = (float(lo), float(hi))
        self.interpolation = _interp_name(interpolation)
        self.antialias = bool(antialias)

    def _plan(self, plan: "_Planner") -> None:
        plan.interp(self.interpolation, self.antialias)
        h, w = self.target
        plan.steps.append(("scale_jitter", w, h, *self.scale_range))


class RandomIoUCrop(Transform):
    """torchvision's SSD crop: a crop of random scale and aspect ratio whose overlap with a box
    whose centre it holds reaches a drawn threshold (or no crop); boxes whose centre it leaves
    become zeros for a later ``SanitizeBoundingBoxes``. It draws from each sample's boxes, so
    the loader's source must have targets (``gm.CocoDataset``)."""

    def __init__(self, min_scale: float = 0.3, max_scale: float = 1.0,
                 min_aspect_ratio: float = 0.5, max_aspect_ratio: float = 2.0,
                 sampler_options: Optional[Sequence[float]] = None, trials: int = 40):
        self.scale = (float(min_scale), float(max_scale))
        self.aspect = (float(min_aspect_ratio), float(max_aspect_ratio))
        opts = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None else sampler_options
        self.options = [float(o) for o in opts]
        self.trials = int(trials)

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(("random_iou_crop", *self.scale, *self.aspect, self.options,
                           self.trials))


class RandomZoomOut(Transform):
    """torchvision's ``RandomZoomOut`` (SSD's expand): with probability ``p``, the image on a
    canvas ``side_range`` times its sides (drawn), at a random place, the rest ``fill``
    (a value or RGB triple, 0..255); boxes, masks and keypoints move with it."""

    def __init__(self, fill: Any = 0, side_range: Sequence[float] = (1.0, 4.0), p: float = 0.5):
        lo, hi = (float(v) for v in side_range)
        if not (1.0 <= lo <= hi) or not (0.0 <= p <= 1.0):
            raise ValueError(f"RandomZoomOut: side_range {tuple(side_range)} (1 <= lo <= hi), p {p}")
        self.fill = _fill3(fill, "RandomZoomOut")
        self.side_range = (lo, hi)
        self.p = float(p)

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(("random_zoom_out", self.fill, *self.side_range, self.p))


class FixedSizeCrop(Transform):
    """The detection references' FixedSizeCrop (large-scale jitter): a random ``size``
    ``(height, width)`` window of a larger image, objects it leaves empty dropped, a smaller
    image padded right and below with ``fill``."""

    def __init__(self, size: Size, fill: Any = 0, padding_mode: str = "constant"):
        if padding_mode != "constant":
            raise NotImplementedError(f"FixedSizeCrop(padding_mode={padding_mode!r}): gm pads "
                                      "with a constant")
        self.size = _hw(size, "FixedSizeCrop")
        self.fill = _fill3(fill, "FixedSizeCrop")

    def _plan(self, plan: "_Planner") -> None:
        h, w = self.size
        plan.steps.append(("fixed_size_crop", w, h, self.fill))


class SanitizeBoundingBoxes(Transform):
    """torchvision's filter of degenerate boxes (smaller than ``min_size`` or ``min_area``, or
    outside the canvas): their objects are dropped from the batch's targets with their labels,
    masks and keypoints. The pixels do not change."""

    def __init__(self, min_size: float = 1.0, min_area: float = 1.0, labels_getter: Any = "default"):
        if labels_getter not in ("default", None):
            raise NotImplementedError("SanitizeBoundingBoxes: gm drops each object's labels, "
                                      "masks and keypoints with its box (labels_getter='default')")
        self.min_size = float(min_size)
        self.min_area = float(min_area)

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(("sanitize_boxes", self.min_size, self.min_area))


class CenterCrop(Transform):
    """Crops the centre ``size`` (an int or ``(height, width)``), padding with zeros where the
    image is smaller, as torchvision does."""

    def __init__(self, size: Size):
        self.size = size

    def _plan(self, plan: "_Planner") -> None:
        h, w = _hw(self.size, "CenterCrop")
        plan.steps.append(("center_crop", w, h))


class RandomResizedCrop(Transform):
    """A random crop of ``scale`` of the area and ``ratio`` aspect, resized to ``size``; drawn
    per sample from (seed, epoch, index) with torchvision's algorithm."""

    def __init__(self, size: Size, scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool = True):
        self.size = size
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.interpolation = _interp_name(interpolation)
        self.antialias = bool(antialias)

    def _plan(self, plan: "_Planner") -> None:
        h, w = _hw(self.size, "RandomResizedCrop")
        plan.interp(self.interpolation, self.antialias)
        plan.steps.append(("random_resized_crop", w, h, self.scale, self.ratio))


class RandomHorizontalFlip(Transform):
    """Mirrors left-right with probability ``p``."""

    def __init__(self, p: float = 0.5):
        self.p = float(p)

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(("hflip", self.p))


class RandomVerticalFlip(Transform):
    """Flips upside down with probability ``p``."""

    def __init__(self, p: float = 0.5):
        self.p = float(p)

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(("vflip", self.p))


class Pad(Transform):
    """Pads with a constant ``fill`` (a value or an RGB triple, 0..255): ``padding`` is an int
    (all sides), ``(left/right, top/bottom)`` or ``(left, top, right, bottom)``."""

    def __init__(self, padding: Union[int, Sequence[int]], fill: Union[float, Sequence[float]] = 0,
                 padding_mode: str = "constant"):
        if padding_mode != "constant":
            raise NotImplementedError(f"Pad(padding_mode={padding_mode!r}): gm pads with a constant")
        self.padding = padding
        self.fill = fill

    def _plan(self, plan: "_Planner") -> None:
        l, t, r, b = _padding4(self.padding, "Pad")
        fill = [float(self.fill)] * 3 if isinstance(self.fill, numbers.Number) else [float(x) for x in self.fill]
        if len(fill) != 3:
            raise ValueError(f"Pad: fill {self.fill!r} is a value or three")
        plan.steps.append(("pad", l, t, r, b, fill))


def _padding4(padding: Union[int, Sequence[int]], what: str) -> Tuple[int, int, int, int]:
    """torchvision's padding argument as (left, top, right, bottom)."""
    p = [padding] if isinstance(padding, numbers.Integral) else list(padding)
    if len(p) == 1:
        return (int(p[0]),) * 4
    if len(p) == 2:
        return int(p[0]), int(p[1]), int(p[0]), int(p[1])
    if len(p) == 4:
        l, t, r, b = (int(x) for x in p)
        return l, t, r, b
    raise ValueError(f"{what}: padding {padding!r} has 1, 2 or 4 values")


def _split_fill(fill: Any, what: str) -> Tuple[List[float], int]:
    """torchvision's fill: a value, an RGB triple, or a dict by type (``{tv_tensors.Mask: 255,
    "others": 0}``), as the image's fill and the masks' (a value or the dict's Mask entry)."""
    if isinstance(fill, dict):
        def named(key: Any) -> str:
            return key if isinstance(key, str) else getattr(key, "__name__", str(key))
        by_name = {named(k): v for k, v in fill.items()}
        image = by_name.get("Image", by_name.get("others", 0))
        mask = by_name.get("Mask", by_name.get("others", 0))
        return _fill3(image, what), int(mask or 0)
    rgb = _fill3(fill, what)
    return rgb, int(rgb[0]) if rgb[0] == rgb[1] == rgb[2] else 0


class RandomCrop(Transform):
    """torchvision's RandomCrop: a ``size`` ``(height, width)`` window at a random place,
    after ``padding`` (and with ``pad_if_needed``, padding both sides of a short axis);
    ``fill`` as torchvision takes it, including ``{tv_tensors.Mask: 255, "others": 0}`` for a
    segmentation's ignore index in its masks."""

    def __init__(self, size: Size, padding: Optional[Union[int, Sequence[int]]] = None,
                 pad_if_needed: bool = False, fill: Any = 0, padding_mode: str = "constant"):
        if padding_mode != "constant":
            raise NotImplementedError(f"RandomCrop(padding_mode={padding_mode!r}): gm pads with "
                                      "a constant")
        self.size = _hw(size, "RandomCrop")
        self.padding = (0, 0, 0, 0) if padding is None else _padding4(padding, "RandomCrop")
        self.pad_if_needed = bool(pad_if_needed)
        self.fill, self.mask_fill = _split_fill(fill, "RandomCrop")

    def _plan(self, plan: "_Planner") -> None:
        h, w = self.size
        plan.steps.append(("random_crop", w, h, list(self.padding), self.pad_if_needed,
                           self.fill, self.mask_fill))


class RandomResize(Transform):
    """torchvision's RandomResize: the shorter side drawn from ``min_size..max_size`` (the
    upper end excluded), the aspect ratio kept."""

    def __init__(self, min_size: int, max_size: int,
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool = True):
        self.min_size, self.max_size = int(min_size), int(max_size)
        self.interpolation = _interp_name(interpolation)
        self.antialias = bool(antialias)

    def _plan(self, plan: "_Planner") -> None:
        plan.interp(self.interpolation, self.antialias)
        plan.steps.append(("random_resize", self.min_size, self.max_size))


class Grayscale(Transform):
    """One grey channel (torchvision's weights 0.2989, 0.587, 0.114)."""

    def __init__(self, num_output_channels: int = 1):
        if num_output_channels != 1:
            raise NotImplementedError("Grayscale(num_output_channels=3) is not supported by gm")
        self.num_output_channels = 1

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(("grey",))


def _jitter_range(value: Any, name: str, center: float = 1.0, bound: Tuple[float, float] = (0.0, float("inf")),
                  clip_first_on_zero: bool = True) -> Union[Tuple[float, float], None]:
    """torchvision's ``ColorJitter._check_input``: a number x is ``center -+ x``, a pair is the
    range; ``None`` when the range is just the centre."""
    if value is None:
        return None
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        lo, hi = center - float(value), center + float(value)
        if clip_first_on_zero:
            lo = max(lo, 0.0)
    elif isinstance(value, collections.abc.Sequence) and len(value) == 2:
        lo, hi = (float(v) for v in value)
    else:
        raise TypeError(f"{name}={value} should be a single number or a sequence with length 2.")
    if not bound[0] <= lo <= hi <= bound[1]:
        raise ValueError(f"{name} values should be between {bound} and increasing, but got {[lo, hi]}.")
    return None if lo == hi == center else (lo, hi)


class _Colour(Transform):
    """A photometric step: gm applies it to the uint8 image after the geometry, with
    torchvision's uint8 arithmetic, so it must come before ``ToDtype(float)`` and ``Normalize``
    (torchvision's float path rounds differently)."""

    def _step(self) -> tuple:  # pragma: no cover - every step overrides it
        raise NotImplementedError

    def _plan(self, plan: "_Planner") -> None:
        if plan.floating or plan.normalized:
            raise ValueError(
                f"{type(self).__name__}: gm's colour steps work on uint8 images; put them before "
                "ToDtype(float) and Normalize"
            )
        plan.steps.append(self._step())


class ColorJitter(_Colour):
    """Brightness, contrast, saturation and hue factors drawn per sample (torchvision's ranges),
    applied in a random order."""

    def __init__(self, brightness: Any = None, contrast: Any = None, saturation: Any = None, hue: Any = None):
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0.0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def _step(self) -> tuple:
        return ("color_jitter", self.brightness, self.contrast, self.saturation, self.hue)


class _RandomColour(_Colour):
    """A colour operation applied with probability ``p``."""

    _name = ""

    def __init__(self, p: float = 0.5):
        self.p = float(p)

    def _step(self) -> tuple:
        return (self._name, self.p)


class RandomGrayscale(_RandomColour):
    """With probability ``p`` (default 0.1), every channel becomes the pixel's grey."""

    _name = "random_grayscale"

    def __init__(self, p: float = 0.1):
        super().__init__(p)


class RandomInvert(_RandomColour):
    """With probability ``p``, ``255 - v``."""

    _name = "random_invert"


class RandomAutocontrast(_RandomColour):
    """With probability ``p``, each channel stretched from its min..max to 0..255."""

    _name = "random_autocontrast"


class RandomEqualize(_RandomColour):
    """With probability ``p``, each channel's histogram equalized."""

    _name = "random_equalize"


class RandomSolarize(_Colour):
    """With probability ``p``, values at or above ``threshold`` (0..255) are inverted."""

    def __init__(self, threshold: float, p: float = 0.5):
        self.threshold = float(threshold)
        self.p = float(p)

    def _step(self) -> tuple:
        return ("random_solarize", self.threshold, self.p)


class RandomAdjustSharpness(_Colour):
    """With probability ``p``, blends with the 3x3 smoothed image by ``sharpness_factor``
    (0 blurs, 1 keeps, 2 sharpens)."""

    def __init__(self, sharpness_factor: float, p: float = 0.5):
        self.sharpness_factor = float(sharpness_factor)
        if self.sharpness_factor < 0:
            raise ValueError("sharpness_factor should be non-negative")
        self.p = float(p)

    def _step(self) -> tuple:
        return ("random_adjust_sharpness", self.sharpness_factor, self.p)


class GaussianBlur(Transform):
    """torchvision's ``GaussianBlur(kernel_size, sigma=(0.1, 2.0))``: a Gaussian kernel of
    ``kernel_size`` (an odd int, or (width, height)), sigma drawn uniformly from ``sigma`` (a
    number, or (min, max)) per sample, reflect padding, on the uint8 image. gm runs it after
    the fused pass, so it comes after the geometry and colour steps and before ``ToDtype`` to
    floats and ``Normalize``; once per chain."""

    def __init__(self, kernel_size: Size, sigma: Any = (0.1, 2.0)):
        if isinstance(kernel_size, numbers.Integral):
            ks = (int(kernel_size), int(kernel_size))
        elif isinstance(kernel_size, collections.abc.Sequence) and len(kernel_size) in (1, 2):
            ks = (int(kernel_size[0]), int(kernel_size[-1]))
        else:
            raise ValueError("Kernel size should be a tuple/list of two integers")
        if any(k <= 0 or k % 2 == 0 for k in ks):
            raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Real):
            s = (float(sigma), float(sigma))
        elif isinstance(sigma, collections.abc.Sequence) and len(sigma) in (1, 2):
            s = (float(sigma[0]), float(sigma[-1]))
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        if not 0.0 < s[0] <= s[1]:
            raise ValueError(f"sigma values should be positive and of the form (min, max). Got {list(s)}")
        self.kernel_size = ks
        self.sigma = s

    def _plan(self, plan: "_Planner") -> None:
        if plan.floating or plan.normalized:
            raise ValueError(
                "GaussianBlur: gm blurs the uint8 image; put it before ToDtype(float) and Normalize"
            )
        plan.steps.append(("gaussian_blur", self.kernel_size, self.sigma))


class GaussianNoise(Transform):
    """torchvision's ``GaussianNoise(mean=0.0, sigma=0.1, clip=True)`` on a float image:
    ``x + mean + sigma * n`` (n standard normal, gm's own generator), clamped to 0..1 with
    ``clip``. gm adds it to the finished output, so it is the chain's last step (before
    ``RandomErasing``) and needs a float ``ToDtype`` before it."""

    def __init__(self, mean: float = 0.0, sigma: float = 0.1, clip: bool = True):
        self.mean = float(mean)
        self.sigma = float(sigma)
        self.clip = bool(clip)
        if self.sigma < 0:
            raise ValueError(f"sigma shouldn't be negative. Got {self.sigma}")

    def _plan(self, plan: "_Planner") -> None:
        if not plan.floating:
            raise ValueError(
                "GaussianNoise: gm adds the noise to a float output; add "
                "ToDtype(torch.float32, scale=True) before it"
            )
        plan.noise = ("gaussian_noise", self.mean, self.sigma, self.clip)


class RandomPosterize(_Colour):
    """With probability ``p``, only the top ``bits`` bits of each value are kept."""

    def __init__(self, bits: int, p: float = 0.5):
        self.bits = int(bits)
        self.p = float(p)

    def _step(self) -> tuple:
        return ("random_posterize", self.bits, self.p)


def _setup_angle(value: Any, name: str, req_sizes: Tuple[int, ...] = (2,)) -> List[float]:
    """torchvision's ``_setup_angle``: a number ``d`` is ``(-d, d)`` and must be non-negative,
    a sequence must have one of ``req_sizes`` lengths."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(value), float(value)]
    seq = [float(v) for v in value]
    if len(seq) not in req_sizes:
        raise ValueError(f"If {name} is a sequence its length should be one of {req_sizes}.")
    return seq


def _pair(value: Any, name: str) -> Tuple[float, float]:
    seq = [float(v) for v in value]
    if len(seq) != 2:
        raise ValueError(f"{name} should be a sequence of length 2.")
    return seq[0], seq[1]


def _fill3(fill: Any, name: str) -> List[float]:
    """A fill value or RGB triple (0..255) as three floats."""
    if fill is None:
        return [0.0, 0.0, 0.0]
    if isinstance(fill, numbers.Number):
        return [float(fill)] * 3
    seq = [float(v) for v in fill]
    if len(seq) == 1:
        seq *= 3
    if len(seq) != 3:
        raise ValueError(f"{name}: fill {fill!r} is a value or three")
    return seq


def _warp_interp(mode: Any, name: str) -> str:
    interp = _interp_name(mode)
    if interp not in ("nearest", "bilinear"):
        raise ValueError(f"{name}: interpolation {interp!r}; gm's warps (as torchvision's) take nearest or bilinear")
    return interp


class _Warp(Transform):
    """An affine or perspective warp (or a policy that may draw one), sampled with its own
    interpolation (images that draw no warp keep the chain's)."""

    interpolation = "nearest"

    def _step(self) -> tuple:  # pragma: no cover - every step overrides it
        raise NotImplementedError

    def _plan(self, plan: "_Planner") -> None:
        plan.steps.append(self._step())


class RandomAffine(_Warp):
    """torchvision's ``RandomAffine``: rotation in ``degrees``, then (when given) a translation
    up to ``translate`` of the size (whole pixels), a scale in ``scale``, shears in degrees; drawn
    per sample in torchvision's order; pixels from outside the image read ``fill`` (as
    torchvision takes it: ``{tv_tensors.Mask: 255, "others": 0}`` fills masks with 255)."""

    def __init__(self, degrees: Any, translate: Any = None, scale: Any = None, shear: Any = None,
                 interpolation: Any = InterpolationMode.NEAREST, fill: Any = 0, center: Any = None):
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        self.translate = None
        if translate is not None:
            self.translate = _pair(translate, "translate")
            if not all(0.0 <= t <= 1.0 for t in self.translate):
                raise ValueError("translation values should be between 0 and 1")
        self.scale = None
        if scale is not None:
            self.scale = _pair(scale, "scale")
            if any(s <= 0 for s in self.scale):
                raise ValueError("scale values should be positive")
        self.shear = None if shear is None else _setup_angle(shear, "shear", (2, 4))
        self.interpolation = _warp_interp(interpolation, "RandomAffine")
        self.fill, self.mask_fill = _split_fill(fill, "RandomAffine")
        self.center = None if center is None else _pair(center, "center")

    def _step(self) -> tuple:
        return ("random_affine", tuple(self.degrees), self.translate, self.scale, self.shear,
                self.interpolation, self.fill, self.center, self.mask_fill)


class RandomRotation(_Warp):
    """torchvision's ``RandomRotation`` (``expand=False`` only): an angle in ``degrees`` per
    sample, counter-clockwise about ``center`` (the image centre by default)."""

    def __init__(self, degrees: Any, interpolation: Any = InterpolationMode.NEAREST, expand: bool = False,
                 center: Any = None, fill: Any = 0):
        if expand:
            raise NotImplementedError("RandomRotation(expand=True) is not supported by gm")
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        self.interpolation = _warp_interp(interpolation, "RandomRotation")
        self.expand = False
        self.center = None if center is None else _pair(center, "center")
        self.fill, self.mask_fill = _split_fill(fill, "RandomRotation")

    def _step(self) -> tuple:
        return ("random_rotation", tuple(self.degrees), self.interpolation, self.fill, self.center,
                self.mask_fill)


class RandomPerspective(_Warp):
    """torchvision's ``RandomPerspective``: with probability ``p``, each corner moves inwards by
    up to ``distortion_scale`` of half the size."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5,
                 interpolation: Any = InterpolationMode.BILINEAR, fill: Any = 0):
        if not 0 <= distortion_scale <= 1:
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale = float(distortion_scale)
        self.p = float(p)
        self.interpolation = _warp_interp(interpolation, "RandomPerspective")
        self.fill, self.mask_fill = _split_fill(fill, "RandomPerspective")

    def _step(self) -> tuple:
        return ("random_perspective", self.distortion_scale, self.p, self.interpolation, self.fill,
                self.mask_fill)


class TrivialAugmentWide(_Warp):
    """torchvision's ``TrivialAugmentWide``: per sample, one of its 14 operations (shears,
    translations, rotation, brightness, colour, contrast, sharpness, posterize, solarize,
    autocontrast, equalize, identity) with a magnitude from ``num_magnitude_bins`` bins and a
    random sign, drawn in torchvision's order."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation: Any = InterpolationMode.NEAREST,
                 fill: Any = None):
        self.num_magnitude_bins = int(num_magnitude_bins)
        if self.num_magnitude_bins < 2:
            raise ValueError("num_magnitude_bins should be at least 2")
        self.interpolation = _warp_interp(interpolation, "TrivialAugmentWide")
        self.fill = None if fill is None else _fill3(fill, "TrivialAugmentWide")

    def _step(self) -> tuple:
        return ("trivial_augment_wide", self.num_magnitude_bins, self.interpolation, self.fill)


class RandAugment(_Warp):
    """torchvision's ``RandAugment``: per sample, ``num_ops`` operations of its 14 in sequence,
    each with bin ``magnitude`` of ``num_magnitude_bins`` and a random sign, drawn in
    torchvision's order, each applied to the previous one's result as torchvision does."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: Any = InterpolationMode.NEAREST, fill: Any = None):
        if not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"num_ops should be a non-negative integer, but got {num_ops} instead.")
        self.num_ops = num_ops
        self.magnitude = int(magnitude)
        self.num_magnitude_bins = int(num_magnitude_bins)
        if not 0 <= self.magnitude < self.num_magnitude_bins:
            raise ValueError(f"magnitude {magnitude} is not a bin of num_magnitude_bins {num_magnitude_bins}")
        self.interpolation = _warp_interp(interpolation, "RandAugment")
        self.fill = None if fill is None else _fill3(fill, "RandAugment")

    def _step(self) -> tuple:
        return ("rand_augment", self.num_ops, self.magnitude, self.num_magnitude_bins, self.interpolation,
                self.fill)


class AutoAugmentPolicy(Enum):
    """torchvision's ``AutoAugmentPolicy`` (its members, or their values, are accepted too)."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


class AutoAugment(_Warp):
    """torchvision's ``AutoAugment``: per sample, one of the policy's 25 sub-policies, each of
    its two operations applied with its probability, magnitudes from 10 bins with a random sign,
    drawn in torchvision's order, applied one after the other like ``RandAugment``'s."""

    def __init__(self, policy: Any = AutoAugmentPolicy.IMAGENET, interpolation: Any = InterpolationMode.NEAREST,
                 fill: Any = None):
        value = getattr(policy, "value", policy)
        if value not in ("imagenet", "cifar10", "svhn"):
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy = AutoAugmentPolicy(value)
        self.interpolation = _warp_interp(interpolation, "AutoAugment")
        self.fill = None if fill is None else _fill3(fill, "AutoAugment")

    def _step(self) -> tuple:
        return ("auto_augment", self.policy.value, self.interpolation, self.fill)


class ToDtype(Transform):
    """The output's element type (``torch.float16``, ``"float32"``, ``numpy.uint8``, ...);
    ``scale=True`` maps 0..255 to 0..1 as torchvision does. ``layout`` ("CHW" or "HWC") is
    gm's: the memory order of each image."""

    def __init__(self, dtype: Any, scale: bool = False, layout: str = "CHW"):
        self.dtype = _dtype_name(dtype)
        self.scale = bool(scale)
        self.layout = layout

    def _plan(self, plan: "_Planner") -> None:
        floating = self.dtype != "uint8"
        if self.scale and floating and not plan.floating:
            plan.affine(1.0 / 255.0, 0.0)
        plan.floating = floating
        plan.dtype = (self.dtype, self.layout)


class Normalize(Transform):
    """``(x - mean) / std`` per channel, on the values the chain has at that point (0..1 after
    ``ToDtype(..., scale=True)``)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False):
        self.mean = [float(m) for m in mean]
        self.std = [float(s) for s in std]
        if len(self.mean) == 1:
            self.mean *= 3
        if len(self.std) == 1:
            self.std *= 3
        if len(self.mean) != 3 or len(self.std) != 3:
            raise ValueError("Normalize: mean and std have one or three values")
        if any(s == 0 for s in self.std):
            raise ValueError(f"Normalize: std {self.std} has a zero")

    def _plan(self, plan: "_Planner") -> None:
        plan.normalized = True
        plan.scale = [a / s for a, s in zip(plan.scale, self.std)]
        plan.bias = [(b - m) / s for b, m, s in zip(plan.bias, self.mean, self.std)]


class RandomErasing(Transform):
    """torchvision's ``RandomErasing``: with probability ``p``, a rectangle of ``scale`` of the
    area and aspect ratio in ``ratio`` set to ``value`` (a number, one per channel, or
    ``"random"`` for standard normal noise), in the output's values (after ``Normalize``).
    Drawn per sample from the loader's seed (in ``gm.ClipLoader``, once per clip: every frame
    loses the same rectangle, as torchvision erases a video); the chain's last step.
    ``inplace`` is accepted and has no effect (gm always writes the batch in place)."""

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33),
                 ratio: Sequence[float] = (0.3, 3.3), value: Any = 0.0, inplace: bool = False):
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("RandomErasing: value should be a number, a sequence or 'random'")
        if isinstance(value, str) and value != "random":
            raise ValueError("RandomErasing: a str value should be 'random'")
        if isinstance(value, (tuple, list)) and len(value) not in (1, 3):
            raise ValueError("RandomErasing: value has one or three numbers")
        if len(scale) != 2 or len(ratio) != 2:
            raise ValueError("RandomErasing: scale and ratio are (min, max)")
        self.p = float(p)
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.value = value
        self.inplace = inplace

    def _plan(self, plan: "_Planner") -> None:
        if isinstance(self.value, str):
            value: tuple = ("random",)
        elif isinstance(self.value, (tuple, list)):
            vals = [float(v) for v in self.value]
            value = ("number", vals[0]) if len(vals) == 1 else ("channels", vals)
        else:
            value = ("number", float(self.value))
        plan.erasing = ("random_erasing", self.p, self.scale, self.ratio, value)


class _BatchMix:
    """MixUp/CutMix's arguments (torchvision's); given to ``gm.ImageLoader(mix=...)``."""

    _kind = ""

    def __init__(self, *, alpha: float = 1.0, num_classes: Union[int, None] = None,
                 labels_getter: Any = "default"):
        if labels_getter != "default":
            raise ValueError(f"{type(self).__name__}: gm's loader delivers the labels itself")
        if num_classes is None:
            raise ValueError(f"{type(self).__name__}: num_classes must be given (gm's labels are class indices)")
        self.alpha = float(alpha)
        self.num_classes = int(num_classes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(alpha={self.alpha}, num_classes={self.num_classes})"


class MixUp(_BatchMix):
    """torchvision's ``MixUp``: each image blended with the one before it in the batch, weight
    ``lambda ~ Beta(alpha, alpha)`` drawn per batch; labels become soft targets."""

    _kind = "mixup"


class CutMix(_BatchMix):
    """torchvision's ``CutMix``: a box of each image replaced by the one before it in the
    batch, its size from ``lambda ~ Beta(alpha, alpha)``; soft targets weighted by the areas."""

    _kind = "cutmix"


def _plan_mix(mix: Any) -> Union[Tuple[Any, Any, int], None]:
    """``(mixup alpha or None, cutmix alpha or None, num_classes)`` for ``ImageLoader(mix=)``:
    a MixUp, a CutMix, or a list of both (one picked per batch, as torchvision's
    ``RandomChoice([MixUp(...), CutMix(...)])``)."""
    if mix is None:
        return None
    items = list(mix) if isinstance(mix, (list, tuple)) else [mix]
    if not items or not all(isinstance(m, _BatchMix) for m in items):
        raise TypeError("mix: a gm.transforms.MixUp, a CutMix, or a list of one of each")
    kinds = [m._kind for m in items]
    if len(set(kinds)) != len(kinds):
        raise ValueError("mix: at most one MixUp and one CutMix")
    classes = {m.num_classes for m in items}
    if len(classes) != 1:
        raise ValueError(f"mix: MixUp and CutMix disagree on num_classes {sorted(classes)}")
    alpha = {m._kind: m.alpha for m in items}
    return (alpha.get("mixup"), alpha.get("cutmix"), classes.pop())


class _Planner:
    """Folds a chain into gm's steps: geometry in order, then one interpolation, one affine
    map of the 0..255 values and one output type."""

    def __init__(self) -> None:
        self.steps: List[tuple] = []
        self.filter: Union[str, None] = None
        self.scale = [1.0, 1.0, 1.0]
        self.bias = [0.0, 0.0, 0.0]
        self.floating = False
        self.normalized = False
        self.dtype: Union[Tuple[str, str], None] = None
        self.erasing: Union[tuple, None] = None
        self.noise: Union[tuple, None] = None

    def add(self, t: Any) -> None:
        if self.erasing is not None and not isinstance(t, (list, tuple, Compose, ToImage)):
            raise ValueError(
                f"{type(t).__name__} after RandomErasing: gm erases the finished image, so "
                "RandomErasing must be the chain's last step"
            )
        if (
            self.noise is not None
            and self.erasing is None
            and not isinstance(t, (list, tuple, Compose, ToImage, RandomErasing))
        ):
            raise ValueError(
                f"{type(t).__name__} after GaussianNoise: gm adds the noise to the finished "
                "image, so GaussianNoise must be the chain's last step (RandomErasing may follow)"
            )
        if isinstance(t, _BatchMix):
            raise TypeError(
                f"{type(t).__name__} works on batches: give it to gm.ImageLoader(mix=...)"
            )
        if isinstance(t, Transform):
            t._plan(self)
        elif isinstance(t, (list, tuple)):
            for x in t:
                self.add(x)
        else:
            raise TypeError(
                f"{type(t).__name__} is not a gm transform: use gm.transforms "
                "(torchvision's names and arguments)"
            )

    def interp(self, name: str, antialias: bool) -> None:
        if name == "bilinear" and antialias:
            name = "antialias"
        elif antialias and name == "bicubic":
            warnings.warn("gm resizes bicubic without antialiasing", stacklevel=4)
        if self.filter is not None and self.filter != name:
            warnings.warn(
                f"gm runs one interpolation per chain: {name} replaces {self.filter}", stacklevel=4
            )
        self.filter = name

    def affine(self, scale: float, bias: float) -> None:
        self.scale = [a * scale for a in self.scale]
        self.bias = [b * scale + bias for b in self.bias]

    def finish(self) -> List[tuple]:
        out = list(self.steps)
        if self.filter is not None:
            out.append(("filter", self.filter))
        identity = self.scale == [1.0, 1.0, 1.0] and self.bias == [0.0, 0.0, 0.0]
        if not identity:
            if not self.floating:
                raise ValueError(
                    "Normalize needs a float output: add ToDtype(torch.float32, scale=True) "
                    "(or float16/bfloat16) to the chain"
                )
            # gm's normalize maps v in 0..255 to (v / 255 - mean) / std.
            std = [1.0 / (255.0 * a) for a in self.scale]
            mean = [-b * s for b, s in zip(self.bias, std)]
            out.append(("normalize", mean, std))
        # torchvision's images are CHW uint8 until a ToDtype says otherwise.
        dtype, layout = self.dtype or ("uint8", "CHW")
        out.append(("dtype", dtype, layout))
        if self.noise is not None:
            out.append(self.noise)
        if self.erasing is not None:
            out.append(self.erasing)
        return out


def _plan(transforms: Any) -> List[tuple]:
    """The fused chain's steps for a transform, a list of them or a ``Compose``."""
    p = _Planner()
    p.add(transforms)
    return p.finish()
