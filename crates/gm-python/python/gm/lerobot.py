"""LeRobot v3 datasets: `LeRobotDataset(root, delta_timestamps=...)` usable where
`lerobot.datasets.lerobot_dataset.LeRobotDataset` is for video frames, decoded by gm (NVDEC,
or FFmpeg on the CPU for AV1 on GPUs without it) into GPU memory, or host memory on a
machine without a GPU."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Union

from ._gm import VideoDataset, VideoDecoder, _LeRobotIndex


class LeRobotDataset:
    """A LeRobot v3 dataset folder (`meta/info.json`, parquet tables, `videos/`). Item `i` is
    LeRobot's sample `i`: `index`, `episode_index`, `frame_index`, `timestamp`, and per camera
    its frames as a uint8 `gm.Tensor` on the GPU, or in host memory without one (`[T, 3, H,
    W]` with delta timestamps, `[3,
    H, W]` without; LeRobot's `return_uint8=True` layout: `torch.from_dlpack(x).float() / 255`
    gives its float frames) and `{camera}_is_pad`. The frames are those LeRobot's
    `__getitem__` decodes: delta timestamps rounded to frames, clamped to the episode, the
    data's timestamps shifted by each episode's `from_timestamp`, the frame nearest within
    `tolerance_s` (a frame further away raises, naming the sample, camera and times, when the
    dataset opens). Non-video features (state, action) are in the data parquet files, which
    this class does not read.

    For training, `clips()` gives the samples as a `VideoDataset` for `gm.ClipLoader`: batches
    of `[B, cameras, T, C, H, W]` through the fused transforms, whose `episodes` are the
    sample indices."""

    def __init__(
        self,
        root: Union[str, PathLike],
        *,
        delta_timestamps: Optional[Dict[str, Sequence[float]]] = None,
        tolerance_s: float = 1e-4,
        device: Any = None,
        index_cache: Optional[Union[str, PathLike]] = None,
        decoder: str = "auto",
    ) -> None:
        deltas = None if delta_timestamps is None else {
            k: [float(t) for t in v] for k, v in delta_timestamps.items()}
        self._index = _LeRobotIndex(str(root), delta_timestamps=deltas, tolerance_s=tolerance_s,
                                    index_cache=None if index_cache is None else str(index_cache))
        self._delta = deltas or {}
        self._device = device
        self._decoder = decoder
        self._decoders: Dict[str, VideoDecoder] = {}

    def __len__(self) -> int:
        return len(self._index)

    @property
    def cameras(self) -> List[str]:
        """The camera features, in info.json's order."""
        return self._index.cameras

    @property
    def fps(self) -> float:
        return self._index.fps

    def sample(self, i: int) -> Dict[str, Any]:
        """Sample `i` without decoding: its frames per camera as (video path, frame indices),
        query timestamps, padding and indices."""
        return self._index.sample(i)

    def clips(self) -> VideoDataset:
        """The samples as a `VideoDataset` for `gm.ClipLoader` (one clip per sample)."""
        return self._index.clips()

    def _video(self, path: str) -> VideoDecoder:
        d = self._decoders.get(path)
        if d is None:
            d = VideoDecoder(path, device=self._device, decoder=self._decoder)
            self._decoders[path] = d
        return d

    def __getitem__(self, i: int) -> Dict[str, Any]:
        if i < 0:
            i += len(self)
        s = self._index.sample(i)
        item: Dict[str, Any] = {k: s[k] for k in ("index", "episode_index", "frame_index", "timestamp")}
        for key in self.cameras:
            path, frames = s["frames"][key]
            d = self._video(path)
            item[key] = d.get_frames_at(frames).data if key in self._delta else d[frames[0]]
            if key in self._delta:
                item[f"{key}_is_pad"] = s[f"{key}_is_pad"]
        return item


__all__ = ["LeRobotDataset"]
