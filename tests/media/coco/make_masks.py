"""COCO masks as pycocotools makes them: the references for gm's polygon rasterization and
RLE decoding (crates/gm-loader/src/coco, tests in crates/gm-loader/tests/coco.py's Rust twin
coco.rs). python make_masks.py > masks.json (pycocotools 2.0.x made the committed file)."""
import json
import random

import numpy as np
from pycocotools import mask as mu


def polygon(rng, w, h):
    n = rng.randint(3, 12)
    cx, cy, r = rng.uniform(-5, w + 5), rng.uniform(-5, h + 5), rng.uniform(1, max(w, h) / 2)
    pts = []
    for k in range(n):
        a = 2 * np.pi * k / n + rng.uniform(-0.3, 0.3)
        rr = r * rng.uniform(0.3, 1.0)
        pts += [cx + rr * np.cos(a), cy + rr * np.sin(a)]
    if rng.random() < 0.2:
        pts = [round(v, 1) for v in pts]  # COCO's one decimal, with repeated points
        pts += pts[-2:]
    return [float(v) for v in pts]


def main():
    rng = random.Random(7)
    cases = []
    for i in range(200):
        w, h = rng.randint(1, 90), rng.randint(1, 70)
        polys = [polygon(rng, w, h) for _ in range(rng.randint(1, 3))]
        rle = mu.merge(mu.frPyObjects(polys, h, w))
        cases.append({"width": w, "height": h, "polygons": polys,
                      "counts": rle["counts"].decode(), "area": int(mu.area(rle))})
    # Uncompressed counts (crowd annotations) through frPyObjects, compressed by pycocotools.
    for i in range(40):
        w, h = rng.randint(1, 60), rng.randint(1, 50)
        m = (np.random.default_rng(i).random((h, w)) < rng.uniform(0.05, 0.9)).astype(np.uint8)
        enc = mu.encode(np.asfortranarray(m))
        runs = []
        flat, cur, n = m.flatten(order="F"), 0, 0
        for v in flat:
            if v != cur:
                runs.append(n)
                cur, n = v, 0
            n += 1
        runs.append(n)
        cases.append({"width": w, "height": h, "uncompressed": runs,
                      "counts": enc["counts"].decode(), "area": int(m.sum())})
    print(json.dumps(cases))


if __name__ == "__main__":
    main()
