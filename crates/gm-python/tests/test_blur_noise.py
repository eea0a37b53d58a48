"""gm.transforms.GaussianBlur and GaussianNoise on the CPU path: the blur against
torchvision.transforms.v2.functional.gaussian_blur on the loader's own unblurred crops (within
one uint8 step), the noise's mean and standard deviation, and the chains gm refuses."""

import numpy as np
import pytest

import gm
from gm import transforms as T

CROP = [T.CenterCrop(24)]


def images(folder, steps, **kw):
    """Every image of the folder through ``steps``, in one batch, as NumPy."""
    loader = gm.ImageLoader(str(folder), batch_size=32, transforms=steps, device="cpu", **kw)
    return np.concatenate([np.from_dlpack(b.images).copy() for b in loader])


def test_blur_matches_torchvision_within_one_step(good_folder, no_dist_env):
    torch = pytest.importorskip("torch")
    F = pytest.importorskip("torchvision.transforms.v2.functional")
    plain = images(good_folder, CROP)
    for ks, sigma in [(3, 0.8), ((7, 5), 1.9), (9, 3.0)]:
        got = images(good_folder, CROP + [T.GaussianBlur(ks, sigma=(sigma, sigma))])
        want = F.gaussian_blur(torch.from_numpy(plain), list(ks) if isinstance(ks, tuple) else [ks, ks],
                               [sigma, sigma]).numpy()
        diff = np.abs(got.astype(int) - want.astype(int))
        assert diff.max() <= 1, (ks, sigma)
        assert (got != plain).mean() > 0.3, "a real blur"


def test_noise_has_its_mean_and_sigma_and_clips(good_folder, no_dist_env):
    unit = [T.ToDtype("float32", scale=True)]
    plain = images(good_folder, CROP + unit)
    noisy = images(good_folder, CROP + unit + [T.GaussianNoise(mean=0.05, sigma=0.1, clip=False)])
    added = noisy - plain
    assert abs(added.mean() - 0.05) < 0.005
    assert abs(added.std() - 0.1) < 0.005
    clipped = images(good_folder, CROP + unit + [T.GaussianNoise(sigma=0.5)])
    assert clipped.min() >= 0.0 and clipped.max() <= 1.0


def test_refused_chains_say_why():
    with pytest.raises(ValueError, match="odd and positive"):
        T.GaussianBlur(4)
    with pytest.raises(ValueError, match="sigma"):
        T.GaussianBlur(3, sigma=(2.0, 1.0))
    with pytest.raises(ValueError, match="negative"):
        T.GaussianNoise(sigma=-1)
    with pytest.raises(ValueError, match="uint8"):
        T._plan([T.ToDtype("float32", scale=True), T.GaussianBlur(3)])
    with pytest.raises(ValueError, match="float output"):
        T._plan([T.GaussianNoise()])
    with pytest.raises(ValueError, match="after GaussianNoise"):
        T._plan([T.ToDtype("float32", scale=True), T.GaussianNoise(), T.Normalize([0.5], [0.2])])
    steps = T._plan([T.GaussianBlur(5), T.ToDtype("float32", scale=True), T.GaussianNoise(),
                     T.RandomErasing()])
    assert [s[0] for s in steps] == ["gaussian_blur", "normalize", "dtype", "gaussian_noise",
                                     "random_erasing"]
