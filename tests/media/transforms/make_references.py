"""Reference photometric adjustments by torchvision.transforms.v2.functional on uint8 CHW tensors
(torchvision's integer path: each op clamps and converts back to uint8 by truncation), the values
gm-transforms' colour ops are checked against. Sources: two 64x48 crops of the real photos in
../resize (baboon, fruits) and one random 37x53 image. Run with torch + torchvision installed:
    python3 make_references.py        (writes here: <source>.rgb, <source>_<case>.u8, cases.json)
Outputs are HWC RGB u8, like the sources. A case is a list of (op, value) applied in order.
"""
import json
import os

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
RESIZE = os.path.join(HERE, "..", "resize")

# (case name, [(op, value), ...]); ColorJitter-like chains give the order and factors drawn.
CASES = [
    ("brightness_0.6", [("brightness", 0.6)]),
    ("brightness_1.37", [("brightness", 1.37)]),
    ("contrast_0.55", [("contrast", 0.55)]),
    ("contrast_1.6", [("contrast", 1.6)]),
    ("saturation_0.3", [("saturation", 0.3)]),
    ("saturation_1.8", [("saturation", 1.8)]),
    ("hue_0.21", [("hue", 0.21)]),
    ("hue_-0.43", [("hue", -0.43)]),
    ("grayscale", [("grayscale", None)]),
    ("solarize_128", [("solarize", 128)]),
    ("posterize_3", [("posterize", 3)]),
    ("invert", [("invert", None)]),
    ("jitter_a", [("hue", 0.07), ("contrast", 1.25), ("brightness", 0.83), ("saturation", 1.4)]),
    ("jitter_b", [("saturation", 0.62), ("brightness", 1.18), ("hue", -0.12), ("contrast", 0.71)]),
    # Autocontrast after ops that narrow the range (the sources span most of 0..255 already).
    ("brightness_autocontrast", [("brightness", 0.55), ("autocontrast", None)]),
    ("posterize_autocontrast_contrast", [("posterize", 2), ("autocontrast", None), ("contrast", 0.8)]),
    ("equalize", [("equalize", None)]),
    ("brightness_equalize_contrast", [("brightness", 0.4), ("equalize", None), ("contrast", 1.3)]),
    ("sharpness_0.2", [("sharpness", 0.2)]),
    ("sharpness_2.6", [("sharpness", 2.6)]),
    ("brightness_sharpness_contrast", [("brightness", 0.8), ("sharpness", 1.7), ("contrast", 1.2)]),
]


def apply(img, op, value):
    if op == "brightness":
        return F.adjust_brightness(img, value)
    if op == "contrast":
        return F.adjust_contrast(img, value)
    if op == "saturation":
        return F.adjust_saturation(img, value)
    if op == "hue":
        return F.adjust_hue(img, value)
    if op == "grayscale":
        return F.rgb_to_grayscale(img, num_output_channels=3)
    if op == "solarize":
        return F.solarize(img, value)
    if op == "posterize":
        return F.posterize(img, value)
    if op == "invert":
        return F.invert(img)
    if op == "autocontrast":
        return F.autocontrast(img)
    if op == "equalize":
        return F.equalize(img)
    if op == "sharpness":
        return F.adjust_sharpness(img, value)
    raise ValueError(op)


def sources():
    out = {}
    for name, (x, y) in (("baboon", (70, 40)), ("fruits", (100, 60))):
        full = np.fromfile(os.path.join(RESIZE, f"{name}.rgb"), dtype=np.uint8).reshape(133, 200, 3)
        out[name] = np.ascontiguousarray(full[y:y + 48, x:x + 64])
    g = torch.Generator().manual_seed(23)
    out["random"] = torch.randint(0, 256, (53, 37, 3), dtype=torch.uint8, generator=g).numpy()
    return out


def main():
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                "sources": {}, "cases": [{"name": n, "ops": [[o, v] for o, v in ops]} for n, ops in CASES]}
    for name, hwc in sources().items():
        hwc.tofile(os.path.join(HERE, f"{name}.rgb"))
        manifest["sources"][name] = [hwc.shape[1], hwc.shape[0]]
        for case, ops in CASES:
            img = torch.from_numpy(hwc).permute(2, 0, 1).contiguous()
            for op, value in ops:
                img = apply(img, op, value)
            img.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(HERE, f"{name}_{case}.u8"))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
