"""A LeRobot-style dataset for measuring AV1 through the clip loader: two 640x480 cameras of
real footage (../shared/media/video/birds_720p.mp4, scaled and looped), SVT-AV1 at LeRobot's
settings (GOP 2, crf 30, preset 12), 3 episodes of 40 frames at 30 fps concatenated into one
file per camera, written by tests/media/lerobot/make.py's code into target/lrperf/dataset
(12 MB). Run from the repository root: python3 bench/lerobot/make_perf_dataset.py (needs
ffmpeg with libsvtav1, numpy and pyarrow). Then on the GPU machine:
python3 bench/lerobot/av1_clips.py target/lrperf/dataset"""

import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests/media/lerobot"))
import make  # noqa: E402

RAW = REPO / "target/lrperf/birds.rgb"
RAW.parent.mkdir(parents=True, exist_ok=True)
subprocess.run(["ffmpeg", "-v", "error", "-y", "-stream_loop", "-1", "-i",
                str(REPO / "../shared/media/video/birds_720p.mp4"), "-vf", "scale=640:480",
                "-frames:v", "900", "-pix_fmt", "rgb24", "-f", "rawvideo", str(RAW)], check=True)
raw = np.memmap(RAW, np.uint8, "r").reshape(-1, 480, 640, 3)

make.OUT = REPO / "target/lrperf/dataset"
make.HERE = REPO / "target/lrperf"
make.CAMERAS = {"observation.images.front": (640, 480), "observation.images.wrist": (640, 480)}
make.LENGTHS = [40, 40, 40]
make.FILES = {"observation.images.front": [0, 0, 0], "observation.images.wrist": [0, 0, 0]}
make.FPS = 30
make.TOLERANCE = 1.0  # expected.json is not used here


def frames(ep, n, w, h, cam):
    start = (ep * 200 + cam * 450) % (len(raw) - n)
    for k in range(n):
        yield np.ascontiguousarray(raw[start + k])


make.frames = frames
make.main()
# For these segments (ffmpeg's CLI encoder at 30 fps, mp4 timescale 15360) the concat demuxer
# places each episode 10 ticks (0.65 ms) after the previous one's stream duration, so the
# running sum of durations make.py writes (LeRobot's) is off by more than tolerance_s from
# the second episode on: gm refused the dataset with LeRobot's tolerance error. Each
# episode's from_timestamp is set to its first frame's time in the file instead.
p = make.OUT / "meta/episodes/chunk-000/file-000.parquet"
t = pq.read_table(p).to_pydict()
for key in make.CAMERAS:
    ft = make.frame_times(make.OUT / f"videos/{key}/chunk-000/file-000.mp4")
    starts = [sum(make.LENGTHS[:e]) for e in range(len(make.LENGTHS))]
    t[f"videos/{key}/from_timestamp"] = [ft[s] for s in starts]
pq.write_table(pa.table(t), p)
RAW.unlink()
