"""Error report of an animation texture bake: the texture decoded as the shaders do, against the truth.

Numpy only: the Blender side (``hybrid_skin.animtex``) hands in the baked meshes as :class:`BakedPart`
(any object with these fields) and the samples it took (:mod:`.samples`).

Owns: decoding a texture back to positions and normals per mesh (a few samples at a time, to bound
memory; each ``VERTEX`` frame band once, see :func:`.decode.stream_vertex_frames`), the
truth's bounding-box diagonal in scene units, the bound quantisation alone allows
(:func:`encoding_bound`), and the sidecar's ``error_report`` over every stored and halfway frame
(:func:`bake_report`). Frames stream through :class:`.report.ErrorAccumulator`: errors
are the mesh-local differences mapped by each mesh's object matrix at the sampled frame (translation
cancels), so no frame is ever moved to scene space as a whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np

from ..skinning import SkinBinding, skin, skin_with_ends
from ..small_linalg import squared_lengths
from .auto import decode_auto, texture_factors
from .decode import (
    bone_frame_palette,
    decode_bone_frames,
    decode_vertex_frames,
    stream_vertex_frames,
)
from .layout import Kind
from .quantize import error_bound
from .report import ErrorAccumulator, error_report, mid_samples, normal_angles, position_errors
from .samples import EXTREME_FACTORS, Samples, clip_frames, frame_key
from .texture import AnimationTexture

__all__ = [
    "DECODE_CHUNK",
    "BakedPart",
    "bake_report",
    "decode",
    "encoding_bound",
    "non_rigid_warning",
    "scene_diagonal",
]

#: ``non_rigid_residual`` above which a bake warns: Blender's own test for a scaled bone in Preserve
#: Volume (a scale differing from 1 by 1e-4), so float32 noise of a rigid rig stays quiet.
NON_RIGID_WARNING = 1e-4

#: Vertices x samples decoded at once for the error report (bounds the decoders' working memory).
DECODE_CHUNK = 1 << 18


class BakedPart(Protocol):
    """One baked mesh: its own coordinates and normals, its slice ``start:stop`` of the concatenated
    items, (bone kinds) its 4 palette indices and weights per vertex and, where the texture carries Auto,
    each vertex's Auto rest data (:func:`..autofactor.vertex_geometry`)."""

    base: np.ndarray
    normals: np.ndarray
    start: int
    stop: int
    bone_indices: np.ndarray | None
    bone_weights: np.ndarray | None
    auto_rest: np.ndarray | None


def scene_diagonal(parts: list[BakedPart], sampled: Samples) -> float:
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


def _report_binding(part: BakedPart) -> SkinBinding:
    return SkinBinding(
        np.ascontiguousarray(part.bone_indices, dtype=np.int32),
        np.ascontiguousarray(part.bone_weights, dtype=np.float32),
        np.ones(len(part.base), np.float32),
    )


