"""Peers of gm-loader's pipeline bench (`gm-loader--pipeline`), on the same folder, in the
same run, with the same work per image: decode, torchvision's RandomResizedCrop parameters
(scale 0.08-1, ratio 3/4-4/3) to 224x224 bilinear, random horizontal flip, ImageNet
normalize, float16 CHW, batches of 256.

- opencv: cv2.imdecode + cv2.resize on every CPU core (multiprocessing, one process per core,
  chunks of 64 files), the classic CPU data loader.
- torchvision-gpu: torchvision.io.decode_jpeg(list, device='cuda') for a batch, then per image
  resized_crop (antialias off) and flip on the GPU, normalize, stack; synchronized per batch.
- dali: NVIDIA DALI's documented ImageNet training pipeline: readers.file (shuffled),
  decoders.image_random_crop on "mixed" (NVJPG engines + CUDA), resize to 224x224,
  crop_mirror_normalize with a random mirror to float16 CHW; num_threads swept
  (GM_DALI_THREADS, default 4,8,12,16), every setting printed.

Each file is listed GM_BENCH_REPEAT times (default 50) as in gm's bench; median images/s of
GM_BENCH_REPS epochs after a warm-up. Prints one JSON object per measurement.

GM_RECIPE=timm adds timm's ImageNet training augmentations after the crop and flip, as gm's
bench does with the same variable: TrivialAugmentWide (torchvision's: nearest, fill 0, 31
bins) on the 224x224 uint8 crop, then after normalize RandomErasing with p 0.25 (scale
0.02-0.33, ratio 0.3-3.3, value 0). DALI runs its own `auto_aug.trivial_augment_wide` (NN
interpolation, fill 0, translation up to 32 pixels as torchvision) and `fn.erase` with a
torchvision-style box drawn per sample (on the uint8 crop, filled with the ImageNet mean:
DALI's erase takes no float16); torchvision-gpu runs v2.TrivialAugmentWide and
v2.RandomErasing per image on the GPU tensors.
Usage: python3 loader_pipeline_peers.py DIR
"""
import json
import math
import multiprocessing as mp
import os
import random
import sys
import time

import numpy as np

REPEAT = int(os.environ.get("GM_BENCH_REPEAT", "50"))
REPS = int(os.environ.get("GM_BENCH_REPS", "3"))
BATCH = 256
RECIPE = os.environ.get("GM_RECIPE", "plain")
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def rrc_params(w, h, rng):
    """torchvision's RandomResizedCrop.get_params."""
    area = w * h
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        logr = (math.log(3 / 4), math.log(4 / 3))
        ar = math.exp(rng.uniform(*logr))
        cw = int(round(math.sqrt(target * ar)))
        ch = int(round(math.sqrt(target / ar)))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, w - cw), rng.randint(0, h - ch), cw, ch
    ratio = w / h
    if ratio < 3 / 4:
        cw, ch = w, int(round(w / (3 / 4)))
    elif ratio > 4 / 3:
        ch, cw = h, int(round(h * 4 / 3))
    else:
        cw, ch = w, h
    return (w - cw) // 2, (h - ch) // 2, cw, ch


def cv_work(chunk):
    import cv2

    cv2.setNumThreads(1)
    rng = random.Random(chunk[0])
    out = 0.0
    for path in chunk[1]:
        img = cv2.imdecode(np.fromfile(path, np.uint8), cv2.IMREAD_COLOR)
        if img is None:
            continue
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        h, w = img.shape[:2]
        x, y, cw, ch = rrc_params(w, h, rng)
        crop = cv2.resize(img[y:y + ch, x:x + cw], (224, 224), interpolation=cv2.INTER_LINEAR)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        t = ((crop.astype(np.float32) / 255.0 - MEAN) / STD).transpose(2, 0, 1).astype(np.float16)
        out += float(t[0, 0, 0])
    return len(chunk[1])


