"""Train a tiny 3-D convolutional network on gm.ClipLoader batches of the bundled videos:
which of the two demo videos (the second is mirrored) a clip of 8 frames comes from.

    python examples/python/train_clips.py [--steps 150] [--videos DIR]

Clips decode on NVDEC (a pool of sessions), are resized and normalized by gm's fused kernel
(the same draws for every frame of a clip) and reach PyTorch as [B, T, C, H, W] float16
tensors without a copy. Needs a GPU: without one it says so and exits.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import gm
from gm import transforms as T

REPO = pathlib.Path(__file__).resolve().parents[2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--videos", default=str(REPO / "assets" / "demo" / "videos"))
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--min-drop", type=float, default=0.0)
    args = p.parse_args()
    if not (gm.cuda_available() and torch.cuda.is_available()):
        print("train_clips needs a GPU: the clip loader decodes on NVDEC")
        return
    videos = sorted(str(v) for v in pathlib.Path(args.videos).glob("*.mp4"))
    # 8-frame episodes every 4 frames, every 2nd frame: 16 frames of each video per clip.
    data = gm.VideoDataset(videos, frames=8, stride=4, step=2)
    chain = [T.RandomResizedCrop((112, 112), scale=(0.3, 1.0)), T.ToDtype(torch.float16, scale=True),
             T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]
    loader = gm.ClipLoader(data, batch_size=args.batch, transforms=chain, shuffle=True, seed=0, sessions=4)
    print(f"{len(data)} clips of {data.frames_per_clip} frames from {len(videos)} videos; "
          f"{len(loader)} batches per epoch")
    model = nn.Sequential(
        nn.Conv3d(3, 16, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2)), nn.ReLU(),
        nn.Conv3d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv3d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(64, len(videos)),
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    step, epoch, losses, wait = 0, 0, [], 0.0
    started = time.perf_counter()
    while step < args.steps:
        loader.set_epoch(epoch)
        it = iter(loader)
        while step < args.steps:
            t0 = time.perf_counter()
            try:
                clips = next(it)
            except StopIteration:
                break
            wait += time.perf_counter() - t0
            x = torch.from_dlpack(clips.frames)  # [B, T, C, H, W]
            y = torch.tensor([videos.index(src[0][0]) for src in clips.sources], device="cuda")
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x.permute(0, 2, 1, 3, 4)), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step += 1
            if step % 25 == 0 or step == args.steps:
                print(f"step {step:4d}  epoch {epoch}  loss {sum(losses[-25:]) / len(losses[-25:]):.4f}")
        epoch += 1
    total = time.perf_counter() - started
    s = loader.stats()
    tenth = max(len(losses) // 10, 1)
    first, last = sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth
    print(f"{s['frames'] / total:,.0f} frames/s decoded and delivered; loader wait {100 * wait / total:.1f}% "
          f"of {total:.1f} s; {s['bad_clips']} bad clips")
    print(f"loss {first:.4f} -> {last:.4f}")
    if args.min_drop and not first - last >= args.min_drop:
        raise SystemExit(f"the loss did not fall by {args.min_drop}: {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
