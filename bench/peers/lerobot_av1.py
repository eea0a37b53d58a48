"""LeRobot-style AV1 samples on one GPU host (issue 44's performance row): gm.ClipLoader over
gm.LeRobotDataset (AV1 decoded on the CPU by the bundled rav1d where NVDEC has no AV1, one
decoder thread per session, frames then resized to 224x224 by the fused kernel on the GPU)
against torchcodec decoding on the CPU (FFmpeg with libdav1d, its own thread settings) in a
torch DataLoader with one worker per host core, the same samples (the frames each sample
names for each camera), resized to 224x224 on the GPU after the copy.

Reports frames/s (every frame of every camera of every sample), the host's busy cores over
the timed epochs (from /proc/stat: every process, DataLoader workers included) and frames/s
per busy core. Usage: lerobot_av1.py ROOT [ROOT...] (datasets of
bench/data/make_lerobot_av1.py); env EPOCHS (3), BATCH (16), SESSIONS (gm's, "16,32"),
WORKERS (torchcodec's DataLoader workers, the host's cores), PEERS ("gm,torchcodec"); gm's
AV1 decoder is FFmpeg's libdav1d where FFmpeg's libraries are found (torchcodec's), else the
bundled rav1d (GM_AV1_DECODER=bundled forces it)."""

import json
import os
import sys
import time

import torch
import torch.nn.functional as F

import gm
from gm import transforms as T

EPOCHS = int(os.environ.get("EPOCHS", "3"))
BATCH = int(os.environ.get("BATCH", "16"))
HZ = os.sysconf("SC_CLK_TCK")


def busy_seconds():
    """Busy CPU time of the whole host so far."""
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / HZ


def timed(run_epoch, frames_per_epoch):
    run_epoch()  # warm-up: decoders and workers started, files in the page cache
    torch.cuda.synchronize()
    b0, t0 = busy_seconds(), time.perf_counter()
    for _ in range(EPOCHS):
        run_epoch()
    torch.cuda.synchronize()
    wall, cores = time.perf_counter() - t0, (busy_seconds() - b0) / (time.perf_counter() - t0)
    fps = EPOCHS * frames_per_epoch / wall
    return {"frames_per_s": round(fps, 1), "busy_cores": round(cores, 2),
            "frames_per_s_per_busy_core": round(fps / max(cores, 1e-9), 1)}


def gm_rows(root, cams, deltas):
    d = gm.LeRobotDataset(root, delta_timestamps={k: deltas for k in cams})
    frames = len(d) * len(cams) * len(deltas)
    rows = []
    for sessions in [int(s) for s in os.environ.get("SESSIONS", "16,32").split(",")]:
        loader = gm.ClipLoader(d.clips(), batch_size=BATCH, transforms=[T.Resize((224, 224))],
                               shuffle=True, seed=0, sessions=sessions)

        def epoch():
            for b in loader:
                torch.from_dlpack(b.frames)

        row = {"peer": "gm", "sessions": sessions,
               "av1_decoder": os.environ.get("GM_AV1_DECODER", "auto"), **timed(epoch, frames)}
        stats = loader.stats()
        row["stats"] = {k: v for k, v in stats.items() if not isinstance(v, (list, dict))}
        loader.close()
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


class TorchcodecSamples(torch.utils.data.Dataset):
    """Sample i: per camera, the frames gm's index names, decoded by torchcodec on the CPU; one
    decoder per file and worker, kept open (LeRobot's decoder cache)."""

    def __init__(self, root, cams, deltas):
        index = gm.LeRobotDataset(root, delta_timestamps={k: deltas for k in cams})
        # Plain lists only: the workers fork from this process.
        self.samples = [index.sample(i)["frames"] for i in range(len(index))]
        self.cams = cams
        self.decoders = {}

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        from torchcodec.decoders import VideoDecoder
        out = []
        for cam in self.cams:
            path, frames = self.samples[i][cam]
            d = self.decoders.get(path)
            if d is None:
                d = self.decoders[path] = VideoDecoder(path, device="cpu",
                                                       seek_mode="approximate")
            out.append(d.get_frames_at(list(frames)).data)
        return torch.stack(out)  # [cameras, T, 3, H, W] uint8


def torchcodec_row(root, cams, deltas):
    ds = TorchcodecSamples(root, cams, deltas)
    workers = int(os.environ.get("WORKERS", str(os.cpu_count())))
    dl = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers,
                                     persistent_workers=True, prefetch_factor=4)
    frames = len(ds) * len(cams) * len(deltas)

    def epoch():
        for x in dl:
            x = x.cuda(non_blocking=True)
            b, c, t = x.shape[:3]
            y = F.interpolate(x.flatten(0, 2).float(), size=(224, 224), mode="bilinear",
                              antialias=True)
            y.round().clamp(0, 255).to(torch.uint8).view(b, c, t, 3, 224, 224)

    row = {"peer": "torchcodec", "workers": workers, **timed(epoch, frames)}
    print(json.dumps(row), flush=True)
    return row


def main():
    import torchcodec
    env = {"gpu": torch.cuda.get_device_name(0), "cores": os.cpu_count(),
           "torch": torch.__version__, "torchcodec": torchcodec.__version__,
           "epochs": EPOCHS, "batch": BATCH}
    print(json.dumps(env), flush=True)
    for root in sys.argv[1:]:
        probe = gm.LeRobotDataset(root)
        cams = probe.cameras
        deltas = [-1 / probe.fps, 0.0]
        meta = gm.VideoDecoder(probe.sample(0)["frames"][cams[0]][0], device="cpu").metadata
        head = {"dataset": os.path.basename(root.rstrip("/")), "samples": len(probe),
                "cameras": len(cams), "deltas": deltas, "codec": meta["codec"],
                "size": f"{meta['width']}x{meta['height']}"}
        print(json.dumps(head), flush=True)
        peers = os.environ.get("PEERS", "gm,torchcodec").split(",")
        if "gm" in peers:
            gm_rows(root, cams, deltas)
        if "torchcodec" in peers:
            torchcodec_row(root, cams, deltas)


if __name__ == "__main__":
    main()
