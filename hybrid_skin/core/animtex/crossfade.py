"""Cross-fade: two clips (or two times of one clip) played at once and blended by a weight.

The CPU reference of the ``*_crossfade`` functions in ``shaders/animtex_vertex.glsl`` and
``shaders/animtex_bone.glsl`` (and of the engine ports in ``shaders/engines/``). Each side is decoded
exactly as :mod:`.decode` plays one clip (frame pair, guard band, interpolation), then:

* ``VERTEX``: positions ``pa + w (pb - pa)``; normals lerped the same way and renormalised (a lerp of
  unit vectors is shorter than one).
* ``BONE_MATRIX``: each bone's 3x4 matrix lerped entrywise (what the format already does between
  stored frames); the rigid part for DQS is derived from the blended matrix as the decoder does.
* ``BONE_DQ``: each bone's unit dual quaternion blended along the shortest arc (dual quaternion linear
  blending: ``b`` negated when its rotation points away from ``a``'s, summed, normalised and made
  unit), its uniform scale lerped. A blend of rigid motions stays rigid, so a transition keeps volume:
  two rotations about one axis blend to the rotation by the weighted angle
  ``2 atan2((1-w) sin(a/2) + w sin(b/2), (1-w) cos(a/2) + w cos(b/2))`` about the same axis, where a
  matrix lerp would shrink the mesh by ``cos((a-b)/2)`` halfway.

Weight 0 (or less) gives side ``a`` and weight 1 (or more) side ``b`` exactly (the same arrays the
plain decoders return), so a runtime may keep the cross-fade path on permanently.
The blended bones feed :func:`.decode.skin_with_bone_frames` like one clip's bones: the deform factor
(LBS ... DQS) still applies at runtime.
"""

from __future__ import annotations

import numpy as np

from ..dualquat import quaternion_from_matrix, quaternion_multiply, quaternion_to_matrix
from ..small_linalg import unit
from .decode import (
    BoneFrames,
    decode_bone_frames,
    decode_values,
    decode_vertex_frames,
    finish_tangents,
)
from .encode import AnimationTexture
from .layout import Kind

__all__ = [
    "blend_bone_frames",
    "crossfade_bone_frames",
    "crossfade_vertex_frames",
    "crossfade_vertex_tangents",
]


def _weights(weight: np.ndarray | float, count: int) -> np.ndarray:
    """Per-sample weights ``(S,)`` float32 from a scalar or an ``(S,)`` array."""
    w = np.broadcast_to(np.asarray(weight, dtype=np.float32), (count,))
    if not np.all(np.isfinite(w)):
        raise ValueError("cross-fade weights must be finite")
    return w


def _select(w: np.ndarray, a: np.ndarray, b: np.ndarray, blended: np.ndarray) -> np.ndarray:
    """``a`` where ``w <= 0``, ``b`` where ``w >= 1``, else ``blended``: the exact ends of a fade."""
    shape = (-1,) + (1,) * (a.ndim - 1)
    out = np.where((w <= 0).reshape(shape), a, blended)
    return np.where((w >= 1).reshape(shape), b, out)


def crossfade_vertex_frames(
    texture: AnimationTexture,
    rest_positions: np.ndarray,
    clip_a: int | str,
    samples_a: np.ndarray | float,
    clip_b: int | str,
    samples_b: np.ndarray | float,
    weight: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray]:
    """``VERTEX`` texture → ``(positions, normals)`` ``(S, N, 3)`` float32 of clip ``a`` at ``samples_a``
    blended towards clip ``b`` at ``samples_b`` by ``weight`` (scalar or ``(S,)``)."""
    sa, sb = np.broadcast_arrays(np.atleast_1d(samples_a), np.atleast_1d(samples_b))
    pa, na = decode_vertex_frames(texture, rest_positions, clip_a, sa)
    pb, nb = decode_vertex_frames(texture, rest_positions, clip_b, sb)
    w = _weights(weight, len(sa))
    wk = w[:, None, None]
    positions = pa + wk * (pb - pa)  # float32, in the shaders' order of operations
    normals = unit(na + wk * (nb - na))
    return _select(w, pa, pb, positions), _select(w, na, nb, normals)


def crossfade_vertex_tangents(
    texture: AnimationTexture,
    rest_positions: np.ndarray,
    clip_a: int | str,
    samples_a: np.ndarray | float,
    clip_b: int | str,
    samples_b: np.ndarray | float,
    weight: np.ndarray | float,
) -> np.ndarray:
    """Tangents and signs ``(S, N, 4)`` of a ``VERTEX`` texture that stores them, cross-faded as
    ``animtex_vertex_tangent_crossfade`` does: each side's interpolated tangent values lerped by the weight,
    then made perpendicular to the cross-faded normal (:func:`crossfade_vertex_frames`) and unit."""
    va = decode_values(texture, clip_a, samples_a)[..., 2, :]
    vb = decode_values(texture, clip_b, samples_b)[..., 2, :]
    w = _weights(weight, va.shape[0]).reshape(-1, 1, 1)
    mixed = np.where(w <= 0, va, np.where(w >= 1, vb, va + w * (vb - va)))
    faded = crossfade_vertex_frames(texture, rest_positions, clip_a, samples_a, clip_b, samples_b, weight)
    normals = faded[1]
    return finish_tangents(mixed, normals)


