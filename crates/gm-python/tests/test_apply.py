"""gm.transforms called on images the caller holds (torchvision v2 style), on the CPU here:
each image drawn from (seed, epoch, index) exactly as the CPU loader draws for that sample,
so the outputs equal the loader's, byte for byte; inputs in NumPy, gm.Tensor and list forms;
errors for what cannot stack or is not an image. The GPU side is in test_apply_gpu.py."""

import pathlib
import shutil

import numpy as np
import pytest

import gm
from gm import transforms as T

from conftest import MEDIA

NAMES = sorted(p.name for p in (MEDIA / "jpeg").glob("baboon-*.jpg"))
COCO = MEDIA / "coco"


def arr(x):
    return np.from_dlpack(x) if isinstance(x, gm.Tensor) else np.asarray(x)


def chain():
    return [
        T.RandomResizedCrop((20, 28), antialias=True),
        T.RandomHorizontalFlip(),
        T.ColorJitter(0.4, 0.4, 0.4, 0.1),
        T.ToDtype("float32", scale=True),
        T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD),
    ]


@pytest.fixture()
def photos(tmp_path: pathlib.Path) -> pathlib.Path:
    d = tmp_path / "photos" / "all"
    d.mkdir(parents=True)
    for n in NAMES:
        shutil.copyfile(MEDIA / "jpeg" / n, d / n)
    return tmp_path / "photos"


def decoded():
    data = [(MEDIA / "jpeg" / n).read_bytes() for n in NAMES]
    return gm.decode_images(data, device="cpu")


def test_a_chain_on_held_images_equals_the_cpu_loader(photos, no_dist_env):
    loader = gm.ImageLoader(str(photos), batch_size=len(NAMES), transforms=chain(), seed=5,
                            device="cpu")
    loader.set_epoch(3)
    (batch,) = list(loader)
    want = np.from_dlpack(batch.images)
    assert list(batch.indices) == list(range(len(NAMES)))
    images = decoded()
    got = np.from_dlpack(T.Compose(chain())(images, seed=5, epoch=3, indices=batch.indices))
    assert got.shape == want.shape == (len(NAMES), 3, 20, 28) and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    # NumPy arrays in, a NumPy array out; one image in, one image out.
    arrays = [np.from_dlpack(t) for t in images]
    again = T.Compose(chain())(arrays, seed=5, epoch=3, indices=range(len(NAMES)))
    assert isinstance(again, np.ndarray)
    np.testing.assert_array_equal(again, want)
    one = T.Compose(chain())(arrays[2], seed=5, epoch=3, indices=[2])
    assert one.shape == (3, 20, 28)
    np.testing.assert_array_equal(one, want[2])
    # Another epoch or seed draws anew.
    other = np.from_dlpack(T.Compose(chain())(images, seed=5, epoch=4, indices=batch.indices))
    assert not np.array_equal(other, want)


def test_calls_continue_a_running_count_of_images():
    images = decoded()[:4]
    c = T.Compose(chain())
    first = np.from_dlpack(c(images))
    second = np.from_dlpack(c(images))
    assert not np.array_equal(first, second), "each call draws anew"
    np.testing.assert_array_equal(first, np.from_dlpack(T.Compose(chain())(images, indices=range(4))))
    np.testing.assert_array_equal(
        second, np.from_dlpack(T.Compose(chain())(images, indices=range(4, 8))))
    c.seed = 9
    assert not np.array_equal(np.from_dlpack(c(images, indices=range(4))), first)
    # A single step is callable too.
    flipped = T.RandomHorizontalFlip(1.0)(np.from_dlpack(images[0]))
    np.testing.assert_array_equal(flipped, np.from_dlpack(images[0])[:, ::-1].transpose(2, 0, 1))


def test_what_cannot_stack_or_is_not_an_image_is_refused():
    images = decoded()
    sizes = {tuple(np.from_dlpack(t).shape) for t in images}
    assert len(sizes) == 2, sizes
    # Outputs of several sizes: a list, each as the image alone gives it.
    ragged = T.Compose([T.Resize(16), T.RandomHorizontalFlip()])(images, indices=range(len(images)))
    assert isinstance(ragged, list) and len({tuple(arr(x).shape) for x in ragged}) == 2
    for i, x in enumerate(ragged):
        alone = T.Compose([T.Resize(16), T.RandomHorizontalFlip()])(images[i], indices=[i])
        np.testing.assert_array_equal(arr(x), arr(alone))
    with pytest.raises(ValueError, match="batches of one size"):
        T.Compose([T.Resize(16), T.RandomErasing(1.0)])(images)
    with pytest.raises(TypeError, match="not an image or a batch"):
        T.Compose(chain())("a photo")
    with pytest.raises(ValueError, match=r"uint8 \[H, W, 3\]"):
        T.Compose(chain())(np.zeros((8, 8, 4), np.uint8))
    with pytest.raises(ValueError, match="one index per image"):
        T.Compose(chain())(images, indices=[0])


