"""On the GPU with PyTorch: every tensor kind through torch.from_dlpack on a non-default
stream, the stream contract both ways (the consumer waits for the data; the memory is reused
only after the consumer's reads), pixels against the CPU path, frames against ffmpeg."""

import hashlib
import io
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gm
from conftest import libavcodec_missing
from gm import transforms as T

REPO = pathlib.Path(__file__).resolve().parents[4]
DEMO = REPO / "assets" / "demo" / "images"
MEDIA = REPO / "tests" / "media"


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


@pytest.fixture()
def side_stream():
    return torch.cuda.Stream()


def test_loader_batches_into_torch_on_a_side_stream(good_folder, no_dist_env, side_stream):
    chain = [T.RandomResizedCrop(64), T.RandomHorizontalFlip(), T.ToDtype(torch.float16, scale=True),
             T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]
    loader = gm.ImageLoader(str(good_folder), batch_size=8, shuffle=True, seed=3, transforms=chain, device="cuda")
    assert loader.on_gpu
    n = 0
    for images, labels in loader:
        with torch.cuda.stream(side_stream):
            x = torch.from_dlpack(images)
            y = torch.from_dlpack(labels)
            assert x.is_cuda and x.dtype == torch.float16 and x.shape[1:] == (3, 64, 64)
            assert y.dtype == torch.int64 and y.is_cuda
            got = x.cpu().numpy().tobytes()
        # The bytes torch sees are the batch's own (downloaded by gm after its ready event).
        assert got == images.tobytes()
        assert np.array_equal(y.cpu().numpy(), np.frombuffer(labels.tobytes(), np.int64))
        n += len(images)
    assert n == 22


