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
            # The batch's maps in one tensor, as the references' collate stacks them.
            assert np.array_equal(arr(b.masks), np.stack([arr(t["mask"]) for t in b.targets]))
            for i, t in zip(b.indices, b.targets):
                m = arr(t["mask"])
                classes = set(np.unique(arr(d.mask(i))).tolist())
                assert m.shape == (96, 96) and set(np.unique(m).tolist()) <= classes | {255}
                padded += int((m == 255).any())
    assert padded > 0


@pytest.mark.parametrize("step", [
    lambda fill: T.RandomRotation((30, 30), fill=fill),
    lambda fill: T.RandomAffine((30, 30), fill=fill),
    lambda fill: T.RandomPerspective(distortion_scale=0.9, p=1.0, interpolation="nearest", fill=fill),
])
def test_warps_fill_masks_with_the_fill_dicts_mask_entry(step):
    # The exact pixels are checked against torchvision in gm-transforms' targets test; here the
    # fill dict reaches the masks: the corners a warp reads from outside hold the Mask entry,
    # the image's the "others" value.
    d = gm.SegmentationFolder(JPEG, SEG / "masks")
    for fill, mask_value, image_value in (({Mask: 200, "others": 7}, 200, 7), (0, 0, 0), (9, 9, 9)):
        chain = [T.Resize((64, 64)), step(fill)]
        loader = gm.ImageLoader(d, batch_size=2, transforms=chain, seed=3, device="cpu")
        corners = 0
        for b in loader:
            images = arr(b.images)
            for k, t in enumerate(b.targets):
                m = arr(t["mask"])
                for y, x in ((0, 0), (0, 63), (63, 0), (63, 63)):
                    if (images[k, :, y, x] == image_value).all() and m[y, x] == mask_value:
                        corners += 1
        assert corners >= 2 * len(d), (fill, corners)
