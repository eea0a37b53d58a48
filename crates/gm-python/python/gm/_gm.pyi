"""Type stubs of gm's extension module (the classes `gm` re-exports)."""

from os import PathLike
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Union

from .transforms import CutMix, MixUp, Transform

__version__: str

DeviceLike = Union[str, int, Any, None]
""""cpu", "cuda", "cuda:N", an ordinal, a ``torch.device``, or None (this rank's GPU if
there is one, else the CPU)."""

StorageOptions = Dict[str, Union[str, int, float, bool]]
"""``storage={...}``: object_store keys (``endpoint``, ``region``, ``allow_http``, ...) and
gm's (``concurrency``, ``max_inflight_bytes``, ``retries``, ``retry_timeout``,
``backoff_min``, ``backoff_max``, ``timeout``, ``connect_timeout``, ``open_bytes``,
``block_size``, ``cache_bytes``)."""

class GmError(Exception):
    """Base class of the errors gm raises."""

class BadSampleError(GmError):
    """A sample that could not be loaded (bad_samples="fail"), or a bad input of
    decode_images or VideoDecoder."""

    name: str
    """The file, URL or input name."""
    index: Optional[int]
    """The sample's index (dataset index, or position in the input list)."""
    reason: str
    """Why it could not be loaded."""

class NoGpuError(GmError):
    """A GPU feature was asked for where no CUDA driver or device is present."""

class CudaError(GmError):
    """The GPU (driver, NVDEC, nvJPEG) failed; not a problem of one input."""

class Tensor:
    """Images, labels or frames in GPU or host memory. ``torch.from_dlpack(t)`` (or NumPy's,
    JAX's, CuPy's) takes the memory without a copy: on the GPU the consumer's stream waits
    for the data, and the memory returns to gm only after the consumer dropped it and its
    stream's reads ran."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Tuple[int, ...]:
        """In elements."""
    @property
    def dtype(self) -> Literal["uint8", "float16", "bfloat16", "float32", "int64"]: ...
    @property
    def device(self) -> str:
        """"cuda:N" or "cpu"."""
    @property
    def is_cuda(self) -> bool: ...
    @property
    def ndim(self) -> int: ...
    def __len__(self) -> int: ...
    def tobytes(self) -> bytes:
        """The elements in row-major order, copied to the host (for tests and tools)."""
    def cpu(self) -> "Tensor":
        """A host copy."""
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[Union[int, Any]] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """The DLPack protocol: a capsule, versioned when ``max_version >= (1, 0)``."""

class Batch:
    """One batch: ``images, labels = batch`` (the labels are the soft labels when the loader
    mixes, as torchvision's MixUp/CutMix return them)."""

    images: Union[Tensor, List[Tensor]]
    """``[B, C, H, W]`` (or ``[B, H, W, C]``) of the chain's output type; padded to the
    largest image with ``batch_sizes="padded"``; with ``batch_sizes="ragged"`` a list of each
    image's ``[C, h, w]`` (views of one buffer)."""
    image_sizes: List[Tuple[int, int]]
    """Each image's own ``(height, width)`` (torchvision's ``image_sizes``)."""
    labels: Tensor
    """``int64 [B]``, on the same device as the images."""
    soft_labels: Optional[Tensor]
    """With ``mix=``: ``float32 [B, num_classes]``, row ``i`` mixing the labels of images
    ``i`` and ``i - 1``, on the same device as the images; else None."""
    indices: List[int]
    """Dataset index of each image."""
    names: Optional[List[str]]
    """With ``stream=True``: each image's ``shard#key``; else None."""
    epoch: int
    position: int
    """Position of the batch in its epoch, from 0."""
    targets: Optional[List[Optional[Dict[str, Any]]]]
    """With a CocoDataset or SegmentationFolder source: each image's targets moved with its
    pixels (as CocoDataset.targets gives them, or {"mask": uint8 [H, W]}, on the output canvas
    and the images' device; masks moved in the launch that writes the pixels); an image whose
    annotations or label map cannot be read is a bad sample (bad_samples=); else None."""
    masks: Optional[Tensor]
    """With a SegmentationFolder source and images of one size: the label maps as one uint8
    [B, H, W] tensor (the memory each target's "mask" views), as the segmentation references'
    collate stacks them; else None."""
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Tensor]: ...
    def valid_mask(self) -> Any:
        """Padded batch: a torch ``bool [B, H, W]`` on the images' device, True on each
        image's pixels and False on the padding."""
    def torch_targets(self) -> Optional[List[Optional[Dict[str, Any]]]]:
        """``targets`` with every tensor a torch tensor on the images' device, as torchvision's
        detection models take them: what ``torch.from_dlpack`` of each value gives, made with
        one DLPack import per buffer the batch's targets share rather than one per tensor
        (tens of µs each). New dicts each call; needs torch."""

