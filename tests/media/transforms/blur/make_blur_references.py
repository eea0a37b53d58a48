"""Reference Gaussian blurs by torchvision.transforms.v2.functional.gaussian_blur on uint8 CHW
tensors (float32 conv2d with reflect padding, round_() back to uint8), the values gm-transforms'
blur pass (CPU twin and kernel) is checked against. Sources: a 64x48 crop of the real photo
../../resize/baboon.rgb and a random 23x31 image (odd sizes). Run with torch + torchvision:
    python3 make_blur_references.py   (writes here: <source>.rgb, <source>_<case>.u8, cases.json)
Outputs are HWC RGB u8, like the sources. cases.json also holds torchvision's 1-D kernels
(`_get_gaussian_kernel1d`, float32) and the cases torch refuses (reflect padding not smaller
than the image), with torch's message.
"""
import json
import os

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision.transforms.v2.functional._misc import _get_gaussian_kernel1d

HERE = os.path.dirname(os.path.abspath(__file__))
RESIZE = os.path.join(HERE, "..", "..", "resize")

# (name, (kernel width, kernel height), sigma)
CASES = [
    ("k1", (1, 1), 1.0),
    ("k3_s0.1", (3, 3), 0.1),
    ("k3_s1", (3, 3), 1.0),
    ("k5_s1.7", (5, 5), 1.7),
    ("k7x3_s2", (7, 3), 2.0),
    ("k3x9_s0.83", (3, 9), 0.83),
    ("k9_s0.6", (9, 9), 0.6),
    ("k23_s4.5", (23, 23), 4.5),
    ("k45x61_s9", (45, 61), 9.0),   # padding 22 x 30: inside the random image by one pixel
    ("k47_s3", (47, 47), 3.0),       # padding 23: refused on the 23-wide random image
    ("k99_s2", (99, 99), 2.0),       # padding 49: refused on both
]


def sources():
    full = np.fromfile(os.path.join(RESIZE, "baboon.rgb"), dtype=np.uint8).reshape(133, 200, 3)
    g = torch.Generator().manual_seed(2323)
    return {
        "baboon": np.ascontiguousarray(full[40:88, 70:134]),
        "random": torch.randint(0, 256, (31, 23, 3), dtype=torch.uint8, generator=g).numpy(),
    }


def main():
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                "sources": {}, "cases": [], "kernels": [], "refused": []}
    for name, hwc in sources().items():
        h, w, _ = hwc.shape
        hwc.tofile(os.path.join(HERE, f"{name}.rgb"))
        manifest["sources"][name] = [w, h]
        chw = torch.from_numpy(hwc).permute(2, 0, 1).contiguous()
        for cname, ks, sigma in CASES:
            try:
                out = F.gaussian_blur(chw, list(ks), [sigma, sigma])
            except (RuntimeError, ValueError) as e:
                manifest["refused"].append({"source": name, "case": cname, "error": str(e)})
                continue
            out.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(HERE, f"{name}_{cname}.u8"))
    for cname, ks, sigma in CASES:
        manifest["cases"].append({"name": cname, "kernel": list(ks), "sigma": sigma})
        for k in sorted(set(ks)):
            w = _get_gaussian_kernel1d(k, sigma, torch.float32, torch.device("cpu"))
            manifest["kernels"].append({"k": k, "sigma": sigma, "bits": [int(b) for b in w.view(torch.int32)]})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
