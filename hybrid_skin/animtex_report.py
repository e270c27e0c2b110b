"""Error report of an animation texture bake: the texture decoded as the shaders do, against the truth.

Owns: decoding a texture back to positions and normals per mesh (in chunks, to bound memory), moving
mesh-local positions to scene space with each mesh's object matrix at the sampled frame, the truth's
bounding-box diagonal, the bound quantisation alone allows (:func:`encoding_bound`), and the sidecar's
``error_report`` over every stored and halfway frame (:func:`bake_report`). The numbers themselves come
from :mod:`.core.animtex`; the samples from :mod:`.animtex_scene`.
"""

from __future__ import annotations

import numpy as np

from .animtex_scene import FrameSample, MeshPart, clip_frames, stack_samples
from .core.animtex import (
    AnimationTexture,
    Kind,
    clip_errors,
    decode_bone_frames,
    decode_vertex_frames,
    error_bound,
    error_report,
    mid_samples,
)
from .core.animtex.decode import skin_with_bone_frames

#: Vertices x samples decoded at once for the error report (bounds the decoders' working memory).
DECODE_CHUNK = 1 << 18

Samples = dict[tuple[int, float], FrameSample]


def to_scene(parts: list[MeshPart], positions: np.ndarray, world: np.ndarray) -> np.ndarray:
    """Mesh-local ``(S, N, 3)`` → scene space with each part's object matrix ``world (S, P, 4, 4)``
    at the sample's frame: what the viewport shows, so errors and the bounding box are in scene units."""
    out = np.empty(positions.shape, dtype=np.float64)
    for i, p in enumerate(parts):
        m = world[:, i, None]
        out[:, p.start : p.stop] = np.einsum("snij,snj->sni", m[..., :3, :3], positions[:, p.start : p.stop])
        out[:, p.start : p.stop] += m[..., :3, 3]
    return out


def scene_diagonal(parts: list[MeshPart], sampled: Samples) -> float:
    """Bounding-box diagonal of every sampled frame's truth, in scene units."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for sample in sampled.values():
        w = to_scene(parts, sample.positions[None], sample.world[None])[0]
        lo, hi = np.minimum(lo, w.min(0)), np.maximum(hi, w.max(0))
    return float(np.linalg.norm(hi - lo))


def decode(
    texture: AnimationTexture, parts: list[MeshPart], clip: int, samples: np.ndarray, bone_factor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (mesh-local) and normals ``(S, N, 3)`` as playback shows them at ``samples``.

    Samples are decoded a few at a time: the bone decoder's intermediates are ~100 floats per
    vertex and sample, which for a 320k-vertex mesh would otherwise take gigabytes.
    """
    n = sum(len(p.base) for p in parts)
    positions = np.empty((len(samples), n, 3), np.float32)
    normals = np.empty((len(samples), n, 3), np.float32)
    step = max(1, DECODE_CHUNK // n)
    for at in range(0, len(samples), step):
        part = slice(at, at + step)
        if texture.kind is Kind.VERTEX:
            base = np.concatenate([p.base for p in parts])
            positions[part], normals[part] = decode_vertex_frames(texture, base, clip, samples[part])
            continue
        frames = decode_bone_frames(texture, clip, samples[part])
        for p in parts:
            skinned = skin_with_bone_frames(
                frames, p.base, p.bone_indices, p.bone_weights, bone_factor, p.normals
            )
            positions[part, p.start : p.stop], normals[part, p.start : p.stop] = skinned
    return positions, normals


def encoding_bound(texture: AnimationTexture, parts: list[MeshPart], sampled: Samples) -> float:
    """Largest position error quantisation alone causes at stored frames, in scene units.

    VERTEX: the length of the per-axis bound. Bone kinds: first order in the bone errors,
    ``max_v sum_k w_k (e_lin,k |p - c_k| + e_u,k)``, with ``e_lin`` the Frobenius bound of the
    3x3 part (matrix entries, or ``8 e_q + e_s`` for unit quaternions and scale) and ``e_u``
    the length of the translation bound.
    """
    eb = error_bound(
        texture.value_min,
        texture.value_max,
        texture.decode_offset,
        texture.decode_scale,
        texture.precision,
    )
    scale = max(float(np.linalg.norm(s.world[:, :3, :3], 2, axis=(1, 2)).max()) for s in sampled.values())
    # float32 skinning and decoding round a few times at the size of the coordinates
    arithmetic = 2.0**-20 * max(float(np.abs(s.positions).max()) for s in sampled.values()) * scale
    if texture.kind is Kind.VERTEX:
        return float(np.linalg.norm(eb[0, 0, :3])) * scale + arithmetic
    if texture.kind is Kind.BONE_MATRIX:
        e_lin, e_u = np.linalg.norm(eb[:, :, :3], axis=(1, 2)), np.linalg.norm(eb[:, :, 3], axis=1)
    else:
        e_lin = 8.0 * eb[:, 0].max(axis=1) + eb[:, 1, 3]
        e_u = np.linalg.norm(eb[:, 1, :3], axis=1)
    worst = 0.0
    for p in parts:
        dist = np.linalg.norm(p.base[:, None, :] - texture.bone_pivots[p.bone_indices], axis=-1)
        per_vertex = (p.bone_weights * (e_lin[p.bone_indices] * dist + e_u[p.bone_indices])).sum(axis=1)
        worst = max(worst, float(per_vertex.max()))
    return worst * scale + arithmetic


def bake_report(
    texture: AnimationTexture,
    parts: list[MeshPart],
    sampled: Samples,
    *,
    diagonal: float,
    bone_factor: float,
) -> dict:
    """The sidecar's ``error_report``: every stored frame and every halfway sample of every clip."""
    clips = []
    for ci, clip in enumerate(texture.clips):
        stored_frames, mid_frames = clip_frames(clip)
        stored, mids = (
            np.arange(clip.frame_count, dtype=np.float64),
            mid_samples(clip.frame_count, clip.loop),
        )
        frames = [f for f in (stored_frames, mid_frames) if len(f)]
        world = [stack_samples(sampled, ci, f, "world") for f in frames]
        truth = [
            to_scene(parts, stack_samples(sampled, ci, f, "positions"), w) for f, w in zip(frames, world)
        ]
        truth_n = [stack_samples(sampled, ci, f, "normals") for f in frames]
        got = [decode(texture, parts, ci, s, bone_factor) for s in (stored, mids) if len(s)]
        got_p = [to_scene(parts, g[0], w) for g, w in zip(got, world)]
        truth_mid, got_mid = (truth[1], got_p[1]) if len(mids) else (None, None)
        clips.append(
            clip_errors(
                clip.name,
                truth[0],
                got_p[0],
                truth_mid,
                got_mid,
                diagonal=diagonal,
                truth_normals=np.concatenate(truth_n),
                decoded_normals=np.concatenate([g[1] for g in got]),
            )
        )
    return error_report(clips, diagonal=diagonal, encoding_bound=encoding_bound(texture, parts, sampled))
