"""Train torchvision's ResNet-18 on batches from gm.ImageLoader, with AMP; torchrun-ready.

    python examples/python/train_resnet.py                       # the bundled images
    python examples/python/train_resnet.py --data train/ --steps 300 --batch 256
    torchrun --nproc_per_node=8 examples/python/train_resnet.py --data train/
    python examples/python/train_resnet.py --device cpu --steps 5 --batch 8 --size 64
    python examples/python/train_resnet.py --arch resnet50 --loader torchvision   # the baseline
    python examples/python/train_resnet.py --arch resnet50 --loader dali --workers 12   # NVIDIA DALI

Prints the loss as it falls, images/s, and how much of each step the training loop spent
waiting for the loader (the loader's batches are ready on the GPU; the wait is the time
the loop blocks in the iterator, and the handoff is torch.from_dlpack; for torchvision it is
the copy to the GPU, for DALI, whose batches are on the GPU too, only the channels_last copy).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision

import gm
from gm import transforms as T

REPO = pathlib.Path(__file__).resolve().parents[2]


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(REPO / "assets" / "demo" / "images"),
                   help="an ImageFolder (class subfolders) or a list file")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the GPU if there is one)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arch", default="resnet18", choices=["resnet18", "resnet50"])
    p.add_argument("--loader", default="gm", choices=["gm", "torchvision", "dali"],
                   help="gm.ImageLoader, torchvision's ImageFolder + transforms v2 + DataLoader (the baseline), "
                        "or NVIDIA DALI's ImageNet training pipeline (needs nvidia.dali)")
    p.add_argument("--workers", type=int, default=os.cpu_count(),
                   help="DataLoader worker processes (torchvision), or DALI's CPU threads per process (dali)")
    p.add_argument("--make-patterns", type=int, default=0, metavar="N",
                   help="first write N seeded JPEGs of four pattern classes into --data (needs Pillow)")
    p.add_argument("--min-drop", type=float, default=0.0,
                   help="fail unless the loss of the last tenth of the steps is this much below the first's")
    return p.parse_args()


def make_patterns(root: pathlib.Path, n: int, seed: int) -> None:
    """Four classes a small network can tell apart (horizontal and vertical stripes, checks,
    rings) at random periods, phases and colours, as 256x256 JPEGs."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:256, 0:256].astype(np.float32)
    for i in range(n):
        c = i % 4
        period, phase = rng.uniform(8, 40), rng.uniform(0, 6.3)
        field = [np.sin(yy / period * 6.3 + phase), np.sin(xx / period * 6.3 + phase),
                 np.sin(yy / period * 6.3 + phase) * np.sin(xx / period * 6.3),
                 np.sin(np.hypot(yy - 128, xx - 128) / period * 6.3 + phase)][c]
        a, b = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
        img = (a + (b - a) * (field[..., None] > 0)).astype(np.uint8)
        d = root / f"class{c}"
        d.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(d / f"{i:05}.jpg", quality=90)


class DaliLoader:
    """DALI's iterator in the loop's terms: len() is batches per epoch, and each iter() is one epoch
    of (images, labels) (auto_reset rewinds the reader when an epoch ends, so the next iter() goes on)."""

    def __init__(self, it, placement: str):
        self.it, self.placement = it, placement

    def __len__(self) -> int:
        return len(self.it)

    def __iter__(self):
        for batch in self.it:
            yield batch[0]["data"], batch[0]["label"]


def make_dali(args: argparse.Namespace, device: torch.device) -> DaliLoader:
    """NVIDIA DALI's documented ImageNet training pipeline (its ResNet-50 PyTorch example, with the
    operators bench/peers/loader_pipeline_peers.py runs): nvJPEG decodes a random crop on "mixed"
    (CPU threads parse, the GPU decodes), then a GPU resize, flip and normalize to float16 CHW."""
    try:
        import nvidia.dali as dali
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy
    except ImportError as e:
        raise SystemExit(f"--loader dali needs NVIDIA DALI (pip install nvidia-dali-cuda130, or put it on "
                         f"PYTHONPATH): {e}") from e
    if device.type != "cuda":
        raise SystemExit("--loader dali needs a CUDA GPU")
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)

    @pipeline_def
    def train():
        # Each rank reads its own shard of the sorted file list, shuffled in DALI's buffer
        # (initial_fill); padding keeps the last batch from running into the next epoch, and DROP
        # below ends every rank's epoch after the same number of full batches, so DDP's ranks
        # stay in step.
        jpegs, labels = fn.readers.file(file_root=args.data, random_shuffle=True, shard_id=rank,
                                        num_shards=world, name="Reader", pad_last_batch=True)
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                               random_aspect_ratio=[3 / 4, 4 / 3], random_area=[0.08, 1.0],
                                               num_attempts=100)
        # DALI's default filter, linear and antialiased when shrinking, as gm's and torchvision's here.
        images = fn.resize(images, device="gpu", resize_x=args.size, resize_y=args.size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW",
                                          crop=(args.size, args.size),
                                          mean=[m * 255 for m in T.IMAGENET_MEAN],
                                          std=[s * 255 for s in T.IMAGENET_STD],
                                          mirror=fn.random.coin_flip(probability=0.5))
        return images, labels.gpu()

    # A seed per rank, so that the ranks draw different crops and flips.
    pipe = train(batch_size=args.batch, num_threads=args.workers, device_id=device.index,
                 seed=args.seed + rank, prefetch_queue_depth=3)
    it = DALIClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.DROP,
                                    auto_reset=True)
    return DaliLoader(it, f"DALI {dali.__version__}, {args.workers} threads")


