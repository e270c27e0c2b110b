"""Point cache files read by Blender's Mesh Cache modifier: PC2 and MDD (numpy, no bpy).

PC2 (little-endian): 12-byte signature ``POINTCACHE2\\0``, int32 version (1), int32 point count,
float32 start frame, float32 sample rate (frames between samples), int32 sample count, then
``samples × points × xyz`` float32.

MDD (big-endian): int32 frame count, int32 point count, float32 time of each frame (seconds), then
``frames × points × xyz`` float32.

Files are written next to their destination and renamed into place, so a failed or cancelled
write never leaves a partial cache behind. A bake streams its frames (:class:`PointCacheWriter`): the
header is written first (the frame count is known before sampling), then one frame at a time, so memory
stays one frame's whatever the clip's length; :func:`cache_bytes` is the file's size before it is written.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = [
    "FORMATS",
    "PointCacheWriter",
    "cache_bytes",
    "cache_layout",
    "read_mdd",
    "read_pc2",
    "write_mdd",
    "write_pc2",
]

PC2_SIGNATURE = b"POINTCACHE2\0"
#: The formats, as the bake names them.
FORMATS = ("PC2", "MDD")
#: Both headers store counts as 32-bit signed integers.
MAX_COUNT = 2**31 - 1


def _header_bytes(fmt: str, frame_count: int) -> int:
    return 32 if fmt == "PC2" else 8 + 4 * frame_count


def cache_bytes(fmt: str, points: int, frame_count: int) -> int:
    """The size of a ``fmt`` file of ``frame_count`` frames of ``points`` points."""
    return _header_bytes(fmt, frame_count) + 12 * points * frame_count


def cache_layout(data: bytes | Path, size: int | None = None) -> tuple[str, int, int] | None:
    """``(format, points, frames)`` of a PC2 or MDD file whose header and size agree (``data``: its first
    bytes, at least 32, and ``size`` its length in bytes), else ``None``: a file of another kind."""
    head = bytes(data[:32])
    if size is None:
        size = len(data)
    if len(head) >= 32 and head[:12] == PC2_SIGNATURE:
        _version, points = np.frombuffer(head, "<i4", 2, 12)
        (samples,) = np.frombuffer(head, "<i4", 1, 28)
        if points >= 0 and samples >= 0 and size == cache_bytes("PC2", int(points), int(samples)):
            return "PC2", int(points), int(samples)
        return None
    if len(head) >= 8:
        count, points = (int(x) for x in np.frombuffer(head, ">i4", 2, 0))
        if count > 0 and points > 0 and size == cache_bytes("MDD", points, count):
            return "MDD", points, count
    return None


class PointCacheWriter:
    """A ``fmt`` (``PC2`` or ``MDD``) file of ``frame_count`` frames of ``points`` points, written one frame
    at a time (:meth:`write`) into a temporary file beside ``path``: :meth:`commit` renames it into place
    once every frame is in, :meth:`discard` removes it (a cancelled or failed bake).

    PC2 needs the first frame and the frames between samples (``start_frame``, ``sample_rate``); MDD each
    frame's time in seconds (``times``)."""

    def __init__(
        self,
        path: str | os.PathLike,
        fmt: str,
        points: int,
        frame_count: int,
        *,
        start_frame: float = 0.0,
        sample_rate: float = 1.0,
        times: np.ndarray | None = None,
    ):
        if fmt not in FORMATS:
            raise ValueError(f"unknown point cache format {fmt!r}")
        if not (0 < frame_count <= MAX_COUNT and 0 < points <= MAX_COUNT):
            raise ValueError(
                f"a point cache holds 1 to {MAX_COUNT} frames and points, got {frame_count} and {points}"
            )
        self.path, self.fmt, self.points, self.frame_count = Path(path), fmt, points, frame_count
        self.written = 0
        if fmt == "PC2":
            header = PC2_SIGNATURE + np.array([1, points], "<i4").tobytes()
            header += np.array([start_frame, sample_rate], "<f4").tobytes()
            header += np.array([frame_count], "<i4").tobytes()
            self.dtype = "<f4"
        else:
            times = np.asarray(times, dtype=np.float64)
            if times.shape != (frame_count,):
                raise ValueError("one time per frame is needed")
            header = np.array([frame_count, points], ">i4").tobytes() + times.astype(">f4").tobytes()
            self.dtype = ">f4"
        fd, self.temporary = tempfile.mkstemp(prefix=".hs-", suffix=".partial", dir=self.path.parent)
        self.previous: str | None = None  # the file the commit moved aside
        self.placed = False  # the new file is at the path
        self.file = os.fdopen(fd, "wb")
        try:
            self.file.write(header)
        except BaseException:
            self.discard()
            raise

    def write(self, positions: np.ndarray) -> None:
        """The next frame's ``(points, 3)`` positions."""
        positions = np.asarray(positions)
        if positions.shape != (self.points, 3):
            raise ValueError(f"a frame of this cache is ({self.points}, 3), got {positions.shape}")
        if self.written >= self.frame_count:
            raise ValueError(f"the cache holds {self.frame_count} frames")
        self.file.write(np.ascontiguousarray(positions, dtype=self.dtype).tobytes())
        self.written += 1

    def commit(self) -> None:
        """Rename the complete file into place; a file that was there is kept aside until :meth:`finalize`
        (or put back by :meth:`rollback`)."""
        if self.written != self.frame_count:
            raise ValueError(f"{self.written} of {self.frame_count} frames written")
        self.file.close()
        if os.path.lexists(self.path):
            self.previous = f"{self.temporary}.previous"
            os.replace(self.path, self.previous)
        try:
            os.replace(self.temporary, self.path)
        except BaseException:
            self.rollback()
            raise
        self.placed = True

    def finalize(self) -> None:
        """The committed file stays: the one it replaced is deleted."""
        if self.previous is not None:
            Path(self.previous).unlink(missing_ok=True)
            self.previous = None

    def rollback(self) -> None:
        """The path holds what it held before: the new file removed, the one it replaced put back."""
        self.discard()
        if self.placed:
            self.path.unlink(missing_ok=True)
            self.placed = False
        if self.previous is not None:
            os.replace(self.previous, self.path)
            self.previous = None

    def discard(self) -> None:
        """Remove the temporary file (nothing happens to ``path``)."""
        self.file.close()
        Path(self.temporary).unlink(missing_ok=True)