def decode(
    texture: AnimationTexture,
    parts: list[BakedPart],
    clip: int,
    samples: np.ndarray,
    bone_factor: float,
    rest_items: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (mesh-local) and normals ``(S, N, 3)`` float32 as playback shows them at ``samples``.

    ``rest_items``: a ``VERTEX`` texture's rest position per item where it has more items than the
    parts have vertices (split normals, :mod:`.split`); the parts' vertices otherwise.

    Bone kinds skin each decoded sample with :func:`..skinning.skin` on the palette of
    :func:`.decode.bone_frame_palette`: the same hybrid formulas as the shader's
    reference :func:`.decode.skin_with_bone_frames`, in float32 like the GPU; a texture that carries
    Auto is skinned with its runtime Auto factors (:func:`.auto.texture_factors`), ``bone_factor`` unused.
    """
    samples = np.atleast_1d(np.asarray(samples, dtype=np.float64))
    if texture.kind is Kind.VERTEX:
        return decode_vertex_frames(texture, _vertex_rest(parts, rest_items), clip, samples)
    bindings = [_report_binding(p) for p in parts]
    skinned = list(_skinned(texture, parts, bindings, clip, samples, bone_factor))
    return np.stack([s[0] for s in skinned]), np.stack([s[1] for s in skinned])


def _skinned(
    texture: AnimationTexture,
    parts: list[BakedPart],
    bindings: list[SkinBinding],
    clip: int,
    samples: np.ndarray,
    bone_factor: float,
    ends: bool = False,
    exact: bool = False,
) -> Iterator[tuple[np.ndarray, ...]]:
    """Positions and normals ``(N, 3)`` of all parts at each of ``samples`` of a bone texture (one
    part: :func:`..skinning.skin`'s own float32 arrays, not copied); ``ends``: also the positions at
    :data:`.samples.EXTREME_FACTORS` ``(2, N, 3)`` from the same blend (else ``None``); for a texture
    that carries Auto, the runtime's Auto factors ``(N,)`` it skinned with (float32, as a GPU computes
    them; else ``None``) and, with ``exact``, the same factors computed in float64 (else ``None``)."""
    frames = decode_bone_frames(texture, clip, samples)
    auto_data = decode_auto(texture, clip, samples) if texture.auto is not None else None
    for s in range(len(samples)):
        palette = bone_frame_palette(frames, s)
        factors = [bone_factor] * len(parts)
        exact_factors = None
        if auto_data is not None:
            factors = [
                texture_factors(texture, auto_data[s : s + 1], p.bone_indices, p.bone_weights, p.auto_rest)[0]
                for p in parts
            ]
            if exact:
                exact_factors = np.concatenate([
                    texture_factors(
                        texture, auto_data[s : s + 1], p.bone_indices, p.bone_weights, p.auto_rest, np.float64
                    )[0]
                    for p in parts
                ])  # fmt: skip
        got = []
        for p, b, f in zip(parts, bindings, factors):
            if ends:
                got.append(skin_with_ends(p.base, b, palette, f, p.normals))
            else:
                got.append((*skin(p.base, b, palette, f, p.normals), None))
        used = None if auto_data is None else (factors[0] if len(parts) == 1 else np.concatenate(factors))
        if len(got) == 1:
            yield (*got[0], used, exact_factors)
        else:
            yield (
                np.concatenate([g[0] for g in got]),
                np.concatenate([g[1] for g in got]),
                np.concatenate([g[2] for g in got], axis=1) if ends else None,
                used,
                exact_factors,
            )


def encoding_bound(texture: AnimationTexture, parts: list[BakedPart], sampled: Samples) -> float:
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
        dist = np.sqrt(squared_lengths(p.base[:, None, :] - texture.bone_pivots[p.bone_indices]))
        per_vertex = (p.bone_weights * (e_lin[p.bone_indices] * dist + e_u[p.bone_indices])).sum(axis=1)
        worst = max(worst, float(per_vertex.max()))
    return worst * scale + arithmetic


def _vertex_rest(parts: list[BakedPart], rest_items: np.ndarray | None) -> np.ndarray:
    if rest_items is not None:
        return rest_items
    return parts[0].base if len(parts) == 1 else np.concatenate([p.base for p in parts])


#: What the report's sample iterators yield: name, index, positions, normals, ends, Auto factors (float32)
#: and the same in float64 (see :func:`_skinned`).
_Decoded = tuple[str, int, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]


def _vertex_samples(
    texture: AnimationTexture, parts: list[BakedPart], clip: int, rest_items: np.ndarray | None = None
) -> Iterator[_Decoded]:
    """``(name, index, positions, normals, None, None, None)`` of a ``VERTEX`` texture at every stored
    frame and every halfway sample, interleaved so that each frame band is decoded once (the values
    :func:`decode` gives)."""
    c = texture.clips[clip]
    base = _vertex_rest(parts, rest_items)
    names = {"frame": "frames", "sample": "mid_frames"}
    for kind, j, positions, normals in stream_vertex_frames(
        texture, base, clip, mid_samples(c.frame_count, c.loop)
    ):
        yield names[kind], j, positions, normals, None, None, None


def _bone_samples(
    texture: AnimationTexture, parts: list[BakedPart], clip: int, bone_factor: float, ends: bool
) -> Iterator[_Decoded]:
    """``(name, index, positions, normals, ends, auto factors, exact auto factors)`` of a bone texture at
    every stored frame, then every halfway sample, a few palettes decoded at a time (``ends``, factors: see
    :func:`_skinned`)."""
    c = texture.clips[clip]
    step = max(1, DECODE_CHUNK // sum(len(p.base) for p in parts))
    bindings = [_report_binding(p) for p in parts]
    for name, samples in (
        ("frames", np.arange(c.frame_count, dtype=np.float64)),
        ("mid_frames", mid_samples(c.frame_count, c.loop)),
    ):
        for at in range(0, len(samples), step):
            chunk = samples[at : at + step]
            exact = texture.auto is not None
            decoded = _skinned(texture, parts, bindings, clip, chunk, bone_factor, ends, exact)
            for j, skinned in enumerate(decoded):
                yield (name, at + j, *skinned)


def _extreme_stats(errors: list[dict[str, ErrorAccumulator]], diagonal: float) -> list[dict]:
    """Bone kinds' ``by_deform_factor``: the error over every stored and halfway sample at each of
    :data:`EXTREME_FACTORS` (decoded and true positions at that factor), ``[{"deform_factor",
    "frames", "mid_frames", "overall"}]``."""
    out = []
    for f, acc in zip(EXTREME_FACTORS, errors):
        stats = {name: e.stats(diagonal) if e.count else None for name, e in acc.items()}
        overall = ErrorAccumulator.chain(acc["frames"], acc["mid_frames"]).stats(diagonal)
        out.append({"deform_factor": f, **stats, "overall": overall})
    return out


def bake_report(
    texture: AnimationTexture,
    parts: list[BakedPart],
    sampled: Samples,
    *,
    diagonal: float,
    bone_factor: float,
    rest_items: np.ndarray | None = None,
) -> dict:
    """The sidecar's ``error_report``: every stored frame and every halfway sample of every clip.

    Samples may come in any order (``VERTEX`` interleaves stored and halfway ones); each accumulator
    still adds its batches in frame order, stored frames before halfway ones, so the sums are the same.
    Bone kinds whose samples carry the truth at :data:`EXTREME_FACTORS` are also measured there
    (``by_deform_factor``): positions are affine in the factor, so each decoded sample is skinned once
    and its two terms are the playback at factors 0 and 1. A texture that carries Auto is measured with
    its runtime Auto factors against the truth skinned with the core's (the samples' ``auto_factors``),
    and ``auto`` bounds the distance between the two factors for any runtime that computes them in float32:
    the runtime's factors without rounding (float64, the formula's exact value at the decoded data) to the
    core's, plus float32's own rounding of them at that vertex and sample (``|f32 - f64|``, which a GPU's
    order of operations changes but does not grow: the formula amplifies rounding near a vanishing swing).
    """
    bones = texture.kind is not Kind.VERTEX
    ends = bones and all(s.extremes is not None for s in sampled.values())
    extreme = [
        {name: ErrorAccumulator(keep_batches=True) for name in ("frames", "mid_frames")}
        for _ in EXTREME_FACTORS
    ]
    auto = texture.auto is not None
    factor_errors = {name: ErrorAccumulator(keep_batches=True) for name in ("frames", "mid_frames")}
    clips = []
    for ci, clip in enumerate(texture.clips):
        frames = dict(zip(("frames", "mid_frames"), clip_frames(clip)))
        errors = {name: ErrorAccumulator() for name in frames}
        angles = {name: ErrorAccumulator(keep_batches=True) for name in frames}
        if bones:
            decoded = _bone_samples(texture, parts, ci, bone_factor, ends)
        else:
            decoded = _vertex_samples(texture, parts, ci, rest_items)
        for name, j, got_p, got_n, got_ends, got_factors, exact_factors in decoded:
            truth = sampled[(ci, frame_key(frames[name][j]))]
            if auto:
                if truth.auto_factors is None:
                    raise ValueError("the texture carries Auto: the samples need the core's Auto factors")
                rounding = np.abs(got_factors - exact_factors)
                factor_errors[name].add(np.abs(exact_factors - truth.auto_factors) + rounding)
            for i, p in enumerate(parts):
                part = slice(p.start, p.stop)
                linear = truth.world[i, :3, :3]
                errors[name].add(position_errors(truth.positions[part], got_p[part], linear))
                if ends:
                    for index, acc in enumerate(extreme):
                        true_end, got_end = truth.extremes[index][part], got_ends[index][part]
                        acc[name].add(position_errors(true_end, got_end, linear))
            angles[name].add(normal_angles(truth.normals, got_n))
        clips.append(
            {
                "name": clip.name,
                "frames": errors["frames"].stats(diagonal),
                "mid_frames": errors["mid_frames"].stats(diagonal) if len(frames["mid_frames"]) else None,
                "normal_angle_deg": ErrorAccumulator.chain(angles["frames"], angles["mid_frames"]).stats(),
            }
        )
    report = error_report(clips, diagonal=diagonal, encoding_bound=encoding_bound(texture, parts, sampled))
    if auto:
        factor_errors["overall"] = ErrorAccumulator.chain(*factor_errors.values())
        stats = {name: acc.stats() if acc.count else None for name, acc in factor_errors.items()}
        report["auto"] = {"profile": texture.auto.profile, "factor": stats}
    if ends:
        report["by_deform_factor"] = _extreme_stats(extreme, diagonal)
        worst = [report["overall"]] + [e["overall"] for e in report["by_deform_factor"]]
        report["any_deform_factor_max"] = max(s["max"] for s in worst if s is not None)
    return report


def non_rigid_warning(texture: AnimationTexture) -> str | None:
    """The bake's warning when the dual quaternions of a bone texture lose non-uniform scale, shear or
    mirroring (``non_rigid_residual`` above :data:`NON_RIGID_WARNING`), else ``None``."""
    residual = texture.non_rigid_residual
    if texture.kind is Kind.VERTEX or residual <= NON_RIGID_WARNING:
        return None
    lost = (
        "BONE_DQ keeps only rotation and uniform scale, at every deform factor"
        if texture.kind is Kind.BONE_DQ
        else "BONE_MATRIX keeps it for LBS (factor 0), but its DQS part keeps only rotation and uniform "
        "scale, so factors above 0 lose it"
    )
    return (
        f"Bones are not rigid (non-uniform scale, shear or mirroring; non_rigid_residual {residual:.3g}): "
        f"{lost} (the error report includes it)"
    )
