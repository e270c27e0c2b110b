"""How far playback strays from the real animation, and the cheapest encoding that stays close.

The thesis could only *look* at its textures beside the ground truth and wished for "a factual
measurement of the error" to pick sample rates (Johansson 2021, §5.2.4). Here the caller decodes at every
stored sample and halfway between samples (where linear interpolation of rotations errs most) and
compares with positions evaluated from the rig at those times. Errors are Euclidean distances per
vertex, in scene units and as a percentage of the animation's bounding-box diagonal, so one
tolerance means the same on a mouse and on a giant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..small_linalg import per_vector, squared_lengths
from .quantize import CHEAPEST_FIRST, Precision, bytes_per_texel

__all__ = [
    "EncodingChoice",
    "ErrorAccumulator",
    "add_oracle_gap",
    "bbox_diagonal",
    "choose_encoding",
    "clip_errors",
    "encoding_candidates",
    "error_report",
    "error_stats",
    "mid_samples",
    "normal_angles",
    "pick_encoding",
    "position_errors",
]


def bbox_diagonal(points: np.ndarray) -> float:
    """Length of the diagonal of the AABB of ``(..., 3)`` points (all frames together)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    return float(np.linalg.norm(p.max(axis=0) - p.min(axis=0)))


def mid_samples(frame_count: int, loop: bool) -> np.ndarray:
    """Fractional samples halfway between stored frames; a loop also checks last → first."""
    n = frame_count if loop else frame_count - 1
    return np.arange(n, dtype=np.float64) + 0.5


class ErrorAccumulator:
    """Running max, mean and count of per-vertex errors, fed one batch (e.g. one frame) at a time.

    The bake's report streams every stored and halfway frame through these instead of stacking all
    frames of a clip, which for a 100k-vertex mesh would be hundreds of megabytes of float64.
    ``keep_batches`` records each batch's ``(max, sum, count)`` for :meth:`chain`.
    """

    def __init__(self, keep_batches: bool = False) -> None:
        self.max, self.total, self.count = 0.0, 0.0, 0
        self.batches: list[tuple[float, float, int]] | None = [] if keep_batches else None

    def add(self, values: np.ndarray) -> None:
        if values.size:
            self._add(float(values.max()), float(values.sum(dtype=np.float64)), int(values.size))

    def _add(self, largest: float, total: float, count: int) -> None:
        self.max = max(self.max, largest)
        self.total += total
        self.count += count
        if self.batches is not None:
            self.batches.append((largest, total, count))

    @classmethod
    def chain(cls, *parts: ErrorAccumulator) -> ErrorAccumulator:
        """One accumulator fed the batches of ``parts`` (made with ``keep_batches``) in order: the same
        float sums as adding them to it directly, whatever order the parts were filled in."""
        out = cls()
        for part in parts:
            for batch in part.batches or ():
                out._add(*batch)
        return out

    def stats(self, diagonal: float | None = None) -> dict[str, Any]:
        """``max``, ``mean``, ``count`` (and with ``diagonal`` both in % of it), as in the sidecar."""
        mean = self.total / self.count if self.count else 0.0
        out: dict[str, Any] = {"max": self.max, "mean": mean}
        if diagonal is not None:
            scale = 100.0 / diagonal if diagonal > 0 else 0.0
            out.update(max_percent=self.max * scale, mean_percent=mean * scale)
        out["count"] = self.count
        return out


def position_errors(truth: np.ndarray, decoded: np.ndarray, linear: np.ndarray | None = None) -> np.ndarray:
    """Per-vertex distances ``|A (decoded - truth)|`` of ``(..., 3)`` arrays, float32.

    ``linear`` is the 3x3 part ``A`` of an affine map applied to both (e.g. mesh → scene space): the
    translation cancels, so the difference is taken where the numbers are (no rounding of two large
    transformed coordinates) and only the small difference is transformed.
    """
    diff = np.subtract(decoded, truth, dtype=np.result_type(truth, decoded, np.float32))
    diff = diff.astype(np.float32, copy=False)
    if linear is not None and not np.array_equal(linear, np.eye(3)):
        diff = diff @ np.asarray(linear, dtype=np.float32).T
    return np.sqrt(squared_lengths(diff))


def normal_angles(truth: np.ndarray, decoded: np.ndarray) -> np.ndarray:
    """Angles in degrees between ``(..., 3)`` directions, float32; 0 where either is zero.

    ``2 asin(|a - b| / 2)`` of the unit vectors is accurate for the tiny angles a good bake has
    (``arccos`` of the dot product is not) and cheaper than ``atan2(|a × b|, a · b)``. Runs once per
    sampled frame of a bake's report, so it works in place on as few temporaries as it can.
    """
    t = np.asarray(truth, dtype=np.float32)
    d = np.asarray(decoded, dtype=np.float32)
    inv_t = np.sqrt(squared_lengths(t))
    inv_d = np.sqrt(squared_lengths(d))
    invalid = ~((inv_t > 0) & (inv_d > 0))  # zero (or NaN) lengths
    with np.errstate(divide="ignore"):
        np.divide(1.0, inv_t, out=inv_t)
        np.divide(1.0, inv_d, out=inv_d)
    inv_t[invalid] = 0.0
    inv_d[invalid] = 0.0
    diff = per_vector(np.multiply, t, inv_t)
    diff -= per_vector(np.multiply, d, inv_d)
    half = np.sqrt(squared_lengths(diff))
    half *= 0.5
    np.minimum(half, 1.0, out=half)
    np.arcsin(half, out=half)
    half *= 2.0
    return np.degrees(half, out=half)


