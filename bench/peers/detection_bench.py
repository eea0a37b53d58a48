"""gm's detection training pipeline against torchvision's, same files, same run, one GPU.

The work per image, as the issue's COCO-style pipeline: decode, RandomIoUCrop,
SanitizeBoundingBoxes, random horizontal flip, Resize(800, max_size=1333), float32 and
ImageNet normalize, with the image's boxes, labels and instance masks moved alongside, the
batch's images and targets ending on the GPU.

- gm: gm.CocoDataset + gm.ImageLoader(device="cuda", batch_sizes="padded"): decode and the
  fused transforms on the GPU, each object's mask rasterized by a host worker and moved in
  the fused launch with its image, boxes and labels moved on the host and uploaded.
- dali: DALI's COCO pipeline as its SSD example builds it: readers.coco (boxes relative,
  ltrb, shuffled), random_bbox_crop with RandomIoUCrop's thresholds, scales and aspect
  ratios, decoders.image_slice on "mixed" (nvJPEG/the NVJPG engines) reading only the crop,
  bb_flip, resize to the shorter side 800 with max size 1333, crop_mirror_normalize to float32
  CHW, pad to the batch's largest image; boxes and labels moved to the GPU. It moves boxes and
  labels only (DALI's COCO reader gives masks as polygons, which its operators do not
  rasterize), so it does less work per image than gm and torchvision. GM_DALI_THREADS sets its
  host threads (default: the host's cores).
- torchvision: torchvision.datasets.CocoDetection wrapped for transforms v2 (boxes, labels,
  masks), the same v2 transforms in a DataLoader with one worker per host core, then images
  and targets moved to the GPU as torchvision's detection reference does
  (references/detection/train.py).

The annotations are synthetic (3-8 polygon objects of 10 categories per image, seeded) over
real photos: the bench measures the pipeline, not a dataset. Each file is listed
GM_BENCH_REPEAT times (default 4); images/s over GM_BENCH_EPOCHS epochs (default 3) after one
warm-up epoch. Short epochs weigh each epoch's start: gm's loader refills its pipeline there
(about 11 ms on an H200), DALI's runs through; COCO's train2017 is 118k images an epoch, so
results report GM_BENCH_REPEAT=64 (7,680 images with the 120-photo set) beside the short
epochs. Prints one JSON object per measurement.
Usage: python3 detection_bench.py IMAGE_DIR OUT_DIR
"""
import json
import math
import os
import pathlib
import random
import sys

from training_bench_common import (BATCH, DEVICE, EPOCHS, MEAN, REPEAT, STD, TIMED, emit,
                                   env_int, host_times, timed)

# GM_DET_MASKS=0: annotations without outlines (boxes and labels only, as DALI moves them).
MASKS = os.environ.get("GM_DET_MASKS", "1") != "0"
# How gm's loop takes each image's targets into torch: every tensor of the batch's dicts at
# once (Batch.torch_targets); GM_DET_IMPORT=each: torch.from_dlpack of each image's boxes,
# labels and masks; =none: not at all, the loop reads the boxes' shapes from gm's tensors, as
# DALI's loop reads its boxes' shapes.
IMPORT = os.environ.get("GM_DET_IMPORT", "batch")
# The keys of gm's target dicts (CocoDataset's target_keys, space-separated); default: all
# (crowd regions included); they must include boxes. "boxes labels masks" is what the
# torchvision peer's dicts hold.
KEYS = os.environ.get("GM_DET_KEYS", "all")
IMPORTED = ("boxes", "labels", "masks")


