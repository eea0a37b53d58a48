"""gm.transforms' warps (RandomAffine, RandomRotation, RandomPerspective; torchvision's names and
arguments) on the CPU path, against torchvision.transforms.v2.functional on the same uint8 crop
where torchvision is installed (degenerate ranges fix the drawn parameters)."""

import numpy as np
import pytest

import gm
from gm import transforms as T

CROP = [T.CenterCrop((18, 23))]


def images(folder, steps, **kw):
    """Every image of the folder through ``steps``, in one batch, as NumPy (uint8 CHW)."""
    loader = gm.ImageLoader(str(folder), batch_size=32, transforms=steps, device="cpu", **kw)
    return np.concatenate([np.from_dlpack(b.images).copy() for b in loader])


def torchvision_each(plain, fn):
    torch = pytest.importorskip("torch")
    return np.stack([fn(torch.from_numpy(img)).numpy() for img in plain])


def test_fixed_affine_and_rotation_equal_torchvision(good_folder, no_dist_env):
    F = pytest.importorskip("torchvision.transforms.v2.functional")
    plain = images(good_folder, CROP)
    assert plain.std() > 10, "real photos, not a flat image"
    cases = [
        (T.RandomRotation((33.3, 33.3), interpolation=T.InterpolationMode.BILINEAR),
         lambda t: F.rotate(t, 33.3, interpolation=F.InterpolationMode.BILINEAR, fill=[0.0] * 3)),
        (T.RandomRotation((-120, -120), fill=(90, 60, 30)),
         lambda t: F.rotate(t, -120.0, fill=[90.0, 60.0, 30.0])),
        (T.RandomAffine((20, 20), scale=(0.8, 0.8), shear=(10, 10), interpolation=T.InterpolationMode.BILINEAR,
                        fill=7),
         lambda t: F.affine(t, 20.0, [0, 0], 0.8, [10.0, 0.0], interpolation=F.InterpolationMode.BILINEAR,
                            fill=[7.0] * 3)),
        (T.RandomAffine((-35, -35), shear=(-5, -5, 8, 8), center=(4, 9)),
         lambda t: F.affine(t, -35.0, [0, 0], 1.0, [-5.0, 8.0], fill=[0.0] * 3, center=[4.0, 9.0])),
    ]
    for step, reference in cases:
        got = images(good_folder, CROP + [step])
        want = torchvision_each(plain, reference)
        assert np.abs(got.astype(int) - want).max() <= 1, step
        assert not np.array_equal(got, plain)


def test_perspective_without_distortion_keeps_the_image(good_folder, no_dist_env):
    plain = images(good_folder, CROP)
    got = images(good_folder, CROP + [T.RandomPerspective(distortion_scale=0.0, p=1.0)])
    assert np.abs(got.astype(int) - plain).max() <= 1


def test_warps_are_seeded_per_sample(good_folder, no_dist_env):
    chain = CROP + [T.RandomAffine(30, translate=(0.1, 0.1), scale=(0.9, 1.1)), T.RandomHorizontalFlip()]
    a = images(good_folder, chain, seed=5)
    np.testing.assert_array_equal(a, images(good_folder, chain, seed=5))
    assert not np.array_equal(a, images(good_folder, chain, seed=6))


def test_chains_torchvision_resamples_twice_equal_torchvision(good_folder, no_dist_env):
    """Two warps, a colour step before a warp, a warp after a resize: gm runs them as several
    passes, each reading the previous one's uint8 image, as torchvision does."""
    F = pytest.importorskip("torchvision.transforms.v2.functional")
    plain = images(good_folder, CROP)
    cases = [
        ([T.RandomRotation((20, 20)), T.RandomAffine((0, 0), shear=(8, 8))],
         lambda t: F.affine(F.rotate(t, 20.0, fill=[0.0] * 3), 0.0, [0, 0], 1.0, [8.0, 0.0], fill=[0.0] * 3), 0),
        ([T.RandomInvert(p=1.0), T.RandomRotation((15, 15), fill=(200, 10, 50))],
         lambda t: F.rotate(F.invert(t), 15.0, fill=[200.0, 10.0, 50.0]), 0),
        ([T.RandomEqualize(p=1.0), T.RandomAffine((0, 0), translate=(0.2, 0.2), interpolation=T.InterpolationMode.BILINEAR)],
         None, None),
        # torch resizes uint8 in fixed point: a step from gm's float resize in places.
        ([T.Resize((12, 15)), T.RandomRotation((-30, -30), interpolation=T.InterpolationMode.BILINEAR)],
         lambda t: F.rotate(F.resize(t, [12, 15], antialias=True), -30.0,
                            interpolation=F.InterpolationMode.BILINEAR, fill=[0.0] * 3), 1),
    ]
    for steps, reference, allowed in cases:
        got = images(good_folder, CROP + steps)
        np.testing.assert_array_equal(got, images(good_folder, CROP + steps), str(steps))
        if reference is None:
            assert got.shape == plain.shape
            continue
        want = torchvision_each(plain, reference)
        assert got.shape == want.shape, steps
        assert np.abs(got.astype(int) - want).max() <= allowed, steps