def error_stats(truth: np.ndarray, decoded: np.ndarray, diagonal: float) -> dict[str, Any]:
    """Max and mean per-vertex distance of ``(..., 3)`` arrays, absolute and in % of ``diagonal``."""
    t, d = np.asarray(truth), np.asarray(decoded)
    if t.shape != d.shape or t.shape[-1:] != (3,):
        raise ValueError(f"truth {t.shape} and decoded {d.shape} must be equal (..., 3) arrays")
    acc = ErrorAccumulator()
    acc.add(position_errors(t, d))
    return acc.stats(diagonal)


def _angle_stats(truth: np.ndarray, decoded: np.ndarray) -> dict[str, Any]:
    acc = ErrorAccumulator()
    acc.add(normal_angles(truth, decoded))
    return acc.stats()


def _combine(parts: Iterable[Mapping[str, Any] | None], diagonal: float | None) -> dict[str, Any] | None:
    """Merge stats dicts: max of maxima, count-weighted mean (percentages recomputed if diagonal given)."""
    parts = [p for p in parts if p is not None and p["count"] > 0]
    if not parts:
        return None
    count = sum(p["count"] for p in parts)
    out = {
        "max": max(p["max"] for p in parts),
        "mean": sum(p["mean"] * p["count"] for p in parts) / count,
        "count": count,
    }
    if diagonal is not None:
        scale = 100.0 / diagonal if diagonal > 0 else 0.0
        out["max_percent"] = out["max"] * scale
        out["mean_percent"] = out["mean"] * scale
    return out


def clip_errors(
    name: str,
    truth_frames: np.ndarray,
    decoded_frames: np.ndarray,
    truth_mid: np.ndarray | None = None,
    decoded_mid: np.ndarray | None = None,
    *,
    diagonal: float,
    truth_normals: np.ndarray | None = None,
    decoded_normals: np.ndarray | None = None,
) -> dict[str, Any]:
    """Errors of one clip: ``(F, N, 3)`` at stored frames, ``(M, N, 3)`` at :func:`mid_samples`.

    Normals (optional, any matching shape) are compared by angle in degrees.
    """
    frames = error_stats(truth_frames, decoded_frames, diagonal)
    mid = None if truth_mid is None else error_stats(truth_mid, decoded_mid, diagonal)
    out: dict[str, Any] = {"name": name, "frames": frames, "mid_frames": mid}
    if truth_normals is not None:
        out["normal_angle_deg"] = _angle_stats(truth_normals, decoded_normals)
    return out


def error_report(
    clips: Sequence[Mapping[str, Any]], *, diagonal: float, encoding_bound: float | None = None
) -> dict[str, Any]:
    """The ``error_report`` block of the sidecar from :func:`clip_errors` results.

    ``encoding_bound`` is the largest error quantisation alone can cause at stored frames (from the
    sidecar's ``error_bound``), so a reader can tell quantisation from sampling error.
    """
    frames = _combine((c["frames"] for c in clips), diagonal)
    mid = _combine((c["mid_frames"] for c in clips), diagonal)
    report: dict[str, Any] = {
        "units": "scene",
        "bbox_diagonal": float(diagonal),
        "frames": frames,
        "mid_frames": mid,
        "overall": _combine([frames, mid], diagonal),
        "encoding_bound": encoding_bound,
        "clips": [dict(c) for c in clips],
    }
    normals = _combine((c.get("normal_angle_deg") for c in clips), None)
    if normals is not None:
        report["normal_angle_deg"] = normals
    return report


