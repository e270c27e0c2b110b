"""numpy arrays → GPU textures and vertex buffers (the one place that builds them)."""

from __future__ import annotations

import gpu
import numpy as np

__all__ = ["float_texture", "vertex_buffer"]


def float_texture(data: np.ndarray, texture_format: str = "RGBA32F") -> gpu.types.GPUTexture:
    """``(height, width, channels)`` floats → a GPUTexture read with ``texelFetch``.

    ``gpu.types.Buffer`` wraps numpy memory without copying or checking the dtype (float64 data would be
    reinterpreted), so the array is made float32 and contiguous here and kept alive until the upload.
    """
    data = np.ascontiguousarray(data, dtype=np.float32)
    height, width = data.shape[:2]
    limit = gpu.capabilities.max_texture_size_get()
    if width > limit or height > limit:
        raise ValueError(f"a {width}x{height} texture exceeds this GPU's limit of {limit} texels per side")
    buffer = gpu.types.Buffer("FLOAT", data.size, data.reshape(-1))
    return gpu.types.GPUTexture((width, height), format=texture_format, data=buffer)


def vertex_buffer(columns: dict[str, np.ndarray], length: int) -> gpu.types.GPUVertBuf:
    """One vertex attribute per column (``(length,)`` or ``(length, k)``): int32 columns are fetched as
    integers, everything else as float32."""
    fmt = gpu.types.GPUVertFormat()
    data = {}
    for name, values in columns.items():
        integer = np.asarray(values).dtype.kind in "iu"
        data[name] = np.ascontiguousarray(values, dtype=np.int32 if integer else np.float32)
        width = 1 if data[name].ndim == 1 else data[name].shape[1]
        comp_type, fetch_mode = ("I32", "INT") if integer else ("F32", "FLOAT")
        fmt.attr_add(id=name, comp_type=comp_type, len=width, fetch_mode=fetch_mode)
    vbo = gpu.types.GPUVertBuf(fmt, length)
    for name, values in data.items():
        vbo.attr_fill(name, values)
    return vbo
