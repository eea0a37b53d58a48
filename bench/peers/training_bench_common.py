"""What the detection and segmentation benches share: their settings from the environment,
one JSON line per measurement, and the timing of epochs after a warm-up."""
import json
import os
import pathlib
import time

REPEAT = int(os.environ.get("GM_BENCH_REPEAT", "4"))
EPOCHS = int(os.environ.get("GM_BENCH_EPOCHS", "3"))
# GM_BENCH_BATCH: images per batch (default 16, as detection recipes use per GPU or fewer).
BATCH = int(os.environ.get("GM_BENCH_BATCH", "16"))
DEVICE = os.environ.get("GM_BENCH_DEVICE", "cuda")  # "cpu": a smoke run without a GPU
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def host_times(loader):
    """Where a gm loader's time went, per image over every epoch (warm-up included): the host
    workers' reads (and masks), the GPU stages' decode (of it, the CUDA backend's) and
    transform (of it, the masks' preparation and upload), the stages' moving of targets, the
    samples whose masks went to the GPU as spans of 1s, and the share of the consumer's time spent waiting for batches."""
    s = loader.stats()
    n = max(s["samples"], 1)
    per_image = ("read_us", "decode_us", "decode_plan_us", "decode_hardware_us", "decode_cuda_us",
                 "transform_us", "mask_prepare_us", "mask_upload_us", "targets_us")
    # Older builds lack the finer counters.
    times = {f"{k}_per_image": s[k] / n for k in per_image if k in s}
    if "targets_us_per_image" in times:
        # The stages' moving of targets, apart from the detection loop's own targets time.
        times["stage_targets_us_per_image"] = times.pop("targets_us_per_image")
    spans = {"masks_from_spans": s["masks_from_spans"]} if "masks_from_spans" in s else {}
    paths = {"decode_paths": s["decode_paths"]} if "decode_paths" in s else {}
    return {**times, **spans, **paths, "wait_fraction": s["wait_fraction"],
            "cores_by_thread": TIMED.get("cores")}


def thread_times():
    """CPU seconds of this process's threads so far, by thread name with its trailing number
    dropped (gm's threads are named by role: gm-loader-read-N, gm-loader-stage-N, ...), from
    /proc/self/task (Linux; empty elsewhere)."""
    import re
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = {}
    for task in pathlib.Path("/proc/self/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        key = re.sub(r"[-_]?\d+$", "", name)
        out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def cores_by_thread(before, after, secs):
    """Cores each thread group used between two `thread_times` snapshots `secs` apart (threads
    that ended in between are not counted)."""
    return {k: round((v - before.get(k, 0.0)) / secs, 2) for k, v in sorted(after.items())
            if v - before.get(k, 0.0) > 0.005 * secs}


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
        if e == 1:
            TIMED["threads"] = thread_times()
        t0 = time.perf_counter()
        counts = epoch(e)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        if e:
            secs += time.perf_counter() - t0
            images += counts[0]
    TIMED["cores"] = cores_by_thread(TIMED["threads"], thread_times(), secs)
    return images / secs, counts


# What the last `timed` measured besides its rate: "cores", the cores by thread group over
# its timed epochs.
TIMED = {}