def opencv(files):
    procs = os.cpu_count()
    work = [files[i:i + 64] for i in range(0, len(files), 64)]
    with mp.Pool(procs) as pool:
        pool.map(cv_work, list(enumerate(work[:procs])))  # warm-up: imports, page cache
        rates = []
        for r in range(REPS):
            t = time.perf_counter()
            n = sum(pool.imap_unordered(cv_work, [(r * 100000 + i, c) for i, c in enumerate(work)]))
            rates.append(n / (time.perf_counter() - t))
    rates.sort()
    emit(peer="opencv", processes=procs, images_per_epoch=len(files), img_per_s=round(rates[len(rates) // 2]),
         min=round(rates[0]), max=round(rates[-1]))


def torchvision_gpu(files):
    import torch
    import torchvision
    from torchvision.io import decode_jpeg
    from torchvision.transforms.v2 import functional as F

    from torchvision.transforms import v2

    data = {p: open(p, "rb").read() for p in set(files)}
    trivial = v2.TrivialAugmentWide() if RECIPE == "timm" else None
    erasing = v2.RandomErasing(p=0.25) if RECIPE == "timm" else None
    mean = torch.tensor(MEAN, device="cuda").view(3, 1, 1) * 255
    std = torch.tensor(STD, device="cuda").view(3, 1, 1) * 255
    rng = random.Random(0)

    def epoch():
        n = 0
        for b in range(0, len(files) - BATCH + 1, BATCH):
            enc = [torch.frombuffer(data[p], dtype=torch.uint8) for p in files[b:b + BATCH]]
            imgs = decode_jpeg(enc, device="cuda", mode=torchvision.io.ImageReadMode.RGB)
            out = []
            for im in imgs:
                h, w = im.shape[1:]
                x, y, cw, ch = rrc_params(w, h, rng)
                t = F.resized_crop(im, y, x, ch, cw, [224, 224], antialias=False)
                if rng.random() < 0.5:
                    t = t.flip(-1)
                if trivial is not None:
                    t = trivial(t)
                out.append(t)
            batch = (torch.stack(out).float() - mean) / std
            if erasing is not None:
                batch = torch.stack([erasing(im) for im in batch])
            batch = batch.half()
            torch.cuda.synchronize()
            n += batch.shape[0]
        return n

    epoch()
    rates = []
    for _ in range(REPS):
        t = time.perf_counter()
        n = epoch()
        rates.append(n / (time.perf_counter() - t))
    rates.sort()
    emit(peer="torchvision-gpu", recipe=RECIPE, images_per_epoch=len(files), img_per_s=round(rates[len(rates) // 2]),
         min=round(rates[0]), max=round(rates[-1]), torch=torch.__version__, torchvision=torchvision.__version__)


def dali(files):
    import nvidia.dali as dali_mod
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali import math as dmath

    labels = list(range(len(files)))

    from nvidia.dali.auto_aug import trivial_augment

    @pipeline_def(batch_size=BATCH, device_id=0, prefetch_queue_depth=3,
                  enable_conditionals=RECIPE == "timm")
    def train():
        jpegs, lab = fn.readers.file(files=files, labels=labels, random_shuffle=True,
                                     initial_fill=4096, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="mixed", output_type=types.RGB,
                                               random_aspect_ratio=[3 / 4, 4 / 3],
                                               random_area=[0.08, 1.0], num_attempts=100)
        images = fn.resize(images, device="gpu", resize_x=224, resize_y=224,
                           interp_type=types.INTERP_LINEAR, antialias=False)
        if RECIPE == "timm":
            images = trivial_augment.trivial_augment_wide(images, fill_value=0,
                                                          interp_type=types.INTERP_NN)
        if RECIPE == "timm":
            images = dali_erase(images)
        mirror = fn.random.coin_flip(probability=0.5)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW",
                                          crop=(224, 224), mean=[v * 255 for v in MEAN.tolist()],
                                          std=[v * 255 for v in STD.tolist()], mirror=mirror)
        return images, lab.gpu()

    def dali_erase(images):
        # torchvision's RandomErasing box: area 2-33% of the image, log-uniform ratio
        # 0.3-3.3, erased with probability 0.25 (a zero-sized box otherwise). DALI's erase
        # takes no float16, so it erases the uint8 crop before crop_mirror_normalize with the
        # ImageNet mean, which normalizes to torchvision's value 0 (the box position is
        # uniform, so erasing before the mirror draws the same boxes).
        area = fn.random.uniform(range=[0.02, 0.33])
        ratio = dmath.exp(fn.random.uniform(range=[math.log(0.3), math.log(3.3)]))
        h = dmath.min(dmath.sqrt(area / ratio), 1.0)
        w = dmath.min(dmath.sqrt(area * ratio), 1.0)
        on = fn.cast(fn.random.coin_flip(probability=0.25), dtype=types.FLOAT)
        shape = fn.stack(h * on, w * on)
        anchor = fn.stack(fn.random.uniform(range=[0.0, 1.0]) * (1.0 - h),
                          fn.random.uniform(range=[0.0, 1.0]) * (1.0 - w))
        return fn.erase(images, anchor=anchor, shape=shape, axis_names="HW",
                        fill_value=[round(v * 255) for v in MEAN.tolist()],
                        normalized_anchor=True, normalized_shape=True)

    import torch
    for threads in [int(t) for t in os.environ.get("GM_DALI_THREADS", "4,8,12,16").split(",")]:
        pipe = train(num_threads=threads)
        pipe.build()
        iters = len(files) // BATCH
        for _ in range(iters):  # warm-up epoch
            pipe.run()
        torch.cuda.synchronize()
        rates = []
        for _ in range(REPS):
            t = time.perf_counter()
            n = 0
            for _ in range(iters):
                out = pipe.run()
                n += len(out[0])
            torch.cuda.synchronize()
            rates.append(n / (time.perf_counter() - t))
        rates.sort()
        emit(peer="dali", recipe=RECIPE, num_threads=threads, images_per_epoch=iters * BATCH,
             img_per_s=round(rates[len(rates) // 2]), min=round(rates[0]), max=round(rates[-1]),
             version=dali_mod.__version__,
             max_connections=os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "driver default"))
        del pipe


def main():
    d = sys.argv[1]
    names = sorted(n for n in os.listdir(d) if n.lower().endswith((".jpg", ".jpeg")))
    files = [os.path.join(d, n) for n in names] * REPEAT
    random.Random(0).shuffle(files)
    which = os.environ.get("GM_PEERS", "opencv,torchvision-gpu,dali").split(",")
    if "opencv" in which:
        opencv(files)
    if "torchvision-gpu" in which:
        torchvision_gpu(files)
    if "dali" in which:
        try:
            dali(files)
        except Exception as e:  # the wheel is carried in parts and may be absent
            emit(peer="dali", error=repr(e)[:500])


if __name__ == "__main__":
    main()
