"""Point cache files read by Blender's Mesh Cache modifier: PC2 and MDD (numpy, no bpy).

PC2 (little-endian): 12-byte signature ``POINTCACHE2\\0``, int32 version (1), int32 point count,
float32 start frame, float32 sample rate (frames between samples), int32 sample count, then
``samples × points × xyz`` float32.

MDD (big-endian): int32 frame count, int32 point count, float32 time of each frame (seconds), then
``frames × points × xyz`` float32.

Files are written next to their destination and renamed into place, so a failed or cancelled
write never leaves a partial cache behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["read_mdd", "read_pc2", "write_mdd", "write_pc2"]

PC2_SIGNATURE = b"POINTCACHE2\0"


def _write_atomically(path: str | os.PathLike, chunks: list[bytes]) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check(frames: np.ndarray) -> np.ndarray:
    frames = np.asarray(frames)
    if frames.ndim != 3 or frames.shape[2] != 3 or frames.shape[0] == 0:
        raise ValueError(f"point cache data must be (frames, points, 3) with ≥ 1 frame, got {frames.shape}")
    return frames


def write_pc2(
    path: str | os.PathLike, frames: np.ndarray, start_frame: float, sample_rate: float = 1.0
) -> None:
    """Write ``frames (F, N, 3)`` positions sampled every ``sample_rate`` frames from ``start_frame``."""
    frames = _check(frames)
    header = PC2_SIGNATURE + np.array([1, frames.shape[1]], "<i4").tobytes()
    header += (
        np.array([start_frame, sample_rate], "<f4").tobytes() + np.array([frames.shape[0]], "<i4").tobytes()
    )
    _write_atomically(path, [header, np.ascontiguousarray(frames, dtype="<f4").tobytes()])


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
    times = np.asarray(times, dtype=np.float64)
    if times.shape != (frames.shape[0],):
        raise ValueError("one time per frame is needed")
    header = np.array([frames.shape[0], frames.shape[1]], ">i4").tobytes() + times.astype(">f4").tobytes()
    _write_atomically(path, [header, np.ascontiguousarray(frames, dtype=">f4").tobytes()])


def read_mdd(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """``(frames (F, N, 3) float32, times (F,) seconds)``."""
    data = Path(path).read_bytes()
    count, points = np.frombuffer(data, ">i4", 2, 0)
    times = np.frombuffer(data, ">f4", count, 8)
    frames = np.frombuffer(data, ">f4", count * points * 3, 8 + 4 * count).reshape(count, points, 3)
    return frames.astype(np.float32), times.astype(np.float64)
