"""RandomErasing in a chain and MixUp/CutMix as ImageLoader(mix=...) on the CPU path: the
batches are the plain batches erased and mixed as torchvision does (its MixUp/CutMix
transforms applied with the lambda and box gm drew), with soft labels beside the labels."""

import numpy as np
import pytest
torch = pytest.importorskip("torch")  # the CI venv has no torch: skip there, run on the GPU machine
TV = pytest.importorskip("torchvision.transforms.v2")

import gm
from gm import transforms as T

CHAIN = [T.Resize((24, 32)), T.ToDtype("float32", scale=True), T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]
CLASSES = 5


def batches(folder, **kw):
    loader = gm.ImageLoader(str(folder), batch_size=6, shuffle=True, seed=4, device="cpu", **kw)
    out = []
    for b in loader:
        soft = None if b.soft_labels is None else np.from_dlpack(b.soft_labels).copy()
        out.append((np.from_dlpack(b.images).copy(), np.from_dlpack(b.labels).copy(), soft, b))
    return out


def test_random_erasing_sets_one_rectangle_to_the_value(good_folder, no_dist_env):
    plain = batches(good_folder, transforms=CHAIN)
    value = [-1.5, 0.25, 2.0]
    erased = batches(good_folder, transforms=CHAIN + [T.RandomErasing(p=1.0, value=value)])
    count = 0
    for (a, _, _, _), (b, _, soft, _) in zip(plain, erased):
        assert soft is None
        for x, y in zip(a, b):
            changed = np.any(x != y, axis=0)
            rows, cols = np.nonzero(changed)
            if len(rows) == 0:
                continue  # no rectangle fitted in 10 tries, or it equalled the image
            count += 1
            top, left = rows.min(), cols.min()
            h, w = rows.max() - top + 1, cols.max() - left + 1
            box = y[:, top:top + h, left:left + w]
            np.testing.assert_array_equal(box, np.broadcast_to(np.array(value, np.float32)[:, None, None], box.shape))
            # torchvision's bounds: area in scale (with rounding), h < H, w < W.
            assert h * w <= 0.33 * 24 * 32 + h + w and h < 24 and w < 32
    assert count >= 15


def test_mixup_is_torchvisions_with_the_drawn_lambda(good_folder, no_dist_env):
    plain = batches(good_folder, transforms=CHAIN)
    mixed = batches(good_folder, transforms=CHAIN, mix=T.MixUp(alpha=0.4, num_classes=CLASSES))
    for (a, labels, _, _), (b, labels2, soft, batch) in zip(plain, mixed):
        np.testing.assert_array_equal(labels, labels2)
        assert soft.shape == (len(labels), CLASSES) and soft.dtype == np.float32
        np.testing.assert_allclose(soft.sum(axis=1), 1.0, atol=1e-6)
        # lambda is the weight of a row's own label where it differs from its partner's.
        rows = [i for i in range(len(labels)) if labels[i] != labels[i - 1]]
        if not rows or len(labels) < 2:
            continue
        lam = float(soft[rows[0], labels[rows[0]]])
        mixup = TV.MixUp(alpha=0.4, num_classes=CLASSES)
        lab = torch.from_numpy(labels)
        params = {"lam": lam, "labels": lab, "batch_size": len(labels)}
        want = mixup.transform(torch.from_numpy(a), params).numpy()
        np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(soft, mixup.transform(lab, params).numpy(), atol=1e-6)
        # Unpacking gives the soft labels, as torchvision's MixUp returns them.
        _, unpacked = batch
        np.testing.assert_array_equal(np.from_dlpack(unpacked), soft)


def test_cutmix_pastes_a_box_whose_area_is_the_label_weight(good_folder, no_dist_env):
    plain = batches(good_folder, transforms=CHAIN)
    mixed = batches(good_folder, transforms=CHAIN,
                    mix=[T.MixUp(alpha=1.0, num_classes=CLASSES), T.CutMix(alpha=1.0, num_classes=CLASSES)])
    kinds = set()
    for (a, labels, _, _), (b, _, soft, _) in zip(plain, mixed):
        np.testing.assert_allclose(soft.sum(axis=1), 1.0, atol=1e-6)
        if len(labels) < 2:
            continue
        rolled = np.roll(a, 1, axis=0)
        same = np.all(b == a, axis=(0, 1))
        pasted = np.all(b == rolled, axis=(0, 1))
        if np.all(same | pasted):
            kinds.add("cutmix")
            box = ~same
            area = box.sum() / box.size
            for i in range(len(labels)):
                if labels[i] != labels[i - 1]:
                    assert abs(soft[i, labels[i]] - (1 - area)) < 1e-5
        else:
            kinds.add("mixup")
    assert kinds == {"mixup", "cutmix"}


def test_misplaced_or_incomplete_batch_transforms_are_refused(good_folder):
    with pytest.raises(ValueError, match="last step"):
        gm.ImageLoader(str(good_folder), device="cpu", transforms=[T.RandomErasing(), T.Resize(8)])
    with pytest.raises(TypeError, match="mix="):
        gm.ImageLoader(str(good_folder), device="cpu", transforms=[T.MixUp(num_classes=3)])
    with pytest.raises(ValueError, match="num_classes"):
        T.CutMix(alpha=1.0)
    with pytest.raises(ValueError, match="alpha"):
        gm.ImageLoader(str(good_folder), device="cpu", mix=T.MixUp(alpha=0.0, num_classes=3))
    with pytest.raises(ValueError, match="'random'"):
        T.RandomErasing(value="noise")