class BatchIterator(Iterator[Batch]):
    """One epoch of an ImageLoader. Waiting releases the GIL; Ctrl-C interrupts it."""

    def __iter__(self) -> "BatchIterator": ...
    def __next__(self) -> Batch: ...
    def __len__(self) -> int:
        """Batches left."""

class ImageLoader:
    """Batches of images from a folder of class subfolders or a list file ("path label" per
    line), decoded on the GPU's JPEG engines, nvJPEG's CUDA backend and the CPU at once and
    transformed by one fused kernel; the CPU path without a GPU or with ``device="cpu"``.

    ``shuffle``/``seed`` order the samples (and seed the augmentations); ``rank`` and
    ``world_size`` shard them (read from torchrun's RANK/WORLD_SIZE when not given);
    ``bad_samples`` is "skip" (a warning and a counter), "substitute" or "fail"
    (BadSampleError); ``cores`` is the host cores the loader may use (default: the process's
    cores divided by torchrun's LOCAL_WORLD_SIZE or Slurm's SLURM_NTASKS_PER_NODE): below 10 it
    decodes on the JPEG engines alone, which costs a third of the host time per image of
    nvJPEG's CUDA backend; ``workers`` host threads read files (default: from ``cores``, 2 to
    4); ``stages`` GPU stages decode (default: from ``cores``, 3 from 10 cores, 2 below);
    ``prefetch`` batches wait ready; ``device_cache`` (a shorter side in pixels) keeps every
    image decoded and resized in GPU memory after the first epoch; ``prefetch_next_epoch``
    starts the next epoch once the running one's host workers have read its last batches
    (used if the next iteration runs it), so that the loop does not wait for a refill at
    epoch starts;
    ``progress`` (True: a tqdm bar; a callable: called with (done, total)) shows the device
    cache's fill; ``mix`` (a ``gm.transforms.MixUp``, a ``CutMix``, or a list of both: one
    picked per batch, as torchvision's ``RandomChoice``) mixes each batch with itself rolled
    by one, drawn from (seed, epoch, batch), and delivers ``Batch.soft_labels``. A chain
    ending in ``gm.transforms.RandomErasing`` erases each finished image.

    ``source`` may be a URL string (``s3://``, ``gs://``, ``az://``, ``http(s)://``; not a
    ``pathlib`` path, which folds ``//``): a prefix (ending in ``/``, or naming no object)
    lists as an ImageFolder in the local walk's order, an object is read as a list file whose
    relative entries resolve against its URL. ``storage`` configures the stores after the
    environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``): object_store keys (``endpoint``,
    ``region``, ``allow_http``, ``access_key_id``, ...) and gm's (``concurrency``,
    ``retries``, ``retry_timeout``, ``timeout``, ``connect_timeout``, ``block_size``, ...;
    durations in seconds or as "500ms", sizes in bytes or as "64KiB"). A listing that fails
    raises OSError naming the URL; a sample whose request fails after the retries is a bad
    sample under ``bad_samples``, named by its URL.

    ``stream=True`` reads WebDataset shards (``.tar`` or ``.tar.gz``; a pattern with brace
    ranges or a list) front to back with no index, as ``webdataset`` does: a seeded shard order
    split across ranks, ``streams`` streams each with a shuffle buffer of ``shuffle_buffer``
    samples (1 without ``shuffle``) that starts drawing once it holds ``shuffle_initial`` and
    grows as it draws (webdataset's ``initial``); ``epoch_batches`` fixes the batches per epoch (the data
    repeats), else an epoch is one pass and ``len()`` raises TypeError. Batches name each
    image in ``Batch.names``; ``state_dict()`` resumes a streamed epoch exactly; a shard that
    cannot be read or ends early is one bad sample; ``drop_last`` and "substitute" do not
    apply.

    ``batch_sizes`` says how a batch holds images of different sizes (a chain ending in
    ``Resize(size, max_size=...)``, ``RandomShortestSize`` or ``ScaleJitter``): "uniform" (one
    size), "padded" (the largest height and width rounded up to ``size_divisible``, the rest
    ``pad_value``, as torchvision's detection models batch; ``valid_mask()``) or "ragged"
    (``images`` a list of each image's tensor).

    ``batch_groups`` (one group per sample) or ``aspect_ratio_group_factor`` (a
    ``gm.CocoDataset`` source: torchvision's ``create_aspect_ratio_groups`` of its images'
    sizes) batch one group at a time as torchvision's ``GroupedBatchSampler`` does:
    ``len(dataset) // batch_size`` whole batches per rank, resumable at the same world size.
    """

    def __init__(
        self,
        source: Union[str, PathLike, Sequence[str]],
        batch_size: int = 32,
        transforms: Optional[Union[Transform, Sequence[Transform]]] = None,
        *,
        shuffle: bool = False,
        seed: int = 0,
        device: DeviceLike = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        drop_last: bool = False,
        bad_samples: Literal["skip", "substitute", "fail"] = "skip",
        workers: Optional[int] = None,
        stages: Optional[int] = None,
        prefetch: int = 2,
        device_cache: Optional[int] = None,
        prefetch_next_epoch: bool = True,
        progress: Union[bool, Callable[[int, int], Any], None] = None,
        mix: Union[MixUp, CutMix, Sequence[Union[MixUp, CutMix]], None] = None,
        truncated: Literal["refuse", "decode"] = "refuse",
        storage: Optional[StorageOptions] = None,
        cores: Optional[int] = None,
        stream: bool = False,
        shuffle_buffer: int = 1000,
        shuffle_initial: int = 100,
        streams: int = 4,
        epoch_batches: Optional[int] = None,
        batch_sizes: Literal["uniform", "padded", "ragged"] = "uniform",
        size_divisible: int = 32,
        pad_value: float = 0.0,
        batch_groups: Optional[Sequence[int]] = None,
        aspect_ratio_group_factor: Optional[int] = None,
    ) -> None: ...
    def __len__(self) -> int:
        """Batches per epoch (for this rank); a stream without ``epoch_batches`` raises
        TypeError."""
    def __iter__(self) -> BatchIterator:
        """Starts an epoch: the one set_epoch chose, the one a loaded state resumes, or the
        one after the last."""
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> Dict[str, Any]:
        """Where the loader stands (torchdata StatefulDataLoader convention)."""
    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resume exactly from a state_dict at the next iteration."""
    def stats(self) -> Dict[str, Any]:
        """Counters, stage times, images/s, the consumer's wait and the first bad samples, over
        every epoch so far; with ``prefetch_next_epoch`` an epoch started ahead counts its work as
        soon as it runs and its wall time from the loop's first request for its batches."""
    @property
    def placement(self) -> str: ...
    @property
    def on_gpu(self) -> bool: ...
    def close(self) -> None:
        """Stops the running iteration and joins its threads."""
    def __enter__(self) -> "ImageLoader": ...
    def __exit__(self, *exc: Any) -> bool: ...

