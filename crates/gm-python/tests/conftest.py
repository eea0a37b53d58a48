"""Shared fixtures: datasets built from the repository's real images and videos. The tests
under gpu/ need a GPU and PyTorch: they skip without them, except where GM_REQUIRE_GPU=1
(the GPU machine's run), where a missing GPU is a failure."""

import os
import pathlib
import shutil

import pytest

import gm

REPO = pathlib.Path(__file__).resolve().parents[3]
DEMO = REPO / "assets" / "demo" / "images"
MEDIA = REPO / "tests" / "media"


def gm_thread_count() -> int:
    """Threads of this process that gm started (their names start with "gm-")."""
    n = 0
    for comm in pathlib.Path("/proc/self/task").glob("*/comm"):
        try:
            if comm.read_text().startswith("gm-"):
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
    sources = sorted((MEDIA / "jpeg").glob("*.jpg"))  # three 201x151 photographs
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
