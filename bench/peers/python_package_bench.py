"""The Python package (gm) against the Rust benchmark and a peer, on the GPU machine, in the
same run and on the same files. Prints one JSON object per measurement.

images DIR: gm.ImageLoader from Python with the settings of gm-loader's pipeline bench
  (RandomResizedCrop 224, flip, ImageNet normalize, float16 NCHW, batches of 256, shuffled,
  drop_last, 4 host workers x GM_BENCH_STAGES GPU stages (2; "auto": the loader's own
  default), prefetch 3, each file listed GM_BENCH_REPEAT
  times): median images/s of GM_BENCH_REPS epochs after a warm-up epoch, and the consumer's
  wait per batch. The consumer takes each batch with torch.from_dlpack on its current stream
  (the DLPack stream protocol makes that stream wait for the batch).
video VIDEO FRAMEMD5: VideoDecoder.get_frames_at on random single frames, random 8-frame
  clips and 16 scattered random frames per call (a clip sampler's request), one request at a
  time, NV12 (as decoded) and RGB, with the decoder's default sessions (up to 7, one per GOP
  run of a request) and with one session; PyNvVideoCodec's SimpleDecoder (its random-access
  API, one decoder) on the same requests. In a second, untimed pass every
  frame of both is checked against ffmpeg's framemd5 as it arrives, and the mismatches are
  reported. torchcodec's VideoDecoder (seek_mode="exact"; its "nvdec" CUDA backend
  on all requests, its "ffmpeg" CUDA backend on single frames and clips, the CPU on single
  frames) on the same requests, RGB, each checked against its own sequential decode.
"""

import hashlib
import json
import os
import random
import sys
import tempfile
import time

import torch

import gm
from gm import transforms as T


def emit(**kw):
    print(json.dumps(kw), flush=True)


# GM_BENCH_HANDOFF=0 leaves the batches untaken (no torch.from_dlpack), to tell the handoff's
# cost from the loader's.
HANDOFF = os.environ.get("GM_BENCH_HANDOFF", "1") != "0"


def image_list(folder, repeat):
    folder = os.path.abspath(folder)  # the list lives elsewhere: its paths must be absolute
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith((".jpg", ".jpeg")))
    fd, path = tempfile.mkstemp(suffix=".txt")
    with os.fdopen(fd, "w") as out:
        for r in range(repeat):
            for i, f in enumerate(files):
                out.write(f"{f} {(i + r) % 1000}\n")
    return path, len(files) * repeat


