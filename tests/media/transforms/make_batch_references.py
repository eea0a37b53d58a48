"""Reference RandomErasing, MixUp and CutMix outputs by torchvision.transforms.v2 with given
parameters, the values gm-transforms' erase/mix CPU twins (and the GPU kernels) are checked
against. Sources: the 64x48 crops baboon.rgb and fruits.rgb next to this script (real photos)
and random 37x53 images. Run with torch + torchvision installed:
    python3 make_batch_references.py      (writes batch/: inputs, outputs, cases.json)

Files are raw little-endian CHW: `.f32` float32, `.u8` uint8.
- Erasing: F.erase(img, i, j, h, w, v) on the image normalized with ImageNet's mean/std
  (f32) and on the uint8 image (torch casts v to uint8 by truncation).
- MixUp / CutMix: the transforms' own make_params (with Beta's sample and torch.randint
  replaced by the given lambda and centre, so torchvision's box arithmetic runs) and
  transform, on a batch and its int64 labels; the soft labels are float32 [B, num_classes].
- erase_stats: moments and quantiles of RandomErasing.make_params' rectangles (p = 1) over
  many draws, which our own draws (another generator) must match within sampling error.
"""
import json
import os
from unittest import mock

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "batch")
MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]
NUM_CLASSES = 10

# (name, source, i, j, h, w, value per channel or one number, dtype)
ERASE = [
    ("baboon_zero", "baboon", 5, 9, 20, 31, [0.0], "f32"),
    ("fruits_rgb", "fruits", 17, 0, 31, 12, [-1.25, 0.5, 2.0], "f32"),
    ("random_edge", "random", 0, 20, 53, 17, [0.7], "f32"),
    ("baboon_u8", "baboon", 30, 40, 18, 24, [12.7, 200.2, 99.9], "u8"),
    ("random_u8", "random", 11, 3, 9, 30, [128.5], "u8"),
]

# (name, batch, kind, lambda, centre (r_x, r_y) for CutMix, labels, dtype)
MIX = [
    ("photos_mixup", "photos", "mixup", 0.3141, None, [3, 7, 3], "f32"),
    ("photos_cutmix", "photos", "cutmix", 0.55, (40, 10), [1, 0, 9], "f32"),
    ("random_mixup", "random4", "mixup", 0.8765, None, [2, 5, 8, 0], "f32"),
    ("random_cutmix_edge", "random4", "cutmix", 0.12, (2, 50), [4, 4, 6, 1], "f32"),
    ("photos_cutmix_u8", "photos", "cutmix", 0.7, (10, 30), [0, 1, 2], "u8"),
]


def sources():
    out = {}
    for name in ("baboon", "fruits"):
        hwc = np.fromfile(os.path.join(HERE, f"{name}.rgb"), dtype=np.uint8).reshape(48, 64, 3)
        out[name] = torch.from_numpy(hwc.copy()).permute(2, 0, 1).contiguous()
    hwc = np.fromfile(os.path.join(HERE, "random.rgb"), dtype=np.uint8).reshape(53, 37, 3)
    out["random"] = torch.from_numpy(hwc.copy()).permute(2, 0, 1).contiguous()
    return out


def normalize(u8):
    return ((u8.float() / 255.0 - MEAN) / STD).contiguous()


def batches(src):
    g = torch.Generator().manual_seed(2311)
    photos = torch.stack([src["baboon"], src["fruits"], src["baboon"].flip(-1)])
    rnd = torch.randint(0, 256, (4, 3, 53, 37), dtype=torch.uint8, generator=g)
    return {"photos": photos, "random4": rnd}


def write(name, t):
    ext = "u8" if t.dtype == torch.uint8 else "f32"
    t.contiguous().numpy().tofile(os.path.join(OUT, f"{name}.{ext}"))


