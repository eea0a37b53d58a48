import os, sys, time, json
sys.path.insert(0, "bench/peers")
import torch
import gm
from training_bench_common import MEAN, STD
import detection_bench as db
T = gm.transforms
torch.cuda.init()
os.makedirs("/tmp/micro", exist_ok=True)
inst, n = db.make_instances("/tmp/img/imagenet", "/tmp/micro")
d = gm.CocoDataset(inst, "/tmp/img/imagenet")
chain = [T.RandomIoUCrop(), T.SanitizeBoundingBoxes(), T.RandomHorizontalFlip(),
         T.Resize(800, max_size=1333), T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]
w = int(os.environ["W"]) if "W" in os.environ else None
loader = gm.ImageLoader(d, batch_size=16, transforms=chain, shuffle=True, seed=1, device="cuda", batch_sizes="padded", workers=w)
acc = {}
def add(k, v): acc[k] = acc.get(k, 0.0) + v
imgs = 0
for e in range(4):
    loader.set_epoch(e)
    for b in loader:
        t0 = time.perf_counter(); x = torch.from_dlpack(b.images); t1 = time.perf_counter()
        tg = b.targets; t2 = time.perf_counter()
        tt = b.torch_targets(); t3 = time.perf_counter()
        for t in tt:
            if t is not None: t["boxes"].shape[0]
        t4 = time.perf_counter()
        del tt
        t5 = time.perf_counter()
        ea = [torch.from_dlpack(t["boxes"]) for t in tg if t is not None]; t6 = time.perf_counter()
        del ea; t7 = time.perf_counter()
        if e:
            imgs += len(b)
            for k, v in [("images_import", t1-t0), ("targets_move", t2-t1), ("torch_targets", t3-t2), ("loop", t4-t3), ("drop_torch", t5-t4), ("each_boxes_import", t6-t5), ("drop_each", t7-t6)]:
                add(k, v)
out = {k: 1e6 * v / imgs for k, v in acc.items()}
# The same steps on the last batch with the loader idle (the epoch over).
t0 = time.perf_counter()
for _ in range(50):
    tt = b.torch_targets()
    for t in tt:
        if t is not None: t["boxes"].shape[0]
    del tt
t1 = time.perf_counter()
for _ in range(50):
    ea = [torch.from_dlpack(t["boxes"]) for t in tg if t is not None]
    del ea
t2 = time.perf_counter()
out["idle_torch_targets_loop_drop"] = 1e6 * (t1 - t0) / (50 * len(b))
out["idle_each_boxes"] = 1e6 * (t2 - t1) / (50 * len(b))
out["workers"] = w
print(json.dumps(out), flush=True)