def make_instances(image_dir, out):
    """A COCO instances file over the folder's JPEGs (each listed REPEAT times)."""
    from PIL import Image
    rng = random.Random(42)
    files = sorted(p.name for p in pathlib.Path(image_dir).glob("*.jpg"))
    images, anns = [], []
    for rep in range(REPEAT):
        for name in files:
            w, h = Image.open(pathlib.Path(image_dir) / name).size
            iid = len(images) + 1
            images.append({"id": iid, "file_name": name, "width": w, "height": h})
            for _ in range(rng.randint(3, 8)):
                bw, bh = rng.uniform(0.1, 0.6) * w, rng.uniform(0.1, 0.6) * h
                x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
                cx, cy = x + bw / 2, y + bh / 2
                poly = []
                for k in range(12):
                    t = 2 * math.pi * k / 12
                    poly += [cx + 0.5 * bw * math.cos(t), cy + 0.5 * bh * math.sin(t)]
                anns.append({"id": len(anns) + 1, "image_id": iid, "category_id": rng.randint(1, 10),
                             "bbox": [x, y, bw, bh], "area": bw * bh * math.pi / 4, "iscrowd": 0,
                             **({"segmentation": [poly]} if MASKS else {})})
    cats = [{"id": c, "name": f"c{c}"} for c in range(1, 11)]
    path = pathlib.Path(out) / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    return path, len(images)


def run_gm(image_dir, instances, n):
    """gm's loader; GM_BENCH_WORKERS, GM_BENCH_STAGES and GM_BENCH_CORES set its host workers,
    GPU stages and host-core budget; GM_DET_TARGETS=0 leaves each batch's targets unread (the
    loader still moves the masks with the pixels; the boxes and labels are moved on first
    read). Reports the loader's time per image and the loop's time in reading the targets."""
    import time
    import torch
    import gm
    T = gm.transforms
    chain = [T.RandomIoUCrop(), T.SanitizeBoundingBoxes(), T.RandomHorizontalFlip(),
             T.Resize(800, max_size=1333), T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]
    if DEVICE == "cuda":
        # As a training script's model has: torch's CUDA state made before the loop (torch's
        # from_dlpack looks up the current stream, which costs far more until it is).
        torch.cuda.init()
    keys = KEYS if KEYS == "all" else KEYS.split()
    d = gm.CocoDataset(instances, image_dir, target_keys=keys)
    settings = dict(workers=env_int("GM_BENCH_WORKERS"), stages=env_int("GM_BENCH_STAGES"),
                    cores=env_int("GM_BENCH_CORES"))
    loader = gm.ImageLoader(d, batch_size=BATCH, transforms=chain, shuffle=True, seed=1,
                            device=DEVICE, batch_sizes="padded", **settings)
    read_targets = os.environ.get("GM_DET_TARGETS", "1") != "0"
    # The loop's time on targets: moving them (`b.targets`, on first read) and importing
    # each image's tensors into torch.
    move_s, import_s = [0.0], [0.0]

    def epoch(e):
        loader.set_epoch(e)
        images = objects = 0
        for b in loader:
            images += torch.from_dlpack(b.images).shape[0]
            if read_targets:
                t0 = time.perf_counter()
                b.targets
                t1 = time.perf_counter()
                for t in b.torch_targets() if IMPORT == "batch" else b.targets:
                    if t is not None:
                        if IMPORT == "each":
                            t = {k: torch.from_dlpack(t[k]) for k in IMPORTED if k in t}
                        objects += t["boxes"].shape[0]
                move_s[0] += t1 - t0
                import_s[0] += time.perf_counter() - t1
        return images, objects

    rate, (images, objects) = timed(epoch, torch)
    samples = max(loader.stats()["samples"], 1)
    emit(peer="gm", images_per_s=rate, epochs=EPOCHS, images=images, objects=objects,
         masks=MASKS, targets_read=read_targets, import_mode=IMPORT, target_keys=KEYS,
         targets_us_per_image=1e6 * (move_s[0] + import_s[0]) / samples,
         targets_move_us_per_image=1e6 * move_s[0] / samples,
         targets_import_us_per_image=1e6 * import_s[0] / samples,
         loader_images_per_s=loader.stats().get("images_per_second"), **settings,
         **host_times(loader))


