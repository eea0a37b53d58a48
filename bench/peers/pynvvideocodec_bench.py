"""PyNvVideoCodec on the same videos and workloads as gm-codec's nvdec bench, in the same run.

Sequential decode with 1..8 decoders (one thread each, CreateDemuxer + CreateDecoder),
random 8-frame clips and random single frames (SimpleDecoder, the peer's random-access API),
with 1 and 7 decoders; and, riding along, how many randomly accessed frames differ from the
peer's own sequential decode. Prints one JSON object per measurement.
With GM_BENCH_EPISODES=DIR, the random 8-frame episodes gm-loader's clips bench wrote to
DIR/random-<video>.json are decoded too, with 1 and 7 decoders ("episodes" workloads).
With GM_BENCH_CLIPS=FILE (gm's random-mix.json: [[video, start], ...]) only those clips over
many videos are decoded, with 1 and 7 decoders.
Usage: python3 pynvvideocodec_bench.py VIDEO...
"""
import os
import hashlib
import json
import random
import sys
import threading
import time

import PyNvVideoCodec as nvc
import torch


def emit(**kw):
    print(json.dumps(kw), flush=True)


def frame_md5(frame):
    t = torch.from_dlpack(frame)
    return hashlib.md5(t.contiguous().cpu().numpy().tobytes()).hexdigest()


def sequential_frames(path, md5s=None):
    demux = nvc.CreateDemuxer(filename=path)
    dec = nvc.CreateDecoder(gpuid=0, codec=demux.GetNvCodecId(), cudacontext=0, cudastream=0, usedevicememory=True)
    n = 0
    for pkt in demux:
        for f in dec.Decode(pkt):
            if md5s is not None:
                md5s.append(frame_md5(f))
            n += 1
    torch.cuda.synchronize()
    return n


def run_threads(count, fn):
    out = [0] * count
    errors = []

    def work(i):
        try:
            out[i] = fn(i)
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sum(out), time.perf_counter() - t, errors


def first_frame(path):
    """Open a video and decode frame 0: (open ms, first frame ms), medians of 5."""
    opens, firsts = [], []
    for _ in range(5):
        t = time.perf_counter()
        dec = nvc.SimpleDecoder(path, gpu_id=0, use_device_memory=True)
        opened = time.perf_counter()
        torch.from_dlpack(dec[0])
        torch.cuda.synchronize()
        done = time.perf_counter()
        opens.append((opened - t) * 1e3)
        firsts.append((done - t) * 1e3)
        del dec
    return sorted(opens)[2], sorted(firsts)[2]


def clip_list(path):
    """Random 8-frame clips over many videos (gm's clips bench wrote them: [[video, start], ...])
    the way PyNvVideoCodec's own many-clips benchmarks decode them: one SimpleDecoder per
    thread, made for the largest size, `reconfigure_decoder` to each clip's video (its decoder
    cache picks or makes a decoder), then the clip's frames; 7 threads on every clip, 1 thread
    on the first 200 (GM_BENCH_CLIPS_ONE)."""
    with open(path) as f:
        clips = [(v, s) for v, s in json.load(f)]
    one = int(os.environ.get("GM_BENCH_CLIPS_ONE", "200"))
    for decoders, todo in ((1, clips[:one]), (7, clips)):
        def job(i, todo=todo, decoders=decoders):
            got, current, dec = 0, None, None
            for video, s in todo[i::decoders]:
                if dec is None:
                    dec = nvc.SimpleDecoder(video, gpu_id=0, use_device_memory=True, max_width=1920,
                                            max_height=1080, bWaitForSessionWarmUp=True)
                elif video != current:
                    dec.reconfigure_decoder(video)
                current = video
                got += len(dec.get_batch_frames_by_index(list(range(s, s + 8))))
            torch.cuda.synchronize()
            return got

        frames, secs, errors = run_threads(decoders, job)
        emit(video="mix", peer="PyNvVideoCodec", workload="random 8-frame clips over many videos",
             videos=len({v for v, _ in todo}), clips=len(todo), sessions=decoders, frames=frames,
             fps=round(frames / secs, 1), errors=errors[:2])


def main():
    if os.environ.get("GM_BENCH_CLIPS"):
        clip_list(os.environ["GM_BENCH_CLIPS"])
        return
    if os.environ.get("GM_BENCH_FIRST_FRAME"):
        for path in sys.argv[1:]:
            name = path.rsplit("/", 1)[-1]
            try:
                o, f = first_frame(path)
                emit(video=name, peer="PyNvVideoCodec", workload="first frame", open_ms=round(o, 2), ms=round(f, 2))
            except Exception as e:  # noqa: BLE001
                emit(video=name, peer="PyNvVideoCodec", workload="first frame", error=repr(e))
        return
    for path in sys.argv[1:]:
        name = path.rsplit("/", 1)[-1]
        try:
            reference = []
            n = sequential_frames(path, reference)
        except Exception as e:  # noqa: BLE001
            emit(video=name, peer="PyNvVideoCodec", workload="sequential reference", error=repr(e))
            continue
        for decoders in (1, 2, 4, 7, 8):
            frames, secs, errors = run_threads(decoders, lambda i: sum(sequential_frames(path) for _ in range(3)))
            emit(video=name, peer="PyNvVideoCodec", workload="sequential", sessions=decoders, frames=frames,
                 fps=round(frames / secs, 1), errors=errors[:2])
        episodes = os.path.join(os.environ.get("GM_BENCH_EPISODES", ""), f"random-{name}.json")
        if os.environ.get("GM_BENCH_EPISODES") and os.path.exists(episodes):
            with open(episodes) as f:
                starts = [s for s in json.load(f) if s + 8 <= n]
            for decoders in (1, 7):
                def ep_job(i, starts=starts):
                    dec = nvc.SimpleDecoder(path, gpu_id=0, use_device_memory=True)
                    got = 0
                    for s in starts[i::decoders]:
                        got += len(dec.get_batch_frames_by_index(list(range(s, s + 8))))
                    torch.cuda.synchronize()
                    return got

                frames, secs, errors = run_threads(decoders, ep_job)
                emit(video=name, peer="PyNvVideoCodec", workload="random 8-frame episodes", sessions=decoders,
                     frames=frames, fps=round(frames / secs, 1), errors=errors[:2])
        if os.environ.get("GM_BENCH_ONLY_EPISODES"):
            continue
        for decoders in (1, 7):
            for workload, count, length in (("random 8-frame clips", 140, 8), ("random single frames", 280, 1)):
                rng = random.Random(1234)
                starts = [rng.randrange(0, n - length + 1) for _ in range(count)]
                wrong = [0]

                def job(i, starts=starts, length=length, wrong=wrong):
                    dec = nvc.SimpleDecoder(path, gpu_id=0, use_device_memory=True)
                    got = 0
                    for s in starts[i::decoders]:
                        idx = list(range(s, s + length))
                        frames = dec.get_batch_frames_by_index(idx) if length > 1 else [dec[s]]
                        for k, f in zip(idx, frames):
                            if decoders == 1 and frame_md5(f) != reference[k]:
                                wrong[0] += 1
                        got += len(frames)
                    torch.cuda.synchronize()
                    return got

                frames, secs, errors = run_threads(decoders, job)
                rec = dict(video=name, peer="PyNvVideoCodec", workload=workload, sessions=decoders, frames=frames,
                           fps=round(frames / secs, 1), errors=errors[:2])
                if decoders == 1:
                    rec["differs_from_own_sequential"] = wrong[0]
                emit(**rec)


if __name__ == "__main__":
    main()
