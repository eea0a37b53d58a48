"""Semantic segmentation's training pipeline against classification's on the same images,
gm's time for each, and torchvision's segmentation pipeline beside them; same files, same run,
one GPU.

The work per image, as torchvision's segmentation reference trains (references/segmentation
presets, base size 520, crop 480): decode, RandomResize(260, 1040), random horizontal flip,
RandomCrop(480, pad_if_needed, fill={Mask: 255, others: 0}), float32 and ImageNet normalize.

- gm-segmentation: gm.SegmentationFolder (each image's PNG label map) + gm.ImageLoader on the
  GPU; each map decoded by a host worker and moved in the fused launch with its image.
- gm-classification: the same images and chain through a list file (a label each, no map).
- torchvision-segmentation: the same v2 transforms over (image, tv_tensors.Mask) pairs read
  with PIL in a DataLoader with one worker per host core, then moved to the GPU.

The label maps are synthetic (blocks of 21 classes with a speckle of 255, the VOC boundary
index) over real photos. Each file is listed GM_BENCH_REPEAT times (default 4); images/s over
GM_BENCH_EPOCHS epochs (default 3) after a warm-up epoch; GM_BENCH_WORKERS sets gm-segmentation's
host workers, GM_BENCH_STAGES both gm loaders' GPU stages and GM_BENCH_CORES both gm loaders'
host-core budget (default: the loader's; with LOCAL_WORLD_SIZE above 1 the plan for a budget
decodes on the JPEG engines alone). One JSON object per measurement.
Usage: python3 segmentation_bench.py IMAGE_DIR OUT_DIR
"""
import os
import pathlib
import sys

from training_bench_common import (BATCH, DEVICE, EPOCHS, MEAN, REPEAT, STD, emit, env_int,
                                   host_times, timed)


class Mask:
    """Stands for torchvision.tv_tensors.Mask as gm's fill key (matched by name)."""


def make_dataset(image_dir, out):
    """images/ (links to the photos, REPEAT times), masks/ (a PNG label map each) and a list
    file of the same images for classification."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(42)
    images, masks = out / "images", out / "masks"
    images.mkdir(parents=True, exist_ok=True)
    masks.mkdir(parents=True, exist_ok=True)
    lines = []
    for rep in range(REPEAT):
        for src in sorted(pathlib.Path(image_dir).glob("*.jpg")):
            name = f"{rep}_{src.stem}"
            link = images / f"{name}.jpg"
            if not link.exists():
                link.symlink_to(src.resolve())
            w, h = Image.open(src).size
            y, x = np.mgrid[0:h, 0:w]
            m = ((x // 37) + 3 * (y // 29) + rep) % 21
            m[rng.random((h, w)) < 0.02] = 255
            Image.fromarray(m.astype(np.uint8), mode="L").save(masks / f"{name}.png")
            lines.append(f"{link} 0")
    (out / "list.txt").write_text("\n".join(lines) + "\n")
    return images, masks, out / "list.txt", len(lines)


def gm_chain(torch, gm, fill):
    T = gm.transforms
    return [T.RandomResize(260, 1040), T.RandomHorizontalFlip(),
            T.RandomCrop(480, pad_if_needed=True, fill=fill),
            T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]


def stages():
    """GM_BENCH_STAGES: both gm loaders' GPU stages, when set."""
    return env_int("GM_BENCH_STAGES")


def cores():
    """GM_BENCH_CORES: both gm loaders' host-core budget, when set."""
    return env_int("GM_BENCH_CORES")


