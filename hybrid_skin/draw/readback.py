"""Reading what a shader computed back into numpy: the one offscreen round trip.

Every numeric check of a shader (the live display's :meth:`GpuSkin.readback`, the crowd's vertices and its
pick buffer, the comparison picture) draws into an RGBA32F offscreen and reads the floats into
numpy-owned memory. Reading as FLOAT into a ``gpu.types.Buffer`` that wraps a numpy array is the one way
that is exact and fast on every backend (numpy views of a "UBYTE" Buffer come out garbled, and a Buffer
without ``data=`` is copied element by element through Python).
"""

from __future__ import annotations

from collections.abc import Callable

import gpu
import numpy as np

__all__ = ["draw_points", "render_rgba"]


def render_rgba(width: int, height: int, draw: Callable[[gpu.types.GPUFrameBuffer], None], *,
                depth: bool = False, background: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0),
                format: str = "RGBA32F") -> np.ndarray:
    """``(height, width, 4)`` float32: the pixels of a ``width`` × ``height`` offscreen (``format``),
    cleared to ``background`` (and, with ``depth``, its depth buffer to 1), after ``draw(framebuffer)``
    ran with it bound."""
    pixels = np.zeros((height, width, 4), dtype=np.float32)
    offscreen = gpu.types.GPUOffScreen(width, height, format=format)
    try:
        with offscreen.bind():
            framebuffer = gpu.state.active_framebuffer_get()
            if depth:
                framebuffer.clear(color=background, depth=1.0)
            else:
                framebuffer.clear(color=background)
            draw(framebuffer)
            framebuffer.read_color(0, 0, width, height, 4, 0, "FLOAT",
                                   data=gpu.types.Buffer("FLOAT", pixels.shape, pixels))
    finally:
        offscreen.free()
    return pixels


def draw_points(width: int, height: int, count: int, draw: Callable[[], None], *, what: str) -> np.ndarray:
    """``(count, 4)`` float32 from a shader that writes item ``i`` as one point into pixel
    ``(i % width, i // width)`` with alpha 1 (drawn without depth test or blending, 1-pixel points).
    Raises if any of the ``count`` pixels stayed unwritten: a lost item is a broken shader, never a silent
    zero. ``what`` names the items in that message ("vertices")."""

    def points(_framebuffer: gpu.types.GPUFrameBuffer) -> None:
        gpu.state.depth_test_set("NONE")
        gpu.state.blend_set("NONE")
        gpu.state.point_size_set(1.0)
        draw()

    flat = render_rgba(width, height, points).reshape(-1, 4)[:count]
    missing = np.flatnonzero(flat[:, 3] != 1.0)
    if missing.size:
        first = missing[:5].tolist()
        raise RuntimeError(f"the readback lost {missing.size} of {count} {what} (first {first})")
    return np.ascontiguousarray(flat)
