"""gm.transforms called on CUDA tensors the caller holds (torchvision v2 style): a batch, a
list of photos of different sizes and gm.decode_images' output, each image with its own
draws, equal to the CPU twins on the same pixels; the exact uint8 resize equal to
torchvision's; gm's launch ordered after the producer's writes on the caller's stream."""

import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
v2 = pytest.importorskip("torchvision.transforms.v2")

import gm
from gm import transforms as T

REPO = pathlib.Path(__file__).resolve().parents[4]
DEMO = REPO / "assets" / "demo" / "images"


def photos(n=8):
    files = sorted(DEMO.rglob("*.jpg"))[:n]
    assert len(files) == n
    return gm.decode_images([f.read_bytes() for f in files], device="cpu")


def chw(t):
    return torch.from_dlpack(t).permute(2, 0, 1).contiguous()


def train_u8():
    return [T.RandomResizedCrop((96, 128)), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
            T.RandomRotation(15)]


def test_a_list_of_photos_on_the_gpu_equals_the_cpu_twin():
    cpu = [chw(t) for t in photos()]
    assert len({tuple(x.shape) for x in cpu}) > 1, "photos of several sizes"
    gpu = [x.cuda() for x in cpu]
    c = T.Compose(train_u8())
    got = c(gpu, seed=7, epoch=2, indices=range(8))
    want = c(cpu, seed=7, epoch=2, indices=range(8))
    assert got.is_cuda and got.shape == (8, 3, 96, 128) and got.dtype == torch.uint8
    d = (got.cpu().int() - want.int()).abs()
    assert d.max() <= 1 and (d > 0).float().mean() < 0.05, (d.max(), (d > 0).float().mean())
    # gm.decode_images' GPU output ([H, W, 3] gm.Tensor) goes in as it is.
    files = sorted(DEMO.rglob("*.jpg"))[:8]
    on_gpu = gm.decode_images([f.read_bytes() for f in files], device="cuda")
    from_gm = torch.from_dlpack(c(on_gpu, seed=7, epoch=2, indices=range(8)))
    assert from_gm.is_cuda and from_gm.shape == got.shape


def test_a_float_batch_and_one_image():
    base = torch.stack([torch.nn.functional.interpolate(chw(t)[None].float(), size=(120, 160))[0]
                        for t in photos()]).round().to(torch.uint8)
    chain = train_u8() + [T.ToDtype(torch.float32, scale=True),
                          T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD), T.RandomErasing(0.5)]
    gpu = T.Compose(chain)(base.cuda(), seed=3, indices=range(8))
    cpu = T.Compose(chain)(base, seed=3, indices=range(8))
    assert gpu.dtype == torch.float32 and gpu.shape == (8, 3, 96, 128)
    assert (gpu.cpu() - cpu).abs().max() < 0.05
    one = T.Compose(chain)(base[5].cuda(), seed=3, indices=[5])
    assert one.shape == (3, 96, 128)
    torch.testing.assert_close(one, gpu[5])


def test_the_uint8_resize_equals_torchvision_exactly():
    for t in photos(4):
        x = chw(t)
        want = v2.Resize((72, 104), antialias=True)(x)
        got = T.Resize((72, 104))(x.cuda())
        assert torch.equal(got.cpu(), want), (got.cpu().int() - want.int()).abs().max()


def test_the_launch_waits_for_the_producers_writes():
    side = torch.cuda.Stream()
    src = chw(photos(1)[0]).cuda()
    want = T.Resize((64, 64))(src)
    with torch.cuda.stream(side):
        for _ in range(5):
            # A long producer on the caller's (side) stream right before the call.
            x = torch.zeros_like(src)
            torch.cuda._sleep(20_000_000)
            x.copy_(src)
            got = T.Resize((64, 64))(x)
            torch.testing.assert_close(got, want)
        side.synchronize()


