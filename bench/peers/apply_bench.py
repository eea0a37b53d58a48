"""gm.transforms called on CUDA tensors the caller holds against torchvision.transforms.v2 on
the same tensors (issue 42 item 5), same process, same GPU.

Inputs: the demo photos resized to 375x500 and repeated to a [256, 3, 375, 500] uint8 CUDA
batch (torchvision's layout), and a list of 64 CUDA images of the photos' own sizes.
Chains:
- "classify": RandomResizedCrop(224), RandomHorizontalFlip, ToDtype(float32, scale), Normalize.
- "colour": the same with ColorJitter(0.4, 0.4, 0.4, 0.1) before ToDtype and RandomErasing last.
- "detect": a list of images of many sizes through RandomHorizontalFlip and
  RandomShortestSize((480, 512, 544, 576, 608), 1000) (a list comes back); once more with each
  image's 8 boxes, instance masks and labels as CUDA tv_tensors.
torchvision draws each image's parameters when called per image (a loop, then a stack: what
gm does in one launch) and one draw for the whole batch when called on the batch tensor
(its fastest case, not the same augmentation). gm is also timed with a channels-last copy made
first (what its call did before it read [3, H, W] planes in place) and on the batch as a list
of 256 images (each imported through DLPack on its own, as every image was before a batch
tensor was imported once).

Wall time per call with torch.cuda.synchronize() after it (host planning included), median of
15 after 3 warm-ups, and the host time until the call returned (host_ms). Prints one JSON line
per row.
"""
import json
import pathlib
import sys
import time

import torch
from torchvision.transforms import v2

import gm
from gm import transforms as T

REPO = pathlib.Path(__file__).resolve().parents[2]


def photos():
    files = sorted((REPO / "assets" / "demo" / "images").rglob("*.jpg"))
    imgs = gm.decode_images([f.read_bytes() for f in files], device="cpu")
    return [torch.from_dlpack(t).permute(2, 0, 1).contiguous().cuda() for t in imgs]


def timed(fn, reps=15):
    """Median wall ms per call with a device sync, and the median host ms until the call
    returned (its work queued)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ms, host = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        host.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t0) * 1e3)
    return sorted(ms)[len(ms) // 2], sorted(host)[len(host) // 2]


def chains(lib):
    norm = [lib.ToDtype(torch.float32, scale=True),
            lib.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    classify = [lib.RandomResizedCrop(224, antialias=True) if lib is v2 else lib.RandomResizedCrop(224),
                lib.RandomHorizontalFlip()] + norm
    colour = classify[:2] + [lib.ColorJitter(0.4, 0.4, 0.4, 0.1)] + norm + [lib.RandomErasing(0.25)]
    detect = [lib.RandomHorizontalFlip(), lib.RandomShortestSize((480, 512, 544, 576, 608), 1000)]
    return {"classify": lib.Compose(classify), "colour": lib.Compose(colour),
            "detect": lib.Compose(detect)}


def row(**kw):
    print(json.dumps(kw), flush=True)


def main():
    src = photos()
    batch = torch.stack([torch.nn.functional.interpolate(x[None].float(), size=(375, 500),
                                                         mode="bilinear", antialias=True)[0]
                         for x in src]).round().clamp(0, 255).to(torch.uint8)
    batch = batch.repeat((256 + len(src) - 1) // len(src), 1, 1, 1)[:256].contiguous()
    many = [src[i % len(src)] for i in range(64)]
    g, tv = chains(T), chains(v2)
    row(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
        torchvision=__import__("torchvision").__version__, photos=len(src),
        sizes=sorted({tuple(x.shape[1:]) for x in src}))
    # The classification chain with the float bilinear resize (no antialias) on both sides:
    # what gm's exact uint8 antialias costs against its float filter.
    flat = {lib: lib.Compose([lib.RandomResizedCrop(224, antialias=False), lib.RandomHorizontalFlip(),
                              lib.ToDtype(torch.float32, scale=True),
                              lib.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
            for lib in (T, v2)}
    for who, fn in {"gm, antialias off": lambda: flat[T](batch),
                    "torchvision v2 per image, antialias off": lambda: torch.stack([flat[v2](x) for x in batch.unbind(0)]),
                    "torchvision v2 one draw per batch, antialias off": lambda: flat[v2](batch)}.items():
        ms, host = timed(fn)
        row(chain="classify", input="[256, 3, 375, 500] uint8", who=who, ms=round(ms, 2),
            host_ms=round(host, 2), images_per_s=round(batch.shape[0] / ms * 1e3))
    for name in ("classify", "colour"):
        n = batch.shape[0]
        rows = {
            "gm": lambda: g[name](batch),
            "gm, a list of 256 images": lambda: g[name](list(batch.unbind(0))),
            "gm, channels-last copy first": lambda: g[name](batch.permute(0, 2, 3, 1).contiguous()
                                                            .permute(0, 3, 1, 2)),
            "torchvision v2, per image": lambda: torch.stack([tv[name](x) for x in batch.unbind(0)]),
            "torchvision v2, one draw per batch": lambda: tv[name](batch),
        }
        for who, fn in rows.items():
            ms, host = timed(fn)
            row(chain=name, input="[256, 3, 375, 500] uint8", who=who, ms=round(ms, 2),
                host_ms=round(host, 2), images_per_s=round(n / ms * 1e3))
    for who, fn in {"gm": lambda: g["detect"](many),
                    "torchvision v2, per image": lambda: [tv["detect"](x) for x in many]}.items():
        ms, host = timed(fn)
        row(chain="detect", input="64 images of their own sizes", who=who, ms=round(ms, 2),
            host_ms=round(host, 2), images_per_s=round(len(many) / ms * 1e3))
    masked_rows(g, many)
    return 0


def masked_rows(g, many):
    """The detect chain with each image's targets: 8 boxes and their instance masks (CUDA
    tv_tensors), labels; torchvision v2 per image on the same tv_tensors."""
    from torchvision import tv_tensors

    gen = torch.Generator().manual_seed(0)
    targets = []
    for x in many:
        h, w = x.shape[1:]
        x0 = torch.randint(0, w // 2, (8,), generator=gen)
        y0 = torch.randint(0, h // 2, (8,), generator=gen)
        boxes = torch.stack([x0, y0, x0 + w // 3, y0 + h // 3], 1).float()
        masks = torch.zeros((8, h, w), dtype=torch.uint8)
        for k, (a, b, c, d) in enumerate(boxes.int().tolist()):
            masks[k, b:d, a:c] = 1
        targets.append({"boxes": tv_tensors.BoundingBoxes(boxes.cuda(), format="XYXY", canvas_size=(h, w)),
                        "masks": tv_tensors.Mask(masks.cuda()), "labels": torch.arange(8).cuda()})
    tv = v2.Compose([v2.RandomHorizontalFlip(), v2.RandomShortestSize((480, 512, 544, 576, 608), 1000)])
    for who, fn in {"gm": lambda: g["detect"](many, targets),
                    "torchvision v2, per image": lambda: [tv(x, t) for x, t in zip(many, targets)]}.items():
        ms, host = timed(fn)
        row(chain="detect with boxes and 8 masks each", input="64 images of their own sizes", who=who,
            ms=round(ms, 2), host_ms=round(host, 2), images_per_s=round(len(many) / ms * 1e3))


if __name__ == "__main__":
    sys.exit(main())
