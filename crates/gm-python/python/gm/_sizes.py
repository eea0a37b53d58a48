"""Helpers for batches whose images differ in size."""

from typing import Any, List, Tuple


def valid_mask(images: Any, sizes: List[Tuple[int, int]], channels_last: bool) -> Any:
    """``bool [B, H, W]`` on the images' device: True inside each image of a padded batch."""
    import torch

    if isinstance(images, list):
        raise TypeError("valid_mask() is for padded batches; a ragged batch has no padding")
    t = torch.from_dlpack(images)
    h, w = (t.shape[1], t.shape[2]) if channels_last else (t.shape[2], t.shape[3])
    hs = torch.tensor([s[0] for s in sizes], device=t.device)
    ws = torch.tensor([s[1] for s in sizes], device=t.device)
    rows = torch.arange(h, device=t.device)[None, :, None] < hs[:, None, None]
    cols = torch.arange(w, device=t.device)[None, None, :] < ws[:, None, None]
    return rows & cols