class FrameBatch:
    """Frames and their timing."""

    data: Tensor
    """``[N, 3, H, W]`` uint8 RGB, ``[N, H * 3 / 2, W]`` uint8 NV12 or ``[N, H * 3 / 2, W]``
    uint16 P016 (NV12's layout, samples in the high bits; 4:2:0 video above 8 bits)."""
    pts_seconds: List[float]
    duration_seconds: List[float]
    indices: List[int]
    def __len__(self) -> int: ...

class VideoDecoder:
    """Frame-exact random access to one video (MP4/MOV or WebM/Matroska; H.264, HEVC, VP9 and
    AV1 on NVDEC, or on the CPU through FFmpeg where NVDEC lacks the stream), in the style of
    torchcodec's VideoDecoder. The index and metadata need no GPU; frames come out on the GPU,
    or, with device="cpu" or without a GPU, decoded on the CPU into host memory."""

    def __init__(
        self,
        path: Union[str, PathLike],
        *,
        device: DeviceLike = None,
        output: Literal["rgb", "nv12", "p016"] = "rgb",
        size: Optional[Tuple[int, int]] = None,
        sessions: Optional[int] = None,
        autorotate: bool = True,
        decoder: Literal["auto", "gpu", "cpu"] = "auto",
    ) -> None:
        """sessions: the most NVDEC sessions one request decodes on (frames of different GOPs
        decode in parallel on the GPU's engines); 7 when not given. autorotate: RGB frames
        turned upright as the track's display matrix says (NV12 frames come as stored).
        decoder: "auto" decodes on NVDEC where the GPU's decoder takes the stream and on the
        CPU (FFmpeg's libavcodec, loaded at run time) where it cannot (AV1 on H100/H200/A100,
        H.264 4:4:4), frames then uploaded into the same kernels; "gpu" refuses such streams
        with NVDEC's reason; "cpu" decodes every frame on the CPU."""
    @property
    def metadata(self) -> Dict[str, Any]:
        """codec, profile, width, height (as stored), rotation (degrees counter-clockwise, as
        ffmpeg reports it), mirror, display_width, display_height, bit_depth, num_frames,
        average_fps, constant_fps, duration_seconds, begin_stream_seconds, key_frames,
        timescale, decoder (the choice given: auto, gpu or cpu)."""
    def key_frames(self) -> List[int]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: Union[int, slice]) -> Tensor: ...
    def get_frames_at(self, indices: Sequence[int]) -> FrameBatch: ...
    def get_frames_played_at(self, seconds: Sequence[float]) -> FrameBatch: ...
    def get_frames_in_range(self, start: int, stop: int, step: int = 1) -> FrameBatch: ...
    def frame_played_at(self, seconds: float) -> int:
        """The index of the frame shown at ``seconds``."""

