"""Reference resizes of tests/media/resize/*.rgb (200x133 RGB crops of real photos) by OpenCV and
torchvision, computed in float32 and stored rounded to u8: the values gm-transforms' resize is
checked against. Run where cv2 and torch are installed (the GPU machine):
    python3 make_references.py OUTDIR
Cases (output sizes chosen odd on purpose): bilinear and bicubic down to 97x61 and up to
233x151, nearest-exact down to 97x61 (OpenCV INTER_NEAREST_EXACT = torch 'nearest-exact'), and
torch's antialiased bilinear down to 97x61 and 61x40 (no OpenCV equivalent).
"""
import sys

import cv2
import numpy as np
import torch

W, H = 200, 133
CASES = [("bilinear", 97, 61), ("bilinear", 233, 151), ("nearest", 97, 61),
         ("bicubic", 97, 61), ("bicubic", 233, 151), ("antialias", 97, 61), ("antialias", 61, 40)]
CV = {"bilinear": cv2.INTER_LINEAR, "nearest": cv2.INTER_NEAREST_EXACT, "bicubic": cv2.INTER_CUBIC}
TORCH = {"bilinear": ("bilinear", False), "nearest": ("nearest-exact", None), "bicubic": ("bicubic", False),
         "antialias": ("bilinear", True)}


def main(out):
    for name in ("baboon", "fruits"):
        src = np.fromfile(f"{name}.rgb", dtype=np.uint8).reshape(H, W, 3).astype(np.float32)
        t = torch.from_numpy(src).permute(2, 0, 1)[None]
        for mode, w, h in CASES:
            tm, aa = TORCH[mode]
            kw = {} if aa is None else {"align_corners": False, "antialias": aa}
            tv = torch.nn.functional.interpolate(t, size=(h, w), mode=tm, **kw)[0].permute(1, 2, 0).numpy()
            outs = [("torch", tv)]
            if mode in CV:
                cv = cv2.resize(src, (w, h), interpolation=CV[mode])
                outs.append(("opencv", cv))
            for lib, arr in outs:
                q = np.clip(np.rint(arr), 0, 255).astype(np.uint8)
                q.tofile(f"{out}/{name}_{mode}_{w}x{h}_{lib}.u8")
            if len(outs) == 2:
                print(name, mode, w, h, "max |opencv - torch| =", float(np.abs(outs[1][1] - tv).max()))


if __name__ == "__main__":
    main(sys.argv[1])