def erase_cases(src, cases):
    for name, s, i, j, h, w, value, dtype in ERASE:
        img = src[s] if dtype == "u8" else normalize(src[s])
        write(f"{s}_in", img)
        v = torch.tensor(value, dtype=torch.float32)[:, None, None]
        write(f"erase_{name}", F.erase(img, i=i, j=j, h=h, w=w, v=v))
        cases["erase"].append(dict(name=name, source=s, i=i, j=j, h=h, w=w, value=value, dtype=dtype))


def mix_params(t, imgs, lam, centre):
    """torchvision's make_params with the Beta draw and the centre given."""
    sample = mock.patch.object(t._dist, "sample", return_value=torch.tensor(lam))
    if centre is None:
        with sample:
            return t.make_params([imgs])
    it = iter([torch.tensor([centre[0]]), torch.tensor([centre[1]])])
    with sample, mock.patch("torch.randint", side_effect=lambda *a, **k: next(it)):
        return t.make_params([imgs])


def mix_cases(src, cases):
    for name, b, kind, lam, centre, labels, dtype in MIX:
        u8 = batches(src)[b]
        imgs = u8 if dtype == "u8" else torch.stack([normalize(x) for x in u8])
        write(f"mix_{b}_in_{dtype}", imgs)
        t = (T.MixUp if kind == "mixup" else T.CutMix)(alpha=1.0, num_classes=NUM_CLASSES)
        labels_t = torch.tensor(labels, dtype=torch.int64)
        params = mix_params(t, imgs, lam, centre)
        params.update(labels=labels_t, batch_size=len(labels))
        write(f"mix_{name}", t.transform(imgs, params))
        soft = t.transform(labels_t, params)
        write(f"mix_{name}_labels", soft.float())
        case = dict(name=name, batch=b, kind=kind, lam=lam, labels=labels, dtype=dtype,
                    shape=list(imgs.shape))
        if kind == "cutmix":
            case.update(centre=list(centre), box=list(params["box"]),
                        lam_adjusted=params["lam_adjusted"])
        cases["mix"].append(case)


# RandomErasing.make_params statistics: (image size (w, h), scale, ratio, draws).
ERASE_STATS = [((224, 224), (0.02, 0.33), (0.3, 3.3), 20000),
               ((37, 53), (0.02, 0.33), (0.3, 3.3), 20000),
               ((64, 48), (0.1, 0.9), (0.5, 4.0), 20000)]


def erase_stats(cases):
    """Moments and quantiles of torchvision's drawn rectangles (p = 1), and how often no
    rectangle fits in 10 tries, for the statistical test of our draws."""
    torch.manual_seed(23)
    for (w, h), scale, ratio, n in ERASE_STATS:
        t = T.RandomErasing(p=1.0, scale=scale, ratio=ratio)
        img = torch.zeros(3, h, w)
        areas, logr, tops, lefts, none = [], [], [], [], 0
        for _ in range(n):
            p = t.make_params([img])
            if p["v"] is None:
                none += 1
                continue
            areas.append(p["h"] * p["w"] / (w * h))
            logr.append(float(np.log(p["h"] / p["w"])) if p["w"] and p["h"] else 0.0)
            tops.append((p["i"] + p["h"] / 2) / h)
            lefts.append((p["j"] + p["w"] / 2) / w)
        a, r = np.array(areas), np.array(logr)
        cases["erase_stats"].append(dict(
            width=w, height=h, scale=list(scale), ratio=list(ratio), draws=n,
            none=none / n, area_mean=a.mean(), area_std=a.std(),
            area_q=np.quantile(a, [0.1, 0.5, 0.9]).tolist(),
            log_ratio_mean=r.mean(), log_ratio_std=r.std(),
            centre_y_mean=float(np.mean(tops)), centre_x_mean=float(np.mean(lefts))))


def main():
    os.makedirs(OUT, exist_ok=True)
    src = sources()
    cases = {"torch": torch.__version__, "torchvision": torchvision.__version__,
             "num_classes": NUM_CLASSES, "mean": MEAN.flatten().tolist(),
             "std": STD.flatten().tolist(), "erase": [], "mix": [], "erase_stats": []}
    erase_cases(src, cases)
    mix_cases(src, cases)
    erase_stats(cases)
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main()