class VideoDataset:
    """Videos cut into episodes: ``frames`` frames every ``stride`` frames (every ``step``-th
    frame), or ``timed=(seconds, fps, stride)`` by timestamp. ``videos`` (paths),
    ``directory`` (every .mp4/.m4v/.mov/.webm/.mkv in it) or ``scenes`` (lists of camera videos) say
    which files: paths, or URL strings (``s3://``, ``gs://``, ``az://``, ``http(s)://``; a
    ``directory`` a bucket prefix) read by ranged GETs of only what indexing needs, through
    ``storage`` (the keys of ImageLoader's). Indexing reads no frame and needs no GPU;
    ``progress`` (True: a tqdm bar; a callable: called with (done, total)) shows it."""

    def __init__(
        self,
        videos: Optional[Sequence[Union[str, PathLike]]] = None,
        *,
        directory: Optional[Union[str, PathLike]] = None,
        scenes: Optional[Sequence[Sequence[Union[str, PathLike]]]] = None,
        frames: int = 8,
        stride: Optional[int] = None,
        step: int = 1,
        timed: Optional[Tuple[float, float, float]] = None,
        tolerance: Optional[float] = None,
        skip_gaps: bool = False,
        index_cache: Optional[Union[str, PathLike]] = None,
        bad_files: Literal["skip", "fail"] = "skip",
        gop_cache_bytes: Optional[int] = None,
        progress: Union[bool, Callable[[int, int], Any], None] = None,
        storage: Optional[StorageOptions] = None,
        autorotate: bool = True,
    ) -> None:
        """autorotate: clips come out turned upright as each track's display matrix says
        (False keeps the stored orientation)."""
    def __len__(self) -> int: ...
    def clip(self, i: int) -> Tuple[int, List[Tuple[str, List[int]]]]:
        """Episode ``i``: (scene, [(video path, frame indices), ...]) per camera."""
    @property
    def frames_per_clip(self) -> int: ...
    @property
    def cameras(self) -> int: ...
    @property
    def skipped(self) -> List[Tuple[str, str]]:
        """Files left out when the dataset opened: (path, reason)."""

