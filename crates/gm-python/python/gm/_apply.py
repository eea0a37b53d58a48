"""Bringing caller-held images to the fused chain and back (``Transform.__call__``).

The kernel reads RGB rows from GPU memory through DLPack, interleaved (``[H, W, 3]``) or as
torchvision's ``[3, H, W]`` planes, where they lie; host images go as interleaved bytes. The
output comes back in the caller's array type, ordered after gm's launch on the caller's current
stream.
"""

from __future__ import annotations

import itertools
import sys
import weakref
from typing import Any, List, Optional, Sequence, Tuple

from . import _gm

_counters: "weakref.WeakKeyDictionary[Any, itertools.count]" = weakref.WeakKeyDictionary()


def _next_indices(transform: Any, n: int) -> List[int]:
    count = _counters.setdefault(transform, itertools.count())
    return [next(count) for _ in range(n)]


def _torch_items(images: Any, torch: Any) -> Tuple[List[Any], bool]:
    """``[3, H, W]`` or ``[B, 3, H, W]`` as ``[H, W, 3]`` views, and whether one image came."""
    if images.dtype != torch.uint8:
        raise TypeError(f"images are uint8 here, not {images.dtype} (torchvision's uint8 images)")
    if images.ndim == 3:
        return [_hwc(images)], True
    if images.ndim == 4:
        if images.shape[1] != 3:
            raise ValueError(f"a batch of shape {tuple(images.shape)}: [B, 3, H, W] RGB")
        batch = images.permute(0, 2, 3, 1)
        if images.is_cuda and images.shape[0] > 0 and _in_place(batch[0]) and batch.stride(0) >= 0:
            # One [B, H, W, 3] item: gm imports the batch once, not each image.
            return [batch], False
        return [_hwc(x) for x in images.unbind(0)], False
    raise ValueError(f"a tensor of shape {tuple(images.shape)}: [3, H, W] or [B, 3, H, W]")


def _hwc(t: Any) -> Any:
    """``t`` (``[3, H, W]``) as an ``[H, W, 3]`` view the kernel reads in place (CUDA tensors
    whose rows are packed, planar or channels-last), else as a channels-last copy."""
    if t.ndim != 3 or t.shape[0] != 3:
        raise ValueError(f"an image of shape {tuple(t.shape)}: [3, H, W] RGB")
    v = t.permute(1, 2, 0)
    return v if t.is_cuda and _in_place(v) else v.contiguous()


def _in_place(v: Any) -> bool:
    # Single rows or columns go as copies: exporters may rewrite a size-1 dimension's stride.
    h, w, _ = v.shape
    sh, sw, sc = v.stride()
    planar = sw == 1 and sh >= w and sc >= 0
    interleaved = sw == 3 and sc == 1 and sh >= 3 * w
    return h > 1 and w > 1 and (planar or interleaved)


def _classify(images: Any) -> Tuple[str, List[Any], bool]:
    """The input's kind ("torch", "numpy", "gm"), its images as channels-last items, and
    whether a single image came."""
    torch = sys.modules.get("torch")
    np = sys.modules.get("numpy")
    if torch is not None and isinstance(images, torch.Tensor):
        items, single = _torch_items(images, torch)
        return "torch", items, single
    if isinstance(images, _gm.Tensor):
        return "gm", [images], True
    if np is not None and isinstance(images, np.ndarray):
        if images.ndim == 3:
            return "numpy", [images], True
        if images.ndim == 4:
            return "numpy", list(images), False
        raise ValueError(f"an array of shape {images.shape}: [H, W, 3] or [B, H, W, 3]")
    if isinstance(images, (list, tuple)) and images:
        first = images[0]
        if torch is not None and isinstance(first, torch.Tensor):
            for t in images:
                if t.dtype != torch.uint8:
                    raise TypeError(f"images are uint8 here, not {t.dtype}")
            return "torch", [_hwc(t) for t in images], False
        if isinstance(first, _gm.Tensor):
            return "gm", list(images), False
        if np is not None and isinstance(first, np.ndarray):
            return "numpy", list(images), False
    raise TypeError(
        f"{type(images).__name__} is not an image or a batch: give uint8 torch tensors "
        "([3, H, W] or [B, 3, H, W]), gm.Tensor images or NumPy [H, W, 3] arrays"
    )


