"""gm.VideoDecoder without a GPU: the index's metadata against ffprobe's packet listings of
the repository's test videos, the time-to-frame mapping, and the errors."""

import hashlib
import os

import numpy as np
import pytest

import gm

from conftest import MEDIA, cpu_decoder_or_skip

VIDEOS = ["h264_bpyramid", "h264_fragmented", "h264_no_bframes", "h264_open_gop", "h264_vfr",
          "hevc_closed_gop", "hevc_open_gop", "hevc_main10",
          # WebM/Matroska and VP9/AV1: golden files are named after the stem.
          "vp9_altref.webm", "vp9_no_cues.webm", "av1_hidden.webm", "h264_bframes.mkv",
          "vp9.mp4", "av1_odd.mp4"]


def video_path(name):
    return MEDIA / "video" / (name if "." in name else f"{name}.mp4")


def golden(name):
    """ffprobe's packets (pts in its time base, keyframe flag) and stream fields."""
    name = name.split(".")[0]
    text = (MEDIA / "golden" / f"{name}.stream.txt").read_text()
    stream = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    num, den = (int(x) for x in stream["time_base"].split("/"))
    packets = []
    for line in (MEDIA / "golden" / f"{name}.packets.csv").read_text().splitlines():
        pts, _dts, duration, _size, _pos, flags = line.split(",")
        packets.append((int(pts) * num / den, int(duration) * num / den, flags.startswith("K")))
    packets.sort()
    return stream, packets


@pytest.mark.parametrize("name", VIDEOS)
def test_metadata_matches_ffprobe(name):
    d = gm.VideoDecoder(str(video_path(name)))
    stream, packets = golden(name)
    m = d.metadata
    assert m["codec"] == stream["codec_name"]
    assert (m["width"], m["height"]) == (int(stream["width"]), int(stream["height"]))
    assert len(d) == m["num_frames"] == len(packets)
    if stream["nb_frames"] != "N/A":  # fragmented files have no count in their header
        assert len(d) == int(stream["nb_frames"])
    assert m["key_frames"] == [i for i, p in enumerate(packets) if p[2]]
    assert m["begin_stream_seconds"] == pytest.approx(packets[0][0])
    end = packets[-1][0] + packets[-1][1]
    assert m["duration_seconds"] == pytest.approx(end - packets[0][0])
    # Every frame is the one played at its own presentation time and just before the next.
    for i, (pts, dur, _) in enumerate(packets):
        assert d.frame_played_at(pts) == i
        assert d.frame_played_at(pts + dur * 0.99) == i


def test_variable_frame_rate_has_no_constant_fps():
    vfr = gm.VideoDecoder(str(MEDIA / "video" / "h264_vfr.mp4")).metadata
    cfr = gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4")).metadata
    assert vfr["constant_fps"] is None and cfr["constant_fps"] == pytest.approx(30.0)
    assert vfr["average_fps"] == pytest.approx(vfr["num_frames"] / vfr["duration_seconds"])


def test_errors_name_the_file_and_the_reason(tmp_path):
    with pytest.raises(gm.BadSampleError) as e:
        gm.VideoDecoder(str(tmp_path / "missing.mp4"))
    assert "missing.mp4" in str(e.value)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x00\x00\x08ftyp" + b"\xff" * 100)
    with pytest.raises(gm.BadSampleError, match="junk.mp4"):
        gm.VideoDecoder(str(junk))
    d = gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4"))
    with pytest.raises(IndexError, match="frame 30"):
        d.get_frames_at([30])
    with pytest.raises(IndexError, match="no frame is shown"):
        d.get_frames_played_at([5.0])
    with pytest.raises(ValueError, match="output"):
        gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4"), output="yuv")
    with pytest.raises(ValueError, match="sessions"):
        gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4"), sessions=0)


@pytest.mark.skipif(gm.cuda_available(), reason="checks the message on a machine without a GPU")
def test_decoder_gpu_without_a_gpu_says_why():
    d = gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4"), decoder="gpu")
    with pytest.raises(gm.NoGpuError, match="NVDEC"):
        d[0]