class ClipBatch:
    """A batch of clips."""

    frames: Tensor
    """``[B, T, C, H, W]`` (``[B, cameras, T, C, H, W]`` for scenes) on the GPU."""
    episodes: List[int]
    sources: List[List[Tuple[str, List[int]]]]
    """Per clip, per camera: (video path, frame indices)."""
    epoch: int
    position: int
    def __len__(self) -> int: ...

class ClipIterator(Iterator[ClipBatch]):
    """One epoch of a ClipLoader."""

    def __iter__(self) -> "ClipIterator": ...
    def __next__(self) -> ClipBatch: ...
    def __len__(self) -> int: ...

class CocoDataset:
    """A COCO instances or keypoints file and its image folder, read as torchvision's
    CocoDetection wrapped for transforms v2 reads it. targets(i) gives "boxes" (float32 [N, 4],
    XYXY), "labels" (int64 [N], category ids), "masks" (uint8 [N, H, W], as pycocotools makes
    them) where every object has an outline, "keypoints" (float32 [N, K, 2]) and
    "keypoints_visible" (bool [N, K]) where the objects have them, and the crowd regions apart
    ("crowd_boxes", "crowd_labels"). A bad annotation raises gm.GmError naming the file, image
    and annotation. As an ImageLoader source, each batch's `targets` holds every image's
    targets moved with its pixels. target_keys (torchvision's wrapper's) keeps only those keys
    ("image_id", "boxes", "labels", "masks", "keypoints", "keypoints_visible", "crowd_boxes",
    "crowd_labels"); None or "all" keeps every one; without "masks" a loader moves none.
    mask_cache_mb: the objects' masks (pycocotools' runs) are kept after their first
    rasterizing, up to this many MiB (images met first; 0: rasterize every epoch); the
    targets are the same either way."""

    def __init__(self, annotations: Union[str, PathLike], root: Union[str, PathLike], *,
                 drop_empty: bool = False,
                 target_keys: Union[None, str, Sequence[str]] = None,
                 mask_cache_mb: int = 512) -> None: ...
    @staticmethod
    def from_shards(shards: Union[str, Sequence[str]], categories: Union[str, PathLike], *,
                    drop_empty: bool = False,
                    storage: Optional[Dict[str, Any]] = None,
                    target_keys: Union[None, str, Sequence[str]] = None,
                    mask_cache_mb: int = 512) -> "CocoDataset":
        """WebDataset shards whose samples each hold an image and a .json record
        {"image": {"width", "height", "id"?, "file_name"?}, "annotations": [...]}; categories
        from a COCO file. A sample without a usable record raises gm.GmError naming
        shard#key when its targets are asked for."""
        ...
    def __len__(self) -> int: ...
    @property
    def mask_cache_bytes(self) -> int:
        """Bytes of object masks kept after their first rasterizing."""
    def image(self, i: int) -> Dict[str, Any]: ...
    def targets(self, i: int) -> Dict[str, Any]: ...

class SegmentationFolder:
    """Images and their label maps for semantic segmentation, paired by path:
    masks/a/b.png (b<mask_suffix>.png) belongs to images/a/b.jpg, as ADE20K and Pascal VOC lay
    them out. mask(i) gives sample i's class indices (uint8 [H, W]) from an 8-bit or packed
    grey or palette PNG. As an ImageLoader source, each batch's `targets` holds each image's
    {"mask": uint8 [H, W]} moved with its pixels (a RandomCrop's padding filled with its fill
    for masks)."""

    def __init__(self, images: Union[str, PathLike], masks: Union[str, PathLike], *,
                 mask_suffix: str = "") -> None: ...
    def __len__(self) -> int: ...
    def mask(self, i: int) -> Tensor: ...
    def paths(self, i: int) -> Tuple[PathLike, PathLike]: ...