def test_gpu_pixels_match_the_cpu_path(good_folder, no_dist_env):
    # The Rust pipeline test's chain and bound: the kernel equals its CPU twin within 1 LSB,
    # the decoders (nvJPEG/NVJPG against the CPU decoder) differ within 35 dB.
    chain = [T.Resize(96 + 96 // 7, antialias=False), T.CenterCrop(96)]
    gpu = gm.ImageLoader(str(good_folder), batch_size=22, transforms=chain, device="cuda")
    cpu = gm.ImageLoader(str(good_folder), batch_size=22, transforms=chain, device="cpu")
    g = torch.from_dlpack(next(iter(gpu)).images).cpu().numpy()
    c = np.from_dlpack(next(iter(cpu)).images)
    assert g.shape == c.shape == (22, 3, 96, 96)
    worst = min(psnr(g[i], c[i]) for i in range(22))
    assert worst >= 35.0, worst


def test_decoded_images_wait_for_the_decoder(side_stream):
    # Decode one set of images, free them (their buffer goes back to the pool), then decode
    # another set into the same buffer and read it at once on a side stream: without the
    # stream wait, the side stream could read the first set's pixels or unwritten memory.
    data = [p.read_bytes() for p in sorted(DEMO.rglob("*.jpg"))] * 4
    for trial in range(5):
        first = gm.decode_images(data[::-1], device="cuda")
        del first
        second = gm.decode_images(data, device="cuda")
        with torch.cuda.stream(side_stream):
            sums = [torch.from_dlpack(t).sum(dtype=torch.int64) for t in second]
        side_stream.synchronize()
        for t, s in zip(second, sums):
            assert s.item() == int(np.frombuffer(t.tobytes(), np.uint8).sum(dtype=np.int64))


def test_memory_is_reused_only_after_the_consumers_reads(side_stream):
    # The consumer's read is held back on its stream; the producer reuses memory as soon as
    # the release allows. With the release ordered after the consumer's stream, the delayed
    # read still sees the first images.
    data = [p.read_bytes() for p in sorted(DEMO.rglob("*.jpg"))]
    for trial in range(3):
        a = gm.decode_images(data, device="cuda")
        want = [int(np.frombuffer(t.tobytes(), np.uint8).sum(dtype=np.int64)) for t in a]
        with torch.cuda.stream(side_stream):
            xs = [torch.from_dlpack(t) for t in a]
            torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU cycles before the reads
            sums = [x.sum(dtype=torch.int64) for x in xs]
        del xs, a
        b = gm.decode_images(data[::-1], device="cuda")  # wants the same buffer
        side_stream.synchronize()
        assert [s.item() for s in sums] == want
        del b


def test_legacy_and_versioned_capsules_and_other_consumers(good_folder, no_dist_env):
    loader = gm.ImageLoader(str(good_folder), batch_size=4, transforms=[T.Resize((32, 32))], device="cuda")
    images, labels = next(iter(loader))
    assert images.__dlpack_device__() == (2, 0) and images.device == "cuda:0"
    ref = images.tobytes()
    # torch's own capsule request, then the raw protocol both ways.
    assert torch.from_dlpack(images).cpu().numpy().tobytes() == ref
    for cap in (images.__dlpack__(stream=1), images.__dlpack__(stream=1, max_version=(1, 0))):
        assert torch.utils.dlpack.from_dlpack(cap).cpu().numpy().tobytes() == ref
    cupy = pytest.importorskip("cupy")
    assert cupy.asnumpy(cupy.from_dlpack(images)).tobytes() == ref


@pytest.mark.parametrize("sessions", [1, 2, None])
def test_video_frames_match_ffmpegs_framemd5(side_stream, sessions):
    # Each video has 3 GOPs: with more than one session their runs decode in parallel.
    for name in ["h264_bpyramid", "h264_open_gop", "h264_vfr", "hevc_open_gop", "hevc_closed_gop",
                 "h264_fragmented"]:
        lines = [l for l in (MEDIA / "golden" / f"{name}.framemd5").read_text().splitlines()
                 if l and not l.startswith("#")]
        want = [l.split(",")[-1].strip() for l in lines]
        assert len(want) == 30, name
        d = gm.VideoDecoder(str(MEDIA / "video" / f"{name}.mp4"), output="nv12", device="cuda",
                            sessions=sessions)
        w, h = d.metadata["width"], d.metadata["height"]
        rng = np.random.default_rng(0)
        order = list(rng.permutation(len(d))) + [len(d) - 1, 0, 0]
        batch = d.get_frames_at([int(i) for i in order])
        with torch.cuda.stream(side_stream):
            frames = torch.from_dlpack(batch.data).cpu().numpy()
        for i, f in zip(order, frames):
            y, uv = f[:h], f[h:].reshape(h // 2, w // 2, 2)
            yuv420p = y.tobytes() + uv[..., 0].tobytes() + uv[..., 1].tobytes()
            assert hashlib.md5(yuv420p).hexdigest() == want[i], (name, i)
        assert batch.indices == [int(i) for i in order]


@pytest.mark.parametrize("decoder", ["auto", "cpu"])
def test_streams_nvdec_lacks_decode_on_the_cpu_equal_to_ffmpeg(side_stream, decoder):
    """AV1 (none in Hopper's NVDEC) and, with decoder="cpu", HEVC and VP9 too: libavcodec's
    frames staged into the same kernels, compared with ffmpeg's framemd5. Where FFmpeg's
    libraries are missing the files that need them are skipped (AV1 needs none), unless
    GM_REQUIRE_LIBAVCODEC says they must be there."""
    missing = []
    for name in ["av1_hidden.webm", "av1_grain.webm", "av1_svt.webm", "hevc_open_gop.mp4",
                 "vp9_altref.webm"]:
        stem = name.split(".")[0]
        lines = [l for l in (MEDIA / "golden" / f"{stem}.framemd5").read_text().splitlines()
                 if l and not l.startswith("#")]
        want = [l.split(",")[-1].strip() for l in lines]
        d = gm.VideoDecoder(str(MEDIA / "video" / name), output="nv12", device="cuda",
                            decoder=decoder, sessions=2)
        w, h = d.metadata["width"], d.metadata["height"]
        order = [len(d) - 1, 0, 13, 14, 5, 29 % len(d)]
        try:
            batch = d.get_frames_at(order)
        except gm.GmError as e:
            if libavcodec_missing(e):
                missing.append(name)
                continue
            raise
        with torch.cuda.stream(side_stream):
            frames = torch.from_dlpack(batch.data).cpu().numpy()
        for i, f in zip(order, frames):
            y, uv = f[:h], f[h:].reshape(h // 2, w // 2, 2)
            data = y.tobytes() + uv[..., 0].tobytes() + uv[..., 1].tobytes()
            assert hashlib.md5(data).hexdigest() == want[i], (name, decoder, i)
    if missing:
        pytest.skip(f"the others equal ffmpeg's; no FFmpeg libraries for {missing}")


def test_video_p016_frames_match_ffmpegs_framemd5(side_stream):
    """10-bit HEVC on NVDEC as P016: uint16 frames in NV12's layout, samples in the high bits,
    equal to ffmpeg's yuv420p10le frames once shifted down and deinterleaved."""
    name = "hevc_main10"
    want = [l.split(",")[-1].strip()
            for l in (MEDIA / "golden" / f"{name}.framemd5").read_text().splitlines()
            if l and not l.startswith("#")]
    d = gm.VideoDecoder(str(MEDIA / "video" / f"{name}.mp4"), output="p016", device="cuda")
    order = [len(d) - 1, 0, 7, 7, 3]
    batch = d.get_frames_at(order)
    with torch.cuda.stream(side_stream):
        frames = torch.from_dlpack(batch.data)
        assert frames.dtype == torch.uint16 and tuple(frames.shape) == (5, 270, 320)
        host = frames.cpu().numpy()
    for i, f in zip(order, host):
        assert not (f & 63).any(), i
        v = (f >> 6).astype("<u2")
        uv = v[180:].reshape(90, 160, 2)
        planar = v[:180].tobytes() + uv[..., 0].tobytes() + uv[..., 1].tobytes()
        assert hashlib.md5(planar).hexdigest() == want[i], i


def test_video_rgb_frames_indexing_and_times():
    d = gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4"), device="cuda")
    whole = torch.from_dlpack(d[0:30])
    assert whole.shape == (30, 3, 180, 320) and whole.dtype == torch.uint8
    one = torch.from_dlpack(d[17])
    assert torch.equal(one, whole[17])
    assert torch.equal(torch.from_dlpack(d[-1]), whole[29])
    played = d.get_frames_played_at([0.0, 0.5, 0.999])
    assert played.indices == [0, 15, 29]
    assert played.pts_seconds == pytest.approx([0.0, 0.5, 29 / 30])
    small = gm.VideoDecoder(str(MEDIA / "video" / "h264_bpyramid.mp4"), device="cuda", size=(90, 160))
    s = torch.from_dlpack(small.get_frames_at([3]).data)
    assert s.shape == (1, 3, 90, 160)
    # The resize is a filter of the full frame: close to torch's antialiased bilinear.
    ref = torch.nn.functional.interpolate(whole[3:4].float(), size=(90, 160), mode="bilinear", antialias=True)
    assert (s.float() - ref).abs().mean().item() < 2.0
    main10 = gm.VideoDecoder(str(MEDIA / "video" / "hevc_main10.mp4"), device="cuda")
    assert torch.from_dlpack(main10[5]).shape == (3, 180, 320)


def test_video_rgb_frames_come_upright_unless_asked_otherwise():
    """Each rotated fixture's frames are the plain file's frames turned as torch.rot90 and
    torch.flip turn them (ffmpeg's autorotation, checked against its frames in gm-tests);
    autorotate=False gives them as stored."""
    rotated = MEDIA / "rotated"
    plain = torch.from_dlpack(gm.VideoDecoder(str(rotated / "plain.mp4"), device="cuda")[0:2])
    turns = {"rotate_90": lambda x: torch.rot90(x, 1, (2, 3)),
             "rotate_180": lambda x: torch.rot90(x, 2, (2, 3)),
             "rotate_270": lambda x: torch.rot90(x, 3, (2, 3)),
             "mirror": lambda x: torch.flip(x, (3,))}
    for name, turn in turns.items():
        d = gm.VideoDecoder(str(rotated / f"{name}.mp4"), device="cuda")
        assert torch.equal(torch.from_dlpack(d[0:2]), turn(plain)), name
        stored = gm.VideoDecoder(str(rotated / f"{name}.mp4"), device="cuda", autorotate=False)
        assert torch.equal(torch.from_dlpack(stored[0:2]), plain), name


def test_mixed_clip_loader_takes_the_rust_defaults(no_dist_env):
    """AV1 (on the CPU where NVDEC lacks it) beside H.264: sessions left unset are one per CPU
    decoder, at least 7, and run under SCHED_BATCH; nvdec_batch_scheduling=False and an
    H.264-only dataset keep the default policy; sessions given are kept. Every clip comes out."""
    av1, h264 = str(MEDIA / "video" / "av1_svt.webm"), str(MEDIA / "video" / "h264_bpyramid.mp4")
    chain = [T.Resize((36, 64))]

    def make(paths, **kwargs):
        data = gm.VideoDataset(paths, frames=3, stride=8, step=2)
        return data, gm.ClipLoader(data, batch_size=2, transforms=chain, cpu_decoders=9, **kwargs)

    data, mixed = make([av1, h264])
    if mixed.stats()["cpu_videos"] > 0:
        assert mixed.decoder_threads == (9, 9)
        assert "SCHED_BATCH" in mixed.placement
        assert "SCHED_BATCH" not in make([av1, h264], nvdec_batch_scheduling=False)[1].placement
        assert make([av1, h264], sessions=2)[1].decoder_threads == (2, 9)
    else:
        assert mixed.decoder_threads == (7, 0)
    assert sum(len(b) for b in mixed) == len(data)
    nvdec_only = make([h264])[1]
    assert nvdec_only.decoder_threads == (7, 0)
    assert "SCHED_BATCH" not in nvdec_only.placement


def test_clip_loader_frames_equal_the_video_decoders(side_stream, no_dist_env):
    paths = [str(MEDIA / "video" / "h264_bpyramid.mp4"), str(MEDIA / "video" / "hevc_open_gop.mp4")]
    chain = [T.Resize((90, 160))]

    def make():
        data = gm.VideoDataset(paths, frames=6, stride=3, step=2)
        return data, gm.ClipLoader(data, batch_size=3, transforms=chain, shuffle=True, seed=1, sessions=2)

    data, loader = make()
    decoders = {p: gm.VideoDecoder(p, size=(90, 160), device="cuda") for p in paths}
    seen = []
    for clips in loader:
        with torch.cuda.stream(side_stream):
            x = torch.from_dlpack(clips.frames).cpu()
        assert x.shape[1:] == (6, 3, 90, 160) and x.dtype == torch.uint8
        for k, cams in enumerate(clips.sources):
            path, frames = cams[0]
            want = torch.from_dlpack(decoders[path].get_frames_at(frames).data).cpu()
            assert torch.equal(x[k], want), (path, frames)
        seen.append(list(clips.episodes))
    assert sorted(e for b in seen for e in b) == list(range(len(data)))
    # Resume after two batches: the same episodes follow.
    _, again = make()
    it = iter(again)
    next(it), next(it)
    state = again.state_dict()
    del it
    _, resumed = make()
    resumed.load_state_dict(state)
    assert [list(c.episodes) for c in resumed] == seen[2:]


def test_lerobot_samples_and_clips_decode_on_the_gpu(side_stream, no_dist_env):
    """A LeRobot v3 dataset of SVT-AV1 cameras (on an H100: decoded on the CPU route): items
    hold each camera's frames as VideoDecoder gives them, and the clip loader's batches stack
    the cameras of each sample, equal to the decoders' frames resized alike."""
    root = MEDIA / "lerobot" / "dataset"
    cams = ["observation.images.front", "observation.images.wrist"]
    d = gm.LeRobotDataset(root, delta_timestamps={k: [-0.1, 0.0] for k in cams}, device="cuda")
    item = d[13]
    assert (item["index"], item["episode_index"], item["frame_index"]) == (13, 1, 1)
    front = torch.from_dlpack(item[cams[0]]).cpu()
    assert front.shape == (2, 3, 64, 96) and front.dtype == torch.uint8
    path, frames = d.sample(13)["frames"][cams[0]]
    want = torch.from_dlpack(gm.VideoDecoder(path, device="cuda").get_frames_at(frames).data).cpu()
    assert torch.equal(front, want)
    assert item[f"{cams[1]}_is_pad"] == [False, False]
    assert item[f"{cams[1]}_is_pad"] == d.sample(13)[f"{cams[1]}_is_pad"]
    loader = gm.ClipLoader(d.clips(), batch_size=5, transforms=[T.Resize((48, 48))], shuffle=True,
                           seed=2, sessions=2)
    decoders = {}
    seen = []
    for clips in loader:
        with torch.cuda.stream(side_stream):
            x = torch.from_dlpack(clips.frames).cpu()
        assert x.shape[1:] == (2, 2, 3, 48, 48)
        for k, sources in enumerate(clips.sources):
            for c, (p, f) in enumerate(sources):
                dec = decoders.setdefault(p, gm.VideoDecoder(p, size=(48, 48), device="cuda"))
                assert torch.equal(x[k, c], torch.from_dlpack(dec.get_frames_at(f).data).cpu())
        seen.extend(clips.episodes)
    assert sorted(seen) == list(range(len(d)))


def test_clip_loader_erases_the_same_rectangle_from_every_frame(side_stream, no_dist_env):
    paths = [str(MEDIA / "video" / "h264_bpyramid.mp4"), str(MEDIA / "video" / "hevc_open_gop.mp4")]

    def frames(chain):
        data = gm.VideoDataset(paths, frames=6, stride=3, step=2)
        loader = gm.ClipLoader(data, batch_size=3, transforms=chain, shuffle=True, seed=5, sessions=2)
        out = []
        for clips in loader:
            with torch.cuda.stream(side_stream):
                out.append((list(clips.episodes), torch.from_dlpack(clips.frames).cpu()))
        return out

    plain = frames([T.Resize((90, 160))])
    erased = frames([T.Resize((90, 160)), T.RandomErasing(p=1.0, value=7)])
    assert [e for e, _ in plain] == [e for e, _ in erased]
    for (_, a), (_, b) in zip(plain, erased):
        for k in range(a.shape[0]):
            changed = (a[k] != b[k]).any(dim=0).any(dim=0)  # [H, W] over frames and channels
            ys, xs = torch.nonzero(changed, as_tuple=True)
            assert len(ys) > 0, "p=1 erases every clip"
            box = (slice(int(ys.min()), int(ys.max()) + 1), slice(int(xs.min()), int(xs.max()) + 1))
            # Every frame and channel holds the value in one box and the clip's pixels outside it.
            assert (b[k][:, :, box[0], box[1]] == 7).all()
            outside = torch.ones_like(changed)
            outside[box] = False
            assert torch.equal(b[k][:, :, outside], a[k][:, :, outside])


def test_device_cache_fill_reports_progress(good_folder, no_dist_env):
    seen = []
    loader = gm.ImageLoader(str(good_folder), batch_size=11, transforms=[T.RandomResizedCrop(32)], device="cuda",
                            device_cache=64, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (22, 22)
    assert sum(len(b) for b in loader) == 22


def test_streamed_shards_on_the_gpu_into_torch_match_the_cpu_path(tmp_path, good_folder, no_dist_env, side_stream):
    # WebDataset tars written with Python's tarfile; stream=True on the GPU and on the CPU:
    # the same names, labels and (within the decoders' bound) pixels, batch by batch.
    import tarfile

    files = sorted(p for p in good_folder.rglob("*") if p.is_file())
    classes = sorted({p.parent.name for p in files})
    shards = []
    for s in range(3):
        path = tmp_path / f"train-{s:06d}.tar"
        with tarfile.open(path, "w") as tar:
            for i, p in enumerate(files[s::3]):
                key = f"{s}-{i:04d}"
                for name, data in [(f"{key}{p.suffix.lower()}", p.read_bytes()),
                                   (f"{key}.cls", str(classes.index(p.parent.name)).encode())]:
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        shards.append(str(path))
    chain = [T.Resize(96 + 96 // 7, antialias=False), T.CenterCrop(96)]

    def loader(device):
        return gm.ImageLoader(shards, batch_size=5, transforms=chain, device=device, stream=True,
                              shuffle=True, seed=4, shuffle_buffer=6, streams=2)

    gpu, cpu = loader("cuda"), loader("cpu")
    assert gpu.on_gpu
    seen = 0
    for g, c in zip(gpu, cpu, strict=True):
        assert g.names == c.names
        with torch.cuda.stream(side_stream):
            x = torch.from_dlpack(g.images).cpu().numpy()
            y = torch.from_dlpack(g.labels).cpu().numpy()
        assert np.array_equal(y, np.from_dlpack(c.labels))
        cx = np.from_dlpack(c.images)
        assert min(psnr(x[i], cx[i]) for i in range(len(x))) >= 35.0
        seen += len(x)
    assert seen == len(files)


def test_detection_batches_of_many_sizes_on_the_gpu(no_dist_env):
    """A detection chain on the GPU: padded batches (valid_mask from torch on the device) and
    ragged ones (a list of views) hold the same images; the padding is pad_value."""
    coco = gm.CocoDataset(MEDIA / "coco" / "instances.json", MEDIA / "jpeg")
    chain = [T.RandomShortestSize([24, 32, 40], max_size=90), T.RandomHorizontalFlip(),
             T.ToDtype(torch.float32, scale=True), T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]

    def load(**kw):
        out = {}
        for b in gm.ImageLoader(coco, batch_size=3, transforms=chain, shuffle=True, seed=9,
                                device="cuda", **kw):
            out[b.position] = b
        return out

    padded, ragged = load(batch_sizes="padded", pad_value=-7.0), load(batch_sizes="ragged")
    assert padded.keys() == ragged.keys()
    for pos, p in padded.items():
        r = ragged[pos]
        assert p.indices == r.indices and p.image_sizes == r.image_sizes
        x = torch.from_dlpack(p.images)
        assert x.is_cuda and x.shape[2] % 32 == 0 and x.shape[3] % 32 == 0
        mask = p.valid_mask()
        assert mask.is_cuda and mask.shape == (x.shape[0], x.shape[2], x.shape[3])
        for k, (h, w) in enumerate(p.image_sizes):
            assert int(mask[k].sum()) == h * w and bool(mask[k, :h, :w].all())
            t = p.targets[k]
            if t is not None:
                # Targets beside the images, on the GPU, on the image's own canvas.
                boxes = torch.from_dlpack(t["boxes"])
                assert boxes.is_cuda and torch.from_dlpack(t["labels"]).is_cuda
                if "masks" in t:
                    assert torch.from_dlpack(t["masks"]).shape[1:] == (h, w)
                if len(boxes):
                    assert float(boxes[:, 2].max()) <= w and float(boxes[:, 3].max()) <= h
            part = torch.from_dlpack(r.images[k])
            assert part.is_cuda and part.shape == (3, h, w)
            assert torch.equal(x[k, :, :h, :w], part)
            assert bool((x[k][:, ~mask[k]] == -7.0).all())


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_torch_targets_equal_each_tensors_own_import(device, no_dist_env, side_stream):
    """Batch.torch_targets (one DLPack import per shared buffer, cut in torch) gives every
    image's dict as torch.from_dlpack of each tensor does: same keys, dtypes, shapes, devices
    and values (masks moved on the GPU from COCO's runs included), on a consumer's side stream,
    for ragged and padded batches; the cached targets stay gm tensors."""
    coco = gm.CocoDataset(MEDIA / "coco" / "instances.json", MEDIA / "jpeg")
    chain = [T.RandomIoUCrop(), T.SanitizeBoundingBoxes(), T.RandomHorizontalFlip(),
             T.Resize(40, max_size=90)]
    checked = 0
    for sizes in ("ragged", "padded"):
        loader = gm.ImageLoader(coco, batch_size=3, transforms=chain, shuffle=True, seed=4,
                                device=device, batch_sizes=sizes, bad_samples="skip")
        for epoch in range(3):
            loader.set_epoch(epoch)
            for b in loader:
                with torch.cuda.stream(side_stream):
                    fast = b.torch_targets()
                    each = [None if t is None else {k: torch.from_dlpack(v) if isinstance(v, gm.Tensor) else v
                                                     for k, v in t.items()} for t in b.targets]
                    assert len(fast) == len(each) == len(b)
                    for f, e in zip(fast, each):
                        assert (f is None) == (e is None)
                        if f is None:
                            continue
                        assert f.keys() == e.keys()
                        for k in f:
                            if isinstance(e[k], torch.Tensor):
                                assert isinstance(f[k], torch.Tensor), k
                                assert (f[k].dtype, f[k].shape, f[k].device) == (e[k].dtype, e[k].shape, e[k].device), k
                                assert torch.equal(f[k], e[k]), k
                                checked += 1
                            else:
                                assert f[k] == e[k], k
                assert all(t is None or isinstance(t["boxes"], gm.Tensor) for t in b.targets)
    assert checked > 20


def test_gpu_loaders_targets_equal_the_cpu_loaders(no_dist_env):
    """A GPU loader's targets (boxes, labels and crowd regions moved on its stages and uploaded
    in one buffer, masks moved in its launch) equal the CPU loader's, image by image, over
    epochs of random IoU crops, flips and drops; torch_targets cuts the same values."""
    coco = gm.CocoDataset(MEDIA / "coco" / "instances.json", MEDIA / "jpeg")
    chain = [T.RandomIoUCrop(), T.SanitizeBoundingBoxes(), T.RandomHorizontalFlip(),
             T.Resize(40, max_size=90)]

    def batches(device):
        loader = gm.ImageLoader(coco, batch_size=3, transforms=chain, shuffle=True, seed=8,
                                device=device, batch_sizes="padded", bad_samples="skip")
        out = []
        for epoch in range(4):
            loader.set_epoch(epoch)
            out += [(b.indices, b.torch_targets()) for b in loader]
        return out

    gpu, cpu = batches("cuda"), batches("cpu")
    assert len(gpu) == len(cpu) > 0
    compared = 0
    for (gi, gt), (ci, ct) in zip(gpu, cpu):
        assert gi == ci
        for g, c in zip(gt, ct):
            assert (g is None) == (c is None)
            if g is None:
                continue
            assert g.keys() == c.keys()
            for k in g:
                if isinstance(c[k], torch.Tensor):
                    assert g[k].is_cuda and not c[k].is_cuda, k
                    assert g[k].dtype == c[k].dtype and g[k].shape == c[k].shape, k
                    assert torch.equal(g[k].cpu(), c[k]), k
                    compared += 1
                else:
                    assert g[k] == c[k], k
    assert compared > 50


def test_mixed_labels_are_uploaded_beside_the_images(good_folder, no_dist_env):
    """MixUp's soft labels on the GPU: float32 [B, classes] on cuda, equal to the CPU
    loader's (the draws are per batch from the seed; the labels are mixed on the host)."""
    chain = [T.Resize((32, 32)), T.ToDtype(torch.float32, scale=True)]

    def batches(device):
        loader = gm.ImageLoader(str(good_folder), batch_size=4, shuffle=True, seed=6,
                                transforms=chain, device=device,
                                mix=T.MixUp(alpha=1.0, num_classes=5))
        return [(b.indices, torch.from_dlpack(b.soft_labels)) for b in loader]

    gpu, cpu = batches("cuda"), batches("cpu")
    assert len(gpu) == len(cpu) > 0
    for (gi, g), (ci, c) in zip(gpu, cpu):
        assert gi == ci and g.is_cuda and g.dtype == torch.float32 and g.shape == (len(gi), 5)
        assert torch.equal(g.cpu(), c)
        assert torch.allclose(g.sum(1), torch.ones(len(gi), device="cuda"))
