"""Reference affine / rotation / perspective warps by torchvision.transforms.v2.functional on
uint8 CHW tensors on the CPU (grid_sample with a fill mask, rounded back to uint8), the values
gm-transforms' warps (geometry.rs, the CPU twin and the fused kernel) are checked against.
Sources: the 64x48 photo crops and the random 37x53 image of .. (baboon, fruits, random).
Run with torch + torchvision installed:
    python3 make_references.py     (writes here: <source>_<case>.u8 and cases.json)
Outputs are HWC RGB u8, like the sources. cases.json records each case's arguments and, for
perspective cases, the coefficients torchvision computed for each source's size.
"""
import json
import os

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision.transforms.functional import _get_perspective_coeffs

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..")

# (name, op, arguments); fill is per RGB channel (0..255), or None.
CASES = [
    ("affine_rot_bilinear", "affine", dict(angle=23.7, translate=[0, 0], scale=1.0, shear=[0.0, 0.0],
                                           interpolation="bilinear", fill=[0, 0, 0])),
    ("affine_all_bilinear_fill", "affine", dict(angle=-31.2, translate=[5, -3], scale=0.83, shear=[12.5, -7.0],
                                                interpolation="bilinear", fill=[10, 200, 30])),
    ("affine_all_nearest_fill", "affine", dict(angle=47.0, translate=[-4, 6], scale=1.21, shear=[-9.0, 4.0],
                                               interpolation="nearest", fill=[255, 0, 128])),
    ("affine_center_bilinear", "affine", dict(angle=15.0, translate=[2, 1], scale=0.9, shear=[0.0, 0.0],
                                              interpolation="bilinear", fill=[0, 0, 0], center=[10.0, 20.0])),
    ("affine_translate_nearest", "affine", dict(angle=0.0, translate=[3, -2], scale=1.0, shear=[0.0, 0.0],
                                                interpolation="nearest", fill=[7, 7, 7])),
    ("affine_zoom_bilinear", "affine", dict(angle=0.0, translate=[0, 0], scale=1.7, shear=[0.0, 0.0],
                                            interpolation="bilinear", fill=[0, 0, 0])),
    ("affine_nofill_bilinear", "affine", dict(angle=-17.0, translate=[-6, 4], scale=1.1, shear=[4.0, 0.0],
                                              interpolation="bilinear", fill=None)),
    ("rotate_33.3_bilinear", "rotate", dict(angle=33.3, interpolation="bilinear", fill=[0, 0, 0])),
    ("rotate_-120_nearest_fill", "rotate", dict(angle=-120.0, interpolation="nearest", fill=[90, 60, 30])),
    ("rotate_180_nearest", "rotate", dict(angle=180.0, interpolation="nearest", fill=[0, 0, 0])),
    ("rotate_center_bilinear", "rotate", dict(angle=61.0, interpolation="bilinear", fill=[0, 0, 0],
                                              center=[5.0, 40.0])),
    # End points as offsets (dx, dy) from each corner: top-left, top-right, bottom-right, bottom-left.
    ("perspective_bilinear", "perspective", dict(offsets=[[3, 2], [-5, 4], [-2, -6], [1, -3]],
                                                 interpolation="bilinear", fill=[0, 0, 0])),
    ("perspective_nearest_fill", "perspective", dict(offsets=[[9, 0], [-1, 7], [-8, -2], [4, -9]],
                                                     interpolation="nearest", fill=[20, 40, 60])),
    ("perspective_nofill_bilinear", "perspective", dict(offsets=[[5, 5], [-3, 1], [0, -7], [2, -2]],
                                                        interpolation="bilinear", fill=None)),
]


def points(w, h, offsets):
    start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    end = [[x + dx, y + dy] for (x, y), (dx, dy) in zip(start, offsets)]
    return start, end


def apply(img, op, args):
    interp = F.InterpolationMode(args["interpolation"])
    # None is torchvision's functional default: zeros padding, no fill blend.
    fill = None if args["fill"] is None else [float(v) for v in args["fill"]]
    if op == "affine":
        return F.affine(img, angle=args["angle"], translate=args["translate"], scale=args["scale"],
                        shear=args["shear"], interpolation=interp, fill=fill, center=args.get("center"))
    if op == "rotate":
        return F.rotate(img, args["angle"], interpolation=interp, expand=False, center=args.get("center"),
                        fill=fill)
    h, w = img.shape[-2:]
    start, end = points(w, h, args["offsets"])
    return F.perspective(img, start, end, interpolation=interp, fill=fill)


def main():
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__, "sources": {},
                "cases": [{"name": n, "op": op, "args": args} for n, op, args in CASES], "coefficients": {}}
    with open(os.path.join(SOURCES, "cases.json")) as f:
        sizes = json.load(f)["sources"]
    for name, (w, h) in sizes.items():
        hwc = np.fromfile(os.path.join(SOURCES, f"{name}.rgb"), dtype=np.uint8).reshape(h, w, 3)
        manifest["sources"][name] = [w, h]
        for case, op, args in CASES:
            img = torch.from_numpy(hwc).permute(2, 0, 1).contiguous()
            out = apply(img, op, args)
            out.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(HERE, f"{name}_{case}.u8"))
            if op == "perspective":
                start, end = points(w, h, args["offsets"])
                manifest["coefficients"][f"{name}_{case}"] = _get_perspective_coeffs(start, end)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