def _check(frames: np.ndarray) -> np.ndarray:
    frames = np.asarray(frames)
    if frames.ndim != 3 or frames.shape[2] != 3 or frames.shape[0] == 0:
        raise ValueError(f"point cache data must be (frames, points, 3) with ≥ 1 frame, got {frames.shape}")
    return frames


def _write_all(writer: PointCacheWriter, frames: np.ndarray) -> None:
    try:
        for frame in frames:
            writer.write(frame)
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    writer.finalize()


def write_pc2(
    path: str | os.PathLike, frames: np.ndarray, start_frame: float, sample_rate: float = 1.0
) -> None:
    """Write ``frames (F, N, 3)`` positions sampled every ``sample_rate`` frames from ``start_frame``."""
    frames = _check(frames)
    writer = PointCacheWriter(
        path, "PC2", frames.shape[1], frames.shape[0], start_frame=start_frame, sample_rate=sample_rate
    )
    _write_all(writer, frames)


def read_pc2(path: str | os.PathLike) -> tuple[np.ndarray, float, float]:
    """``(frames (F, N, 3) float32, start frame, sample rate)``."""
    data = Path(path).read_bytes()
    if data[:12] != PC2_SIGNATURE:
        raise ValueError(f"{path} is not a PC2 file")
    _version, points = np.frombuffer(data, "<i4", 2, 12)
    start, rate = np.frombuffer(data, "<f4", 2, 20)
    (samples,) = np.frombuffer(data, "<i4", 1, 28)
    frames = np.frombuffer(data, "<f4", samples * points * 3, 32).reshape(samples, points, 3)
    return frames.astype(np.float32), float(start), float(rate)


def write_mdd(path: str | os.PathLike, frames: np.ndarray, times: np.ndarray) -> None:
    """Write ``frames (F, N, 3)`` with each frame's time in seconds ``times (F,)``."""
    frames = _check(frames)
    _write_all(PointCacheWriter(path, "MDD", frames.shape[1], frames.shape[0], times=times), frames)


def read_mdd(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """``(frames (F, N, 3) float32, times (F,) seconds)``."""
    data = Path(path).read_bytes()
    count, points = np.frombuffer(data, ">i4", 2, 0)
    times = np.frombuffer(data, ">f4", count, 8)
    frames = np.frombuffer(data, ">f4", count * points * 3, 8 + 4 * count).reshape(count, points, 3)
    return frames.astype(np.float32), times.astype(np.float64)
