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
loader = gm.ImageLoader(d, batch_size=16, transforms=chain, shuffle=True, seed=1, device="cuda", batch_sizes="padded")
keep = []
for b in loader:
    keep.append(b)
    if len(keep) == 40: break
out = {}
def per(f, reps=20):
    t0 = time.perf_counter()
    for _ in range(reps): f()
    return 1e6 * (time.perf_counter() - t0) / (reps * 16)
# targets (the move + dicts + upload), once per batch: fresh batches
t0 = time.perf_counter()
for b in keep[:20]: b.targets
out["targets_move"] = 1e6 * (time.perf_counter() - t0) / (20 * 16)
b = keep[0]
out["torch_targets"] = per(lambda: b.torch_targets())
tt = b.torch_targets()
bases = {id(t[k]._base) for t in tt if t for k in ("boxes", "labels", "crowd_boxes", "crowd_labels")}
out["distinct_bases"] = len(bases)
out["tensors"] = sum(1 for t in tt if t for k in t if isinstance(t[k], torch.Tensor))
tg = b.targets
out["dict_copies"] = per(lambda: [dict(t) for t in tg])
flat = torch.zeros(100000, device="cuda")
out["as_strided_x5"] = per(lambda: [flat.as_strided([4, 4], [4, 1], 8 * k) for k in range(5)])
out["split_80"] = per(lambda: flat[:160].split_with_sizes([2] * 80), 20)
out["from_dlpack_boxes"] = per(lambda: [torch.from_dlpack(t["boxes"]) for t in tg])
print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}), flush=True)