def run_gm_segmentation(images, masks, listing):
    import torch
    import gm
    d = gm.SegmentationFolder(images, masks)
    # GM_BENCH_WORKERS: host workers (reading files and decoding maps) instead of the default.
    workers = env_int("GM_BENCH_WORKERS")
    loader = gm.ImageLoader(d, batch_size=BATCH, transforms=gm_chain(torch, gm, {Mask: 255, "others": 0}),
                            shuffle=True, seed=1, device=DEVICE, workers=workers, stages=stages(),
                            cores=cores())

    def epoch(e):
        loader.set_epoch(e)
        n, ignored = 0, torch.zeros((), dtype=torch.int64, device=DEVICE)
        for b in loader:
            n += torch.from_dlpack(b.images).shape[0]
            # The batch's maps as one [B, H, W] tensor, as torchvision's collate gives them;
            # counted on the device, read once an epoch (torchvision's loop below reads once
            # per batch).
            ignored += (torch.from_dlpack(b.masks) == 255).sum()
        return n, int(ignored)

    rate, (n, ignored) = timed(epoch, torch)
    emit(peer="gm-segmentation", images_per_s=rate, epochs=EPOCHS, images=n, ignore_pixels=ignored,
         stages=stages(), cores=cores(), **host_times(loader))
    return rate


def run_gm_classification(images, masks, listing):
    import torch
    import gm
    loader = gm.ImageLoader(str(listing), batch_size=BATCH, transforms=gm_chain(torch, gm, 0),
                            shuffle=True, seed=1, device=DEVICE, stages=stages(), cores=cores())

    def epoch(e):
        loader.set_epoch(e)
        n = 0
        for b in loader:
            n += torch.from_dlpack(b.images).shape[0]
        return n, 0

    rate, (n, _) = timed(epoch, torch)
    emit(peer="gm-classification", images_per_s=rate, epochs=EPOCHS, images=n, stages=stages(),
         cores=cores(), **host_times(loader))
    return rate


class Pairs:
    """(image, tv_tensors.Mask) pairs through v2 transforms, as the segmentation reference."""

    def __init__(self, images, masks, transforms):
        self.files = sorted(pathlib.Path(images).glob("*.jpg"))
        self.masks, self.transforms = pathlib.Path(masks), transforms

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from PIL import Image
        from torchvision import tv_tensors
        from torchvision.transforms.v2 import functional as F
        img = F.pil_to_tensor(Image.open(self.files[i]).convert("RGB"))
        mask = tv_tensors.Mask(F.pil_to_tensor(Image.open(self.masks / f"{self.files[i].stem}.png"))[0])
        return self.transforms(tv_tensors.Image(img), mask)


def run_torchvision_segmentation(images, masks, listing):
    import torch
    import torchvision
    from torchvision import tv_tensors
    from torchvision.transforms import v2 as T
    chain = T.Compose([T.RandomResize(260, 1040), T.RandomHorizontalFlip(),
                       T.RandomCrop(480, pad_if_needed=True, fill={tv_tensors.Mask: 255, "others": 0}),
                       T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    workers = os.cpu_count()
    loader = torch.utils.data.DataLoader(Pairs(images, masks, chain), batch_size=BATCH, shuffle=True,
                                         num_workers=workers, persistent_workers=True, prefetch_factor=4)

    def epoch(_):
        n = ignored = 0
        for imgs, mask in loader:
            imgs, mask = imgs.to(DEVICE, non_blocking=True), mask.to(DEVICE, non_blocking=True)
            n += imgs.shape[0]
            ignored += int((mask == 255).sum())
        return n, ignored

    rate, (n, ignored) = timed(epoch, torch)
    emit(peer="torchvision-segmentation", images_per_s=rate, epochs=EPOCHS, workers=workers, images=n,
         ignore_pixels=ignored, torchvision=torchvision.__version__)
    return rate


def main():
    image_dir, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    images, masks, listing, n = make_dataset(image_dir, out)
    emit(images=n, repeat=REPEAT, batch=BATCH, cores=os.cpu_count())
    runs = {"gm-segmentation": run_gm_segmentation, "gm-classification": run_gm_classification,
            "torchvision-segmentation": run_torchvision_segmentation}
    rates = {}
    peers = os.environ.get("GM_PEERS", "gm-classification gm-segmentation torchvision-segmentation")
    for peer in peers.split():
        rates[peer] = runs[peer](images, masks, listing)
    if "gm-segmentation" in rates and "gm-classification" in rates:
        emit(segmentation_time_over_classification=rates["gm-classification"] / rates["gm-segmentation"])


if __name__ == "__main__":
    main()