def images(folder):
    repeat = int(os.environ.get("GM_BENCH_REPEAT", "50"))
    reps = int(os.environ.get("GM_BENCH_REPS", "3"))
    listing, n = image_list(folder, repeat)
    chain = [T.RandomResizedCrop(224, antialias=False), T.RandomHorizontalFlip(),
             T.ToDtype(torch.float16, scale=True), T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]
    stages = os.environ.get("GM_BENCH_STAGES", "2")
    stages = None if stages == "auto" else int(stages)
    loader = gm.ImageLoader(listing, batch_size=256, transforms=chain, shuffle=True, seed=0, drop_last=True,
                            workers=4, stages=stages, prefetch=3, device="cuda", rank=0, world_size=1)

    def epoch(e):
        before = loader.stats()
        loader.set_epoch(e)
        t = time.perf_counter()
        got = 0
        for imgs, labels in loader:
            if HANDOFF:
                x = torch.from_dlpack(imgs)
                torch.from_dlpack(labels)
            got += len(imgs)
        torch.cuda.synchronize()
        secs = time.perf_counter() - t
        after = loader.stats()
        batches = max(after["batches"] - before["batches"], 1)
        return got / secs, (after["wait_us"] - before["wait_us"]) / batches, got

    epoch(0)
    runs = sorted(epoch(e) for e in range(1, reps + 1))
    med = runs[len(runs) // 2]
    s = loader.stats()
    emit(bench="pipeline", api="python", handoff=HANDOFF, workers=4, stages=stages or "auto", batch=256, images_per_epoch=med[2],
         img_per_s=round(med[0]), min=round(runs[0][0]), max=round(runs[-1][0]),
         wait_us_per_batch=round(med[1]), hardware=s["decode_paths"]["hardware"], cuda=s["decode_paths"]["cuda"],
         cpu=s["decode_paths"]["cpu"], bad=s["bad"], gm=gm.__version__, torch=torch.__version__)
    os.unlink(listing)


def nv12_md5(frame, h, w):
    """ffmpeg's yuv420p bytes of an NV12 frame ([h * 3 / 2, w] uint8), hashed."""
    f = frame.cpu().numpy()
    y, uv = f[:h], f[h:].reshape(h // 2, w // 2, 2)
    return hashlib.md5(y.tobytes() + uv[..., 0].tobytes() + uv[..., 1].tobytes()).hexdigest()


def requests(n, length, count, scattered=False):
    rng = random.Random(1234)
    if scattered:
        return [rng.sample(range(n), length) for _ in range(count)]
    return [list(range(s, s + length)) for s in (rng.randrange(0, n - length + 1) for _ in range(count))]


def video(path, framemd5):
    want = [l.split(",")[-1].strip() for l in open(framemd5) if l.strip() and not l.startswith("#")]
    name = os.path.basename(path)
    d = gm.VideoDecoder(path, output="nv12", device="cuda")
    rgb = gm.VideoDecoder(path, output="rgb", device="cuda")
    one = gm.VideoDecoder(path, output="nv12", device="cuda", sessions=1)
    w, h, n = d.metadata["width"], d.metadata["height"], len(d)
    assert n == len(want), (n, len(want))
    try:
        import PyNvVideoCodec as nvc
    except ImportError as e:
        nvc = None
        emit(video=name, peer="PyNvVideoCodec", error=repr(e))
    for workload, length, count, scattered in (
        ("random single frames", 1, 280, False),
        ("random 8-frame clips", 8, 140, False),
        ("16 scattered random frames per call", 16, 40, True),
    ):
        reqs = requests(n, length, count, scattered)

        def gm_run(dec, check):
            """Timed without checks; with `check`, every frame's md5 at once (untimed)."""
            wrong = 0
            t = time.perf_counter()
            for idx in reqs:
                frames = torch.from_dlpack(dec.get_frames_at(idx).data)
                if check:
                    wrong += sum(nv12_md5(f, h, w) != want[k] for k, f in zip(idx, frames))
            torch.cuda.synchronize()
            return time.perf_counter() - t, wrong

        for dec in (d, rgb, one):
            gm_run(dec, False)  # warm-up: the decode threads, the sessions, the pool
        for label, dec, sessions in (("nv12", d, 7), ("rgb", rgb, 7), ("nv12", one, 1)):
            if sessions == 1 and length == 1:
                continue  # one frame decodes on one session either way
            secs, _ = gm_run(dec, False)
            rec = dict(video=name, api="python", peer="gm", output=label, workload=workload, sessions=sessions,
                       frames=length * count, fps=round(length * count / secs, 1))
            if label == "nv12" and sessions > 1:
                rec["differs_from_ffmpeg"] = gm_run(dec, True)[1]
            emit(**rec)
        torchcodec_peer(path, name, workload, length, reqs, scattered)
        if nvc is None:
            continue
        try:
            if workload == "random single frames":
                peer_sequential(nvc, path, name, want, h, w)
            peer = nvc.SimpleDecoder(path, gpu_id=0, use_device_memory=True)
            peer[0]

            def peer_run(check):
                # A frame is hashed before the next request: the peer's frames may share its
                # buffers with later ones.
                wrong = [0, 0]
                shape = None
                t = time.perf_counter()
                for idx in reqs:
                    frames = peer.get_batch_frames_by_index(idx) if length > 1 else [peer[idx[0]]]
                    for k, f in zip(idx, frames):
                        x = torch.from_dlpack(f)
                        shape = tuple(x.shape)
                        if check and shape == (h * 3 // 2, w):
                            m = nv12_md5(x, h, w)
                            wrong[0] += m != want[k]
                            wrong[1] += bool(PEER_SEQUENTIAL) and m != PEER_SEQUENTIAL[k]
                torch.cuda.synchronize()
                return time.perf_counter() - t, wrong, shape

            secs, _, shape = peer_run(False)
            _, wrong, _ = peer_run(True)
            emit(video=name, peer="PyNvVideoCodec", version=getattr(nvc, "__version__", "?"), workload=workload,
                 sessions=1, frames=length * count, fps=round(length * count / secs, 1), frame_shape=shape,
                 differs_from_ffmpeg=wrong[0], differs_from_own_sequential=wrong[1])
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            emit(video=name, peer="PyNvVideoCodec", workload=workload, error=repr(e)[:300])


PEER_SEQUENTIAL = []

# torchcodec's own sequential RGB frames, hashed, by backend: its random access is checked
# against them (its RGB conversion is not ffmpeg's yuv420p, so framemd5 does not apply).
TORCHCODEC_SEQUENTIAL = {}


def torchcodec_peer(path, name, workload, length, reqs, scattered):
    """torchcodec's VideoDecoder (seek_mode="exact") on the GPU, with each CUDA backend it
    has, and on the CPU, on the same requests as gm; every frame of a second, untimed pass is
    checked against the same backend's sequential decode."""
    try:
        import torchcodec
        from torchcodec.decoders import VideoDecoder, set_cuda_backend
    except ImportError as e:
        emit(video=name, peer="torchcodec", workload=workload, error=repr(e)[:300])
        return
    # The CPU only on single frames, the FFmpeg backend not on scattered frames: enough for
    # scale, and those runs would take minutes (10-20 frames/s on the H100 host).
    slow = () if scattered else ("ffmpeg",) + (("cpu",) if length == 1 else ())
    for backend in ("nvdec",) + slow:
        label = f"torchcodec-{backend}"
        try:
            def make():
                if backend == "cpu":
                    return VideoDecoder(path, device="cpu", seek_mode="exact", num_ffmpeg_threads=0)
                with set_cuda_backend(backend):
                    return VideoDecoder(path, device="cuda", seek_mode="exact")

            if backend not in TORCHCODEC_SEQUENTIAL:
                seq = make()
                n = len(seq)
                TORCHCODEC_SEQUENTIAL[backend] = [
                    hashlib.md5(f.cpu().numpy().tobytes()).hexdigest()
                    for s in range(0, n, 30) for f in seq.get_frames_in_range(s, min(s + 30, n)).data
                ]
            own = TORCHCODEC_SEQUENTIAL[backend]
            dec = make()
            dec.get_frames_at(reqs[0])  # warm-up: the decoder and its surfaces

            def run(check):
                wrong = 0
                t = time.perf_counter()
                for idx in reqs:
                    data = dec.get_frames_at(idx).data
                    if check:
                        wrong += sum(hashlib.md5(f.cpu().numpy().tobytes()).hexdigest() != own[k]
                                     for k, f in zip(idx, data))
                if data.is_cuda:
                    torch.cuda.synchronize()
                return time.perf_counter() - t, wrong, tuple(data.shape)

            secs, _, shape = run(False)
            emit(video=name, peer=label, version=torchcodec.__version__, workload=workload, sessions=1,
                 frames=length * len(reqs), fps=round(length * len(reqs) / secs, 1), frame_shape=shape,
                 differs_from_own_sequential=run(True)[1], cpu_fallback=str(getattr(dec, "cpu_fallback", "")))
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            emit(video=name, peer=label, workload=workload, error=repr(e)[:300])


def peer_sequential(nvc, path, name, want, h, w):
    """The peer's own sequential decode: how its frames compare with ffmpeg's when nothing is
    sought (so that a mismatch of random access is told apart from a different decode)."""
    demux = nvc.CreateDemuxer(filename=path)
    dec = nvc.CreateDecoder(gpuid=0, codec=demux.GetNvCodecId(), cudacontext=0, cudastream=0, usedevicememory=True)
    for pkt in demux:
        for f in dec.Decode(pkt):
            PEER_SEQUENTIAL.append(nv12_md5(torch.from_dlpack(f), h, w))
    emit(video=name, peer="PyNvVideoCodec", workload="sequential (reference check)", frames=len(PEER_SEQUENTIAL),
         differs_from_ffmpeg=sum(a != b for a, b in zip(PEER_SEQUENTIAL, want)))


if __name__ == "__main__":
    if sys.argv[1] == "images":
        images(sys.argv[2])
    else:
        video(sys.argv[2], sys.argv[3])