def test_warp_arguments_are_checked_like_torchvision(good_folder):
    with pytest.raises(ValueError, match="positive"):
        T.RandomAffine(-5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        T.RandomAffine(5, translate=(1.5, 0))
    with pytest.raises(ValueError, match="positive"):
        T.RandomAffine(5, scale=(0, 1))
    with pytest.raises(ValueError, match="length"):
        T.RandomAffine(5, shear=(1, 2, 3))
    with pytest.raises(ValueError, match="nearest or bilinear"):
        T.RandomRotation(10, interpolation=T.InterpolationMode.BICUBIC)
    with pytest.raises(NotImplementedError):
        T.RandomRotation(10, expand=True)
    with pytest.raises(ValueError, match="distortion_scale"):
        T.RandomPerspective(1.5)


def test_trivial_augment_is_seeded_per_sample_and_keeps_the_output(good_folder, no_dist_env):
    chain = CROP + [T.RandomHorizontalFlip(), T.TrivialAugmentWide()]
    plain = images(good_folder, CROP)
    a = images(good_folder, chain, seed=3)
    assert a.shape == plain.shape
    np.testing.assert_array_equal(a, images(good_folder, chain, seed=3))
    assert not np.array_equal(a, images(good_folder, chain, seed=4))
    # A policy with another warp after it, or after a colour step, plans and repeats per seed.
    for extra in ([T.TrivialAugmentWide(), T.RandomRotation(5)], [T.RandomInvert(), T.TrivialAugmentWide()]):
        b = images(good_folder, CROP + extra, seed=3)
        np.testing.assert_array_equal(b, images(good_folder, CROP + extra, seed=3))


@pytest.mark.parametrize("make", [
    lambda: T.RandAugment(),
    lambda: T.RandAugment(num_ops=3, magnitude=20, interpolation=T.InterpolationMode.BILINEAR, fill=(9, 80, 200)),
    lambda: T.AutoAugment(),
    lambda: T.AutoAugment(T.AutoAugmentPolicy.SVHN, interpolation=T.InterpolationMode.BILINEAR, fill=9),
])
def test_rand_and_auto_augment_are_seeded_per_sample_and_keep_the_output(good_folder, no_dist_env, make):
    chain = CROP + [T.RandomHorizontalFlip(), make()]
    plain = images(good_folder, CROP)
    a = images(good_folder, chain, seed=3)
    assert a.shape == plain.shape
    np.testing.assert_array_equal(a, images(good_folder, chain, seed=3))
    assert not np.array_equal(a, images(good_folder, chain, seed=4))
    assert not np.array_equal(a, plain)


def test_policy_arguments_are_checked_like_torchvision(good_folder):
    with pytest.raises(ValueError, match="non-negative integer"):
        T.RandAugment(num_ops=-1)
    with pytest.raises(ValueError, match="not a bin"):
        T.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="nearest or bilinear"):
        T.RandAugment(interpolation=T.InterpolationMode.BICUBIC)
    with pytest.raises(ValueError, match="not recognized"):
        T.AutoAugment("imagenet2")
    with pytest.raises(ValueError, match="num_ops 9"):
        gm.ImageLoader(str(good_folder), device="cpu", transforms=[T.RandAugment(num_ops=9)])
    assert T.AutoAugment("cifar10").policy is T.AutoAugmentPolicy.CIFAR10


def test_auto_augment_takes_torchvisions_policy_enum():
    v2 = pytest.importorskip("torchvision.transforms.v2")
    assert T.AutoAugment(v2.AutoAugmentPolicy.SVHN).policy is T.AutoAugmentPolicy.SVHN
