"""torchvision's uint8 antialiased bilinear resize of tests/media/resize/*.rgb (200x133 RGB crops
of real photos), and chains after it, as torchvision computes them on uint8 CHW tensors (its CPU
integer arithmetic: int16 weights, a horizontal then a vertical pass, each rounded to uint8):
the values gm-transforms' exact uint8 resize is checked against. Run where torch and
torchvision are installed (the GPU machine):
    python3 make_u8_references.py OUTDIR     (writes OUTDIR/u8_cases.json and <source>_u8_<case>.u8)
Outputs are HWC RGB u8, like the sources. A case is a crop box (top, left, height, width; the
whole image when null), an output size (width, height), and photometric ops applied after.
"""
import json
import sys

import numpy as np
import torch
import torchvision.transforms.v2.functional as F

W, H = 200, 133
# (name, crop box or None, (width, height), [(op, value), ...])
CASES = [
    ("down_97x61", None, (97, 61), []),
    ("down_61x40", None, (61, 40), []),
    ("down_13x9", None, (13, 9), []),
    ("up_233x151", None, (233, 151), []),
    ("width_only_150x133", None, (150, 133), []),
    ("height_only_200x70", None, (200, 70), []),
    ("crop_64x64", (10, 17, 101, 151), (64, 64), []),
    ("crop_56x56_whole", (0, 0, 133, 200), (56, 56), []),
    ("crop_up_80x80", (33, 5, 57, 91), (80, 80), []),
    ("crop_31x47", (7, 120, 120, 79), (31, 47), []),
    ("equalize_97x61", None, (97, 61), [("equalize", None)]),
    ("sharpness_64x64", (10, 17, 101, 151), (64, 64), [("sharpness", 1.7)]),
    ("jitter_56x56", (20, 30, 100, 120), (56, 56), [("brightness", 1.3), ("contrast", 0.8), ("saturation", 1.2)]),
    ("autocontrast_61x40", None, (61, 40), [("brightness", 0.6), ("autocontrast", None)]),
]


def apply(img, op, value):
    return {
        "equalize": lambda: F.equalize(img),
        "sharpness": lambda: F.adjust_sharpness(img, value),
        "brightness": lambda: F.adjust_brightness(img, value),
        "contrast": lambda: F.adjust_contrast(img, value),
        "saturation": lambda: F.adjust_saturation(img, value),
        "autocontrast": lambda: F.autocontrast(img),
    }[op]()


def main(out):
    cases = []
    for name in ("baboon", "fruits"):
        src = np.fromfile(f"{name}.rgb", dtype=np.uint8).reshape(H, W, 3)
        t = torch.from_numpy(src).permute(2, 0, 1).contiguous()
        for case, box, (w, h), ops in CASES:
            if box is None:
                img = F.resize(t, [h, w], antialias=True)
            else:
                img = F.resized_crop(t, *box, [h, w], antialias=True)
            assert img.dtype == torch.uint8
            for op, value in ops:
                img = apply(img, op, value)
            img.permute(1, 2, 0).contiguous().numpy().tofile(f"{out}/{name}_u8_{case}.u8")
            if name == "baboon":
                cases.append({"case": case, "box": box, "size": [w, h], "ops": ops})
    with open(f"{out}/u8_cases.json", "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