def _device_of(kind: str, item: Any) -> Optional[int]:
    if kind == "torch":
        return item.device.index if item.is_cuda else None
    if kind == "gm":
        return int(item.device.split(":")[1]) if item.is_cuda else None
    return None


def _host_image(kind: str, item: Any) -> Tuple[bytes, int, int]:
    if kind == "torch":
        item = item.numpy()
    if kind == "gm":
        h, w, c = item.shape
        if c != 3 or item.dtype != "uint8":
            raise ValueError(f"a {item.dtype} image of shape {item.shape}: uint8 [H, W, 3]")
        return item.tobytes(), h, w
    import numpy as np

    a = np.ascontiguousarray(item)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"a {a.dtype} array of shape {a.shape}: uint8 [H, W, 3]")
    return a.tobytes(), a.shape[0], a.shape[1]


def apply(transform: Any, images: Any, targets: Any = None, *, seed: int, epoch: int,
          indices: Optional[Sequence[int]]) -> Any:
    kind, items, single = _classify(images)
    devices = {_device_of(kind, x) for x in items}
    if len(devices) != 1:
        raise ValueError(f"the images are on several devices: {sorted(map(str, devices))}")
    device = devices.pop()
    batched = kind == "torch" and len(items) == 1 and items[0].ndim == 4
    n = items[0].shape[0] if batched else len(items)
    if indices is None:
        indices = _next_indices(transform, n)
    indices = [int(i) for i in indices]
    given = None
    if targets is not None:
        given = [targets] if isinstance(targets, dict) else list(targets)
        if len(given) != n:
            raise ValueError(f"{n} images and {len(given)} targets: one dict per image")
    if device is None:
        items = [_host_image(kind, x) for x in items]
    prepared = None
    if given is not None:
        if batched:
            sizes = [tuple(items[0].shape[1:3])] * n
        else:
            sizes = [(x[1], x[2]) if device is None else tuple(x.shape[:2]) for x in items]
        boxes = _boxes_on_host(given)
        prepared = [_target_args(t, i, sizes[i], device, boxes[i]) for i, t in enumerate(given)]
    out = _gm.apply_transforms(transform, items, seed=int(seed), epoch=int(epoch),
                               indices=indices, device=device, single=single, targets=prepared)
    moved = None
    if given is not None:
        out, moved = out
    # Consuming the output orders the caller's stream after gm's launch, before the inputs
    # (and any channels-last copies above) can be freed and reused on it.
    if kind in ("torch", "numpy"):
        if kind == "torch":
            import torch

            take = torch.from_dlpack
        else:
            import numpy as np

            take = np.from_dlpack
        out = [take(x) for x in out] if isinstance(out, list) else take(out)
    del items
    if moved is None:
        return out
    boxes = _moved_boxes(given, moved)
    new = [_rebuild(t, m, b) for t, m, b in zip(given, moved, boxes)]
    return out, (new[0] if isinstance(targets, dict) else new)


# Targets: what goes to gm and how the moved values come back in the caller's types.