def test_targets_as_tv_tensors_on_the_gpu():
    """Boxes, masks and labels as torchvision's detection references hold them, on the GPU:
    moved as the NumPy path moves them, back as tv_tensors on the moved canvas."""
    from torchvision import tv_tensors

    media = REPO / "tests" / "media"
    d = gm.CocoDataset(media / "coco" / "instances.json", media / "jpeg", drop_empty=True)
    chain = [T.RandomIoUCrop(), T.RandomHorizontalFlip(), T.SanitizeBoundingBoxes(), T.Resize((48, 64))]
    for i in range(2):
        image = chw(gm.decode_images([(media / "jpeg" / d.image(i)["file_name"]).read_bytes()],
                                     device="cpu")[0])
        t = d.targets(i)
        h, w = image.shape[1:]
        target = {
            "boxes": tv_tensors.BoundingBoxes(torch.from_dlpack(t["boxes"]).cuda(), format="XYXY",
                                              canvas_size=(h, w)),
            "masks": tv_tensors.Mask(torch.from_dlpack(t["masks"]).cuda()),
            "labels": torch.from_dlpack(t["labels"]).cuda(),
        }
        numpy_target = {k: v.cpu().numpy() for k, v in target.items()}
        for epoch in range(4):
            out, moved = T.Compose(chain)(image.cuda(), target, seed=1, epoch=epoch, indices=[i])
            ref_out, ref = T.Compose(chain)(image.permute(1, 2, 0).numpy(), numpy_target, seed=1,
                                            epoch=epoch, indices=[i])
            assert out.is_cuda and (out.cpu().int() - torch.from_numpy(ref_out).int()).abs().max() <= 1
            assert isinstance(moved["boxes"], tv_tensors.BoundingBoxes)
            assert tuple(moved["boxes"].canvas_size) == (48, 64) and moved["boxes"].is_cuda
            assert isinstance(moved["masks"], tv_tensors.Mask) and moved["masks"].is_cuda
            for k in ("boxes", "masks", "labels"):
                np.testing.assert_array_equal(moved[k].cpu().numpy(), ref[k], err_msg=k)


def test_images_of_their_own_sizes_on_the_gpu_equal_the_cpu_twin():
    """A chain without a fixed size (SSD's, no resize): a list of CUDA images back, each within
    a step of the CPU twin's, with its boxes exactly as the CPU path moves them."""
    media = REPO / "tests" / "media"
    d = gm.CocoDataset(media / "coco" / "instances.json", media / "jpeg", drop_empty=True)
    chain = [T.RandomZoomOut(fill=[123, 117, 104]), T.RandomIoUCrop(), T.RandomHorizontalFlip(),
             T.SanitizeBoundingBoxes()]
    idx = [0, 1]
    raw = [(media / "jpeg" / d.image(i)["file_name"]).read_bytes() for i in idx]
    cpu = [chw(t) for t in gm.decode_images(raw, device="cpu")]
    targets = [{k: torch.from_dlpack(d.targets(i)[k]) for k in ("boxes", "labels")} for i in idx]
    shapes = set()
    for epoch in range(6):
        got, moved = T.Compose(chain)([x.cuda() for x in cpu], targets, seed=4, epoch=epoch, indices=idx)
        want, ref = T.Compose(chain)(cpu, targets, seed=4, epoch=epoch, indices=idx)
        outs = got if isinstance(got, list) else list(got)
        refs = want if isinstance(want, list) else list(want)
        for g, w, m, r in zip(outs, refs, moved, ref):
            assert g.is_cuda and g.shape == w.shape
            assert (g.cpu().int() - w.int()).abs().max() <= 1
            torch.testing.assert_close(m["boxes"], r["boxes"])
            shapes.add(tuple(g.shape))
    assert len(shapes) >= 3, shapes


