"""Gradient Mechanics: GPU data loading for PyTorch.

JPEG images (and PNG/BMP/WebP/TIFF) are decoded on the GPU's JPEG engines, nvJPEG's CUDA
backend and the CPU at once, augmented in one fused CUDA kernel, and handed to PyTorch without
a copy through DLPack (``torch.from_dlpack(batch.images)``). Without a GPU the same pipeline
runs on the CPU and yields host tensors.

    import gm, torch
    from gm import transforms as T

    loader = gm.ImageLoader(
        "train/", batch_size=256, shuffle=True, seed=0,
        transforms=[T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                    T.ToDtype("float16", scale=True), T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)],
    )
    for epoch in range(10):
        loader.set_epoch(epoch)
        for images, labels in loader:
            x, y = torch.from_dlpack(images), torch.from_dlpack(labels)
            ...

Log records go to Python's ``logging`` under the logger ``"gm"``.
"""

from . import transforms
from .lerobot import LeRobotDataset
from ._gm import (
    BadSampleError,
    Batch,
    BatchIterator,
    ClipBatch,
    ClipIterator,
    ClipLoader,
    CocoDataset,
    CudaError,
    FrameBatch,
    GmError,
    ImageLoader,
    NoGpuError,
    SegmentationFolder,
    Tensor,
    VideoDataset,
    VideoDecoder,
    __version__,
    cuda_available,
    decode_images,
    device_count,
    flush_logs,
    merge_states,
)

__all__ = [
    "BadSampleError",
    "Batch",
    "BatchIterator",
    "ClipBatch",
    "ClipIterator",
    "ClipLoader",
    "CocoDataset",
    "CudaError",
    "FrameBatch",
    "GmError",
    "ImageLoader",
    "LeRobotDataset",
    "NoGpuError",
    "SegmentationFolder",
    "Tensor",
    "VideoDataset",
    "VideoDecoder",
    "__version__",
    "cuda_available",
    "decode_images",
    "device_count",
    "flush_logs",
    "merge_states",
    "transforms",
]