def planar(nv12):
    """A `[H * 3 / 2, W]` NV12 frame as ffmpeg's yuv420p bytes."""
    h = nv12.shape[0] * 2 // 3
    uv = nv12[h:].reshape(h // 2, -1, 2)
    return np.concatenate([nv12[:h].ravel(), uv[..., 0].ravel(), uv[..., 1].ravel()]).tobytes()


@pytest.mark.parametrize("name", ["h264_bpyramid", "hevc_open_gop", "vp9_altref.webm",
                                  "av1_svt.webm", "av1_hidden.webm"])
def test_cpu_frames_equal_ffmpeg_framemd5(name):
    """Without a GPU every frame decodes on the CPU (libavcodec; AV1 on the bundled decoder)
    and equals ffmpeg's framemd5, asked for out of order and with repeats."""
    path = video_path(name)
    d = cpu_decoder_or_skip(path, output="nv12")
    want = [line.split(",")[-1].strip()
            for line in (MEDIA / "golden" / f"{name.split('.')[0]}.framemd5").read_text().splitlines()
            if line and not line.startswith("#")]
    assert len(d) == len(want)
    order = list(reversed(range(len(d)))) + [0, 0]
    frames = d.get_frames_at(order)
    data = np.from_dlpack(frames.data)
    assert data.shape[0] == len(order) and frames.indices == order
    for k, i in enumerate(order):
        assert hashlib.md5(planar(data[k])).hexdigest() == want[i], f"{name} frame {i}"


def p016_planar(frame, bits):
    """A `[H * 3 / 2, W]` uint16 P016 frame (samples in the high bits) as ffmpeg's
    yuv420p10le bytes; every sample's low bits must be zero."""
    shift = 16 - bits
    assert not (frame & ((1 << shift) - 1)).any(), "bits below the sample are set"
    v = (frame >> shift).astype("<u2")
    h = v.shape[0] * 2 // 3
    uv = v[h:].reshape(h // 2, -1, 2)
    return v[:h].tobytes() + uv[..., 0].tobytes() + uv[..., 1].tobytes()


def test_cpu_p016_frames_equal_ffmpeg_framemd5():
    """10-bit video as P016 (NV12's layout in uint16, samples in the high bits): every frame,
    shifted down and deinterleaved, is ffmpeg's yuv420p10le frame; NV12 of 10-bit video and
    P016 of 8-bit video are refused, saying what to ask for."""
    path = video_path("hevc_main10")
    d = cpu_decoder_or_skip(path, output="p016")
    want = [line.split(",")[-1].strip()
            for line in (MEDIA / "golden" / "hevc_main10.framemd5").read_text().splitlines()
            if line and not line.startswith("#")]
    frames = np.from_dlpack(d[0:len(d)])
    assert frames.dtype == np.uint16 and frames.shape == (len(d), 270, 320)
    for i, f in enumerate(frames):
        assert hashlib.md5(p016_planar(f, 10)).hexdigest() == want[i], i
    with pytest.raises(ValueError, match='output="p016"'):
        gm.VideoDecoder(str(path), device="cpu", output="nv12")
    with pytest.raises(ValueError, match='output="nv12"'):
        gm.VideoDecoder(str(video_path("h264_bpyramid")), device="cpu", output="p016")
    with pytest.raises(ValueError, match="size="):
        gm.VideoDecoder(str(path), device="cpu", output="p016", size=(90, 160))


def ffmpeg_rgb(path, h_pos, v_pos):
    """ffmpeg's RGB of every frame of `path` (swscale, accurate_rnd+full_chroma_int, chroma at
    the given position), `[N, H, W, 3]`; skipped without the ffmpeg CLI (CI has it)."""
    import shutil
    import subprocess
    if shutil.which("ffmpeg") is None:
        if os.environ.get("GM_REQUIRE_FFMPEG"):
            raise AssertionError("GM_REQUIRE_FFMPEG=1 but ffmpeg is missing")
        pytest.skip("no ffmpeg")
    out = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-vsync", "passthrough", "-vf",
         f"scale=in_h_chr_pos={h_pos}:in_v_chr_pos={v_pos}:flags=accurate_rnd+full_chroma_int,"
         "format=rgb24", "-f", "rawvideo", "-"],
        check=True, capture_output=True).stdout
    return np.frombuffer(out, np.uint8)


def test_cpu_rgb_frames_equal_ffmpegs_conversion():
    """RGB on the CPU equals ffmpeg's conversion of the same frames within one step: BT.709
    limited range and chroma interpolated at H.264's default location (left), as the fixture
    signals (at the centre it is not); resized frames come out at the size asked for."""
    path = video_path("h264_bpyramid")
    rgb = np.from_dlpack(cpu_decoder_or_skip(path)[0:5])
    assert rgb.shape == (5, 3, 180, 320) and rgb.dtype == np.uint8
    want = ffmpeg_rgb(path, 0, 128).reshape(-1, 180, 320, 3)[:5].transpose(0, 3, 1, 2)
    diff = np.abs(rgb.astype(np.int16) - want.astype(np.int16))
    assert diff.max() <= 1
    centre = ffmpeg_rgb(path, 128, 128).reshape(-1, 180, 320, 3)[:5].transpose(0, 3, 1, 2)
    assert np.abs(rgb.astype(np.int16) - centre.astype(np.int16)).max() > 1, \
        "the chroma location makes no difference: the comparison could not fail"
    small = gm.VideoDecoder(str(path), device="cpu", size=(90, 160))[3]
    assert np.from_dlpack(small).shape == (3, 90, 160)


def test_display_matrices_are_in_the_metadata():
    """The rotated fixtures' turns as ffprobe reports them (rotations.txt: counter-clockwise
    degrees, none for the plain file); the mirrored one's mirror, which ffprobe cannot print."""
    rotated = MEDIA / "rotated"
    for line in (rotated / "rotations.txt").read_text().splitlines():
        name, _, ffprobe = line.partition(" ")
        m = gm.VideoDecoder(str(rotated / f"{name}.mp4")).metadata
        assert (m["width"], m["height"]) == (96, 64)
        if name == "mirror":
            assert (m["rotation"], m["mirror"]) == (0, True)
            continue
        turn = int(ffprobe or 0) % 360
        assert (m["rotation"], m["mirror"]) == (turn, False), name
        shown = (64, 96) if turn in (90, 270) else (96, 64)
        assert (m["display_width"], m["display_height"]) == shown, name


def test_decoder_choice_is_checked_and_reported():
    path = str(MEDIA / "video" / "av1_grain.webm")
    assert gm.VideoDecoder(path).metadata["decoder"] == "auto"
    for choice in ("gpu", "cpu", "CPU"):
        assert gm.VideoDecoder(path, decoder=choice).metadata["decoder"] == choice.lower()
    with pytest.raises(ValueError, match='decoder "nvjpg": expected auto, gpu or cpu'):
        gm.VideoDecoder(path, decoder="nvjpg")
