"""Datasets from object storage (moto's S3 in this process), on the CPU path: the same batches
as from the local folder, URLs for videos, and storage failures as OSError or bad samples
named by URL."""

import shutil

import numpy as np
import pytest

import gm
from gm import transforms as T

from conftest import MEDIA, assert_same_batches, augmenting, collect


def test_a_folder_in_s3_gives_the_local_batches(s3, demo_folder, no_dist_env):
    bucket = s3.bucket("folder")
    assert s3.upload(bucket, demo_folder, "train") == 23
    local = augmenting(str(demo_folder))
    want = collect(local)
    for url in (f"s3://{bucket}/train/", f"s3://{bucket}/train"):
        remote = augmenting(url, storage=s3.storage)
        assert len(remote) == len(local)
        assert_same_batches(want, collect(remote))
        # The truncated JPEG is bad in both, and named by its URL here.
        stats = remote.stats()
        assert stats["bad"] == local.stats()["bad"] == 1
        assert f"s3://{bucket}/train/frames/video-001.truncated.jpeg" in str(stats["first_errors"])


def test_a_list_file_in_s3_resolves_its_entries_against_its_url(s3, good_folder, no_dist_env):
    bucket = s3.bucket("list")
    files = sorted(p for p in good_folder.rglob("*.jpg"))
    text = "".join(f"{p.relative_to(good_folder).as_posix()} {i % 3}\n" for i, p in enumerate(files))
    (good_folder / "list.txt").write_text(text)
    s3.upload(bucket, good_folder, "data")
    local = augmenting(str(good_folder / "list.txt"))
    remote = augmenting(f"s3://{bucket}/data/list.txt", storage=s3.storage)
    assert_same_batches(collect(local), collect(remote))


def test_videos_and_a_bucket_prefix_index_as_the_local_files(s3, tmp_path):
    bucket = s3.bucket("videos")
    names = ["h264_bpyramid.mp4", "hevc_open_gop.mp4", "vp9_altref.webm"]
    local_dir = tmp_path / "clips"
    local_dir.mkdir()
    for n in names:
        shutil.copyfile(MEDIA / "video" / n, local_dir / n)
    (local_dir / "notes.txt").write_text("not a video")
    s3.upload(bucket, local_dir, "clips")
    prefix = f"s3://{bucket}/clips"

    def episodes(d, root):
        return [(s, [(p.replace(root, ""), f) for p, f in cams]) for s, cams in map(d.clip, range(len(d)))]

    local = gm.VideoDataset([str(local_dir / n) for n in names], frames=4, stride=3)
    remote = gm.VideoDataset([f"{prefix}/{n}" for n in names], frames=4, stride=3, storage=s3.storage)
    assert len(remote) == len(local) > 0
    assert episodes(remote, prefix) == episodes(local, str(local_dir))
    listed = gm.VideoDataset(directory=prefix, frames=4, stride=3, storage=s3.storage)
    assert episodes(listed, prefix) == episodes(local, str(local_dir))
    seen = []
    scenes = gm.VideoDataset(scenes=[[f"{prefix}/{names[0]}"]], frames=4, storage=s3.storage,
                             progress=lambda done, total: seen.append((done, total)))
    assert len(scenes) > 0 and seen and seen[-1] == (1, 1)


def test_a_deleted_object_is_a_bad_sample_named_by_its_url(s3, good_folder, no_dist_env):
    bucket = s3.bucket("deleted")
    s3.upload(bucket, good_folder, "train")
    url = f"s3://{bucket}/train/"
    # No epoch started ahead: it would count the deleted object a second time in stats()
    # (a flaky "bad == 2", seen once in the whole suite here).
    skip = gm.ImageLoader(url, batch_size=4, device="cpu", transforms=[T.Resize((16, 16))],
                          storage=s3.storage, prefetch_next_epoch=False)
    fail = gm.ImageLoader(url, batch_size=4, device="cpu", transforms=[T.Resize((16, 16))],
                          storage=s3.storage, bad_samples="fail", prefetch_next_epoch=False)
    s3.client.delete_object(Bucket=bucket, Key="train/animals/baboon.jpg")
    batches = collect(skip)
    assert sum(len(b[0]) for b in batches) == 21  # 22 listed, one gone
    stats = skip.stats()
    assert stats["bad"] == 1
    assert f"{url}animals/baboon.jpg" in str(stats["first_errors"])
    with pytest.raises(gm.BadSampleError) as e:
        collect(fail)
    assert e.value.name == f"{url}animals/baboon.jpg"
    assert "404" in e.value.reason or "not found" in e.value.reason.lower()
    # The exception's traceback holds the loaders: stop their threads now, not at a later gc
    # (the teardown tests count threads).
    skip.close()
    fail.close()


def test_storage_failures_and_bad_options_raise_naming_the_url_or_key(s3):
    bucket = s3.bucket("errors")
    url = f"s3://{bucket}/nothing/"
    with pytest.raises(ValueError, match="no images found"):
        gm.ImageLoader(url, device="cpu", storage=s3.storage)
    # A server that refuses connections: OSError naming the URL, after the retries.
    unreachable = dict(s3.storage, endpoint="http://127.0.0.1:9", retries=1, connect_timeout="200ms")
    with pytest.raises(OSError, match=f"s3://{bucket}/train"):
        gm.ImageLoader(f"s3://{bucket}/train/", device="cpu", storage=unreachable)
    # A video that cannot be read is a bad file, as a local one is: named by its URL.
    with pytest.raises(gm.BadSampleError) as e:
        gm.VideoDataset([f"s3://{bucket}/v.mp4"], bad_files="fail", storage=s3.storage)
    assert e.value.name == f"s3://{bucket}/v.mp4" and "404" in e.value.reason
    with pytest.raises(ValueError, match="retries"):
        gm.ImageLoader(url, device="cpu", storage={"retries": "many"})
    with pytest.raises(TypeError, match="timeout"):
        gm.ImageLoader(url, device="cpu", storage={"timeout": [1]})
    with pytest.raises(ValueError, match="no_such_key"):
        gm.ImageLoader(url, device="cpu", storage=dict(s3.storage, no_such_key="1"))
