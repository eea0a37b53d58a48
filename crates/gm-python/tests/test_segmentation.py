"""gm.SegmentationFolder: label maps read as PIL reads them (tests/media/segmentation,
make_masks.py) and moved with their images by the loader as torchvision moves a Mask."""
import json

import numpy as np
import pytest

import gm
from conftest import MEDIA

SEG = MEDIA / "segmentation"
JPEG = MEDIA / "jpeg"
T = gm.transforms


def arr(t):
    return np.from_dlpack(t)


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def nearest(n_in, n_out):
    """torch's nearest source index (interpolate(mode="nearest"))."""
    scale = np.float32(n_in) / np.float32(n_out)
    return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * scale), n_in - 1).astype(int)


def test_maps_equal_pils_and_pair_with_their_images():
    d = gm.SegmentationFolder(JPEG, SEG / "masks")
    expected = json.loads((SEG / "expected.json").read_text())
    assert len(d) == len(expected) == 4
    for i in range(len(d)):
        image, mask = d.paths(i)
        want = expected[mask.name]
        m = arr(d.mask(i))
        assert m.shape == (want["height"], want["width"])
        assert int(m.sum(dtype=np.int64)) == want["sum"] and fnv1a(m.tobytes()) == want["fnv1a"]
        assert image.name == mask.name.replace(".png", ".jpg")
    with pytest.raises(gm.GmError, match="cut.png.*no image"):
        gm.SegmentationFolder(JPEG, SEG / "bad")


def test_loader_moves_maps_as_torchvision_moves_masks():
    d = gm.SegmentationFolder(JPEG, SEG / "masks")
    chain = [T.Resize((75, 100)), T.RandomHorizontalFlip(p=1.0)]
    for b in gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu"):
        assert arr(b.images).shape[1:] == (3, 75, 100)
        for i, t in zip(b.indices, b.targets):
            src = arr(d.mask(i))
            want = src[nearest(src.shape[0], 75)][:, nearest(src.shape[1], 100)][:, ::-1]
            assert np.array_equal(arr(t["mask"]), want)


class Mask:
    """Stands for torchvision.tv_tensors.Mask as a fill key (matched by name)."""


def test_segmentation_recipe_pads_masks_with_the_ignore_index():
    d = gm.SegmentationFolder(JPEG, SEG / "masks")
    chain = [T.RandomResize(60, 200), T.RandomHorizontalFlip(),
             T.RandomCrop(96, pad_if_needed=True, fill={Mask: 255, "others": 0}),
             T.ToDtype("float32", scale=True), T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]
    loader = gm.ImageLoader(d, batch_size=2, transforms=chain, shuffle=True, seed=1, device="cpu")
    padded = 0
    for epoch in range(5):
        loader.set_epoch(epoch)
        for b in loader:
            assert arr(b.images).shape[1:] == (3, 96, 96)
            for i, t in zip(b.indices, b.targets):
                m = arr(t["mask"])
                classes = set(np.unique(arr(d.mask(i))).tolist())
                assert m.shape == (96, 96) and set(np.unique(m).tolist()) <= classes | {255}
                padded += int((m == 255).any())
    assert padded > 0
