"""gm.LeRobotDataset over tests/media/lerobot (a LeRobot v3 dataset written by its make.py
as LeRobot writes one): the frames, padding and indices of every sample are those LeRobot's
__getitem__ would read (expected.json, computed by make.py from ffprobe's frame times), and
LeRobot's errors are raised; without a GPU the items decode on the CPU (AV1 on the bundled
decoder) to ffmpeg's frames. Decoding on the GPU is in tests/gpu."""

import hashlib
import json
import pathlib

import numpy as np
import pytest

import gm

from conftest import MEDIA

ROOT = MEDIA / "lerobot" / "dataset"
CAMS = ["observation.images.front", "observation.images.wrist"]


def test_samples_read_the_frames_lerobot_would_decode():
    want = json.loads((MEDIA / "lerobot" / "expected.json").read_text())
    deltas = {k: want["delta_timestamps"] for k in CAMS}
    d = gm.LeRobotDataset(ROOT, delta_timestamps=deltas)
    assert len(d) == len(want["samples"]) == 34
    assert d.cameras == CAMS and d.fps == 10
    for s in want["samples"]:
        got = d.sample(s["index"])
        assert (got["index"], got["episode_index"]) == (s["index"], s["episode_index"])
        for k in CAMS:
            path, frames = got["frames"][k]
            assert path.endswith(s["cameras"][k]["video"]), (s["index"], k, path)
            assert frames == s["cameras"][k]["frames"], (s["index"], k)
            assert got[f"{k}_is_pad"] == s["is_pad"]
    clips = d.clips()
    assert (len(clips), clips.cameras, clips.frames_per_clip) == (34, 2, 4)
    scene, cams = clips.clip(13)
    assert [f for _, f in cams] == [want["samples"][13]["cameras"][k]["frames"] for k in CAMS]


def test_lerobots_errors_are_raised_with_its_reasons(tmp_path):
    with pytest.raises(Exception, match="multiple of 1/fps"):
        gm.LeRobotDataset(ROOT, delta_timestamps={CAMS[0]: [0.0, 0.033], CAMS[1]: [0.0, 0.1]})
    with pytest.raises(Exception, match="not a camera"):
        gm.LeRobotDataset(ROOT, delta_timestamps={"observation.images.side": [0.0]})
    with pytest.raises(Exception, match="meta/info.json"):
        gm.LeRobotDataset(tmp_path / "missing")


def test_items_decode_on_the_cpu_to_ffmpegs_frames():
    """device="cpu": each camera's frames of an item are the frames the sample names (their
    NV12 equal to ffmpeg's framemd5 of that file), converted to RGB as VideoDecoder does."""
    want = json.loads((MEDIA / "lerobot" / "expected.json").read_text())
    deltas = {k: want["delta_timestamps"] for k in CAMS}
    d = gm.LeRobotDataset(ROOT, delta_timestamps=deltas, device="cpu")
    goldens = {}
    for s in want["samples"][::5]:
        item = d[s["index"]]
        for k in CAMS:
            path, idx = d.sample(s["index"])["frames"][k]
            frames = np.from_dlpack(item[k])
            assert frames.dtype == np.uint8 and frames.shape[:2] == (len(idx), 3), frames.shape
            stem = f"{k}.{pathlib.Path(path).stem}"
            if stem not in goldens:
                text = (MEDIA / "lerobot" / "golden" / f"{stem}.framemd5").read_text()
                goldens[stem] = [ln.split(",")[-1].strip() for ln in text.splitlines()
                                 if ln and not ln.startswith("#")]
            nv12 = np.from_dlpack(gm.VideoDecoder(path, device="cpu", output="nv12")
                                  .get_frames_at(idx).data)
            h = nv12.shape[1] * 2 // 3
            for j, f in enumerate(idx):
                uv = nv12[j, h:].reshape(h // 2, -1, 2)
                planar = np.concatenate([nv12[j, :h].ravel(), uv[..., 0].ravel(),
                                         uv[..., 1].ravel()]).tobytes()
                assert hashlib.md5(planar).hexdigest() == goldens[stem][f], (s["index"], k, f)
            rgb = np.from_dlpack(gm.VideoDecoder(path, device="cpu").get_frames_at(idx).data)
            assert np.array_equal(rgb, frames), (s["index"], k)
