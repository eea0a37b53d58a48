"""torchvision's own CPU and CUDA results on the chains where gm's kernel and its CPU twin
differ (issue 23: "where torchvision's own CPU and CUDA results differ, say which you match").

A fractional resize of real photos (uint8, bilinear and bicubic, with and without antialias),
then each colour operation on the uint8 result, computed once on the CPU and once on the GPU
with torchvision.transforms.v2.functional; prints one JSON line per (chain, photo): the largest
difference in u8 steps and the share of values that differ. Run on the GPU machine:
`python3 bench/peers/torchvision_cpu_vs_cuda.py assets/demo/images`.
"""

import json
import sys
from pathlib import Path

import torch
import torchvision
from torchvision.io import decode_jpeg, read_file
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

COLOUR = {
    "none": lambda x: x,
    "brightness 1.7": lambda x: F.adjust_brightness(x, 1.7),
    "contrast 1.9": lambda x: F.adjust_contrast(x, 1.9),
    "saturation 1.8": lambda x: F.adjust_saturation(x, 1.8),
    "hue 0.3": lambda x: F.adjust_hue(x, 0.3),
    "sharpness 1.9": lambda x: F.adjust_sharpness(x, 1.9),
    "equalize": F.equalize,
    "autocontrast": F.autocontrast,
    "posterize 4": lambda x: F.posterize(x, 4),
    "solarize 128": lambda x: F.solarize(x, 128),
}
RESIZE = {
    "bilinear": (InterpolationMode.BILINEAR, False),
    "bilinear antialias": (InterpolationMode.BILINEAR, True),
    "bicubic": (InterpolationMode.BICUBIC, False),
}


def photos(root):
    for p in sorted(Path(root).rglob("*.jp*g")):
        try:
            img = decode_jpeg(read_file(str(p)), mode=torchvision.io.ImageReadMode.RGB)
        except RuntimeError:
            continue
        yield p.name, img


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "assets/demo/images"
    dev = torch.device("cuda")
    print(json.dumps({"torch": torch.__version__, "torchvision": torchvision.__version__,
                      "gpu": torch.cuda.get_device_name(0)}))
    for name, img in photos(root):
        h, w = img.shape[-2:]
        # Fractional scales both ways, odd sizes.
        for size in [(h * 5 // 7 | 1, w * 5 // 7 | 1), (h * 9 // 7 | 1, w * 9 // 7 | 1)]:
            for rname, (mode, aa) in RESIZE.items():
                cpu = F.resize(img, list(size), interpolation=mode, antialias=aa)
                gpu = F.resize(img.to(dev), list(size), interpolation=mode, antialias=aa)
                for cname, op in COLOUR.items():
                    a = op(cpu).to(torch.int16)
                    b = op(gpu).cpu().to(torch.int16)
                    d = (a - b).abs()
                    print(json.dumps({
                        "photo": name, "size": list(size), "resize": rname, "colour": cname,
                        "max_steps": int(d.max()), "share_differing": round(float((d > 0).float().mean()), 5),
                        "share_over_1": round(float((d > 1).float().mean()), 6),
                    }))
                # The colour op alone, on the same (CPU-resized) input on both devices.
                for cname, op in COLOUR.items():
                    a = op(cpu).to(torch.int16)
                    b = op(cpu.to(dev)).cpu().to(torch.int16)
                    d = (a - b).abs()
                    print(json.dumps({
                        "photo": name, "size": list(size), "resize": rname + " (CPU for both)",
                        "colour": cname, "max_steps": int(d.max()),
                        "share_differing": round(float((d > 0).float().mean()), 5),
                        "share_over_1": round(float((d > 1).float().mean()), 6),
                    }))


if __name__ == "__main__":
    main()
