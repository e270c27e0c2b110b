"""numpy decoders: the CPU reference for the GLSL in ``shaders/animtex_*.glsl``.

They read the texture the way a shader does - ``texelFetch`` of float channels, ``offset + scale *
channel`` in float32, linear interpolation between the two stored frames around the sample - so
comparing them with ground truth measures exactly what playback will show.

Samples are fractional frame indices within a clip (``Clip.sample_at_time`` converts seconds);
looping clips wrap and others clamp, via :func:`.layout.frame_pair` and the guard band.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..dualquat import (
    dual_quaternion_to_matrix,
    quaternion_from_matrix,
    quaternion_multiply,
    quaternion_to_matrix,
)
from ..skinning import BonePalette
from ..small_linalg import unit
from .layout import Kind, frame_pair
from .quantize import channel_values, decode_channels
from .texture import AnimationTexture

__all__ = [
    "BoneFrames",
    "UNIT_SCALE_TOLERANCE",
    "bone_frame_palette",
    "bone_tangents",
    "clip_index",
    "decode_bone_frames",
    "decode_values",
    "decode_vertex_frames",
    "decode_vertex_tangents",
    "finish_tangents",
    "frame_values",
    "lerp_values",
    "read_item_texels",
    "skin_with_bone_frames",
    "stream_vertex_frames",
    "tangents_from_values",
    "vertex_from_values",
]


def clip_index(texture: AnimationTexture, clip: int | str) -> int:
    """Clip number from an index or a clip name."""
    if isinstance(clip, str):
        names = [c.name for c in texture.clips]
        if clip not in names:
            raise KeyError(f"no clip {clip!r}; clips are {names}")
        return names.index(clip)
    if not 0 <= clip < len(texture.clips):
        raise IndexError(f"clip {clip} out of range 0..{len(texture.clips) - 1}")
    return int(clip)


def read_item_texels(
    channels: np.ndarray,
    texture: AnimationTexture,
    clip: int,
    frames: np.ndarray,
    items: np.ndarray | None = None,
) -> np.ndarray:
    """Raw sampler channels ``(S, N, T, 4)`` of ``items`` at clip-local ``frames`` (guard band allowed).

    Whole frame bands are sliced and reshaped (a band is ``rows_per_frame`` rows of ``items_per_row``
    items of ``T`` texels), which is the layout formula applied to every item at once.
    """
    lay = texture.layout
    rows = lay.frame_rows(clip, np.atleast_1d(frames))[:, None] + np.arange(lay.rows_per_frame)
    band = channels[rows, : lay.data_width]  # (S, R, P * T, 4)
    per_item = band.reshape(rows.shape[0], -1, lay.texels_per_item, 4)[:, : lay.item_count]
    return per_item if items is None else per_item[:, np.asarray(items)]


def decode_values(
    texture: AnimationTexture,
    clip: int | str,
    samples: np.ndarray | float,
    channels: np.ndarray | None = None,
) -> np.ndarray:
    """Interpolated decoded texel values ``(S, N, T, 4)`` float32 at fractional ``samples`` ``(S,)``.

    Without ``channels`` only the needed frame bands of ``texture.pixels`` are converted to sampler
    channels (elementwise, so the values are those of ``texture.channels()``, at a fraction of the
    memory). Samples on stored frames skip the second fetch: ``v0 + 0 * (v1 - v0)`` is ``v0``.
    """
    return _interpolated(texture, clip_index(texture, clip), samples, channels, 4)


def frame_values(
    texture: AnimationTexture,
    clip: int,
    frames: np.ndarray,
    channels: np.ndarray | None = None,
    count: int = 4,
) -> np.ndarray:
    """Decoded values ``(S, N, T, count)`` float32 of the first ``count`` channels at whole clip-local
    ``frames`` (guard band allowed): :func:`decode_values` without interpolation, for callers that
    decode each stored frame once and interpolate between them with :func:`lerp_values`.
    """
    source = texture.pixels if channels is None else np.asarray(channels, dtype=np.float32)
    texels = read_item_texels(source, texture, clip, frames)[..., :count]
    if channels is None:
        texels = channel_values(texels, texture.precision)
    return decode_channels(texels, texture.decode_offset[..., :count], texture.decode_scale[..., :count])


def lerp_values(v0: np.ndarray, v1: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``v0 + alpha * (v1 - v0)`` per sample in float32, as the shaders interpolate; overwrites ``v1``."""
    v1 -= v0
    v1 *= np.asarray(alpha, dtype=np.float32).reshape((-1,) + (1,) * (v1.ndim - 1))
    v1 += v0
    return v1