def test_targets_move_with_their_images_as_the_loader_moves_them():
    """SSD's chain (RandomIoUCrop draws from the boxes; SanitizeBoundingBoxes drops objects)
    on decoded COCO images with their unmoved targets gives the loader's images and targets
    (boxes, labels, masks, keypoints), which test_coco checks against torchvision."""
    d = gm.CocoDataset(COCO / "instances.json", MEDIA / "jpeg", drop_empty=True)
    chain = [T.RandomIoUCrop(), T.RandomHorizontalFlip(), T.SanitizeBoundingBoxes(), T.Resize((48, 64))]
    loader = gm.ImageLoader(d, batch_size=3, transforms=chain, shuffle=True, seed=2, device="cpu")
    compared, counts = 0, set()
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:
            idx = [i for i, t in zip(batch.indices, batch.targets) if t is not None]
            files = [MEDIA / "jpeg" / d.image(i)["file_name"] for i in idx]
            images = gm.decode_images([f.read_bytes() for f in files], device="cpu")
            given = [d.targets(i) for i in idx]
            out, moved = T.Compose(chain)(images, given, seed=2, epoch=epoch, indices=idx)
            rows = [list(batch.indices).index(i) for i in idx]
            np.testing.assert_array_equal(arr(out), arr(batch.images)[rows])
            for k, m in zip(rows, moved):
                want = batch.targets[k]
                for key in ("boxes", "labels", "masks", "keypoints", "keypoints_visible"):
                    if key in want:
                        np.testing.assert_array_equal(arr(m[key]), arr(want[key]), err_msg=key)
                counts.add(arr(m["boxes"]).shape[0])
                compared += 1
    assert compared >= 20 and len(counts) >= 2, (compared, counts)


def test_targets_in_torchvisions_layouts_without_torch():
    """Plain arrays: boxes in a format, keypoints with COCO's visibility column, extra entries
    through, objects dropped with their labels; a wrong count is refused."""
    img = np.zeros((40, 60, 3), np.uint8)
    boxes = np.array([[10, 5, 20, 15], [0, 0, 2, 1]], np.float32)  # the second is tiny
    kp = np.array([[[12, 6, 2], [59, 39, 1]], [[1, 0, 2], [0, 0, 0]]], np.float32)
    masks = np.zeros((2, 40, 60), np.uint8)
    masks[0, 5:15, 10:20] = 1
    target = {"boxes": boxes, "labels": np.array([3, 4]), "keypoints": kp, "masks": masks,
              "image_id": 7}
    chain = [T.RandomHorizontalFlip(1.0), T.SanitizeBoundingBoxes(min_size=3), T.Resize((20, 30))]
    out, t = T.Compose(chain)(img, target)
    assert out.shape == (3, 20, 30) and t["image_id"] == 7
    np.testing.assert_array_equal(t["labels"], [3])
    np.testing.assert_allclose(t["boxes"], [[20, 2.5, 25, 7.5]])
    # torchvision's keypoint flip puts pixel i's centre at i: x -> 59 - x, then halved.
    np.testing.assert_allclose(t["keypoints"][0, :, :2], [[23.5, 3], [0, 19.5]])
    np.testing.assert_array_equal(t["keypoints"][0, :, 2], [2, 1])
    assert t["masks"].shape == (1, 20, 30) and t["masks"].sum() == 25
    with pytest.raises(ValueError, match="counts differ"):
        T.Compose(chain)(img, {"boxes": boxes, "masks": masks[:1]})


def test_detection_chains_give_images_of_their_own_sizes_as_the_ragged_loader():
    """SSD's chain without a resize (torchvision's detection references resize in the model):
    a list of images of their own sizes with their targets, equal to the loader's ragged
    batches."""
    d = gm.CocoDataset(COCO / "instances.json", MEDIA / "jpeg", drop_empty=True)
    chain = [T.RandomZoomOut(fill=[123, 117, 104]), T.RandomIoUCrop(), T.RandomHorizontalFlip(),
             T.SanitizeBoundingBoxes()]
    loader = gm.ImageLoader(d, batch_size=3, transforms=chain, shuffle=True, seed=4, device="cpu",
                            batch_sizes="ragged")
    shapes = set()
    for epoch in range(6):
        loader.set_epoch(epoch)
        for batch in loader:
            idx = [i for i, t in zip(batch.indices, batch.targets) if t is not None]
            files = [MEDIA / "jpeg" / d.image(i)["file_name"] for i in idx]
            images = gm.decode_images([f.read_bytes() for f in files], device="cpu")
            out, moved = T.Compose(chain)(images, [d.targets(i) for i in idx], seed=4,
                                          epoch=epoch, indices=idx)
            assert isinstance(out, list) or len(idx) == 1 or len({arr(x).shape for x in batch.images}) == 1
            outs = out if isinstance(out, list) else list(arr(out))
            for i, x, m in zip(idx, outs, moved):
                k = list(batch.indices).index(i)
                np.testing.assert_array_equal(arr(x), arr(batch.images[k]))
                np.testing.assert_array_equal(arr(m["boxes"]), arr(batch.targets[k]["boxes"]))
                shapes.add(arr(x).shape)
    assert len(shapes) >= 3, shapes
