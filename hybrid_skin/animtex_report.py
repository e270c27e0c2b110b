"""Error report of an animation texture bake: the texture decoded as the shaders do, against the truth.

Owns: decoding a texture back to positions and normals per mesh (a few samples at a time, to bound
memory), the truth's bounding-box diagonal in scene units, the bound quantisation alone allows
(:func:`encoding_bound`), and the sidecar's ``error_report`` over every stored and halfway frame
(:func:`bake_report`). Frames stream through :class:`.core.animtex.report.ErrorAccumulator`: errors
are the mesh-local differences mapped by each mesh's object matrix at the sampled frame (translation
cancels), so no frame is ever moved to scene space as a whole. The numbers themselves come from
:mod:`.core.animtex`; the samples from :mod:`.animtex_scene`.
"""

from __future__ import annotations

import numpy as np

from .animtex_scene import FrameSample, MeshPart, clip_frames, frame_key
from .core.animtex import (
    AnimationTexture,
    Kind,
    decode_bone_frames,
    decode_vertex_frames,
    error_bound,
    error_report,
    mid_samples,
)
from .core.animtex.decode import bone_frame_palette
from .core.animtex.report import ErrorAccumulator, normal_angles, position_errors
from .core.skinning import SkinBinding, skin

#: Vertices x samples decoded at once for the error report (bounds the decoders' working memory).
DECODE_CHUNK = 1 << 18

Samples = dict[tuple[int, float], FrameSample]


def scene_diagonal(parts: list[MeshPart], sampled: Samples) -> float:
    """Bounding-box diagonal of every sampled frame's truth, in scene units."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for sample in sampled.values():
        for i, p in enumerate(parts):
            points = sample.positions[p.start : p.stop]
            m = sample.world[i]
            if not np.array_equal(m, np.eye(4)):
                points = points.astype(np.float64) @ m[:3, :3].T + m[:3, 3]
            # per column: numpy reduces an (N, 3) array along axis 0 ~20x slower
            lo = np.minimum(lo, [points[:, k].min() for k in range(3)])
            hi = np.maximum(hi, [points[:, k].max() for k in range(3)])
    return float(np.linalg.norm(hi - lo))


def _report_binding(part: MeshPart) -> SkinBinding:
    return SkinBinding(
        np.ascontiguousarray(part.bone_indices, dtype=np.int32),
        np.ascontiguousarray(part.bone_weights, dtype=np.float32),
        np.ones(len(part.base), np.float32),
    )


def decode(
    texture: AnimationTexture, parts: list[MeshPart], clip: int, samples: np.ndarray, bone_factor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (mesh-local) and normals ``(S, N, 3)`` float32 as playback shows them at ``samples``.

    Bone kinds skin each decoded sample with :func:`.core.skinning.skin` on the palette of
    :func:`.core.animtex.decode.bone_frame_palette`: the same hybrid formulas as the shader's
    reference :func:`.core.animtex.decode.skin_with_bone_frames`, in float32 like the GPU.
    """
    n = sum(len(p.base) for p in parts)
    samples = np.atleast_1d(np.asarray(samples, dtype=np.float64))
    if texture.kind is Kind.VERTEX:
        base = parts[0].base if len(parts) == 1 else np.concatenate([p.base for p in parts])
        return decode_vertex_frames(texture, base, clip, samples)
    positions = np.empty((len(samples), n, 3), np.float32)
    normals = np.empty((len(samples), n, 3), np.float32)
    frames = decode_bone_frames(texture, clip, samples)
    bindings = [_report_binding(p) for p in parts]
    for s in range(len(samples)):
        palette = bone_frame_palette(frames, s)
        for p, binding in zip(parts, bindings):
            skinned = skin(p.base, binding, palette, bone_factor, p.normals)
            positions[s, p.start : p.stop], normals[s, p.start : p.stop] = skinned
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
    n = sum(len(p.base) for p in parts)
    step = max(1, DECODE_CHUNK // n)
    clips = []
    for ci, clip in enumerate(texture.clips):
        stored_frames, mid_frames = clip_frames(clip)
        stored = np.arange(clip.frame_count, dtype=np.float64)
        mids = mid_samples(clip.frame_count, clip.loop)
        errors = {"frames": ErrorAccumulator(), "mid_frames": ErrorAccumulator()}
        angles = ErrorAccumulator()
        for name, samples, frames in (("frames", stored, stored_frames), ("mid_frames", mids, mid_frames)):
            for at in range(0, len(samples), step):
                got_p, got_n = decode(texture, parts, ci, samples[at : at + step], bone_factor)
                for j, frame in enumerate(frames[at : at + step]):
                    truth = sampled[(ci, frame_key(frame))]
                    for i, p in enumerate(parts):
                        part = slice(p.start, p.stop)
                        linear = truth.world[i, :3, :3]
                        errors[name].add(position_errors(truth.positions[part], got_p[j, part], linear))
                    angles.add(normal_angles(truth.normals, got_n[j]))
        clips.append(
            {
                "name": clip.name,
                "frames": errors["frames"].stats(diagonal),
                "mid_frames": errors["mid_frames"].stats(diagonal) if len(mids) else None,
                "normal_angle_deg": angles.stats(),
            }
        )
    return error_report(clips, diagonal=diagonal, encoding_bound=encoding_bound(texture, parts, sampled))
