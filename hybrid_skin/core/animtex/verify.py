"""Error report of an animation texture bake: the texture decoded as the shaders do, against the truth.

Numpy only: the Blender side (``hybrid_skin.animtex``) hands in the baked meshes as :class:`BakedPart`
(any object with these fields) and the samples it took (:mod:`.samples`).

Owns: decoding a texture back to positions and normals per mesh, the truth's bounding-box diagonal in
scene units, the bound quantisation alone allows (:func:`quantisation_bound`), and the sidecar's
``error_report`` over every stored and halfway frame (:class:`ReportStream`, fed one sample at a time, so
a bake keeps no pose for it; :func:`bake_report` for samples at hand). Frames stream through
:class:`.report.ErrorAccumulator`: errors
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
    frame_values,
    lerp_values,
    vertex_from_values,
)
from .layout import Kind, frame_pair
from .quantize import error_bound
from .report import ErrorAccumulator, error_report, normal_angles, position_errors
from .samples import EXTREME_FACTORS, FrameSample, Samples, clip_frames, frame_key
from .texture import AnimationTexture

__all__ = [
    "HALVES",
    "BakedPart",
    "ReportStream",
    "bake_report",
    "decode",
    "encoding_bound",
    "non_rigid_warning",
    "quantisation_bound",
    "scene_diagonal",
]

#: ``non_rigid_residual`` above which a bake warns: Blender's own test for a scaled bone in Preserve
#: Volume (a scale differing from 1 by 1e-4), so float32 noise of a rigid rig stays quiet.
NON_RIGID_WARNING = 1e-4

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
    """Largest position error quantisation alone causes at stored frames, in scene units (see
    :func:`quantisation_bound`), for truth ``sampled`` at once."""
    scale = max(float(np.linalg.norm(s.world[:, :3, :3], 2, axis=(1, 2)).max()) for s in sampled.values())
    largest = max(float(np.abs(s.positions).max()) for s in sampled.values())
    return quantisation_bound(texture, parts, scale, largest)


def quantisation_bound(
    texture: AnimationTexture, parts: list[BakedPart], scale: float, largest: float
) -> float:
    """Largest position error quantisation alone causes at stored frames, in scene units, for meshes whose
    object matrices scale by at most ``scale`` and whose truth's coordinates reach ``largest``.

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
    # float32 skinning and decoding round a few times at the size of the coordinates
    arithmetic = 2.0**-20 * largest * scale
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


#: The two halves of a clip's report: stored frames and the samples halfway between them.
HALVES = ("frames", "mid_frames")