def _interpolated(
    texture: AnimationTexture, clip: int, samples: np.ndarray | float, channels: np.ndarray | None, count: int
) -> np.ndarray:
    c = texture.clips[clip]
    f0, f1, alpha = frame_pair(c.frame_count, c.loop, np.atleast_1d(samples))
    v0 = frame_values(texture, clip, f0, channels, count)
    if not np.any(alpha):
        return v0
    return lerp_values(v0, frame_values(texture, clip, f1, channels, count), alpha)


def vertex_from_values(values: np.ndarray, rest_positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decoded (interpolated) ``VERTEX`` texel values ``(..., N, 2, 3+)`` → positions ``rest + offset``
    and renormalised normals ``(..., N, 3)`` float32 (a lerp of unit vectors is shorter than one)."""
    rest = np.asarray(rest_positions, dtype=np.float32)
    offsets = values[..., 0, :3]
    positions = np.empty(np.broadcast(rest, offsets).shape, dtype=np.float32)
    for c in range(3):  # per component, as in per_vector: the slots interleave in values
        np.add(rest[..., c], offsets[..., c], out=positions[..., c])
    return positions, unit(values[..., 1, :3])


def finish_tangents(values: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Decoded (interpolated) tangent values ``(..., N, 4)`` and the decoded ``normals`` → ``(..., N, 4)``
    float32: the tangent made perpendicular to the normal and unit (zero stays zero), and the bitangent sign
    ``±1`` (``bitangent = sign · cross(normal, tangent)``), as ``animtex_tangent_finish``."""
    t = values[..., :3].astype(np.float32)
    n = np.asarray(normals, dtype=np.float32)
    t = t - np.sum(t * n, axis=-1, keepdims=True) * n
    sign = np.where(values[..., 3:4] < 0, np.float32(-1), np.float32(1))
    return np.concatenate([unit(t), sign], axis=-1).astype(np.float32)


def tangents_from_values(values: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """:func:`finish_tangents` of the tangent slot of ``VERTEX`` texel values ``(..., N, 3, 4)``."""
    return finish_tangents(values[..., 2, :], normals)


def decode_vertex_tangents(
    texture: AnimationTexture,
    clip: int | str,
    samples: np.ndarray | float,
    channels: np.ndarray | None = None,
) -> np.ndarray:
    """``VERTEX`` texture with tangents (``texels_per_item`` 3) → ``(S, N, 4)`` tangents and signs at
    fractional ``samples`` (:func:`tangents_from_values` of the interpolated values)."""
    if texture.kind is not Kind.VERTEX or texture.layout.texels_per_item != 3:
        raise ValueError("decode_vertex_tangents needs a VERTEX texture that stores tangents")
    values = _interpolated(texture, clip_index(texture, clip), samples, channels, 4)
    return tangents_from_values(values, unit(values[..., 1, :3]))


def decode_vertex_frames(
    texture: AnimationTexture,
    rest_positions: np.ndarray,
    clip: int | str,
    samples: np.ndarray | float,
    channels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``VERTEX`` texture → ``(positions, normals)`` ``(S, N, 3)`` float32 at fractional ``samples``.

    Positions are ``rest + offset``; normals are renormalised after interpolation (a lerp of unit
    vectors is shorter than one). ``channels`` lets a caller pass pixels read back from a file.
    Only the RGB channels are decoded: alpha carries nothing in a ``VERTEX`` texture.
    """
    if texture.kind is not Kind.VERTEX:
        raise ValueError(f"decode_vertex_frames needs a VERTEX texture, got {texture.kind.value}")
    values = _interpolated(texture, clip_index(texture, clip), samples, channels, 3)
    return vertex_from_values(values, rest_positions)


def stream_vertex_frames(
    texture: AnimationTexture, rest_positions: np.ndarray, clip: int | str, samples: np.ndarray
) -> Iterator[tuple[str, int, np.ndarray, np.ndarray]]:
    """:func:`decode_vertex_frames` at every stored frame and at fractional ``samples``, one at a time:
    ``("frame", i, positions, normals)`` for frame ``i`` and ``("sample", j, ...)`` for ``samples[j]``.

    Each frame band is decoded once and kept while a sample still interpolates from it, instead of
    two fetches per sample; a sample comes as soon as both its frames are decoded (for ascending
    ``samples``, e.g. the halfway samples of an error report, each band is decoded once). The values
    are those :func:`decode_vertex_frames` gives.
    """
    c = clip_index(texture, clip)
    count = texture.clips[c].frame_count
    f0, f1, alpha = frame_pair(count, texture.clips[c].loop, np.atleast_1d(samples))
    bands: dict[int, np.ndarray] = {}

    def band(frame: int) -> np.ndarray:
        if frame not in bands:
            for old in [b for b in bands if b < frame - 1]:
                del bands[old]
            bands[frame] = frame_values(texture, c, np.array([frame]), count=3)[0]
        return bands[frame]

    j = 0
    for frame in range(count + 1):  # the extra pass: samples reaching into the guard band
        if frame < count:
            yield ("frame", frame, *vertex_from_values(band(frame), rest_positions))
        while j < len(f1) and (f1[j] <= frame or frame == count):
            v = band(int(f0[j]))
            if alpha[j]:
                v = lerp_values(v, band(int(f1[j])).copy(), alpha[j : j + 1])
            yield ("sample", j, *vertex_from_values(v, rest_positions))
            j += 1


@dataclass(frozen=True)
class BoneFrames:
    """Decoded bones at ``S`` samples.

    matrices: ``(S, B, 4, 4)`` skinning matrices ``[A | t]``, the LBS input.
    real, dual: ``(S, B, 4)`` unit dual quaternion of the rigid part ``[R | u - R c]`` in
        :mod:`..dualquat`'s convention ``dual = 0.5 * (0, t) * real``: the DQS input.
    scales: ``(S, B)`` uniform scale ``s`` applied about the pivot before the rigid part, so that
        ``matrices ≈ [s R | u - s R c]`` (exact for rigid and uniformly scaled bones).
    pivots: ``(B, 3)`` pivot ``c`` of each bone.

    ``BONE_DQ`` stores ``real`` and ``scales``; for ``BONE_MATRIX`` they are derived from ``A`` the
    way the shader does it (quaternion of the column-normalised ``A``, mean column length), so both
    kinds feed the same hybrid skinning.
    """

    matrices: np.ndarray
    real: np.ndarray
    dual: np.ndarray
    scales: np.ndarray
    pivots: np.ndarray


def decode_bone_frames(
    texture: AnimationTexture,
    clip: int | str,
    samples: np.ndarray | float,
    channels: np.ndarray | None = None,
) -> BoneFrames:
    """Bone texture → :class:`BoneFrames` at fractional ``samples``.

    Matrix textures interpolate the linear part and the pivot position entrywise (the thesis's lerp);
    dual quaternion textures lerp and renormalise the rotation, which is why they avoid the
    thesis's low-sample-rate "bobbing" (Johansson 2021, §4.10).
    """
    if texture.kind is Kind.VERTEX:
        raise ValueError("decode_bone_frames needs a BONE_MATRIX or BONE_DQ texture")
    v = decode_values(texture, clip, samples, channels).astype(np.float64)
    pivots = np.asarray(texture.bone_pivots, dtype=np.float64)
    if texture.kind is Kind.BONE_MATRIX:
        linear, moved = v[..., :3, :3], v[..., :3, 3]
        real = quaternion_from_matrix(linear)
        scales = np.linalg.norm(linear, axis=-2).mean(axis=-1)
        rotation = quaternion_to_matrix(real)
    else:
        real = unit(v[..., 0, :])
        rotation = quaternion_to_matrix(real)
        moved, scales = v[..., 1, :3], v[..., 1, 3]
        linear = scales[..., None, None] * rotation
    rigid_t = moved - np.einsum("sbij,bj->sbi", rotation, pivots)
    dual = 0.5 * quaternion_multiply(np.concatenate([np.zeros(rigid_t.shape[:-1] + (1,)), rigid_t], -1), real)
    matrices = np.zeros(v.shape[:2] + (4, 4))
    matrices[..., 3, 3] = 1.0
    matrices[..., :3, :3] = linear
    matrices[..., :3, 3] = moved - np.einsum("sbij,bj->sbi", linear, pivots)
    f32 = np.float32
    return BoneFrames(
        matrices.astype(f32), real.astype(f32), dual.astype(f32), scales.astype(f32), pivots.astype(f32)
    )


def _hybrid_rows(
    frames: BoneFrames, p: np.ndarray, bone_indices: np.ndarray, weights: np.ndarray, deform_factor
) -> np.ndarray:
    """Each sample's and vertex's hybrid matrix rows ``(S, N, 3, 4)`` (:func:`skin_with_bone_frames`)."""
    idx = np.asarray(bone_indices, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    mats = frames.matrices.astype(np.float64)[:, idx, :3, :]  # (S, N, K, 3, 4)
    real = frames.real.astype(np.float64)[:, idx]  # (S, N, K, 4)
    offset = (frames.scales.astype(np.float64)[:, idx, None] - 1.0) * (p[:, None] - frames.pivots[idx])
    zeros = np.zeros(offset.shape[:-1] + (1,))
    dual = frames.dual.astype(np.float64)[:, idx] + 0.5 * quaternion_multiply(
        real, np.concatenate([zeros, offset], -1)
    )
    linear = np.einsum("nk,snkij->snij", w, mats)
    real_sum = w[None, :, 0, None] * real[:, :, 0]
    dual_sum = w[None, :, 0, None] * dual[:, :, 0]
    for k in range(1, idx.shape[1]):
        wk = np.where(np.einsum("snc,snc->sn", real_sum, real[:, :, k]) < 0, -w[None, :, k], w[None, :, k])
        real_sum += wk[..., None] * real[:, :, k]
        dual_sum += wk[..., None] * dual[:, :, k]
    f = np.asarray(deform_factor, dtype=np.float64)
    if f.ndim:  # per vertex (N,) or per sample and vertex (S, N): Auto
        f = np.broadcast_to(f, linear.shape[:2])[..., None, None]
    m = (1.0 - f) * linear + f * dual_quaternion_to_matrix(real_sum, dual_sum)[..., :3, :]
    return m


def bone_tangents(
    frames: BoneFrames,
    positions: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    deform_factor: float,
    normals: np.ndarray,
    tangents: np.ndarray,
) -> np.ndarray:
    """Rest ``tangents`` ``(N, 4)`` (xyz and bitangent sign) turned as ``shaders/animtex_bone.glsl``'s
    ``animtex_apply_tangent`` turns them: ``M t`` with the hybrid matrix of :func:`skin_with_bone_frames`,
    made perpendicular to that function's skinned normal and unit, the sign kept; ``(S, N, 4)`` float32."""
    p = np.asarray(positions, dtype=np.float64)
    m = _hybrid_rows(frames, p, bone_indices, weights, deform_factor)
    _, skinned = skin_with_bone_frames(frames, positions, bone_indices, weights, deform_factor, normals)
    t = np.asarray(tangents, dtype=np.float64)
    turned = np.einsum("snij,nj->sni", m[..., :3], t[:, :3])
    n = skinned.astype(np.float64)
    turned -= np.sum(turned * n, -1, keepdims=True) * n
    sign = np.broadcast_to(np.where(t[:, 3:] < 0, -1.0, 1.0), turned.shape[:-1] + (1,))
    return np.concatenate([unit(turned), sign], -1).astype(np.float32)


def skin_with_bone_frames(
    frames: BoneFrames,
    positions: np.ndarray,
    bone_indices: np.ndarray,
    weights: np.ndarray,
    deform_factor: float,
    normals: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Hybrid skinning with decoded bones: the CPU reference of ``shaders/animtex_bone.glsl``.

    Per vertex ``p`` (influences ``(N, K)`` in stored order, weights normalised)::

        L = sum_k w_k [A_k | t_k]                                   linear blend
        dual_k(p) = dual_k + 0.5 * real_k * (0, (s_k - 1) (p - c_k))  scale about the pivot, folded
        D = sum_k ±w_k (real_k, dual_k(p))                          Blender's running-sum sign rule
        M = (1 - f) L + f rows(D)                                   the hybrid, f = deform_factor
        position = M p,   normal = normalise(cofactor(M) n)

    Folding the scale into the dual part at the vertex is Blender's Preserve Volume treatment of
    scaled bones (see :mod:`..dualquat`): with pivots at the bones' rest heads this equals
    :func:`..skinning.skin` for rigid and uniformly scaled bones. ``deform_factor``: one number, or per
    vertex ``(N,)`` or per sample and vertex ``(S, N)`` (Auto, :func:`.auto.texture_factors`).
    Returns ``(S, N, 3)`` float32 positions and normals (``None`` without ``normals``).
    """
    p = np.asarray(positions, dtype=np.float64)
    m = _hybrid_rows(frames, p, bone_indices, weights, deform_factor)
    out_p = np.einsum("snij,nj->sni", m[..., :3], p) + m[..., 3]
    if normals is None:
        return out_p.astype(np.float32), None
    r0, r1, r2 = m[..., 0, :3], m[..., 1, :3], m[..., 2, :3]
    n = np.asarray(normals, dtype=np.float64)[None]
    cof = np.stack(
        [
            np.sum(np.cross(r1, r2) * n, -1),
            np.sum(np.cross(r2, r0) * n, -1),
            np.sum(np.cross(r0, r1) * n, -1),
        ],
        -1,
    )
    return out_p.astype(np.float32), unit(cof).astype(np.float32)


#: Decoded bone scales this close to 1 are a rigid bone's 1 after float32 rounding (the encoder's
#: least-squares scale of float32 matrices, decoded through the channel's range: 1 ± 1.2e-7 is usual).
#: The pivot term such a scale adds moves a vertex by at most this times its distance from the pivot,
#: within the float32 rounding of the skin itself (:func:`.verify.encoding_bound` allows 2^-20 of the
#: coordinates for it); as 1 the bone skips the pivot path (1.6x the cost of a rigid bone's skin).
UNIT_SCALE_TOLERANCE = 2.0 * float(np.finfo(np.float32).eps)


def bone_frame_palette(frames: BoneFrames, sample: int) -> BonePalette:
    """One decoded sample as a :class:`..skinning.BonePalette`, so :func:`..skinning.skin` (float32,
    chunked, threaded) computes what :func:`skin_with_bone_frames` does, about 20× faster.

    The scale about the pivot is affine in the vertex, ``dual_k(p) = dual_k + F_k (p - c_k)`` with
    ``F_k = 0.5 (s_k - 1) [real_k * (0, ·)]`` (4x3), which is the palette's pivot form: dual part
    ``dual_k - F_k c_k`` and pivot term ``F_k`` (``None`` when every bone has scale 1). Scales within
    :data:`UNIT_SCALE_TOLERANCE` of 1 count as 1.
    """
    real = frames.real[sample].astype(np.float64)
    dual = frames.dual[sample].astype(np.float64)
    scales = frames.scales[sample].astype(np.float64)
    pivot = None
    scaled = np.abs(scales - 1.0) > UNIT_SCALE_TOLERANCE
    if scaled.any():
        basis = np.eye(4)[1:]  # pure quaternions (0, e_i)
        fold = np.stack([quaternion_multiply(real, e) for e in basis], -1)  # (B, 4, 3): real * (0, ·)
        fold *= np.where(scaled, 0.5 * (scales - 1.0), 0.0)[:, None, None]
        dual = dual - np.einsum("bij,bj->bi", fold, frames.pivots.astype(np.float64))
        pivot = np.ascontiguousarray(fold, dtype=np.float32)
    f32 = np.float32
    return BonePalette(
        np.ascontiguousarray(frames.matrices[sample, :, :3, :], dtype=f32),
        np.ascontiguousarray(real, dtype=f32),
        np.ascontiguousarray(dual, dtype=f32),
        pivot,
    )