def add_oracle_gap(
    report: dict[str, Any],
    gap: float,
    *,
    by_factor: Mapping[float, float] | None = None,
    samples: int,
    of: int,
) -> dict[str, Any]:
    """``report`` (an :func:`error_report`) made a bound against Blender's own evaluation: the gap between
    the add-on's skinning (what the report measured against) and Blender's Armature modifier, measured at
    ``samples`` of the ``of`` sampled frames (scene units), is added to every ``max`` (``max_percent``
    follows) and to ``encoding_bound`` (its float32 arithmetic is now Blender's too); means stay what was
    measured. ``by_factor`` gives the gap of each ``by_deform_factor``
    entry (bone kinds). By the triangle inequality ``|texture - Blender| <= |texture - add-on| + gap``
    at every sample where the gap was measured. Returns the same dict, with ``oracle_gap``."""
    diagonal = report["bbox_diagonal"]
    scale = 100.0 / diagonal if diagonal > 0 else 0.0

    def widen(stats: dict[str, Any] | None, amount: float) -> None:
        if stats is not None:
            stats["max"] += amount
            if "max_percent" in stats:
                stats["max_percent"] = stats["max"] * scale

    entries = [report["frames"], report["mid_frames"], report["overall"]]
    entries += [c[name] for c in report["clips"] for name in ("frames", "mid_frames")]
    for stats in entries:
        widen(stats, gap)
    by_factor = dict(by_factor or {})
    for entry in report.get("by_deform_factor", ()):
        for name in ("frames", "mid_frames", "overall"):
            widen(entry[name], by_factor[entry["deform_factor"]])
    if report.get("encoding_bound") is not None:  # its float32 arithmetic now includes Blender's
        report["encoding_bound"] += max([gap, *by_factor.values()])
    if "any_deform_factor_max" in report:
        worst = [report["overall"]] + [e["overall"] for e in report["by_deform_factor"]]
        report["any_deform_factor_max"] = max(s["max"] for s in worst if s is not None)
    report["oracle_gap"] = {
        "max": float(gap),
        "by_deform_factor": [{"deform_factor": f, "max": float(g)} for f, g in sorted(by_factor.items())],
        "samples": int(samples),
        "of": int(of),
    }
    return report


@dataclass(frozen=True)
class EncodingChoice:
    """Result of :func:`choose_encoding` / :func:`pick_encoding`.

    step: scene frames between samples (below 1 for sub-frame sampling); precision: storage
    precision; max_error: what was measured for them; met: whether it is within tolerance (if not,
    this is the most accurate candidate tried); tried: every ``(step, precision, max_error)``
    evaluated, in order.
    """

    step: float
    precision: Precision
    max_error: float
    met: bool
    tried: tuple[tuple[float, Precision, float], ...]


def _frame_step(step: float) -> float:
    """A positive frame step; whole numbers as ``int`` (``8``, not ``8.0``, in reports and the UI)."""
    value = float(step)
    if not value > 0 or not np.isfinite(value):
        raise ValueError(f"frame steps must be positive, got {step!r}")
    return int(value) if value.is_integer() else value


def encoding_candidates(
    steps: Sequence[float] = (8, 4, 3, 2, 1), precisions: Sequence[Precision] = CHEAPEST_FIRST
) -> list[tuple[float, Precision]]:
    """Every ``(step, precision)``, smallest texture first.

    Texture size is proportional to ``bytes_per_texel(precision) / step``; among equal sizes the
    larger step (lower sample rate) comes first, then the cheaper precision in ``precisions`` order.
    Sub-frame steps (e.g. ``0.5``) are candidates like any other: they sample fast actions between
    scene frames and cost texture rows like a higher precision costs bytes.
    """
    if not steps or not precisions:
        raise ValueError("need at least one step and one precision")
    rank = {Precision(p): i for i, p in enumerate(precisions)}
    return sorted(
        ((s, p) for s in {_frame_step(s) for s in steps} for p in rank),
        key=lambda sp: (bytes_per_texel(sp[1]) / sp[0], -sp[0], rank[sp[1]]),
    )


def pick_encoding(tolerance: float, tried: Sequence[tuple[float, Precision, float]]) -> EncodingChoice:
    """The choice after trying candidates in :func:`encoding_candidates` order (stopping at the first
    within ``tolerance``): the first that met it, else the most accurate one tried."""
    if not tried:
        raise ValueError("no candidate was tried")
    met = [t for t in tried if t[2] <= tolerance]
    step, precision, err = met[0] if met else min(tried, key=lambda t: t[2])
    return EncodingChoice(step, precision, err, bool(met), tuple(tried))


def choose_encoding(
    tolerance: float,
    evaluate: Callable[[float, Precision], float],
    *,
    steps: Sequence[float] = (8, 4, 3, 2, 1),
    precisions: Sequence[Precision] = CHEAPEST_FIRST,
) -> EncodingChoice:
    """Smallest texture whose ``evaluate(step, precision)`` max error is ≤ ``tolerance``.

    Candidates are tried in :func:`encoding_candidates` order; the first that meets the tolerance
    wins, which is therefore the lowest sample rate and cheapest precision that jointly give the
    smallest texture. ``evaluate`` (bake, decode, compare - expensive) runs at most once per
    candidate. Callers that must do work between candidates (sample more frames, show progress) run
    the same loop themselves with :func:`encoding_candidates` and :func:`pick_encoding`.
    """
    if tolerance < 0:
        raise ValueError("tolerance must be ≥ 0")
    tried: list[tuple[float, Precision, float]] = []
    for step, precision in encoding_candidates(steps, precisions):
        tried.append((step, precision, float(evaluate(step, precision))))
        if tried[-1][2] <= tolerance:
            break
    return pick_encoding(tolerance, tried)
