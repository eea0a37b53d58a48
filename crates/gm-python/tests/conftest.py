"""Shared fixtures: datasets built from the repository's real images and videos. The tests
under gpu/ need a GPU and PyTorch: they skip without them, except where GM_REQUIRE_GPU=1
(the GPU machine's run), where a missing GPU is a failure."""

import logging
import os
import pathlib
import shutil

import numpy as np
import pytest

import gm
from gm import transforms as T

REPO = pathlib.Path(__file__).resolve().parents[3]
DEMO = REPO / "assets" / "demo" / "images"
MEDIA = REPO / "tests" / "media"


def libavcodec_missing(e: Exception) -> bool:
    """Whether `e` says FFmpeg's libavcodec could not be loaded, and GM_REQUIRE_LIBAVCODEC does
    not say it must be there: the tests that need FFmpeg's decoders skip then."""
    return "libavcodec" in str(e) and not os.environ.get("GM_REQUIRE_LIBAVCODEC")


def cpu_decoder_or_skip(path, **kw):
    """A decoder on the CPU; skips where FFmpeg's libraries are missing (AV1 needs none),
    unless GM_REQUIRE_LIBAVCODEC says they must be there."""
    d = gm.VideoDecoder(str(path), device="cpu", **kw)
    try:
        d[0]
    except gm.GmError as e:
        if libavcodec_missing(e):
            pytest.skip(f"no FFmpeg libraries: {e}")
        raise
    return d


def gm_thread_count() -> int:
    """Threads of this process that gm's loaders started (their names start with "gm-"),
    not counting the storage runtime's two I/O threads ("gm-storage"), which serve every
    loader that reads URLs and live as long as the process."""
    n = 0
    for comm in pathlib.Path("/proc/self/task").glob("*/comm"):
        try:
            name = comm.read_text().strip()
            if name.startswith("gm-") and name != "gm-storage":
                n += 1
        except OSError:
            pass
    return n


@pytest.fixture(scope="session")
def demo_folder() -> pathlib.Path:
    """23 images in five classes, one of them truncated (bad)."""
    return DEMO


@pytest.fixture()
def good_folder(tmp_path: pathlib.Path) -> pathlib.Path:
    """The demo images without the truncated one: 22 images in five classes."""
    root = tmp_path / "good"
    shutil.copytree(DEMO, root)
    for p in root.rglob("*truncated*"):
        p.unlink()
    return root


@pytest.fixture()
def many_folder(tmp_path: pathlib.Path) -> pathlib.Path:
    """96 small JPEGs in three classes (copies of a real photograph in three chroma
    subsamplings), for epochs with many batches."""
    root = tmp_path / "many"
    sources = sorted((MEDIA / "jpeg").glob("baboon-201x151-4[0-9][0-9].jpg"))  # 420, 422, 440
    assert len(sources) == 3
    for c, src in enumerate(sources):
        d = root / f"class{c}"
        d.mkdir(parents=True)
        for i in range(32):
            shutil.copyfile(src, d / f"{i:03}.jpg")
    return root


@pytest.fixture()
def no_dist_env(monkeypatch):
    """No launcher variables: loaders are not sharded unless told."""
    for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"):
        monkeypatch.delenv(v, raising=False)


def pytest_collection_modifyitems(config, items):
    try:
        import torch  # noqa: F401

        have_torch = torch.cuda.is_available()
    except ImportError:
        have_torch = False
    if gm.cuda_available() and have_torch:
        return
    if os.environ.get("GM_REQUIRE_GPU") == "1":
        raise pytest.UsageError("GM_REQUIRE_GPU=1 but there is no GPU or no PyTorch with CUDA")
    skip = pytest.mark.skip(reason="needs a GPU and PyTorch with CUDA")
    for item in items:
        if "/gpu/" in str(item.fspath):
            item.add_marker(skip)


class S3:
    """moto's S3 server in this process, on a free loopback port, with a boto3 client and the
    ``storage=`` options that reach it."""

    def __init__(self, server, endpoint):
        import boto3

        self.server = server
        self.endpoint = endpoint
        self.client = boto3.client(
            "s3", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
        )
        self.storage = {
            "endpoint": endpoint, "region": "us-east-1", "allow_http": True,
            "access_key_id": "test", "secret_access_key": "test",
            # Failures show in seconds, not after gm's default 20 s retry budget.
            "retries": 2, "backoff_min": "10ms", "backoff_max": "50ms", "timeout": 10,
        }
        self.buckets = 0

    def bucket(self, name):
        """A new bucket for one test."""
        self.buckets += 1
        bucket = f"{name}-{self.buckets}"
        self.client.create_bucket(Bucket=bucket)
        return bucket

    def upload(self, bucket, folder, prefix):
        """Every file under ``folder`` as ``prefix/<relative path>``; returns their count."""
        files = sorted(p for p in pathlib.Path(folder).rglob("*") if p.is_file())
        for p in files:
            key = f"{prefix}/{p.relative_to(folder).as_posix()}"
            self.client.put_object(Bucket=bucket, Key=key, Body=p.read_bytes())
        return len(files)


@pytest.fixture(scope="session")
def s3():
    """moto's ThreadedMotoServer (pinned with the package's test extra): skipped when moto is
    not installed, a failure when GM_REQUIRE_S3=1 (CI)."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        if os.environ.get("GM_REQUIRE_S3") == "1":
            pytest.fail("GM_REQUIRE_S3=1 but moto is not installed (pip install gradient-mechanics-rs[test])")
        pytest.skip("no S3 test server: pip install moto[s3] (the test extra has it)")
    # One log record per request would bury a failure's report.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield S3(server, f"http://{host}:{port}")
    finally:
        server.stop()


# Batch comparisons shared by the tests of remote and sharded sources.

def collect(loader):
    """Every batch of one iteration: (indices, labels, images as NumPy)."""
    return [
        (list(b.indices), np.from_dlpack(b.labels).copy(), np.from_dlpack(b.images).copy())
        for b in loader
    ]


def augmenting(source, **kw):
    """Shuffled, randomly cropped and flipped batches: any change of order, label, byte or
    seed shows."""
    return gm.ImageLoader(
        source, batch_size=4, device="cpu", shuffle=True, seed=11, workers=2,
        prefetch_next_epoch=False,
        transforms=[T.RandomResizedCrop((32, 32)), T.RandomHorizontalFlip()], **kw,
    )


def assert_same_batches(a, b):
    assert len(a) == len(b) and len(a) > 0
    for (ia, la, xa), (ib, lb, xb) in zip(a, b):
        assert ia == ib
        np.testing.assert_array_equal(la, lb)
        np.testing.assert_array_equal(xa, xb)