def _matrix_bones(matrices: np.ndarray, pivots: np.ndarray) -> BoneFrames:
    """Bones of lerped ``[A | t]`` matrices, with the rigid part derived as the decoder derives it for
    ``BONE_MATRIX`` (quaternion of the column-normalised ``A``, mean column length as the scale)."""
    linear = matrices[..., :3, :3]
    moved = matrices[..., :3, 3] + np.einsum("sbij,bj->sbi", linear, pivots)
    real = quaternion_from_matrix(linear)
    scales = np.linalg.norm(linear, axis=-2).mean(axis=-1)
    rigid_t = moved - np.einsum("sbij,bj->sbi", quaternion_to_matrix(real), pivots)
    return _bone_frames(matrices, real, rigid_t, scales, pivots)


def _dq_bones(real: np.ndarray, dual: np.ndarray, scales: np.ndarray, pivots: np.ndarray) -> BoneFrames:
    """Bones of a (not yet unit) blended dual quaternion and a uniform scale about each pivot."""
    length = np.linalg.norm(real, axis=-1, keepdims=True)
    real = real / length
    dual = dual / length
    dual = dual - real * np.sum(real * dual, axis=-1, keepdims=True)  # unit: real . dual = 0
    conjugate = real * np.array([1.0, -1.0, -1.0, -1.0])
    rigid_t = 2.0 * quaternion_multiply(dual, conjugate)[..., 1:]
    rotation = quaternion_to_matrix(real)
    moved = rigid_t + np.einsum("sbij,bj->sbi", rotation, pivots)
    linear = scales[..., None, None] * rotation
    matrices = np.zeros(real.shape[:-1] + (4, 4))
    matrices[..., 3, 3] = 1.0
    matrices[..., :3, :3] = linear
    matrices[..., :3, 3] = moved - np.einsum("sbij,bj->sbi", linear, pivots)
    return _bone_frames(matrices, real, rigid_t, scales, pivots)


def _bone_frames(matrices, real, rigid_t, scales, pivots) -> BoneFrames:
    zeros = np.zeros(rigid_t.shape[:-1] + (1,))
    dual = 0.5 * quaternion_multiply(np.concatenate([zeros, rigid_t], -1), real)
    f32 = np.float32
    return BoneFrames(
        matrices.astype(f32), real.astype(f32), dual.astype(f32), scales.astype(f32), pivots.astype(f32)
    )


def blend_bone_frames(
    a: BoneFrames, b: BoneFrames, weight: np.ndarray | float, kind: Kind | str
) -> BoneFrames:
    """Bones ``a`` blended towards ``b`` by ``weight`` (scalar or per sample ``(S,)``): matrices lerped for
    ``BONE_MATRIX``, dual quaternions blended along the shortest arc for ``BONE_DQ`` (module docstring)."""
    kind = Kind(kind)
    if kind is Kind.VERTEX:
        raise ValueError("blend_bone_frames needs a BONE_MATRIX or BONE_DQ kind")
    if a.matrices.shape != b.matrices.shape:
        raise ValueError(f"bone frames differ in shape: {a.matrices.shape} and {b.matrices.shape}")
    w = _weights(weight, a.matrices.shape[0])
    wd = w.astype(np.float64)
    pivots = np.asarray(a.pivots, dtype=np.float64)
    if kind is Kind.BONE_MATRIX:
        ma, mb = a.matrices.astype(np.float64), b.matrices.astype(np.float64)
        blended = _matrix_bones(ma + wd[:, None, None, None] * (mb - ma), pivots)
    else:
        ra, rb = a.real.astype(np.float64), b.real.astype(np.float64)
        signed = np.where(np.sum(ra * rb, axis=-1) < 0, -wd[:, None], wd[:, None])[..., None]
        keep = (1.0 - wd)[:, None, None]
        real = keep * ra + signed * rb
        dual = keep * a.dual.astype(np.float64) + signed * b.dual.astype(np.float64)
        sa, sb = a.scales.astype(np.float64), b.scales.astype(np.float64)
        blended = _dq_bones(real, dual, sa + wd[:, None] * (sb - sa), pivots)
    fields = ("matrices", "real", "dual", "scales")
    picked = {f: _select(w, getattr(a, f), getattr(b, f), getattr(blended, f)) for f in fields}
    return BoneFrames(pivots=a.pivots, **picked)


def crossfade_bone_frames(
    texture: AnimationTexture,
    clip_a: int | str,
    samples_a: np.ndarray | float,
    clip_b: int | str,
    samples_b: np.ndarray | float,
    weight: np.ndarray | float,
) -> BoneFrames:
    """Bone texture → :class:`.decode.BoneFrames` of clip ``a`` at ``samples_a`` blended towards clip ``b``
    at ``samples_b`` by ``weight``; skin them with :func:`.decode.skin_with_bone_frames`."""
    sa, sb = np.broadcast_arrays(np.atleast_1d(samples_a), np.atleast_1d(samples_b))
    a = decode_bone_frames(texture, clip_a, sa)
    b = decode_bone_frames(texture, clip_b, sb)
    return blend_bone_frames(a, b, weight, texture.kind)
