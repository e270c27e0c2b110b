"""Where every texel of an animation texture lives: rows, columns, clips, wrapping and padding.

Rows and columns
----------------
An *item* is what one texture column group describes: a vertex (``VERTEX``) or a bone (``BONE_*``).
Each item owns ``T`` adjacent texels per frame (:data:`TEXELS_PER_ITEM`: 2 for ``VERTEX`` -
position offset, normal; 3 for ``BONE_MATRIX`` - the three rows of a 3x4 matrix; 2 for ``BONE_DQ`` -
rotation, translation). Items run along **x**: item ``i`` starts at column ``(i % P) * T`` of row
``i // P`` of its frame band, where ``P = items_per_row = min(N, max_width // T)``. All items of one
frame form a **frame band** of ``R = rows_per_frame = ceil(N / P)`` rows; frames run along **y**, one
band after another. Wrapping a frame onto several rows is what lets a 319,944-vertex mesh fit (the
thesis put one vertex per row and exceeded the GPU's texture height, Johansson 2021 §4.9); an item never
straddles two rows, so a decoder fetches its ``T`` texels at ``x0 + k`` on one row.

Top to bottom (row 0 is the first row of pixel data, which is both Blender's ``Image.pixels`` order
and ``texelFetch``'s ``y = 0``, i.e. the *bottom* row when the image is viewed):

1. ``metadata_rows`` rows of the optional embedded metadata block (Johansson 2021's metadata
   column, turned on its side because our frames run along y), one float32 per texel;
2. for each clip ``c``: its ``frame_count`` bands, then one **guard band**. The guard band repeats
   frame 0 for looping clips and the last frame otherwise, so "this frame and the next" - the only
   fetches interpolation needs - never leaves the clip and never needs a modulo in the shader.
   ``clip_first_rows[c]`` is the row of frame 0 of clip ``c``;
3. zero padding up to the power-of-two height, if requested. Columns beyond ``P * T`` are zero too.

So the texel ``k`` of item ``i`` at clip frame ``f`` is at
``x = (i % P) * T + k``, ``y = clip_first_rows[c] + f * R + i // P``.
Sample with ``texelFetch`` (nearest, no mipmaps): neighbouring texels hold other items.

Auto rows
---------
A bone texture that carries Auto (:mod:`.auto`) has twice the rows per frame band: the bones' own rows
``0 .. R_b - 1`` (``R_b = ceil(N / P)``) as above, then ``R_b`` rows of Auto data, each bone's two Auto
texels at its own columns, ``auto_row_offset = R_b`` rows further up: ``x = (i % P) * T + k`` (``k`` 0 or
1), ``y = clip_first_rows[c] + f * R + auto_row_offset + i // P``. Every formula above holds with ``R``
the doubled rows per frame, so a reader that knows nothing of Auto decodes the bones as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

__all__ = [
    "AUTO_SLOTS",
    "GUARD_FRAMES",
    "MAX_TEXTURE_SIZE",
    "TEXELS_PER_ITEM",
    "Clip",
    "Kind",
    "Region",
    "TextureLayout",
    "TexelOwner",
    "frame_pair",
    "plan_layout",
]

#: Largest width/height any supported GPU is asked to handle (GL_MAX_TEXTURE_SIZE on desktop GPUs).
MAX_TEXTURE_SIZE = 16384
#: Bands repeated after each clip so interpolation never bleeds into the next clip.
GUARD_FRAMES = 1
#: Texels of Auto data per bone and frame (:mod:`.auto`): ``(tau, sigma)`` and ``(A, H)``.
AUTO_SLOTS = 2


class Kind(str, Enum):
    """What a texture stores (Johansson 2021, §3.4, §3.5.1, §3.5.2)."""

    VERTEX = "VERTEX"
    BONE_MATRIX = "BONE_MATRIX"
    BONE_DQ = "BONE_DQ"


TEXELS_PER_ITEM = {Kind.VERTEX: 2, Kind.BONE_MATRIX: 3, Kind.BONE_DQ: 2}


class Region(int, Enum):
    """What a pixel holds, from :meth:`TextureLayout.locate`."""

    PADDING = 0
    METADATA = 1
    FRAME = 2
    GUARD = 3
    #: Auto data of a bone (:mod:`.auto`), in a frame or guard band.
    AUTO = 4


@dataclass(frozen=True)
class Clip:
    """One action baked into the texture.

    ``frame_start``/``frame_end`` are scene frames (inclusive), ``fps`` the scene frame rate and
    ``frame_step`` the scene frames between two samples, so the texture plays at
    ``sample_rate = fps / frame_step`` samples per second. A looping clip's last sample is followed
    by its first: ``frame_end`` is *excluded* from a loop's samples, since in Blender's cyclic
    convention the end frame repeats the start pose (bake 1..25 of a 24-frame cycle). The loop period
    is ``frame_count / sample_rate`` seconds, exact when ``frame_step`` divides the cycle length.
    """

    name: str
    frame_start: float
    frame_end: float
    fps: float = 24.0
    loop: bool = False
    frame_step: float = 1.0

    def __post_init__(self) -> None:
        if not (self.frame_step > 0 and self.fps > 0):
            raise ValueError(f"clip {self.name!r}: fps and frame_step must be positive")
        if self.frame_end < self.frame_start:
            raise ValueError(
                f"clip {self.name!r}: frame_end {self.frame_end} < frame_start {self.frame_start}"
            )

    @property
    def frame_count(self) -> int:
        """Number of stored samples (at least 1)."""
        span = (self.frame_end - self.frame_start) / self.frame_step
        if self.loop:
            return max(1, math.ceil(span - 1e-6))
        return int(math.floor(span + 1e-6)) + 1

    @property
    def sample_rate(self) -> float:
        """Stored samples per second."""
        return self.fps / self.frame_step

    def sample_frames(self) -> np.ndarray:
        """Scene frames to evaluate for the stored samples ``(frame_count,)`` float64."""
        return self.frame_start + self.frame_step * np.arange(self.frame_count, dtype=np.float64)

    def sample_at_time(self, seconds: np.ndarray | float) -> np.ndarray:
        """Playback time in seconds → fractional sample index (before wrapping or clamping)."""
        return np.asarray(seconds, dtype=np.float64) * self.sample_rate


def frame_pair(
    frame_count: int, loop: bool, sample: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fractional sample index → ``(f0, f1, alpha)`` with ``value = lerp(frame f0, frame f1, alpha)``.

    Looping clips wrap with period ``frame_count``; others clamp to ``[0, frame_count - 1]``. ``f1`` is
    ``f0 + 1`` and may equal ``frame_count``: that is the guard band, holding frame 0 (loop) or the last
    frame (clamp), so no decoder ever wraps an index itself.
    """
    s = np.asarray(sample, dtype=np.float64)
    if loop:
        s = np.mod(s, frame_count)
    else:
        s = np.clip(s, 0.0, frame_count - 1)
    f0 = np.minimum(np.floor(s), frame_count - 1).astype(np.int64)
    return f0, f0 + 1, (s - f0).astype(np.float32)


