"""Batches of many sizes from Python: a detection chain (Resize with max_size,
RandomShortestSize, ScaleJitter) batched padded or ragged, each image equal to the same
sample loaded alone, with its targets on its own canvas."""
import numpy as np
import pytest

import gm
from conftest import MEDIA

COCO = MEDIA / "coco"
JPEG = MEDIA / "jpeg"
T = gm.transforms


def arr(t):
    return np.from_dlpack(t)


def chain():
    return [
        T.RandomShortestSize([24, 32, 40], max_size=90),
        T.RandomHorizontalFlip(),
        T.Resize(30, max_size=70),
        T.ToDtype("float32", scale=True),
        T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD),
    ]


def loader(batch_size, **kw):
    d = gm.CocoDataset(COCO / "instances.json", JPEG)
    return gm.ImageLoader(d, batch_size=batch_size, transforms=chain(), shuffle=True, seed=4,
                          device="cpu", **kw)


def alone():
    out = {}
    for b in loader(1):
        (i,) = b.indices
        out[i] = arr(b.images)[0].copy()
    return out


def test_padded_and_ragged_batches_hold_each_image_as_alone():
    ref = alone()
    sizes = set()
    for b in loader(3, batch_sizes="padded", size_divisible=16, pad_value=-3.0):
        images = arr(b.images)
        hmax = max(h for h, _ in b.image_sizes)
        wmax = max(w for _, w in b.image_sizes)
        assert images.shape[2:] == (-(-hmax // 16) * 16, -(-wmax // 16) * 16)
        for k, i in enumerate(b.indices):
            h, w = b.image_sizes[k]
            sizes.add((h, w))
            assert ref[i].shape == (3, h, w)
            assert np.array_equal(images[k, :, :h, :w], ref[i])
            pad = np.ones(images.shape[2:], bool)
            pad[:h, :w] = False
            assert np.all(images[k][:, pad] == -3.0)
            t = b.targets[k]
            if t is not None and "masks" in t:
                assert arr(t["masks"]).shape[1:] == (h, w)
    assert len(sizes) >= 2, sizes
    for b in loader(3, batch_sizes="ragged"):
        assert isinstance(b.images, list) and len(b.images) == len(b.indices)
        for k, i in enumerate(b.indices):
            assert arr(b.images[k]).shape == (3, *b.image_sizes[k])
            assert np.array_equal(arr(b.images[k]), ref[i])
        images, labels = b
        assert images is b.images


def test_uniform_batches_of_many_sizes_say_how_to_batch_them():
    with pytest.raises(gm.GmError, match="batch_sizes"):
        for _ in loader(3):
            pass
    with pytest.raises(ValueError, match="ragged"):
        loader(3, batch_sizes="jagged")


def test_scale_jitter_and_resize_longer_plan():
    for step in (T.ScaleJitter((40, 60), scale_range=(0.5, 1.5)), T.Resize(None, max_size=50)):
        d = gm.CocoDataset(COCO / "instances.json", JPEG)
        b = next(iter(gm.ImageLoader(d, batch_size=4, transforms=[step], device="cpu",
                                     batch_sizes="ragged")))
        for k, (h, w) in enumerate(b.image_sizes):
            assert arr(b.images[k]).shape == (3, h, w)
            if isinstance(step, T.Resize):
                assert max(h, w) == 50
            else:
                assert max(h / 40, w / 60) <= 1.5 + 1e-6
    with pytest.raises(ValueError, match="max_size"):
        T.Resize((10, 20), max_size=30)
