"""Writes a small LeRobot v3.0 dataset the way LeRobot writes one, for gm's tests:
`dataset/` (meta/info.json, meta/episodes and data tables in parquet, two cameras of
SVT-AV1 video at LeRobot's settings: yuv420p, GOP 2, crf 30, preset 12, episodes encoded
one by one and concatenated into files with ffmpeg's concat demuxer and stream copy, each
episode's from_timestamp the running sum of the episodes' durations), `expected.json` (what
LeRobot's __getitem__ would decode for each sample under the delta timestamps below,
computed here from ffprobe's frame times, independently of gm), `golden/*.framemd5`
(ffmpeg's decode of each video file) and `variants/episodes_shifted.parquet` (the episodes
table with the front camera's from_timestamp of episode 1 moved by half a frame: every
sample of that episode must violate the tolerance).

Needs ffmpeg with libsvtav1, ffprobe, and Python with numpy and pyarrow.
Run from this folder: python3 make.py"""

import json
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "dataset"
FPS = 10
LENGTHS = [12, 7, 15]
CAMERAS = {"observation.images.front": (96, 64), "observation.images.wrist": (64, 64)}
# Which file each episode of each camera goes to: the front camera starts a second file at
# episode 2 (as LeRobot does when a file reaches its size limit); the wrist keeps one.
FILES = {"observation.images.front": [0, 0, 1], "observation.images.wrist": [0, 0, 0]}
DELTAS = [-0.2, -0.1, 0.0, 0.1]
TOLERANCE = 1e-4


