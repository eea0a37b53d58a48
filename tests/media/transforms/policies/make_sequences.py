"""Reference RandAugment / AutoAugment operation sequences by torchvision.transforms.v2 on uint8
CHW tensors on the CPU, given the drawn operations: each case applies torchvision's own
``_apply_image_or_video_transform`` to the previous one's output, as ``RandAugment.forward`` and
``AutoAugment.forward`` do, with magnitudes from their ``_AUGMENTATION_SPACE`` (RandAugment's
bin 9 of 31, its default; AutoAugment's 10 bins) for the source's size. gm-transforms' policies
(policies.rs, plan_sequence) are checked against these (tests/policies.rs). Sources: the baboon
crop and the random 37x53 image of .. Run with torch + torchvision installed:
    python3 make_sequences.py   (writes sequences/<source>_<case>.u8 and sequences.json here)
Outputs are HWC RGB u8, like the sources. "exact" marks the sequences one fused pass
reproduced bit for bit before 2026-11-24 (at most one warp, nearest, colour operations after
it or pointwise before it); since then the plan cuts the others into passes and reproduces
them too (docs/transforms.md, "Passes"), so the flag only tells the two kinds apart.
"""
import json
import os

import numpy as np
import torch
import torchvision
from torchvision.transforms import v2
from torchvision.transforms.v2._utils import _setup_fill_arg

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..")
FILL = [128, 64, 200]

# (space, [(op, bin, negative)], interpolation, fill, exact)
CASES = [
    ("rand", [("Posterize", 9, False), ("Solarize", 9, False)], "nearest", None, True),
    ("rand", [("Color", 9, True), ("Contrast", 9, False)], "nearest", None, True),
    ("rand", [("Equalize", 0, False), ("Equalize", 0, False)], "nearest", None, True),
    ("rand", [("Solarize", 9, False), ("AutoContrast", 0, False)], "nearest", None, True),
    ("rand", [("Sharpness", 9, False), ("Brightness", 9, True)], "nearest", None, True),
    ("rand", [("Rotate", 9, False), ("Equalize", 0, False)], "nearest", None, True),
    ("rand", [("ShearX", 9, True), ("Contrast", 9, False)], "nearest", None, True),
    ("rand", [("TranslateX", 9, False), ("AutoContrast", 0, False)], "nearest", None, True),
    ("rand", [("ShearY", 9, False), ("Sharpness", 9, True)], "nearest", None, True),
    ("rand", [("Rotate", 9, True), ("Color", 9, False)], "nearest", None, True),
    ("rand", [("Posterize", 9, False), ("Rotate", 9, True)], "nearest", None, True),
    ("rand", [("Brightness", 9, False), ("ShearX", 9, False)], "nearest", None, True),
    ("rand", [("Solarize", 9, False), ("TranslateY", 9, True)], "nearest", None, True),
    ("rand", [("Identity", 0, False), ("Rotate", 9, False)], "nearest", None, True),
    ("rand", [("TranslateX", 9, True), ("TranslateY", 9, False)], "nearest", None, True),
    ("rand", [("Rotate", 9, False), ("Solarize", 9, False)], "nearest", FILL, True),
    ("rand", [("Brightness", 9, False), ("Rotate", 9, False)], "nearest", FILL, True),
    ("auto", [("Invert", 0, False), ("Rotate", 3, False)], "nearest", FILL, True),
    ("auto", [("Invert", 0, False), ("ShearX", 4, True)], "nearest", None, True),
    ("auto", [("Posterize", 8, False), ("Rotate", 9, False)], "nearest", None, True),
    ("auto", [("Rotate", 8, True), ("Color", 0, False)], "nearest", None, True),
    ("auto", [("Invert", 0, False), ("Equalize", 0, False)], "nearest", None, True),
    ("auto", [("ShearX", 5, False), ("Equalize", 0, False)], "nearest", None, True),
    ("auto", [("Color", 4, False), ("Contrast", 8, True)], "nearest", None, True),
    ("auto", [("Sharpness", 7, True), ("Invert", 0, False)], "nearest", None, True),
    ("rand", [("Rotate", 9, False), ("ShearX", 9, True)], "nearest", None, False),
    ("rand", [("ShearX", 9, False), ("ShearY", 9, True)], "nearest", None, False),
    ("rand", [("Rotate", 9, True), ("TranslateX", 9, False)], "nearest", None, False),
    ("rand", [("TranslateY", 9, False), ("Rotate", 9, False)], "nearest", FILL, False),
    ("rand", [("Equalize", 0, False), ("Rotate", 9, False)], "nearest", None, False),
    ("rand", [("Contrast", 9, True), ("ShearY", 9, False)], "nearest", None, False),
    ("rand", [("Sharpness", 9, False), ("Rotate", 9, True)], "nearest", None, False),
    ("rand", [("AutoContrast", 0, False), ("TranslateX", 9, False)], "nearest", None, False),
    ("rand", [("Sharpness", 9, False), ("Sharpness", 9, True)], "nearest", None, False),
    ("rand", [("Solarize", 9, False), ("Rotate", 9, False)], "nearest", FILL, False),
    ("rand", [("Rotate", 9, False), ("Equalize", 0, False)], "bilinear", None, False),
    ("rand", [("Posterize", 9, False), ("Rotate", 9, False)], "bilinear", None, False),
    ("auto", [("Equalize", 0, False), ("Rotate", 8, False)], "nearest", None, False),
    ("rand", [("Rotate", 9, False), ("ShearX", 9, True)], "bilinear", None, False),
    ("auto", [("ShearY", 8, False), ("TranslateY", 9, True)], "nearest", None, False),
]


