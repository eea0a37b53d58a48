"""gm.VideoDataset without a GPU: episodes cut from the index, bad files left out with the
reason; gm.ClipLoader on the CPU."""

import shutil

import numpy as np
import pytest

import gm
from gm import transforms as T

from conftest import MEDIA, cpu_decoder_or_skip

H264 = [str(MEDIA / "video" / f"{n}.mp4") for n in ("h264_bpyramid", "h264_open_gop")]


def test_frame_counted_episodes():
    d = gm.VideoDataset(H264, frames=8, stride=5, step=2)
    # 30 frames each: starts 0, 5, ... while start + (8 - 1) * 2 < 30.
    per_video = len(range(0, 30 - 14, 5))
    assert len(d) == 2 * per_video and d.frames_per_clip == 8 and d.cameras == 1
    scene, cams = d.clip(0)
    assert scene == 0 and cams == [(H264[0], list(range(0, 16, 2)))]
    scene, cams = d.clip(per_video)
    assert scene == 1 and cams[0][0] == H264[1] and cams[0][1] == list(range(0, 16, 2))
    with pytest.raises(IndexError):
        d.clip(len(d))


def test_timed_episodes_follow_timestamps():
    d = gm.VideoDataset([str(MEDIA / "video" / "h264_vfr.mp4")], timed=(0.5, 10.0, 0.25))
    assert len(d) > 0 and d.frames_per_clip == 5
    dec = gm.VideoDecoder(str(MEDIA / "video" / "h264_vfr.mp4"))
    _, cams = d.clip(0)
    # Each sample is the frame shown at its time (0, 0.1, ... s), within half a period.
    shown = [dec.frame_played_at(0.1 * k) for k in range(5)]
    assert all(abs(a - b) <= 1 for a, b in zip(cams[0][1], shown)), (cams[0][1], shown)


def test_scenes_and_bad_files(tmp_path):
    d = gm.VideoDataset(scenes=[H264], frames=4, stride=4)
    assert d.cameras == 2 and len(d.clip(0)[1]) == 2
    folder = tmp_path / "videos"
    folder.mkdir()
    for p in H264:
        shutil.copy(p, folder)
    (folder / "broken.mp4").write_bytes(b"\x00\x00\x00\x08ftyp" + b"\x00" * 64)
    d = gm.VideoDataset(directory=str(folder), frames=8, stride=8)
    assert [name.endswith("broken.mp4") for name, _ in d.skipped] == [True]
    assert len(d) == 2 * 3
    with pytest.raises(gm.GmError, match="broken.mp4"):
        gm.VideoDataset(directory=str(folder), frames=8, bad_files="fail")


def test_clip_loader_on_the_cpu():
    """device="cpu" (or no GPU): host batches of the shape asked for, every clip once, the
    same batches again for the same seed and epoch, and the first frame of each clip equal
    to that frame decoded alone by VideoDecoder on the CPU and resized the same way."""
    cpu_decoder_or_skip(H264[0])  # the CPU loader reports clips it cannot decode as bad
    d = gm.VideoDataset(H264, frames=4, stride=8, step=2)
    chain = [T.Resize((36, 64))]
    loader = gm.ClipLoader(d, batch_size=3, transforms=chain, device="cpu", shuffle=True,
                           seed=3)
    loader.set_epoch(1)
    first = [(b.episodes, np.from_dlpack(b.frames).copy()) for b in loader]
    assert sorted(e for eps, _ in first for e in eps) == list(range(len(d)))
    assert all(f.shape[1:] == (4, 3, 36, 64) and f.dtype == np.uint8 for _, f in first)
    loader.set_epoch(1)
    again = [(b.episodes, np.from_dlpack(b.frames).copy()) for b in loader]
    assert all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(first, again))
    # Two decoder threads instead of one per core, and one job in flight instead of the
    # default window: the same batches in the same order.
    for kwargs in ({"cpu_decoders": 2}, {"jobs_in_flight": 1}):
        other = gm.ClipLoader(d, batch_size=3, transforms=chain, device="cpu", shuffle=True,
                              seed=3, **kwargs)
        other.set_epoch(1)
        got = [(b.episodes, np.from_dlpack(b.frames).copy()) for b in other]
        # On the CPU: no NVDEC sessions, the decoders asked for, and the placement says why.
        assert other.placement.startswith("CPU ("), other.placement
        assert other.decoder_threads[0] == 0
        if "cpu_decoders" in kwargs:
            assert other.decoder_threads == (0, 2)
        other.close()
        assert len(got) == len(first), kwargs
        assert all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(first, got))
    for eps, frames in first:
        for k, e in enumerate(eps):
            _, cams = d.clip(e)
            path, idx = cams[0]
            alone = gm.VideoDecoder(path, device="cpu", size=(36, 64))[idx[0]]
            assert np.array_equal(np.from_dlpack(alone), frames[k, 0]), (path, idx[0])
    loader.close()
    # Replicated chroma at full size: the same clips, colours off by more than rounding where
    # chroma changes (interpolated chroma is the default).
    full = [T.Resize((180, 320))]
    runs = []
    for replicate in (False, True):
        loader = gm.ClipLoader(d, batch_size=3, transforms=full, device="cpu", seed=3,
                               replicate_chroma=replicate)
        runs.append([(b.episodes, np.from_dlpack(b.frames).copy()) for b in loader])
        loader.close()
    assert [e for e, _ in runs[0]] == [e for e, _ in runs[1]]
    diff = max(np.abs(a[1].astype(np.int16) - b[1].astype(np.int16)).max()
               for a, b in zip(*runs))
    assert diff > 1


def test_progress_of_the_index_build(capsys):
    seen = []
    d = gm.VideoDataset(H264 * 3, frames=8, progress=lambda done, total: seen.append((done, total)))
    assert len(d) > 0 and seen and seen[-1] == (6, 6)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    pytest.importorskip("tqdm")
    gm.VideoDataset(H264, frames=8, progress=True)
    assert "indexing" in capsys.readouterr().err
