"""Peers of gm-codec's JPEG bench, on the same folders, in the same run: torchvision's
decode_jpeg(list, device='cuda') and nvImageCodec's Decoder.decode(list), batches of 128,
with 1 and 4 threads (each thread its own nvImageCodec decoder). Every batch is synchronized
before the next, as gm's bench waits on each batch's ready event. Prints one JSON object per
measurement: median images/s over the repetitions, spread, host CPU time per image, and the
device memory held (free memory before and after, torch's caching allocator included).
Usage: python3 jpeg_decode_bench.py DIR...   (GM_BENCH_REPS, GM_BENCH_PASSES as for gm)
"""
import json
import os
import sys
import threading
import time

import torch
import torchvision
from torchvision.io import decode_jpeg

BATCH = 128
REPS = int(os.environ.get("GM_BENCH_REPS", "3"))


def emit(**kw):
    print(json.dumps(kw), flush=True)


def load(d):
    names = sorted(os.listdir(d))
    return [open(os.path.join(d, n), "rb").read() for n in names]


def batches(files, passes, threads):
    total = max((len(files) * passes + BATCH - 1) // BATCH, threads * 2)
    return [[files[(b * BATCH + k) % len(files)] for k in range(BATCH)] for b in range(total)]


def measure(name, impl, set_name, files, make_decode, threads, passes):
    free0 = torch.cuda.mem_get_info()[0]
    decoders = [make_decode() for _ in range(threads)]
    work = batches(files, passes, threads)
    warm = [[files[(b * BATCH + k) % len(files)] for k in range(BATCH)]
            for b in range(max((len(files) + BATCH - 1) // BATCH, 1))]

    def one_pass(bs):
        nxt = [0]
        lock = threading.Lock()
        count = [0]

        def worker(dec):
            while True:
                with lock:
                    b = nxt[0]
                    nxt[0] += 1
                if b >= len(bs):
                    return
                n = dec(bs[b])
                torch.cuda.current_stream().synchronize()
                with lock:
                    count[0] += n
        ts = [threading.Thread(target=worker, args=(d,)) for d in decoders]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return count[0]

    for d in decoders:
        for b in warm:
            d(b)
    torch.cuda.synchronize()
    rates, cpu = [], []
    for _ in range(REPS):
        c0 = time.process_time()
        t0 = time.perf_counter()
        n = one_pass(work)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        rates.append(n / dt)
        cpu.append((time.process_time() - c0) / max(n, 1) * 1e6)
    free1 = torch.cuda.mem_get_info()[0]
    rates.sort()
    emit(bench="jpeg_decode", impl=impl, set=set_name, config=name, threads=threads,
         batch=BATCH, images_per_s=rates[len(rates) // 2], min=rates[0], max=rates[-1],
         reps=REPS, images_per_rep=len(work) * BATCH, cpu_us_per_image=sum(cpu) / len(cpu),
         gpu_mem_held_mb=(free0 - free1) / 1e6)


def torchvision_decoder():
    def dec(batch):
        ts = [torch.frombuffer(b, dtype=torch.uint8) for b in batch]
        out = decode_jpeg(ts, device="cuda")
        return len(out)
    return dec


def nvimgcodec_decoder():
    from nvidia import nvimgcodec
    d = nvimgcodec.Decoder()

    def dec(batch):
        out = d.decode(batch)
        return sum(1 for o in out if o is not None)
    return dec


def main():
    torch.cuda.init()
    emit(bench="env", torch=torch.__version__, torchvision=torchvision.__version__,
         gpu=torch.cuda.get_device_name(0))
    try:
        from nvidia import nvimgcodec
        emit(bench="env", nvimgcodec=getattr(nvimgcodec, "__version__", "?"))
        have_nvimg = True
    except Exception as e:  # noqa: BLE001 - report and go on with the other peer
        emit(bench="env", nvimgcodec_error=repr(e))
        have_nvimg = False
    for d in sys.argv[1:]:
        files = load(d)
        set_name = os.path.basename(os.path.normpath(d))
        large = set_name == "large"
        passes = int(os.environ.get("GM_BENCH_PASSES", "300" if large else "25"))
        for threads in (1, 4):
            try:
                measure(f"torchvision t{threads}", "torchvision", set_name, files,
                        torchvision_decoder, threads, passes)
            except Exception as e:  # noqa: BLE001
                emit(bench="jpeg_decode", impl="torchvision", set=set_name, threads=threads, error=repr(e))
            if have_nvimg:
                try:
                    measure(f"nvimgcodec t{threads}", "nvimgcodec", set_name, files,
                            nvimgcodec_decoder, threads, passes)
                except Exception as e:  # noqa: BLE001
                    emit(bench="jpeg_decode", impl="nvimgcodec", set=set_name, threads=threads, error=repr(e))


if __name__ == "__main__":
    main()
