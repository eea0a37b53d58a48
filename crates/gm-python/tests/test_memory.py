"""Many epochs do not grow memory: Python objects (tracemalloc) or the process (RSS)."""

import gc
import resource
import tracemalloc

import numpy as np

import gm
from gm import transforms as T

from conftest import MEDIA


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def test_no_growth_over_many_epochs(tmp_path, no_dist_env):
    small = sorted((MEDIA / "jpeg").glob("*.jpg"))
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"{p} {i % 3}\n" for i, p in enumerate(small * 4)))
    loader = gm.ImageLoader(str(listing), batch_size=4, shuffle=True, device="cpu",
                            transforms=[T.RandomResizedCrop(64), T.ToDtype("float32", scale=True)])

    def epoch():
        for images, labels in loader:
            np.from_dlpack(images).sum()
            np.from_dlpack(labels).sum()

    for _ in range(5):  # warm up: pools, buffers and caches reach their size
        epoch()
    gc.collect()
    tracemalloc.start()
    before_py = tracemalloc.get_traced_memory()[0]
    before_rss = rss_bytes()
    for _ in range(40):
        epoch()
    gc.collect()
    after_py = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    after_rss = rss_bytes()
    assert after_py - before_py < 256 * 1024, after_py - before_py
    # A batch kept alive per step would add 24 MB.
    assert after_rss - before_rss < 8 * 1024 * 1024, after_rss - before_rss
