"""Reference TrivialAugmentWide operations by torchvision.transforms.v2 on uint8 CHW tensors on
the CPU, given the drawn operation and magnitude: torchvision's own
``TrivialAugmentWide._apply_image_or_video_transform`` with its defaults (nearest, fill=None),
the values gm-transforms' policies (policies.rs) are checked against. Sources: the baboon crop
and the random 37x53 image of .. Run with torch + torchvision installed:
    python3 make_references.py     (writes here: <source>_<op>_<bin>_<sign>.u8 and cases.json)
Outputs are HWC RGB u8, like the sources. cases.json records each case's magnitude as drawn
from torchvision's magnitude table (bin, then sign for the signed operations).
"""
import json
import os

import numpy as np
import torch
import torchvision
from torchvision.transforms import v2

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..")
# (bin, negative) per operation: a high and a middle bin, both signs where the op is signed.
DRAWS = [(30, True), (11, False)]


def main():
    ta = v2.TrivialAugmentWide()
    bins = ta.num_magnitude_bins
    with open(os.path.join(SOURCES, "cases.json")) as f:
        sizes = json.load(f)["sources"]
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__, "sources": {},
                "num_magnitude_bins": bins, "cases": []}
    for name in ("baboon", "random"):
        w, h = sizes[name]
        manifest["sources"][name] = [w, h]
        hwc = np.fromfile(os.path.join(SOURCES, f"{name}.rgb"), dtype=np.uint8).reshape(h, w, 3)
        img = torch.from_numpy(hwc).permute(2, 0, 1).contiguous()
        for op, (magnitudes_fn, signed) in ta._AUGMENTATION_SPACE.items():
            magnitudes = magnitudes_fn(bins, h, w)
            for b, negative in DRAWS if magnitudes is not None else [(0, False)]:
                magnitude = 0.0 if magnitudes is None else float(magnitudes[b])
                negative = negative and signed
                if negative:
                    magnitude *= -1
                out = ta._apply_image_or_video_transform(img, op, magnitude, interpolation=ta.interpolation,
                                                         fill=ta._fill)
                case = f"{name}_{op}_{b}_{'neg' if negative else 'pos'}"
                out.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(HERE, f"{case}.u8"))
                if name == "baboon":
                    manifest["cases"].append({"op": op, "bin": b, "negative": negative, "magnitude": magnitude})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
