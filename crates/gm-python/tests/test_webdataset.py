"""WebDataset shards as an ImageLoader source, on the CPU path: shards written (with Python's
tarfile, in the folder's order) from an image folder give the folder's batches, bit for bit,
from local disk and from moto's S3."""

import io
import pathlib
import tarfile

import numpy as np
import pytest

import gm
import gm.transforms as T

from conftest import assert_same_batches, augmenting, collect


def folder_samples(folder: pathlib.Path):
    """(label, path) in ImageFolder's order: classes sorted, then files sorted."""
    classes = sorted(d.name for d in folder.iterdir() if d.is_dir())
    return [
        (label, p)
        for label, c in enumerate(classes)
        for p in sorted((folder / c).iterdir())
        if p.is_file()
    ]


def write_shards(folder: pathlib.Path, out: pathlib.Path, per_shard: int) -> list:
    """WebDataset tars of ``per_shard`` samples each: ``NNNNNN.<ext>`` and ``NNNNNN.cls``."""
    out.mkdir(parents=True, exist_ok=True)
    samples = folder_samples(folder)
    shards = []
    for first in range(0, len(samples), per_shard):
        path = out / f"train-{len(shards):06d}.tar"
        with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
            for i, (label, p) in enumerate(samples[first:first + per_shard], start=first):
                for name, data in [(f"{i:06d}{p.suffix.lower()}", p.read_bytes()),
                                   (f"{i:06d}.cls", str(label).encode())]:
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        shards.append(path)
    return shards


def test_shards_give_the_folders_batches(tmp_path, demo_folder, no_dist_env):
    shards = write_shards(demo_folder, tmp_path / "shards", per_shard=8)
    assert len(shards) == 3
    local = augmenting(str(demo_folder))
    want = collect(local)
    pattern = str(tmp_path / "shards" / "train-{000000..000002}.tar")
    for source in (pattern, [str(p) for p in shards]):
        loader = augmenting(source)
        assert len(loader) == len(local)
        assert_same_batches(want, collect(loader))
        # The truncated JPEG is the one bad sample in both, named by shard and key.
        stats = loader.stats()
        assert stats["bad"] == local.stats()["bad"] == 1
        assert "train-000000.tar#" in str(stats["first_errors"]) or \
            "train-000001.tar#" in str(stats["first_errors"]), stats["first_errors"]


def test_shards_in_s3_give_the_folders_batches(s3, tmp_path, good_folder, no_dist_env):
    shards = write_shards(good_folder, tmp_path / "shards", per_shard=5)
    bucket = s3.bucket("shards")
    assert s3.upload(bucket, tmp_path / "shards", "wds") == len(shards)
    want = collect(augmenting(str(good_folder)))
    pattern = f"s3://{bucket}/wds/train-{{000000..{len(shards) - 1:06d}}}.tar"
    remote = augmenting(pattern, storage=s3.storage)
    assert_same_batches(want, collect(remote))
    assert remote.stats()["bad"] == 0


def test_bad_shard_sources_raise_clearly(tmp_path, no_dist_env):
    with pytest.raises(OSError, match="missing-000000.tar"):
        gm.ImageLoader(str(tmp_path / "missing-{000000..000001}.tar"), device="cpu")
    with pytest.raises(ValueError, match="repack it as .tar"):
        gm.ImageLoader(str(tmp_path / "train.tar.gz"), device="cpu")
    with pytest.raises(ValueError, match="shard pattern"):
        gm.ImageLoader(str(tmp_path / "train-{000..}.tar"), device="cpu")
    with pytest.raises(ValueError, match="WebDataset shards"):
        gm.ImageLoader([str(tmp_path / "a.tar"), str(tmp_path / "folder")], device="cpu")


def streamed(source, **kw):
    return gm.ImageLoader(
        source, batch_size=4, device="cpu", shuffle=True, seed=11, workers=2, stream=True,
        shuffle_buffer=5, streams=2, prefetch_next_epoch=False,
        transforms=[T.Resize(40), T.CenterCrop(32)], **kw,
    )


def test_streamed_shards_give_each_samples_image_and_resume(tmp_path, demo_folder, no_dist_env):
    shards = write_shards(demo_folder, tmp_path / "shards", per_shard=8)
    # Each image against the folder's (the same deterministic chain, one image at a time).
    ref = gm.ImageLoader(str(demo_folder), batch_size=1, device="cpu",
                         transforms=[T.Resize(40), T.CenterCrop(32)])
    want = {}
    for i, (label, path) in enumerate(folder_samples(demo_folder)):
        want[f"{i:06d}"] = (label, path)
    by_path = {}
    for b in ref:
        by_path[b.indices[0]] = (int(np.from_dlpack(b.labels)[0]), np.from_dlpack(b.images).copy())
    order = [p for _, p in folder_samples(demo_folder)]
    loader = streamed([str(p) for p in shards])
    with pytest.raises(TypeError, match="epoch_batches"):
        len(loader)
    seen = []
    for b in loader:
        images, labels = np.from_dlpack(b.images), np.from_dlpack(b.labels)
        for k, name in enumerate(b.names):
            shard, key = name.rsplit("#", 1)
            assert shard in {str(p) for p in shards}, name
            label, path = want[key]
            ref_label, ref_image = by_path[order.index(path)]
            assert labels[k] == label == ref_label, name
            assert np.array_equal(images[k], ref_image[0]), name
            seen.append(key)
    # Every sample once but the truncated JPEG, a bad sample named by shard and key.
    assert sorted(seen) == sorted(k for k, (_, p) in want.items() if "truncated" not in p.name)
    assert loader.stats()["bad"] == 1
    assert "#" in str(loader.stats()["first_errors"])
    # Stop after two batches, save, resume in a new loader: the rest of the unbroken epoch.
    full = [(b.names, np.from_dlpack(b.images).copy()) for b in streamed([str(p) for p in shards])]
    first = streamed([str(p) for p in shards])
    it = iter(first)
    next(it), next(it)
    state = first.state_dict()
    del it
    second = streamed([str(p) for p in shards])
    second.load_state_dict(state)
    rest = [(b.names, np.from_dlpack(b.images).copy()) for b in second]
    assert [r[0] for r in rest] == [f[0] for f in full[2:]]
    for (_, a), (_, b) in zip(rest, full[2:]):
        assert np.array_equal(a, b)
    # epoch_batches gives a length, and repeats the data to fill it.
    fixed = streamed([str(p) for p in shards], epoch_batches=9)
    assert len(fixed) == 9 and len(list(fixed)) == 9
    # shuffle_initial: drawing from 2 buffered samples (growing to 5) is another order of the
    # same samples than filling the buffer first (the default 100 fills a buffer of 5).
    def names(**kw):
        return [n for b in streamed([str(p) for p in shards], **kw) for n in b.names]
    early, filled = names(shuffle_initial=2), names()
    assert early != filled and sorted(early) == sorted(filled)
    assert names(shuffle_initial=5) == filled