@dataclass(frozen=True)
class TexelOwner:
    """Result of :meth:`TextureLayout.locate`: per pixel, -1 where a field does not apply."""

    region: np.ndarray
    clip: np.ndarray
    frame: np.ndarray
    item: np.ndarray
    slot: np.ndarray


@dataclass(frozen=True)
class TextureLayout:
    """Sizes and placement of one animation texture (see the module docstring for the picture)."""

    width: int
    height: int
    texels_per_item: int
    item_count: int
    items_per_row: int
    rows_per_frame: int
    metadata_rows: int
    clip_first_rows: tuple[int, ...]
    clip_frame_counts: tuple[int, ...]
    power_of_two: bool = False
    max_width: int = 8192
    #: Rows from a frame band's first row to its Auto rows (0: the texture carries no Auto).
    auto_row_offset: int = 0

    @property
    def data_width(self) -> int:
        """Columns actually used by items (``width`` minus power-of-two padding)."""
        return self.items_per_row * self.texels_per_item

    @property
    def data_height(self) -> int:
        """Rows actually used (``height`` minus power-of-two padding)."""
        last = len(self.clip_frame_counts) - 1
        return (
            self.clip_first_rows[last] + (self.clip_frame_counts[last] + GUARD_FRAMES) * self.rows_per_frame
        )

    @property
    def texels_per_frame(self) -> int:
        """Texels one frame of data occupies (``N * T``)."""
        return self.item_count * self.texels_per_item

    def item_texels(self, items: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(x0, row)`` int32 arrays: first column of each item and its row inside a frame band."""
        i = np.arange(self.item_count) if items is None else np.asarray(items, dtype=np.int64)
        x0 = (i % self.items_per_row) * self.texels_per_item
        return x0.astype(np.int32), (i // self.items_per_row).astype(np.int32)

    def item_uv(self) -> np.ndarray:
        """``(N, 2)`` float32 texel-centre UVs of each item's first texel in frame band 0 of a clip.

        ``floor(uv * (width, height))`` gives ``(x0, row)`` back exactly; a shader adds the frame's row.
        This is what goes into the mesh's UV map so an engine finds each vertex after reordering.
        """
        x0, row = self.item_texels()
        return np.stack([(x0 + 0.5) / self.width, (row + 0.5) / self.height], -1).astype(np.float32)

    def frame_rows(self, clip: int, frames: np.ndarray | int) -> np.ndarray:
        """First row of the band of clip-local ``frames`` (guard band = ``frame_count``)."""
        f = np.asarray(frames, dtype=np.int64)
        if np.any((f < 0) | (f > self.clip_frame_counts[clip])):
            raise IndexError(f"frame outside clip {clip} (0..{self.clip_frame_counts[clip]} incl. guard)")
        return self.clip_first_rows[clip] + f * self.rows_per_frame

    def locate(self, x: np.ndarray, y: np.ndarray) -> TexelOwner:
        """Pixel → (region, clip, clip-local frame, item, texel slot): the inverse of the placement."""
        x = np.asarray(x, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        x, y = np.broadcast_arrays(x, y)
        starts = np.asarray(self.clip_first_rows, dtype=np.int64)
        counts = np.asarray(self.clip_frame_counts, dtype=np.int64)
        clip = np.searchsorted(starts, y, side="right") - 1
        c = np.maximum(clip, 0)
        band = (y - starts[c]) // self.rows_per_frame
        row = (y - starts[c]) % self.rows_per_frame
        auto = self.auto_row_offset > 0
        if auto:
            is_auto = row >= self.auto_row_offset
            row = np.where(is_auto, row - self.auto_row_offset, row)
        item = row * self.items_per_row + x // self.texels_per_item
        slot = x % self.texels_per_item
        in_data = (clip >= 0) & (band <= counts[c]) & (x < self.data_width) & (item < self.item_count)
        if auto:
            in_data &= ~is_auto | (slot < AUTO_SLOTS)
        region = np.full(x.shape, Region.PADDING, dtype=np.int64)
        region[y < self.metadata_rows] = Region.METADATA
        region[in_data] = np.where(band[in_data] == counts[c][in_data], Region.GUARD, Region.FRAME)
        if auto:
            region[in_data & is_auto] = Region.AUTO
        minus = np.full(x.shape, -1, dtype=np.int64)
        return TexelOwner(
            region=region,
            clip=np.where(in_data, clip, minus),
            frame=np.where(in_data, band, minus),
            item=np.where(in_data, item, minus),
            slot=np.where(in_data, slot, minus),
        )


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def plan_layout(
    item_count: int,
    texels_per_item: int,
    frame_counts: Sequence[int],
    *,
    max_width: int = 8192,
    power_of_two: bool = False,
    metadata_floats: int = 0,
    max_height: int = MAX_TEXTURE_SIZE,
    auto: bool = False,
) -> TextureLayout:
    """Choose width, wrapping and clip rows for ``item_count`` items of ``texels_per_item`` texels.

    ``max_width`` (≤ 16384) caps the row length; with ``power_of_two`` both sides are rounded up to
    powers of two and the width cap becomes the largest power of two ≤ ``max_width``.
    ``metadata_floats`` reserves rows for the embedded metadata block; ``auto`` doubles each frame band's
    rows for the Auto data of bone textures (module docstring). Raises ``ValueError`` if the
    result is taller than ``max_height``: fewer samples (a larger frame step) or splitting the clips
    over several textures are the remedies, and silently producing an unloadable image is not.
    """
    if not 1 <= max_width <= MAX_TEXTURE_SIZE:
        raise ValueError(f"max_width must be in 1..{MAX_TEXTURE_SIZE}, got {max_width}")
    if item_count < 1 or texels_per_item < 1:
        raise ValueError("need at least one item and one texel per item")
    if not frame_counts or min(frame_counts) < 1:
        raise ValueError("need at least one clip, each with at least one frame")
    width_cap = 1 << (max_width.bit_length() - 1) if power_of_two else max_width
    if texels_per_item > width_cap:
        raise ValueError(f"max_width {max_width} is narrower than one item ({texels_per_item} texels)")
    if auto and texels_per_item < AUTO_SLOTS:
        raise ValueError(f"Auto rows need items of at least {AUTO_SLOTS} texels")
    per_row = min(item_count, width_cap // texels_per_item)
    item_rows = -(-item_count // per_row)
    rows_per_frame = 2 * item_rows if auto else item_rows
    width = per_row * texels_per_item
    if power_of_two:
        width = _next_pow2(width)
    metadata_rows = -(-int(metadata_floats) // width)
    firsts = []
    row = metadata_rows
    for count in frame_counts:
        firsts.append(row)
        row += (int(count) + GUARD_FRAMES) * rows_per_frame
    height = _next_pow2(row) if power_of_two else row
    if height > max_height:
        raise ValueError(
            f"texture would be {width}x{height}, taller than {max_height}: "
            "sample fewer frames (larger frame step) or bake the clips into separate textures"
        )
    return TextureLayout(
        width=width,
        height=height,
        texels_per_item=texels_per_item,
        item_count=item_count,
        items_per_row=per_row,
        rows_per_frame=rows_per_frame,
        metadata_rows=metadata_rows,
        clip_first_rows=tuple(firsts),
        clip_frame_counts=tuple(int(c) for c in frame_counts),
        power_of_two=power_of_two,
        max_width=max_width,
        auto_row_offset=item_rows if auto else 0,
    )
