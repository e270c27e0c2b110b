"""What a texture bake will produce, known before it samples a frame: its layout and the bytes it holds.

Every number here comes from counts alone (items, bones, vertices, each clip's frame range and step), so a
bake checks them before it plays a single frame, and the bake dialog shows the same estimate (issue 35):

* the **layout** (:func:`.layout.plan_layout`): width and rows against :data:`.layout.MAX_TEXTURE_SIZE`;
* the **memory** the bake holds at its peak (:attr:`TexturePlan.peak_bytes`): what it keeps of each stored
  frame for the encoder (:data:`KEPT_BYTES`), the encoder's own arrays, the pixels, and the working memory
  of one sample. The error report does not keep poses: it is fed one sample at a time
  (:class:`.verify.ReportStream`), so the halfway samples and the bone kinds' truth cost no memory that
  grows with the frames.

When the rows do not fit, :func:`samples_that_fit` and :func:`fitting_step` say what would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .header import embedded_float_count
from .layout import MAX_TEXTURE_SIZE, TEXELS_PER_ITEM, Clip, Kind, TextureLayout, plan_layout
from .quantize import Precision, bytes_per_texel
from .report import mid_samples

__all__ = [
    "KEPT_BYTES",
    "TexturePlan",
    "clips_at",
    "fitting_step",
    "plan_texture",
    "samples_that_fit",
]

#: Bytes kept per stored frame and texture item until the texture is encoded: VERTEX positions and normals
#: (float32, 3 + 3); bone kinds their skinning matrix (float64 4x4) and Auto data (float32 x 8).
KEPT_BYTES = {Kind.VERTEX: 24, Kind.BONE_MATRIX: 128 + 32, Kind.BONE_DQ: 128 + 32}
#: The bone encoders' arrays per bone and stored frame (rotations, pivots, scales and their temporaries).
BONE_ENCODE_BYTES = 1024
#: Bytes per item (VERTEX) or vertex (bone kinds) that one sample's truth and its decoding hold at once.
SAMPLE_BYTES = 512
#: Working memory that does not grow with the mesh or the frames: the encoder's and decoder's chunks
#: (:data:`.encode._CHUNK_VALUES`) with their float64 temporaries.
CHUNK_BYTES = 96 << 20
#: The object matrices each stored frame keeps, per baked mesh (float64 4x4).
WORLD_BYTES = 128


@dataclass(frozen=True)
class TexturePlan:
    """One texture as a bake would make it (see the module docstring); sizes in bytes."""

    kind: Kind
    precision: Precision
    layout: TextureLayout
    clips: tuple[Clip, ...]
    #: Texels per item and frame band, and items: what the dialog shows as the texture's content.
    kept_bytes: int
    encode_bytes: int
    working_bytes: int

    @property
    def fits(self) -> bool:
        """Whether the texture's rows fit :data:`.layout.MAX_TEXTURE_SIZE` (its width always does)."""
        return self.layout.height <= MAX_TEXTURE_SIZE

    @property
    def stored_samples(self) -> int:
        return sum(c.frame_count for c in self.clips)

    @property
    def checked_samples(self) -> int:
        """Stored and halfway samples: what the error report compares."""
        return sum(c.frame_count + len(mid_samples(c.frame_count, c.loop)) for c in self.clips)

    @property
    def image_bytes(self) -> int:
        """The pixels in memory (and about the size of an uncompressed file)."""
        return self.layout.width * self.layout.height * bytes_per_texel(self.precision)

    @property
    def peak_bytes(self) -> int:
        """An upper bound on what the bake holds at once (checked against tracemalloc by the tests)."""
        return self.kept_bytes + self.encode_bytes + self.image_bytes + self.working_bytes


def clips_at(clips: Sequence[Clip], step: float) -> tuple[Clip, ...]:
    """``clips`` sampled every ``step`` scene frames."""
    return tuple(replace(c, frame_step=float(step)) for c in clips)


def plan_texture(
    kind: Kind,
    precision: Precision,
    *,
    item_count: int,
    vertex_count: int,
    part_count: int,
    clips: Sequence[Clip],
    max_width: int = 8192,
    power_of_two: bool = False,
    embed_metadata: bool = True,
    auto: bool = False,
    tangents: bool = False,
) -> TexturePlan:
    """The :class:`TexturePlan` of a texture of ``item_count`` items (VERTEX: vertices and corner groups;
    bone kinds: palette entries) for meshes of ``vertex_count`` vertices in all, ``part_count`` meshes;
    ``tangents``: a VERTEX texture that stores tangents (a third texel per item, 16 more bytes kept)."""
    kind, precision = Kind(kind), Precision(precision)
    bones = item_count if kind is not Kind.VERTEX else 0
    stores_tangents = tangents and kind is Kind.VERTEX
    layout = plan_layout(
        item_count,
        TEXELS_PER_ITEM[kind] + stores_tangents,
        [c.frame_count for c in clips],
        max_width=max_width,
        power_of_two=power_of_two,
        metadata_floats=embedded_float_count(len(clips), bones, auto) if embed_metadata else 0,
        max_height=math.inf,  # measured, then compared: the plan of a texture too tall is what is refused
        auto=auto,
    )
    stored = sum(c.frame_count for c in clips)
    kept = stored * (item_count * (KEPT_BYTES[kind] + 16 * stores_tangents) + part_count * WORLD_BYTES)
    encode = stored * bones * BONE_ENCODE_BYTES
    per_sample = item_count if kind is Kind.VERTEX else vertex_count + bones
    working = CHUNK_BYTES + SAMPLE_BYTES * per_sample
    return TexturePlan(kind, precision, layout, tuple(clips), kept, encode, working)


def samples_that_fit(plan: TexturePlan) -> int:
    """How many stored samples, over all clips, a texture with ``plan``'s width and clip count holds in
    :data:`.layout.MAX_TEXTURE_SIZE` rows (each clip also takes one guard band); 0 if not even one each."""
    lay = plan.layout
    bands = (MAX_TEXTURE_SIZE - lay.metadata_rows) // lay.rows_per_frame
    return max(0, bands - len(plan.clips))


def fitting_step(plan: TexturePlan) -> float | None:
    """The smallest frame step (to 0.01 frame) at which ``plan``'s clips fit, or ``None`` when no step does
    (more clips than rows)."""
    limit = samples_that_fit(plan)
    if limit < len(plan.clips):
        return None

    def fits(step: float) -> bool:
        return sum(c.frame_count for c in clips_at(plan.clips, step)) <= limit

    low = min(c.frame_step for c in plan.clips)
    high = max(c.frame_end - c.frame_start for c in plan.clips) + 1.0
    if fits(low):
        return low
    for _ in range(60):  # counts only fall as the step grows: bisect
        middle = 0.5 * (low + high)
        low, high = (low, middle) if fits(middle) else (middle, high)
    step = math.ceil(high * 100.0 - 1e-9) / 100.0
    while not fits(step):
        step += 0.01
    return round(step, 2)
