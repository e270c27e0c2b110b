"""Culling bounds: per clip, per stored frame and per mesh, a box that holds every pose a runtime decodes.

Engines cull an instance by a box. A crowd's box must hold the animation, not the rest pose, or
characters pop out at the screen's edge. :func:`pose_bounds` decodes the texture as the runtimes do and
gives, for each clip, each mesh (in its own object space, mesh units: the space of the decoded positions,
shaders/FORMAT.md section 8) and each *interval* ``f`` (playback from stored frame ``f`` to ``f + 1``,
the last one to the guard band), the axis-aligned box of every position played there:

* **every runtime factor**: bone kinds are skinned at factors 0 and 1 (LBS and DQS from one blend).
  Playback at any factor in [0, 1], one per instance or Auto's per vertex, is ``(1 - f) LBS + f DQS``
  per vertex, a point between the two, so inside a box that holds both. VERTEX bakes have the factor
  baked in.
* **between stored frames**: VERTEX and BONE_MATRIX's LBS interpolate linearly, so the two frames' boxes
  hold every position between them. Dual quaternion interpolation turns along an arc: each bone kind is
  also decoded halfway, and the box grows by :data:`ARC_PAD` times each vertex's second difference
  ``|p(f) - 2 p(f + 1/2) + p(f + 1)|`` per axis. An arc of angle ``φ`` bulges ``r (1 - cos φ/4)`` beyond
  its half-chords and its second difference is ``2 r (1 - cos φ/2)``, about 8 times that: half of it is
  4 times what a circular arc needs.
* **float32**: every box grows by ``2^-20`` of the mesh's largest coordinate (the runtimes' float32
  rounding, as :func:`.verify.encoding_bound` allows) and is rounded outward to float32.

A clip's box is the union of its intervals'. Cross-fades are not covered by one clip's boxes: the union of
both clips' boxes holds a VERTEX or BONE_MATRIX LBS fade (a linear blend); dual quaternion fades turn along
an arc between the two poses (docs/engines.md says how much to add).

Numpy only; the parts are :class:`.verify.BakedPart`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..skinning import SkinBinding, skin_with_ends
from .decode import bone_frame_palette, decode_bone_frames, stream_vertex_frames
from .layout import Kind
from .report import mid_samples
from .texture import AnimationTexture

__all__ = ["ARC_PAD", "ARITHMETIC_PAD", "ClipBounds", "pose_bounds"]

#: Relative float32 allowance of the boxes (of the mesh's largest coordinate).
ARITHMETIC_PAD = 2.0**-20
#: Vertices x samples skinned at once (bounds the working memory, as the error report does).
CHUNK = 1 << 18
#: Fraction of a halfway sample's second difference the box grows by between stored frames: 4 times the
#: bulge of a circular arc (1/8 of it). Measured (tests/core/animtex/test_pose_bounds.py): 1/8 lets a
#: random rig's dual quaternion blends out, 1/4 holds them; 1/2 keeps twice that margin.
ARC_PAD = 0.5


@dataclass(frozen=True)
class ClipBounds:
    """One clip's boxes: ``lo``/``hi`` ``(F, M, 3)`` float32 per interval (``F`` stored frames) and mesh."""

    lo: np.ndarray
    hi: np.ndarray

    @property
    def clip_lo(self) -> np.ndarray:
        """``(M, 3)``: the whole clip's box per mesh."""
        return self.lo.min(axis=0)

    @property
    def clip_hi(self) -> np.ndarray:
        return self.hi.max(axis=0)


def _mesh_boxes(points: np.ndarray, spans: Sequence[slice]) -> tuple[np.ndarray, np.ndarray]:
    """Per mesh span of ``points`` ``(K, N, 3)``: the box ``(M, 3)`` over every k and vertex."""
    lo = np.empty((len(spans), 3))
    hi = np.empty((len(spans), 3))
    for m, span in enumerate(spans):
        part = points[:, span]
        for k in range(3):  # per column: a reduction over an (N, 3) axis 0 is ~20x slower
            lo[m, k] = part[..., k].min()
            hi[m, k] = part[..., k].max()
    return lo, hi


def _vertex_frames(
    texture: AnimationTexture, rest: np.ndarray, clip: int
) -> Iterator[tuple[float, np.ndarray]]:
    """``(frame, positions (1, N, 3))`` at every stored frame (playback between is their lerp)."""
    for _, frame, positions, _ in stream_vertex_frames(texture, rest, clip, np.empty(0)):
        yield float(frame), positions[None]


