"""LeRobot-style AV1 (2 cameras 640x480, SVT-AV1 GOP 2 crf 30, 3 episodes of 40 frames in
one file per camera, real footage) through gm.ClipLoader on this GPU: samples of 2 frames
per camera (delta_timestamps [-1/30, 0]), shuffled, resized to 224x224; frames/s and the host
CPU time per frame. Usage: av1_clips.py DATASET [BATCH [SESSIONS ...]] (defaults: 16; 4 7
14). A shuffled clip loader runs one batch per job, so an epoch of N samples keeps at most
N / BATCH sessions busy."""
import os, sys, time, json
import torch, gm
from gm import transforms as T
root = sys.argv[1]
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
session_counts = [int(a) for a in sys.argv[3:]] or [4, 7, 14]
cams = ["observation.images.front", "observation.images.wrist"]
d = gm.LeRobotDataset(root, delta_timestamps={k: [-1 / 30, 0.0] for k in cams})
n = len(d)
out = {"samples": n, "gpu": torch.cuda.get_device_name(0), "cores": os.cpu_count()}
for sessions in session_counts:
    loader = gm.ClipLoader(d.clips(), batch_size=batch, transforms=[T.Resize((224, 224))],
                           shuffle=True, seed=0, sessions=sessions)
    for b in loader:  # warm-up epoch
        torch.from_dlpack(b.frames)
    torch.cuda.synchronize()
    epochs = 4
    c0, t0 = os.times(), time.perf_counter()
    for e in range(epochs):
        for b in loader:
            x = torch.from_dlpack(b.frames)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    c1 = os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    frames = epochs * n * len(cams) * 2
    out[f"sessions={sessions}"] = {"frames_per_s": round(frames / wall, 1), "host_cores_busy": round(cpu / wall, 2),
                                   "cpu_ms_per_frame": round(1000 * cpu / frames, 3),
                                   "stats": {k: v for k, v in loader.stats().items() if "cpu" in k or k in ("frames", "packets_decoded")}}
    print(json.dumps(out[f"sessions={sessions}"]), flush=True)
# Item access as LeRobot's __getitem__: random samples one at a time.
dd = gm.LeRobotDataset(root, delta_timestamps={k: [-1 / 30, 0.0] for k in cams}, device="cuda")
import random
random.seed(0)
idx = [random.randrange(n) for _ in range(60)]
dd[idx[0]]
t0 = time.perf_counter()
for i in idx:
    it = dd[i]
    torch.from_dlpack(it[cams[0]])
torch.cuda.synchronize()
out["getitem_ms"] = round(1000 * (time.perf_counter() - t0) / len(idx), 2)
print(json.dumps(out))