def test_planar_channels_last_pitched_and_strided_inputs_agree_bit_for_bit():
    """The kernel reads [3, H, W] planes where they lie: a contiguous batch, its channels-last
    twin, a column window of a wider batch (rows longer than the image) and a grey plane
    broadcast by expand give what their contiguous copies give, byte for byte; a tensor
    whose rows are not packed (every other column) is copied first and agrees too."""
    base = torch.stack([torch.nn.functional.interpolate(chw(t)[None].float(), size=(120, 160))[0]
                        for t in photos()]).round().to(torch.uint8).cuda()
    wide = torch.zeros((8, 3, 120, 200), dtype=torch.uint8, device="cuda")
    wide[..., 20:180] = base
    sparse = torch.zeros((8, 3, 120, 320), dtype=torch.uint8, device="cuda")
    sparse[..., ::2] = base
    grey = base[:, :1].expand(-1, 3, -1, -1)
    chain = T.Compose(train_u8() + [T.ToDtype(torch.float32, scale=True),
                                    T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)])
    run = lambda x: chain(x, seed=9, epoch=1, indices=range(8))  # noqa: E731
    want = run(base.contiguous())
    for name, x in [("channels-last", base.contiguous(memory_format=torch.channels_last)),
                    ("pitched window", wide[..., 20:180]), ("every other column", sparse[..., ::2]),
                    ("list", list(base.unbind(0)))]:
        assert torch.equal(run(x), want), name
    assert torch.equal(run(grey), run(grey.contiguous()))
    assert not torch.equal(run(grey), want)


def test_masks_move_in_the_launch_equal_to_the_cpu_path():
    """Masks given with CUDA images are moved in the launch that writes their image: bool masks
    on the host, uint8 masks on the GPU, a chain of many output sizes, and a warp (whose
    masks are moved on the host instead) all equal the CPU path's masks exactly, the objects
    the chain drops left out, in the caller's dtype and device."""
    media = REPO / "tests" / "media"
    d = gm.CocoDataset(media / "coco" / "instances.json", media / "jpeg", drop_empty=True)
    idx = [0, 1]
    raw = [(media / "jpeg" / d.image(i)["file_name"]).read_bytes() for i in idx]
    cpu = [chw(t) for t in gm.decode_images(raw, device="cpu")]
    targets = [{k: torch.from_dlpack(d.targets(i)[k]) for k in ("boxes", "labels", "masks")}
               for i in idx]
    assert all(t["masks"].shape[0] > 1 for t in targets)
    chains = {
        "fixed size": [T.RandomIoUCrop(), T.RandomHorizontalFlip(), T.SanitizeBoundingBoxes(),
                       T.Resize((48, 64))],
        "own sizes": [T.RandomZoomOut(fill=[123, 117, 104]), T.RandomIoUCrop(),
                      T.RandomHorizontalFlip(), T.SanitizeBoundingBoxes()],
        "warp": [T.RandomRotation(20), T.Resize((40, 56))],
    }
    dropped = 0
    for name, chain in chains.items():
        for epoch in range(5):
            for where, dtype in (("cpu", torch.bool), ("cuda", torch.uint8)):
                given = [{**t, "masks": t["masks"].to(where, dtype)} for t in targets]
                got, moved = T.Compose(chain)([x.cuda() for x in cpu], given, seed=2, epoch=epoch,
                                              indices=idx)
                want, ref = T.Compose(chain)(cpu, targets, seed=2, epoch=epoch, indices=idx)
                for m, r, t in zip(moved, ref, targets):
                    assert m["masks"].device.type == where and m["masks"].dtype == dtype, name
                    assert m["masks"].shape == r["masks"].shape, (name, epoch)
                    assert torch.equal(m["masks"].cpu().to(torch.uint8), r["masks"].to(torch.uint8)), (name, epoch, where)
                    torch.testing.assert_close(m["boxes"].cpu(), r["boxes"])
                    dropped += m["masks"].shape[0] < t["masks"].shape[0]
    assert dropped > 0, "some draws drop objects"
    with pytest.raises(ValueError, match="counts differ"):
        T.Compose(chains["fixed size"])(cpu[0].cuda(), {**targets[0], "masks": targets[0]["masks"][:1].cuda()})
