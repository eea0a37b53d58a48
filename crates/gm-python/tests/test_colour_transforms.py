"""gm.transforms' colour steps (torchvision's names and arguments) on the CPU path: the
loader's pixels against torchvision's uint8 formulas applied with NumPy to the same crop."""

import numpy as np
import pytest

import gm
from gm import transforms as T

CROP = [T.CenterCrop(16)]


def images(folder, steps, **kw):
    """Every image of the folder through ``steps``, in one batch, as NumPy."""
    loader = gm.ImageLoader(str(folder), batch_size=32, transforms=steps, device="cpu", **kw)
    return np.concatenate([np.from_dlpack(b.images).copy() for b in loader])


def test_point_operations_follow_torchvision_formulas(good_folder, no_dist_env):
    plain = images(good_folder, CROP)
    assert plain.std() > 10, "real photos, not a flat image"
    np.testing.assert_array_equal(images(good_folder, CROP + [T.RandomInvert(p=1.0)]), 255 - plain)
    np.testing.assert_array_equal(images(good_folder, CROP + [T.RandomPosterize(3, p=1.0)]), plain & 0xE0)
    solarized = np.where(plain >= 100, 255 - plain, plain)
    np.testing.assert_array_equal(images(good_folder, CROP + [T.RandomSolarize(100, p=1.0)]), solarized)
    # A one-point brightness range is a fixed factor: v * 0.5, truncated to uint8.
    darker = images(good_folder, CROP + [T.ColorJitter(brightness=(0.5, 0.5))])
    np.testing.assert_array_equal(darker, np.floor(plain.astype(np.float32) * np.float32(0.5)))
    # p = 0 changes nothing.
    np.testing.assert_array_equal(images(good_folder, CROP + [T.RandomInvert(p=0.0)]), plain)


def autocontrast(img):
    """torchvision's autocontrast_image on one uint8 CHW image, in float32 as torch computes it."""
    v = img.astype(np.float32)
    lo = v.min(axis=(1, 2), keepdims=True)
    hi = v.max(axis=(1, 2), keepdims=True)
    flat = hi == lo
    inv_scale = np.where(flat, np.float32(1), (hi - lo) * np.float32(1.0 / 255))
    lo = np.where(flat, np.float32(0), lo)
    return np.trunc(np.clip((v - lo) / inv_scale, 0, 255)).astype(np.uint8)


def test_autocontrast_stretches_each_channel_like_torchvision(good_folder, no_dist_env):
    dark = CROP + [T.ColorJitter(brightness=(0.4, 0.4))]
    before = images(good_folder, dark)
    assert before.max() <= 255 * 0.4, "the range to stretch is narrow"
    after = images(good_folder, dark + [T.RandomAutocontrast(p=1.0)])
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, autocontrast(b))
    assert after.max() >= 254


def sharpen(img, factor):
    """torchvision's adjust_sharpness_image on one uint8 CHW image, in float32."""
    v = img.astype(np.float32)
    a, b = np.float32(1 / 13), np.float32(5 / 13)
    h, w = v.shape[1:]
    smooth = sum(v[:, dy:h - 2 + dy, dx:w - 2 + dx] * (b if (dy, dx) == (1, 1) else a)
                 for dy in range(3) for dx in range(3))
    out = v.copy()
    inner = out[:, 1:-1, 1:-1]
    inner += np.float32(1 - factor) * (np.round(smooth) - inner)
    return np.trunc(np.clip(out, 0, 255)).astype(np.uint8)


def test_sharpness_blends_with_torchvisions_smoothing(good_folder, no_dist_env):
    plain = images(good_folder, CROP)
    for factor in (0.0, 2.5):
        got = images(good_folder, CROP + [T.RandomAdjustSharpness(factor, p=1.0)])
        want = np.stack([sharpen(img, factor) for img in plain])
        # The 3x3 sums add in another order than NumPy's: a rounding tie may land one step off.
        assert np.abs(got.astype(int) - want).max() <= 1
        assert (got != want).mean() < 0.01
        np.testing.assert_array_equal(got[:, :, 0], plain[:, :, 0], "the border is kept")
        assert not np.array_equal(got, plain)


def test_color_jitter_is_seeded_per_sample(good_folder, no_dist_env):
    jitter = CROP + [T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.2), T.RandomEqualize(0.3)]
    a = images(good_folder, jitter, seed=5)
    np.testing.assert_array_equal(a, images(good_folder, jitter, seed=5))
    assert not np.array_equal(a, images(good_folder, jitter, seed=6))
    assert not np.array_equal(a, images(good_folder, CROP))


def test_color_jitter_arguments_are_checked_like_torchvision(good_folder):
    with pytest.raises(ValueError, match="non negative"):
        T.ColorJitter(brightness=-0.1)
    with pytest.raises(ValueError, match="hue"):
        T.ColorJitter(hue=0.6)
    with pytest.raises(ValueError, match="before ToDtype"):
        gm.ImageLoader(str(good_folder), device="cpu",
                       transforms=CROP + [T.ToDtype("float32", scale=True), T.RandomInvert(1.0)])