def space(kind):
    return {"rand": v2.RandAugment, "auto": v2.AutoAugment, "wide": v2.TrivialAugmentWide}[kind]._AUGMENTATION_SPACE


def bins(kind):
    return 10 if kind == "auto" else 31


def main():
    ra = v2.RandAugment()
    with open(os.path.join(SOURCES, "cases.json")) as f:
        sizes = json.load(f)["sources"]
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__, "sources": {},
                "fill": FILL, "tables": {}, "cases": []}
    for name in ("baboon", "random"):
        w, h = sizes[name]
        manifest["sources"][name] = [w, h]
        # Every magnitude table of the three spaces (TrivialAugmentWide's too) for this size, to check ours bit for bit.
        manifest["tables"][name] = {
            kind: {op: (None if fn(bins(kind), h, w) is None else [float(v) for v in fn(bins(kind), h, w)])
                   for op, (fn, signed) in space(kind).items()}
            for kind in ("rand", "auto", "wide")}
    for k, (kind, ops, interp, fill, exact) in enumerate(CASES):
        case = {"space": kind, "interpolation": interp, "fill": fill, "exact": exact, "ops": [], "magnitudes": {}}
        for op, b, negative in ops:
            case["ops"].append({"op": op, "bin": b, "negative": negative})
        for name, (w, h) in manifest["sources"].items():
            hwc = np.fromfile(os.path.join(SOURCES, f"{name}.rgb"), dtype=np.uint8).reshape(h, w, 3)
            img = torch.from_numpy(hwc).permute(2, 0, 1).contiguous()
            mags = []
            for op, b, negative in ops:
                fn, signed = space(kind)[op]
                table = fn(bins(kind), h, w)
                m = 0.0 if table is None else float(table[b])
                if negative and signed:
                    m *= -1
                mags.append(m)
                img = ra._apply_image_or_video_transform(
                    img, op, m, interpolation=v2.InterpolationMode(interp),
                    fill=_setup_fill_arg(fill))
            case["magnitudes"][name] = mags
            img.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(HERE, "sequences", f"{name}_{k}.u8"))
        manifest["cases"].append(case)
    with open(os.path.join(HERE, "sequences.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