class ReportStream:
    """The sidecar's ``error_report`` of one texture, fed the truth one sample at a time (:meth:`add`), so
    a bake keeps no pose for it: memory stays one sample's, whatever the frames.

    Each sample is decoded as the shaders do and compared with the truth: positions in scene units (the
    mesh-local difference mapped by the mesh's object matrix at that sample) and normals by angle. The
    bounding-box diagonal (the report's 100%) is the truth's over every sample added. Each accumulator
    adds its batches in frame order, stored frames before halfway ones in the overall figures, so the sums
    do not depend on the order samples come in. Bone kinds whose samples carry the truth at
    :data:`EXTREME_FACTORS` are also measured there (``by_deform_factor``): positions are affine in the
    factor, so each decoded sample is skinned once and its two terms are the playback at factors 0 and 1.
    A texture that carries Auto is measured with its runtime Auto factors against the truth skinned with
    the core's (the samples' ``auto_factors``), and ``auto`` bounds the distance between the two factors
    for any runtime that computes them in float32: the runtime's factors without rounding (float64, the
    formula's exact value at the decoded data) to the core's, plus float32's own rounding of them at that
    vertex and sample (``|f32 - f64|``, which a GPU's order of operations changes but does not grow: the
    formula amplifies rounding near a vanishing swing).
    """

    def __init__(
        self,
        texture: AnimationTexture,
        parts: list[BakedPart],
        *,
        bone_factor: float,
        rest_items: np.ndarray | None = None,
        ends: bool = True,
    ):
        self.texture, self.parts, self.bone_factor = texture, parts, bone_factor
        self.bones = texture.kind is not Kind.VERTEX
        self.ends = self.bones and ends
        self.bindings = [_report_binding(p) for p in parts] if self.bones else None
        self.rest = None if self.bones else _vertex_rest(parts, rest_items)
        self.auto = texture.auto is not None
        def halves(keep: bool = True) -> dict[str, ErrorAccumulator]:
            return {name: ErrorAccumulator(keep_batches=keep) for name in HALVES}

        self.errors = [halves(False) for _ in texture.clips]
        self.angles = [halves() for _ in texture.clips]
        self.extreme = [halves() for _ in EXTREME_FACTORS]
        self.factor_errors = halves()
        self.low, self.high = np.full(3, np.inf), np.full(3, -np.inf)
        self.scale = 0.0  # largest object-matrix scale over the samples
        self.largest = 0.0  # largest truth coordinate
        self._bands: dict[tuple[int, int], np.ndarray] = {}  # VERTEX: the last decoded frame bands

    def _band(self, clip: int, frame: int) -> np.ndarray:
        """A VERTEX frame band's decoded values, kept while the next samples still read it: samples added
        in time order decode each band once."""
        key = (clip, int(frame))
        if key not in self._bands:
            if len(self._bands) >= 2:
                del self._bands[next(iter(self._bands))]
            self._bands[key] = frame_values(self.texture, clip, np.array([frame]), count=3)[0]
        return self._bands[key]

    def _decoded(self, clip: int, sample: float) -> tuple:
        """Positions, normals, positions at the extreme factors, Auto factors (float32, float64), as
        :func:`decode` gives them."""
        at = np.array([sample], dtype=np.float64)
        if not self.bones:
            c = self.texture.clips[clip]
            f0, f1, alpha = frame_pair(c.frame_count, c.loop, at)
            values = self._band(clip, f0[0])
            if alpha[0]:
                values = lerp_values(values, self._band(clip, f1[0]).copy(), alpha)
            positions, normals = vertex_from_values(values, self.rest)
            return positions, normals, None, None, None
        skinned = _skinned(
            self.texture, self.parts, self.bindings, clip, at, self.bone_factor, self.ends, self.auto
        )
        return next(iter(skinned))

    def add(self, clip: int, half: str, index: int, truth: FrameSample) -> None:
        """Compare the texture with ``truth`` at stored frame ``index`` of ``clip`` (``half``
        ``"frames"``), or halfway after it (``"mid_frames"``)."""
        sample = float(index) if half == "frames" else index + 0.5
        got_p, got_n, got_ends, got_factors, exact_factors = self._decoded(clip, sample)
        if self.auto:
            if truth.auto_factors is None:
                raise ValueError("the texture carries Auto: the samples need the core's Auto factors")
            rounding = np.abs(got_factors - exact_factors)
            self.factor_errors[half].add(np.abs(exact_factors - truth.auto_factors) + rounding)
        ends = self.ends and truth.extremes is not None
        for i, p in enumerate(self.parts):
            part = slice(p.start, p.stop)
            linear = truth.world[i, :3, :3]
            self.errors[clip][half].add(position_errors(truth.positions[part], got_p[part], linear))
            if ends:
                for index_, acc in enumerate(self.extreme):
                    true_end, got_end = truth.extremes[index_][part], got_ends[index_][part]
                    acc[half].add(position_errors(true_end, got_end, linear))
            self._extend_bounds(truth.positions[part], truth.world[i])
        self.angles[clip][half].add(normal_angles(truth.normals, got_n))

    def _extend_bounds(self, points: np.ndarray, world: np.ndarray) -> None:
        self.largest = max(self.largest, float(np.abs(points).max(initial=0.0)))
        self.scale = max(self.scale, float(np.linalg.norm(world[:3, :3], 2)))
        if not np.array_equal(world, np.eye(4)):
            points = points.astype(np.float64) @ world[:3, :3].T + world[:3, 3]
        # per column: numpy reduces an (N, 3) array along axis 0 ~20x slower
        self.low = np.minimum(self.low, [points[:, k].min() for k in range(3)])
        self.high = np.maximum(self.high, [points[:, k].max() for k in range(3)])

    @property
    def diagonal(self) -> float:
        """Bounding-box diagonal of the truth at every sample added, in scene units."""
        return float(np.linalg.norm(self.high - self.low)) if np.all(self.high >= self.low) else 0.0

    def report(self, diagonal: float | None = None) -> dict:
        """The ``error_report`` (percentages of ``diagonal``, by default :attr:`diagonal`)."""
        diagonal = self.diagonal if diagonal is None else diagonal
        clips = []
        for clip, errors, angles in zip(self.texture.clips, self.errors, self.angles):
            mids = errors["mid_frames"]
            angle = ErrorAccumulator.chain(angles["frames"], angles["mid_frames"])
            clips.append(
                {
                    "name": clip.name,
                    "frames": errors["frames"].stats(diagonal),
                    "mid_frames": mids.stats(diagonal) if mids.count else None,
                    "normal_angle_deg": angle.stats(),
                }
            )
        bound = quantisation_bound(self.texture, self.parts, self.scale, self.largest)
        report = error_report(clips, diagonal=diagonal, encoding_bound=bound)
        if self.auto:
            factors = dict(self.factor_errors)
            factors["overall"] = ErrorAccumulator.chain(*self.factor_errors.values())
            stats = {name: acc.stats() if acc.count else None for name, acc in factors.items()}
            report["auto"] = {"profile": self.texture.auto.profile, "factor": stats}
        if self.ends and any(acc["frames"].count for acc in self.extreme):
            report["by_deform_factor"] = _extreme_stats(self.extreme, diagonal)
            worst = [report["overall"]] + [e["overall"] for e in report["by_deform_factor"]]
            report["any_deform_factor_max"] = max(s["max"] for s in worst if s is not None)
        return report


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
    """The sidecar's ``error_report`` from truth ``sampled`` at every stored frame and halfway sample of
    every clip, all at hand (a :class:`ReportStream` fed them in order; percentages of ``diagonal``)."""
    ends = all(s.extremes is not None for s in sampled.values())
    stream = ReportStream(texture, parts, bone_factor=bone_factor, rest_items=rest_items, ends=ends)
    for ci, clip in enumerate(texture.clips):
        for half, frames in zip(HALVES, clip_frames(clip)):
            for j, frame in enumerate(frames):
                stream.add(ci, half, j, sampled[(ci, frame_key(frame))])
    return stream.report(diagonal)


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