class ClipLoader:
    """Batches of clips from a VideoDataset, decoded on a pool of NVDEC sessions and
    transformed by the fused kernel (the same draws for every frame of a clip). Videos NVDEC
    cannot take decode on `cpu_decoders` host threads (default: the process's share of the
    node's cores) beside the sessions. With device="cpu", or without a GPU, on those CPU
    decoders and the kernels' CPU twins, the batches in host memory. Chroma is interpolated
    at the stream's chroma location as ffmpeg's swscale does; replicate_chroma=True repeats
    each chroma sample instead (faster, not ffmpeg's RGB). jobs_in_flight bounds the decoding
    jobs out at once (default: NVDEC sessions + 1; 4 x the decoders in one-batch jobs for CPU
    decoders alone; 4 x both pools where the dataset mixes them): the batches and their order
    do not depend on it, memory does. sessions defaults to 7, or one per CPU decoder (at least
    7) where the dataset also decodes on the CPU; the sessions then run under Linux's
    SCHED_BATCH so that they do not preempt the CPU decoders (nvdec_batch_scheduling sets that
    either way). placement says where the loader runs and how its threads are placed;
    decoder_threads is (NVDEC sessions, CPU decoders)."""

    placement: str
    decoder_threads: Tuple[int, int]

    def __init__(
        self,
        dataset: VideoDataset,
        batch_size: int = 8,
        transforms: Optional[Union[Transform, Sequence[Transform]]] = None,
        *,
        shuffle: bool = False,
        seed: int = 0,
        device: DeviceLike = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        drop_last: bool = False,
        bad_samples: Literal["skip", "substitute", "fail"] = "skip",
        sessions: Optional[int] = None,
        prefetch_next_epoch: bool = True,
        decoder: Literal["auto", "gpu", "cpu"] = "auto",
        replicate_chroma: bool = False,
        cpu_decoders: Optional[int] = None,
        jobs_in_flight: Optional[int] = None,
        nvdec_batch_scheduling: Optional[bool] = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> ClipIterator: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> Dict[str, Any]: ...
    def load_state_dict(self, state: Dict[str, Any]) -> None: ...
    def stats(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...

def decode_images(
    data: Sequence[bytes],
    *,
    device: DeviceLike = None,
    names: Optional[Sequence[str]] = None,
    errors: Literal["raise", "return"] = "raise",
    apply_orientation: bool = True,
    truncated: Literal["refuse", "decode"] = "refuse",
) -> List[Union[Tensor, BadSampleError]]:
    """Decodes images to ``uint8 [H, W, 3]`` RGB tensors, on the GPU or the CPU.

    A JPEG cut before its end is refused (``truncated="refuse"``, as PIL by default) or
    decoded as libjpeg-turbo does, the missing rows grey (``truncated="decode"``)."""

def cuda_available() -> bool:
    """Whether a CUDA driver and at least one GPU are present."""

def device_count() -> int: ...
def flush_logs() -> None:
    """Hands queued log records to Python's logging now."""

def merge_states(states: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The ``state_dict()`` of every rank of a job (one each, any order) merged into one that a
    job of any world size resumes from: each new rank passes it to ``load_state_dict`` and
    gets its share of the rest of the epoch, no sample repeated or skipped (the last shares
    padded as DistributedSampler pads). Augmentations stay tied to (seed, epoch, sample).
    Streaming shards (``ImageLoader(shards=..., streaming=True)``) cannot change world size."""

def apply_transforms(
    transforms: Any,
    images: Sequence[Any],
    *,
    seed: int,
    epoch: int,
    indices: Sequence[int],
    device: Optional[int],
    single: bool = False,
    targets: Optional[Sequence[Tuple[Any, Any, Any]]] = None,
) -> Union[Tensor, Tuple[Tensor, List[Dict[str, Any]]]]:
    """The chain ``transforms`` run on ``images``, image ``i`` drawn from ``(seed, epoch,
    indices[i])``: DLPack uint8 ``[H, W, 3]`` tensors on GPU ``device``, or ``(bytes, height,
    width)`` packed RGB with ``device=None``. One batch on the same device (``single``: its one
    image); with ``targets`` (per image ``(boxes, masks, keypoints)``), also each image's moved
    targets. ``gm.transforms``' ``__call__`` is the way to call it."""
