"""torchvision's detection references' GroupedBatchSampler and create_aspect_ratio_groups on
given orders: the references for gm's GroupedBatchSampler (crates/gm-loader/tests/grouped.rs).
The sampler and the grouping are written here after torchvision's
references/detection/group_by_aspect_ratio.py (not part of the torchvision package): aspect
ratio height / width, bins 2^linspace(-1, 1, 2k + 1) or [1.0] for k = 0, the leftover
buffers completed fullest first with the group's samples repeated. python make_references.py > cases.json"""
import bisect
import copy
import json
import math
import random
from collections import defaultdict
from itertools import chain, repeat

import numpy as np


def _repeat_to_at_least(iterable, n):
    repeat_times = math.ceil(n / len(iterable))
    repeated = chain.from_iterable(repeat(iterable, repeat_times))
    return list(repeated)


def grouped_batches(order, group_ids, batch_size):
    buffer_per_group = defaultdict(list)
    samples_per_group = defaultdict(list)
    out = []
    for idx in order:
        group_id = group_ids[idx]
        buffer_per_group[group_id].append(idx)
        samples_per_group[group_id].append(idx)
        if len(buffer_per_group[group_id]) == batch_size:
            out.append(buffer_per_group[group_id])
            del buffer_per_group[group_id]
        assert len(buffer_per_group[group_id]) < batch_size
    num_remaining = len(order) // batch_size - len(out)
    if num_remaining > 0:
        for group_id, _ in sorted(buffer_per_group.items(), key=lambda x: len(x[1]), reverse=True):
            remaining = batch_size - len(buffer_per_group[group_id])
            samples = _repeat_to_at_least(samples_per_group[group_id], remaining)
            buffer_per_group[group_id].extend(samples[:remaining])
            out.append(buffer_per_group[group_id])
            num_remaining -= 1
            if num_remaining == 0:
                break
    return out


def quantize(x, bins):
    bins = sorted(copy.deepcopy(bins))
    return [bisect.bisect_right(bins, y) for y in x]


def groups(sizes, k):
    bins = (2 ** np.linspace(-1, 1, 2 * k + 1)).tolist() if k > 0 else [1.0]
    return quantize([float(h) / float(w) for w, h in sizes], bins)


def main():
    rng = random.Random(3)
    cases = []
    for n, bs, k in [(50, 4, 3), (97, 8, 3), (33, 2, 1), (200, 16, 3), (10, 3, 0)]:
        sizes = [(rng.choice([640, 480, 427, 333, 500, 612]), rng.choice([480, 640, 375, 500, 427]))
                 for _ in range(n)]
        g = groups(sizes, k)
        order = list(range(n))
        rng.shuffle(order)
        cases.append({"sizes": sizes, "k": k, "groups": g, "order": order, "batch_size": bs,
                      "batches": grouped_batches(order, g, bs)})
    print(json.dumps(cases))


if __name__ == "__main__":
    main()