def frames(ep, n, w, h, cam):
    """Distinct frames: a gradient, a bright block at the frame number's position and a
    colour per episode and camera."""
    y, x = np.mgrid[0:h, 0:w]
    for k in range(n):
        img = np.zeros((h, w, 3), np.uint8)
        img[..., 0] = (x * 255 // w).astype(np.uint8)
        img[..., 1] = (y * 255 // h).astype(np.uint8)
        img[..., 2] = 60 * ep + 40 * cam
        bx = (k * 8) % (w - 16)
        img[16:32, bx:bx + 16] = 255
        yield img


def encode(path, ep, n, w, h, cam):
    cmd = ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
           "-r", str(FPS), "-i", "-", "-c:v", "libsvtav1", "-pix_fmt", "yuv420p", "-g", "2",
           "-crf", "30", "-preset", "12", "-svtav1-params", "fast-decode=0", str(path)]
    data = b"".join(f.tobytes() for f in frames(ep, n, w, h, cam))
    subprocess.run(cmd, input=data, check=True)


def duration(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=duration", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return float(out.strip())


def frame_times(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "frame=pts_time", "-of", "csv=p=0", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return [float(l) for l in out.split()]


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    shutil.rmtree(HERE / "golden", ignore_errors=True)
    (HERE / "golden").mkdir()
    (HERE / "variants").mkdir(exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp())
    episodes = {"episode_index": [], "tasks": [], "length": [], "data/chunk_index": [],
                "data/file_index": [], "dataset_from_index": [], "dataset_to_index": []}
    start = 0
    for ep, n in enumerate(LENGTHS):
        for key, v in [("episode_index", ep), ("tasks", ["pick the block"]), ("length", n),
                       ("data/chunk_index", 0), ("data/file_index", 0),
                       ("dataset_from_index", start), ("dataset_to_index", start + n)]:
            episodes[key].append(v)
        start += n
    for cam, (key, (w, h)) in enumerate(CAMERAS.items()):
        per_file = {}
        for ep, n in enumerate(LENGTHS):
            p = tmp / f"{cam}_{ep}.mp4"
            encode(p, ep, n, w, h, cam)
            per_file.setdefault(FILES[key][ep], []).append((ep, p))
        cols = {c: [None] * len(LENGTHS) for c in
                ["chunk_index", "file_index", "from_timestamp", "to_timestamp"]}
        for f, eps in per_file.items():
            dst = OUT / "videos" / key / "chunk-000" / f"file-{f:03d}.mp4"
            dst.parent.mkdir(parents=True, exist_ok=True)
            lst = tmp / f"{cam}_{f}.ffconcat"
            lst.write_text("ffconcat version 1.0\n" + "".join(f"file '{p}'\n" for _, p in eps))
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i",
                            str(lst), "-c", "copy", "-movflags", "faststart", str(dst)], check=True)
            t = 0.0
            for ep, p in eps:
                d = duration(p)
                cols["chunk_index"][ep], cols["file_index"][ep] = 0, f
                cols["from_timestamp"][ep], cols["to_timestamp"][ep] = t, t + d
                t += d
            golden = HERE / "golden" / f"{key}.file-{f:03d}.framemd5"
            with open(golden, "w") as g:
                subprocess.run(["ffmpeg", "-v", "error", "-i", str(dst), "-fps_mode", "passthrough",
                                "-pix_fmt", "yuv420p", "-f", "framemd5", "-"], stdout=g, check=True)
        for c, v in cols.items():
            episodes[f"videos/{key}/{c}"] = v
    episodes["meta/episodes/chunk_index"] = [0] * len(LENGTHS)
    episodes["meta/episodes/file_index"] = [0] * len(LENGTHS)
    episodes["stats/action/mean"] = [[0.0, 0.0]] * len(LENGTHS)
    ep_table = pa.table(episodes)
    (OUT / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    pq.write_table(ep_table, OUT / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    shifted = dict(episodes)
    col = "videos/observation.images.front/from_timestamp"
    shifted[col] = [t + (0.5 / FPS if i == 1 else 0.0) for i, t in enumerate(episodes[col])]
    pq.write_table(pa.table(shifted), HERE / "variants" / "episodes_shifted.parquet")

    total = sum(LENGTHS)
    ep_of = [ep for ep, n in enumerate(LENGTHS) for _ in range(n)]
    frame_index = [k for n in LENGTHS for k in range(n)]
    data = pa.table({
        "observation.state": pa.array([[0.1 * i, -0.1 * i] for i in range(total)], pa.list_(pa.float32())),
        "action": pa.array([[0.2 * i, 0.0] for i in range(total)], pa.list_(pa.float32())),
        "timestamp": pa.array([k / FPS for k in frame_index], pa.float32()),
        "frame_index": pa.array(frame_index, pa.int64()),
        "episode_index": pa.array(ep_of, pa.int64()),
        "index": pa.array(range(total), pa.int64()),
        "task_index": pa.array([0] * total, pa.int64()),
    })
    (OUT / "data" / "chunk-000").mkdir(parents=True)
    pq.write_table(data, OUT / "data" / "chunk-000" / "file-000.parquet")

    features = {
        key: {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
              "info": {"video.height": h, "video.width": w, "video.codec": "av1",
                       "video.pix_fmt": "yuv420p", "video.fps": FPS, "video.channels": 3,
                       "video.g": 2, "video.crf": 30, "video.preset": 12,
                       "video.fast_decode": 0, "has_audio": False}}
        for key, (w, h) in CAMERAS.items()}
    features.update({
        "observation.state": {"dtype": "float32", "shape": [2], "names": None},
        "action": {"dtype": "float32", "shape": [2], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    })
    info = {"codebase_version": "v3.0", "robot_type": "test", "total_episodes": len(LENGTHS),
            "total_frames": total, "total_tasks": 1, "chunks_size": 1000,
            "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": FPS,
            "splits": {"train": f"0:{len(LENGTHS)}"},
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "features": features}
    (OUT / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    pq.write_table(pa.table({"task_index": [0], "task": ["pick the block"]}), OUT / "meta" / "tasks.parquet")

    # LeRobot's __getitem__ under DELTAS for every camera, from ffprobe's frame times:
    # rows clamped to the episode, the data's float32 timestamps, shifted by from_timestamp,
    # frame round(t * average_fps) (torchcodec), the tolerance check in float32.
    times = {}
    expected = []
    for i in range(total):
        ep = ep_of[i]
        lo, hi = episodes["dataset_from_index"][ep], episodes["dataset_to_index"][ep]
        rows = [i + round(d * FPS) for d in DELTAS]
        pad = [r < lo or r >= hi for r in rows]
        rows = [max(lo, min(hi - 1, r)) for r in rows]
        sample = {"index": i, "episode_index": ep, "is_pad": pad, "cameras": {}}
        for key in CAMERAS:
            f = episodes[f"videos/{key}/file_index"][ep]
            rel = f"videos/{key}/chunk-000/file-{f:03d}.mp4"
            if rel not in times:
                times[rel] = frame_times(OUT / rel)
            ft = times[rel]
            avg = len(ft) / duration(OUT / rel)
            q = [episodes[f"videos/{key}/from_timestamp"][ep] + float(np.float32(frame_index[r] / FPS))
                 for r in rows]
            loaded = [min(len(ft) - 1, round(t * avg)) for t in q]
            chosen = []
            for t in q:
                d = [abs(np.float32(t) - np.float32(ft[k])) for k in loaded]
                j = int(np.argmin(d))
                assert d[j] <= np.float32(TOLERANCE), (i, key, t, ft[loaded[j]])
                chosen.append(loaded[j])
            sample["cameras"][key] = {"video": rel, "frames": chosen}
        expected.append(sample)
    (HERE / "expected.json").write_text(json.dumps(
        {"delta_timestamps": DELTAS, "tolerance_s": TOLERANCE, "samples": expected}, indent=1))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