def _array(x: Any) -> Any:
    """A host NumPy view of a torch tensor, tv_tensor, gm.Tensor or array."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().as_subclass(torch.Tensor).numpy()
    if isinstance(x, _gm.Tensor):
        return np.from_dlpack(x.cpu() if x.is_cuda else x)
    return np.asarray(x)


def _box_format(boxes: Any) -> str:
    fmt = getattr(boxes, "format", None)
    if fmt is None:
        return "XYXY"
    return str(getattr(fmt, "name", fmt)).upper()


def _boxes_on_host(given: List[dict]) -> List[Any]:
    """Each target's boxes as a host float32 ``[N, 4]`` array (``None`` where it has none),
    the ones in GPU memory read back in one copy rather than one sync per image."""
    import numpy as np

    torch = sys.modules.get("torch")
    out: List[Any] = [None] * len(given)
    on_gpu = []
    for i, t in enumerate(given):
        b = t.get("boxes") if isinstance(t, dict) else None
        if b is None:
            continue
        if torch is not None and isinstance(b, torch.Tensor) and b.is_cuda:
            on_gpu.append(i)
        else:
            out[i] = _array(b).astype(np.float32).reshape(-1, 4)
    if on_gpu:
        parts = [given[i]["boxes"].detach().as_subclass(torch.Tensor).reshape(-1, 4).float()
                 for i in on_gpu]
        host = torch.cat([p.to(parts[0].device) for p in parts]).cpu().numpy()
        at = 0
        for i, p in zip(on_gpu, parts):
            out[i] = host[at:at + p.shape[0]]
            at += p.shape[0]
    return out


def _moved_boxes(given: List[dict], moved: List[dict]) -> List[Any]:
    """Each image's moved boxes in its original's array type and device, the ones going to
    GPU memory uploaded in one copy."""
    import numpy as np

    torch = sys.modules.get("torch")
    out: List[Any] = [None] * len(given)
    to_gpu: dict = {}
    for i, (t, m) in enumerate(zip(given, moved)):
        if t.get("boxes") is None:
            continue
        b = np.asarray(m["boxes"], np.float32).reshape(-1, 4)
        if torch is not None and isinstance(t["boxes"], torch.Tensor) and t["boxes"].is_cuda:
            to_gpu.setdefault(t["boxes"].device, []).append((i, b))
        else:
            out[i] = _like(b, t["boxes"])
    for dev, items in to_gpu.items():
        all_boxes = torch.from_numpy(np.concatenate([b for _, b in items])).to(dev)
        for (i, _), part in zip(items, all_boxes.split([len(b) for _, b in items])):
            out[i] = part
    return out


def _target_args(t: dict, i: int, size: Tuple[int, int], device: Optional[int] = None,
                 host_boxes: Any = None) -> tuple:
    """Image ``i``'s targets as ``apply_transforms`` takes them; ``size`` is its (height,
    width), which a tv_tensor's ``canvas_size`` must be. With the images on GPU ``device``,
    masks go there as a packed uint8 tensor, moved in the launch that writes their image."""
    import numpy as np

    if not isinstance(t, dict):
        raise TypeError(f"target {i} is a {type(t).__name__}: a dict of boxes, masks, keypoints")
    for key in ("boxes", "keypoints"):
        canvas = getattr(t.get(key), "canvas_size", None)
        if canvas is not None and tuple(int(c) for c in canvas) != tuple(int(c) for c in size):
            raise ValueError(f"target {i}: {key} on a canvas of {tuple(canvas)} (height, width) "
                             f"for an image of {tuple(size)}")
    boxes = masks = keypoints = None
    if t.get("boxes") is not None:
        b = host_boxes if host_boxes is not None else _array(t["boxes"]).astype(np.float32).reshape(-1, 4)
        boxes = (b.tolist(), _box_format(t["boxes"]))
    if t.get("masks") is not None:
        masks = _device_masks(t["masks"], i, device)
    if t.get("masks") is not None and masks is None:
        m = _array(t["masks"])
        if m.ndim != 3:
            raise ValueError(f"target {i}: masks of shape {m.shape}: [N, H, W]")
        masks = (m.shape[0], m.shape[1], m.shape[2], np.ascontiguousarray(m.astype(np.uint8)).tobytes())
    if t.get("keypoints") is not None:
        k = _array(t["keypoints"]).astype(np.float32)
        if k.ndim != 3 or k.shape[2] not in (2, 3):
            raise ValueError(f"target {i}: keypoints of shape {k.shape}: [N, K, 2] or [N, K, 3]")
        if k.shape[2] == 3:
            visible = k[..., 2] > 0
        elif t.get("keypoints_visible") is not None:
            visible = _array(t["keypoints_visible"]).astype(bool).reshape(k.shape[:2])
        else:
            visible = np.ones(k.shape[:2], bool)
        keypoints = (k[..., :2].reshape(-1, 2).tolist(), visible.reshape(-1).tolist(), k.shape[1])
    return boxes, masks, keypoints


def _device_masks(masks: Any, i: int, device: Optional[int]) -> Optional[tuple]:
    """``masks`` as a packed uint8 ``[N, H, W]`` CUDA tensor on ``device`` (uploaded on the
    caller's stream where they are on the host), or ``None`` where they go as bytes."""
    torch = sys.modules.get("torch")
    if device is None or torch is None:
        return None
    if isinstance(masks, torch.Tensor):
        x = masks.detach().as_subclass(torch.Tensor)
    else:
        np = sys.modules.get("numpy")
        if np is None or not isinstance(masks, np.ndarray):
            return None
        x = torch.from_numpy(np.ascontiguousarray(masks))
    if x.ndim != 3:
        raise ValueError(f"target {i}: masks of shape {tuple(x.shape)}: [N, H, W]")
    x = x.to(device=torch.device("cuda", device), dtype=torch.uint8).contiguous()
    return x.shape[0], x.shape[1], x.shape[2], x


def _moved_masks(moved: Any, kept: Any, original: Any) -> Any:
    """The launch's moved planes of one image (every given object's), the dropped objects'
    left out, in ``original``'s type, dtype and device."""
    import numpy as np

    torch = sys.modules["torch"]
    planes = torch.from_dlpack(moved)
    if len(kept) == planes.shape[0] and not kept.all():
        planes = planes[torch.as_tensor(kept, device=planes.device)]
    if isinstance(original, torch.Tensor):
        return planes.to(device=original.device, dtype=original.dtype)
    return planes.cpu().numpy().astype(np.asarray(original).dtype)


def _like(value: Any, original: Any) -> Any:
    """``value`` (a NumPy array) as a torch tensor on ``original``'s device where that was a
    torch tensor, else as it is."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(original, torch.Tensor):
        return torch.from_numpy(np.ascontiguousarray(value)).to(original.device)
    return value


def _kept(value: Any, kept: Any) -> Any:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if kept.all():
            # Every object stays (or none were counted): the same tensor, no GPU indexing.
            return value
        index = torch.as_tensor(kept, device=value.device)
        return value[index]
    return _array(value)[kept]


def _rebuild(t: dict, m: dict, boxes: Any) -> dict:
    """Image's targets ``t`` with the moved values ``m`` (its moved ``boxes`` already in their
    type), in the types they came in."""
    import numpy as np

    kept = np.asarray(m["kept"], bool)
    w, h = m["canvas"]
    out = dict(t)
    if "labels" in t and t["labels"] is not None:
        out["labels"] = _kept(t["labels"], kept)
    if t.get("boxes") is not None:
        out["boxes"] = _wrap(boxes, t["boxes"], "BoundingBoxes", (h, w))
    if t.get("masks") is not None and "device_masks" in m:
        out["masks"] = _wrap(_moved_masks(m["device_masks"], kept, t["masks"]), t["masks"], "Mask", None)
    elif t.get("masks") is not None:
        n, data = m["masks"]
        src = _array(t["masks"])
        mk = np.frombuffer(data, np.uint8).reshape(n, h, w).astype(src.dtype)
        out["masks"] = _wrap(_like(mk, t["masks"]), t["masks"], "Mask", None)
    if t.get("keypoints") is not None:
        points, visible = m["keypoints"]
        src = _array(t["keypoints"])
        per = src.shape[1]
        xy = np.asarray(points, np.float32).reshape(-1, per, 2)
        vis = np.asarray(visible, bool).reshape(-1, per)
        if src.shape[2] == 3:
            v = src[..., 2][kept].astype(np.float32)
            xy = np.concatenate([xy, np.where(vis, v, 0)[..., None]], 2).astype(src.dtype)
        out["keypoints"] = _wrap(_like(xy.astype(src.dtype), t["keypoints"]), t["keypoints"], "KeyPoints", (h, w))
        if t.get("keypoints_visible") is not None:
            out["keypoints_visible"] = _like(vis, t["keypoints_visible"])
    return out


def _wrap(value: Any, original: Any, name: str, canvas: Optional[Tuple[int, int]]) -> Any:
    """Rewraps ``value`` as the tv_tensor ``original`` was (with the moved canvas)."""
    if type(original).__name__ != name or "torchvision" not in type(original).__module__:
        return value
    from torchvision import tv_tensors

    cls = getattr(tv_tensors, name)
    if name == "BoundingBoxes":
        return cls(value, format=original.format, canvas_size=canvas)
    if name == "KeyPoints":
        return cls(value, canvas_size=canvas)
    return cls(value)