def run_dali(image_dir, instances, n):
    from nvidia.dali import fn, pipeline_def, types
    gpu = DEVICE == "cuda"
    torch = None
    if gpu:
        import torch
        torch.cuda.init()
    threads = int(os.environ.get("GM_DALI_THREADS", os.cpu_count()))

    @pipeline_def(batch_size=BATCH, num_threads=threads, device_id=0 if gpu else None, seed=1)
    def coco():
        jpegs, boxes, labels = fn.readers.coco(
            file_root=str(image_dir), annotations_file=str(instances), ratio=True, ltrb=True,
            random_shuffle=True, name="Reader")
        # torchvision's RandomIoUCrop draws (its defaults): these IoU thresholds (0: no crop
        # limit), scale 0.3-1, aspect ratio 0.5-2, 40 trials.
        begin, size, boxes, labels = fn.random_bbox_crop(
            boxes, labels, device="cpu", aspect_ratio=[0.5, 2.0],
            thresholds=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0], bbox_layout="xyXY",
            allow_no_crop=True, num_attempts=40)
        images = fn.decoders.image_slice(jpegs, begin, size, device="mixed" if gpu else "cpu",
                                         output_type=types.RGB)
        flip = fn.random.coin_flip(probability=0.5)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
        images = fn.resize(images, resize_shorter=800, max_size=1333)
        images = fn.crop_mirror_normalize(images, mirror=flip, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[255 * m for m in MEAN], std=[255 * s for s in STD])
        images = fn.pad(images, fill_value=0, axes=(1, 2))
        if gpu:
            boxes, labels = boxes.gpu(), labels.gpu()
        return images, boxes, labels

    pipe = coco()
    pipe.build()
    iterations = math.ceil(pipe.epoch_size("Reader") / BATCH)

    def epoch(_):
        images = objects = 0
        for _ in range(iterations):
            imgs, boxes, _labels = pipe.run()
            batch = imgs.as_tensor()
            # The batch as the training step takes it: one padded float32 [B, 3, H, W] tensor.
            shape = torch.from_dlpack(batch).shape if gpu else batch.shape()
            images += shape[0]
            objects += sum(boxes[i].shape()[0] for i in range(len(boxes)))
        return images, objects

    import nvidia.dali
    rate, (images, objects) = timed(epoch, torch)
    emit(peer="dali", images_per_s=rate, epochs=EPOCHS, threads=threads, images=images,
         objects=objects, dali=nvidia.dali.__version__, cores_by_thread=TIMED.get("cores"))


def collate(batch):
    return tuple(zip(*batch))


def run_torchvision(image_dir, instances, n):
    import torch
    import torchvision
    from torchvision.transforms import v2 as T
    chain = T.Compose([T.ToImage(), T.RandomIoUCrop(), T.SanitizeBoundingBoxes(),
                       T.RandomHorizontalFlip(), T.Resize(800, max_size=1333),
                       T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.CocoDetection(image_dir, str(instances), transforms=chain)
    ds = torchvision.datasets.wrap_dataset_for_transforms_v2(ds, target_keys=["boxes", "labels", "masks"])
    workers = os.cpu_count()
    loader = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers,
                                         collate_fn=collate, persistent_workers=True, prefetch_factor=4)

    def epoch(_):
        images = objects = 0
        for imgs, targets in loader:
            imgs = [i.to(DEVICE, non_blocking=True) for i in imgs]
            targets = [{k: v.to(DEVICE, non_blocking=True) for k, v in t.items()} for t in targets]
            images += len(imgs)
            objects += sum(t["masks"].shape[0] for t in targets)
        return images, objects

    rate, (images, objects) = timed(epoch, torch)
    emit(peer="torchvision", images_per_s=rate, epochs=EPOCHS, workers=workers, images=images,
         objects=objects, torchvision=torchvision.__version__)


def main():
    image_dir, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    instances, n = make_instances(image_dir, out)
    emit(images=n, repeat=REPEAT, batch=BATCH, cores=os.cpu_count())
    for peer in os.environ.get("GM_PEERS", "gm torchvision").split():
        {"gm": run_gm, "dali": run_dali, "torchvision": run_torchvision}[peer](image_dir, instances, n)


if __name__ == "__main__":
    main()