def _bone_samples(
    texture: AnimationTexture, parts: Sequence, clip: int
) -> Iterator[tuple[float, np.ndarray]]:
    """``(sample, positions at factors 0 and 1 (2, N, 3))`` at every stored frame and halfway sample, in
    playback order (frame 0, 0.5, 1, 1.5, ...)."""
    c = texture.clips[clip]
    stored = np.arange(c.frame_count, dtype=np.float64)
    samples = np.sort(np.concatenate([stored, mid_samples(c.frame_count, c.loop)]))
    bindings = [
        SkinBinding(
            np.ascontiguousarray(p.bone_indices, dtype=np.int32),
            np.ascontiguousarray(p.bone_weights, dtype=np.float32),
            np.ones(len(p.base), np.float32),
        )
        for p in parts
    ]
    step = max(1, CHUNK // sum(len(p.base) for p in parts))
    for at in range(0, len(samples), step):
        chunk = samples[at : at + step]
        frames = decode_bone_frames(texture, clip, chunk)
        for s, sample in enumerate(chunk):
            palette = bone_frame_palette(frames, s)
            ends = [skin_with_ends(p.base, b, palette, 0.0)[2] for p, b in zip(parts, bindings)]
            yield float(sample), ends[0] if len(ends) == 1 else np.concatenate(ends, axis=1)


def _clip_bounds(stream: Iterator[tuple[float, np.ndarray]], count: int, loop: bool, spans: Sequence[slice]):
    """Accumulate one clip's interval boxes from its decoded samples in playback order (stored frames
    ``j`` and, for bone kinds, halfway samples ``j + 0.5``), keeping only the last stored frame, a
    halfway sample waiting for its next frame, and (loops) frame 0 for the wrap."""
    meshes = len(spans)
    lo = np.full((count, meshes, 3), np.inf)
    hi = np.full((count, meshes, 3), -np.inf)
    pad = np.zeros((count, meshes, 3))
    reach = np.zeros(meshes)
    previous = first = pending = None

    def bulge(a: np.ndarray, mid: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.abs(a.astype(np.float64) - 2.0 * mid + b)
        return np.stack([d[:, span].reshape(-1, 3).max(axis=0) for span in spans])

    for sample, points in stream:
        box_lo, box_hi = _mesh_boxes(points, spans)
        reach = np.maximum(reach, np.maximum(np.abs(box_lo), np.abs(box_hi)).max(axis=1))
        j = int(np.floor(sample))
        if sample != j:  # halfway between frame j and j + 1: its own interval, and the arc's bulge later
            lo[j], hi[j] = np.minimum(lo[j], box_lo), np.maximum(hi[j], box_hi)
            pending = (j, points)
            continue
        lo[j], hi[j] = np.minimum(lo[j], box_lo), np.maximum(hi[j], box_hi)
        if j > 0:
            lo[j - 1], hi[j - 1] = np.minimum(lo[j - 1], box_lo), np.maximum(hi[j - 1], box_hi)
        if pending is not None and pending[0] == j - 1:
            pad[j - 1] = np.maximum(pad[j - 1], ARC_PAD * bulge(previous, pending[1], points))
            pending = None
        if j == 0:
            first = (box_lo, box_hi, points)
        previous = points
    last = count - 1
    if loop and count > 1:  # the last interval wraps to frame 0 (the guard band)
        lo[last], hi[last] = np.minimum(lo[last], first[0]), np.maximum(hi[last], first[1])
        if pending is not None:
            pad[last] = np.maximum(pad[last], ARC_PAD * bulge(previous, pending[1], first[2]))
    grow = pad + (ARITHMETIC_PAD * reach)[None, :, None]
    return _outward(lo - grow, hi + grow)


def _outward(lo: np.ndarray, hi: np.ndarray) -> ClipBounds:
    """float64 boxes rounded outward to float32."""
    lo32, hi32 = lo.astype(np.float32), hi.astype(np.float32)
    lo32 = np.where(lo32 > lo, np.nextafter(lo32, np.float32(-np.inf)), lo32)
    hi32 = np.where(hi32 < hi, np.nextafter(hi32, np.float32(np.inf)), hi32)
    return ClipBounds(lo32, hi32)


def pose_bounds(
    texture: AnimationTexture, parts: Sequence, rest_items: np.ndarray | None = None
) -> list[ClipBounds]:
    """Every clip's :class:`ClipBounds` (see the module). ``parts``: the baked meshes in the texture's
    order (:class:`.verify.BakedPart`: ``base``, ``start``/``stop``, bone kinds' ``bone_indices`` and
    ``bone_weights``); ``rest_items``: a VERTEX texture's rest position per item where it has more items
    than vertices (split normals; the extra items share their vertex's position)."""
    spans = [slice(p.start, p.stop) for p in parts]
    out = []
    for ci, clip in enumerate(texture.clips):
        if texture.kind is Kind.VERTEX:
            rest = rest_items if rest_items is not None else np.concatenate([p.base for p in parts])
            stream = _vertex_frames(texture, rest, ci)
        else:
            stream = _bone_samples(texture, parts, ci)
        out.append(_clip_bounds(stream, clip.frame_count, clip.loop, spans))
    return out
