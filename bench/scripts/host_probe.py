"""What a host gives each of N busy processes at once: compute (SHA-256 over a 1 MiB buffer
that stays in cache) and memory bandwidth (numpy copies of 64 MiB arrays), per process, for
N in the counts given. On a host whose logical CPUs are hyperthreads, or whose clock falls
under all-core load, the per-process compute rate drops as N passes the physical cores; a
shared memory system shows in the copy rate. One JSON line per (test, N).

Usage: python3 host_probe.py 1 16 32 64 [--seconds 3] [--only compute|copy]
"""

import hashlib
import json
import multiprocessing as mp
import sys
import time


def compute(seconds, q):
    buf = bytes(1 << 20)
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        hashlib.sha256(buf).digest()
        n += 1
    q.put(n / (time.perf_counter() - t))  # MiB/s


def copy(seconds, q):
    import numpy as np

    a = np.ones(8 << 20)  # 64 MiB of float64
    b = np.empty_like(a)
    n, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        np.copyto(b, a)
        n += 1
    q.put(n * 2 * a.nbytes / (time.perf_counter() - t) / 1e9)  # GB/s read + written


def run(test, n, seconds):
    q = mp.Queue()
    procs = [mp.Process(target=test, args=(seconds, q)) for _ in range(n)]
    for p in procs:
        p.start()
    rates = sorted(q.get() for _ in procs)
    for p in procs:
        p.join()
    return rates


def main():
    args = sys.argv[1:]
    seconds = 3.0
    if "--seconds" in args:
        i = args.index("--seconds")
        seconds = float(args[i + 1])
        del args[i : i + 2]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i : i + 2]
    for name, test, unit in [("compute", compute, "MiB/s"), ("copy", copy, "GB/s")]:
        if only not in (None, name):
            continue
        for n in map(int, args):
            r = run(test, n, seconds)
            print(
                json.dumps(
                    {
                        "probe": name,
                        "processes": n,
                        "unit": unit,
                        "per_process_median": round(r[len(r) // 2], 2),
                        "per_process_min": round(r[0], 2),
                        "total": round(sum(r), 1),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
