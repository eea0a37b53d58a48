"""gm.LeRobotDataset over tests/media/lerobot (a LeRobot v3 dataset written by its make.py
as LeRobot writes one): the frames, padding and indices of every sample are those LeRobot's
__getitem__ would read (expected.json, computed by make.py from ffprobe's frame times), and
LeRobot's errors are raised. Decoding is in tests/gpu."""

import json

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
