"""Kernel times of gm's detection loop (torch.profiler/CUPTI sees every kernel of the process)."""
import sys, time, os
sys.path.insert(0, os.path.join(os.getcwd()))
import detection_bench as db
import torch
from torch.profiler import profile, ProfilerActivity

def timed(epoch, torch_):
    epoch(0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        counts = epoch(1)
        counts = epoch(2)
        torch.cuda.synchronize()
        secs = time.perf_counter() - t0
    ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.device_time for e in ev) / 1e6  # us -> s (summed, overlapping streams counted twice)
    # union of kernel intervals: the GPU's busy wall time
    iv = sorted((e.time_range.start, e.time_range.end) for e in ev)
    union, cur = 0, None
    for s, e in iv:
        if cur is None or s > cur[1]:
            if cur: union += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    if cur: union += cur[1] - cur[0]
    print(f"PROF wall {secs:.3f}s kernels summed {busy:.3f}s union {union/1e6:.3f}s images {2*counts[0]}", file=sys.stderr)
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=70), file=sys.stderr)
    return 2 * counts[0] / secs, counts

db.timed = timed
db.main()
