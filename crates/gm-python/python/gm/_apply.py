"""Bringing caller-held images to the fused chain and back (``Transform.__call__``).

The kernel reads interleaved RGB (``[H, W, 3]``) rows, from GPU memory through DLPack or from
host bytes; torchvision's ``[3, H, W]`` tensors are made channels-last first (one copy on the
caller's stream), and the output comes back in the caller's array type, ordered after gm's
launch on the caller's current stream.
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
    """``[3, H, W]`` or ``[B, 3, H, W]`` as channels-last views, and whether one image came."""
    if images.dtype != torch.uint8:
        raise TypeError(f"images are uint8 here, not {images.dtype} (torchvision's uint8 images)")
    if images.ndim == 3:
        return [_hwc(images)], True
    if images.ndim == 4:
        if images.shape[1] != 3:
            raise ValueError(f"a batch of shape {tuple(images.shape)}: [B, 3, H, W] RGB")
        return list(images.permute(0, 2, 3, 1).contiguous().unbind(0)), False
    raise ValueError(f"a tensor of shape {tuple(images.shape)}: [3, H, W] or [B, 3, H, W]")


def _hwc(t: Any) -> Any:
    if t.ndim != 3 or t.shape[0] != 3:
        raise ValueError(f"an image of shape {tuple(t.shape)}: [3, H, W] RGB")
    return t.permute(1, 2, 0).contiguous()


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


def apply(transform: Any, images: Any, *, seed: int, epoch: int,
          indices: Optional[Sequence[int]]) -> Any:
    kind, items, single = _classify(images)
    devices = {_device_of(kind, x) for x in items}
    if len(devices) != 1:
        raise ValueError(f"the images are on several devices: {sorted(map(str, devices))}")
    device = devices.pop()
    if indices is None:
        indices = _next_indices(transform, len(items))
    indices = [int(i) for i in indices]
    if device is None:
        items = [_host_image(kind, x) for x in items]
    out = _gm.apply_transforms(transform, items, seed=int(seed), epoch=int(epoch),
                               indices=indices, device=device, single=single)
    # Consuming the output orders the caller's stream after gm's launch, before the inputs
    # (and the channels-last copies above) can be freed and reused on it.
    if kind == "torch":
        import torch

        out = torch.from_dlpack(out)
    elif kind == "numpy":
        import numpy as np

        out = np.from_dlpack(out)
    del items
    return out
