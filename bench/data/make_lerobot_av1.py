"""LeRobot-style AV1 benchmark datasets (issue 44's performance rows): two cameras of real
footage (../shared/media/video/cockatoo_h264_444.mp4, a 1280x720 recording, looped), encoded
as LeRobot encodes (SVT-AV1, yuv420p, GOP 2, crf 30, preset 12, episodes concatenated into one
file per camera) by tests/media/lerobot/make.py, at 30 fps:

  OUT/av1_480p: 640x480, 6 episodes of 100 frames per camera
  OUT/av1_720p: 1280x720, 4 episodes of 75 frames per camera

Usage: python3 bench/data/make_lerobot_av1.py OUT (needs ffmpeg with libsvtav1, numpy,
pyarrow)."""

import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/media/lerobot"))
import make  # noqa: E402

SOURCE = REPO.parent / "shared/media/video/cockatoo_h264_444.mp4"
SETS = {"av1_480p": ((640, 480), [100] * 6), "av1_720p": ((1280, 720), [75] * 4)}


def decode(w, h):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(SOURCE), "-vf", f"scale={w}:{h}",
                          "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


def build(out, size, lengths):
    src = decode(*size)
    cams = {"observation.images.front": size, "observation.images.wrist": size}
    make.OUT, make.HERE = out, out.parent / f"{out.name}-aux"
    make.HERE.mkdir(parents=True, exist_ok=True)
    # A loose tolerance for make.py's own expectations (the concat demuxer shifts episodes by
    # a few ticks); from_timestamp is set to the exact frame times below.
    make.CAMERAS, make.LENGTHS, make.FPS, make.TOLERANCE = cams, lengths, 30, 1.0
    make.FILES = {k: [0] * len(lengths) for k in cams}

    def frames(ep, n, w, h, cam):
        start = ep * 37 + cam * 101
        for k in range(n):
            yield src[(start + k) % len(src)]

    make.frames = frames
    make.main()
    # The concat demuxer starts each episode a few ticks after the previous one's duration:
    # each episode's from_timestamp is its first frame's time in the file.
    p = out / "meta/episodes/chunk-000/file-000.parquet"
    t = pq.read_table(p).to_pydict()
    starts = [sum(lengths[:e]) for e in range(len(lengths))]
    for key in cams:
        ft = make.frame_times(out / f"videos/{key}/chunk-000/file-000.mp4")
        t[f"videos/{key}/from_timestamp"] = [ft[s] for s in starts]
    pq.write_table(pa.table(t), p)


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1]).resolve()
    for name, (size, lengths) in SETS.items():
        build(root / name, size, lengths)
        print(name, sum(f.stat().st_size for f in (root / name).rglob("*") if f.is_file()))
