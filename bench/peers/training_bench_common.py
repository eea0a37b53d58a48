"""What the detection and segmentation benches share: their settings from the environment,
one JSON line per measurement, and the timing of epochs after a warm-up."""
import json
import os
import time

REPEAT = int(os.environ.get("GM_BENCH_REPEAT", "4"))
EPOCHS = int(os.environ.get("GM_BENCH_EPOCHS", "3"))
BATCH = 16
DEVICE = os.environ.get("GM_BENCH_DEVICE", "cuda")  # "cpu": a smoke run without a GPU
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def host_times(loader):
    """Where a gm loader's time went, per image over every epoch (warm-up included): the host
    workers' reads (and masks), the GPU stages' decode (of it, the CUDA backend's) and
    transform (of it, the masks' preparation and upload), the samples whose masks went to the
    GPU as spans of 1s, and the share of the consumer's time spent waiting for batches."""
    s = loader.stats()
    n = max(s["samples"], 1)
    per_image = ("read_us", "decode_us", "decode_cuda_us", "transform_us", "mask_prepare_us",
                 "mask_upload_us")
    # Older builds lack the finer counters.
    times = {f"{k}_per_image": s[k] / n for k in per_image if k in s}
    spans = {"masks_from_spans": s["masks_from_spans"]} if "masks_from_spans" in s else {}
    return {**times, **spans, "wait_fraction": s["wait_fraction"]}


def env_int(name):
    """An integer setting from the environment, `None` when unset."""
    return int(os.environ[name]) if name in os.environ else None


def emit(**kw):
    print(json.dumps(kw), flush=True)


def timed(epoch, torch):
    """images/s of EPOCHS epochs after a warm-up one (`epoch(e)` returns a tuple whose first
    item is the images it delivered), with the last epoch's tuple."""
    secs = images = 0
    for e in range(EPOCHS + 1):
        t0 = time.perf_counter()
        counts = epoch(e)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        if e:
            secs += time.perf_counter() - t0
            images += counts[0]
    return images / secs, counts
