"""Tensors out through DLPack: NumPy takes them without a copy, capsules follow the protocol,
and the memory outlives the batch, the iterator and the loader while a consumer holds it."""

import ctypes
import gc

import numpy as np
import pytest

import gm
from gm import transforms as T

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def capsule_name(c) -> str:
    return _get_name(c).decode()


@pytest.fixture()
def batch(good_folder, no_dist_env):
    loader = gm.ImageLoader(str(good_folder), batch_size=4, device="cpu",
                            transforms=[T.Resize((10, 14)), T.ToDtype("float32", scale=True)])
    return next(iter(loader))


def test_numpy_takes_images_and_labels(batch):
    images, labels = batch
    a = np.from_dlpack(images)
    assert a.shape == (4, 3, 10, 14) and a.dtype == np.float32
    assert 0.0 <= a.min() and a.max() <= 1.0
    assert np.from_dlpack(labels).dtype == np.int64
    assert images.__dlpack_device__() == (1, 0)
    assert images.device == "cpu" and not images.is_cuda
    assert images.shape == (4, 3, 10, 14) and images.strides == (420, 140, 14, 1)
    # No copy: two imports see the same memory.
    assert np.from_dlpack(images).ctypes.data == a.ctypes.data
    assert bytes(a.tobytes()) == images.tobytes()


def test_capsules_are_legacy_unless_a_version_is_asked_for(batch):
    assert capsule_name(batch.images.__dlpack__()) == "dltensor"
    assert capsule_name(batch.images.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert capsule_name(batch.images.__dlpack__(max_version=(0, 8))) == "dltensor"
    # A CPU tensor ignores the stream; asking for a copy or another device is refused.
    assert capsule_name(batch.images.__dlpack__(stream=None)) == "dltensor"
    with pytest.raises(BufferError):
        batch.images.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        batch.images.__dlpack__(dl_device=(2, 0))


def test_memory_outlives_batch_iterator_and_loader(good_folder, no_dist_env):
    loader = gm.ImageLoader(str(good_folder), batch_size=4, device="cpu", transforms=[T.Resize((10, 14))])
    it = iter(loader)
    b = next(it)
    a = np.from_dlpack(b.images)
    saved = a.copy()
    del b, it, loader
    gc.collect()
    np.testing.assert_array_equal(a, saved)


def test_cpu_copy_and_bytes(batch):
    c = batch.images.cpu()
    assert c.shape == batch.images.shape and c.tobytes() == batch.images.tobytes()
    assert len(batch.images) == 4 and batch.images.ndim == 4
    assert "float32" in repr(batch.images)