def make_loader(args: argparse.Namespace, use_cuda: bool, device: torch.device):
    """gm.ImageLoader, DALI's pipeline, or torchvision's reference pipeline over the same folder."""
    if args.loader == "dali":
        return make_dali(args, device)
    if args.loader == "gm":
        chain = [
            T.RandomResizedCrop(args.size),
            T.RandomHorizontalFlip(),
            T.ToDtype(torch.float16 if use_cuda else torch.float32, scale=True),
            T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD),
        ]
        # Rank and world size come from torchrun's variables; each rank loads its own shard.
        return gm.ImageLoader(args.data, batch_size=args.batch, transforms=chain, shuffle=True,
                              seed=args.seed, device=str(device), bad_samples="skip")
    from torchvision.transforms import v2

    tf = v2.Compose([v2.RandomResizedCrop(args.size), v2.RandomHorizontalFlip(), v2.ToImage(),
                     v2.ToDtype(torch.float32, scale=True), v2.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)])
    data = torchvision.datasets.ImageFolder(args.data, transform=tf)
    sampler = (torch.utils.data.distributed.DistributedSampler(data, seed=args.seed)
               if dist.is_initialized() else None)
    return torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=sampler is None, sampler=sampler,
                                       num_workers=args.workers, pin_memory=use_cuda, drop_last=True,
                                       persistent_workers=args.workers > 0, prefetch_factor=4 if args.workers else None)


def main() -> None:
    args = parse()
    if args.make_patterns and int(os.environ.get("LOCAL_RANK", "0")) == 0:
        make_patterns(pathlib.Path(args.data), args.make_patterns, args.seed)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = args.device != "cpu" and torch.cuda.is_available() and gm.cuda_available()
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if use_cuda else "gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(args.seed)

    loader = make_loader(args, use_cuda, device)
    classes = len([d for d in pathlib.Path(args.data).iterdir() if d.is_dir()]) if os.path.isdir(args.data) else 1000
    model = getattr(torchvision.models, args.arch)(num_classes=max(classes, 2)).to(device, memory_format=torch.channels_last)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-5)
    scaler = torch.amp.GradScaler(enabled=use_cuda)

    if rank == 0:
        where = (f"torchvision DataLoader, {args.workers} workers" if args.loader == "torchvision"
                 else loader.placement)
        print(f"{args.loader}: {where}; {len(loader)} batches per epoch of {args.batch}; "
              f"{args.arch} at {args.size}px, AMP {'on' if use_cuda else 'off'}")
    step, epoch, losses = 0, 0, []
    wait = handoff = compute = 0.0
    first_waits = 0.0  # the waits for each epoch's first batch (the loader refills at epoch starts)
    images_seen = 0
    started = time.perf_counter()
    while step < args.steps:
        if args.loader == "gm":
            loader.set_epoch(epoch)
        elif args.loader == "torchvision" and hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        # (DALI's reader reshuffles and moves each rank to the next shard at every epoch by itself.)
        it = iter(loader)
        first = True
        while step < args.steps:
            t0 = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            if args.loader == "gm":
                x = torch.from_dlpack(batch.images).contiguous(memory_format=torch.channels_last)
                y = torch.from_dlpack(batch.labels)
            elif args.loader == "dali":  # on the GPU already; the labels come as int32 [B, 1]
                x = batch[0].contiguous(memory_format=torch.channels_last)
                y = batch[1].squeeze(1).long()
            else:
                x = batch[0].to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
                y = batch[1].to(device, non_blocking=True)
            t2 = time.perf_counter()
            with torch.autocast(device.type, dtype=torch.float16, enabled=use_cuda):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())  # waits for the step: the loop's clock is the GPU's
            t3 = time.perf_counter()
            if step >= 10:  # after warm-up (cuDNN autotuning, the loader's first fill)
                wait += t1 - t0
                first_waits += (t1 - t0) if first else 0.0
                handoff += t2 - t1
                compute += t3 - t2
                images_seen += len(y)
            step += 1
            first = False
            if rank == 0 and (step % 25 == 0 or step == args.steps):
                print(f"step {step:4d}  epoch {epoch}  loss {sum(losses[-25:]) / len(losses[-25:]):.4f}")
        epoch += 1
    total = wait + handoff + compute
    if rank == 0 and total > 0:
        bad = loader.stats()["bad"] if args.loader == "gm" else "?"
        steps = max(step - 10, 1)
        print(f"{images_seen / total:,.0f} images/s per rank after warm-up; step {1000 * total / steps:.1f} ms: "
              f"loader wait {1000 * wait / steps:.2f} ms per step ({100 * wait / total:.1f}%), handoff "
              f"{1000 * handoff / steps:.3f} ms per batch, the step itself {100 * compute / total:.1f}% of the loop; "
              f"without the epochs' first batches the wait is {100 * (wait - first_waits) / (total - first_waits):.1f}%; "
              f"{bad} bad samples skipped; {time.perf_counter() - started:.1f} s in all")
    tenth = max(len(losses) // 10, 1)
    first, last = sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth
    if rank == 0:
        print(f"loss {first:.4f} -> {last:.4f}")
    if distributed:
        dist.destroy_process_group()
    if args.min_drop and not first - last >= args.min_drop:
        raise SystemExit(f"the loss did not fall by {args.min_drop}: {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
