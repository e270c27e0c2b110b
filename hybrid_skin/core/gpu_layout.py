"""GPU-ready packing of a :class:`SkinBinding` and a :class:`BonePalette` (numpy only, no bpy).

The shaders in ``shaders/`` read everything per vertex through ``texelFetch``, so there is no fixed
limit on bones or influences (a Rigify rig with B-bone segments has about a thousand palette bones;
Blender's textures allow 16384 rows):

* **Bone texture** — RGBA32F, :data:`BONE_TEXELS` = 10 texels wide, one row per palette bone::

      texel 0..2  rows of the 3x4 LBS deform matrix
      texel 3     real part of the bone's dual quaternion (w, x, y, z)
      texel 4     dual part (w, x, y, z)
      texel 5..7  columns of the (4, 3) scale-pivot matrix (zeros when the palette has no pivot)
      texel 8..9  Auto factor data (tau, sigma_x, sigma_y, sigma_z), (A, H_x, H_y, H_z) of
                  :func:`hybrid_skin.core.autofactor.bone_factor_data` (zeros when not given)

  Rebuilt every frame, O(bones); nothing per vertex.

* **Influence texture** — RG32F, :data:`INFLUENCE_TEXTURE_WIDTH` texels per row, one texel
  ``(bone index, weight)`` per nonzero binding entry, vertex after vertex, each vertex's entries in
  stored order (the order decides the dual quaternion sign rule). Dropping zero-weight entries changes
  nothing: a zero weight adds exactly zero to every sum, and the sign test of the entry after it sees the
  same running sum. Bone indices are stored as floats, exact below 2**24.

* **Per-vertex attributes** — ``span = (offset, count)`` int32 into the influence texture and the
  ``influence`` (mask × deformed) float32 of the binding; for Auto's round profiles, the vertex's rest data
  ``(x, y, z, r^2)`` of :func:`hybrid_skin.core.autofactor.vertex_geometry` (a vec4, uploaded per bind).

``unpack_*`` functions invert the packing; tests use them to check the layout without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .skinning import BonePalette, SkinBinding

__all__ = [
    "AUTO_TEXEL",
    "AUTO_TEXELS",
    "BONE_TEXELS",
    "INFLUENCE_TEXTURE_WIDTH",
    "InfluenceLayout",
    "pack_bone_texture",
    "pack_influences",
    "unpack_bone_texture",
    "unpack_auto_bone_data",
    "unpack_influences",
]

#: Texels per bone row in the bone texture (3 matrix rows, real, dual, 3 pivot columns, 2 of Auto data).
BONE_TEXELS = 10
#: First texel of the Auto factor data in a bone row: ``(tau, sigma_xyz)``, then ``(A, H_xyz)``.
AUTO_TEXEL = 8
#: Texels of Auto data per bone (``autofactor.BONE_DATA_WIDTH`` floats).
AUTO_TEXELS = 2
#: Width at which the influence texture wraps; rows needed = ceil(entries / width).
INFLUENCE_TEXTURE_WIDTH = 4096
#: Float32 represents every integer up to this exactly (bone indices are stored as floats).
_FLOAT_EXACT_INT = 2**24


@dataclass(frozen=True)
class InfluenceLayout:
    """Packed influences of one binding.

    texels: ``(rows, width, 2)`` float32 texture data, ``(bone index, weight)`` per entry, zero padded.
    span: ``(N, 2)`` int32 ``(offset, count)`` per vertex into the flattened texels.
    influence: ``(N,)`` float32, copied from the binding.
    entry_count: number of real (nonzero) entries.
    """

    texels: np.ndarray
    span: np.ndarray
    influence: np.ndarray
    entry_count: int

    @property
    def width(self) -> int:
        return int(self.texels.shape[1])

    @property
    def height(self) -> int:
        return int(self.texels.shape[0])


def pack_bone_texture(palette: BonePalette, auto_bone_data: np.ndarray | None = None) -> np.ndarray:
    """Palette → ``(B, BONE_TEXELS, 4)`` float32 C-contiguous texture data (at least one row).

    ``auto_bone_data``: ``(B, 8)`` per-bone Auto data of ``autofactor.bone_factor_data`` for the shader's
    Auto factor, or ``None`` (its texels stay zero).
    """
    b = palette.bone_count
    out = np.zeros((max(b, 1), BONE_TEXELS, 4), dtype=np.float32)
    if auto_bone_data is not None:
        width = 4 * AUTO_TEXELS
        if np.shape(auto_bone_data) != (b, width):
            raise ValueError(f"auto_bone_data needs shape ({b}, {width}), not {np.shape(auto_bone_data)}")
        out[:b, AUTO_TEXEL : AUTO_TEXEL + AUTO_TEXELS, :] = np.reshape(auto_bone_data, (b, AUTO_TEXELS, 4))
    if b == 0:
        return out
    out[:b, 0:3, :] = palette.matrices
    out[:b, 3, :] = palette.real
    out[:b, 4, :] = palette.dual
    if palette.pivot is not None:
        # pivot is (B, 4, 3): texel 5 + j holds column j, so dual += sum_j texel[5 + j] * p[j].
        out[:b, 5:8, :] = np.swapaxes(palette.pivot, 1, 2)
    return out


def unpack_bone_texture(texels: np.ndarray, bone_count: int) -> BonePalette:
    """Inverse of :func:`pack_bone_texture` for the palette (``pivot`` is ``None`` when all pivot texels
    are zero); :func:`unpack_auto_bone_data` reads the AUTO texel."""
    t = np.asarray(texels, dtype=np.float32)[:bone_count]
    pivot = np.ascontiguousarray(np.swapaxes(t[:, 5:8, :], 1, 2))
    return BonePalette(
        np.ascontiguousarray(t[:, 0:3, :]),
        np.ascontiguousarray(t[:, 3, :]),
        np.ascontiguousarray(t[:, 4, :]),
        pivot if np.any(pivot) else None,
    )


def unpack_auto_bone_data(texels: np.ndarray, bone_count: int) -> np.ndarray:
    """``(B, 8)`` Auto factor data of :func:`pack_bone_texture` (zeros when none was packed)."""
    auto = np.asarray(texels, dtype=np.float32)[:bone_count, AUTO_TEXEL : AUTO_TEXEL + AUTO_TEXELS, :]
    return np.ascontiguousarray(auto.reshape(bone_count, 4 * AUTO_TEXELS))


def pack_influences(binding: SkinBinding, width: int = INFLUENCE_TEXTURE_WIDTH) -> InfluenceLayout:
    """Binding → influence texture data and per-vertex spans (vectorised, O(N·K))."""
    weights = np.asarray(binding.weights, dtype=np.float32)
    bones = np.asarray(binding.bone_indices)
    n = binding.vertex_count
    keep = weights != 0.0
    counts = keep.sum(axis=1).astype(np.int64)
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    total = int(counts.sum())
    if total >= 2**31:
        raise ValueError(f"{total} influence entries do not fit 32-bit offsets")
    kept_bones = bones[keep]  # row-major boolean indexing keeps vertex order, then stored order
    if kept_bones.size and (kept_bones.min() < 0 or kept_bones.max() >= _FLOAT_EXACT_INT):
        raise ValueError(
            f"bone indices must lie in [0, {_FLOAT_EXACT_INT}), got {kept_bones.min()}..{kept_bones.max()}"
        )
    rows = max(1, -(-total // width))
    flat = np.zeros((rows * width, 2), dtype=np.float32)
    flat[:total, 0] = kept_bones
    flat[:total, 1] = weights[keep]
    span = np.ascontiguousarray(np.stack([offsets, counts], axis=1), dtype=np.int32)
    return InfluenceLayout(
        texels=flat.reshape(rows, width, 2),
        span=span,
        influence=np.ascontiguousarray(binding.influence, dtype=np.float32),
        entry_count=total,
    )


def unpack_influences(layout: InfluenceLayout) -> SkinBinding:
    """Inverse of :func:`pack_influences`, padded to the largest count with zero-weight entries on bone 0."""
    flat = layout.texels.reshape(-1, 2)
    offsets, counts = layout.span[:, 0].astype(np.int64), layout.span[:, 1].astype(np.int64)
    k = max(1, int(counts.max(initial=0)))
    slot = np.arange(k)
    valid = slot[None, :] < counts[:, None]
    index = np.where(valid, offsets[:, None] + slot[None, :], 0)
    bones = np.where(valid, flat[index, 0], 0.0).astype(np.int32)
    weights = np.where(valid, flat[index, 1], 0.0).astype(np.float32)
    return SkinBinding(bones, weights, layout.influence.copy())
